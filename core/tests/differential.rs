//! Differential test: the same random operation sequences replayed on
//! `memory:`, `sqlite:` (a temp file), `postgres://` (a fresh schema per
//! sequence) and `etcd://` (a fresh key prefix per sequence), all on a
//! manual clock, must give the same outcome at every
//! step (the Ok value, or the error code and details) and the same final
//! state of every scope used, and of one never used. The backends implement
//! the rules of docs/semantics.md twice (Rust and SQL): this is where the two
//! copies are held equal on sequences nobody wrote by hand.
//!
//! Small alphabets of scopes, keys, holders and tokens make conflicts, stale
//! tokens, retirements and re-creations frequent. Lease times are compared
//! on each store's own clock (`remaining`, `ttl`), never as wall-clock
//! instants: each manual clock starts at its own moment.
//!
//! Each mode runs `FENCING_DIFF_CASES` sequences (default 30) of 80 steps;
//! `FENCING_DIFF_SEED` replays one sequence (the seed a failure prints) and
//! `FENCING_DIFF_COVERAGE=1` prints how often each outcome was reached.
//! PostgreSQL is skipped only when `support::postgres_test_url` says so, etcd
//! only when `support::etcd_test_members` does.

use std::collections::BTreeMap;
use std::time::Duration;

use fencing::{Error, Fence, Lease, Op, Store, Token};

mod support;
use support::{etcd_test_members, fresh_schema, postgres_test_url, sqlite_url, Rng};

const SCOPES: [&str; 3] = ["s0", "s1", "s2"];
/// Compared at the end too, though no step touches it.
const UNUSED: &str = "s9";
const KEYS: [&str; 3] = ["a", "b", "c"];
const HOLDERS: [&str; 2] = ["h0", "h1"];
const OPS_PER_CASE: usize = 80;
const DEFAULT_CASES: u64 = 30;

// ---------------------------------------------------------------------------
// Steps
// ---------------------------------------------------------------------------

/// A presented token: a literal from a small range, or one of the tokens
/// this replay has been issued (resolved on each backend from its own
/// results, which agree up to the step or the test has already failed).
#[derive(Clone, Copy, Debug)]
enum Tok {
    Lit(u64),
    /// The n-th most recently issued token, plus an offset.
    Issued(usize, i8),
}

#[derive(Clone, Debug)]
struct FenceSel {
    tok: Tok,
    seq: Option<u64>,
    holder: bool,
}

#[derive(Clone, Debug)]
enum Step {
    NextToken(&'static str),
    AdvanceCounter(&'static str, Tok),
    Acquire(&'static str, &'static str, u64),
    Renew(&'static str, Tok, u64),
    Release(&'static str, Tok),
    Put(&'static str, &'static str, FenceSel, Option<u64>),
    Delete(&'static str, &'static str, FenceSel, Option<u64>),
    /// (put?, key, expected version) per op.
    Apply(
        &'static str,
        FenceSel,
        Vec<(bool, &'static str, Option<u64>)>,
    ),
    Claim(&'static str, FenceSel),
    Get(&'static str, &'static str, Option<FenceSel>),
    List(&'static str, Option<&'static str>, usize),
    Status(&'static str),
    FenceOf(&'static str),
    Retire(&'static str),
    Failover,
    /// PostgreSQL's store finds itself on the next timeline (its recorded
    /// one set back by the owner, as a promoted standby sees it) and its
    /// next call steps by itself, two steps for one timeline crossed
    /// (docs/semantics.md, "How many steps"); the other backends take the
    /// same two explicitly.
    Promotion,
    /// The store's record, of one scope or of all.
    Events(Option<&'static str>),
    AdvanceClock(u64),
}

fn pick<T: Copy>(rng: &mut Rng, xs: &[T]) -> T {
    xs[rng.below(xs.len() as u64) as usize]
}

fn tok(rng: &mut Rng) -> Tok {
    if rng.below(3) == 0 {
        Tok::Lit(1 + rng.below(8))
    } else {
        Tok::Issued(rng.below(3) as usize, rng.below(4) as i8 - 1)
    }
}

/// A counter's target: now and then around the jump limit before any
/// failover step (2^48) and past it (refused the same way everywhere, and
/// what the step must cover), else any token.
fn jump(rng: &mut Rng) -> Tok {
    if rng.below(4) == 0 {
        Tok::Lit((1 << 48) - 1 + rng.below(4))
    } else {
        tok(rng)
    }
}

fn fence(rng: &mut Rng) -> FenceSel {
    FenceSel {
        tok: tok(rng),
        seq: (rng.below(2) == 0).then(|| rng.below(4)),
        holder: rng.below(2) == 0,
    }
}

fn expect(rng: &mut Rng) -> Option<u64> {
    (rng.below(3) == 0).then(|| rng.below(3))
}

/// TTLs of 1 to 30 ms on a clock moved by 0 to 20 ms at a time, and now and
/// then 0 (invalid).
fn ttl(rng: &mut Rng) -> u64 {
    if rng.below(15) == 0 {
        0
    } else {
        1 + rng.below(30)
    }
}

fn step(rng: &mut Rng) -> Step {
    let s = pick(rng, &SCOPES);
    let k = pick(rng, &KEYS);
    match rng.below(36) {
        0..=2 => Step::NextToken(s),
        3 => Step::AdvanceCounter(s, jump(rng)),
        4..=7 => Step::Acquire(s, pick(rng, &HOLDERS), ttl(rng)),
        8..=9 => Step::Renew(s, tok(rng), ttl(rng)),
        10..=11 => Step::Release(s, tok(rng)),
        12..=15 => Step::Put(s, k, fence(rng), expect(rng)),
        16..=17 => Step::Delete(s, k, fence(rng), expect(rng)),
        18..=19 => {
            let ops = (0..rng.below(4))
                .map(|_| (rng.below(3) != 0, pick(rng, &KEYS), expect(rng)))
                .collect();
            Step::Apply(s, fence(rng), ops)
        }
        20..=21 => Step::Claim(s, fence(rng)),
        22..=23 => Step::Get(s, k, (rng.below(2) == 0).then(|| fence(rng))),
        24 => Step::List(
            s,
            (rng.below(2) == 0).then(|| pick(rng, &KEYS)),
            1 + rng.below(3) as usize,
        ),
        25 => Step::Status(s),
        26 => Step::FenceOf(s),
        27..=30 => Step::Retire(s),
        // Rarely: after one, every token issued before is stale.
        31 if rng.below(3) == 0 => Step::Failover,
        31 if rng.below(2) == 0 => Step::Promotion,
        32 => Step::Events((rng.below(2) == 0).then_some(s)),
        _ => Step::AdvanceClock(rng.below(21)),
    }
}

fn steps(seed: u64) -> Vec<Step> {
    let mut rng = Rng(seed);
    (0..OPS_PER_CASE).map(|_| step(&mut rng)).collect()
}

// ---------------------------------------------------------------------------
// Replay, with outcomes in a backend-neutral form
// ---------------------------------------------------------------------------

/// A lease as the store's own clock sees it (no wall-clock instant).
fn lease(l: &Lease) -> String {
    format!(
        "Lease {{ scope: {:?}, holder: {:?}, token: {}, ttl: {:?}, remaining: {:?} }}",
        l.scope, l.holder, l.token, l.ttl, l.remaining
    )
}

/// The code, then the details (for `INVALID_ARGUMENT` its message, which
/// the backends word alike). A `BACKEND` failure's message is the driver's
/// or SQLite's own: only its code is compared.
fn error(e: &Error) -> String {
    match e {
        Error::Backend(_) => format!("Err({})", e.code()),
        other => format!("Err({} {other:?})", e.code()),
    }
}

/// "Put:STALE_TOKEN", "Retire:Ok(true)": what a step reached, for coverage.
fn label(step: &Step, answer: &str) -> String {
    let step = format!("{step:?}");
    let kind = step.split('(').next().unwrap_or("?");
    let code = match answer.strip_prefix("Err(") {
        Some(rest) => rest.split([' ', ')']).next().unwrap_or("?"),
        // Whether a retire or release did something matters: keep the bool.
        None if answer == "Ok(true)" || answer == "Ok(false)" => answer,
        None => "Ok",
    };
    format!("{kind}:{code}")
}

fn outcome<T>(r: Result<T, Error>, show: impl FnOnce(T) -> String) -> String {
    match r {
        Ok(v) => format!("Ok({})", show(v)),
        Err(e) => error(&e),
    }
}

fn debug<T: std::fmt::Debug>(v: T) -> String {
    format!("{v:?}")
}

struct Replay {
    store: Store,
    /// PostgreSQL only: (owner's URL, schema), to set its recorded
    /// server history back.
    recorded: Option<(String, String)>,
    /// Tokens issued so far (next_token, acquire), newest last.
    issued: Vec<u64>,
}

impl Replay {
    fn token(&self, t: Tok) -> Token {
        let v = match t {
            Tok::Lit(v) => v,
            Tok::Issued(back, off) => {
                let base = self.issued.iter().rev().nth(back).copied().unwrap_or(1);
                base.saturating_add_signed(i64::from(off)).max(1)
            }
        };
        Token::new(v).expect("small token")
    }

    fn fence(&self, f: &FenceSel) -> Fence {
        let mut fence = Fence::new(self.token(f.tok));
        if let Some(seq) = f.seq {
            fence = fence.with_seq(seq);
        }
        if f.holder {
            fence = fence.with_holder("writer");
        }
        fence
    }

    fn issue(&mut self, t: Token) -> String {
        self.issued.push(t.get());
        t.to_string()
    }

    fn run(&mut self, step: &Step) -> String {
        let st = &self.store;
        let ms = Duration::from_millis;
        match step {
            Step::NextToken(s) => match st.next_token(s) {
                Ok(t) => format!("Ok({})", self.issue(t)),
                Err(e) => error(&e),
            },
            Step::AdvanceCounter(s, t) => outcome(st.advance_counter(s, self.token(*t)), debug),
            Step::Acquire(s, h, ttl) => match st.acquire(s, h, ms(*ttl)) {
                Ok(l) => {
                    self.issue(l.token);
                    format!("Ok({})", lease(&l))
                }
                Err(e) => error(&e),
            },
            Step::Renew(s, t, ttl) => outcome(st.renew(s, self.token(*t), ms(*ttl)), |l| lease(&l)),
            Step::Release(s, t) => outcome(st.release(s, self.token(*t)), debug),
            Step::Put(s, k, f, v) => {
                let mut op = Op::put(*k, format!("{s}/{k}"));
                if let Some(v) = v {
                    op = op.if_version(*v);
                }
                outcome(st.execute(s, &self.fence(f), op), debug)
            }
            Step::Delete(s, k, f, v) => {
                let mut op = Op::delete(*k);
                if let Some(v) = v {
                    op = op.if_version(*v);
                }
                outcome(st.execute(s, &self.fence(f), op), debug)
            }
            Step::Apply(s, f, ops) => {
                let ops = ops
                    .iter()
                    .enumerate()
                    .map(|(i, &(put, k, v))| {
                        let op = if put {
                            Op::put(k, format!("{s}/{k}/{i}"))
                        } else {
                            Op::delete(k)
                        };
                        match v {
                            Some(v) => op.if_version(v),
                            None => op,
                        }
                    })
                    .collect();
                outcome(st.apply(s, &self.fence(f), ops), debug)
            }
            Step::Claim(s, f) => outcome(st.claim(s, &self.fence(f)), debug),
            Step::Get(s, k, f) => {
                let f = f.as_ref().map(|f| self.fence(f));
                outcome(st.get(s, k, f.as_ref()), debug)
            }
            Step::List(s, after, limit) => outcome(st.list(s, *after, *limit), debug),
            Step::Status(s) => status(st, s),
            Step::FenceOf(s) => outcome(st.fence_of(s), debug),
            Step::Retire(s) => outcome(st.retire(s), debug),
            Step::Failover => outcome(st.failover(), debug),
            Step::Promotion => match &self.recorded {
                Some((url, schema)) => {
                    let mut c = url
                        .parse::<postgres::Config>()
                        .unwrap()
                        .connect(postgres::NoTls)
                        .unwrap();
                    // Then the store's next call (here at once, so that two
                    // promotions in a row are two timelines crossed, each
                    // noticed: a first call before the second promotion).
                    c.batch_execute(&format!(
                        "UPDATE {schema}.history SET timeline = timeline - 1; \
                         SELECT {schema}.durable();"
                    ))
                    .unwrap();
                    "Ok".to_owned()
                }
                None => match (0..2).try_for_each(|_| st.failover().map(drop)) {
                    Ok(()) => "Ok".to_owned(),
                    Err(e) => error(&e),
                },
            },
            Step::Events(s) => events(st, *s),
            Step::AdvanceClock(n) => outcome(st.advance_clock(ms(*n)), debug),
        }
    }

    /// Everything observable about every scope, used or not.
    fn state(&self) -> Vec<String> {
        let st = &self.store;
        let mut out = Vec::new();
        for s in SCOPES.iter().chain([&UNUSED]) {
            out.push(format!("status({s}) = {}", status(st, s)));
            out.push(format!(
                "fence_of({s}) = {}",
                outcome(st.fence_of(s), debug)
            ));
            out.push(format!(
                "list({s}) = {}",
                outcome(st.list(s, None, 1000), debug)
            ));
            for k in KEYS {
                out.push(format!(
                    "get({s}, {k}) = {}",
                    outcome(st.get(s, k, None), debug)
                ));
            }
        }
        out.push(format!("events = {}", events(st, None)));
        out
    }
}

/// The record, without its times (each store's manual clock started at its
/// own moment) and ids (a store numbers its records its own way).
fn events(st: &Store, s: Option<&str>) -> String {
    outcome(st.events(s, 256), |e| {
        let rejections: Vec<String> = e
            .rejections
            .iter()
            .map(|r| {
                format!(
                    "{} {}/{:?} presented {} current {} seq {:?} holder {:?} suppressed {}",
                    r.code, r.scope, r.key, r.presented, r.current, r.seq, r.holder, r.suppressed
                )
            })
            .collect();
        let writes: Vec<String> = e
            .last_writes
            .iter()
            .map(|w| format!("{} by {:?} with {}", w.scope, w.holder, w.token))
            .collect();
        format!("rejections {rejections:?} last writes {writes:?}")
    })
}

fn status(st: &Store, s: &str) -> String {
    outcome(st.status(s), |v| {
        format!(
            "ScopeStatus {{ counter: {}, fence: {}, lease: {:?}, entries: {} }}",
            v.counter,
            v.fence,
            v.lease.as_ref().map(lease),
            v.entries
        )
    })
}

// ---------------------------------------------------------------------------
// Backends and modes
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
struct Mode {
    strict: bool,
    eager: bool,
}

impl Mode {
    fn options(self) -> String {
        let mut o = "clock=manual".to_owned();
        if self.strict {
            o.push_str("&strict=true");
        }
        if !self.eager {
            o.push_str("&eager_fencing=false");
        }
        o
    }
}

/// One store per backend for one sequence, named for messages.
fn open_all(
    mode: Mode,
    dir: &std::path::Path,
    case: u64,
    pg: Option<&str>,
    etcd: Option<&str>,
) -> Vec<(String, Replay)> {
    let o = mode.options();
    let mut urls = vec![
        ("memory".to_owned(), format!("memory:?{o}")),
        (
            "sqlite".to_owned(),
            // No fsync per commit: the file is thrown away, and the rules
            // under test are the same either way.
            format!(
                "{}?{o}&synchronous=normal",
                sqlite_url(&dir.join(format!("{case}.db")))
            ),
        ),
    ];
    let schema = fresh_schema("diff");
    if let Some(base) = pg {
        // One connection, and commits that do not wait for the disk: the
        // schema is thrown away, and this keeps a sequence cheap.
        urls.push((
            "postgres".to_owned(),
            format!("{base}?schema={schema}&{o}&pool_size=1&options=-c%20synchronous_commit%3Doff"),
        ));
    }
    if let Some(members) = etcd {
        urls.push(("etcd".to_owned(), format!("etcd://{members}/{schema}?{o}")));
    }
    urls.into_iter()
        .map(|(name, url)| {
            let store = Store::open(&url).unwrap_or_else(|e| panic!("open {url}: {e}"));
            let recorded = (name == "postgres").then(|| (pg.unwrap().to_owned(), schema.clone()));
            (
                name,
                Replay {
                    store,
                    recorded,
                    issued: Vec::new(),
                },
            )
        })
        .collect()
}

/// Replays one sequence everywhere; the first disagreement panics with the
/// seed, the step and every backend's answer.
fn check_case(
    mode: Mode,
    seed: u64,
    dir: &std::path::Path,
    (pg, etcd): (Option<&str>, Option<&str>),
    seen: &mut BTreeMap<String, u64>,
) {
    let steps = steps(seed);
    let mut replays = open_all(mode, dir, seed, pg, etcd);
    let fail = |what: &str, answers: &[(String, String)], steps: &[Step]| -> ! {
        let lines: Vec<String> = answers.iter().map(|(b, a)| format!("  {b}: {a}")).collect();
        panic!(
            "{mode:?}, seed {seed:#x} (FENCING_DIFF_SEED={seed:#x}): backends differ at {what}\n{}\nsteps so far:\n{}",
            lines.join("\n"),
            steps
                .iter()
                .enumerate()
                .map(|(i, s)| format!("  {i}: {s:?}"))
                .collect::<Vec<_>>()
                .join("\n")
        )
    };
    for (i, step) in steps.iter().enumerate() {
        let answers: Vec<(String, String)> = replays
            .iter_mut()
            .map(|(name, r)| (name.clone(), r.run(step)))
            .collect();
        if answers.iter().any(|(_, a)| *a != answers[0].1) {
            fail(&format!("step {i}: {step:?}"), &answers, &steps[..=i]);
        }
        *seen.entry(label(step, &answers[0].1)).or_insert(0) += 1;
    }
    let states: Vec<(String, Vec<String>)> = replays
        .iter()
        .map(|(name, r)| (name.clone(), r.state()))
        .collect();
    for line in 0..states[0].1.len() {
        let answers: Vec<(String, String)> = states
            .iter()
            .map(|(name, s)| (name.clone(), s[line].clone()))
            .collect();
        if answers.iter().any(|(_, a)| *a != answers[0].1) {
            fail("the end", &answers, &steps);
        }
    }
    for (_, r) in replays {
        r.store.close();
    }
}

/// Outcomes every mode must reach, so that the test cannot pass by only
/// walking the happy path.
const REQUIRED: &[&str] = &[
    "NextToken:Ok",
    "Acquire:Ok",
    "Acquire:LEASE_HELD",
    "Renew:Ok",
    "Renew:LEASE_LOST",
    "Release:Ok(true)",
    "Put:Ok",
    "Put:STALE_TOKEN",
    "Put:SEQUENCE_OUT_OF_ORDER",
    "Put:VERSION_MISMATCH",
    "Delete:Ok",
    "Delete:NOT_FOUND",
    "Apply:Ok",
    "Apply:INVALID_ARGUMENT",
    "Claim:Ok",
    "Claim:STALE_TOKEN",
    "Get:Ok",
    "Get:STALE_TOKEN",
    "Retire:Ok(true)",
    "Retire:Ok(false)",
    "Retire:LEASE_HELD",
    "Retire:INVALID_ARGUMENT",
    "Failover:Ok",
    "Promotion:Ok",
    "Events:Ok",
    "AdvanceCounter:INVALID_ARGUMENT",
];

fn check_mode(mode: Mode, base_seed: u64) {
    let pg = postgres_test_url();
    let etcd = etcd_test_members();
    let servers = (pg.as_deref(), etcd.as_deref());
    let dir = tempfile::tempdir().unwrap();
    let mut seen = BTreeMap::new();
    if let Some(seed) = std::env::var("FENCING_DIFF_SEED")
        .ok()
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
    {
        check_case(mode, seed, dir.path(), servers, &mut seen);
        return;
    }
    let cases = std::env::var("FENCING_DIFF_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    let mut seeds = Rng(base_seed);
    for _ in 0..cases {
        check_case(mode, seeds.next(), dir.path(), servers, &mut seen);
    }
    if std::env::var_os("FENCING_DIFF_COVERAGE").is_some() {
        eprintln!("{mode:?}: {seen:#?}");
    }
    let missing: Vec<&str> = REQUIRED
        .iter()
        .copied()
        .filter(|l| !seen.contains_key(*l))
        .collect();
    assert!(missing.is_empty(), "{mode:?}: never reached {missing:?}");
}

#[test]
fn backends_agree_default() {
    check_mode(
        Mode {
            strict: false,
            eager: true,
        },
        0xd1ff_0001,
    );
}

#[test]
fn backends_agree_strict() {
    check_mode(
        Mode {
            strict: true,
            eager: true,
        },
        0xd1ff_0002,
    );
}

#[test]
fn backends_agree_lazy_fencing() {
    check_mode(
        Mode {
            strict: false,
            eager: false,
        },
        0xd1ff_0003,
    );
}

#[test]
fn backends_agree_strict_lazy_fencing() {
    check_mode(
        Mode {
            strict: true,
            eager: false,
        },
        0xd1ff_0004,
    );
}
