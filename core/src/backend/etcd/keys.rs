//! Where an etcd store keeps what (docs/etcd.md, "Keys"). Every key starts
//! with the URL's prefix and a NUL, which no key a user writes under the
//! same prefix with a `/` can share; scope names and keys hold no NUL.

pub(crate) struct Keys {
    root: Vec<u8>,
}

impl Keys {
    pub fn new(prefix: &str) -> Keys {
        let mut root = prefix.as_bytes().to_vec();
        root.push(0);
        Keys { root }
    }

    fn key(&self, kind: u8, parts: &[&str]) -> Vec<u8> {
        let mut key = self.root.clone();
        key.push(kind);
        for part in parts {
            key.push(0);
            key.extend_from_slice(part.as_bytes());
        }
        key
    }

    /// The layout's version, written once.
    pub fn schema(&self) -> Vec<u8> {
        self.key(b'v', &[])
    }

    /// Where the latest failover step moved every scope (absent: 0).
    pub fn base(&self) -> Vec<u8> {
        self.key(b'b', &[])
    }

    /// The store's ceiling: at or above every counter, fence and floor
    /// (`rules::ceiling_covering`; absent: 0).
    pub fn ceiling(&self) -> Vec<u8> {
        self.key(b'h', &[])
    }

    /// Present once a handle opened the store with `jumps=unbounded`: its
    /// jump room is then the whole token space, for good.
    pub fn jumps(&self) -> Vec<u8> {
        self.key(b'j', &[])
    }

    /// The store's manual clock (`clock=manual`, for tests), in ms.
    pub fn clock(&self) -> Vec<u8> {
        self.key(b'c', &[])
    }

    /// The scope's counter, fence and lease record (`record.rs`).
    pub fn scope(&self, scope: &str) -> Vec<u8> {
        self.key(b's', &[scope])
    }

    /// Every scope record: the range `scopes()..end(scopes())`.
    pub fn scopes(&self) -> Vec<u8> {
        let mut key = self.key(b's', &[]);
        key.push(0);
        key
    }

    /// The scope's lease key, attached to the holder's etcd lease: it
    /// exists while the lease is live, and etcd deletes it when the lease
    /// runs out (docs/etcd.md, "Time").
    pub fn lease(&self, scope: &str) -> Vec<u8> {
        self.key(b'l', &[scope])
    }

    pub fn entry(&self, scope: &str, key: &str) -> Vec<u8> {
        self.key(b'e', &[scope, key])
    }

    /// The scope's entries: the range `entries(s)..end(entries(s))`.
    pub fn entries(&self, scope: &str) -> Vec<u8> {
        let mut key = self.key(b'e', &[scope]);
        key.push(0);
        key
    }

    /// The floor that retirements left for a bucket of scope names.
    pub fn floor(&self, bucket: usize) -> Vec<u8> {
        self.key(b'f', &[&bucket.to_string()])
    }

    /// The scope's last recorded rejection (docs/operations.md).
    pub fn rejection(&self, scope: &str) -> Vec<u8> {
        self.key(b'r', &[scope])
    }

    /// Every recorded rejection: the range `rejections()..end(rejections())`.
    pub fn rejections(&self) -> Vec<u8> {
        let mut key = self.key(b'r', &[]);
        key.push(0);
        key
    }

    /// The name after `prefix` in a key of a range.
    pub fn name_after<'k>(prefix: &[u8], key: &'k [u8]) -> Option<&'k [u8]> {
        key.strip_prefix(prefix)
    }
}

/// The end of the range of every key starting with `prefix` (which ends in
/// a NUL, so adding one to its last byte cannot overflow).
pub(crate) fn end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    if let Some(last) = end.last_mut() {
        *last += 1;
    }
    end
}
