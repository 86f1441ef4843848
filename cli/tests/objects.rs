//! `fencing object put|get|delete URL`: fenced objects and files through the
//! real binary, on a temporary directory (`file:///ABS/PATH`).

mod common;

use std::path::Path;

use common::{bare, run, Env};
use serde_json::json;

/// The object URL of a file under the test's directory.
fn url_of(env: &Env, name: &str) -> String {
    let path = env.path(name);
    assert!(path.is_absolute());
    format!("file://{}", path.display())
}

/// Every file and folder under `dir`, relative to it, sorted.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(dir).unwrap().display().to_string());
            if p.is_dir() {
                todo.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn put_get_delete_round_trip_on_a_temp_dir() {
    let env = Env::new();
    let url = url_of(&env, "out/report.csv");
    let out = env.run(["object", "put", &url, "--token", "7", "--value", "a,b\n"]);
    assert_eq!(
        (out.code, out.text().as_str()),
        (0, "version=1 token=7\n"),
        "{out:?}"
    );
    assert!(out.stderr.is_empty(), "{out:?}");
    // Kept beside where a plain reader looks: out/report.csv.fenced/.
    assert!(env.path("out/report.csv.fenced").is_dir());
    assert!(!env.path("out/report.csv").exists());
    let got = env.run(["object", "get", &url]);
    assert_eq!(
        (got.code, got.stdout.as_slice()),
        (0, &b"a,b\n"[..]),
        "{got:?}"
    );

    // Equal tokens are accepted; versions grow; --holder and --seq are taken.
    let out = env.run([
        "object", "put", &url, "--token", "7", "--seq", "1", "--holder", "me", "--value", "c,d\n",
    ]);
    assert_eq!(out.text(), "version=2 token=7\n", "{out:?}");
    env.run([
        "object", "put", &url, "--token", "7", "--seq", "1", "--value", "e",
    ])
    .fails_with("SEQUENCE_OUT_OF_ORDER", 11);
    assert_eq!(env.run(["object", "get", &url]).stdout, b"c,d\n");

    // --if-version.
    let out = env.run([
        "--json",
        "object",
        "put",
        &url,
        "--token",
        "8",
        "--if-version",
        "1",
        "--value",
        "x",
    ]);
    out.fails_with("VERSION_MISMATCH", 12);
    assert_eq!(out.json()["error"]["actual"], "2");
    let out = env.run([
        "object",
        "put",
        &url,
        "--token",
        "8",
        "--if-version",
        "2",
        "--value",
        "x",
    ]);
    assert_eq!(out.text(), "version=3 token=8\n", "{out:?}");
    env.run([
        "object",
        "delete",
        &url,
        "--token",
        "8",
        "--if-version",
        "2",
    ])
    .fails_with("VERSION_MISMATCH", 12);

    // Delete: the object is gone, the path keeps its fence.
    let out = env.run([
        "object",
        "delete",
        &url,
        "--token",
        "8",
        "--if-version",
        "3",
    ]);
    assert_eq!((out.code, out.text().as_str()), (0, "deleted\n"), "{out:?}");
    env.run(["object", "get", &url]).fails_with("NOT_FOUND", 13);
    env.run(["object", "delete", &url, "--token", "8"])
        .fails_with("NOT_FOUND", 13);
    env.run(["object", "put", &url, "--token", "7", "--value", "old"])
        .fails_with("STALE_TOKEN", 10);
    // A new object at the path: --if-version 0 (must not exist) holds again.
    let out = env.run([
        "object",
        "put",
        &url,
        "--token",
        "9",
        "--if-version",
        "0",
        "--value",
        "new",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(env.run(["object", "get", &url]).stdout, b"new");
}

#[test]
fn a_stale_token_exits_10_with_stale_token_and_leaves_the_newer_bytes() {
    let env = Env::new();
    let url = url_of(&env, "report.csv");
    let path = url.strip_prefix("file:///").unwrap().to_owned();
    assert_eq!(
        env.run(["object", "put", &url, "--token", "42", "--value", "newer"])
            .code,
        0
    );
    let out = env.run(["object", "put", &url, "--token", "41", "--value", "older"]);
    out.fails_with("STALE_TOKEN", 10);
    assert!(out.stdout.is_empty(), "{out:?}");
    let out = env.run([
        "--json", "object", "put", &url, "--token", "41", "--holder", "paused", "--value", "older",
    ]);
    out.fails_with("STALE_TOKEN", 10);
    assert_eq!(
        out.json()["error"],
        json!({
            "code": "STALE_TOKEN", "scope": path, "presented": "41", "current": "42",
            "message": format!("stale token for scope {path:?}: presented 41, fence is at 42"),
        })
    );
    env.run(["object", "delete", &url, "--token", "41"])
        .fails_with("STALE_TOKEN", 10);
    let got = env.run(["--json", "object", "get", &url]).json();
    assert_eq!(
        (got["value"].clone(), got["token"].clone()),
        (json!("newer"), json!("42"))
    );
    assert_eq!(got["version"], "1");
}

#[test]
fn json_output_as_the_other_verbs_print_it() {
    let env = Env::new();
    let url = url_of(&env, "data/blob.bin");
    let out = env.run([
        "--json", "object", "put", &url, "--token", "5", "--value", "héllo",
    ]);
    assert_eq!(
        out.json(),
        json!({ "version": "1", "token": "5" }),
        "{out:?}"
    );
    // --json after the verb too (a global option).
    let got = env.run(["object", "get", &url, "--json"]).json();
    assert_eq!(
        got,
        json!({
            "found": true, "url": url, "value": "héllo", "value_hex": "68c3a96c6c6f",
            "value_len": 6, "version": "1", "token": "5",
        })
    );
    // Not UTF-8: no text form, as `get --json` prints such a value.
    let bytes = [0u8, 159, 146, 150, b'\n'];
    let out = env.run_stdin(["--json", "object", "put", &url, "--token", "6"], &bytes);
    assert_eq!(
        out.json(),
        json!({ "version": "2", "token": "6" }),
        "{out:?}"
    );
    let got = env.run(["--json", "object", "get", &url]).json();
    assert_eq!(got["value_hex"], "009f92960a");
    assert_eq!(got["value_len"], 5);
    assert_eq!(
        (got["version"].clone(), got["token"].clone()),
        (json!("2"), json!("6"))
    );
    assert_eq!(got.get("value"), None, "not UTF-8, so no text form");
    assert_eq!(env.run(["object", "get", &url]).stdout, bytes);
    let out = env.run(["--json", "object", "delete", &url, "--token", "6"]);
    assert_eq!(
        out.json(),
        json!({ "version": "0", "token": "6" }),
        "{out:?}"
    );
}

#[test]
fn bad_urls_and_bad_paths_are_invalid_argument() {
    let env = Env::new();
    let dir = env.path("d");
    std::fs::create_dir(&dir).unwrap();
    let d = dir.display().to_string();
    for url in [
        "memory:".to_owned(),
        "file://relative/dir/x".to_owned(),
        format!("file://localhost{d}/x"),
        format!("file:{d}/x"),
        "file:///".to_owned(),
        format!("{d}/x"),
        "sqlite:fencing.db".to_owned(),
        "s3://bucket".to_owned(),
        String::new(),
    ] {
        for verb in [
            vec!["object", "put", &url, "--token", "1", "--value", "x"],
            vec!["object", "get", &url],
            vec!["object", "delete", &url, "--token", "1"],
        ] {
            let out = env.run(&verb);
            out.fails_with("INVALID_ARGUMENT", 17);
            assert!(
                out.stderr.contains("file:///ABS/PATH/TO/OBJECT"),
                "names the accepted form: {out:?}"
            );
        }
        let out = env.run(["--json", "object", "get", &url]);
        assert_eq!(out.json()["error"]["code"], "INVALID_ARGUMENT", "{out:?}");
    }
    // Paths the core refuses: an empty, . or .. segment, a trailing /, a
    // folder of the library's.
    for bad in ["a//b", "a/./b", "a/../b", "a/", "a.fenced/b", "b.fenced"] {
        let url = format!("file://{d}/{bad}");
        env.run(["object", "put", &url, "--token", "1", "--value", "x"])
            .fails_with("INVALID_ARGUMENT", 17);
        env.run(["object", "get", &url])
            .fails_with("INVALID_ARGUMENT", 17);
        env.run(["object", "delete", &url, "--token", "1"])
            .fails_with("INVALID_ARGUMENT", 17);
    }
    // Bad tokens and versions, as for `put`.
    let url = format!("file://{d}/ok");
    for args in [
        vec!["--token", "-1"],
        vec!["--token", "01"],
        vec!["--token", "1", "--if-version", "x"],
        vec!["--token", "1", "--seq", "9223372036854775808"],
    ] {
        let mut argv = vec!["object", "put", url.as_str(), "--value", "x"];
        argv.extend(args);
        env.run(&argv).fails_with("INVALID_ARGUMENT", 17);
    }
    // Not UTF-8.
    #[cfg(unix)]
    {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let url = OsStr::from_bytes(b"file:///tmp/\xff");
        env.run([OsStr::new("object"), OsStr::new("get"), url])
            .fails_with("INVALID_ARGUMENT", 17);
    }
    assert_eq!(tree(&dir), Vec::<String>::new(), "nothing was written");
}

#[test]
fn a_missing_object_is_not_found_as_get_of_a_missing_key() {
    let env = Env::new();
    let url = url_of(&env, "nothing/here.txt");
    let key = env.run(["get", "s", "k"]);
    key.fails_with("NOT_FOUND", 13);
    let out = env.run(["object", "get", &url]);
    out.fails_with("NOT_FOUND", 13);
    assert!(out.stdout.is_empty(), "{out:?}");
    let path = url.strip_prefix("file:///").unwrap();
    assert!(out.stderr.contains(&format!("{path:?}")), "{out:?}");
    let out = env.run(["--json", "object", "get", &url]);
    out.fails_with("NOT_FOUND", 13);
    let e = &out.json()["error"];
    assert_eq!(
        (e["code"].clone(), e["key"].clone()),
        (json!("NOT_FOUND"), json!(path))
    );
    // Reading creates nothing.
    assert!(!env.path("nothing").exists());
}

#[test]
fn fencing_run_gives_object_put_its_token() {
    let env = Env::new();
    let url = url_of(&env, "out/report.csv");
    let bin_dir = Path::new(common::BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = format!("fencing object put {url} --value x");
    let mut c = env.cmd(["run", "job", "--ttl", "30s", "--", "sh", "-c", &script]);
    c.env("PATH", &path);
    let out = run(c, None);
    assert_eq!(
        (out.code, out.text().as_str()),
        (0, "version=1 token=1\n"),
        "{out:?}"
    );
    let got = env.run(["--json", "object", "get", &url]).json();
    assert_eq!(
        (got["value"].clone(), got["token"].clone()),
        (json!("x"), json!("1"))
    );
    // The next run's token is newer; a writer still holding token 1 is refused.
    let mut c = env.cmd(["run", "job", "--ttl", "30s", "--", "sh", "-c", &script]);
    c.env("PATH", &path);
    assert_eq!(run(c, None).text(), "version=2 token=2\n");
    let mut c = bare(env.dir.path());
    c.args(["object", "put", &url, "--value", "late"])
        .env("FENCING_TOKEN", "1");
    run(c, None).fails_with("STALE_TOKEN", 10);
    // No token anywhere: a usage error, with the tip.
    let out = env.run(["object", "put", &url, "--value", "v"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("$FENCING_TOKEN"), "{out:?}");
}

#[test]
fn the_bytes_come_from_file_or_stdin() {
    let env = Env::new();
    let url = url_of(&env, "in/x.bin");
    let bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    let src = env.path("src.bin");
    std::fs::write(&src, &bytes).unwrap();
    let out = env
        .run(["object", "put", &url, "--token", "1", "--file"])
        .code;
    assert_eq!(out, 2, "--file takes a path");
    let out = env.run([
        "object",
        "put",
        &url,
        "--token",
        "1",
        "--file",
        src.to_str().unwrap(),
    ]);
    assert_eq!(out.text(), "version=1 token=1\n", "{out:?}");
    assert_eq!(env.run(["object", "get", &url]).stdout, bytes);

    let out = env.run_stdin(["object", "put", &url, "--token", "1"], b"from stdin\0\n");
    assert_eq!(out.text(), "version=2 token=1\n", "{out:?}");
    assert_eq!(env.run(["object", "get", &url]).stdout, b"from stdin\0\n");
    // Empty stdin: an empty object.
    let out = env.run_stdin(["object", "put", &url, "--token", "1"], b"");
    assert_eq!(out.text(), "version=3 token=1\n", "{out:?}");
    let got = env.run(["object", "get", &url]);
    assert_eq!((got.code, got.stdout.len()), (0, 0), "{got:?}");
    // Larger than a store entry may be: objects have no such limit.
    let big = vec![b'z'; fencing::limits::MAX_VALUE_BYTES + 10];
    let out = env.run_stdin(["object", "put", &url, "--token", "1"], &big);
    assert_eq!(out.text(), "version=4 token=1\n", "{out:?}");
    assert_eq!(env.run(["object", "get", &url]).stdout.len(), big.len());

    // A file that cannot be read: a failure outside the store (1).
    let missing = env.path("missing.bin");
    let out = env.run([
        "object",
        "put",
        &url,
        "--token",
        "1",
        "--file",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 1, "{out:?}");
    // --value and --file together: a usage error.
    let out = env.run([
        "object", "put", &url, "--token", "1", "--value", "v", "--file", "x",
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(env.run(["object", "get", &url]).stdout.len(), big.len());
}

#[test]
fn the_lease_store_url_is_not_read() {
    let env = Env::new();
    let url = url_of(&env, "o");
    // A URL file that does not exist, both variables set: every other verb
    // refuses them; `object` does not look.
    let mut c = bare(env.dir.path());
    c.args([
        "--url-file",
        "/nonexistent/url",
        "object",
        "put",
        &url,
        "-t",
        "1",
        "--value",
        "v",
    ]);
    assert_eq!(run(c, None).text(), "version=1 token=1\n");
    let mut c = bare(env.dir.path());
    c.env("FENCING_URL", "sqlite:/nonexistent/x.db")
        .env("FENCING_URL_FILE", "/nonexistent/url")
        .args(["object", "get", &url]);
    assert_eq!(run(c, None).stdout, b"v");
    assert!(
        !env.path("fencing.db").exists(),
        "no lease store was opened"
    );
    let help = env.run(["object", "--help"]).text();
    assert!(help.contains("lease store"), "{help}");
    assert!(help.contains("file:///ABS/PATH/TO/OBJECT"), "{help}");
}

#[test]
fn the_man_page_has_a_section_for_each_object_verb() {
    let env = Env::new();
    let mut c = bare(env.dir.path());
    c.arg("man");
    let out = run(c, None);
    assert_eq!(out.code, 0, "{out:?}");
    let roff = out.text();
    for heading in [
        "FENCING OBJECT",
        "FENCING OBJECT PUT",
        "FENCING OBJECT GET",
        "FENCING OBJECT DELETE",
    ] {
        assert!(
            roff.contains(&format!(".SH \"{heading}\"")),
            "{heading} missing"
        );
    }
    let put = roff.split(".SH \"FENCING OBJECT PUT\"").nth(1).unwrap();
    let put = put.split(".SH ").next().unwrap();
    assert!(
        put.contains("if\\-version"),
        "the options of object put: {put}"
    );
}

/// On a real S3 server (`scripts/s3-server run`, which sets
/// `FENCING_TEST_S3_BUCKET` and the `AWS_*` variables the command reads);
/// skipped without one, unless `FENCING_REQUIRE_S3=1`.
#[test]
fn put_get_and_a_stale_put_on_s3() {
    put_get_and_a_stale_put_in_the_cloud(
        "s3",
        "FENCING_TEST_S3_BUCKET",
        "FENCING_REQUIRE_S3",
        ("AWS_SECRET_ACCESS_KEY", "not-the-secret"),
    );
}

/// The same on Azurite (`scripts/azure-server run`: `FENCING_TEST_AZ_CONTAINER`
/// and the `AZURE_*` variables).
#[test]
fn put_get_and_a_stale_put_on_azure() {
    put_get_and_a_stale_put_in_the_cloud(
        "az",
        "FENCING_TEST_AZ_CONTAINER",
        "FENCING_REQUIRE_AZ",
        // A key of the right form that is not the account's.
        ("AZURE_STORAGE_ACCOUNT_KEY", "bm90LXRoZS1rZXk="),
    );
}

fn put_get_and_a_stale_put_in_the_cloud(
    scheme: &str,
    names: &str,
    required: &str,
    wrong_secret: (&str, &str),
) {
    let Ok(bucket) = std::env::var(names) else {
        assert_ne!(
            std::env::var(required).as_deref(),
            Ok("1"),
            "no {scheme}:// server"
        );
        return;
    };
    let env = Env::new();
    let url = format!("{scheme}://{bucket}/cli-{}/report.csv", std::process::id());
    let out = env.run(["object", "put", &url, "--token", "7", "--value", "seven"]);
    assert_eq!(
        (out.code, out.text().as_str()),
        (0, "version=1 token=7\n"),
        "{out:?}"
    );
    env.run(["object", "put", &url, "--token", "6", "--value", "six"])
        .fails_with("STALE_TOKEN", 10);
    let got = env.run(["object", "get", &url]);
    assert_eq!(
        (got.code, got.stdout.as_slice()),
        (0, &b"seven"[..]),
        "{got:?}"
    );

    // What goes wrong most often, each with what to check.
    let missing = env.run(["object", "get", &format!("{scheme}://no-such-{bucket}/k")]);
    assert_eq!(missing.code, 19, "{missing:?}");
    assert!(
        missing.stderr.contains("check that the bucket")
            || missing.stderr.contains("check that the container"),
        "{missing:?}"
    );
    let mut wrong = env.cmd(["object", "put", &url, "--token", "8", "--value", "x"]);
    wrong.env(wrong_secret.0, wrong_secret.1);
    let wrong = run(wrong, None);
    assert_eq!(wrong.code, 19, "{wrong:?}");
    assert!(wrong.stderr.contains("check the credentials"), "{wrong:?}");
    // A trust store with no certificate in it: refused before any request,
    // with the fix named.
    let empty = env.dir.path().join("no-certificates.pem");
    std::fs::write(&empty, "").unwrap();
    let mut untrusting = env.cmd(["object", "get", &url]);
    untrusting
        .env("SSL_CERT_FILE", &empty)
        .env_remove("SSL_CERT_DIR");
    let untrusting = run(untrusting, None);
    assert_eq!(untrusting.code, 19, "{untrusting:?}");
    assert!(
        untrusting
            .stderr
            .contains("no CA certificates in the system's trust store")
            && untrusting.stderr.contains("SSL_CERT_FILE"),
        "{untrusting:?}"
    );
    assert_eq!(env.run(["object", "get", &url]).stdout, b"seven");
}
