//! The machine-readable result of a benchmark line, shared by every bench
//! (Rust, C ABI, Python, Node, and any later backend) so that one report
//! (`scripts/bench` -> `bench-report`) can put them in one table and chart.
//!
//! When the environment variable [`OUT_ENV`] (`FENCING_BENCH_OUT`) names a
//! file, each measured line is appended to it as one JSON object on one line
//! (JSON Lines). Without it, [`record`] does nothing: the benches print their
//! own human-readable lines either way.
//!
//! ```json
//! {"group":"sqlite","line":"put (accepted)","concurrency":4,"concurrency_unit":"processes",
//!  "unit":"ops/s","fenced":12086.0,"baseline":12957.0,"ratio":0.93,
//!  "baseline_name":"raw rusqlite: UPDATE ... WHERE fencing_token <= ?",
//!  "goal":{"on":"ratio","op":">=","value":0.9},"met":true,"rounds":9,"smoke":false}
//! ```
//!
//! - `group`: the face or backend (`memory`, `c-abi`, `python`, `node`,
//!   `sqlite`, `postgres`, ...). `line`: what is measured, without the
//!   concurrency; the same `(group, line)` at several concurrencies is one
//!   series of the chart.
//! - `concurrency` (integer >= 1) and `concurrency_unit` (`threads`,
//!   `processes`, `clients`).
//! - `unit`: `ops/s` (higher is better) or `ns/op` (lower is better; for
//!   N threads, wall time / (N x operations), so 1e9 / value is the
//!   aggregate throughput). `fenced` and `baseline` are the medians of the
//!   rounds of the same run, in that unit.
//! - `ratio` = `fenced / baseline`, in the line's unit.
//! - `difference` (optional) = `fenced - baseline` as the bench measured it
//!   (e.g. the median of the rounds' differences for the C ABI overhead).
//! - `goal` (optional): `{"on": "ratio"|"difference", "op": ">="|"<="|"<"|">",
//!   "value": x}`; `met` is the goal applied to that figure (null without a
//!   goal).
//! - `rounds`: how many rounds each median is over; `smoke`: true when the
//!   figures are not measurements (one tiny round, to keep the code alive).
//! - `note` (optional): free text for the table.
//! - `x_axis` and `x` (optional): a curve along something other than
//!   concurrency (`"scopes"`, `"entries"`, `"value bytes"`); the line text
//!   names the point (`"acquire, 1000000 scopes"`), `series` (optional) is
//!   the curve's name without it (`"acquire"`).
//! - `stat` (optional): a percentile of per-call latencies (`"p50"`,
//!   `"p99"`, `"p99.9"`), unit `ns/op`, in a `series` such as
//!   `"acquire latency"`.
//! - Unit `B` (bytes, lower is better): sizes such as resident memory per
//!   scope, or file or table size per scope.
//!
//! Readers must ignore fields they do not know, so that fields can be added.

use std::fs::OpenOptions;
use std::io::Write;

use serde_json::{json, Map, Value};

/// The environment variable naming the JSON Lines file to append to.
pub const OUT_ENV: &str = "FENCING_BENCH_OUT";

/// What a figure is compared against.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum On {
    /// `fenced / baseline`.
    Ratio,
    /// `fenced - baseline` (or the bench's own `difference`).
    Difference,
}

/// A goal such as "ratio >= 0.9".
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Goal {
    pub on: On,
    /// One of `>=`, `<=`, `<`, `>`.
    pub op: &'static str,
    pub value: f64,
}

impl Goal {
    pub const fn ratio_at_least(value: f64) -> Goal {
        Goal {
            on: On::Ratio,
            op: ">=",
            value,
        }
    }
    pub const fn ratio_at_most(value: f64) -> Goal {
        Goal {
            on: On::Ratio,
            op: "<=",
            value,
        }
    }
    pub const fn difference_below(value: f64) -> Goal {
        Goal {
            on: On::Difference,
            op: "<",
            value,
        }
    }

    /// Whether `figure` meets the goal.
    pub fn met(&self, figure: f64) -> bool {
        match self.op {
            ">=" => figure >= self.value,
            "<=" => figure <= self.value,
            "<" => figure < self.value,
            ">" => figure > self.value,
            _ => false,
        }
    }

    /// "ratio >= 0.9x", "difference < 15 ns".
    pub fn describe(&self, unit: &str) -> String {
        match self.on {
            On::Ratio => format!("ratio {} {}x", self.op, self.value),
            On::Difference => format!("difference {} {} {}", self.op, self.value, base_unit(unit)),
        }
    }
}

fn base_unit(unit: &str) -> &str {
    unit.split('/').next().unwrap_or(unit)
}

/// One measured line. Build it with [`Line::new`] and the setters, then
/// [`record`] it.
#[derive(Clone, Debug)]
pub struct Line {
    pub group: String,
    pub line: String,
    pub concurrency: u32,
    pub concurrency_unit: String,
    pub unit: String,
    pub fenced: f64,
    pub baseline: f64,
    pub baseline_name: String,
    pub difference: Option<f64>,
    pub goal: Option<Goal>,
    pub rounds: usize,
    pub smoke: bool,
    pub note: Option<String>,
    /// What `x` counts (`scopes`, `entries`, `value bytes`), for curves
    /// along something other than concurrency.
    pub x_axis: Option<String>,
    pub x: Option<f64>,
    /// The curve's name without its point.
    pub series: Option<String>,
    /// The percentile a latency line holds (`p50`, `p99`, `p99.9`).
    pub stat: Option<String>,
}

impl Line {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        group: &str,
        line: &str,
        concurrency: u32,
        concurrency_unit: &str,
        unit: &str,
        fenced: f64,
        baseline: f64,
        baseline_name: &str,
    ) -> Line {
        Line {
            group: group.to_owned(),
            line: line.to_owned(),
            concurrency,
            concurrency_unit: concurrency_unit.to_owned(),
            unit: unit.to_owned(),
            fenced,
            baseline,
            baseline_name: baseline_name.to_owned(),
            difference: None,
            goal: None,
            rounds: 1,
            smoke: false,
            note: None,
            x_axis: None,
            x: None,
            series: None,
            stat: None,
        }
    }
    pub fn goal(mut self, goal: Goal) -> Line {
        self.goal = Some(goal);
        self
    }
    pub fn goal_opt(mut self, goal: Option<Goal>) -> Line {
        self.goal = goal;
        self
    }
    pub fn rounds(mut self, rounds: usize) -> Line {
        self.rounds = rounds;
        self
    }
    pub fn smoke(mut self, smoke: bool) -> Line {
        self.smoke = smoke;
        self
    }
    pub fn difference(mut self, difference: f64) -> Line {
        self.difference = Some(difference);
        self
    }
    pub fn note(mut self, note: &str) -> Line {
        self.note = Some(note.to_owned());
        self
    }

    /// A point of a curve along `axis` (`scopes`, `entries`, `value bytes`).
    pub fn at(mut self, axis: &str, x: f64) -> Line {
        self.x_axis = Some(axis.to_owned());
        self.x = Some(x);
        self
    }
    pub fn series(mut self, series: &str) -> Line {
        self.series = Some(series.to_owned());
        self
    }
    /// A latency percentile (`p50`, `p99`, `p99.9`).
    pub fn stat(mut self, stat: &str) -> Line {
        self.stat = Some(stat.to_owned());
        self
    }

    pub fn ratio(&self) -> f64 {
        self.fenced / self.baseline
    }

    /// The figure the goal is about.
    pub fn goal_figure(&self) -> Option<f64> {
        self.goal.map(|g| match g.on {
            On::Ratio => self.ratio(),
            On::Difference => self.difference.unwrap_or(self.fenced - self.baseline),
        })
    }

    pub fn met(&self) -> Option<bool> {
        Some(self.goal?.met(self.goal_figure()?))
    }

    /// What a bench prints after a line: "goal >= 0.9x: met" (or MISSED),
    /// or "no goal".
    pub fn verdict(&self) -> String {
        match (self.goal, self.met()) {
            (Some(g), Some(met)) => format!(
                "goal {} {}x: {}",
                g.op,
                g.value,
                if met { "met" } else { "MISSED" }
            ),
            _ => "no goal".to_owned(),
        }
    }

    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("group".into(), json!(self.group));
        m.insert("line".into(), json!(self.line));
        m.insert("concurrency".into(), json!(self.concurrency));
        m.insert("concurrency_unit".into(), json!(self.concurrency_unit));
        m.insert("unit".into(), json!(self.unit));
        m.insert("fenced".into(), finite(self.fenced));
        m.insert("baseline".into(), finite(self.baseline));
        m.insert("ratio".into(), finite(self.ratio()));
        m.insert("baseline_name".into(), json!(self.baseline_name));
        if let Some(d) = self.difference {
            m.insert("difference".into(), finite(d));
        }
        m.insert(
            "goal".into(),
            self.goal.map_or(Value::Null, |g| {
                json!({
                    "on": match g.on { On::Ratio => "ratio", On::Difference => "difference" },
                    "op": g.op,
                    "value": g.value,
                })
            }),
        );
        m.insert("met".into(), self.met().map_or(Value::Null, Value::Bool));
        m.insert("rounds".into(), json!(self.rounds));
        m.insert("smoke".into(), json!(self.smoke));
        if let Some(n) = &self.note {
            m.insert("note".into(), json!(n));
        }
        if let (Some(axis), Some(x)) = (&self.x_axis, self.x) {
            m.insert("x_axis".into(), json!(axis));
            m.insert("x".into(), finite(x));
        }
        if let Some(s) = &self.series {
            m.insert("series".into(), json!(s));
        }
        if let Some(s) = &self.stat {
            m.insert("stat".into(), json!(s));
        }
        Value::Object(m)
    }

    /// Reads a line back (the report generator); `None` if a required field
    /// is missing or of the wrong type.
    pub fn from_json(v: &Value) -> Option<Line> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let f = |k: &str| v.get(k).and_then(Value::as_f64);
        let goal = match v.get("goal") {
            Some(g) if g.is_object() => {
                let on = match g.get("on")?.as_str()? {
                    "ratio" => On::Ratio,
                    "difference" => On::Difference,
                    _ => return None,
                };
                let op = match g.get("op")?.as_str()? {
                    ">=" => ">=",
                    "<=" => "<=",
                    "<" => "<",
                    ">" => ">",
                    _ => return None,
                };
                Some(Goal {
                    on,
                    op,
                    value: g.get("value")?.as_f64()?,
                })
            }
            _ => None,
        };
        Some(Line {
            group: s("group")?,
            line: s("line")?,
            concurrency: u32::try_from(v.get("concurrency")?.as_u64()?).ok()?,
            concurrency_unit: s("concurrency_unit").unwrap_or_else(|| "threads".into()),
            unit: s("unit")?,
            fenced: f("fenced")?,
            baseline: f("baseline")?,
            baseline_name: s("baseline_name").unwrap_or_default(),
            difference: f("difference"),
            goal,
            rounds: v.get("rounds").and_then(Value::as_u64).unwrap_or(1) as usize,
            smoke: v.get("smoke").and_then(Value::as_bool).unwrap_or(false),
            note: s("note"),
            x_axis: s("x_axis").filter(|_| f("x").is_some()),
            x: f("x").filter(|_| v.get("x_axis").is_some_and(Value::is_string)),
            series: s("series"),
            stat: s("stat"),
        })
    }

    /// Aggregate throughput in operations per second, if the unit has one.
    pub fn throughput(&self, fenced: bool) -> Option<f64> {
        let v = if fenced { self.fenced } else { self.baseline };
        match self.unit.as_str() {
            "ns/op" if v > 0.0 => Some(1e9 / v),
            u if u.ends_with("/s") => Some(v),
            _ => None,
        }
    }
}

fn finite(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

/// Appends `line` to the file named by `FENCING_BENCH_OUT`, if set. A
/// failure to write is reported on stderr, never a panic: the bench's own
/// output still stands.
pub fn record(line: &Line) {
    let Some(path) = std::env::var_os(OUT_ENV).filter(|p| !p.is_empty()) else {
        return;
    };
    let mut text = line.to_json().to_string();
    text.push('\n');
    // One write of one line on an O_APPEND file: lines from concurrent
    // writers do not interleave.
    let written = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if let Err(e) = written {
        eprintln!(
            "bench report: cannot append to {}: {e}",
            std::path::Path::new(&path).display()
        );
    }
}

/// The median of `v` (the upper middle for an even count); NaN when empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trip_keeps_every_field() {
        let line = Line::new(
            "sqlite",
            "put (accepted)",
            4,
            "processes",
            "ops/s",
            900.0,
            1000.0,
            "raw",
        )
        .goal(Goal::ratio_at_least(0.95))
        .rounds(9)
        .note("n");
        let v = line.to_json();
        assert_eq!(v["ratio"], json!(0.9));
        assert_eq!(v["met"], json!(false));
        let back = Line::from_json(&v).unwrap();
        assert_eq!(back.to_json(), v);
    }

    #[test]
    fn curve_and_latency_fields_round_trip() {
        let line = Line::new(
            "memory",
            "acquire, 1000 scopes",
            1,
            "threads",
            "ops/s",
            9.0,
            10.0,
            "m",
        )
        .at("scopes", 1000.0)
        .series("acquire");
        let v = line.to_json();
        assert_eq!(
            (v["x_axis"].clone(), v["x"].clone()),
            (json!("scopes"), json!(1000.0))
        );
        let back = Line::from_json(&v).unwrap();
        assert_eq!(back.to_json(), v);
        let p99 = Line::new(
            "sqlite",
            "put p99",
            1,
            "processes",
            "ns/op",
            5.0,
            4.0,
            "raw",
        )
        .series("put latency")
        .stat("p99");
        let back = Line::from_json(&p99.to_json()).unwrap();
        assert_eq!((back.stat.as_deref(), back.x), (Some("p99"), None));
        // An x without its axis (or the reverse) is no point of a curve.
        let half = json!({"group":"g","line":"l","concurrency":1,"unit":"B",
                          "fenced":1.0,"baseline":2.0,"x":5});
        let l = Line::from_json(&half).unwrap();
        assert_eq!(
            (l.x, l.x_axis.as_deref(), l.throughput(true)),
            (None, None, None)
        );
    }

    #[test]
    fn difference_goal_uses_the_measured_difference() {
        let line = Line::new("c-abi", "put", 1, "threads", "ns/op", 120.0, 100.0, "rust")
            .difference(12.0)
            .goal(Goal::difference_below(15.0));
        assert_eq!(line.met(), Some(true));
        let line = line.difference(16.0);
        assert_eq!(line.met(), Some(false));
        assert_eq!(line.goal.unwrap().describe("ns/op"), "difference < 15 ns");
    }

    #[test]
    fn unknown_or_missing_fields() {
        assert!(Line::from_json(&json!({"group": "g"})).is_none());
        let v = json!({"group":"g","line":"l","concurrency":1,"unit":"ops/s",
                       "fenced":1.0,"baseline":2.0,"extra":true});
        let l = Line::from_json(&v).unwrap();
        assert_eq!(
            (l.ratio(), l.met(), l.throughput(false)),
            (0.5, None, Some(2.0))
        );
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 3.0);
        assert!(median(vec![]).is_nan());
    }
}
