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

mod gated {
    use std::sync::{Arc, Mutex};

    use async_trait::async_trait;
    use futures::stream::BoxStream;
    use object_store::path::Path;
    use object_store::{
        CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
        PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
    };
    use tokio::sync::oneshot;

    /// A request as the gate sees it.
    #[derive(Debug)]
    pub enum Op<'a> {
        Put { at: &'a Path, create: bool },
        Get { at: &'a Path },
        List,
    }

    pub type Matcher = Box<dyn Fn(&Op) -> bool + Send + Sync>;

    /// Delegates to `inner`, except that the first request `when` matches
    /// says so on `reached` and waits for `go` before it is sent: a client
    /// paused between any two requests. `lose_create_answer`: the first
    /// create of a claim is made, and then answered `AlreadyExists`, as
    /// object_store's retry of a 5xx'd S3 `If-None-Match` PUT answers it.
    /// `refuse_create`: every create of a claim is refused (NotImplemented).
    pub struct Gated {
        pub inner: Arc<dyn ObjectStore>,
        pub when: Matcher,
        #[allow(clippy::type_complexity)]
        pub gate: Mutex<Option<(oneshot::Sender<()>, oneshot::Receiver<()>)>>,
        pub lose_create_answer: Mutex<bool>,
        pub refuse_create: bool,
    }

    impl Gated {
        pub fn new(inner: Arc<dyn ObjectStore>) -> Gated {
            Gated {
                inner,
                when: Box::new(|_| false),
                gate: Mutex::new(None),
                lose_create_answer: Mutex::new(false),
                refuse_create: false,
            }
        }

        /// Holds the first request `when` matches; returns (reached, go).
        pub fn hold(
            inner: Arc<dyn ObjectStore>,
            when: Matcher,
        ) -> (Gated, oneshot::Receiver<()>, oneshot::Sender<()>) {
            let (reached_tx, reached) = oneshot::channel();
            let (go, go_rx) = oneshot::channel();
            let g = Gated {
                when,
                gate: Mutex::new(Some((reached_tx, go_rx))),
                ..Gated::new(inner)
            };
            (g, reached, go)
        }

        async fn pass(&self, op: Op<'_>) {
            if (self.when)(&op) {
                let gate = self.gate.lock().unwrap().take();
                if let Some((reached, go)) = gate {
                    let _ = reached.send(());
                    let _ = go.await;
                }
            }
        }
    }

    impl std::fmt::Debug for Gated {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "Gated({})", self.inner)
        }
    }

    impl std::fmt::Display for Gated {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "Gated({})", self.inner)
        }
    }

    pub fn is_claim(at: &Path) -> bool {
        at.filename()
            .is_some_and(|n| n.len() == 20 && n.bytes().all(|b| b.is_ascii_digit()))
    }

    pub fn is_data(at: &Path) -> bool {
        at.filename()
            .is_some_and(|n| n.len() == 58 && n.matches('-').count() == 2)
    }

    #[async_trait]
    impl ObjectStore for Gated {
        async fn put_opts(
            &self,
            at: &Path,
            payload: PutPayload,
            opts: PutOptions,
        ) -> Result<PutResult> {
            let create = matches!(opts.mode, PutMode::Create);
            self.pass(Op::Put { at, create }).await;
            if create && is_claim(at) {
                if self.refuse_create {
                    return Err(object_store::Error::NotImplemented {
                        operation: "`put_opts` with mode `PutMode::Create`".into(),
                        implementer: "Gated".into(),
                    });
                }
                let lose = std::mem::take(&mut *self.lose_create_answer.lock().unwrap());
                if lose {
                    self.inner.put_opts(at, payload, opts).await?;
                    return Err(object_store::Error::AlreadyExists {
                        path: at.to_string(),
                        source: "412 Precondition Failed (the retry of a 503'd PUT)".into(),
                    });
                }
            }
            self.inner.put_opts(at, payload, opts).await
        }
        async fn put_multipart_opts(
            &self,
            at: &Path,
            opts: PutMultipartOptions,
        ) -> Result<Box<dyn MultipartUpload>> {
            self.inner.put_multipart_opts(at, opts).await
        }
        async fn get_opts(&self, at: &Path, options: GetOptions) -> Result<GetResult> {
            self.pass(Op::Get { at }).await;
            self.inner.get_opts(at, options).await
        }
        fn delete_stream(
            &self,
            locations: BoxStream<'static, Result<Path>>,
        ) -> BoxStream<'static, Result<Path>> {
            self.inner.delete_stream(locations)
        }
        fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
            self.inner.list(prefix)
        }
        async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
            self.pass(Op::List).await;
            self.inner.list_with_delimiter(prefix).await
        }
        async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
            self.inner.copy_opts(from, to, options).await
        }
    }
}

use gated::{Gated, Op};

fn memory() -> Arc<dyn ObjectStore> {
    Arc::new(InMemory::new())
}

/// Promise (a). A reader lists (head: version 2, token 2) and is paused
/// before it reads claim 2; meanwhile B writes 20 more versions (claim 2 is
/// collected) and a stale writer A (token 1), paused after it read the head
/// claim 1 and before it wrote its bytes, goes on: it writes its data and
/// re-creates claim 2. The reader then reads claim 2 by name: A's claim,
/// token 1, a state that was never the newest. A itself is told
/// OUTCOME_UNKNOWN, but the reader returns its bytes.
#[tokio::test]
async fn a_reader_paused_between_its_list_and_its_claim_read_never_sees_a_recreated_claim() {
    let mem = memory();
    let b = aio::Objects::with_store(mem.clone(), "").unwrap();
    b.put("obj", &fence(1), b"init (token 1)", None)
        .await
        .unwrap();

    // A: held before it writes its bytes (after the list and the head claim).
    let (a_store, a_reached, a_go) = Gated::hold(
        mem.clone(),
        Box::new(|op| matches!(op, Op::Put { at, create: false } if gated::is_data(at))),
    );
    let a = aio::Objects::with_store(Arc::new(a_store), "").unwrap();
    let a_write = tokio::spawn(async move { a.put("obj", &fence(1), b"A, stale", None).await });
    a_reached.await.unwrap();

    b.put("obj", &fence(2), b"B 0", None).await.unwrap(); // version 2
    let seen = b.get("obj").await.unwrap().unwrap();
    assert_eq!((seen.token.get(), seen.version), (2, 2));

    // The reader: held before it reads a claim.
    let (r_store, r_reached, r_go) = Gated::hold(
        mem.clone(),
        Box::new(|op| matches!(op, Op::Get { at } if gated::is_claim(at))),
    );
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
    assert!(
        now.token.get() >= 2 && now.version >= 2 && now.bytes != b"A, stale",
        "the reader went back: token {} version {} bytes {:?}, after token 2 version 2 was read",
        now.token,
        now.version,
        String::from_utf8_lossy(&now.bytes)
    );
}

/// Promise (d). object_store retries a PUT answered 5xx (S3's
/// `If-None-Match: *` included: `with_store` says S3 is fine); when the
/// first attempt took, the retry answers 412 and the create is reported
/// `AlreadyExists`. The library takes that for another writer's claim,
/// deletes its own bytes (which its claim names) and checks again against
/// its own claim: a write that took is reported refused, and the object is
/// left unreadable.
#[tokio::test]
async fn a_create_answered_already_exists_after_it_took_is_not_reported_refused() {
    let mem = memory();
    let g = Gated::new(mem.clone());
    *g.lose_create_answer.lock().unwrap() = true;
    let w = aio::Objects::with_store(Arc::new(g), "").unwrap();
    let outcome = w.put("obj", &fence(1), b"mine", Some(0)).await;
    let reader = aio::Objects::with_store(mem, "").unwrap();
    let now = reader.get("obj").await;
    assert!(
        outcome.is_ok()
            || outcome.as_ref().unwrap_err().backend_kind()
                == Some(BackendErrorKind::OutcomeUnknown),
        "the write took (the object's head is its claim), yet it was reported {:?}; a read now gives {:?}",
        outcome.map_err(|e| e.to_string()),
        now.map_err(|e| e.to_string())
    );
    assert!(now.is_ok(), "{:?}", now.map_err(|e| e.to_string()));
}

/// Promise (d), the other way: a definite refusal of the claim (the store
/// does not implement create-only puts, or forbids it) is reported
/// OUTCOME_UNKNOWN, "may or may not have taken": callers are told to read
/// and retry, forever, and the bytes are left behind.
#[tokio::test]
async fn a_claim_the_store_refuses_outright_is_refused_not_outcome_unknown() {
    let mut g = Gated::new(memory());
    g.refuse_create = true;
    let w = aio::Objects::with_store(Arc::new(g), "").unwrap();
    let err = w.put("obj", &fence(1), b"x", None).await.unwrap_err();
    assert_eq!(err.backend_kind(), Some(BackendErrorKind::Refused), "{err}");
}

/// Error messages must not echo a URL's password (the postgres: case is
/// tested; a file URL with an authority is echoed whole).
#[test]
fn a_file_url_with_a_password_is_not_echoed() {
    let err = Objects::open("file://user:hunter2@host/tmp").err().unwrap();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert!(!err.to_string().contains("hunter2"), "{err}");
}

/// Promise (e). A path check_path accepts (1,024 bytes at most) whose
/// last segment is 250 bytes: its folder's name (plus ".fenced") is
/// longer than a file name may be. Reads and writes fail with BACKEND
/// unreachable instead of INVALID_ARGUMENT (or working).
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
/// damaged store): the next write takes u64::MAX and collection computes
/// `version + 1`, which overflows.
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
/// staging file `NAME#1` in the folder. Listings hide such names, so
/// collection never deletes them: each kill adds a file for good.
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

/// Sanity (passes): two writers with the same expected_version, both
/// paused after their check and before their claim: one is accepted.
#[tokio::test]
async fn two_writers_with_the_same_expected_version_are_not_both_accepted() {
    let mem = memory();
    let b = aio::Objects::with_store(mem.clone(), "").unwrap();
    b.put("obj", &fence(1), b"v1", None).await.unwrap();
    let mut tasks = Vec::new();
    let mut gos = Vec::new();
    for who in 0..2 {
        let (s, reached, go) = Gated::hold(
            mem.clone(),
            Box::new(|op| matches!(op, Op::Put { at, create: true } if gated::is_claim(at))),
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
