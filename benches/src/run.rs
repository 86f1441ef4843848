//! How a bench was asked to run, and what every SQLite baseline opens: one
//! home for what each bench in `benches/benches/` would otherwise repeat.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

/// The depth and the filter a bench was started with. `cargo bench` passes
/// `--bench`; `cargo test --benches` does not, and then every path runs once
/// (smoke), as it does with `--smoke` or `FENCING_BENCH_SMOKE=1`.
pub struct Args {
    pub depth: Depth,
    /// The first argument that is not an option: only the cases it names.
    pub filter: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    Smoke,
    Quick,
    Full,
}

impl Args {
    pub fn from_env() -> Args {
        Args::parse(std::env::args().skip(1).collect())
    }

    fn parse(args: Vec<String>) -> Args {
        let has = |flag: &str| args.iter().any(|a| a == flag);
        let depth = if !has("--bench")
            || has("--smoke")
            || std::env::var("FENCING_BENCH_SMOKE").as_deref() == Ok("1")
        {
            Depth::Smoke
        } else if has("--quick") {
            Depth::Quick
        } else {
            Depth::Full
        };
        Args {
            depth,
            filter: args.iter().find(|a| !a.starts_with("--")).cloned(),
        }
    }

    pub fn smoke(&self) -> bool {
        self.depth == Depth::Smoke
    }

    pub fn quick(&self) -> bool {
        self.depth == Depth::Quick
    }

    /// The value for this depth.
    pub fn pick<T>(&self, smoke: T, quick: T, full: T) -> T {
        match self.depth {
            Depth::Smoke => smoke,
            Depth::Quick => quick,
            Depth::Full => full,
        }
    }
}

/// A raw baseline's SQLite connection, with the pragmas the library uses
/// (WAL, synchronous=FULL), so the two sides pay for the same durability.
pub fn raw_sqlite(path: &Path) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))
        .unwrap();
    conn.execute_batch("PRAGMA synchronous=FULL").unwrap();
    conn
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Args {
        Args::parse(list.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn depth_and_filter() {
        assert!(args(&[]).smoke());
        assert!(args(&["--bench", "--smoke"]).smoke());
        assert!(args(&["--bench", "--quick"]).quick());
        assert_eq!(args(&["--bench"]).pick(1, 2, 3), 3);
        assert_eq!(args(&["--bench", "put"]).filter.as_deref(), Some("put"));
    }
}
