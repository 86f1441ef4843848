//! Secrets stay out of argv, CMD's environment and every output; the URL
//! from a file or the environment; passwords the libpq way (PGPASSWORD,
//! PGPASSFILE, ~/.pgpass) against a server that really asks for one; and a
//! value larger than the limit is refused without being read whole.
//! (docs/postgres.md, "Credentials"; the PostgreSQL tests need a server
//! started by `scripts/pg-cluster run -- ...`, and are skipped without one.)

mod common;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;

use common::{bare, finish, run, Env, LIMIT};

fn write(path: &Path, contents: &str, mode: u32) {
    std::fs::write(path, contents).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn the_url_comes_from_a_file_or_the_environment() {
    let env = Env::new();
    let file = env.path("url");
    write(&file, &format!("  \n{}\n\n", env.url), 0o600);
    let file = file.to_str().unwrap();
    let mut c = bare(env.dir.path());
    c.args(["--url-file", file, "acquire", "s", "--ttl", "30s"]);
    let out = run(c, None);
    assert_eq!((out.code, out.text()), (0, "1\n".into()), "{out:?}");
    // The same store through $FENCING_URL_FILE and through --url.
    let mut c = bare(env.dir.path());
    c.env("FENCING_URL_FILE", file).args(["next-token", "s"]);
    assert_eq!(run(c, None).text(), "2\n");
    assert_eq!(env.run(["next-token", "s"]).text(), "3\n");
    // A flag beats the environment.
    let mut c = bare(env.dir.path());
    c.env("FENCING_URL", "memory:")
        .args(["--url-file", file, "next-token", "s"]);
    assert_eq!(run(c, None).text(), "4\n");

    // Both flags: a usage error; both variables: which store was meant?
    let mut c = bare(env.dir.path());
    c.args(["--url", &env.url, "--url-file", file, "fence", "s"]);
    assert_eq!(run(c, None).code, 2);
    let mut c = bare(env.dir.path());
    c.env("FENCING_URL", &env.url)
        .env("FENCING_URL_FILE", file)
        .args(["fence", "s"]);
    run(c, None).fails_with("INVALID_ARGUMENT", 17);

    // A file that is missing, empty or not a URL: refused, never shown.
    let secret = env.path("secret");
    write(&secret, "postgress://app:s3cret@h/db\n", 0o600);
    for (path, says) in [
        (env.path("missing"), "No such file"),
        (env.path("empty"), "empty"),
        (secret, "unsupported store URL"),
    ] {
        if path.ends_with("empty") {
            write(&path, " \n", 0o600);
        }
        let mut c = bare(env.dir.path());
        c.arg("--url-file").arg(&path).args(["fence", "s"]);
        let out = run(c, None);
        out.fails_with("INVALID_ARGUMENT", 17);
        assert!(out.stderr.contains(says), "{out:?}");
        assert!(!out.stderr.contains("s3cret"), "{out:?}");
    }
}

#[test]
fn a_value_over_the_limit_is_refused_without_reading_it_all() {
    let env = Env::new();
    let limit = fencing::limits::MAX_VALUE_BYTES;
    let mut child = env
        .cmd(["put", "s", "k", "--token", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // 3 MiB offered in 64 KiB chunks: once fencing has read one byte past
    // the limit it exits, and the rest meets a closed pipe (EPIPE: the test
    // process ignores SIGPIPE, as every Rust program does).
    let writer = std::thread::spawn(move || {
        let chunk = vec![b'x'; 64 * 1024];
        let mut written = 0;
        while written < 3 * limit {
            match stdin.write_all(&chunk) {
                Ok(()) => written += chunk.len(),
                Err(e) => return (written, Some(e.kind())),
            }
        }
        (written, None)
    });
    let out = finish(child, LIMIT);
    out.fails_with("INVALID_ARGUMENT", 17);
    assert!(
        out.stderr
            .contains(&format!("value is more than {limit} bytes")),
        "{out:?}"
    );
    let (written, error) = writer.join().unwrap();
    assert_eq!(error, Some(std::io::ErrorKind::BrokenPipe), "{written}");
    assert!(written < 3 * limit, "{written}");
    assert!(env.run(["get", "s", "k"]).code == 13);

    // --file: the same limit, the same refusal; a file within it is written.
    let big = env.path("big");
    std::fs::write(&big, vec![b'y'; 3 * limit]).unwrap();
    let out = env.run([
        "put",
        "s",
        "k",
        "--token",
        "1",
        "--file",
        big.to_str().unwrap(),
    ]);
    out.fails_with("INVALID_ARGUMENT", 17);
    assert!(
        out.stderr.contains(&format!("at {} bytes", limit + 1)),
        "{out:?}"
    );
    let small = env.path("small");
    std::fs::write(&small, b"from a file\0").unwrap();
    let out = env.run([
        "put",
        "s",
        "k",
        "--token",
        "1",
        "--file",
        small.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(env.run(["get", "s", "k"]).stdout, b"from a file\0");
    // --value and --file: a usage error.
    let out = env.run([
        "put", "s", "k", "--token", "1", "--value", "v", "--file", "x",
    ]);
    assert_eq!(out.code, 2, "{out:?}");
}

/// A server that asks `role` for its password: the test cluster
/// (`scripts/pg-cluster run`) with a pg_hba.conf line for that role alone.
struct PasswordServer {
    host_port: String,
    role: String,
    password: String,
}

impl PasswordServer {
    fn start(tag: &str) -> Option<PasswordServer> {
        let base = fencing_scenarios::postgres_test_url()?;
        let Ok(dir) = std::env::var("FENCING_TEST_PG_DIR") else {
            eprintln!("skipped: no FENCING_TEST_PG_DIR to set password auth in");
            return None;
        };
        let host_port = base
            .strip_prefix("postgres://postgres@")?
            .split('/')
            .next()?
            .to_owned();
        let role = format!("fencing_pw_{tag}_{}", std::process::id());
        let password = format!("pw:{}\\s3cret", std::process::id());
        let mut admin = postgres::Client::connect(&base, postgres::NoTls).unwrap();
        admin
            .batch_execute(&format!(
                "CREATE ROLE {role} LOGIN PASSWORD '{password}'; \
                 GRANT CREATE ON DATABASE postgres TO {role};"
            ))
            .unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/pg-cluster");
        let line = format!("host all {role} 127.0.0.1/32 scram-sha-256");
        let status = std::process::Command::new("bash")
            .arg(script)
            .args(["hba", &dir, &line])
            .status()
            .unwrap();
        assert!(status.success());
        let server = PasswordServer {
            host_port,
            role,
            password,
        };
        // The reload is asynchronous: wait until a wrong password is refused.
        let wrong = format!(
            "postgres://{}:wrong@{}/postgres",
            server.role, server.host_port
        );
        common::wait_until("the server asks for passwords", || {
            postgres::Client::connect(&wrong, postgres::NoTls).is_err()
        });
        Some(server)
    }

    /// The URL with no password, and a fresh schema.
    fn url(&self, tag: &str) -> String {
        format!(
            "postgres://{}@{}/postgres?schema={}",
            self.role,
            self.host_port,
            fencing_scenarios::fresh_schema(tag)
        )
    }

    /// The password file line for this server, escaped as libpq reads it.
    fn pgpass_line(&self, password: &str) -> String {
        let (host, port) = self.host_port.split_once(':').unwrap();
        let escaped = password.replace('\\', "\\\\").replace(':', "\\:");
        format!(
            "# fencing test\n{host}:{port}:postgres:{}:{escaped}\n",
            self.role
        )
    }
}

#[test]
fn passwords_come_from_pgpassword_pgpassfile_or_home_pgpass() {
    let Some(server) = PasswordServer::start("sources") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let url = server.url("cli_pw");
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let good = dir.path().join("good.pgpass");
    write(&good, &server.pgpass_line(&server.password), 0o600);
    let bad = dir.path().join("bad.pgpass");
    write(&bad, &server.pgpass_line("wrong"), 0o600);
    let pw = server.password.as_str();
    let fence = |vars: &[(&str, &Path)], url: &str| {
        let mut c = bare(dir.path());
        c.env_remove("PGPASSWORD")
            .env_remove("PGPASSFILE")
            .env("HOME", &home)
            .args(["--url", url, "fence", "s"]);
        for (k, v) in vars {
            c.env(k, v);
        }
        let out = run(c, None);
        assert!(!out.stderr.contains(pw), "{out:?}");
        assert!(!out.text().contains(pw), "{out:?}");
        out
    };
    // No password anywhere: the server refuses.
    let out = fence(&[], &url);
    assert_eq!(out.code, 19, "{out:?}");
    // PGPASSWORD.
    let out = fence(&[("PGPASSWORD", Path::new(pw))], &url);
    assert_eq!((out.code, out.text()), (0, "0\n".into()), "{out:?}");
    // PGPASSFILE.
    let out = fence(&[("PGPASSFILE", &good)], &url);
    assert_eq!(out.code, 0, "{out:?}");
    // ~/.pgpass, used only when only its owner can read it.
    write(&home.join(".pgpass"), &server.pgpass_line(pw), 0o600);
    assert_eq!(fence(&[], &url).code, 0);
    std::fs::set_permissions(home.join(".pgpass"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = fence(&[], &url);
    assert_eq!(out.code, 19, "{out:?}");
    assert!(out.stderr.contains("group or world access"), "{out:?}");
    // Precedence: the URL's password > PGPASSWORD > the password file.
    let out = fence(
        &[("PGPASSWORD", Path::new("wrong")), ("PGPASSFILE", &good)],
        &url,
    );
    assert_eq!(out.code, 19, "{out:?}");
    let out = fence(&[("PGPASSWORD", Path::new(pw)), ("PGPASSFILE", &bad)], &url);
    assert_eq!(out.code, 0, "{out:?}");
    let with_password = url.replacen(
        &format!("{}@", server.role),
        &format!("{}:{}@", server.role, percent(pw)),
        1,
    );
    let out = fence(
        &[("PGPASSWORD", Path::new("wrong")), ("PGPASSFILE", &bad)],
        &with_password,
    );
    assert_eq!(out.code, 0, "{out:?}");
    // Status shows no password either.
    let mut c = bare(dir.path());
    c.args(["--url", &with_password, "--json", "status", "s"]);
    let out = run(c, None);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        !out.text().contains(pw) && !out.text().contains(&percent(pw)),
        "{out:?}"
    );
}

fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[test]
fn run_keeps_the_password_out_of_its_argv_and_out_of_cmd_s_environment() {
    let Some(server) = PasswordServer::start("run") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pw = server.password.as_str();
    let url = server.url("cli_pw_run");
    let with_password = url.replacen(
        &format!("{}@", server.role),
        &format!("{}:{}@", server.role, percent(pw)),
        1,
    );
    let url_file = dir.path().join("url");
    write(&url_file, &format!("{with_password}\n"), 0o600);
    let pgpass = dir.path().join("pgpass");
    write(&pgpass, &server.pgpass_line(pw), 0o600);
    // CMD records its environment and fencing's command line and
    // environment, then writes through the store with what it inherited.
    let script = "cat /proc/$$/environ > child.environ; \
                  cat /proc/$PPID/cmdline > parent.cmdline; \
                  cat /proc/$PPID/environ > parent.environ; \
                  echo \"$FENCING_URL\" > child.url; \
                  \"$FENCING_BIN\" put \"$FENCING_SCOPE\" k --value from-cmd";
    let runs = |extra: &[(&str, &Path)]| {
        let mut c = bare(dir.path());
        c.env_remove("PGPASSWORD")
            .env_remove("PGPASSFILE")
            .env("HOME", dir.path())
            .env("FENCING_BIN", common::BIN)
            .arg("--url-file")
            .arg(&url_file)
            .args(["run", "job", "--ttl", "30s", "--", "sh", "-c", script]);
        for (k, v) in extra {
            c.env(k, v);
        }
        run(c, None)
    };
    let read = |name: &str| std::fs::read(dir.path().join(name)).unwrap();
    let contains =
        |hay: &[u8], needle: &str| hay.windows(needle.len()).any(|w| w == needle.as_bytes());

    // Without PGPASSWORD or a password file, CMD cannot authenticate: its
    // URL has no password.
    let out = runs(&[]);
    assert_eq!(out.code, 19, "{out:?}");
    for file in [
        "child.environ",
        "parent.cmdline",
        "parent.environ",
        "child.url",
    ] {
        let bytes = read(file);
        assert!(
            !contains(&bytes, pw),
            "{file}: {}",
            String::from_utf8_lossy(&bytes)
        );
        assert!(!contains(&bytes, &percent(pw)), "{file}");
    }
    assert!(contains(&read("parent.cmdline"), "--url-file"));
    assert_eq!(
        String::from_utf8(read("child.url")).unwrap().trim(),
        url,
        "CMD's URL is the run's, without the password"
    );
    assert!(!out.stderr.contains(pw), "{out:?}");

    // With PGPASSFILE (or PGPASSWORD) inherited, it can.
    let out = runs(&[("PGPASSFILE", &pgpass)]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!contains(&read("child.environ"), &percent(pw)));
    let mut c = bare(dir.path());
    c.env("PGPASSFILE", &pgpass)
        .args(["--url", &url, "get", "job", "k"]);
    assert_eq!(run(c, None).stdout, b"from-cmd");
}
