//! Fenced objects (docs/objects.md; docs/semantics.md, "Fenced objects") on
//! `memory:` and on local files: the rules of the fenced store, per object
//! path, enforced through create-only writes.
#![cfg(feature = "objects")]

use std::time::Duration;

use fencing::objects::Objects;
use fencing::{BackendErrorKind, Error, ErrorCode, Fence, Store, Token};

mod objects_support;
mod support;
use support::{fresh_schema, postgres_test_url, sqlite_url};

fn fence(t: u64) -> Fence {
    Fence::new(Token::new(t).unwrap())
}

/// Each test on `memory:` and on a fresh directory.
fn each_store(test: impl Fn(&Objects, &str)) {
    test(&Objects::open("memory:").unwrap(), "memory:");
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    test(&Objects::open(&url).unwrap(), &url);
    for url in [s3_url("rules"), az_url("rules")].into_iter().flatten() {
        test(&Objects::open(&url).unwrap(), &url);
    }
}

/// A cloud store the tests run on when its server runs.
struct Cloud {
    name: &'static str,
    /// Names the bucket or container (set by the server's script).
    var: &'static str,
    /// `1` (CI): a missing server fails the tests instead of skipping.
    require: &'static str,
    scheme: &'static str,
    script: &'static str,
    built: bool,
}

const S3: Cloud = Cloud {
    name: "S3",
    var: "FENCING_TEST_S3_BUCKET",
    require: "FENCING_REQUIRE_S3",
    scheme: "s3",
    script: "scripts/s3-server",
    built: cfg!(feature = "s3"),
};

const AZURE: Cloud = Cloud {
    name: "Azure",
    var: "FENCING_TEST_AZ_CONTAINER",
    require: "FENCING_REQUIRE_AZ",
    scheme: "az",
    script: "scripts/azure-server",
    built: cfg!(feature = "azure"),
};

/// A fresh prefix in the test bucket (container) of a real server
/// (`scripts/s3-server run`, `scripts/azure-server run`, which set the
/// variable and the `AWS_*` or `AZURE_*` ones), or `None` to skip; with
/// the cloud's `FENCING_REQUIRE_*=1` (CI) a missing server fails instead.
fn cloud_url(cloud: &Cloud, tag: &str) -> Option<String> {
    let required = std::env::var(cloud.require).as_deref() == Ok("1");
    assert!(
        cloud.built || !required,
        "{}=1 but these tests were built without the {} feature",
        cloud.require,
        cloud.scheme
    );
    match std::env::var(cloud.var) {
        Ok(name) if cloud.built && !name.is_empty() => {
            Some(format!("{}://{name}/{}", cloud.scheme, fresh_schema(tag)))
        }
        _ if required => panic!("{}=1 but {} is not set", cloud.require, cloud.var),
        _ => {
            eprintln!(
                "skipped on {}: no server (run under `{} run -- ...`)",
                cloud.name, cloud.script
            );
            None
        }
    }
}

fn s3_url(tag: &str) -> Option<String> {
    cloud_url(&S3, tag)
}

fn az_url(tag: &str) -> Option<String> {
    cloud_url(&AZURE, tag)
}

#[test]
fn a_stale_token_is_refused_and_the_newer_object_stays() {
    each_store(|o, url| {
        assert_eq!(o.get("r/today.csv").unwrap(), None, "{url}");
        let first = o.put("r/today.csv", &fence(5), b"five", None).unwrap();
        assert_eq!((first.version, first.token.get()), (1, 5));
        // Equal is accepted; greater moves the fence.
        assert_eq!(
            o.put("r/today.csv", &fence(5), b"five again", None)
                .unwrap()
                .version,
            2
        );
        assert_eq!(
            o.put("r/today.csv", &fence(7), b"seven", None)
                .unwrap()
                .version,
            3
        );
        match o.put("r/today.csv", &fence(5), b"stale", None) {
            Err(Error::StaleToken {
                presented, current, ..
            }) => assert_eq!((presented.get(), current), (5, 7)),
            other => panic!("{url}: {other:?}"),
        }
        let delete = o.delete("r/today.csv", &fence(6), None).unwrap_err();
        assert_eq!(delete.code(), ErrorCode::StaleToken);
        let now = o.get("r/today.csv").unwrap().unwrap();
        assert_eq!(
            (now.bytes.as_slice(), now.token.get(), now.version),
            (&b"seven"[..], 7, 3)
        );
        // Other paths have fences of their own.
        assert_eq!(o.put("r/other", &fence(1), b"x", None).unwrap().version, 1);
    });
}

#[test]
fn the_same_bytes_under_two_tokens_and_the_greatest_token() {
    each_store(|o, _| {
        o.put("p", &fence(3), b"same", None).unwrap();
        o.put("p", &fence(Token::MAX.get()), b"same", None).unwrap();
        let err = o.put("p", &fence(3), b"same", None).unwrap_err();
        assert_eq!(err.code(), ErrorCode::StaleToken);
        assert_eq!(o.get("p").unwrap().unwrap().token, Token::MAX);
        // The greatest token is accepted again, and nothing passes it.
        o.put("p", &fence(Token::MAX.get()), b"again", None)
            .unwrap();
    });
}

#[test]
fn delete_keeps_the_fence_and_versions_never_repeat() {
    each_store(|o, _| {
        assert_eq!(
            o.delete("d", &fence(1), None).unwrap_err().code(),
            ErrorCode::NotFound
        );
        o.put("d", &fence(4), b"x", None).unwrap();
        let gone = o.delete("d", &fence(4), Some(1)).unwrap();
        assert_eq!((gone.version, gone.token.get()), (0, 4));
        assert_eq!(o.get("d").unwrap(), None);
        assert_eq!(
            o.put("d", &fence(3), b"y", None).unwrap_err().code(),
            ErrorCode::StaleToken
        );
        // After a delete the object does not exist: expected_version 0.
        let again = o.put("d", &fence(4), b"z", Some(0)).unwrap();
        assert_eq!(again.version, 3);
    });
}

#[test]
fn expected_version_and_seq_follow_the_fenced_store() {
    each_store(|o, _| {
        o.put("v", &fence(2), b"1", Some(0)).unwrap();
        match o.put("v", &fence(2), b"2", Some(0)) {
            Err(Error::VersionMismatch { expected, actual }) => {
                assert_eq!((expected, actual), (0, 1))
            }
            other => panic!("{other:?}"),
        }
        o.put("v", &fence(2), b"2", Some(1)).unwrap();
        let with_seq = |t, s| Fence {
            seq: Some(s),
            ..fence(t)
        };
        o.put("v", &with_seq(2, 5), b"s5", None).unwrap();
        match o.put("v", &with_seq(2, 5), b"s5 again", None) {
            Err(Error::SequenceOutOfOrder { presented, last }) => {
                assert_eq!((presented, last), (5, 5))
            }
            other => panic!("{other:?}"),
        }
        // A new token starts its own sequence.
        o.put("v", &with_seq(3, 1), b"t3", None).unwrap();
        assert_eq!(o.get("v").unwrap().unwrap().bytes, b"t3");
    });
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    each_store(|o, _| {
        for path in [
            "",
            "/a",
            "a/",
            "a//b",
            "a/../b",
            "./a",
            "x.fenced",
            "a/b.fenced/c",
        ] {
            let err = o.put(path, &fence(1), b"x", None).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidArgument, "{path:?}");
            assert_eq!(
                o.get(path).unwrap_err().code(),
                ErrorCode::InvalidArgument,
                "{path:?}"
            );
        }
        let long = "a".repeat(1025);
        assert_eq!(
            o.put(&long, &fence(1), b"x", None).unwrap_err().code(),
            ErrorCode::InvalidArgument
        );
        let bad_seq = Fence {
            seq: Some(u64::MAX),
            ..fence(1)
        };
        assert_eq!(
            o.put("a", &bad_seq, b"x", None).unwrap_err().code(),
            ErrorCode::InvalidArgument
        );
        assert_eq!(o.get("a").unwrap(), None);
    });
    for url in ["", "s3:", "file://relative/dir", "postgres://u:secret@h/db"] {
        let err = Objects::open(url).err().unwrap();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{url}");
        assert!(!err.to_string().contains("secret"), "{err}");
    }
    let err = Objects::open("file:///no/such/dir/here").err().unwrap();
    assert_eq!(
        err.backend_kind(),
        Some(BackendErrorKind::Unreachable),
        "{err}"
    );
}

#[test]
fn a_file_store_keeps_a_bounded_number_of_files_and_plain_readers_find_the_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let o = Objects::open(&format!("file://{}", dir.path().display())).unwrap();
    for i in 1..=200u64 {
        o.put(
            "out/data.bin",
            &fence(i / 10 + 1),
            format!("v{i}").as_bytes(),
            None,
        )
        .unwrap();
    }
    let folder = dir.path().join("out/data.bin.fenced");
    let mut names: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    // At most twice KEEP (8) claims with their data, and the floor.
    assert!(names.len() <= 33, "{} files: {names:?}", names.len());
    // What docs/objects.md tells a plain reader: the greatest 20-digit name
    // is the newest claim; it names the file that holds the bytes as written.
    let newest = names.iter().filter(|n| n.len() == 20).max().unwrap();
    let claim: serde_json::Value =
        serde_json::from_slice(&std::fs::read(folder.join(newest)).unwrap()).unwrap();
    let data = claim["data"].as_str().unwrap();
    assert_eq!(std::fs::read(folder.join(data)).unwrap(), b"v200");
    assert_eq!(claim["token"], 21);
}

/// The same bound on S3, where a collection deletes in one request
/// (`DeleteObjects`): what a plain client lists stays small.
#[test]
fn an_s3_store_keeps_a_bounded_number_of_objects() {
    if let Some(url) = s3_url("bounded") {
        a_cloud_store_keeps_a_bounded_number_of_objects(&url);
    }
}

/// On Azure a collection deletes in one batch request.
#[test]
fn an_azure_store_keeps_a_bounded_number_of_objects() {
    if let Some(url) = az_url("bounded") {
        a_cloud_store_keeps_a_bounded_number_of_objects(&url);
    }
}

fn a_cloud_store_keeps_a_bounded_number_of_objects(url: &str) {
    let o = Objects::open(url).unwrap();
    for i in 1..=40u64 {
        o.put(
            "out/data.bin",
            &fence(i / 10 + 1),
            format!("v{i}").as_bytes(),
            None,
        )
        .unwrap();
    }
    let (store, prefix) = o.aio().unwrap().object_store();
    let folder = prefix.join("out").join("data.bin.fenced");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listed = runtime
        .block_on(store.list_with_delimiter(Some(&folder)))
        .unwrap();
    let names: Vec<&str> = listed
        .objects
        .iter()
        .filter_map(|m| m.location.filename())
        .collect();
    assert!(names.len() <= 33, "{} objects: {names:?}", names.len());
    assert!(
        names.iter().filter(|n| n.len() == 20).count() <= 16,
        "{names:?}"
    );
    assert_eq!(o.get("out/data.bin").unwrap().unwrap().bytes, b"v40");
}

// ----- a writer held between its check and its claim -----

/// Writer A (token 1) is held after checking the head and writing its
/// bytes, just before it claims version 2; writer B (token 2) writes
/// `b_writes` times meanwhile; then A goes on. Returns A's outcome and the
/// object handle of B.
async fn held_writer(
    b_writes: u64,
) -> (
    fencing::Result<fencing::Receipt>,
    fencing::objects::aio::Objects,
) {
    use fencing::objects::aio::Objects;
    use objects_support::{is_claim, Hooked, Op};
    use std::sync::Arc;
    let memory: Arc<dyn object_store::ObjectStore> =
        Arc::new(object_store::memory::InMemory::new());
    let (held, reached, go) = Hooked::hold(
        memory.clone(),
        Box::new(|op| matches!(op, Op::Put { at, create: true } if is_claim(at))),
    );
    let b = Objects::with_store(memory, "").unwrap();
    b.put("obj", &fence(1), b"first", None).await.unwrap();
    let a = Objects::with_store(Arc::new(held), "").unwrap();
    let a_write =
        tokio::spawn(async move { a.put("obj", &fence(1), b"A's stale bytes", None).await });
    reached.await.unwrap();
    for i in 0..b_writes {
        b.put("obj", &fence(2), format!("B {i}").as_bytes(), None)
            .await
            .unwrap();
    }
    go.send(()).unwrap();
    (a_write.await.unwrap(), b)
}

#[tokio::test]
async fn a_writer_held_past_a_newer_write_is_refused() {
    // B took version 2 first: A's claim fails, and the claim it then
    // checks against names token 2.
    let (a, b) = held_writer(1).await;
    assert_eq!(a.unwrap_err().code(), ErrorCode::StaleToken);
    assert_eq!(b.get("obj").await.unwrap().unwrap().bytes, b"B 0");
}

#[tokio::test]
async fn a_writer_held_past_collected_versions_never_becomes_current() {
    // B wrote 20 versions and collected version 2: A's claim of version 2
    // is created again, below B's floor. No reader ever takes it, and A is
    // told that its outcome is unknown, never that it was accepted.
    let (a, b) = held_writer(20).await;
    let err = a.unwrap_err();
    assert_eq!(
        err.backend_kind(),
        Some(BackendErrorKind::OutcomeUnknown),
        "{err}"
    );
    let now = b.get("obj").await.unwrap().unwrap();
    assert_eq!(
        (now.bytes.as_slice(), now.token.get(), now.version),
        (&b"B 19"[..], 2, 21)
    );
    // Asked again, A is refused.
    let again = b.put("obj", &fence(1), b"A again", None).await.unwrap_err();
    assert_eq!(again.code(), ErrorCode::StaleToken);
}

#[tokio::test]
async fn a_writer_held_while_nothing_changed_is_accepted() {
    let (a, b) = held_writer(0).await;
    assert_eq!(a.unwrap().version, 2);
    assert_eq!(
        b.get("obj").await.unwrap().unwrap().bytes,
        b"A's stale bytes"
    );
}

// ----- writers racing -----

/// One write as its writer saw it.
struct Outcome {
    token: u64,
    started: std::time::Instant,
    ended: std::time::Instant,
    /// `Some(true)`: accepted; `Some(false)`: refused (nothing taken);
    /// `None`: outcome unknown.
    accepted: Option<bool>,
}

#[test]
fn racing_writers_with_shuffled_tokens_never_go_back() {
    let dir = tempfile::tempdir().unwrap();
    racing_writers(&format!("file://{}", dir.path().display()));
}

#[test]
fn racing_writers_on_s3_never_go_back() {
    if let Some(url) = s3_url("race") {
        racing_writers(&url);
    }
}

#[test]
fn racing_writers_on_azure_never_go_back() {
    if let Some(url) = az_url("race") {
        racing_writers(&url);
    }
}

fn racing_writers(url: &str) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Instant;
    const WRITERS: u64 = 8;
    const WRITES: u64 = 50;
    // Tokens 1..=400, shuffled within windows of 32 (a fixed pseudo-random
    // order), dealt round-robin: each writer's tokens mostly grow, and
    // writers close in time hold tokens close to each other's.
    let mut tokens: Vec<u64> = (1..=WRITERS * WRITES).collect();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for window in tokens.chunks_mut(32) {
        for i in (1..window.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            window.swap(i, (x % (i as u64 + 1)) as usize);
        }
    }
    let dealt: Vec<Vec<u64>> = (0..WRITERS as usize)
        .map(|w| {
            tokens
                .iter()
                .skip(w)
                .step_by(WRITERS as usize)
                .copied()
                .collect()
        })
        .collect();
    let done = AtomicBool::new(false);
    let (outcomes, seen) = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let o = Objects::open(url).unwrap();
            let mut seen = Vec::new();
            while !done.load(Ordering::SeqCst) {
                if let Some(now) = o.get("race").unwrap() {
                    // The bytes are the token's own, written whole.
                    assert_eq!(now.bytes, format!("token {}", now.token).into_bytes());
                    seen.push((now.token.get(), now.version));
                }
            }
            seen
        });
        let writers: Vec<_> = dealt
            .iter()
            .map(|mine| {
                s.spawn(move || {
                    let o = Objects::open(url).unwrap();
                    let mut outcomes = Vec::new();
                    for &token in mine {
                        let started = Instant::now();
                        let r = o.put(
                            "race",
                            &fence(token),
                            format!("token {token}").as_bytes(),
                            None,
                        );
                        let accepted = match r {
                            Ok(_) => Some(true),
                            Err(e) if e.code() == ErrorCode::StaleToken => Some(false),
                            Err(e) if e.backend_kind() == Some(BackendErrorKind::Busy) => {
                                Some(false)
                            }
                            Err(e)
                                if e.backend_kind() == Some(BackendErrorKind::OutcomeUnknown) =>
                            {
                                None
                            }
                            Err(e) => panic!("token {token}: {e}"),
                        };
                        outcomes.push(Outcome {
                            token,
                            started,
                            ended: Instant::now(),
                            accepted,
                        });
                    }
                    outcomes
                })
            })
            .collect();
        let outcomes: Vec<Outcome> = writers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect();
        done.store(true, Ordering::SeqCst);
        (outcomes, reader.join().unwrap())
    });

    let accepted: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| o.accepted == Some(true))
        .collect();
    assert!(
        accepted.len() >= 10,
        "only {} writes accepted",
        accepted.len()
    );
    // No write accepted after a write with a greater token was accepted
    // before it started.
    for b in &accepted {
        for a in &accepted {
            assert!(
                !(a.token > b.token && a.ended < b.started),
                "token {} accepted after token {} was",
                b.token,
                a.token
            );
        }
    }
    // A reader never sees the object go back.
    for pair in seen.windows(2) {
        assert!(pair[0].0 <= pair[1].0 && pair[0].1 <= pair[1].1, "{pair:?}");
    }
    // The last bytes are the greatest accepted token's, or a write's whose
    // outcome was unknown and whose token is at least as great.
    let top = accepted.iter().map(|o| o.token).max().unwrap();
    let last = Objects::open(url).unwrap().get("race").unwrap().unwrap();
    let unknown = outcomes
        .iter()
        .any(|o| o.accepted.is_none() && o.token == last.token.get());
    assert!(
        last.token.get() == top || (unknown && last.token.get() > top),
        "{} vs {top}",
        last.token
    );
    let unknown = outcomes.iter().filter(|o| o.accepted.is_none()).count();
    eprintln!(
        "{} accepted, {unknown} unknown, {} reads, final token {}",
        accepted.len(),
        seen.len(),
        last.token
    );
}

#[tokio::test]
async fn the_blocking_handle_works_and_drops_inside_a_caller_s_runtime() {
    let o = Objects::open("memory:").unwrap();
    o.put("p", &fence(1), b"x", None).unwrap();
    assert_eq!(o.get("p").unwrap().unwrap().bytes, b"x");
    // Its async handle shares the store.
    assert_eq!(o.aio().unwrap().get("p").await.unwrap().unwrap().version, 1);
    drop(o);
}

// ----- writers killed at random points -----

const WRITER_CHILD: &str = "FENCING_OBJECTS_WRITER_CHILD";

/// Runs only inside the children of
/// `writers_killed_at_random_points_leave_nothing_stale_current`: writes
/// tokens FIRST, FIRST + 4, ... to the object "killed" until it is killed,
/// printing each accepted token.
#[test]
fn writer_child() {
    use std::io::Write;
    let Some(spec) = std::env::var_os(WRITER_CHILD) else {
        return;
    };
    let spec = spec.into_string().unwrap();
    let (url, first) = spec.rsplit_once(';').unwrap();
    let o = Objects::open(url).unwrap();
    let mut out = std::io::stdout().lock();
    let mut token: u64 = first.parse().unwrap();
    loop {
        match o.put(
            "killed",
            &fence(token),
            format!("token {token}").as_bytes(),
            None,
        ) {
            Ok(_) => writeln!(out, "ok {token}")
                .and_then(|()| out.flush())
                .unwrap(),
            Err(e) if e.code() == ErrorCode::StaleToken => {}
            Err(e)
                if matches!(
                    e.backend_kind(),
                    Some(BackendErrorKind::Busy | BackendErrorKind::OutcomeUnknown)
                ) => {}
            Err(e) => panic!("token {token}: {e}"),
        }
        token += 4;
    }
}

#[test]
#[cfg(unix)]
fn writers_killed_at_random_points_leave_nothing_stale_current() {
    let dir = tempfile::tempdir().unwrap();
    let (accepted, left) = killed_writers(&format!("file://{}", dir.path().display()), 5);
    assert!(
        accepted > 0,
        "no write was accepted: the test checked nothing"
    );
    // Collection clears what killed writers left below its floor.
    let files = std::fs::read_dir(dir.path().join("killed.fenced"))
        .unwrap()
        .count();
    assert!(files <= left, "{files} files left");
}

#[test]
#[cfg(unix)]
fn writers_killed_at_random_points_on_s3_leave_nothing_stale_current() {
    // A write to the gateway takes tens of milliseconds: kills ten times
    // further apart, so that writers get as far as on local files.
    if let Some(url) = s3_url("killed") {
        killed_writers(&url, 50);
    }
}

#[test]
#[cfg(unix)]
fn writers_killed_at_random_points_on_azure_leave_nothing_stale_current() {
    if let Some(url) = az_url("killed") {
        killed_writers(&url, 50);
    }
}

/// Kills a writer every `pace_ms` to 8 * `pace_ms` ms, 24 times; returns
/// how many writes were accepted, and how many objects the path's folder
/// may still hold.
#[cfg(unix)]
fn killed_writers(url: &str, pace_ms: u64) -> (usize, usize) {
    use std::io::Read;
    use std::process::{Child, Command, Stdio};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;
    let spawn = |first: u64| -> Child {
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "writer_child", "--nocapture", "--test-threads=1"])
            .env(WRITER_CHILD, format!("{url};{first}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    // Reaps what it holds, whatever happens.
    struct Children(Vec<Child>);
    impl Drop for Children {
        fn drop(&mut self) {
            for c in &mut self.0 {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
    let accepted_by = |mut c: Child| -> Vec<u64> {
        let _ = c.kill();
        let _ = c.wait();
        let mut text = String::new();
        c.stdout.take().unwrap().read_to_string(&mut text).unwrap();
        text.lines()
            .filter_map(|l| l.strip_prefix("ok "))
            .filter_map(|t| t.parse().ok())
            .collect()
    };
    let done = AtomicBool::new(false);
    let (accepted, kills, seen) = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let o = Objects::open(url).unwrap();
            let mut seen = Vec::new();
            while !done.load(Ordering::SeqCst) {
                match o.get("killed") {
                    Ok(Some(now)) => {
                        assert_eq!(now.bytes, format!("token {}", now.token).into_bytes());
                        seen.push((now.token.get(), now.version));
                    }
                    Ok(None) => {}
                    Err(e) if e.backend_kind() == Some(BackendErrorKind::Busy) => {}
                    Err(e) => panic!("read: {e}"),
                }
            }
            seen
        });
        let mut children = Children((1..=4).map(spawn).collect());
        let mut accepted = Vec::new();
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let kills = 24;
        for round in 1..=kills {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            std::thread::sleep(Duration::from_millis(pace_ms * (1 + x % 8)));
            let victim = (x >> 8) as usize % children.0.len();
            // A new writer whose tokens pass every earlier writer's, as a
            // new lease holder's would.
            let replacement = spawn(round * 100_000 + 1 + (x >> 16) % 4);
            let killed = std::mem::replace(&mut children.0[victim], replacement);
            accepted.extend(accepted_by(killed));
        }
        for c in std::mem::take(&mut children.0) {
            accepted.extend(accepted_by(c));
        }
        done.store(true, Ordering::SeqCst);
        (accepted, kills, reader.join().unwrap())
    });

    for pair in seen.windows(2) {
        assert!(pair[0].0 <= pair[1].0 && pair[0].1 <= pair[1].1, "{pair:?}");
    }
    // Whatever the kills left behind, the object is at least the greatest
    // accepted write, and the next write is checked against it.
    let o = Objects::open(url).unwrap();
    if let Some(&top) = accepted.iter().max() {
        let last = o.get("killed").unwrap().unwrap();
        assert!(last.token.get() >= top, "{} below {top}", last.token);
        if top > 1 {
            let stale = o.put("killed", &fence(top - 1), b"stale", None);
            assert_eq!(stale.unwrap_err().code(), ErrorCode::StaleToken);
        }
    }
    // Collection clears what killed writers left below its floor.
    for _ in 0..16 {
        o.put(
            "killed",
            &fence(Token::MAX.get()),
            b"token 9223372036854775807",
            None,
        )
        .unwrap();
    }
    eprintln!(
        "{} accepted, {} reads, {kills} kills",
        accepted.len(),
        seen.len()
    );
    (accepted.len(), 34 + kills as usize)
}

// ----- the row, the object and the pointer (docs/objects.md) -----

type WriteRow = dyn Fn(Token, &str) -> Result<(), String>;

/// The user's own table, fenced by the store's check inside the user's own
/// transaction: `write` returns the error text of a refused write.
struct Row {
    write: Box<WriteRow>,
    read: Box<dyn Fn() -> String>,
}

/// Worker A holds the lease and writes the row, the object and a pointer
/// that names the object's version; A pauses past its lease; B takes the
/// lease and writes all three; A wakes and is refused at each, and B's
/// writes stay.
fn the_story(store: &Store, objects: &Objects, row: Row) {
    let ttl = Duration::from_millis(300);
    let publish = |who: &str, token: Token| -> Result<(), String> {
        let fence = Fence::new(token);
        (row.write)(token, &format!("{who}'s summary"))?;
        let object = objects
            .put(
                "reports/7.csv",
                &fence,
                format!("{who}'s report").as_bytes(),
                None,
            )
            .map_err(|e| e.to_string())?;
        let pointer = format!("reports/7.csv version {}", object.version);
        objects
            .put("reports/latest", &fence, pointer.as_bytes(), None)
            .map_err(|e| e.to_string())?;
        Ok(())
    };
    let a = store.acquire("report", "A", ttl).unwrap();
    publish("A", a.token).unwrap();
    // A pauses (a GC pause, a VM suspend): its lease runs out, B takes it.
    let b = store
        .acquire_wait(
            "report",
            "B",
            Duration::from_secs(30),
            Duration::from_secs(30),
        )
        .unwrap();
    assert!(b.token > a.token);
    publish("B", b.token).unwrap();
    // A wakes up, still believing it holds the lease, and writes each.
    let stale_row = (row.write)(a.token, "A's late summary").unwrap_err();
    assert!(
        stale_row.contains("STALE_TOKEN") || stale_row.contains("FN001"),
        "{stale_row}"
    );
    for path in ["reports/7.csv", "reports/latest"] {
        let err = objects
            .put(path, &Fence::new(a.token), b"A, late", None)
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::StaleToken, "{path}: {err}");
    }
    // Everything B wrote is intact, and the pointer names B's object.
    assert_eq!((row.read)(), "B's summary");
    let object = objects.get("reports/7.csv").unwrap().unwrap();
    assert_eq!(
        (object.bytes.as_slice(), object.token),
        (&b"B's report"[..], b.token)
    );
    let pointer = objects.get("reports/latest").unwrap().unwrap();
    let named = format!("reports/7.csv version {}", object.version);
    assert_eq!(pointer.bytes, named.into_bytes());
}

fn objects_in(dir: &std::path::Path) -> Objects {
    Objects::open(&format!("file://{}", dir.display())).unwrap()
}

#[test]
fn the_row_the_object_and_the_pointer_refuse_a_paused_holder_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("app.db");
    let store = Store::open(&sqlite_url(&db)).unwrap();
    let open = move || rusqlite::Connection::open(&db).unwrap();
    open()
        .execute_batch("CREATE TABLE reports (id INTEGER PRIMARY KEY, summary TEXT); INSERT INTO reports VALUES (7, '');")
        .unwrap();
    let (w, r) = (open.clone(), open);
    let row = Row {
        write: Box::new(move |token, summary| {
            let mut conn = w();
            let tx = conn.transaction().map_err(|e| e.to_string())?;
            tx.execute(
                "INSERT INTO fencing_check (scope, token) VALUES ('report', ?1)",
                [token.get() as i64],
            )
            .map_err(|e| e.to_string())?;
            tx.execute("UPDATE reports SET summary = ?1 WHERE id = 7", [summary])
                .map_err(|e| e.to_string())?;
            tx.commit().map_err(|e| e.to_string())
        }),
        read: Box::new(move || {
            r().query_row("SELECT summary FROM reports WHERE id = 7", [], |row| {
                row.get(0)
            })
            .unwrap()
        }),
    };
    let files = tempfile::tempdir().unwrap();
    the_story(&store, &objects_in(files.path()), row);
}

#[test]
fn the_row_the_object_and_the_pointer_refuse_a_paused_holder_on_postgres() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let schema = fresh_schema("objects");
    let store = Store::open(&format!("{base}?schema={schema}")).unwrap();
    let connect = {
        let base = base.clone();
        move || {
            base.parse::<postgres::Config>()
                .unwrap()
                .connect(postgres::NoTls)
                .unwrap()
        }
    };
    connect()
        .batch_execute(&format!(
            "CREATE TABLE {schema}.reports (id int PRIMARY KEY, summary text); \
             INSERT INTO {schema}.reports VALUES (7, '')"
        ))
        .unwrap();
    let (w, r, s) = (connect.clone(), connect, schema.clone());
    let row = Row {
        write: Box::new(move |token, summary| {
            let mut client = w();
            let mut tx = client.transaction().map_err(|e| e.to_string())?;
            tx.execute(
                &format!("SELECT {s}.check('report', $1)"),
                &[&(token.get() as i64)],
            )
            .map_err(|e| format!("{e:?}"))?;
            tx.execute(
                &format!("UPDATE {s}.reports SET summary = $1 WHERE id = 7"),
                &[&summary],
            )
            .map_err(|e| e.to_string())?;
            tx.commit().map_err(|e| e.to_string())
        }),
        read: Box::new(move || {
            r().query_one(
                &format!("SELECT summary FROM {schema}.reports WHERE id = 7"),
                &[],
            )
            .unwrap()
            .get(0)
        }),
    };
    let files = tempfile::tempdir().unwrap();
    the_story(&store, &objects_in(files.path()), row);
}
