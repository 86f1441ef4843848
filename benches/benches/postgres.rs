//! `postgres://` beside the classic hand-written SQL (docs/performance.md, "The baselines") run
//! through the same client (the `postgres` crate) on the same server, at 1,
//! 4, 16 and 64 clients (the concurrency curve: acquisitions and fenced
//! writes at every point, the other lines at 1 and 4), measured in the same
//! run; plus `apply` batches of 1, 10
//! and 100 puts against single fenced puts; a `get` through the library
//! against the same prepared statement on a direct client (the library's
//! client path); the library's unnamed statements
//! (`query_typed`, what it sends) against the same calls prepared once by
//! name; and, when `FENCING_TEST_PG_TLS_URL` names a TLS server
//! (`scripts/pg-tls run`), a put over TLS against one in plaintext.
//!
//! ```text
//! scripts/pg-cluster run -- cargo bench -p fencing-benches --bench postgres            # full run
//! scripts/pg-cluster run -- cargo bench -p fencing-benches --bench postgres -- --quick # shorter
//! cargo test -p fencing-benches --bench postgres                                       # smoke
//! ```
//!
//! The server comes from `FENCING_TEST_PG_URL` (`scripts/pg-cluster run`
//! sets it). Each round runs the library and its baseline in alternating
//! chunks, so that both meet the same fsync weather; each line prints the
//! medians over the rounds and their ratio. Nothing asserts on timings.
//! Both sides prepare their statements once per connection (the library's
//! default, `pooler=none`), and every row either side writes exists before
//! the clock starts.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use fencing::{Fence, Op, Store, Token};
use fencing_benches::report::{self, Goal, Line};
use fencing_benches::run::Args;
use postgres::types::Type;
use postgres::{Client, NoTls, Statement};

/// Scopes each client cycles through for acquisitions: leases last 1 ms, so
/// a scope is free again by the time its turn comes back.
const ACQUIRE_SCOPES: usize = 64;
const CHUNKS: usize = 6;
/// The concurrency curve: clients, and the library's pool size with them.
const CLIENTS: [usize; 4] = [1, 4, 16, 64];
/// Beyond this many clients only acquisitions and fenced writes run, each
/// client making fewer calls per chunk (the full run stays within minutes).
const FULL_LINES_UP_TO: usize = 4;

struct Plan {
    rounds: usize,
    /// Operations per client per chunk.
    chunk: usize,
    /// At least this many calls per client per chunk.
    min_calls: usize,
    filter: Option<String>,
    smoke: bool,
}

fn plan() -> Plan {
    let args = Args::from_env();
    let (rounds, chunk, min_calls) = args.pick((1, 2, 1), (3, 40, 5), (7, 100, 10));
    Plan {
        rounds,
        chunk,
        min_calls,
        smoke: args.smoke(),
        filter: args.filter,
    }
}

fn value(i: usize) -> Vec<u8> {
    let mut v = vec![0x5A; 64];
    v[..8].copy_from_slice(&(i as u64).to_le_bytes());
    v
}

/// One client's side of a line: the library's and the baseline's.
struct ClientState {
    id: usize,
    raw: Client,
    fence: Fence,
    token: Token,
    batches: [Vec<Op>; 3],
    /// `next_token` and `get` of the store's schema: the text, and the
    /// statement prepared once by name.
    calls: [(String, Statement); 2],
    /// The classic SQL (`COUNTER_SQL`, `FENCED_SQL`), prepared once on this
    /// client's connection: the library prepares each of its statements once
    /// per pooled connection (`pooler=none`), so the baseline does too (a
    /// statement given as text would be parsed, planned and closed on
    /// every call, in an extra round trip).
    classic: [Statement; 2],
}

struct Bench {
    plan: Plan,
    store: Store,
    /// The store's schema.
    schema: String,
    raw_schema: String,
    url: String,
    next: usize,
}

#[derive(Clone, Copy, PartialEq)]
enum Side {
    Fencing,
    Raw,
}

impl Bench {
    /// `clients` threads each run `f` `chunk` times; the wall time of the slowest.
    fn chunk(
        &self,
        clients: &mut [ClientState],
        chunk: usize,
        f: &(dyn Fn(&Store, &mut ClientState, usize) + Sync),
    ) -> Duration {
        let start = Barrier::new(clients.len() + 1);
        let (store, next) = (&self.store, self.next);
        std::thread::scope(|s| {
            for c in clients.iter_mut() {
                let start = &start;
                s.spawn(move || {
                    start.wait();
                    for i in next..next + chunk {
                        f(store, c, i);
                    }
                });
            }
            start.wait();
            Instant::now()
        })
        .elapsed()
    }

    #[allow(clippy::too_many_arguments)]
    fn line(
        &mut self,
        clients: &mut [ClientState],
        name: &str,
        unit: &str,
        per_call: usize,
        baseline_name: &str,
        goal: Option<Goal>,
        fencing: &(dyn Fn(&Store, &mut ClientState, usize) + Sync),
        raw: &(dyn Fn(&Store, &mut ClientState, usize) + Sync),
    ) {
        if let Some(f) = &self.plan.filter {
            if !name.contains(f.as_str()) {
                return;
            }
        }
        let n = clients.len();
        // Calls per client per chunk: batches make fewer, bigger calls, but
        // enough of them that a chunk is not one call plus thread start-up;
        // past 4 clients, about as many calls per chunk in all as at 4.
        let scale = FULL_LINES_UP_TO.min(n) as f64 / n as f64;
        let calls = ((self.plan.chunk as f64 * scale) as usize / per_call).max(self.plan.min_calls);
        // Warm up both sides once (connections, prepared statements, the
        // server's cached plans), unmeasured.
        self.chunk(clients, calls, fencing);
        self.chunk(clients, calls, raw);
        self.next += calls;
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..self.plan.rounds {
            let (mut ta, mut tb) = (Duration::ZERO, Duration::ZERO);
            for c in 0..CHUNKS {
                for side in [Side::Fencing, Side::Raw] {
                    // Alternate who goes first, chunk by chunk.
                    let side = if c % 2 == 0 {
                        side
                    } else if side == Side::Fencing {
                        Side::Raw
                    } else {
                        Side::Fencing
                    };
                    match side {
                        Side::Fencing => ta += self.chunk(clients, calls, fencing),
                        Side::Raw => tb += self.chunk(clients, calls, raw),
                    }
                }
                self.next += calls;
            }
            let units = (per_call * calls * CHUNKS * n) as f64;
            a.push(units / ta.as_secs_f64());
            b.push(units / tb.as_secs_f64());
        }
        let (a, b) = (report::median(a), report::median(b));
        let line = Line::new(
            "postgres",
            name,
            n as u32,
            "clients",
            unit,
            a,
            b,
            baseline_name,
        )
        .goal_opt(goal)
        .rounds(self.plan.rounds)
        .smoke(self.plan.smoke);
        let verdict = line.verdict();
        println!(
            "{name:<34} {n} client{} fencing {a:>9.0} {unit}  baseline {b:>9.0} {unit}  ratio {:>6.2}x  ({verdict})",
            if n == 1 { " " } else { "s" },
            a / b
        );
        report::record(&line);
    }

    fn clients(&mut self, n: usize) -> Vec<ClientState> {
        (0..n)
            .map(|id| {
                let mut raw = connect(&self.url);
                raw.batch_execute(&format!("SET search_path = {}", self.raw_schema))
                    .unwrap();
                let scope = format!("report-{id}");
                let token = self.store.next_token(&scope).unwrap();
                raw.execute(
                    "INSERT INTO report_state VALUES ($1, $2, 0) ON CONFLICT DO NOTHING",
                    &[&scope, &value(0)],
                )
                .unwrap();
                // One statement for the client's scopes (acquire_scope's
                // names): at 64 clients, 4,096 single inserts would each wait
                // for a flush.
                raw.execute(
                    "INSERT INTO lease_counter \
                     SELECT 'acquire:' || $1::text || ':' || g, 0 \
                     FROM generate_series(0, $2::int - 1) AS g ON CONFLICT DO NOTHING",
                    &[&id.to_string(), &(ACQUIRE_SCOPES as i32)],
                )
                .unwrap();
                let calls = [
                    format!("SELECT {}.next_token($1)", self.schema),
                    format!("SELECT * FROM {}.get($1, $2)", self.schema),
                ]
                .map(|sql| {
                    let prepared = raw.prepare(&sql).unwrap();
                    (sql, prepared)
                });
                let classic = [COUNTER_SQL, FENCED_SQL].map(|sql| raw.prepare(sql).unwrap());
                // The library's scopes exist before the clock starts, as the
                // baseline's counter rows do: a timed acquire never creates
                // one (a creation also locks its bucket's floor and inserts).
                for i in 0..ACQUIRE_SCOPES {
                    self.store
                        .acquire(&acquire_scope(id, i), "bench", Duration::from_millis(1))
                        .unwrap();
                }
                let batch = |n: usize| {
                    (0..n)
                        .map(|k| Op::put(format!("key-{k}"), value(k)))
                        .collect()
                };
                ClientState {
                    id,
                    raw,
                    fence: Fence::new(token),
                    token,
                    batches: [batch(1), batch(10), batch(100)],
                    calls,
                    classic,
                }
            })
            .collect()
    }
}

fn acquire_scope(client: usize, i: usize) -> String {
    format!("acquire:{client}:{}", i % ACQUIRE_SCOPES)
}

fn connect(url: &str) -> Client {
    url.parse::<postgres::Config>()
        .unwrap()
        .connect(NoTls)
        .unwrap()
}

const COUNTER_SQL: &str =
    "UPDATE lease_counter SET value = value + 1 WHERE lease_name = $1 RETURNING value";
const FENCED_SQL: &str = "UPDATE report_state SET body = $1, fencing_token = $2 \
                          WHERE report_id = $3 AND fencing_token <= $2";

fn main() {
    let shown = plan();
    let Ok(base) = std::env::var("FENCING_TEST_PG_URL") else {
        if std::env::var("FENCING_REQUIRE_PG").as_deref() == Ok("1") {
            panic!("FENCING_REQUIRE_PG=1 but FENCING_TEST_PG_URL is not set");
        }
        println!("postgres bench skipped: no server (run under scripts/pg-cluster run -- ...)");
        return;
    };
    let tag = std::process::id();
    let raw_schema = format!("bench_raw_{tag}");
    let mut admin = connect(&base);
    admin
        .batch_execute(&format!(
            "CREATE SCHEMA {raw_schema};
             CREATE TABLE {raw_schema}.lease_counter (lease_name text PRIMARY KEY, value bigint NOT NULL);
             CREATE TABLE {raw_schema}.report_state (report_id text PRIMARY KEY, body bytea NOT NULL,
                                                     fencing_token bigint NOT NULL);"
        ))
        .unwrap();
    println!(
        "postgres: fencing (SQL functions, pool) vs the classic SQL through the same client; \
         {} rounds x {CHUNKS} chunks x {} ops per client{}",
        shown.rounds,
        shown.chunk,
        if shown.smoke {
            " (smoke: no timing claims)"
        } else {
            ""
        }
    );
    for clients in CLIENTS {
        let schema = format!("bench_{tag}_{clients}");
        let url = format!("{base}?schema={schema}&pool_size={clients}");
        let mut bench = Bench {
            store: Store::open(&url).unwrap(),
            schema,
            plan: plan(),
            raw_schema: raw_schema.clone(),
            url: base.clone(),
            next: 0,
        };
        let mut cs = bench.clients(clients);
        bench.line(
            &mut cs,
            "acquire",
            "acq/s",
            1,
            "UPDATE lease_counter SET value = value + 1 ... RETURNING value",
            Some(Goal::ratio_at_least(0.9)),
            &|store, c, i| {
                store
                    .acquire(&acquire_scope(c.id, i), "bench", Duration::from_millis(1))
                    .unwrap();
            },
            &|_, c, i| {
                let _: i64 = c
                    .raw
                    .query_one(&c.classic[0], &[&acquire_scope(c.id, i)])
                    .unwrap()
                    .get(0);
            },
        );
        bench.line(
            &mut cs,
            "put (accepted)",
            "w/s",
            1,
            "UPDATE report_state ... WHERE fencing_token <= $2",
            Some(Goal::ratio_at_least(0.9)),
            &|store, c, i| {
                store
                    .put(&format!("report-{}", c.id), "body", &value(i), &c.fence)
                    .unwrap();
            },
            &|_, c, i| {
                let id = format!("report-{}", c.id);
                let t = c.token.get() as i64;
                let n = c.raw.execute(&c.classic[1], &[&value(i), &t, &id]).unwrap();
                assert_eq!(n, 1);
            },
        );
        if clients > FULL_LINES_UP_TO {
            bench.store.close();
            continue;
        }
        for (k, size) in [1usize, 10, 100].into_iter().enumerate() {
            bench.line(
                &mut cs,
                &format!("apply({size} puts) vs single puts"),
                "puts/s",
                size,
                "the same puts, one fenced put per call",
                (size == 100).then_some(Goal::ratio_at_least(20.0)),
                &move |store, c, _| {
                    let ops = c.batches[k].clone();
                    store
                        .apply(&format!("report-{}", c.id), &c.fence, ops)
                        .unwrap();
                },
                &move |store, c, i| {
                    for j in 0..size {
                        store
                            .put(
                                &format!("report-{}", c.id),
                                &format!("key-{j}"),
                                &value(i),
                                &c.fence,
                            )
                            .unwrap();
                    }
                },
            );
        }
        unnamed_vs_prepared(&mut bench, &mut cs);
        bench.store.close();
    }
    tls_put(&base, &raw_schema, tag);
    admin
        .batch_execute(&format!("DROP SCHEMA {raw_schema} CASCADE"))
        .unwrap();
}

/// The cost of sending each statement unnamed with its types (Parse, Bind,
/// Execute in one round trip: what the library does, so that it works behind
/// a transaction pooler) against a statement prepared once by name, on the
/// same direct connection: a write (one fsync) and a read (none).
fn unnamed_vs_prepared(bench: &mut Bench, cs: &mut [ClientState]) {
    bench.line(
        cs,
        "next_token: unnamed vs prepared",
        "tok/s",
        1,
        "the same SQL, prepared once by name",
        None,
        &|_, c, _| {
            let (sql, _) = &c.calls[0];
            let scope = format!("u-{}", c.id);
            c.raw.query_typed(sql, &[(&scope, Type::TEXT)]).unwrap();
        },
        &|_, c, _| {
            let (_, prepared) = &c.calls[0];
            let scope = format!("u-{}", c.id);
            c.raw.query(prepared, &[&scope]).unwrap();
        },
    );
    // The same prepared statement on the same server, through the library
    // (pool checkout, its runtime thread driving the socket) and through a
    // direct client: what the library's client path costs per call.
    bench.line(
        cs,
        "get: library vs direct client",
        "get/s",
        1,
        "the same prepared statement, on a direct client",
        Some(Goal::ratio_at_least(0.9)),
        &|store, c, _| {
            store
                .get(&format!("report-{}", c.id), "body", None)
                .unwrap();
        },
        &|_, c, _| {
            let (_, prepared) = &c.calls[1];
            let scope = format!("report-{}", c.id);
            let rows = c.raw.query(prepared, &[&scope, &"body"]).unwrap();
            assert!(rows.len() <= 1);
        },
    );
    bench.line(
        cs,
        "get: unnamed vs prepared",
        "get/s",
        1,
        "the same SQL, prepared once by name",
        None,
        &|_, c, _| {
            let (sql, _) = &c.calls[1];
            let scope = format!("report-{}", c.id);
            let rows = c
                .raw
                .query_typed(sql, &[(&scope, Type::TEXT), (&"body", Type::TEXT)])
                .unwrap();
            assert!(rows.len() <= 1);
        },
        &|_, c, _| {
            let (_, prepared) = &c.calls[1];
            let scope = format!("report-{}", c.id);
            let rows = c.raw.query(prepared, &[&scope, &"body"]).unwrap();
            assert!(rows.len() <= 1);
        },
    );
}

/// A single fenced put over TLS (`verify-full`, the test CA) against the same
/// put in plaintext, one client, alternating in the same run. The two are
/// different servers on this machine (the TLS bed refuses plaintext), so the
/// ratio holds the handshake-free cost of encryption plus any difference
/// between two like servers.
fn tls_put(plain_base: &str, raw_schema: &str, tag: u32) {
    let (Ok(tls_base), Ok(dir)) = (
        std::env::var("FENCING_TEST_PG_TLS_URL"),
        std::env::var("FENCING_TEST_PG_TLS_DIR"),
    ) else {
        println!(
            "put over TLS: skipped: FENCING_TEST_PG_TLS_URL/FENCING_TEST_PG_TLS_DIR are not set \
             (run under scripts/pg-tls run -- ...)"
        );
        return;
    };
    let ca = std::path::Path::new(&dir).join("ca.crt");
    let tls_url = format!(
        "{tls_base}?schema=bench_tls_{tag}&pool_size=1&sslmode=verify-full&sslrootcert={}",
        ca.display()
    );
    let plain = Store::open(&format!(
        "{plain_base}?schema=bench_plain_{tag}&pool_size=1"
    ))
    .unwrap();
    let mut bench = Bench {
        store: Store::open(&tls_url).unwrap(),
        schema: format!("bench_plain_{tag}"),
        plan: plan(),
        raw_schema: raw_schema.to_owned(),
        url: plain_base.to_owned(),
        next: 0,
    };
    let mut cs = bench.clients(1);
    let plain_fence = Fence::new(plain.next_token("tls-report").unwrap());
    bench.line(
        &mut cs,
        "put over TLS vs plaintext",
        "w/s",
        1,
        "the same put, plaintext to a like server",
        None,
        &|store, c, i| {
            store
                .put(&format!("report-{}", c.id), "body", &value(i), &c.fence)
                .unwrap();
        },
        &|_, _, i| {
            plain
                .put("tls-report", "body", &value(i), &plain_fence)
                .unwrap();
        },
    );
    bench.store.close();
    plain.close();
}
