//! Each backend failure carries the kind it is (docs/semantics.md,
//! "Errors") and the driver's error as its source.

use std::error::Error as _;

use fencing::{BackendErrorKind, Error, ErrorCode, Store};

fn kind(e: &Error) -> Option<BackendErrorKind> {
    assert_eq!(e.code(), ErrorCode::Backend, "{e}");
    e.backend_kind()
}

#[test]
fn an_sqlite_file_that_is_not_a_database_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("not-a-db");
    std::fs::write(&path, vec![b'x'; 8192]).unwrap();
    let e = Store::open(&format!("sqlite:{}", path.display())).unwrap_err();
    assert_eq!(kind(&e), Some(BackendErrorKind::Corrupt), "{e}");
    let says = format!("{} is not a SQLite database", path.display());
    assert!(e.to_string().contains(&says), "names the file: {e}");
    let source = e.source().expect("the driver's error");
    assert!(
        source.downcast_ref::<rusqlite::Error>().is_some(),
        "{source:?}"
    );
    let details = e.details_json();
    assert_eq!(details["kind"], "corrupt");
}

#[test]
fn an_sqlite_database_fencing_did_not_create_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("theirs.db");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE t (x)")
        .unwrap();
    let e = Store::open(&format!("sqlite:{}", path.display())).unwrap_err();
    assert_eq!(kind(&e), Some(BackendErrorKind::Refused), "{e}");
}

#[test]
fn an_sqlite_path_that_cannot_be_created_is_unreachable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-such-dir").join("x.db");
    let e = Store::open(&format!("sqlite:{}", path.display())).unwrap_err();
    assert_eq!(kind(&e), Some(BackendErrorKind::Unreachable), "{e}");
    let says = format!(
        "its directory {} does not exist",
        dir.path().join("no-such-dir").display()
    );
    assert!(e.to_string().contains(&says), "names the directory: {e}");
    assert!(e
        .source()
        .unwrap()
        .downcast_ref::<std::io::Error>()
        .is_some());
}

/// `~` is the shell's: in a URL it is a directory named `~`, and the error
/// says so, with the path this process resolved.
#[test]
fn a_tilde_path_says_it_is_not_expanded() {
    let e = Store::open("sqlite:~/fencing-no-such-dir/x.db").unwrap_err();
    let text = e.to_string();
    assert!(text.contains("`~` is not expanded"), "{text}");
    // As the process resolves it: on Windows with `\` throughout.
    let resolved = std::path::absolute(
        std::env::current_dir()
            .unwrap()
            .join("~/fencing-no-such-dir/x.db"),
    )
    .unwrap();
    assert!(text.contains(&resolved.display().to_string()), "{text}");
}

#[test]
fn a_closed_postgres_port_is_unreachable() {
    // A port that was just free on 127.0.0.1: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://fencing@127.0.0.1:{port}/fencing?sslmode=disable");
    let e = Store::open(&url).unwrap_err();
    assert_eq!(kind(&e), Some(BackendErrorKind::Unreachable), "{e}");
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
    let source = e.source().expect("the driver's error");
    assert!(
        source.downcast_ref::<tokio_postgres::Error>().is_some(),
        "{source:?}"
    );
}

#[test]
fn kinds_have_distinct_stable_names() {
    let names: std::collections::HashSet<_> =
        BackendErrorKind::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(names.len(), BackendErrorKind::ALL.len());
    for k in BackendErrorKind::ALL {
        assert_eq!(BackendErrorKind::from_name(k.as_str()), Some(k));
    }
    assert_eq!(BackendErrorKind::OutcomeUnknown.as_str(), "outcome_unknown");
    assert_eq!(BackendErrorKind::from_name("Busy"), None);
}
