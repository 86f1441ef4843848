//! The SQL backends' source text: the constants both SQL dialects read, filled
//! in from their one Rust home, so that a limit or a rule's number is never
//! restated by hand in SQL (CONTRIBUTING.md, "One home per rule").

use crate::events::{MAX_EVENTS_LIMIT, RECORD_INTERVAL, REJECTION_LOG};
use crate::lease_watch::WATCH_LIFE;
use crate::limits::{
    MAX_BATCH_OPS, MAX_HOLDER_BYTES, MAX_KEY_BYTES, MAX_LIST_LIMIT, MAX_SCOPE_BYTES, MAX_SEQ,
    MAX_TTL, MAX_VALUE_BYTES, MIN_TTL,
};
use crate::rules::{
    ttl_ms, CEILING_HEADROOM, FAILOVER_STEP, FLOOR_BUCKETS, FNV32_OFFSET, FNV32_PRIME, JUMP_ROOM,
    LAST_WRITE_STEP_MS, MAX_AUTOMATIC_STEPS, STEPS_PER_TIMELINE,
};
use crate::token::Token;
use crate::waiting::{PLACE_LIFE_MAX, PLACE_LIFE_MIN, REFRESH_QUARTERS, SLEEP_PARTS};

/// Every `@name@` the SQL files may use besides `@schema@`, with its value.
pub(crate) fn constants() -> [(&'static str, u64); 30] {
    [
        ("max_token", Token::MAX.get()),
        ("max_seq", MAX_SEQ),
        ("max_scope_bytes", MAX_SCOPE_BYTES as u64),
        ("max_key_bytes", MAX_KEY_BYTES as u64),
        ("max_holder_bytes", MAX_HOLDER_BYTES as u64),
        ("max_value_bytes", MAX_VALUE_BYTES as u64),
        ("max_batch_ops", MAX_BATCH_OPS as u64),
        ("max_list_limit", MAX_LIST_LIMIT as u64),
        ("max_events_limit", MAX_EVENTS_LIMIT as u64),
        ("min_ttl_ms", ttl_ms(MIN_TTL)),
        ("max_ttl_ms", ttl_ms(MAX_TTL)),
        ("floor_buckets", FLOOR_BUCKETS as u64),
        // The bucket is the top log2(FLOOR_BUCKETS) bits of a 32-bit hash.
        (
            "bucket_shift",
            u64::from(32 - FLOOR_BUCKETS.trailing_zeros()),
        ),
        ("fnv32_offset", u64::from(FNV32_OFFSET)),
        ("fnv32_prime", u64::from(FNV32_PRIME)),
        // The 32-bit hash is kept below 2^32 by taking it modulo this.
        ("fnv32_modulus", u64::from(u32::MAX) + 1),
        ("ceiling_headroom", CEILING_HEADROOM),
        ("jump_room", JUMP_ROOM),
        ("failover_step", FAILOVER_STEP),
        ("max_automatic_steps", MAX_AUTOMATIC_STEPS),
        ("steps_per_timeline", STEPS_PER_TIMELINE),
        ("last_write_step_ms", LAST_WRITE_STEP_MS),
        ("rejection_log", REJECTION_LOG as u64),
        ("record_interval_ms", RECORD_INTERVAL.as_millis() as u64),
        ("place_life_min_ms", ttl_ms(PLACE_LIFE_MIN)),
        ("place_life_max_ms", ttl_ms(PLACE_LIFE_MAX)),
        ("watch_life_ms", ttl_ms(WATCH_LIFE)),
        ("sleep_parts", SLEEP_PARTS),
        ("refresh_quarters", REFRESH_QUARTERS),
        ("last_ms", crate::clock::LAST_MS),
    ]
}

/// `text` with every constant filled in (`@schema@`, if any, is left for
/// the caller: the hash of a function file must not depend on it).
pub(crate) fn fill(text: &str) -> String {
    let mut out = text.to_owned();
    for (name, value) in constants() {
        out = out.replace(&format!("@{name}@"), &value.to_string());
    }
    out
}

/// A stable 64-bit FNV-1a hash, printed in hex: what a database records of
/// the functions or triggers it has installed.
pub(crate) fn hash(text: &str) -> String {
    let h = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{h:016x}")
}

/// The fencing version of this build, recorded beside what it installs.
pub(crate) const OURS: &str = env!("CARGO_PKG_VERSION");

/// A fencing version, comparable: "0.1.0" → [0, 1, 0].
fn release(version: &str) -> Vec<u64> {
    version.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

/// Whether SQL with hash `ours` should replace what a database has
/// installed (its hash and the version that wrote it): when it differs and
/// no newer fencing wrote it. An older build never downgrades a newer one's.
pub(crate) fn should_install(ours: &str, installed: Option<(String, String)>) -> bool {
    match installed {
        None => true,
        Some((hash, version)) => hash != ours && release(&version) <= release(OURS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After filling, no `@name@` is left but the schema's, and no bare
    /// number that has a Rust home is written in the SQL by hand.
    pub(crate) fn check_filled(file: &str, text: &str) {
        let filled = fill(text).replace("@schema@", "s");
        let mut rest = filled.as_str();
        while let Some(at) = rest.find('@') {
            let after = &rest[at + 1..];
            let word: String = after
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            assert!(
                !after[word.len()..].starts_with('@') || word.is_empty(),
                "{file}: @{word}@ has no value in sql_text::constants"
            );
            rest = after;
        }
        let numbers: Vec<&str> = text
            .split(|c: char| !c.is_ascii_digit())
            .filter(|n| !n.is_empty())
            .collect();
        for (name, value) in constants() {
            let value = value.to_string();
            assert!(
                value.len() < 3 || !numbers.contains(&value.as_str()),
                "{file}: {value} written by hand; use @{name}@"
            );
        }
    }

    #[test]
    fn every_sql_file_takes_its_constants_from_rust() {
        for (file, text) in crate::backend::sql_files() {
            check_filled(file, text);
        }
    }

    fn installed(hash: &str, version: &str) -> Option<(String, String)> {
        Some((hash.into(), version.into()))
    }

    #[test]
    fn sql_is_installed_when_missing_or_different_never_downgraded() {
        assert!(should_install("h", None));
        assert!(!should_install("h", installed("h", OURS)));
        // Another build of the same release, or an older release: ours win.
        assert!(should_install("h", installed("g", OURS)));
        assert!(should_install("h", installed("g", "0.0.9")));
        // A newer release's stays.
        assert!(!should_install("h", installed("g", "999.0.0")));
        assert!(release("0.10.0") > release("0.9.1"));
    }

    #[test]
    fn the_hash_is_stable() {
        // Recorded in databases: it must never change for the same text.
        assert_eq!(hash(""), "cbf29ce484222325");
        assert_eq!(hash("a"), "af63dc4c8601ec8c");
    }
}
