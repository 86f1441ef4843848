//! Store URLs through `Store::open` (the URL parser is private to the core).
//!
//! Never creates a file or opens a connection: a `sqlite:` URL has its path
//! replaced by one inside a directory that cannot exist (under /proc), so the
//! parser and option handling run in full but the open itself must fail;
//! `postgres://`/`postgresql://` URLs are skipped (they would try to connect).
#![no_main]

use fencing::{ErrorCode, Store};
use libfuzzer_sys::fuzz_target;

const NOWHERE: &str = "/proc/fencing-fuzz-no-such-dir/x.db";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lower = text.to_ascii_lowercase();
    if lower.starts_with("postgres") {
        return;
    }
    let url = match text.strip_prefix("sqlite:") {
        Some(rest) => {
            let (path, query) = match rest.split_once('?') {
                Some((p, q)) => (p, Some(q)),
                None => (rest, None),
            };
            // Keep the cases the parser must refuse by itself.
            let path = if path.is_empty() || path.contains('\0') {
                path.to_owned()
            } else {
                NOWHERE.to_owned()
            };
            match query {
                Some(q) => format!("sqlite:{path}?{q}"),
                None => format!("sqlite:{path}"),
            }
        }
        None => text.to_owned(),
    };
    match Store::open(&url) {
        Ok(store) => {
            // Only memory: can open here, and only below the URL size limit.
            assert!(url.starts_with("memory:"), "{url:?} opened");
            assert!(url.len() <= 4096, "an oversized URL opened");
            let base = url.split_once('?').map_or(url.as_str(), |(b, _)| b);
            assert_eq!(base, "memory:", "{url:?} opened");
            // A fresh store works and starts at token 1.
            assert_eq!(store.next_token("s").unwrap().get(), 1);
            store.close();
            assert_eq!(store.next_token("s").unwrap_err().code(), ErrorCode::Closed);
        }
        Err(e) => {
            let code = e.code();
            if url.starts_with("sqlite:") && code == ErrorCode::Backend {
                // The parser accepted it; the open failed on the missing directory.
                assert!(url.contains(NOWHERE), "{url:?}: {e}");
            } else {
                assert_eq!(code, ErrorCode::InvalidArgument, "{url:?}: {e}");
            }
            // Messages echo input clipped, never the whole hostile URL.
            assert!(e.to_string().len() < 1024, "message too long for {url:?}");
        }
    }
});
