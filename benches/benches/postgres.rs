//! `postgres://` beside the classic hand-written SQL (SPEC section 8) run
//! through the same client (the `postgres` crate) on the same server, at 1
//! and 4 clients, measured in the same run; plus `apply` batches of 1, 10
//! and 100 puts against single fenced puts.
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

use std::sync::Barrier;
use std::time::{Duration, Instant};

use fencing::{Fence, Op, Store, Token};
use fencing_benches::report::{self, Goal, Line};
use postgres::{Client, NoTls};

/// Scopes each client cycles through for acquisitions: leases last 1 ms, so
/// a scope is free again by the time its turn comes back.
const ACQUIRE_SCOPES: usize = 64;
const CHUNKS: usize = 6;

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
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filter = args.iter().find(|a| !a.starts_with("--")).cloned();
    let smoke = !args.iter().any(|a| a == "--bench");
    let (rounds, chunk, min_calls) = if smoke {
        (1, 2, 1)
    } else if args.iter().any(|a| a == "--quick") {
        (3, 40, 5)
    } else {
        (7, 100, 10)
    };
    Plan {
        rounds,
        chunk,
        min_calls,
        filter,
        smoke,
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
}

struct Bench {
    plan: Plan,
    store: Store,
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
        // enough of them that a chunk is not one call plus thread start-up.
        let calls = (self.plan.chunk / per_call).max(self.plan.min_calls);
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
        let verdict = match (goal, line.met()) {
            (Some(g), Some(met)) => format!(
                "goal {} {}x: {}",
                g.op,
                g.value,
                if met { "met" } else { "MISSED" }
            ),
            _ => "no goal".to_owned(),
        };
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
                for k in 0..ACQUIRE_SCOPES {
                    raw.execute(
                        "INSERT INTO lease_counter VALUES ($1, 0) ON CONFLICT DO NOTHING",
                        &[&acquire_scope(id, k)],
                    )
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
    for clients in [1usize, 4] {
        let url = format!("{base}?schema=bench_{tag}_{clients}&pool_size={clients}");
        let mut bench = Bench {
            store: Store::open(&url).unwrap(),
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
                    .query_one(COUNTER_SQL, &[&acquire_scope(c.id, i)])
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
                let n = c.raw.execute(FENCED_SQL, &[&value(i), &t, &id]).unwrap();
                assert_eq!(n, 1);
            },
        );
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
        bench.store.close();
    }
    admin
        .batch_execute(&format!("DROP SCHEMA {raw_schema} CASCADE"))
        .unwrap();
}
