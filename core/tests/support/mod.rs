//! Helpers shared by the integration tests. Each test file uses a part.
#![allow(dead_code)]

use std::path::Path;

/// The `sqlite:` URL of a file.
pub fn sqlite_url(path: &Path) -> String {
    format!("sqlite:{}", path.display())
}

/// splitmix64: small, seedable and good enough to pick moments, threads and
/// children (no extra dependency).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform-ish in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Uniform-ish in `lo..=hi`.
    pub fn range(&mut self, (lo, hi): (u64, u64)) -> u64 {
        lo + self.below(hi - lo + 1)
    }
}

/// The throwaway PostgreSQL server's URL (`FENCING_TEST_PG_URL`, set by
/// `scripts/pg-cluster run`), or `None` to skip. With `FENCING_REQUIRE_PG=1`
/// (CI) a missing server fails the test instead.
pub fn postgres_test_url() -> Option<String> {
    match std::env::var("FENCING_TEST_PG_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("FENCING_REQUIRE_PG").as_deref() == Ok("1") => {
            panic!("FENCING_REQUIRE_PG=1 but FENCING_TEST_PG_URL is not set")
        }
        _ => {
            eprintln!("skipped: no PostgreSQL (run under `scripts/pg-cluster run -- ...`)");
            None
        }
    }
}

/// A schema name no other test or run used (the tests share one server).
pub fn fresh_schema(tag: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "t_{tag}_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// `false`, after a "skipped" line, where a test cannot run the host's
/// PostgreSQL client programs (psql, pg_dump): on Windows, where the server
/// and its tools are the host's (CI runs the Windows tests under Wine).
pub fn pg_client_tools(tool: &str) -> bool {
    if cfg!(windows) {
        eprintln!("skipped: runs {tool}, a program of the server's host (unix)");
        return false;
    }
    true
}

/// A PostgreSQL server of the test's own (`scripts/pg-cluster` in a temp
/// dir), so that crashing or reconfiguring it disturbs no other test.
/// Started only when the tests have a server (`postgres_test_url`).
pub struct OwnCluster {
    dir: tempfile::TempDir,
    script: std::path::PathBuf,
}

impl OwnCluster {
    pub fn start() -> Option<(OwnCluster, String)> {
        postgres_test_url()?;
        if cfg!(windows) {
            // scripts/pg-cluster starts Linux processes: under Wine (and on
            // Windows) the tests of a server of their own skip.
            eprintln!("skipped: a server of the test's own needs scripts/pg-cluster (unix)");
            return None;
        }
        let script =
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/pg-cluster");
        let dir = tempfile::Builder::new()
            .prefix("fencing-pg-own-")
            .tempdir()
            .unwrap();
        let cluster = OwnCluster { dir, script };
        let url = cluster.run("start");
        Some((cluster, url))
    }

    /// The server's main process (first line of `postmaster.pid`).
    pub fn postmaster_pid(&self) -> i32 {
        let pid_file = self.dir.path().join("data/postmaster.pid");
        let text = std::fs::read_to_string(&pid_file).unwrap();
        text.lines().next().unwrap().trim().parse().unwrap()
    }

    /// `scripts/pg-cluster WHAT DIR` (start, stop, crash, restart); its output.
    pub fn run(&self, what: &str) -> String {
        let out = std::process::Command::new("bash")
            .arg(&self.script)
            .arg(what)
            .arg(self.dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pg-cluster {what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        let _ = std::process::Command::new("bash")
            .arg(&self.script)
            .arg("stop")
            .arg(self.dir.path())
            .output();
    }
}

/// The URL a test bed exported in `var`, or `None` to skip; with
/// `FENCING_REQUIRE_PG=1` (CI) a missing bed fails the test instead.
pub fn bed_url(var: &str, bed: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("FENCING_REQUIRE_PG").as_deref() == Ok("1") => {
            panic!("FENCING_REQUIRE_PG=1 but {var} is not set: run under `{bed} run -- ...`")
        }
        _ => {
            eprintln!("skipped: {var} is not set (run under `{bed} run -- ...`)");
            None
        }
    }
}

/// The TLS-only server of `scripts/pg-tls`: its URL (host `localhost`, no
/// TLS options) and the directory with `ca.crt`, `other-ca.crt`,
/// `certuser.crt` and `certuser.key` (and its Unix socket).
pub fn postgres_tls_test() -> Option<(String, std::path::PathBuf)> {
    let url = bed_url("FENCING_TEST_PG_TLS_URL", "scripts/pg-tls")?;
    let dir = bed_url("FENCING_TEST_PG_TLS_DIR", "scripts/pg-tls")?;
    Some((url, dir.into()))
}

/// PgBouncer in transaction mode (`scripts/pgbouncer`), in front of the
/// server of `FENCING_TEST_PG_URL`.
pub fn pgbouncer_test_url() -> Option<String> {
    bed_url("FENCING_TEST_PGBOUNCER_URL", "scripts/pgbouncer")
}

/// A library role on `schema` granted as docs/postgres.md says, except
/// EXECUTE on `functions` (signatures, e.g. `watch(text, bigint)`): a grant
/// run before those functions existed. Returns the role and a store URL
/// that logs in as it; drop both with `DROP SCHEMA ... CASCADE; DROP ROLE`.
pub fn role_granted_before(base: &str, schema: &str, functions: &[&str]) -> (String, String) {
    let role = format!("{schema}_app");
    let revoked: Vec<String> = functions.iter().map(|f| format!("{schema}.{f}")).collect();
    postgres::Client::connect(base, postgres::NoTls)
        .unwrap()
        .batch_execute(&format!(
            "CREATE ROLE {role} LOGIN;
             GRANT USAGE ON SCHEMA {schema} TO {role};
             GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {schema} TO {role};
             REVOKE EXECUTE ON FUNCTION {} FROM {role};",
            revoked.join(", ")
        ))
        .unwrap();
    let url = format!(
        "postgres://{role}@{}?schema={schema}",
        base.split_once('@').unwrap().1
    );
    (role, url)
}

/// The shared throwaway etcd cluster's members (`FENCING_TEST_ETCD_CLUSTER`,
/// from `scripts/etcd-cluster run`), or `None` to skip; with
/// `FENCING_REQUIRE_ETCD=1` (CI) a missing cluster fails the test instead.
#[allow(dead_code)]
pub fn etcd_test_members() -> Option<String> {
    match std::env::var("FENCING_TEST_ETCD_CLUSTER") {
        Ok(members) if !members.is_empty() => Some(members),
        _ if std::env::var("FENCING_REQUIRE_ETCD").as_deref() == Ok("1") => {
            panic!("FENCING_REQUIRE_ETCD=1 but FENCING_TEST_ETCD_CLUSTER is not set")
        }
        _ => {
            eprintln!("skipped: no etcd (run under `scripts/etcd-cluster run -- ...`)");
            None
        }
    }
}

/// `POST /v3/{path}` on one etcd member, as any etcd client may send it.
#[cfg(feature = "etcd")]
pub fn etcd_raw(member: &str, path: &str, body: &serde_json::Value) -> serde_json::Value {
    let mut answer = ureq::post(&format!("http://{member}/v3/{path}"))
        .send_json(body)
        .unwrap_or_else(|e| panic!("{path} on {member}: {e}"));
    answer.body_mut().read_json().unwrap()
}

/// A three-member etcd cluster of the test's own (`scripts/etcd-cluster` in
/// a temp dir), so that killing and pausing its members disturbs no other
/// test. Started only when the tests have a cluster (`etcd_test_members`).
#[allow(dead_code)]
pub struct OwnEtcd {
    dir: tempfile::TempDir,
    script: std::path::PathBuf,
    /// `HOST:PORT,...` of etcd0..etcd2.
    pub members: String,
}

#[allow(dead_code)]
impl OwnEtcd {
    pub fn start() -> Option<OwnEtcd> {
        etcd_test_members()?;
        let script =
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/etcd-cluster");
        let dir = tempfile::Builder::new()
            .prefix("fencing-etcd-own-")
            .tempdir()
            .unwrap();
        let mut cluster = OwnEtcd {
            dir,
            script,
            members: String::new(),
        };
        let env = cluster.run(&["start"]);
        cluster.members = env
            .lines()
            .find_map(|l| l.strip_prefix("FENCING_TEST_ETCD_CLUSTER="))
            .expect("etcd-cluster start prints the members")
            .to_owned();
        Some(cluster)
    }

    /// `scripts/etcd-cluster WHAT DIR [MEMBER]` (kill-leader, pause, resume,
    /// restart, ...); its output.
    pub fn run(&self, what: &[&str]) -> String {
        let out = std::process::Command::new("bash")
            .arg(&self.script)
            .arg(what[0])
            .arg(self.dir.path())
            .args(&what[1..])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "etcd-cluster {what:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }
}

impl Drop for OwnEtcd {
    fn drop(&mut self) {
        let _ = std::process::Command::new("bash")
            .arg(&self.script)
            .arg("stop")
            .arg(self.dir.path())
            .output();
    }
}

/// Runs `body` in a forked child, then ends the child with `_exit`: status
/// 0 when `body` returned, 1 when it panicked (printed under `label`),
/// never running the parent's destructors or atexit handlers.
#[cfg(unix)]
pub fn finish_child(label: &str, body: impl FnOnce()) -> ! {
    let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
    if let Err(e) = &ok {
        eprintln!("{label}: {e:?}");
    }
    // SAFETY: _exit ends the process at once; nothing runs after it.
    unsafe { nix::libc::_exit(i32::from(ok.is_err())) }
}
