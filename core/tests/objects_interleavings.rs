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

/// Writes "obj" once for each number, with token `token`, the bytes
/// naming the number ("B 7"): a newer writer going on.
async fn writes(o: &aio::Objects, token: u64, numbers: impl IntoIterator<Item = usize>) {
    for i in numbers {
        o.put("obj", &fence(token), format!("B {i}").as_bytes(), None)
            .await
            .unwrap();
    }
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

    writes(&b, 2, 1..=20).await;
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

    writes(&b, 3, 0..15).await;
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

/// Promise (a), on a store whose listing is not one moment. A stale writer
/// S (token 1) is held before it creates claim 2; a newer writer (token 2)
/// writes on until claim 2 is collected; S then creates claim 2 again, and
/// its confirming listing misses every key made or deleted while it ran,
/// during which one or two more collections publish floors and delete
/// what is below them. S must not be told its write took.
#[tokio::test]
async fn a_confirming_listing_that_misses_the_floors_made_meanwhile_still_refuses_a_recreated_claim(
) {
    for during in [1, 10] {
        recreated_claim_confirmed_by_a_torn_listing(during).await;
    }
}

async fn recreated_claim_confirmed_by_a_torn_listing(during: usize) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let mem = memory();
    let b = aio::Objects::with_store(mem.clone(), "").unwrap();
    b.put("obj", &fence(1), b"v1", None).await.unwrap(); // version 1

    // S's requests go through two stores: the inner one holds its listing
    // after its claim was created, and tears it; the outer holds the create.
    let created = Arc::new(AtomicBool::new(false));
    let seen = created.clone();
    let (torn, list_reached, list_go) = Hooked::hold(
        mem.clone(),
        Box::new(move |op| match op {
            Op::Put { at, create: true } if objects_support::is_claim(at) => {
                seen.store(true, Ordering::SeqCst);
                false
            }
            Op::List => seen.load(Ordering::SeqCst),
            _ => false,
        }),
    );
    let torn = Hooked { torn: true, ..torn };
    let (s_store, s_reached, s_go) = Hooked::hold(
        Arc::new(torn),
        Box::new(|op| matches!(op, Op::Put { at, create: true } if objects_support::is_claim(at))),
    );
    let s = aio::Objects::with_store(Arc::new(s_store), "").unwrap();
    let s_write = tokio::spawn(async move { s.put("obj", &fence(1), b"S, stale", None).await });
    s_reached.await.unwrap();

    writes(&b, 2, 0..30).await;
    s_go.send(()).unwrap();
    list_reached.await.unwrap();
    writes(&b, 2, 30..30 + during).await;
    list_go.send(()).unwrap();
    let s_outcome = s_write.await.unwrap();
    assert_eq!(
        s_outcome.as_ref().err().and_then(|e| e.backend_kind()),
        Some(BackendErrorKind::OutcomeUnknown),
        "{during} writes during the listing: a write with token 1, after token 2 was \
         accepted, was reported {s_outcome:?}"
    );
    let now = b.get("obj").await.unwrap().unwrap();
    assert_eq!(now.bytes, format!("B {}", 29 + during).as_bytes());
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
    writes(&b, 1, 0..15).await;
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

/// The same for an Azure URL; its credentials come only from `AZURE_*`.
#[cfg(feature = "azure")]
#[test]
fn azure_urls_are_checked_at_open_and_never_echo_a_secret() {
    for (url, says) in [
        ("az://account:hunter2@container/k", "container name"),
        ("az://container/k?access_key=hunter2", "unknown option"),
        ("az://container/k?region=us", "unknown option"),
        (
            "az://container?endpoint=http://127.0.0.1:9/hunter2",
            "allow_http=true",
        ),
        ("az://container?endpoint=", "empty or given twice"),
        ("az://container?allow_http=maybe", "true or false"),
        ("az://Container/k", "container name"),
        ("az://a--b/k", "container name"),
        ("az://container//k", "plain relative path"),
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

// ----- a handle's memory under hostile interleavings (docs/semantics.md,
// "A handle's memory", proof item 9) -----

/// A store that holds the first request `when` picks once armed: the
/// requests before arming (a handle learning the path) pass.
fn armed_hold(
    mem: Arc<dyn ObjectStore>,
    when: fn(&Op) -> bool,
) -> (
    Arc<Hooked>,
    Arc<std::sync::atomic::AtomicBool>,
    tokio::sync::oneshot::Receiver<()>,
    tokio::sync::oneshot::Sender<()>,
) {
    let armed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let armed_in = armed.clone();
    let (s, reached, go) = Hooked::hold(
        mem,
        Box::new(move |op| armed_in.load(std::sync::atomic::Ordering::SeqCst) && when(op)),
    );
    (Arc::new(s), armed, reached, go)
}

fn arm(armed: &std::sync::atomic::AtomicBool) {
    armed.store(true, std::sync::atomic::Ordering::SeqCst);
}

fn is_claim_create(op: &Op) -> bool {
    matches!(op, Op::Put { at, create: true } if objects_support::is_claim(at))
}

fn is_data_put(op: &Op) -> bool {
    matches!(op, Op::Put { at, create: false } if objects_support::is_data(at))
}

fn is_data_get(op: &Op) -> bool {
    matches!(op, Op::Get { at } if objects_support::is_data(at))
}

fn is_list(op: &Op) -> bool {
    matches!(op, Op::List)
}

/// What a path's folder holds: its claims, floors, and the data objects no
/// claim names (a reader never takes them; they count against the bound).
struct Folder {
    claims: Vec<u64>,
    data: usize,
    floors: Vec<u64>,
    stray: Vec<String>,
}

async fn folder(mem: &Arc<dyn ObjectStore>, path: &str) -> Folder {
    use object_store::path::Path;
    use object_store::ObjectStoreExt;
    let at = Path::from(format!("{path}.fenced"));
    let listed = mem.list_with_delimiter(Some(&at)).await.unwrap();
    let names: Vec<String> = listed
        .objects
        .iter()
        .filter_map(|m| m.location.filename().map(str::to_owned))
        .collect();
    let mut claims = Vec::new();
    let mut named = Vec::new();
    for n in names.iter().filter(|n| n.len() == 20) {
        claims.push(n.parse::<u64>().unwrap());
        let bytes = mem.get(&at.clone().join(n.as_str())).await.unwrap();
        let record: serde_json::Value =
            serde_json::from_slice(&bytes.bytes().await.unwrap()).unwrap();
        if let Some(d) = record["data"].as_str() {
            named.push(d.to_owned());
        }
    }
    let data: Vec<&String> = names.iter().filter(|n| n.len() == 58).collect();
    Folder {
        claims,
        data: data.len(),
        floors: names
            .iter()
            .filter_map(|n| n.strip_prefix("floor-").map(|f| f.parse().unwrap()))
            .collect(),
        stray: data
            .into_iter()
            .filter(|d| !named.contains(d))
            .cloned()
            .collect(),
    }
}

/// Promises (a) and (e) within one holder. Two clones of a handle that
/// remembers version 1 write at once: both send their bytes for version 2
/// beside their listings and both see head 1; one is held before its
/// create while the other takes version 2. The held one finds claim 2
/// taken, deletes its bytes, and takes version 3: both accepted, in order,
/// and no data object is left that no claim names.
#[tokio::test]
async fn two_clones_of_one_remembering_handle_writing_at_once_take_two_versions() {
    let mem = memory();
    let (s, armed, reached, go) = armed_hold(mem.clone(), is_claim_create);
    let h = aio::Objects::with_store(s.clone(), "").unwrap();
    h.put("obj", &fence(1), b"v1", None).await.unwrap();
    arm(&armed);
    let h1 = h.clone();
    let first = tokio::spawn(async move { h1.put("obj", &fence(1), b"held", None).await });
    reached.await.unwrap();
    let second = h
        .clone()
        .put("obj", &fence(1), b"second", None)
        .await
        .unwrap();
    assert_eq!(second.version, 2);
    go.send(()).unwrap();
    let first = first.await.unwrap().unwrap();
    assert_eq!(first.version, 3);
    let now = h.get("obj").await.unwrap().unwrap();
    assert_eq!((now.bytes.as_slice(), now.version), (&b"held"[..], 3));
    let f = folder(&mem, "obj").await;
    assert_eq!((f.claims.len(), f.data), (3, 3), "stray: {:?}", f.stray);
}

/// Promises (a), (c), (e). A holder (token 1) remembers version 1; its next
/// write is held while its bytes for version 2 are on the way, after its
/// listing showed head 1 (the check passes on what it remembers). Meanwhile
/// B (token 2) takes version 2. The holder's create finds claim 2 B's: it
/// deletes its bytes, looks again, and is refused against B's claim.
#[tokio::test]
async fn a_holder_held_while_its_early_bytes_land_is_refused_after_a_newer_token() {
    let mem = memory();
    let (s, armed, reached, go) = armed_hold(mem.clone(), is_data_put);
    let h = aio::Objects::with_store(s, "").unwrap();
    h.put("obj", &fence(1), b"v1", None).await.unwrap();
    arm(&armed);
    let h1 = h.clone();
    let held = tokio::spawn(async move { h1.put("obj", &fence(1), b"stale", None).await });
    reached.await.unwrap();
    let b = aio::Objects::with_store(mem.clone(), "").unwrap();
    assert_eq!(
        b.put("obj", &fence(2), b"B", None).await.unwrap().version,
        2
    );
    go.send(()).unwrap();
    let err = held.await.unwrap().unwrap_err();
    assert_eq!(err.code(), ErrorCode::StaleToken, "{err}");
    let now = h.get("obj").await.unwrap().unwrap();
    assert_eq!((now.bytes.as_slice(), now.token.get()), (&b"B"[..], 2));
    let f = folder(&mem, "obj").await;
    assert!(f.stray.is_empty(), "a refused write left {:?}", f.stray);
}

/// The same, held at its listing instead (its bytes for version 2 written
/// already): the listing shows B's head, the remembered claim does not
/// decide, and the bytes sent early are deleted.
#[tokio::test]
async fn a_holder_whose_listing_is_held_past_a_newer_token_is_refused() {
    let mem = memory();
    let (s, armed, reached, go) = armed_hold(mem.clone(), is_list);
    let h = aio::Objects::with_store(s, "").unwrap();
    h.put("obj", &fence(1), b"v1", None).await.unwrap();
    arm(&armed);
    let h1 = h.clone();
    let held = tokio::spawn(async move { h1.put("obj", &fence(1), b"stale", None).await });
    reached.await.unwrap();
    let b = aio::Objects::with_store(mem.clone(), "").unwrap();
    b.put("obj", &fence(2), b"B", None).await.unwrap();
    go.send(()).unwrap();
    let err = held.await.unwrap().unwrap_err();
    assert_eq!(err.code(), ErrorCode::StaleToken, "{err}");
    let f = folder(&mem, "obj").await;
    assert!(f.stray.is_empty(), "a refused write left {:?}", f.stray);
    assert_eq!(f.claims.len(), 2);
}

/// Promises (a), (b), (e). A holder (token 1) that remembers version 1 is
/// held before its create of claim 2 (its bytes written, its check passed
/// on what it remembers). B (token 2) writes 20 versions: claim 2 is
/// collected. The holder creates claim 2 again: OUTCOME_UNKNOWN, no reader
/// takes it, later collections remove it and its bytes, and the holder's
/// next write with token 1 is refused although it still remembers version 1.
#[tokio::test]
async fn a_remembering_holder_held_before_its_claim_past_a_collection_never_becomes_current() {
    let mem = memory();
    let (s, armed, reached, go) = armed_hold(mem.clone(), is_claim_create);
    let h = aio::Objects::with_store(s, "").unwrap();
    h.put("obj", &fence(1), b"v1", None).await.unwrap();
    arm(&armed);
    let h1 = h.clone();
    let held = tokio::spawn(async move { h1.put("obj", &fence(1), b"stale", None).await });
    reached.await.unwrap();
    let b = aio::Objects::with_store(mem.clone(), "").unwrap();
    writes(&b, 2, 2..=21).await;
    go.send(()).unwrap();
    let outcome = held.await.unwrap();
    assert_eq!(
        outcome.as_ref().err().and_then(|e| e.backend_kind()),
        Some(BackendErrorKind::OutcomeUnknown),
        "{outcome:?}"
    );
    for reader in [&h, &b] {
        let now = reader.get("obj").await.unwrap().unwrap();
        assert_eq!((now.bytes.as_slice(), now.version), (&b"B 21"[..], 21));
    }
    let err = h.put("obj", &fence(1), b"stale", None).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::StaleToken, "{err}");
    writes(&b, 2, 22..=29).await;
    let f = folder(&mem, "obj").await;
    assert!(f.stray.is_empty(), "left behind: {:?}", f.stray);
    assert!(
        f.claims.len() <= 16 && f.floors.len() <= 2,
        "{:?}",
        f.claims
    );
    assert!(!f.claims.contains(&2), "the claim created again stays");
    let taken = h.put("obj", &fence(2), b"h", None).await.unwrap();
    assert_eq!(taken.version, 30);
}

/// Promise (b). A reader found the object unchanged, so its next read sends
/// the data read beside the listing; the listing shows head 1 and the data
/// read is held while B writes 20 versions (version 1 and its bytes are
/// collected). The data read finds nothing: the reader looks again and
/// returns B's newest, never an error or version 1 without its bytes.
#[tokio::test]
async fn a_reader_whose_early_data_read_is_held_past_a_collection_looks_again() {
    let mem = memory();
    let b = aio::Objects::with_store(mem.clone(), "").unwrap();
    b.put("obj", &fence(1), b"v1", None).await.unwrap();
    let (s, armed, reached, go) = armed_hold(mem.clone(), is_data_get);
    let r = aio::Objects::with_store(s.clone(), "").unwrap();
    r.get("obj").await.unwrap();
    r.get("obj").await.unwrap();
    s.take_log();
    arm(&armed);
    let r1 = r.clone();
    let read = tokio::spawn(async move { r1.get("obj").await });
    reached.await.unwrap();
    writes(&b, 2, 2..=21).await;
    go.send(()).unwrap();
    let now = read.await.unwrap().unwrap().unwrap();
    assert_eq!(
        (now.bytes.as_slice(), now.token.get(), now.version),
        (&b"B 21"[..], 2, 21)
    );
    let mut first = s.take_log()[..2].to_vec();
    first.sort_unstable();
    assert_eq!(first, ["get data", "list"], "not sent together");
}

/// The same with the listing held instead: the early data read finds
/// version 1's bytes, but the listing, made after B's write, shows head 2:
/// the bytes read early do not count.
#[tokio::test]
async fn a_reader_whose_listing_is_held_past_a_write_ignores_its_early_bytes() {
    let mem = memory();
    let b = aio::Objects::with_store(mem.clone(), "").unwrap();
    b.put("obj", &fence(1), b"v1", None).await.unwrap();
    let (s, armed, reached, go) = armed_hold(mem.clone(), is_list);
    let r = aio::Objects::with_store(s, "").unwrap();
    r.get("obj").await.unwrap();
    r.get("obj").await.unwrap();
    arm(&armed);
    let r1 = r.clone();
    let read = tokio::spawn(async move { r1.get("obj").await });
    reached.await.unwrap();
    b.put("obj", &fence(2), b"B 2", None).await.unwrap();
    go.send(()).unwrap();
    let now = read.await.unwrap().unwrap().unwrap();
    assert_eq!((now.bytes.as_slice(), now.version), (&b"B 2"[..], 2));
}

/// Promise (b). An early data read answered with an error other than "not
/// found" (a 500 after the client's retries): when the listing shows
/// another head, the error is about bytes that do not count and the read
/// goes on; when the listing shows the remembered head, the read fails and
/// returns nothing it did not read.
#[tokio::test]
async fn an_early_data_read_that_fails_never_decides_a_read() {
    fn server_error(at: &object_store::path::Path) -> object_store::Error {
        object_store::Error::Generic {
            store: "Hooked",
            source: format!("500 on GET {at}").into(),
        }
    }
    let mem = memory();
    let b = aio::Objects::with_store(mem.clone(), "").unwrap();
    b.put("obj", &fence(1), b"v1", None).await.unwrap();
    let s = Arc::new(Hooked::new(mem.clone()));
    let r = aio::Objects::with_store(s.clone(), "").unwrap();
    r.get("obj").await.unwrap();
    r.get("obj").await.unwrap();
    b.put("obj", &fence(2), b"B 2", None).await.unwrap();
    *s.fail_get_data.lock().unwrap() = Some(server_error);
    let now = r.get("obj").await.unwrap().unwrap();
    assert_eq!((now.bytes.as_slice(), now.version), (&b"B 2"[..], 2));
    r.get("obj").await.unwrap();
    *s.fail_get_data.lock().unwrap() = Some(server_error);
    let err = r.get("obj").await.unwrap_err();
    assert_eq!(
        err.backend_kind(),
        Some(BackendErrorKind::Unreachable),
        "{err}"
    );
    let now = r.get("obj").await.unwrap().unwrap();
    assert_eq!((now.bytes.as_slice(), now.version), (&b"B 2"[..], 2));
}

/// Promise (c): what a handle remembers decides exactly as the claim read
/// again would. The same pseudo-random writes (puts and deletes, tokens
/// that go up and sometimes back, seqs, expected versions, a second
/// remembering handle so memories go stale) go to two stores: through two
/// long-lived handles on one, through a new handle for each call (which
/// remembers nothing) on the other. Every outcome and every read agree.
#[tokio::test]
async fn what_a_handle_remembers_decides_as_a_fresh_handle_does() {
    let (with_memory, without) = (memory(), memory());
    let handles = [
        aio::Objects::with_store(with_memory.clone(), "").unwrap(),
        aio::Objects::with_store(with_memory.clone(), "").unwrap(),
    ];
    let fresh = || aio::Objects::with_store(without.clone(), "").unwrap();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let (mut token, mut version) = (1u64, 0u64);
    type Outcome = std::result::Result<(u64, u64), (ErrorCode, Option<BackendErrorKind>)>;
    let seen = |r: fencing::Result<fencing::Receipt>| -> Outcome {
        r.map(|r| (r.version, r.token.get()))
            .map_err(|e| (e.code(), e.backend_kind()))
    };
    for step in 0..600 {
        match next(8) {
            0 => token += 1,
            1 if token > 1 => token -= 1,
            _ => {}
        }
        let mut f = fence(token);
        if next(3) == 0 {
            f = f.with_seq(next(6));
        }
        let expected = match next(6) {
            0 => Some(0),
            1 => Some(version),
            2 => Some(version.saturating_sub(1)),
            3 => Some(version + 1),
            _ => None,
        };
        let h = &handles[next(4).min(1) as usize];
        let bytes = format!("step {step}");
        let (a, b) = if next(4) == 0 {
            (
                seen(h.delete("obj", &f, expected).await),
                seen(fresh().delete("obj", &f, expected).await),
            )
        } else {
            (
                seen(h.put("obj", &f, bytes.as_bytes(), expected).await),
                seen(fresh().put("obj", &f, bytes.as_bytes(), expected).await),
            )
        };
        assert_eq!(
            a, b,
            "step {step}: token {token}, expected {expected:?}, seq {:?}",
            f.seq
        );
        if let Ok((v, _)) = a {
            if v > 0 {
                version = v;
            }
        }
        let read = |o: fencing::Result<Option<fencing::objects::Object>>| {
            o.unwrap().map(|o| (o.bytes, o.token.get(), o.version))
        };
        for h in &handles {
            assert_eq!(
                read(h.get("obj").await),
                read(fresh().get("obj").await),
                "step {step}"
            );
        }
        // The version a delete took: what a read cannot tell.
        let f = folder(&with_memory, "obj").await;
        version = version.max(f.claims.iter().copied().max().unwrap_or(0));
    }
}

/// Promise (d). The last versions with a memory: claim u64::MAX - 2 is
/// planted; a handle takes u64::MAX - 1 (reading the claim), then u64::MAX
/// (from memory, its bytes sent early), then a delete has no version left:
/// BACKEND corrupt, no panic, no bytes left behind, and reads give
/// u64::MAX.
#[tokio::test]
async fn a_remembering_handle_at_the_last_versions_does_not_panic() {
    let mem = memory();
    plant_claim(&mem, u64::MAX - 2, "null").await;
    let o = aio::Objects::with_store(mem.clone(), "").unwrap();
    let run = |o: aio::Objects| async move {
        let a = o.put("obj", &fence(1), b"max-1", None).await.unwrap();
        let b = o.put("obj", &fence(1), b"max", None).await.unwrap();
        let d = o.delete("obj", &fence(1), None).await.unwrap_err();
        let now = o.get("obj").await.unwrap().unwrap();
        let again = o.get("obj").await.unwrap().unwrap();
        (a.version, b.version, d, now, again)
    };
    let (a, b, d, now, again) = tokio::spawn(run(o.clone())).await.unwrap();
    assert_eq!((a, b), (u64::MAX - 1, u64::MAX));
    assert_eq!(d.backend_kind(), Some(BackendErrorKind::Corrupt), "{d}");
    assert_eq!((now.bytes.as_slice(), now.version), (&b"max"[..], u64::MAX));
    assert_eq!(again, now);
    let f = folder(&mem, "obj").await;
    assert!(f.stray.is_empty(), "{:?}", f.stray);
}

/// Promise (d). A put over a put at version u64::MAX (a foreign or damaged
/// store, or 2^64 writes): the write has no version left and must say so
/// (BACKEND corrupt). The version check (check 4) computes the next
/// version before the objects' own overflow check, so this panics with
/// overflow checks on (debug builds), and wraps silently without them.
#[tokio::test]
async fn a_put_over_a_put_at_the_last_version_does_not_panic() {
    let mem = memory();
    plant_claim(&mem, u64::MAX, r#""x""#).await;
    for remembering in [false, true] {
        let o = aio::Objects::with_store(mem.clone(), "").unwrap();
        if remembering {
            assert_eq!(o.get("obj").await.unwrap().unwrap().version, u64::MAX);
        }
        let w = tokio::spawn(async move { o.put("obj", &fence(1), b"past", None).await });
        let r = w.await;
        let r =
            r.unwrap_or_else(|e| panic!("the write panicked (remembering: {remembering}): {e}"));
        let e = r.unwrap_err();
        assert_eq!(e.backend_kind(), Some(BackendErrorKind::Corrupt), "{e}");
    }
}

/// Plants claim `version` (token 1) naming `data` (a JSON string, its
/// bytes written too, or null), as a foreign or damaged store holds it.
async fn plant_claim(mem: &Arc<dyn ObjectStore>, version: u64, data: &str) {
    use object_store::path::Path;
    use object_store::{ObjectStoreExt, PutPayload};
    let name = match data {
        "null" => "null".to_owned(),
        _ => {
            let name = format!("{version:020}-{:020}-{:016x}", 1, 7);
            mem.put(
                &Path::from(format!("obj.fenced/{name}")),
                PutPayload::from_static(b"planted"),
            )
            .await
            .unwrap();
            format!("\"{name}\"")
        }
    };
    let claim = format!(r#"{{"token":1,"seq":null,"nonce":7,"data":{name}}}"#);
    mem.put(
        &Path::from(format!("obj.fenced/{version:020}")),
        PutPayload::from(claim.into_bytes()),
    )
    .await
    .unwrap();
}

/// "Writes of one handle may confirm out of order: keep the newest." Clone
/// A takes version 2 and is held before its confirming listing; clone B
/// then takes version 3 (reading A's claim) and remembers it; A confirms
/// last. The handle's next write reads no claim: it remembers version 3,
/// not A's 2 (which would cost a claim read, and never decide).
#[tokio::test]
async fn a_write_confirmed_late_does_not_replace_a_newer_memory() {
    let mem = memory();
    let lists = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let armed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (lists_in, armed_in) = (lists.clone(), armed.clone());
    let (s, reached, go) = Hooked::hold(
        mem.clone(),
        Box::new(move |op| {
            use std::sync::atomic::Ordering::SeqCst;
            armed_in.load(SeqCst) && matches!(op, Op::List) && lists_in.fetch_add(1, SeqCst) == 1
        }),
    );
    let s = Arc::new(s);
    let h = aio::Objects::with_store(s.clone(), "").unwrap();
    h.put("obj", &fence(1), b"v1", None).await.unwrap();
    arm(&armed);
    let a = h.clone();
    let held = tokio::spawn(async move { a.put("obj", &fence(1), b"A", None).await });
    reached.await.unwrap();
    assert_eq!(
        h.put("obj", &fence(1), b"B", None).await.unwrap().version,
        3
    );
    go.send(()).unwrap();
    assert_eq!(held.await.unwrap().unwrap().version, 2);
    s.take_log();
    assert_eq!(
        h.put("obj", &fence(1), b"C", None).await.unwrap().version,
        4
    );
    let log = s.take_log();
    assert!(!log.contains(&"get claim"), "{log:?}");
}

/// Promise (d) and the bound on what a handle remembers: past 4,096 paths
/// it forgets them all, and then decides by reading claims again.
#[tokio::test]
async fn a_handle_past_its_memory_bound_forgets_and_still_decides() {
    let mem = memory();
    let s = Arc::new(Hooked::new(mem.clone()));
    let h = aio::Objects::with_store(s.clone(), "").unwrap();
    for i in 0..=4096 {
        h.put(&format!("p{i}"), &fence(2), b"x", None)
            .await
            .unwrap();
    }
    s.take_log();
    let err = h.put("p0", &fence(1), b"stale", None).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::StaleToken, "{err}");
    assert!(s.take_log().contains(&"get claim"), "p0 was not forgotten");
    assert_eq!(h.put("p0", &fence(2), b"y", None).await.unwrap().version, 2);
    s.take_log();
    assert_eq!(
        h.put("p4096", &fence(2), b"y", None).await.unwrap().version,
        2
    );
    assert_eq!(h.put("p0", &fence(2), b"z", None).await.unwrap().version, 3);
    assert!(!s.take_log().contains(&"get claim"));
    assert!(folder(&mem, "p0").await.stray.is_empty());
}

/// Promise (e) and object_store's retries. A holder's early bytes are
/// written but their answer is lost (the client's last retry failed): the
/// write goes on and writes them again under the same name, and nothing is
/// left. When another write took the version meanwhile, the bytes whose
/// answer was lost may stay, until the next floor passes them.
#[tokio::test]
async fn early_bytes_whose_answer_was_lost_do_not_pile_up() {
    fn lost(at: &object_store::path::Path) -> object_store::Error {
        object_store::Error::Generic {
            store: "Hooked",
            source: format!("timeout on PUT {at} after its retries").into(),
        }
    }
    let mem = memory();
    let (s, armed, reached, go) = armed_hold(mem.clone(), is_list);
    let h = aio::Objects::with_store(s.clone(), "").unwrap();
    h.put("obj", &fence(1), b"v1", None).await.unwrap();
    *s.lose_put_data.lock().unwrap() = Some(lost);
    assert_eq!(
        h.put("obj", &fence(1), b"v2", None).await.unwrap().version,
        2
    );
    let f = folder(&mem, "obj").await;
    assert!(f.stray.is_empty(), "{:?}", f.stray);

    *s.lose_put_data.lock().unwrap() = Some(lost);
    arm(&armed);
    let h1 = h.clone();
    let held = tokio::spawn(async move { h1.put("obj", &fence(1), b"h", None).await });
    reached.await.unwrap();
    let b = aio::Objects::with_store(mem.clone(), "").unwrap();
    b.put("obj", &fence(1), b"b", None).await.unwrap();
    go.send(()).unwrap();
    assert_eq!(held.await.unwrap().unwrap().version, 4);
    let f = folder(&mem, "obj").await;
    assert!(f.stray.len() <= 1, "{:?}", f.stray);
    for i in 5..=20 {
        b.put("obj", &fence(1), format!("{i}").as_bytes(), None)
            .await
            .unwrap();
    }
    let f = folder(&mem, "obj").await;
    assert!(f.stray.is_empty(), "{:?}", f.stray);
}

/// Promises (a) to (e) together, under random pauses. Three handles, each
/// shared by two tasks (clones share one memory), write, delete and read
/// one path with tokens from one lease counter; a task keeps its token for
/// several calls, so it goes stale as a paused holder's does. The store
/// pauses before every request and every answer, now and then for
/// milliseconds (past several writes and a collection). Then: no write was
/// accepted after a greater token was accepted before it started; each
/// task's reads never go back; a read returns the bytes of a write that
/// was not refused, with its token and, when accepted, its version, and
/// never a version that an accepted write had passed before the read
/// began; accepted writes have distinct versions; once the tasks stop, the
/// folder is bounded and holds no bytes that no claim names. In memory
/// and on local files; more seeds with OBJECTS_SEEDS=N.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remembering_handles_under_random_pauses_keep_every_promise() {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicU64, Ordering::SeqCst};

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Told {
        Accepted(u64),
        Refused,
        Unknown,
    }
    #[derive(Debug)]
    struct Write {
        id: u64,
        token: u64,
        put: bool,
        start: u64,
        end: u64,
        told: Told,
    }
    #[derive(Debug)]
    struct Read {
        task: usize,
        start: u64,
        end: u64,
        seen: Option<(u64, u64, Vec<u8>)>,
    }

    // More with OBJECTS_SEEDS=N.
    let seeds: u64 = std::env::var("OBJECTS_SEEDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3);
    for seed in 1..=seeds {
        // Even seeds on local files (listings read the directory).
        let dir = tempfile::tempdir().unwrap();
        let mem: Arc<dyn ObjectStore> = match seed % 2 {
            0 => {
                Arc::new(object_store::local::LocalFileSystem::new_with_prefix(dir.path()).unwrap())
            }
            _ => memory(),
        };
        let clock = Arc::new(AtomicU64::new(0));
        let lease = Arc::new(AtomicU64::new(1));
        let ids = Arc::new(AtomicU64::new(0));
        let handles: Vec<aio::Objects> = (0..3u64)
            .map(|h| {
                let mut s = Hooked::new(mem.clone());
                s.jitter = Some(objects_support::Jitter::new(
                    seed * 0x9e37_79b9 + h * 0x85eb_ca6b,
                    100,
                    200,
                    300,
                ));
                aio::Objects::with_store(Arc::new(s), "").unwrap()
            })
            .collect();
        let mut tasks = Vec::new();
        for task in 0..6usize {
            let o = handles[task / 2].clone();
            let (clock, lease, ids) = (clock.clone(), lease.clone(), ids.clone());
            tasks.push(tokio::spawn(async move {
                let mut x = seed * 0x2545_f491 + task as u64 * 0x1234_5679 + 1;
                let mut next = move |n: u64| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x % n
                };
                let mut token = lease.load(SeqCst);
                let (mut writes, mut reads) = (Vec::new(), Vec::new());
                for _ in 0..120 {
                    if next(6) == 0 {
                        token = lease.fetch_add(1, SeqCst) + 1;
                    }
                    let start = clock.fetch_add(1, SeqCst);
                    match next(10) {
                        0..=4 | 9 => {
                            let id = ids.fetch_add(1, SeqCst);
                            let put = next(10) != 9;
                            let r = if put {
                                o.put("obj", &fence(token), format!("w{id}").as_bytes(), None)
                                    .await
                            } else {
                                o.delete("obj", &fence(token), None).await
                            };
                            let end = clock.fetch_add(1, SeqCst);
                            let told = match r {
                                Ok(receipt) => Told::Accepted(receipt.version),
                                Err(e)
                                    if e.backend_kind()
                                        == Some(BackendErrorKind::OutcomeUnknown) =>
                                {
                                    Told::Unknown
                                }
                                Err(e)
                                    if matches!(
                                        e.code(),
                                        ErrorCode::StaleToken | ErrorCode::NotFound
                                    ) || e.backend_kind() == Some(BackendErrorKind::Busy) =>
                                {
                                    Told::Refused
                                }
                                Err(e) => panic!("write {id}: {e}"),
                            };
                            writes.push(Write {
                                id,
                                token,
                                put,
                                start,
                                end,
                                told,
                            });
                        }
                        _ => {
                            let seen = match o.get("obj").await {
                                Ok(seen) => seen.map(|s| (s.version, s.token.get(), s.bytes)),
                                Err(e) => {
                                    assert_eq!(
                                        e.backend_kind(),
                                        Some(BackendErrorKind::Busy),
                                        "{e}"
                                    );
                                    continue;
                                }
                            };
                            let end = clock.fetch_add(1, SeqCst);
                            reads.push(Read {
                                task,
                                start,
                                end,
                                seen,
                            });
                        }
                    }
                }
                (writes, reads)
            }));
        }
        let (mut writes, mut reads) = (Vec::new(), Vec::new());
        for t in tasks {
            let (w, r) = t.await.expect("a task panicked");
            writes.extend(w);
            reads.extend(r);
        }
        let accepted: Vec<&Write> = writes
            .iter()
            .filter(|w| matches!(w.told, Told::Accepted(_)))
            .collect();
        // (a)
        for b in &accepted {
            for a in &accepted {
                assert!(
                    !(a.token > b.token && a.end < b.start),
                    "seed {seed}: {b:?} accepted after {a:?}"
                );
            }
        }
        // (c) distinct versions among accepted puts.
        let mut at_version: HashMap<u64, &Write> = HashMap::new();
        for w in accepted.iter().filter(|w| w.put) {
            let Told::Accepted(v) = w.told else {
                unreachable!()
            };
            assert!(
                at_version.insert(v, w).is_none(),
                "seed {seed}: two writes took {v}"
            );
        }
        let by_id: HashMap<u64, &Write> = writes.iter().map(|w| (w.id, w)).collect();
        let mut read_at: HashMap<u64, Vec<u8>> = HashMap::new();
        for r in &reads {
            let Some((version, token, bytes)) = &r.seen else {
                continue;
            };
            let id: u64 = std::str::from_utf8(bytes).unwrap()[1..].parse().unwrap();
            let w = by_id[&id];
            assert!(
                w.put && w.told != Told::Refused,
                "seed {seed}: {r:?} read {w:?}"
            );
            assert_eq!(w.token, *token, "seed {seed}: {r:?} {w:?}");
            if let Told::Accepted(v) = w.told {
                assert_eq!(v, *version, "seed {seed}: {r:?} {w:?}");
            }
            assert!(w.start < r.end, "seed {seed}: {r:?} read the future {w:?}");
            // (b) never a state an accepted write had passed before it began.
            for a in &accepted {
                if let Told::Accepted(v) = a.told {
                    assert!(
                        !(a.put && v > *version && a.end < r.start),
                        "seed {seed}: {r:?} after {a:?} was accepted"
                    );
                }
            }
            let before = read_at.insert(*version, bytes.clone());
            assert!(
                before.is_none_or(|b| b == *bytes),
                "seed {seed}: version {version} read two ways"
            );
        }
        // (b) each task's reads never go back.
        for task in 0..6 {
            let mine: Vec<(u64, u64)> = reads
                .iter()
                .filter(|r| r.task == task)
                .filter_map(|r| r.seen.as_ref().map(|s| (s.0, s.1)))
                .collect();
            for pair in mine.windows(2) {
                assert!(
                    pair[0].0 <= pair[1].0 && pair[0].1 <= pair[1].1,
                    "seed {seed}: {pair:?}"
                );
            }
        }
        // (e) once quiet: 16 more writes, two collections.
        let top = lease.load(SeqCst) + 1;
        let quiet = aio::Objects::with_store(mem.clone(), "").unwrap();
        for i in 0..16 {
            quiet
                .put("obj", &fence(top), format!("q{i}").as_bytes(), None)
                .await
                .unwrap();
        }
        let f = folder(&mem, "obj").await;
        assert!(f.stray.is_empty(), "seed {seed}: {:?}", f.stray);
        assert!(
            f.claims.len() <= 16 && f.floors.len() <= 2,
            "seed {seed}: {:?} {:?}",
            f.claims,
            f.floors
        );
        let unknown = writes.iter().filter(|w| w.told == Told::Unknown).count();
        eprintln!(
            "seed {seed}: {} writes ({} accepted, {unknown} unknown), {} reads",
            writes.len(),
            accepted.len(),
            reads.len()
        );
    }
}

/// Promise (c) with a memory and object_store's retries: a remembering
/// holder's create of its next claim takes, its answer is lost, and the
/// client's retry is answered "exists" (412), or 403 when the credentials
/// expired meanwhile. The holder knows its own claim: accepted, then
/// remembered, and its next write takes the version after it from memory.
#[tokio::test]
async fn a_remembering_holder_whose_create_answer_was_lost_knows_its_claim() {
    let answers: [fn(&object_store::path::Path) -> object_store::Error; 2] =
        [precondition, forbidden];
    for answer in answers {
        let mem = memory();
        let (g, _made, _release) = Hooked::lose_create_answer(mem.clone(), answer, false);
        // The first create (version 1) is the one whose answer is lost;
        // make version 1 through another handle first.
        let other = aio::Objects::with_store(mem.clone(), "").unwrap();
        other.put("obj", &fence(1), b"v1", None).await.unwrap();
        let g = Arc::new(g);
        let w = aio::Objects::with_store(g.clone(), "").unwrap();
        w.get("obj").await.unwrap();
        let taken = w.put("obj", &fence(1), b"v2", Some(1)).await.unwrap();
        assert_eq!(taken.version, 2);
        g.take_log();
        let next = w.put("obj", &fence(1), b"v3", Some(2)).await.unwrap();
        assert_eq!(next.version, 3);
        assert!(!g.take_log().contains(&"get claim"));
        let now = other.get("obj").await.unwrap().unwrap();
        assert_eq!((now.bytes.as_slice(), now.version), (&b"v3"[..], 3));
        assert!(folder(&mem, "obj").await.stray.is_empty());
    }
}

/// Bad input is INVALID_ARGUMENT, as the fenced store's is, and names what
/// it is: an expected version outside the token domain (the store refuses
/// it so), an objects URL with NUL or over 4,096 bytes, a path's own limits
/// said of an "object path".
#[tokio::test]
async fn bad_input_is_refused_as_the_store_refuses_it() {
    let o = aio::Objects::with_store(memory(), "").unwrap();
    for v in [1u64 << 63, u64::MAX] {
        let err = o.put("p", &fence(1), b"x", Some(v)).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
        let err = o.delete("p", &fence(1), Some(v)).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    }
    assert!(o.get("p").await.unwrap().is_none());
    for url in [
        "file:///tmp\0x",
        "memory:\0",
        &format!("file:///{}", "a".repeat(4096)),
    ] {
        let err = aio::Objects::open(url).err().expect(url);
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{url:?}: {err}");
    }
    for (path, says) in [
        ("", "object path must not be empty"),
        ("a\0b", "object path \"a\\0b\" contains NUL"),
    ] {
        let err = o.put(path, &fence(1), b"x", None).await.unwrap_err();
        assert!(err.to_string().contains(says), "{err}");
    }
}

/// Promise (a) against deletes from outside: a bucket lifecycle rule (or a
/// cleanup job) removes the claims of a path that was written 20 times.
/// Its floors, or a handle's memory of a version, show that the path had
/// claims: a write with an older token is refused as a damaged store
/// (BACKEND corrupt), never accepted against a fence read as 0, and a read
/// says so instead of "never written".
#[tokio::test]
async fn claims_deleted_from_outside_are_noticed_not_read_as_a_new_path() {
    use object_store::ObjectStoreExt;
    let mem = memory();
    let remembering = aio::Objects::with_store(mem.clone(), "").unwrap();
    for i in 0..20 {
        remembering
            .put("obj", &fence(5), format!("v{i}").as_bytes(), None)
            .await
            .unwrap();
    }
    let f = folder(&mem, "obj").await;
    assert!(!f.floors.is_empty(), "20 writes publish a floor");
    for c in &f.claims {
        let at = object_store::path::Path::from(format!("obj.fenced/{c:020}"));
        mem.delete(&at).await.unwrap();
    }
    let fresh = aio::Objects::with_store(mem.clone(), "").unwrap();
    for (who, o) in [("a fresh handle", &fresh), ("the writer", &remembering)] {
        let stale = o.put("obj", &fence(1), b"stale", None).await;
        assert_eq!(
            stale.as_ref().err().and_then(|e| e.backend_kind()),
            Some(BackendErrorKind::Corrupt),
            "{who}: a write with token 1 on a path whose fence was 5 got {stale:?}"
        );
        let read = o.get("obj").await;
        assert_eq!(
            read.as_ref().err().and_then(|e| e.backend_kind()),
            Some(BackendErrorKind::Corrupt),
            "{who}: {read:?}"
        );
    }
}
