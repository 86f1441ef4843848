//! TLS against a real TLS-only server (`scripts/pg-tls`: a test CA, a server
//! certificate for localhost and 127.0.0.1, an unrelated CA, a client
//! certificate for role `certuser`, plain TCP rejected): what connects, what
//! is refused and what the refusal says (docs/postgres.md, "TLS"). The shared
//! scenarios over `verify-full` run in tests/runner/tests/postgres.rs.
//! Needs `FENCING_TEST_PG_TLS_URL` and `FENCING_TEST_PG_TLS_DIR`.
// Its admin connection is to the server's Unix socket (scripts/pg-tls).
#![cfg(unix)]

use std::path::Path;
use std::time::Duration;

use fencing::{ErrorCode, Fence, Store};

mod support;
use support::{fresh_schema, postgres_test_url, postgres_tls_test};

/// Goes into URLs so that a test can show no message repeats it.
const PASSWORD: &str = "pw-never-printed-1234";

/// The bed's URL with a password (trust auth ignores it) and `query`.
fn url(base: &str, query: &str) -> String {
    let with_password = base.replacen("://postgres@", &format!("://postgres:{PASSWORD}@"), 1);
    assert_ne!(with_password, base, "unexpected bed URL {base}");
    format!("{with_password}?{query}")
}

fn cert(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

/// A few operations, enough to show the connection works end to end.
fn works(url: &str) {
    let schema = fresh_schema("tls");
    let store = Store::open(&format!("{url}&schema={schema}")).unwrap_or_else(|e| panic!("{e}"));
    let lease = store.acquire("job", "w1", Duration::from_secs(30)).unwrap();
    store
        .put("job", "k", b"v", &Fence::new(lease.token))
        .unwrap();
    assert_eq!(store.get("job", "k", None).unwrap().unwrap().value, b"v");
    store.close();
}

/// Opening fails with `BACKEND`, a message that says `what`, and no password.
fn refused(url: &str, what: &str) -> String {
    let err = match Store::open(&format!("{url}&schema={}", fresh_schema("tls"))) {
        Ok(_) => panic!("connected, expected a refusal that says {what:?}"),
        Err(e) => e,
    };
    let message = err.to_string();
    eprintln!("refused as expected: {message}");
    assert_eq!(err.code(), ErrorCode::Backend, "{message}");
    assert!(message.contains(what), "{message:?} should say {what:?}");
    assert!(
        !message.contains(PASSWORD),
        "{message:?} leaks the password"
    );
    message
}

#[test]
fn verify_full_with_the_test_ca_connects() {
    let Some((base, dir)) = postgres_tls_test() else {
        return;
    };
    let ca = cert(&dir, "ca.crt");
    works(&url(
        &base,
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    ));
    // verify-ca checks the chain only; prefer (the default) and require
    // without a root certificate encrypt without checking, as libpq does.
    works(&url(&base, &format!("sslmode=verify-ca&sslrootcert={ca}")));
    works(&url(&base, "sslmode=require"));
    works(&url(&base, "call_timeout_ms=5000"));
    // By address: the certificate names IP 127.0.0.1 too.
    let by_ip = base.replacen("@localhost:", "@127.0.0.1:", 1);
    works(&url(
        &by_ip,
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    ));
}

#[test]
fn an_unknown_ca_is_refused() {
    let Some((base, dir)) = postgres_tls_test() else {
        return;
    };
    let other = cert(&dir, "other-ca.crt");
    for mode in ["verify-full", "verify-ca", "require"] {
        // require with a root certificate checks the chain, as libpq does.
        refused(
            &url(&base, &format!("sslmode={mode}&sslrootcert={other}")),
            "unknown CA",
        );
    }
}

#[test]
fn a_host_name_the_certificate_does_not_name_is_refused_by_verify_full_only() {
    let Some((base, dir)) = postgres_tls_test() else {
        return;
    };
    let ca = cert(&dir, "ca.crt");
    // Connect to 127.0.0.1 while calling the server wrong.invalid: the driver
    // dials hostaddr and checks the certificate against host.
    let wrong = base.replacen("@localhost:", "@wrong.invalid:", 1);
    let query = |mode: &str| format!("hostaddr=127.0.0.1&sslmode={mode}&sslrootcert={ca}");
    let message = refused(&url(&wrong, &query("verify-full")), "host name mismatch");
    assert!(message.contains("wrong.invalid"), "{message}");
    works(&url(&wrong, &query("verify-ca")));
}

#[test]
fn plaintext_is_refused_by_the_server() {
    let Some((base, _)) = postgres_tls_test() else {
        return;
    };
    // The server's pg_hba.conf rejects connections without TLS.
    refused(&url(&base, "sslmode=disable"), "no encryption");
}

#[test]
fn sslmode_require_fails_on_a_server_without_tls() {
    if postgres_tls_test().is_none() {
        return;
    }
    let Some(plain) = postgres_test_url() else {
        return;
    };
    let plain = plain.replacen("://postgres@", &format!("://postgres:{PASSWORD}@"), 1);
    refused(&format!("{plain}?sslmode=require"), "does not support TLS");
    // prefer (the default) falls back to plaintext there, as libpq does.
    works(&format!("{plain}?sslmode=prefer"));
}

#[test]
fn unreadable_certificate_files_fail_the_open() {
    let Some((base, dir)) = postgres_tls_test() else {
        return;
    };
    let missing = dir.join("no-such.crt").display().to_string();
    let message = refused(
        &url(&base, &format!("sslmode=verify-full&sslrootcert={missing}")),
        "sslrootcert: cannot read",
    );
    assert!(message.contains("no-such.crt"), "{message}");
    // A key file that holds a certificate, not a key.
    let crt = cert(&dir, "certuser.crt");
    refused(
        &url(
            &base,
            &format!("sslmode=require&sslcert={crt}&sslkey={crt}"),
        ),
        "sslkey: cannot read",
    );
}

#[test]
fn certuser_connects_with_its_client_certificate() {
    let Some((base, dir)) = postgres_tls_test() else {
        return;
    };
    // Migrate as postgres (over the Unix socket of the bed), then let
    // certuser run the library (docs/postgres.md, "Grants").
    let schema = fresh_schema("tlscert");
    let ca = cert(&dir, "ca.crt");
    Store::open(&url(
        &base,
        &format!("sslmode=verify-full&sslrootcert={ca}&schema={schema}"),
    ))
    .unwrap()
    .close();
    let port: u16 = std::fs::read_to_string(dir.join("port"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let mut admin = postgres::Config::new()
        .host_path(&dir)
        .port(port)
        .user("postgres")
        .dbname("postgres")
        .connect(postgres::NoTls)
        .unwrap();
    admin
        .batch_execute(&format!(
            "GRANT USAGE ON SCHEMA {schema} TO certuser;
             GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {schema} TO certuser;"
        ))
        .unwrap();

    let certuser = base.replacen("://postgres@", "://certuser@", 1);
    let (crt, key) = (cert(&dir, "certuser.crt"), cert(&dir, "certuser.key"));
    let store = Store::open(&format!(
        "{certuser}?sslmode=verify-full&sslrootcert={ca}&sslcert={crt}&sslkey={key}&schema={schema}"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let lease = store
        .acquire("job", "certuser", Duration::from_secs(30))
        .unwrap();
    store
        .put("job", "k", b"v", &Fence::new(lease.token))
        .unwrap();
    store.close();

    // Without its certificate the server's `cert` method refuses certuser.
    let err = Store::open(&format!(
        "{certuser}?sslmode=verify-full&sslrootcert={ca}&schema={schema}"
    ))
    .map(drop)
    .unwrap_err();
    eprintln!("refused as expected: {err}");
    assert_eq!(err.code(), ErrorCode::Backend);
    assert!(err.to_string().contains("certificate"), "{err}");
}
