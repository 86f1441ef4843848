//! Results that own memory: an entry (`fencing_get`), a page of keys
//! (`fencing_list`), the rejection history (`fencing_rejections`) and
//! library-allocated text. Each is freed by its own `fencing_*_free`, which
//! accepts NULL.

use std::ffi::{c_char, CString};
use std::ptr;
use std::time::UNIX_EPOCH;

use fencing::{Entry, Error, Page, Rejection};

use crate::args;
use crate::boundary::{boundary, boundary_or, c_text, Failure};
use crate::status::fencing_status;

/// A stored entry, owned by the caller until `fencing_entry_free`.
pub struct fencing_entry {
    entry: Entry,
}

impl fencing_entry {
    pub(crate) fn boxed(entry: Entry) -> *mut fencing_entry {
        Box::into_raw(Box::new(fencing_entry { entry }))
    }
}

fn entry_ref<'a>(e: *const fencing_entry) -> Option<&'a Entry> {
    args::object(e, "entry").ok().map(|e| &e.entry)
}

/// The entry's value: `fencing_entry_value_len` bytes, valid until the entry
/// is freed. Not NUL-terminated (values are bytes). NULL for a NULL entry;
/// never dereference it when the length is 0.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_entry_value(entry: *const fencing_entry) -> *const u8 {
    boundary_or(ptr::null(), || {
        entry_ref(entry).map_or(ptr::null(), |e| e.value.as_ptr())
    })
}

/// The length of the entry's value in bytes (0 for a NULL entry).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_entry_value_len(entry: *const fencing_entry) -> usize {
    boundary_or(0, || entry_ref(entry).map_or(0, |e| e.value.len()))
}

/// The entry's version: 1 on create, +1 on every accepted write (0 for a
/// NULL entry).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_entry_version(entry: *const fencing_entry) -> u64 {
    boundary_or(0, || entry_ref(entry).map_or(0, |e| e.version))
}

/// The token of the write that stored this version (0 for a NULL entry).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_entry_token(entry: *const fencing_entry) -> u64 {
    boundary_or(0, || entry_ref(entry).map_or(0, |e| e.token.get()))
}

/// Frees an entry from `fencing_get`. NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_entry_free(entry: *mut fencing_entry) {
    boundary_or((), || args::free_box(entry))
}

/// One page of a scope's keys, owned by the caller until `fencing_page_free`.
pub struct fencing_page {
    keys: Vec<CString>,
    next: Option<CString>,
}

impl fencing_page {
    pub(crate) fn boxed(page: Page) -> Result<*mut fencing_page, Failure> {
        let key = |k: String| {
            CString::new(k).map_err(|_| {
                Failure::from(Error::backend(
                    fencing::BackendErrorKind::Corrupt,
                    "the store returned a key with NUL",
                ))
            })
        };
        let keys = page.keys.into_iter().map(key).collect::<Result<_, _>>()?;
        let next = page.next.map(key).transpose()?;
        Ok(Box::into_raw(Box::new(fencing_page { keys, next })))
    }
}

fn page_ref<'a>(p: *const fencing_page) -> Option<&'a fencing_page> {
    args::object(p, "page").ok()
}

/// The number of keys on the page (0 for NULL).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_page_len(page: *const fencing_page) -> usize {
    boundary_or(0, || page_ref(page).map_or(0, |p| p.keys.len()))
}

/// Key `index` (in byte order), NUL-terminated UTF-8 valid until the page is
/// freed; NULL when `index` is out of range or the page is NULL.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_page_key(page: *const fencing_page, index: usize) -> *const c_char {
    boundary_or(ptr::null(), || {
        page_ref(page)
            .and_then(|p| p.keys.get(index))
            .map_or(ptr::null(), |k| k.as_ptr())
    })
}

/// What to pass as `after` to read the next page; NULL on the last page.
/// Valid until the page is freed.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_page_next(page: *const fencing_page) -> *const c_char {
    boundary_or(ptr::null(), || {
        page_ref(page)
            .and_then(|p| p.next.as_ref())
            .map_or(ptr::null(), |k| k.as_ptr())
    })
}

/// Frees a page from `fencing_list`. NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_page_free(page: *mut fencing_page) {
    boundary_or((), || args::free_box(page))
}

/// One rejected fenced operation (STALE_TOKEN or SEQUENCE_OUT_OF_ORDER).
/// Strings are NUL-terminated UTF-8 owned by the list they came from.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fencing_rejection {
    /// `FENCING_STALE_TOKEN` or `FENCING_SEQUENCE_OUT_OF_ORDER`.
    pub code: fencing_status,
    pub scope: *const c_char,
    /// The key written, when the operation named exactly one; else NULL.
    pub key: *const c_char,
    /// The presenting holder, when the fence named one; else NULL.
    pub holder: *const c_char,
    pub presented: u64,
    /// The scope's fence at the time.
    pub current: u64,
    /// The seq presented, when `has_seq`.
    pub seq: u64,
    pub has_seq: bool,
    /// When, in milliseconds since the Unix epoch.
    pub at_ms: u64,
}

struct OwnedRejection {
    code: fencing_status,
    scope: CString,
    key: Option<CString>,
    holder: Option<CString>,
    presented: u64,
    current: u64,
    seq: Option<u64>,
    at_ms: u64,
}

/// The last rejections of a store handle, oldest first, owned by the caller
/// until `fencing_rejection_list_free`.
pub struct fencing_rejection_list {
    items: Vec<OwnedRejection>,
}

impl fencing_rejection_list {
    pub(crate) fn boxed(rejections: &[Rejection]) -> *mut fencing_rejection_list {
        let items = rejections
            .iter()
            .map(|r| OwnedRejection {
                code: fencing_status::from_code(r.code),
                scope: c_text(&r.scope),
                key: r.key.as_deref().map(c_text),
                holder: r.holder.as_deref().map(c_text),
                presented: r.presented.get(),
                current: r.current,
                seq: r.seq,
                at_ms: r.at.duration_since(UNIX_EPOCH).map_or(0, args::millis),
            })
            .collect();
        Box::into_raw(Box::new(fencing_rejection_list { items }))
    }
}

/// The number of rejections in the list (0 for NULL).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_rejection_list_len(list: *const fencing_rejection_list) -> usize {
    boundary_or(0, || {
        args::object(list, "list").map_or(0, |l| l.items.len())
    })
}

/// Writes rejection `index` (0 = oldest) to `*out`; its strings stay valid
/// until the list is freed. INVALID_ARGUMENT when `index` is out of range.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_rejection_list_get(
    list: *const fencing_rejection_list,
    index: usize,
    out: *mut fencing_rejection,
) -> fencing_status {
    boundary(|| {
        let list = args::object(list, "list")?;
        let out = args::out(out, "out")?;
        let r = list.items.get(index).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "index {index} is out of range: the list holds {}",
                list.items.len()
            ))
        })?;
        let text = |s: &Option<CString>| s.as_ref().map_or(ptr::null(), |s| s.as_ptr());
        out.set(fencing_rejection {
            code: r.code,
            scope: r.scope.as_ptr(),
            key: text(&r.key),
            holder: text(&r.holder),
            presented: r.presented,
            current: r.current,
            seq: r.seq.unwrap_or(0),
            has_seq: r.seq.is_some(),
            at_ms: r.at_ms,
        });
        Ok(())
    })
}

/// Frees a list from `fencing_rejections`. NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_rejection_list_free(list: *mut fencing_rejection_list) {
    boundary_or((), || args::free_box(list))
}

/// Text allocated by the library (`fencing_metrics_text`), for
/// `fencing_string_free`.
pub(crate) fn owned_text(text: &str) -> *mut c_char {
    c_text(text).into_raw()
}

/// Frees text the library allocated (`fencing_metrics_text`). NULL is a
/// no-op. Never pass it memory from anywhere else.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_string_free(text: *mut c_char) {
    boundary_or((), || args::free_c_string(text))
}
