//! Bad input of every kind the shell can express: each gets one clear line
//! on stderr, its exit status, and changes nothing.

mod common;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use common::{bare, run, Env};

/// A store with a lease, a fence at 5 and one entry, to compare against.
fn seeded() -> Env {
    let env = Env::new();
    assert_eq!(
        env.run(["put", "s", "k", "--token", "5", "--value", "v"])
            .code,
        0
    );
    assert_eq!(
        env.run(["acquire", "s", "--ttl", "300s", "--holder", "h"])
            .code,
        0
    );
    env
}

fn assert_unchanged(env: &Env, before: &serde_json::Value) {
    assert_eq!(&env.status("s"), before);
    assert_eq!(env.run(["get", "s", "k"]).stdout, b"v");
}

const BAD_TOKENS: [&str; 14] = [
    "abc",
    "-1",
    "9223372036854775808",  // 2^63
    "18446744073709551615", // 2^64-1
    "18446744073709551616", // 2^64
    "1.5",
    "1e3",
    "0",
    "",
    " 1",
    "+1",
    "01",
    "0x10",
    "٣",
];

#[test]
fn bad_tokens_are_invalid_argument_for_every_verb_that_takes_one() {
    let env = seeded();
    let before = env.status("s");
    for token in BAD_TOKENS {
        for args in [
            vec!["put", "s", "k", "--value", "x", "--token", token],
            vec!["delete", "s", "k", "--token", token],
            vec!["claim", "s", "--token", token],
            vec!["get", "s", "k", "--token", token],
            vec!["renew", "s", "--ttl", "1s", "--token", token],
            vec!["release", "s", "--token", token],
            vec!["advance-counter", "s", token],
        ] {
            let out = env.run(&args);
            out.fails_with("INVALID_ARGUMENT", 17);
            assert!(out.stdout.is_empty(), "{args:?}: {out:?}");
        }
        // The `--token=VALUE` spelling reaches the same check.
        let out = env.run(["put", "s", "k", "--value", "x", &format!("--token={token}")]);
        out.fails_with("INVALID_ARGUMENT", 17);
        // With --json, the error object too.
        let out = env.run(["--json", "claim", "s", "--token", token]);
        out.fails_with("INVALID_ARGUMENT", 17);
        assert_eq!(out.json()["error"]["code"], "INVALID_ARGUMENT");
    }
    assert_unchanged(&env, &before);
}

#[test]
fn bad_token_text_is_named_in_the_message() {
    let env = Env::new();
    for (token, shown) in [
        ("abc", "\"abc\""),
        (
            "-1",
            "token -1 is out of range: tokens are 1..=9223372036854775807",
        ),
        (
            "9223372036854775808",
            "token 9223372036854775808 is out of range",
        ),
    ] {
        let out = env.run(["put", "s", "k", "--value", "x", "--token", token]);
        out.fails_with("INVALID_ARGUMENT", 17);
        assert!(out.stderr.contains("--token"), "{out:?}");
        assert!(out.stderr.contains(shown), "{out:?}");
    }
    // Parsed before the store opens: no database file was created.
    assert!(!env.path("store.db").exists());
}

#[test]
fn bad_numbers_for_seq_version_and_limit() {
    let env = seeded();
    let before = env.status("s");
    for bad in ["-1", "abc", "9223372036854775808", "1.0", ""] {
        let args = [
            "put", "s", "k", "--token", "6", "--value", "x", "--seq", bad,
        ];
        env.run(args).fails_with("INVALID_ARGUMENT", 17);
        let args = [
            "put",
            "s",
            "k",
            "--token",
            "6",
            "--value",
            "x",
            "--if-version",
            bad,
        ];
        env.run(args).fails_with("INVALID_ARGUMENT", 17);
        env.run(["list", "s", "--limit", bad])
            .fails_with("INVALID_ARGUMENT", 17);
    }
    env.run(["list", "s", "--limit", "0"])
        .fails_with("INVALID_ARGUMENT", 17);
    env.run(["list", "s", "--limit", "1001"])
        .fails_with("INVALID_ARGUMENT", 17);
    assert_unchanged(&env, &before);
}

#[test]
fn empty_oversized_and_non_utf8_names() {
    let env = seeded();
    let before = env.status("s");
    let huge = "x".repeat(64 * 1024);
    let not_utf8 = OsStr::from_bytes(b"s\xff\xfe");
    for scope in [OsStr::new(""), OsStr::new(&huge), not_utf8] {
        for verb in ["status", "fence", "next-token", "retire"] {
            let out = env.run([OsStr::new(verb), scope]);
            out.fails_with("INVALID_ARGUMENT", 17);
        }
        let out = env.run([
            OsStr::new("put"),
            scope,
            OsStr::new("k"),
            OsStr::new("--token"),
            OsStr::new("9"),
            OsStr::new("--value"),
            OsStr::new("x"),
        ]);
        out.fails_with("INVALID_ARGUMENT", 17);
        let out = env.run([
            OsStr::new("run"),
            scope,
            OsStr::new("--ttl"),
            OsStr::new("1s"),
            OsStr::new("--"),
            OsStr::new("true"),
        ]);
        out.fails_with("INVALID_ARGUMENT", 17);
    }
    // Keys and holders, and the message says which argument.
    let out = env.run([
        OsStr::new("put"),
        OsStr::new("s"),
        not_utf8,
        OsStr::new("--token"),
        OsStr::new("9"),
        OsStr::new("--value"),
        OsStr::new("x"),
    ]);
    out.fails_with("INVALID_ARGUMENT", 17);
    assert!(out.stderr.contains("key is not valid UTF-8"), "{out:?}");
    let big_key = "k".repeat(1025);
    env.run(["put", "s", &big_key, "--token", "9", "--value", "x"])
        .fails_with("INVALID_ARGUMENT", 17);
    env.run(["get", "s", ""]).fails_with("INVALID_ARGUMENT", 17);
    let out = env.run([
        OsStr::new("acquire"),
        OsStr::new("t"),
        OsStr::new("--ttl"),
        OsStr::new("1s"),
        OsStr::new("--holder"),
        not_utf8,
    ]);
    out.fails_with("INVALID_ARGUMENT", 17);
    let big_holder = "h".repeat(257);
    env.run(["acquire", "t", "--ttl", "1s", "--holder", &big_holder])
        .fails_with("INVALID_ARGUMENT", 17);
    env.run([
        "put", "s", "k", "--token", "9", "--holder", "", "--value", "x",
    ])
    .fails_with("INVALID_ARGUMENT", 17);
    assert_unchanged(&env, &before);
    assert_eq!(env.status("t")["counter"], "0");
}

#[test]
fn values_are_bytes_and_oversized_values_are_refused() {
    let env = seeded();
    let before = env.status("s");
    // A value that is not UTF-8 is fine: values are bytes (argv cannot hold NUL).
    let value = OsStr::from_bytes(b"\xff\xfe");
    let args = [
        OsStr::new("put"),
        OsStr::new("s"),
        OsStr::new("bin"),
        OsStr::new("--token"),
        OsStr::new("6"),
        OsStr::new("--value"),
        value,
    ];
    assert_eq!(env.run(args).code, 0);
    assert_eq!(env.run(["get", "s", "bin"]).stdout, b"\xff\xfe");
    assert_eq!(env.run(["delete", "s", "bin", "--token", "6"]).code, 0);

    let too_big = vec![b'x'; (1 << 20) + 1];
    let out = env.run_stdin(["put", "s", "k", "--token", "6"], &too_big);
    out.fails_with("INVALID_ARGUMENT", 17);
    assert!(out.stderr.contains("1048577"), "{out:?}");
    // Exactly 1 MiB is fine.
    let max = vec![b'y'; 1 << 20];
    let out = env.run_stdin(["put", "s", "big", "--token", "6"], &max);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(env.run(["get", "s", "big"]).stdout.len(), 1 << 20);
    assert_eq!(env.run(["delete", "s", "big", "--token", "6"]).code, 0);
    assert_unchanged(&env, &before);
}

#[test]
fn bad_ttls_and_durations() {
    let env = seeded();
    let before = env.status("s");
    // In the core's range check: INVALID_ARGUMENT.
    for ttl in ["0s", "367days"] {
        env.run(["acquire", "t", "--ttl", ttl])
            .fails_with("INVALID_ARGUMENT", 17);
        env.run(["renew", "s", "--token", "6", "--ttl", ttl])
            .fails_with("INVALID_ARGUMENT", 17);
    }
    // Not a duration at all: a usage error.
    for ttl in ["abc", "-1s", "30", ""] {
        let out = env.run(["acquire", "t", "--ttl", ttl]);
        assert_eq!(out.code, 2, "{ttl:?}: {out:?}");
        assert!(out.stderr.contains("--ttl"), "{out:?}");
    }
    assert_unchanged(&env, &before);
    assert_eq!(env.status("t")["counter"], "0");
}

#[test]
fn bad_urls() {
    let env = Env::new();
    for url in [
        "redis://x",
        "",
        "sqlite:",
        "memory",
        "sqlite:x.db?foo=1",
        "sqlite:x.db?strict=maybe",
        "memory:?clock=manual&clock=manual",
        "sqlite://rel.db",
        "sqlite:///rel.db",
    ] {
        let mut c = bare(env.dir.path());
        c.args(["--url", url, "status", "s"]);
        let out = run(c, None);
        out.fails_with("INVALID_ARGUMENT", 17);
        if url.starts_with("sqlite://") {
            assert!(out.stderr.contains("sqlite:rel.db"), "{out:?}");
            assert!(out.stderr.contains("sqlite:/rel.db"), "{out:?}");
        }
    }
    let mut c = bare(env.dir.path());
    c.env("FENCING_URL", "redis://x").args(["status", "s"]);
    let out = run(c, None);
    out.fails_with("INVALID_ARGUMENT", 17);
    assert!(out.stderr.contains("redis://x"), "{out:?}");
    let mut c = bare(env.dir.path());
    c.arg("--url")
        .arg(OsStr::from_bytes(b"sqlite:\xff.db"))
        .args(["status", "s"]);
    run(c, None).fails_with("INVALID_ARGUMENT", 17);
    let long = format!("sqlite:{}", "x".repeat(5000));
    let mut c = bare(env.dir.path());
    c.args(["--url", &long, "status", "s"]);
    run(c, None).fails_with("INVALID_ARGUMENT", 17);
    assert_eq!(
        std::fs::read_dir(env.dir.path()).unwrap().count(),
        0,
        "nothing created"
    );
}

#[test]
fn a_file_that_is_not_a_database_is_backend_and_left_alone() {
    let env = Env::new();
    let path = env.path("notes.txt");
    let content = b"these are not the tables you are looking for\n".repeat(100);
    std::fs::write(&path, &content).unwrap();
    let url = format!("sqlite:{}", path.display());
    for args in [vec!["status", "s"], vec!["next-token", "s"], vec!["demo"]] {
        let mut c = bare(env.dir.path());
        c.args(["--url", &url]).args(&args);
        let out = run(c, None);
        out.fails_with("BACKEND", 19);
    }
    assert_eq!(std::fs::read(&path).unwrap(), content);
    // A path in a missing directory.
    let mut c = bare(env.dir.path());
    c.args(["--url", "sqlite:no/such/dir/x.db", "status", "s"]);
    run(c, None).fails_with("BACKEND", 19);
}

#[test]
fn usage_errors_exit_2() {
    let env = Env::new();
    for args in [
        vec!["no-such-verb"],
        vec!["put", "s"],
        vec!["put", "s", "k", "--value", "x"],
        vec!["acquire", "s"],
        vec!["status"],
        vec!["status", "s", "extra"],
        vec!["--no-such-flag", "status", "s"],
    ] {
        let out = env.run(&args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(out.stderr.starts_with("error: "), "{out:?}");
    }
}

#[test]
fn a_database_from_a_newer_version_is_backend_and_left_alone() {
    let env = Env::new();
    let path = env.path("newer.db");
    let url = format!("sqlite:{}", path.display());
    let mut c = bare(env.dir.path());
    c.args(["--url", &url, "next-token", "s"]);
    assert_eq!(run(c, None).code, 0);
    // SQLite keeps user_version, the schema version, at bytes 60..64 of the header.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[60..64].copy_from_slice(&99u32.to_be_bytes());
    std::fs::write(&path, &bytes).unwrap();
    for args in [vec!["status", "s"], vec!["next-token", "s"]] {
        let mut c = bare(env.dir.path());
        c.args(["--url", &url]).args(&args);
        run(c, None).fails_with("BACKEND", 19);
    }
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}
