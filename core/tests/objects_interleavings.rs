#![cfg(feature = "objects")]
//! `fencing::objects` under hostile interleavings and stores: a store that
//! holds a writer or a reader between any two of its requests, loses an
//! answer, or refuses a create; names and sizes at the edges. Each test
//! states the promise it checks (docs/semantics.md, "Fenced objects").

use std::sync::Arc;

use fencing::objects::{aio, Objects};
use fencing::{BackendErrorKind, ErrorCode, Fence, Token};
use object_store::memory::InMemory;
use object_store::ObjectStore;

fn fence(t: u64) -> Fence {
    Fence::new(Token::new(t).unwrap())
}

mod objects_support;
use objects_support::{Hooked, Op};

fn memory() -> Arc<dyn ObjectStore> {
    Arc::new(InMemory::new())
}

/// Promise (a). A reader lists (head: version 2, token 2) and is paused
/// before it reads claim 2; meanwhile B writes 20 more versions (claim 2 is
/// collected) and a stale writer A (token 1), paused after it read the head
/// claim 1 and before it wrote its bytes, goes on: it writes its data and
/// creates claim 2 again. The reader, reading claim 2 by name, must see the
/// floor above it and look again, never return A's bytes.
#[tokio::test]
async fn a_reader_paused_between_its_list_and_its_claim_read_never_sees_a_recreated_claim() {
    let held = |op: &Op| matches!(op, Op::Get { at } if objects_support::is_claim(at));
    reader_held_while_its_claim_is_created_again(Box::new(held)).await;
}

/// The same, with the reader held after its claim read, before its data
/// read and second listing.
#[tokio::test]
async fn a_reader_held_after_its_claim_read_looks_again() {
    let held = |op: &Op| matches!(op, Op::Get { at } if objects_support::is_data(at));
    reader_held_while_its_claim_is_created_again(Box::new(held)).await;
}

async fn reader_held_while_its_claim_is_created_again(reader_held: objects_support::Matcher) {
    let mem = memory();
    let b = aio::Objects::with_store(mem.clone(), "").unwrap();
    b.put("obj", &fence(1), b"init (token 1)", None)
        .await
        .unwrap();

    // A: held before it writes its bytes (after the list and the head claim).
    let (a_store, a_reached, a_go) = Hooked::hold(
        mem.clone(),
        Box::new(|op| matches!(op, Op::Put { at, create: false } if objects_support::is_data(at))),
    );
    let a = aio::Objects::with_store(Arc::new(a_store), "").unwrap();
    let a_write = tokio::spawn(async move { a.put("obj", &fence(1), b"A, stale", None).await });
    a_reached.await.unwrap();

    b.put("obj", &fence(2), b"B 0", None).await.unwrap(); // version 2
    let seen = b.get("obj").await.unwrap().unwrap();
    assert_eq!((seen.token.get(), seen.version), (2, 2));

    let (r_store, r_reached, r_go) = Hooked::hold(mem.clone(), reader_held);
    let r = aio::Objects::with_store(Arc::new(r_store), "").unwrap();
    let read = tokio::spawn(async move { r.get("obj").await });
    r_reached.await.unwrap();

    for i in 1..=20 {
        b.put("obj", &fence(2), format!("B {i}").as_bytes(), None)
            .await
            .unwrap();
    }
    a_go.send(()).unwrap();
    let a_outcome = a_write.await.unwrap();
    assert_eq!(
        a_outcome.as_ref().err().and_then(|e| e.backend_kind()),
        Some(BackendErrorKind::OutcomeUnknown),
        "{a_outcome:?}"
    );
    r_go.send(()).unwrap();
    let now = read.await.unwrap().unwrap().unwrap();
    assert_eq!(
        (now.bytes.as_slice(), now.token.get(), now.version),
        (&b"B 20"[..], 2, 22),
        "the reader went back to {:?}",
        String::from_utf8_lossy(&now.bytes)
    );
}

/// Promise (d). object_store retries a PUT answered 5xx (S3's
/// `If-None-Match: *` included); when the first attempt took, the retry is
/// answered 412, or 403/401 if the credentials expired during the
/// back-off. The writer must know its own claim: accepted (or its outcome
/// unknown), never refused, and the object stays readable.
#[tokio::test]
async fn a_create_that_took_and_whose_retry_was_refused_is_not_reported_refused() {
    let answers: [fn(&object_store::path::Path) -> object_store::Error; 2] =
        [precondition, forbidden];
    for answer in answers {
        let mem = memory();
        let (g, _made, _release) = Hooked::lose_create_answer(mem.clone(), answer, false);
        let w = aio::Objects::with_store(Arc::new(g), "").unwrap();
        let outcome = w.put("obj", &fence(1), b"mine", Some(0)).await;
        let reader = aio::Objects::with_store(mem, "").unwrap();
        let now = reader.get("obj").await;
        assert!(
            outcome.is_ok()
                || outcome.as_ref().unwrap_err().backend_kind()
                    == Some(BackendErrorKind::OutcomeUnknown),
            "the claim took, yet the write was reported {:?}; a read now gives {:?}",
            outcome.map_err(|e| e.to_string()),
            now.map_err(|e| e.to_string())
        );
        assert!(now.is_ok(), "{:?}", now.map_err(|e| e.to_string()));
    }
}

/// Promise (d), the other way: a create the store refuses before sending
/// it (create-only puts not implemented) is a definite REFUSED, not
/// OUTCOME_UNKNOWN, which would send callers to read and retry forever.
#[tokio::test]
async fn a_claim_the_store_refuses_outright_is_refused_not_outcome_unknown() {
    let mut g = Hooked::new(memory());
    g.refuse_create = true;
    let w = aio::Objects::with_store(Arc::new(g), "").unwrap();
    let err = w.put("obj", &fence(1), b"x", None).await.unwrap_err();
    assert_eq!(err.backend_kind(), Some(BackendErrorKind::Refused), "{err}");
}

/// Error messages never echo a URL's password, a file URL's included.
#[test]
fn a_file_url_with_a_password_is_not_echoed() {
    let err = Objects::open("file://user:hunter2@host/tmp").err().unwrap();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert!(!err.to_string().contains("hunter2"), "{err}");
}

/// Promise (e). A path whose last segment is 250 bytes: its folder's name
/// (plus ".fenced") would be longer than a file name may be, so it is
/// INVALID_ARGUMENT, never a BACKEND failure from the disk.
#[test]
fn a_path_accepted_by_the_checks_is_usable_on_a_file_store() {
    let dir = tempfile::tempdir().unwrap();
    let o = Objects::open(&format!("file://{}", dir.path().display())).unwrap();
    let path = "x".repeat(250);
    let got = o.get(&path);
    let put = o.put(&path, &fence(1), b"x", None);
    for (what, r) in [("get", got.map(|_| ())), ("put", put.map(|_| ()))] {
        if let Err(e) = r {
            assert_eq!(e.code(), ErrorCode::InvalidArgument, "{what}: {e}");
        }
    }
}

/// Promise (g). A claim numbered u64::MAX - 1 in the folder (a foreign or
/// damaged store): the next write takes u64::MAX, and nothing overflows.
#[tokio::test]
async fn a_write_of_the_last_version_does_not_panic() {
    use object_store::path::Path;
    use object_store::{ObjectStoreExt, PutPayload};
    let mem = memory();
    mem.put(
        &Path::from("obj.fenced/18446744073709551614"),
        PutPayload::from_static(br#"{"token":1,"seq":null,"data":null}"#),
    )
    .await
    .unwrap();
    let o = aio::Objects::with_store(mem, "").unwrap();
    let w = tokio::spawn(async move { o.put("obj", &fence(1), b"x", None).await });
    let r = w.await;
    assert!(r.is_ok(), "the write panicked: {:?}", r.err());
}

/// Promise (f). A writer killed inside LocalFileSystem's put leaves its
/// staging file `NAME#1` in the folder, which listings hide: collection
/// removes those below its floor itself.
#[test]
fn staging_files_left_by_killed_writers_are_collected() {
    let dir = tempfile::tempdir().unwrap();
    let o = Objects::open(&format!("file://{}", dir.path().display())).unwrap();
    o.put("p", &fence(1), b"x", None).unwrap();
    let folder = dir.path().join("p.fenced");
    // What a writer killed between writing and linking its claim (or
    // renaming its data) leaves: the staging file of version 2.
    let left = [
        "00000000000000000002#1",
        "00000000000000000002-00000000000000000001-00000000000000ab#1",
    ];
    for name in left {
        std::fs::write(folder.join(name), b"half").unwrap();
    }
    for _ in 0..40 {
        o.put("p", &fence(1), b"x", None).unwrap();
    }
    let still: Vec<_> = left.iter().filter(|n| folder.join(n).exists()).collect();
    assert!(still.is_empty(), "never collected: {still:?}");
}

/// docs/objects.md: "Everything the library writes for the path P lives
/// in the folder P.fenced/". A path with a character object_store
/// percent-encodes (# % * ? " < > | \ { } [ ] ^ ~ `) would be stored
/// elsewhere: it is refused, and nothing is written.
#[test]
fn a_path_that_object_stores_would_escape_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let o = Objects::open(&format!("file://{}", dir.path().display())).unwrap();
    for path in ["report#1.csv", "a%20b", "x/y?z", "q~", "back\\slash"] {
        let err = o.put(path, &fence(1), b"x", None).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{path}: {err}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// Two writers with the same expected_version, both paused after their
/// check and before their claim: one is accepted.
#[tokio::test]
async fn two_writers_with_the_same_expected_version_are_not_both_accepted() {
    let mem = memory();
    let b = aio::Objects::with_store(mem.clone(), "").unwrap();
    b.put("obj", &fence(1), b"v1", None).await.unwrap();
    let mut tasks = Vec::new();
    let mut gos = Vec::new();
    for who in 0..2 {
        let (s, reached, go) = Hooked::hold(
            mem.clone(),
            Box::new(
                |op| matches!(op, Op::Put { at, create: true } if objects_support::is_claim(at)),
            ),
        );
        let w = aio::Objects::with_store(Arc::new(s), "").unwrap();
        tasks.push(tokio::spawn(async move {
            w.put("obj", &fence(1), format!("w{who}").as_bytes(), Some(1))
                .await
        }));
        reached.await.unwrap();
        gos.push(go);
    }
    for go in gos {
        go.send(()).unwrap();
    }
    let mut ok = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => ok += 1,
            Err(e) => assert_eq!(e.code(), ErrorCode::VersionMismatch, "{e}"),
        }
    }
    assert_eq!(ok, 1);
}

fn forbidden(at: &object_store::path::Path) -> object_store::Error {
    object_store::Error::PermissionDenied {
        path: at.to_string(),
        source: "403 on the retry of a PUT answered 503 (credentials expired meanwhile)".into(),
    }
}

fn precondition(at: &object_store::path::Path) -> object_store::Error {
    object_store::Error::AlreadyExists {
        path: at.to_string(),
        source: "412 on the retry of a PUT answered 503".into(),
    }
}

/// The nonce path when the writer's own claim no longer answers for it:
/// A's create of claim 2 takes (readers see it) but its answer is lost; the
/// client's retry is answered "exists" only after 15 newer writes collected
/// claim 2 and a stale writer S (held after reading claim 1) created claim
/// 2 again. A reads claim 2 back and finds S's nonce: with a floor above
/// the version, that proves nothing, so A's outcome is unknown, never
/// STALE_TOKEN for a write that took and was read.
#[tokio::test]
async fn a_writer_whose_own_claim_was_collected_and_created_again_is_not_told_refused() {
    let mem = memory();
    let b = aio::Objects::with_store(mem.clone(), "").unwrap();
    b.put("obj", &fence(1), b"v1", None).await.unwrap(); // version 1

    // S: stale, held before it creates claim 2.
    let (s_store, s_reached, s_go) = Hooked::hold(
        mem.clone(),
        Box::new(|op| matches!(op, Op::Put { at, create: true } if objects_support::is_claim(at))),
    );
    let s = aio::Objects::with_store(Arc::new(s_store), "").unwrap();
    let s_write = tokio::spawn(async move { s.put("obj", &fence(1), b"S, stale", None).await });
    s_reached.await.unwrap();

    // A: creates claim 2, its answer held.
    let (a_store, a_made, a_release) = Hooked::lose_create_answer(mem.clone(), precondition, true);
    let a = aio::Objects::with_store(Arc::new(a_store), "").unwrap();
    let a_write = tokio::spawn(async move { a.put("obj", &fence(2), b"A", None).await });
    a_made.await.unwrap();
    let seen = b.get("obj").await.unwrap().unwrap();
    assert_eq!((seen.bytes.as_slice(), seen.version), (&b"A"[..], 2));

    for i in 0..15 {
        b.put("obj", &fence(3), format!("B {i}").as_bytes(), None)
            .await
            .unwrap();
    }
    s_go.send(()).unwrap();
    let s_outcome = s_write.await.unwrap();
    assert_eq!(
        s_outcome.as_ref().err().and_then(|e| e.backend_kind()),
        Some(BackendErrorKind::OutcomeUnknown),
        "{s_outcome:?}"
    );
    a_release.send(()).unwrap();
    let a_outcome = a_write.await.unwrap();
    assert!(
        a_outcome.as_ref().err().and_then(|e| e.backend_kind())
            == Some(BackendErrorKind::OutcomeUnknown),
        "A's write took (a reader returned it as version 2) yet it was reported {:?}",
        a_outcome.map_err(|e| (e.code(), e.to_string()))
    );
}

/// The same, with one token for everyone (a holder's concurrent writes, no
/// expected_version): A's write, taken at version 2, must not be applied a
/// second time over the 15 writes made after it.
#[tokio::test]
async fn a_write_that_took_is_never_applied_twice() {
    let mem = memory();
    let b = aio::Objects::with_store(mem.clone(), "").unwrap();
    b.put("obj", &fence(1), b"v1", None).await.unwrap();
    let (s_store, s_reached, s_go) = Hooked::hold(
        mem.clone(),
        Box::new(|op| matches!(op, Op::Put { at, create: true } if objects_support::is_claim(at))),
    );
    let s = aio::Objects::with_store(Arc::new(s_store), "").unwrap();
    let s_write = tokio::spawn(async move { s.put("obj", &fence(1), b"S", None).await });
    s_reached.await.unwrap();
    let (a_store, a_made, a_release) = Hooked::lose_create_answer(mem.clone(), precondition, true);
    let a = aio::Objects::with_store(Arc::new(a_store), "").unwrap();
    let a_write = tokio::spawn(async move { a.put("obj", &fence(1), b"A", None).await });
    a_made.await.unwrap();
    for i in 0..15 {
        b.put("obj", &fence(1), format!("B {i}").as_bytes(), None)
            .await
            .unwrap();
    }
    s_go.send(()).unwrap();
    let _ = s_write.await.unwrap();
    a_release.send(()).unwrap();
    let a_outcome = a_write.await.unwrap();
    let now = b.get("obj").await.unwrap().unwrap();
    assert_eq!(
        now.bytes,
        b"B 14",
        "A's write (version 2) came back over 15 newer writes: now version {}, A told {:?}",
        now.version,
        a_outcome.map_err(|e| e.to_string())
    );
}

/// One reader's versions and tokens never go down across calls while
/// writers race and collect.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reads_are_monotonic_under_racing_writers_and_collection() {
    let mem = memory();
    let b = aio::Objects::with_store(mem.clone(), "").unwrap();
    b.put("obj", &fence(1), b"t1", None).await.unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..4u64 {
        let o = aio::Objects::with_store(mem.clone(), "").unwrap();
        let stop = stop.clone();
        writers.push(tokio::spawn(async move {
            let mut t = 1 + w;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = o
                    .put("obj", &fence(t), format!("t{t}").as_bytes(), None)
                    .await;
                t += 4;
                tokio::task::yield_now().await;
            }
        }));
    }
    let mut readers = Vec::new();
    for _ in 0..4 {
        let o = aio::Objects::with_store(mem.clone(), "").unwrap();
        readers.push(tokio::spawn(async move {
            let (mut v, mut t) = (0, 0);
            for _ in 0..2000 {
                match o.get("obj").await {
                    Ok(Some(now)) => {
                        assert!(now.version >= v && now.token.get() >= t, "went back");
                        assert_eq!(now.bytes, format!("t{}", now.token.get()).into_bytes());
                        (v, t) = (now.version, now.token.get());
                    }
                    Ok(None) => panic!("vanished"),
                    Err(e) => assert_eq!(e.backend_kind(), Some(BackendErrorKind::Busy), "{e}"),
                }
            }
        }));
    }
    for r in readers {
        r.await.unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
}

/// The blocking handle, from many threads.
#[test]
fn the_blocking_handle_serves_many_threads() {
    let o = Arc::new(Objects::open("memory:").unwrap());
    let threads: Vec<_> = (0..8u64)
        .map(|i| {
            let o = o.clone();
            std::thread::spawn(move || {
                for _ in 0..50 {
                    match o.put(&format!("p{}", i % 2), &fence(1 + i), b"x", None) {
                        Ok(_) => {}
                        Err(e) => assert!(
                            matches!(e.code(), ErrorCode::StaleToken)
                                || e.backend_kind() == Some(BackendErrorKind::Busy),
                            "{e}"
                        ),
                    }
                    o.get("p0").unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

/// An S3 URL's options and a stray user:secret@ never reach a message; bad
/// options are refused at open, before any request.
#[cfg(feature = "s3")]
#[test]
fn s3_urls_are_checked_at_open_and_never_echo_a_secret() {
    for (url, says) in [
        ("s3://AKIAEXAMPLE:hunter2@bucket/k", "bucket name"),
        ("s3://bucket/k?secret_access_key=hunter2", "unknown option"),
        (
            "s3://bucket?endpoint=http://127.0.0.1:9/hunter2",
            "allow_http=true",
        ),
        ("s3://bucket?region=", "empty or given twice"),
        ("s3://bucket?region=a&region=b", "empty or given twice"),
        ("s3://bucket?allow_http=maybe", "true or false"),
        ("s3://Bucket/k", "bucket name"),
    ] {
        let err = Objects::open(url).err().unwrap();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{url}: {err}");
        let text = err.to_string();
        assert!(text.contains(says), "{url}: {text}");
        assert!(!text.contains("hunter2"), "{url}: {text}");
    }
}

/// What a handle remembers (docs/semantics.md, "Fenced objects", "A
/// handle's memory"): a holder writing its object again reads no claim and
/// sends its bytes beside the listing; a reader reading an unchanged object
/// again reads no claim, and from its third read sends the listing and the
/// data read together; a collection deletes in one request.
#[tokio::test]
async fn a_holder_writing_again_and_a_reader_reading_again_send_fewer_requests() {
    let mem = memory();
    let w_store = Arc::new(Hooked::new(mem.clone()));
    let w = aio::Objects::with_store(w_store.clone(), "").unwrap();
    w.put("obj", &fence(1), b"one", None).await.unwrap();
    assert_eq!(
        w_store.take_log(),
        ["list", "get claim", "put data", "create claim", "list"][..]
            .iter()
            .filter(|r| **r != "get claim") // nothing to read on a new path
            .copied()
            .collect::<Vec<_>>()
    );
    w.put("obj", &fence(1), b"two", None).await.unwrap();
    let mut log = w_store.take_log();
    log[..2].sort_unstable();
    assert_eq!(log, ["list", "put data", "create claim", "list"]);

    let armed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let armed_in = armed.clone();
    let (r_store, r_reached, r_go) = Hooked::hold(
        mem.clone(),
        Box::new(move |op| {
            matches!(op, Op::List) && armed_in.load(std::sync::atomic::Ordering::SeqCst)
        }),
    );
    let r_store = Arc::new(r_store);
    let r = aio::Objects::with_store(r_store.clone(), "").unwrap();
    let first = r.get("obj").await.unwrap().unwrap();
    assert_eq!((first.bytes.as_slice(), first.version), (&b"two"[..], 2));
    let mut log = r_store.take_log();
    log[2..].sort_unstable();
    assert_eq!(log, ["list", "get claim", "get data", "list"]);
    let second = r.get("obj").await.unwrap().unwrap();
    assert_eq!(second, first);
    assert_eq!(r_store.take_log(), ["list", "get data"]);

    // The third read: its listing is held, and its data read is sent anyway.
    armed.store(true, std::sync::atomic::Ordering::SeqCst);
    let r3 = r.clone();
    let third = tokio::spawn(async move { r3.get("obj").await });
    r_reached.await.unwrap();
    let sent_together = async {
        while !r_store.log.lock().unwrap().contains(&"get data") {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(30), sent_together)
        .await
        .expect("the third read's data read waited for its listing");
    r_go.send(()).unwrap();
    assert_eq!(third.await.unwrap().unwrap().unwrap(), first);
    let mut log = r_store.take_log();
    log.sort_unstable();
    assert_eq!(log, ["get data", "list"]);

    // Versions 3..=16: the write of 16 collects (floor 9), in one delete.
    for i in 3..=16 {
        w.put("obj", &fence(1), format!("v{i}").as_bytes(), None)
            .await
            .unwrap();
    }
    let log = w_store.take_log();
    assert_eq!(log.iter().filter(|r| **r == "create floor").count(), 1);
    assert_eq!(log.iter().filter(|r| **r == "delete").count(), 1, "{log:?}");
    assert_eq!(
        log.iter().filter(|r| **r == "get claim").count(),
        0,
        "{log:?}"
    );
}

/// What a handle remembers goes stale when others write; it never decides
/// a write or a read then. A wrote version 1 (token 1) and read it twice; B
/// writes versions 2 and 3 (token 2). A's write with token 1 is refused
/// against B's claim, and the bytes it sent beside its listing are deleted:
/// every data object left is named by a claim. A's read returns B's object,
/// not its own; A with token 3 then takes version 4.
#[tokio::test]
async fn what_a_handle_remembers_never_decides_once_others_wrote() {
    let mem = memory();
    let a = aio::Objects::with_store(mem.clone(), "").unwrap();
    let b = aio::Objects::with_store(mem.clone(), "").unwrap();
    a.put("obj", &fence(1), b"A 1", None).await.unwrap();
    assert_eq!(a.get("obj").await.unwrap().unwrap().version, 1);
    assert_eq!(a.get("obj").await.unwrap().unwrap().version, 1);
    b.put("obj", &fence(2), b"B 2", None).await.unwrap();
    b.put("obj", &fence(2), b"B 3", None).await.unwrap();

    let stale = a
        .put("obj", &fence(1), b"A, stale", None)
        .await
        .unwrap_err();
    assert_eq!(stale.code(), ErrorCode::StaleToken, "{stale}");
    let names = |mem: Arc<dyn ObjectStore>| async move {
        let listed = mem
            .list_with_delimiter(Some(&"obj.fenced".into()))
            .await
            .unwrap();
        let names: Vec<String> = listed
            .objects
            .iter()
            .filter_map(|m| m.location.filename().map(str::to_owned))
            .collect();
        let data = names.iter().filter(|n| n.len() == 58).count();
        let claims = names.iter().filter(|n| n.len() == 20).count();
        (data, claims)
    };
    assert_eq!(
        names(mem.clone()).await,
        (3, 3),
        "a refused write left its bytes"
    );

    let now = a.get("obj").await.unwrap().unwrap();
    assert_eq!(
        (now.bytes.as_slice(), now.version, now.token.get()),
        (&b"B 3"[..], 3, 2)
    );
    let taken = a.put("obj", &fence(3), b"A 4", None).await.unwrap();
    assert_eq!(taken.version, 4);
    let now = b.get("obj").await.unwrap().unwrap();
    assert_eq!(
        (now.bytes.as_slice(), now.version, now.token.get()),
        (&b"A 4"[..], 4, 3)
    );
    assert_eq!(names(mem).await, (4, 4));
}
