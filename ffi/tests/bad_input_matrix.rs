//! Rows of docs/bad-input.md that tests/bad_input.c does not cover, through
//! the C ABI exactly as a C program reaches it (`dlopen` of the built
//! `libfencing.so`, C strings, out-parameters): names of 64 KiB, a file that
//! is not a database, a database written by a newer version of fencing.

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::PathBuf;

const OK: u32 = 0;
const INVALID_ARGUMENT: u32 = 8;
const BACKEND: u32 = 10;

#[repr(C)]
struct Lease {
    token: u64,
    ttl_ms: u64,
    remaining_ms: u64,
    expires_at_ms: u64,
    holder: [c_char; 257],
}

#[repr(C)]
struct FenceArg {
    token: u64,
    seq: u64,
    has_seq: bool,
    holder: *const c_char,
}

#[repr(C)]
#[derive(Default)]
struct Receipt {
    version: u64,
    token: u64,
}

type Open = unsafe extern "C" fn(*const c_char, *mut *mut c_void) -> u32;
type Free = unsafe extern "C" fn(*mut c_void);
type NextToken = unsafe extern "C" fn(*const c_void, *const c_char, *mut u64) -> u32;
type Acquire =
    unsafe extern "C" fn(*const c_void, *const c_char, *const c_char, u64, *mut Lease) -> u32;
type Put = unsafe extern "C" fn(
    *const c_void,
    *const c_char,
    *const c_char,
    *const u8,
    usize,
    *const FenceArg,
    *mut Receipt,
) -> u32;
type FenceOf = unsafe extern "C" fn(*const c_void, *const c_char, *mut u64) -> u32;
type Message = unsafe extern "C" fn(*mut c_char, usize, *mut usize) -> u32;

struct Lib {
    open: Open,
    free: Free,
    next_token: NextToken,
    acquire: Acquire,
    put: Put,
    fence_of: FenceOf,
    message: Message,
}

/// target/<profile>/deps/<this test> -> target/<profile>/libfencing.so. Cargo
/// does not build a cdylib for a package's tests: `scripts/test` runs
/// `cargo build -p fencing-ffi` first.
fn library_path() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("libfencing.so")
}

fn load() -> Lib {
    let path = CString::new(library_path().to_str().unwrap()).unwrap();
    // SAFETY: dlopen/dlsym with NUL-terminated names; each symbol is cast to
    // the signature include/fencing.h declares for it.
    unsafe {
        let h = libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        assert!(
            !h.is_null(),
            "dlopen {:?} failed: build it first with `cargo build -p fencing-ffi` (scripts/test does)",
            library_path()
        );
        let sym = |name: &CStr| {
            let p = libc::dlsym(h, name.as_ptr());
            assert!(!p.is_null(), "{name:?}");
            p
        };
        Lib {
            open: std::mem::transmute::<*mut c_void, Open>(sym(c"fencing_store_open")),
            free: std::mem::transmute::<*mut c_void, Free>(sym(c"fencing_store_free")),
            next_token: std::mem::transmute::<*mut c_void, NextToken>(sym(c"fencing_next_token")),
            acquire: std::mem::transmute::<*mut c_void, Acquire>(sym(c"fencing_acquire")),
            put: std::mem::transmute::<*mut c_void, Put>(sym(c"fencing_put")),
            fence_of: std::mem::transmute::<*mut c_void, FenceOf>(sym(c"fencing_fence_of")),
            message: std::mem::transmute::<*mut c_void, Message>(sym(
                c"fencing_last_error_message",
            )),
        }
    }
}

impl Lib {
    fn open(&self, url: &str) -> Result<*mut c_void, (u32, String)> {
        let url = CString::new(url).unwrap();
        let mut out: *mut c_void = std::ptr::null_mut();
        // SAFETY: a C string and a valid out-pointer.
        let status = unsafe { (self.open)(url.as_ptr(), &mut out) };
        if status == OK {
            Ok(out)
        } else {
            assert!(out.is_null(), "out-parameter written on failure");
            Err((status, self.last_message()))
        }
    }

    fn last_message(&self) -> String {
        let mut buf = vec![0 as c_char; 4096];
        let mut n = 0usize;
        // SAFETY: buf holds buf.len() bytes.
        assert_eq!(
            unsafe { (self.message)(buf.as_mut_ptr(), buf.len(), &mut n) },
            OK
        );
        // SAFETY: NUL-terminated by the library.
        unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    fn fence_of(&self, s: *mut c_void, scope: &CStr) -> u64 {
        let mut f = u64::MAX;
        // SAFETY: a live handle, a C string, a valid out-pointer.
        assert_eq!(unsafe { (self.fence_of)(s, scope.as_ptr(), &mut f) }, OK);
        f
    }
}

#[test]
fn names_of_64_kib_are_invalid_argument_and_change_nothing() {
    let lib = load();
    let s = lib.open("memory:").unwrap();
    let big = CString::new("n".repeat(64 * 1024)).unwrap();
    let big_utf8 = CString::new("é".repeat(32 * 1024)).unwrap();
    // SAFETY: every pointer below is a live C string, struct or out-parameter.
    unsafe {
        let mut lease: Lease = std::mem::zeroed();
        assert_eq!(
            (lib.acquire)(s, c"s".as_ptr(), c"A".as_ptr(), 10_000, &mut lease),
            OK
        );
        let fence = FenceArg {
            token: lease.token,
            seq: 0,
            has_seq: false,
            holder: std::ptr::null(),
        };
        let mut r = Receipt::default();
        assert_eq!(
            (lib.put)(
                s,
                c"s".as_ptr(),
                c"k".as_ptr(),
                b"v".as_ptr(),
                1,
                &fence,
                &mut r
            ),
            OK
        );
        let before = lib.fence_of(s, c"s");
        for name in [&big, &big_utf8] {
            let n = name.as_ptr();
            let mut t = 7u64;
            assert_eq!((lib.next_token)(s, n, &mut t), INVALID_ARGUMENT);
            assert_eq!(t, 7, "out-parameter written on failure");
            let mut l: Lease = std::mem::zeroed();
            assert_eq!(
                (lib.acquire)(s, n, c"A".as_ptr(), 1000, &mut l),
                INVALID_ARGUMENT
            );
            assert_eq!(
                (lib.acquire)(s, c"t".as_ptr(), n, 1000, &mut l),
                INVALID_ARGUMENT
            );
            let newer = FenceArg {
                token: lease.token + 1,
                seq: 0,
                has_seq: false,
                holder: std::ptr::null(),
            };
            assert_eq!(
                (lib.put)(s, n, c"k".as_ptr(), b"x".as_ptr(), 1, &newer, &mut r),
                INVALID_ARGUMENT
            );
            assert_eq!(
                (lib.put)(s, c"s".as_ptr(), n, b"x".as_ptr(), 1, &newer, &mut r),
                INVALID_ARGUMENT
            );
            let with_holder = FenceArg { holder: n, ..newer };
            assert_eq!(
                (lib.put)(
                    s,
                    c"s".as_ptr(),
                    c"k".as_ptr(),
                    b"x".as_ptr(),
                    1,
                    &with_holder,
                    &mut r
                ),
                INVALID_ARGUMENT
            );
            let mut f = 0u64;
            assert_eq!((lib.fence_of)(s, n, &mut f), INVALID_ARGUMENT);
            assert!(
                lib.last_message().contains("65536 bytes"),
                "{}",
                lib.last_message()
            );
        }
        // Nothing moved: the fence, and no token was issued on "t".
        assert_eq!(lib.fence_of(s, c"s"), before);
        let mut t = 0u64;
        assert_eq!((lib.next_token)(s, c"t".as_ptr(), &mut t), OK);
        assert_eq!(t, 1);
        (lib.free)(s);
    }
}

#[test]
fn a_file_that_is_not_a_database_is_backend_and_left_alone() {
    let lib = load();
    let dir = tempfile_dir();
    let path = dir.join("notes.db");
    let text = "these are my notes, not a database\n".repeat(200);
    std::fs::write(&path, &text).unwrap();
    let (status, message) = lib.open(&format!("sqlite:{}", path.display())).unwrap_err();
    assert_eq!(status, BACKEND, "{message}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_database_from_a_newer_version_is_backend_and_left_alone() {
    let lib = load();
    let dir = tempfile_dir();
    let path = dir.join("newer.db");
    let url = format!("sqlite:{}", path.display());
    let s = lib.open(&url).unwrap();
    // SAFETY: a live handle from open, freed once.
    unsafe { (lib.free)(s) };
    // SQLite keeps PRAGMA user_version (our schema version) as a big-endian
    // u32 at byte 60 of the header: pretend a future fencing wrote the file.
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.starts_with(b"SQLite format 3\0"));
    bytes[60..64].copy_from_slice(&99u32.to_be_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let (status, message) = lib.open(&url).unwrap_err();
    assert_eq!(status, BACKEND, "{message}");
    assert!(message.contains("schema version 99"), "{message}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A fresh directory under the system temp dir (no extra dev-dependency).
fn tempfile_dir() -> PathBuf {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let dir = std::env::temp_dir().join(format!(
        "fencing-ffi-matrix-{}-{}-{}",
        std::process::id(),
        ts.tv_sec,
        ts.tv_nsec
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
