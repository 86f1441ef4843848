//! Sequences of C ABI calls (the `extern "C"` functions of ffi/src, compiled
//! in through fuzz/ffi-shim) with arbitrary arguments: NULL and valid
//! pointers, empty/oversized/invalid-UTF-8 strings, any integers, buffers of
//! any size, closed and freed handles, on `memory:` stores.
//!
//! Within the C contract (a non-NULL pointer points to a live object, a
//! length never exceeds its buffer, a handle is not used after it is freed),
//! checked after every call:
//! - no call panics (libFuzzer aborts on a panic; FENCING_PANIC never shows);
//! - every status is one of the published codes;
//! - after a failure, `fencing_last_error` reports that same status;
//! - per handle and scope, tokens from `next_token`/`acquire` strictly
//!   increase and the fence never decreases.
#![no_main]

use std::collections::HashMap;
use std::ffi::{c_char, CStr};
use std::ptr;

use fencing_ffi_shim::fencing_status::{self, *};
use fencing_ffi_shim::*;
use libfuzzer_sys::fuzz_target;

/// Reads the fuzzer's bytes as a stream of choices (zeros once exhausted).
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }

    fn u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        for x in &mut b {
            *x = self.byte();
        }
        u64::from_le_bytes(b)
    }

    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let n = usize::from(self.byte()) % (max + 1);
        (0..n).map(|_| self.byte()).collect()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A string argument: NULL or a NUL-terminated buffer that lives for the call.
fn text(inp: &mut Input, last_scope: &[u8]) -> Option<Vec<u8>> {
    let mut s = match inp.byte() % 12 {
        0 => return None,
        1 => b"s".to_vec(),
        2 => b"k".to_vec(),
        3 => b"worker".to_vec(),
        4 => Vec::new(),
        5 => vec![0xff, 0xfe, b'a'], // invalid UTF-8
        6 => vec![b'x'; 257],        // one past the scope/holder limit
        7 => vec![b'y'; 1025],       // one past the key limit
        8 => vec![b'z'; 64 * 1024],  // 64 KiB
        9 => last_scope.to_vec(),
        10 => "é\u{10FFFF}".as_bytes().to_vec(),
        _ => inp.bytes(40).into_iter().filter(|&b| b != 0).collect(),
    };
    s.push(0);
    Some(s)
}

fn ptr_of(s: &Option<Vec<u8>>) -> *const c_char {
    s.as_ref().map_or(ptr::null(), |v| v.as_ptr().cast())
}

fn number(inp: &mut Input, recent: u64) -> u64 {
    match inp.byte() % 10 {
        0 => 0,
        1 => 1,
        2 => recent,
        3 => recent.wrapping_add(1),
        4 => (1 << 53) + 1,
        5 => i64::MAX as u64,
        6 => 1 << 63,
        7 => u64::MAX,
        8 => u64::from(inp.byte()),
        _ => inp.u64(),
    }
}

fn known(status: fencing_status) -> bool {
    fencing_status::ALL.contains(&status)
}

struct Handle {
    ptr: *mut fencing_store,
    /// (scope) -> last token seen issued, last fence seen.
    seen: HashMap<Vec<u8>, (u64, u64)>,
}

/// For the calls that read the last error: they never change it.
fn check_quiet(status: fencing_status, what: &str) {
    assert!(known(status), "{what}: unknown status {}", status as u32);
    assert_ne!(status, FENCING_PANIC, "{what}: the library panicked");
}

fn check(status: fencing_status, what: &str) {
    check_quiet(status, what);
    if status != FENCING_OK {
        let mut err = std::mem::MaybeUninit::<fencing_error>::uninit();
        assert_eq!(fencing_last_error(err.as_mut_ptr()), FENCING_OK);
        // SAFETY: written on FENCING_OK.
        let err = unsafe { err.assume_init() };
        assert_eq!(err.status, status, "{what}: last_error disagrees");
        assert!(!err.message.is_null());
        // SAFETY: the library's NUL-terminated text, valid until the next failure.
        let msg = unsafe { CStr::from_ptr(err.message) };
        assert!(msg.to_str().is_ok(), "{what}: message is not UTF-8");
    }
}

fn fence_value(inp: &mut Input, recent: u64, holder: &Option<Vec<u8>>) -> fencing_fence {
    fencing_fence {
        token: number(inp, recent),
        seq: number(inp, 0),
        has_seq: inp.byte() & 1 == 1,
        holder: if inp.byte() & 1 == 1 {
            ptr_of(holder)
        } else {
            ptr::null()
        },
    }
}

fuzz_target!(|data: &[u8]| {
    let mut inp = Input(data);
    let mut handles: Vec<Handle> = Vec::new();
    let mut recent: u64 = 1;
    let mut last_scope = b"s".to_vec();
    let mut calls = 0;
    while !inp.is_empty() && calls < 200 {
        calls += 1;
        let call = inp.byte() % 28;
        // A handle: an open one, or NULL.
        let pick = usize::from(inp.byte());
        let h: *const fencing_store = if handles.is_empty() || pick % 8 == 7 {
            ptr::null()
        } else {
            handles[pick % handles.len()].ptr
        };
        let slot = (!handles.is_empty() && !h.is_null()).then(|| pick % handles.len());
        let scope = text(&mut inp, &last_scope);
        let sp = ptr_of(&scope);
        let skey = scope.clone().unwrap_or_default();
        match call {
            0 => {
                if handles.len() >= 3 {
                    continue;
                }
                let url: &[u8] = match inp.byte() % 6 {
                    0 => b"memory:\0",
                    1 => b"memory:?clock=manual\0",
                    2 => b"memory:?strict=true&clock=manual\0",
                    3 => b"memory:?eager_fencing=false\0",
                    4 => b"memory:?nope=1\0",
                    _ => b"\xff\0",
                };
                let mut out: *mut fencing_store = ptr::null_mut();
                let null_out = inp.byte() % 16 == 0;
                let s = fencing_store_open(
                    url.as_ptr().cast(),
                    if null_out { ptr::null_mut() } else { &mut out },
                );
                check(s, "open");
                if s == FENCING_OK {
                    assert!(!out.is_null());
                    handles.push(Handle {
                        ptr: out,
                        seen: HashMap::new(),
                    });
                }
            }
            1 => {
                if let Some(i) = slot {
                    let handle = handles.swap_remove(i);
                    fencing_store_free(handle.ptr);
                } else {
                    fencing_store_free(ptr::null_mut());
                }
            }
            2 => check(fencing_store_close(h), "close"),
            3 => {
                let mut t = 0u64;
                let s = fencing_next_token(
                    h,
                    sp,
                    if inp.byte() % 16 == 0 {
                        ptr::null_mut()
                    } else {
                        &mut t
                    },
                );
                check(s, "next_token");
                if s == FENCING_OK {
                    let seen = handles[slot.unwrap()].seen.entry(skey.clone()).or_default();
                    assert!(t > seen.0, "token {t} not above {}", seen.0);
                    seen.0 = t;
                    recent = t;
                    last_scope = skey[..skey.len() - 1].to_vec();
                }
            }
            4 => {
                let mut c = 0u64;
                let floor = number(&mut inp, recent);
                check(
                    fencing_advance_counter(h, sp, floor, &mut c),
                    "advance_counter",
                );
            }
            5 | 6 => {
                let holder = text(&mut inp, &last_scope);
                let ttl = number(&mut inp, 1000);
                let mut lease = std::mem::MaybeUninit::<fencing_lease>::uninit();
                let out = if inp.byte() % 16 == 0 {
                    ptr::null_mut()
                } else {
                    lease.as_mut_ptr()
                };
                let s = if call == 5 {
                    fencing_acquire(h, sp, ptr_of(&holder), ttl, out)
                } else {
                    let timeout = u64::from(inp.byte() % 4);
                    fencing_acquire_wait(h, sp, ptr_of(&holder), ttl, timeout, out)
                };
                check(s, "acquire");
                if s == FENCING_OK {
                    // SAFETY: written on FENCING_OK.
                    let lease = unsafe { lease.assume_init() };
                    let seen = handles[slot.unwrap()].seen.entry(skey.clone()).or_default();
                    assert!(
                        lease.token > seen.0,
                        "lease token {} not above {}",
                        lease.token,
                        seen.0
                    );
                    seen.0 = lease.token;
                    recent = lease.token;
                    // SAFETY: the holder array is NUL-terminated.
                    let got = unsafe { CStr::from_ptr(lease.holder.as_ptr()) };
                    assert_eq!(Some(got.to_bytes_with_nul()), holder.as_deref());
                    last_scope = skey[..skey.len() - 1].to_vec();
                }
            }
            7 => {
                let token = number(&mut inp, recent);
                let ttl = number(&mut inp, 1000);
                let mut lease = std::mem::MaybeUninit::<fencing_lease>::uninit();
                check(
                    fencing_renew(h, sp, token, ttl, lease.as_mut_ptr()),
                    "renew",
                );
            }
            8 => {
                let token = number(&mut inp, recent);
                let mut released = false;
                check(fencing_release(h, sp, token, &mut released), "release");
            }
            9 | 10 | 11 | 12 | 13 => {
                let key = text(&mut inp, &last_scope);
                let holder = text(&mut inp, &last_scope);
                let fence = fence_value(&mut inp, recent, &holder);
                let value = inp.bytes(64);
                let value_ptr = if inp.byte() % 8 == 0 {
                    ptr::null()
                } else {
                    value.as_ptr()
                };
                let fence_ptr: *const fencing_fence = if inp.byte() % 16 == 0 {
                    ptr::null()
                } else {
                    &fence
                };
                let mut receipt = fencing_receipt::default();
                let op = fencing_op {
                    kind: u32::from(inp.byte() % 4),
                    key: ptr_of(&key),
                    value: value_ptr,
                    value_len: value.len(),
                    has_expected_version: inp.byte() & 1 == 1,
                    expected_version: number(&mut inp, 1),
                };
                let (s, what) = match call {
                    9 => (
                        fencing_put(
                            h,
                            sp,
                            ptr_of(&key),
                            value_ptr,
                            value.len(),
                            fence_ptr,
                            &mut receipt,
                        ),
                        "put",
                    ),
                    10 => (
                        fencing_delete(h, sp, ptr_of(&key), fence_ptr, &mut receipt),
                        "delete",
                    ),
                    11 => (
                        fencing_execute(h, sp, fence_ptr, &op, &mut receipt),
                        "execute",
                    ),
                    12 => {
                        let n = usize::from(inp.byte() % 4);
                        let ops = vec![op; n];
                        let mut receipts = vec![fencing_receipt::default(); n];
                        let ops_ptr = if n == 0 && inp.byte() & 1 == 1 {
                            ptr::null()
                        } else {
                            ops.as_ptr()
                        };
                        let s = fencing_apply(h, sp, fence_ptr, ops_ptr, n, receipts.as_mut_ptr());
                        if s == FENCING_OK {
                            assert!(receipts.iter().all(|r| r.token == fence.token));
                        }
                        (s, "apply")
                    }
                    _ => (fencing_claim(h, sp, fence_ptr), "claim"),
                };
                check(s, what);
                if s == FENCING_OK {
                    if call != 12 && call != 13 {
                        assert_eq!(receipt.token, fence.token, "{what}: receipt token");
                    }
                    let seen = handles[slot.unwrap()].seen.entry(skey.clone()).or_default();
                    assert!(
                        fence.token >= seen.1,
                        "{what}: accepted {} below fence {}",
                        fence.token,
                        seen.1
                    );
                    seen.1 = fence.token;
                }
            }
            14 => {
                let key = text(&mut inp, &last_scope);
                let holder = text(&mut inp, &last_scope);
                let fence = fence_value(&mut inp, recent, &holder);
                let fence_ptr: *const fencing_fence = if inp.byte() & 1 == 1 {
                    ptr::null()
                } else {
                    &fence
                };
                let mut entry: *mut fencing_entry = ptr::null_mut();
                let s = fencing_get(h, sp, ptr_of(&key), fence_ptr, &mut entry);
                check(s, "get");
                if s == FENCING_OK && !entry.is_null() {
                    let len = fencing_entry_value_len(entry);
                    let v = fencing_entry_value(entry);
                    assert!(len == 0 || !v.is_null());
                    // SAFETY: the entry owns `len` bytes at `v`.
                    let bytes = unsafe { std::slice::from_raw_parts(v, len) };
                    // Touch every byte (ASan checks the entry owns them).
                    std::hint::black_box(bytes.iter().fold(0u8, |a, b| a.wrapping_add(*b)));
                    assert!(fencing_entry_version(entry) >= 1);
                    assert!(fencing_entry_token(entry) >= 1);
                    fencing_entry_free(entry);
                }
            }
            15 => {
                let after = text(&mut inp, &last_scope);
                let limit = usize::try_from(number(&mut inp, 10)).unwrap_or(usize::MAX);
                let mut page: *mut fencing_page = ptr::null_mut();
                let s = fencing_list(h, sp, ptr_of(&after), limit, &mut page);
                check(s, "list");
                if s == FENCING_OK {
                    let n = fencing_page_len(page);
                    for i in 0..=n {
                        let k = fencing_page_key(page, i);
                        assert_eq!(k.is_null(), i == n, "page key {i} of {n}");
                    }
                    let _ = fencing_page_next(page);
                    fencing_page_free(page);
                }
            }
            16 => {
                let mut f = 0u64;
                let s = fencing_fence_of(h, sp, &mut f);
                check(s, "fence_of");
                if s == FENCING_OK {
                    let seen = handles[slot.unwrap()].seen.entry(skey.clone()).or_default();
                    assert!(f >= seen.1, "fence {f} below {}", seen.1);
                    seen.1 = f;
                }
            }
            17 => {
                let mut info = std::mem::MaybeUninit::<fencing_scope_info>::uninit();
                let s = fencing_scope_status(h, sp, info.as_mut_ptr());
                check(s, "scope_status");
                if s == FENCING_OK {
                    // SAFETY: written on FENCING_OK.
                    let info = unsafe { info.assume_init() };
                    let seen = handles[slot.unwrap()].seen.entry(skey.clone()).or_default();
                    assert!(info.counter >= seen.0 && info.fence >= seen.1);
                }
            }
            18 => {
                let mut retired = false;
                check(fencing_retire(h, sp, &mut retired), "retire");
            }
            19 => check(
                fencing_advance_clock(h, number(&mut inp, 1000)),
                "advance_clock",
            ),
            20 => {
                let mut m = fencing_metrics::default();
                check(fencing_metrics_snapshot(h, &mut m), "metrics");
            }
            21 => {
                let mut list: *mut fencing_rejection_list = ptr::null_mut();
                let s = fencing_rejections(h, &mut list);
                check(s, "rejections");
                if s == FENCING_OK {
                    let n = fencing_rejection_list_len(list);
                    assert!(n <= 64);
                    let mut r = std::mem::MaybeUninit::<fencing_rejection>::uninit();
                    let i = usize::from(inp.byte());
                    let s = fencing_rejection_list_get(list, i, r.as_mut_ptr());
                    check(s, "rejection_list_get");
                    assert_eq!(s == FENCING_OK, i < n);
                    fencing_rejection_list_free(list);
                }
            }
            22 => {
                let mut text_out: *mut c_char = ptr::null_mut();
                let s = fencing_metrics_text(h, &mut text_out);
                check(s, "metrics_text");
                if s == FENCING_OK {
                    fencing_string_free(text_out);
                }
            }
            23 => {
                let mut v = 0u64;
                let out = if inp.byte() % 16 == 0 {
                    ptr::null_mut()
                } else {
                    &mut v as *mut u64
                };
                let s = fencing_token_parse(sp, out);
                check(s, "token_parse");
                if s == FENCING_OK {
                    let t = CStr::from_bytes_until_nul(scope.as_deref().unwrap()).unwrap();
                    assert_eq!(t.to_str().unwrap(), v.to_string());
                }
            }
            24 => {
                let value = number(&mut inp, recent);
                let len = usize::from(inp.byte() % 24);
                let mut buf = vec![0x55 as c_char; len];
                let mut n = usize::MAX;
                let bp = if inp.byte() % 16 == 0 {
                    ptr::null_mut()
                } else {
                    buf.as_mut_ptr()
                };
                let s = fencing_token_format(value, bp, len, &mut n);
                check(s, "token_format");
                if s == FENCING_OK {
                    assert_eq!(n, value.to_string().len());
                    assert_eq!(buf[n], 0);
                }
            }
            25 => {
                let len = usize::from(inp.byte());
                let mut buf = vec![0 as c_char; len];
                let mut n = 0usize;
                check_quiet(
                    fencing_last_error_message(buf.as_mut_ptr(), len, &mut n),
                    "last_error_message",
                );
            }
            26 => {
                let name =
                    fencing_status_name(u32::from(inp.byte()) | (u32::from(inp.byte() & 1) << 8));
                if !name.is_null() {
                    // SAFETY: static NUL-terminated text.
                    assert!(unsafe { CStr::from_ptr(name) }.to_str().is_ok());
                }
            }
            _ => {
                // NULL out-parameters everywhere they are required.
                check(fencing_fence_of(h, sp, ptr::null_mut()), "fence_of(NULL)");
                check(fencing_scope_status(h, sp, ptr::null_mut()), "status(NULL)");
                check(
                    fencing_metrics_text(h, ptr::null_mut()),
                    "metrics_text(NULL)",
                );
                check_quiet(fencing_last_error(ptr::null_mut()), "last_error(NULL)");
                let _ = fencing_version();
            }
        }
    }
    for handle in handles {
        fencing_store_free(handle.ptr);
    }
});
