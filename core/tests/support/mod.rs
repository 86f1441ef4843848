//! Helpers shared by the integration tests. Each test file uses a part.
#![allow(dead_code)]

use std::path::Path;

/// The `sqlite:` URL of a file.
pub fn sqlite_url(path: &Path) -> String {
    format!("sqlite:{}", path.display())
}

/// splitmix64: small, seedable and good enough to pick moments, threads and
/// children (no extra dependency).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform-ish in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Uniform-ish in `lo..=hi`.
    pub fn range(&mut self, (lo, hi): (u64, u64)) -> u64 {
        lo + self.below(hi - lo + 1)
    }
}
