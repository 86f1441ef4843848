//! `etcd://` with TLS (a CA file, a client certificate) and with etcd's
//! user/password authentication, each on a one-member etcd of the test's
//! own (Debian's etcd-server), certificates made with `openssl`. Runs when
//! the tests have etcd (`etcd_test_members`).
#![cfg(feature = "etcd")]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use fencing::{BackendErrorKind, ErrorCode, Fence, Store};

mod support;
use support::{etcd_test_members, fresh_schema};

/// One etcd member on free ports, killed when dropped.
struct Member {
    child: Child,
    client: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Member {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start(tls: Option<&Path>) -> Member {
    start_with(tls, false)
}

/// A member; with `jwt`, its auth tokens are JWTs signed by a key made for
/// it (they carry the auth store's revision, which etcd compares), not the
/// default simple tokens.
fn start_with(tls: Option<&Path>, jwt: bool) -> Member {
    let dir = tempfile::Builder::new()
        .prefix("fencing-etcd-tls-")
        .tempdir()
        .unwrap();
    let (client, peer) = (free_port(), free_port());
    let scheme = if tls.is_some() { "https" } else { "http" };
    let mut etcd = Command::new("etcd");
    etcd.arg("--name=m")
        .arg(format!("--data-dir={}", dir.path().join("data").display()))
        .arg(format!(
            "--listen-client-urls={scheme}://127.0.0.1:{client}"
        ))
        .arg(format!(
            "--advertise-client-urls={scheme}://127.0.0.1:{client}"
        ))
        .arg(format!("--listen-peer-urls=http://127.0.0.1:{peer}"))
        .arg(format!(
            "--initial-advertise-peer-urls=http://127.0.0.1:{peer}"
        ))
        .arg(format!("--initial-cluster=m=http://127.0.0.1:{peer}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if jwt {
        let (key, public) = (dir.path().join("jwt.key"), dir.path().join("jwt.pub"));
        let made = Command::new("openssl")
            .args(["genrsa", "-out"])
            .arg(&key)
            .arg("2048")
            .output()
            .unwrap();
        assert!(made.status.success(), "{made:?}");
        let made = Command::new("openssl")
            .args(["rsa", "-pubout", "-in"])
            .arg(&key)
            .arg("-out")
            .arg(&public)
            .output()
            .unwrap();
        assert!(made.status.success(), "{made:?}");
        etcd.arg(format!(
            "--auth-token=jwt,pub-key={},priv-key={},sign-method=RS256,ttl=10m",
            public.display(),
            key.display()
        ));
    }
    if let Some(certs) = tls {
        etcd.arg(format!(
            "--cert-file={}",
            certs.join("server.pem").display()
        ))
        .arg(format!("--key-file={}", certs.join("server.key").display()))
        .arg(format!(
            "--trusted-ca-file={}",
            certs.join("ca.pem").display()
        ))
        .arg("--client-cert-auth");
    }
    let child = etcd.spawn().expect("etcd (apt-get install etcd-server)");
    let member = Member {
        child,
        client,
        _dir: dir,
    };
    // Ready when the port takes connections (etcd serves once it has a
    // leader; the first call below waits for that within its deadline).
    let until = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", client)).is_err() {
        assert!(Instant::now() < until, "etcd did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    member
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate, in
/// `dir`; `other/ca.pem` is a second CA that signed nothing here.
fn certificates(dir: &Path) {
    for (ca, sub) in [("ca", "."), ("ca", "other")] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        openssl(
            &dir.join(sub),
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "2",
                "-subj",
                "/CN=fencing test CA",
                "-keyout",
                &format!("{ca}.key"),
                "-out",
                &format!("{ca}.pem"),
            ],
        );
    }
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )
    .unwrap();
    std::fs::write(dir.join("client.ext"), "extendedKeyUsage=clientAuth\n").unwrap();
    // "v1": no extensions, an X.509 version 1 certificate, which rustls
    // refuses as a client identity.
    for (name, ext) in [("server", true), ("client", true), ("v1", false)] {
        openssl(
            dir,
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                &format!("/CN={name}"),
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.csr"),
            ],
        );
        let mut sign = vec![
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            &format!("{name}.pem"),
        ]
        .into_iter()
        .map(str::to_owned)
        .collect::<Vec<String>>();
        if ext {
            sign.extend(["-extfile".to_owned(), format!("{name}.ext")]);
        }
        let sign: Vec<&str> = sign.iter().map(String::as_str).collect();
        openssl(dir, &sign);
    }
}

fn path(p: PathBuf) -> String {
    p.display().to_string()
}

#[test]
fn tls_with_a_client_certificate_works_and_each_wrong_setting_is_refused_clearly() {
    if etcd_test_members().is_none() {
        return;
    }
    let certs = tempfile::tempdir().unwrap();
    certificates(certs.path());
    let member = start(Some(certs.path()));
    let c = |name: &str| path(certs.path().join(name));
    let base = format!("etcd://127.0.0.1:{}/{}", member.client, fresh_schema("tls"));
    let good = format!(
        "{base}?sslrootcert={}&sslcert={}&sslkey={}",
        c("ca.pem"),
        c("client.pem"),
        c("client.key")
    );
    let store = Store::open(&good).unwrap_or_else(|e| panic!("{e}"));
    let lease = store.acquire("s", "A", Duration::from_secs(5)).unwrap();
    store.put("s", "k", b"v", &Fence::new(lease.token)).unwrap();
    assert_eq!(store.get("s", "k", None).unwrap().unwrap().value, b"v");

    let refused = |url: &str, what: &str| {
        let e = Store::open(url).unwrap_err();
        assert_eq!(e.code(), ErrorCode::Backend, "{what}: {e}");
        assert_eq!(
            e.backend_kind(),
            Some(BackendErrorKind::Refused),
            "{what}: {e}"
        );
        e.to_string()
    };
    // No client certificate, for a cluster that asks for one: the member
    // closes the connection, which is all a client sees of it.
    let e = Store::open(&format!("{base}?sslrootcert={}", c("ca.pem"))).unwrap_err();
    assert!(
        matches!(
            e.backend_kind(),
            Some(BackendErrorKind::Refused | BackendErrorKind::Unreachable)
        ),
        "{e}"
    );
    assert!(e.to_string().contains("sslcert"), "{e}");
    // A CA that did not sign the member's certificate.
    let e = refused(
        &format!(
            "{base}?sslrootcert={}&sslcert={}&sslkey={}",
            c("other/ca.pem"),
            c("client.pem"),
            c("client.key")
        ),
        "another CA",
    );
    assert!(e.contains("TLS"), "{e}");
    // Plain HTTP to a TLS port: closed, which is all a client sees.
    let e = Store::open(&base).unwrap_err();
    assert_eq!(e.backend_kind(), Some(BackendErrorKind::Unreachable), "{e}");
    assert!(e.to_string().contains("set sslrootcert"), "{e}");
    // Files that are missing or hold no certificate.
    let e = refused(
        &format!("{base}?sslrootcert={}", c("missing.pem")),
        "missing CA file",
    );
    assert!(e.contains("missing.pem"), "{e}");
    let e = refused(
        &format!("{base}?sslrootcert={}", c("server.ext")),
        "not a certificate",
    );
    assert!(e.contains("no PEM certificate"), "{e}");
    // A certificate rustls will not present (it used to panic inside the
    // HTTP client at the first connection).
    let e = refused(
        &format!(
            "{base}?sslrootcert={}&sslcert={}&sslkey={}",
            c("ca.pem"),
            c("v1.pem"),
            c("v1.key")
        ),
        "a v1 client certificate",
    );
    assert!(e.contains("not a usable client certificate"), "{e}");
    // A key that is not the certificate's.
    let e = refused(
        &format!(
            "{base}?sslrootcert={}&sslcert={}&sslkey={}",
            c("ca.pem"),
            c("client.pem"),
            c("server.key")
        ),
        "a key of another certificate",
    );
    assert!(e.contains("not a usable client certificate"), "{e}");
}

fn gateway(port: u16, path: &str, body: &str, token: Option<&str>) -> serde_json::Value {
    let mut curl = Command::new("curl");
    curl.args([
        "-s",
        "-X",
        "POST",
        &format!("http://127.0.0.1:{port}/v3/{path}"),
        "-d",
        body,
    ]);
    if let Some(t) = token {
        curl.args(["-H", &format!("Authorization: {t}")]);
    }
    let out = curl.output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{path}: {out:?}"))
}

fn b64(text: &str) -> String {
    B64.encode(text)
}

#[test]
fn users_and_passwords_are_etcds_and_a_password_is_never_shown() {
    if etcd_test_members().is_none() {
        return;
    }
    for jwt in [false, true] {
        users_and_passwords(jwt);
    }
}

fn users_and_passwords(jwt: bool) {
    let member = start_with(None, jwt);
    let port = member.client;
    // Wait for a leader: a write that succeeds.
    let until = Instant::now() + Duration::from_secs(20);
    while gateway(
        port,
        "kv/put",
        &format!(r#"{{"key":"{}","value":"eA=="}}"#, b64("probe")),
        None,
    )["header"]
        .is_null()
    {
        assert!(Instant::now() < until, "etcd has no leader");
        std::thread::sleep(Duration::from_millis(100));
    }
    // root (every key) and app (keys under "ok" only).
    for body in [
        r#"{"name":"root","password":"s3cret pw"}"#,
        r#"{"name":"app","password":"apppw"}"#,
    ] {
        gateway(port, "auth/user/add", body, None);
    }
    gateway(port, "auth/role/add", r#"{"name":"root"}"#, None);
    gateway(
        port,
        "auth/user/grant",
        r#"{"user":"root","role":"root"}"#,
        None,
    );
    gateway(port, "auth/role/add", r#"{"name":"app"}"#, None);
    let perm = format!(
        r#"{{"name":"app","perm":{{"permType":"READWRITE","key":"{}","range_end":"{}"}}}}"#,
        b64("ok"),
        b64("ol")
    );
    gateway(port, "auth/role/grant", &perm, None);
    gateway(
        port,
        "auth/user/grant",
        r#"{"user":"app","role":"app"}"#,
        None,
    );
    let enabled = gateway(port, "auth/enable", "{}", None);
    assert!(enabled["header"].is_object(), "{enabled}");

    let store = Store::open(&format!("etcd://root:s3cret%20pw@127.0.0.1:{port}/ok_root")).unwrap();
    assert_eq!(store.next_token("s").unwrap().get(), 1);
    assert!(
        store.location().contains("root:***@"),
        "{}",
        store.location()
    );
    let app = Store::open(&format!("etcd://app:apppw@127.0.0.1:{port}/ok_app")).unwrap();
    assert_eq!(app.next_token("s").unwrap().get(), 1);

    let refused = |url: &str, what: &str| {
        let e = Store::open(url).unwrap_err();
        assert_eq!(
            e.backend_kind(),
            Some(BackendErrorKind::Refused),
            "{what}: {e}"
        );
        let text = format!("{e} {e:?}");
        assert!(
            !text.contains("wrongpw") && !text.contains("s3cret"),
            "{what}: {text}"
        );
        text
    };
    let e = refused(
        &format!("etcd://root:wrongpw@127.0.0.1:{port}/ok_x"),
        "wrong password",
    );
    assert!(
        e.contains("authentication failed") || e.contains("password"),
        "{e}"
    );
    refused(&format!("etcd://127.0.0.1:{port}/ok_y"), "no user");
    // app may not touch keys outside "ok".
    let e = refused(
        &format!("etcd://app:apppw@127.0.0.1:{port}/no_app"),
        "no permission",
    );
    assert!(e.contains("permission denied"), "{e}");

    // The auth store changes (a user added, as an operator does): etcd then
    // refuses every token issued before ("revision of auth store is old");
    // a handle authenticates again, as etcd's own client does, and goes on.
    let root = gateway(
        port,
        "auth/authenticate",
        r#"{"name":"root","password":"s3cret pw"}"#,
        None,
    );
    let token = root["token"].as_str().unwrap().to_owned();
    let added = gateway(
        port,
        "auth/user/add",
        r#"{"name":"later","password":"laterpw"}"#,
        Some(&token),
    );
    assert!(added["header"].is_object(), "{added}");
    assert_eq!(store.next_token("s").unwrap().get(), 2);
    assert_eq!(app.next_token("s").unwrap().get(), 2);
}
