//! The values that cross the public API.

use std::time::{Duration, SystemTime};

use crate::token::Token;

/// What a write (or a checked read) presents to the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fence {
    pub token: Token,
    /// Operation number inside this token's generation, for holders whose
    /// writes can arrive out of order. `0..=2^63-1`.
    pub seq: Option<u64>,
    /// Who presents it; recorded with rejections, never trusted for safety.
    pub holder: Option<String>,
}

impl Fence {
    pub fn new(token: Token) -> Fence {
        Fence {
            token,
            seq: None,
            holder: None,
        }
    }

    pub fn with_seq(mut self, seq: u64) -> Fence {
        self.seq = Some(seq);
        self
    }

    pub fn with_holder(mut self, holder: impl Into<String>) -> Fence {
        self.holder = Some(holder.into());
        self
    }
}

impl From<Token> for Fence {
    fn from(token: Token) -> Fence {
        Fence::new(token)
    }
}

/// The fence a lease's holder presents: its token and its holder, so that
/// `&Fence::from(&lease)` (or `&(&lease).into()`) is all a write needs.
impl From<&Lease> for Fence {
    fn from(lease: &Lease) -> Fence {
        Fence::new(lease.token).with_holder(lease.holder.clone())
    }
}

/// As for a [`Lease`]: the guard's lease as last renewed (same token).
impl From<&crate::LeaseGuard> for Fence {
    fn from(guard: &crate::LeaseGuard) -> Fence {
        Fence::from(&guard.lease())
    }
}

/// Permission with a deadline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    pub scope: String,
    pub holder: String,
    pub token: Token,
    pub ttl: Duration,
    /// On the store's clock, expressed as wall-clock time.
    pub expires_at: SystemTime,
    /// Time left when the store produced this value, on the store's own
    /// clock (so client clock skew does not distort it).
    pub remaining: Duration,
}

/// A stored value and the generation that wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    pub value: Vec<u8>,
    /// 1 on create, +1 on every accepted write.
    pub version: u64,
    /// The token of the write that stored this version.
    pub token: Token,
}

/// The outcome of one accepted put or delete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Receipt {
    /// The entry's version after the operation; 0 after a delete (the entry
    /// no longer exists, as `expected_version = 0` means "must not exist").
    pub version: u64,
    /// The token the write was accepted with.
    pub token: Token,
}

/// One write of a batch (or a single conditional write).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Put {
        key: String,
        value: Vec<u8>,
        expected_version: Option<u64>,
    },
    Delete {
        key: String,
        expected_version: Option<u64>,
    },
}

impl Op {
    pub fn put(key: impl Into<String>, value: impl Into<Vec<u8>>) -> Op {
        Op::Put {
            key: key.into(),
            value: value.into(),
            expected_version: None,
        }
    }

    pub fn delete(key: impl Into<String>) -> Op {
        Op::Delete {
            key: key.into(),
            expected_version: None,
        }
    }

    /// Only apply when the entry is at `version` (0: must not exist).
    pub fn if_version(mut self, version: u64) -> Op {
        match &mut self {
            Op::Put {
                expected_version, ..
            }
            | Op::Delete {
                expected_version, ..
            } => *expected_version = Some(version),
        }
        self
    }

    pub fn key(&self) -> &str {
        match self {
            Op::Put { key, .. } | Op::Delete { key, .. } => key,
        }
    }

    pub(crate) fn as_ref(&self) -> OpRef<'_> {
        match self {
            Op::Put {
                key,
                value,
                expected_version,
            } => OpRef {
                key,
                value: Some(value),
                expected_version: *expected_version,
            },
            Op::Delete {
                key,
                expected_version,
            } => OpRef {
                key,
                value: None,
                expected_version: *expected_version,
            },
        }
    }

    pub fn expected_version(&self) -> Option<u64> {
        match self {
            Op::Put {
                expected_version, ..
            }
            | Op::Delete {
                expected_version, ..
            } => *expected_version,
        }
    }
}

/// A borrowed operation, as backends take it: a single put reaches the
/// backend without copying its key or value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OpRef<'a> {
    pub key: &'a str,
    /// `None` deletes.
    pub value: Option<&'a [u8]>,
    pub expected_version: Option<u64>,
}

/// One page of a scope's keys, in byte order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Page {
    pub keys: Vec<String>,
    /// Pass as `after` to read the next page; `None` on the last page.
    pub next: Option<String>,
}

impl Page {
    /// A page from up to `limit + 1` keys in order: the extra key, if
    /// present, only tells that there is a next page.
    pub(crate) fn from_keys(mut keys: Vec<String>, limit: usize) -> Page {
        let next = if keys.len() > limit {
            keys.truncate(limit);
            keys.last().cloned()
        } else {
            None
        };
        Page { keys, next }
    }
}

/// Everything known about one scope, for operators.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeStatus {
    /// The greatest token issued (0 = none).
    pub counter: u64,
    /// The greatest token accepted (0 = none).
    pub fence: u64,
    /// The current, unexpired lease.
    pub lease: Option<Lease>,
    pub entries: u64,
}
