//! Typed options (`SqliteOptions`, `PostgresOptions`, `Options`) open the
//! same store, with the same behaviour, as the URL they were built to match;
//! and different options behave differently, so the comparison means
//! something.

use std::time::Duration;

use fencing::{
    aio, BackendKind, ClockKind, Fence, Options, PostgresOptions, SqliteOptions, Store,
    StoreOptions,
};

mod support;
use support::{fresh_schema, postgres_test_url, sqlite_url};

/// A fixed script whose outcomes depend on `clock`, `strict` and
/// `eager_fencing`: what each step returned, as text.
fn behaviour(store: &Store) -> Vec<String> {
    let ttl = Duration::from_secs(10);
    let mut seen = Vec::new();
    let mut note = |what: &str, outcome: Result<String, fencing::Error>| {
        seen.push(match outcome {
            Ok(v) => format!("{what}: {v}"),
            Err(e) => format!("{what}: {}", e.code()),
        });
    };
    let a = store.acquire("s", "a", ttl).unwrap();
    let fence_a = Fence::new(a.token);
    // Eager fencing: the acquire alone raises the fence.
    note(
        "fence after acquire",
        store.fence_of("s").map(|f| f.to_string()),
    );
    note(
        "put a",
        store
            .put("s", "k", b"1", &fence_a)
            .map(|r| r.version.to_string()),
    );
    // Strict: a token equal to the fence is stale once it has written.
    note(
        "put a again",
        store
            .put("s", "k", b"2", &fence_a)
            .map(|r| r.version.to_string()),
    );
    note(
        "advance",
        store
            .advance_clock(ttl + Duration::from_secs(1))
            .map(|()| "ok".into()),
    );
    let b = store.acquire("s", "b", ttl);
    note(
        "acquire b",
        b.as_ref()
            .map(|l| (l.token.get() - a.token.get()).to_string())
            .map_err(Clone::clone),
    );
    // Eager fencing: b's acquire alone shuts a out.
    note(
        "fence",
        store
            .fence_of("s")
            .map(|f| (f == a.token.get()).to_string()),
    );
    seen
}

fn all_options() -> Vec<Options> {
    let mut all = Vec::new();
    for clock in [ClockKind::Default, ClockKind::Manual] {
        for strict in [false, true] {
            for eager_fencing in [false, true] {
                let mut o = Options::default();
                o.clock = clock;
                o.strict = strict;
                o.eager_fencing = eager_fencing;
                all.push(o);
            }
        }
    }
    all
}

fn query(o: &Options) -> String {
    format!(
        "clock={}&strict={}&eager_fencing={}",
        match o.clock {
            ClockKind::Manual => "manual",
            _ => "default",
        },
        o.strict,
        o.eager_fencing
    )
}

/// Each combination behaves as its URL does, and the combinations do not
/// all behave alike.
fn same_as_url(open_typed: impl Fn(&Options) -> Store, open_url: impl Fn(&str) -> Store) {
    let mut distinct = std::collections::HashSet::new();
    for o in all_options() {
        let typed = behaviour(&open_typed(&o));
        assert_eq!(typed, behaviour(&open_url(&query(&o))), "{o:?}");
        distinct.insert(typed);
    }
    assert_eq!(distinct.len(), all_options().len(), "{distinct:#?}");
}

#[test]
fn memory_options_behave_as_the_url() {
    same_as_url(
        |o| Store::open_with(*o).unwrap(),
        |q| Store::open(&format!("memory:?{q}")).unwrap(),
    );
}

#[test]
fn sqlite_options_behave_as_the_url() {
    let dir = tempfile::tempdir().unwrap();
    let fresh = std::cell::Cell::new(0);
    let path = || {
        fresh.set(fresh.get() + 1);
        dir.path().join(format!("{}.db", fresh.get()))
    };
    same_as_url(
        |o| {
            let mut options = SqliteOptions::new(path()).unwrap();
            options.options(*o);
            let store = Store::open_with(&options).unwrap();
            assert_eq!(store.backend_kind(), BackendKind::Sqlite);
            store
        },
        |q| Store::open(&format!("{}?{q}", sqlite_url(&path()))).unwrap(),
    );
}

#[test]
fn sqlite_options_and_the_url_open_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let url = format!(
        "{}?synchronous=normal&busy_timeout_ms=250",
        sqlite_url(&path)
    );
    let typed: SqliteOptions = url.parse().unwrap();
    Store::migrate_with(&typed).unwrap();
    let by_url = Store::open(&url).unwrap();
    let by_options = Store::open_with(typed).unwrap();
    assert_eq!(by_url.next_token("s").unwrap().get(), 1);
    assert_eq!(by_options.next_token("s").unwrap().get(), 2);
}

#[test]
fn postgres_options_behave_as_the_url() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    same_as_url(
        |o| {
            let mut options: PostgresOptions = base.parse().unwrap();
            options.schema(&fresh_schema("opts")).unwrap().options(*o);
            Store::open_with(options).unwrap()
        },
        |q| Store::open(&format!("{base}?schema={}&{q}", fresh_schema("opts"))).unwrap(),
    );
}

#[test]
fn the_async_face_opens_typed_options() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    runtime.block_on(async {
        let options: StoreOptions = "memory:?clock=manual".parse().unwrap();
        let store = aio::Store::open_with(options).await.unwrap();
        store.advance_clock(Duration::from_secs(1)).await.unwrap();
        let other = aio::Store::open_with(Options::default()).await.unwrap();
        assert!(other.advance_clock(Duration::from_secs(1)).await.is_err());
    });
}

/// What a store says it is: never a password, and a relative SQLite path
/// as this process resolved it (two working directories, two stores).
#[test]
fn a_store_names_its_location() {
    let relative: StoreOptions = "sqlite:rel/fencing.db?busy_timeout_ms=50".parse().unwrap();
    // As the process resolves it: on Windows with `\` throughout.
    let here =
        std::path::absolute(std::env::current_dir().unwrap().join("rel/fencing.db")).unwrap();
    assert_eq!(relative.location(), format!("sqlite:{}", here.display()));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("named.db");
    let store = Store::open(&sqlite_url(&path)).unwrap();
    assert_eq!(store.location(), format!("sqlite:{}", path.display()));
    assert_eq!(
        Store::open("memory:?clock=manual").unwrap().location(),
        "memory:"
    );
    let pg: StoreOptions = "postgres://worker:s3cret@db1:5432,db2/app?password=other&schema=jobs"
        .parse()
        .unwrap();
    assert_eq!(pg.location(), "postgres://worker:***@db1:5432,db2/app");
}
