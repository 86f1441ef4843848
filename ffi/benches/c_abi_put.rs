//! The cost of one fenced put through the C ABI beside the same call in
//! Rust, in one run, on `memory:`.
//!
//! - `rust_store_put`: `Store::put` called directly.
//! - `c_abi_fencing_put`: `fencing_put` called through a function pointer
//!   from `dlopen("libfencing.so")`, exactly as a C program calls it: the
//!   scope and key as NUL-terminated C strings, the fence as a C struct, the
//!   receipt through an out-pointer (so the measured difference includes
//!   strlen and UTF-8 validation of both names, the panic boundary and the
//!   status mapping).
//!
//! Both write the same 64-byte value to the same 1024 keys in turn, with the
//! same token, each on its own fresh store. A third run,
//! `rust_validate_names_then_put`, reads the names from C strings first
//! (strlen and `str::from_utf8`, as the ABI must) and then calls
//! `Store::put`: the part of the difference that is the boundary itself.
//! After the run it prints the medians and the differences (the goal is
//! under 15 ns). Nothing asserts on timings.
//!
//! ```text
//! cargo build --release -p fencing-ffi        # the library it loads
//! cargo bench -p fencing-ffi --bench c_abi_put
//! cargo bench -p fencing-ffi --bench c_abi_put -- --quick
//! ```
//! `FENCING_LIB=/path/to/libfencing.so` overrides where the library is
//! looked for (by default `target/release/libfencing.so`, beside the bench's
//! own `deps/` directory).

use std::env;
use std::ffi::{c_char, c_void, CStr, CString};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::Criterion;
use fencing::{Fence, Store, Token};

const KEYS: usize = 1024;
const VALUE: [u8; 64] = [0xA5; 64];
const SCOPE: &str = "bench";
const GOAL_NS: f64 = 15.0;

/// `fencing_fence` and `fencing_receipt` as include/fencing.h declares them.
#[repr(C)]
struct CFence {
    token: u64,
    seq: u64,
    has_seq: bool,
    holder: *const c_char,
}

#[repr(C)]
#[derive(Default)]
struct CReceipt {
    version: u64,
    token: u64,
}

type OpenFn = unsafe extern "C" fn(*const c_char, *mut *mut c_void) -> u32;
type FreeFn = unsafe extern "C" fn(*mut c_void);
type PutFn = unsafe extern "C" fn(
    *const c_void,
    *const c_char,
    *const c_char,
    *const u8,
    usize,
    *const CFence,
    *mut CReceipt,
) -> u32;
type VersionFn = unsafe extern "C" fn() -> *const c_char;

/// The C library, loaded the way any C program's dynamic loader would.
struct Lib {
    open: OpenFn,
    free: FreeFn,
    put: PutFn,
    path: PathBuf,
}

fn library_path() -> PathBuf {
    if let Some(p) = env::var_os("FENCING_LIB") {
        return PathBuf::from(p);
    }
    // target/<profile>/deps/c_abi_put-<hash> -> target/<profile>/libfencing.so,
    // and the release build when the bench profile's directory has none.
    let exe = env::current_exe().expect("the bench's own path");
    let profile_dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>");
    let here = profile_dir.join("libfencing.so");
    if here.exists() {
        return here;
    }
    profile_dir
        .parent()
        .map(|t| t.join("release").join("libfencing.so"))
        .unwrap_or(here)
}

fn load() -> Lib {
    let path = library_path();
    let c_path = CString::new(path.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: dlopen/dlsym with valid C strings; each symbol is cast to the
    // signature include/fencing.h declares for it.
    unsafe {
        let handle = libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        assert!(
            !handle.is_null(),
            "cannot load {}: build it first with `cargo build --release -p fencing-ffi` \
             (or set FENCING_LIB)",
            path.display()
        );
        let sym = |name: &CStr| {
            let p = libc::dlsym(handle, name.as_ptr());
            assert!(!p.is_null(), "{name:?} is missing from {}", path.display());
            p
        };
        let version: VersionFn = std::mem::transmute(sym(c"fencing_version"));
        let version = CStr::from_ptr(version()).to_str().unwrap();
        assert_eq!(
            version,
            env!("CARGO_PKG_VERSION"),
            "{} is another version",
            path.display()
        );
        Lib {
            open: std::mem::transmute::<*mut c_void, OpenFn>(sym(c"fencing_store_open")),
            free: std::mem::transmute::<*mut c_void, FreeFn>(sym(c"fencing_store_free")),
            put: std::mem::transmute::<*mut c_void, PutFn>(sym(c"fencing_put")),
            path,
        }
    }
}

fn keys() -> Vec<String> {
    (0..KEYS).map(|i| format!("key-{i:011}")).collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn quick() -> bool {
    env::args().any(|a| a == "--quick")
}

/// `FENCING_BENCH_SMOKE=1` (`scripts/bench --smoke`): every path once,
/// briefly; the figures are not measurements.
fn smoke() -> bool {
    env::var("FENCING_BENCH_SMOKE").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Appends the result to the JSON Lines file `FENCING_BENCH_OUT` names, in
/// the format of `fencing_benches::report` (benches/src/report.rs), written
/// by hand here to keep this crate's dependencies to the C ABI's own.
fn record(c_abi_ns: f64, rust_ns: f64, overhead_ns: f64, rounds: usize) {
    let Some(path) = env::var_os("FENCING_BENCH_OUT").filter(|p| !p.is_empty()) else {
        return;
    };
    let line = format!(
        concat!(
            r#"{{"group":"c-abi","line":"put","concurrency":1,"concurrency_unit":"threads","#,
            r#""unit":"ns/op","fenced":{c:.3},"baseline":{r:.3},"ratio":{ratio:.5},"#,
            r#""baseline_name":"Store::put called directly from Rust","difference":{d:.3},"#,
            r#""goal":{{"on":"difference","op":"<","value":{goal}}},"met":{met},"#,
            r#""rounds":{rounds},"smoke":{smoke},"note":"difference = per-call overhead of the C ABI "#,
            r#"(median of the rounds' differences; strlen + UTF-8 of both names, panic boundary, status mapping)"}}"#,
            "\n"
        ),
        c = c_abi_ns,
        r = rust_ns,
        ratio = c_abi_ns / rust_ns,
        d = overhead_ns,
        goal = GOAL_NS,
        met = overhead_ns < GOAL_NS,
        rounds = rounds,
        smoke = smoke(),
    );
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
    if let Err(e) = written {
        eprintln!(
            "c_abi_put: cannot append to {}: {e}",
            PathBuf::from(path).display()
        );
    }
}

fn measuring() -> bool {
    let args: Vec<String> = env::args().collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test" || a == "--list")
}

fn main() {
    let lib = load();
    let keys = keys();
    let c_keys: Vec<CString> = keys
        .iter()
        .map(|k| CString::new(k.as_str()).unwrap())
        .collect();
    let c_scope = CString::new(SCOPE).unwrap();
    let token = Token::new(1).unwrap();

    // The Rust side.
    let store = Store::open("memory:").unwrap();
    let fence = Fence::new(token);
    // The C side, on its own store in the loaded library.
    let mut handle: *mut c_void = std::ptr::null_mut();
    // SAFETY: a valid URL and out-pointer.
    let status = unsafe { (lib.open)(c"memory:".as_ptr(), &mut handle) };
    assert_eq!(status, 0, "fencing_store_open failed");
    let c_fence = CFence {
        token: token.get(),
        seq: 0,
        has_seq: false,
        holder: std::ptr::null(),
    };

    // Both paths work and agree before anything is timed.
    let mut receipt = CReceipt::default();
    // SAFETY: arguments as the header declares them.
    let status = unsafe {
        (lib.put)(
            handle,
            c_scope.as_ptr(),
            c_keys[0].as_ptr(),
            VALUE.as_ptr(),
            VALUE.len(),
            &c_fence,
            &mut receipt,
        )
    };
    let rust = store.put(SCOPE, &keys[0], &VALUE, &fence).unwrap();
    assert_eq!((status, receipt.version, receipt.token), (0, 1, 1));
    assert_eq!((rust.version, rust.token.get()), (1, 1));

    let mut c = Criterion::default();
    if smoke() {
        c = c
            .warm_up_time(Duration::from_millis(50))
            .measurement_time(Duration::from_millis(200))
            .sample_size(10);
    } else if quick() {
        c = c
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_millis(1000))
            .sample_size(10);
    }
    let mut c = c.configure_from_args();
    let mut i = 0usize;
    let mut rust_put = |n: u64| {
        for _ in 0..n {
            let key = &keys[i & (KEYS - 1)];
            i = i.wrapping_add(1);
            let r = store.put(black_box(SCOPE), black_box(key), black_box(&VALUE), &fence);
            black_box(r.unwrap());
        }
    };
    // Store::put after reading the two names from C strings as the C ABI
    // must (strlen and UTF-8 validation): what is left of the difference is
    // the rest of the boundary.
    let mut k = 0usize;
    let mut validated_put = |n: u64| {
        for _ in 0..n {
            let key = &c_keys[k & (KEYS - 1)];
            k = k.wrapping_add(1);
            // SAFETY: NUL-terminated strings that outlive the call.
            let (scope, key) = unsafe {
                (
                    CStr::from_ptr(black_box(c_scope.as_ptr())),
                    CStr::from_ptr(black_box(key.as_ptr())),
                )
            };
            let (scope, key) = (scope.to_str().unwrap(), key.to_str().unwrap());
            let r = store.put(scope, key, black_box(&VALUE), &fence);
            black_box(r.unwrap());
        }
    };
    let mut j = 0usize;
    let mut c_put = |n: u64| {
        let mut receipt = CReceipt::default();
        for _ in 0..n {
            let key = &c_keys[j & (KEYS - 1)];
            j = j.wrapping_add(1);
            // SAFETY: arguments as the header declares them.
            let status = unsafe {
                (lib.put)(
                    black_box(handle),
                    black_box(c_scope.as_ptr()),
                    black_box(key.as_ptr()),
                    black_box(VALUE.as_ptr()),
                    VALUE.len(),
                    black_box(&c_fence),
                    &mut receipt,
                )
            };
            black_box(status);
        }
    };
    {
        let mut group = c.benchmark_group("c_abi_put");
        group.bench_function("rust_store_put", |b| b.iter(|| rust_put(1)));
        group.bench_function("rust_validate_names_then_put", |b| {
            b.iter(|| validated_put(1))
        });
        group.bench_function("c_abi_fencing_put", |b| b.iter(|| c_put(1)));
        group.finish();
    }
    c.final_summary();

    if measuring() {
        // The summary: both calls timed in alternating rounds of the same
        // length, so that drift (frequency, other load) hits both alike.
        let (rounds, n) = if smoke() {
            (3, 2_000)
        } else if quick() {
            (11, 20_000)
        } else {
            (41, 100_000)
        };
        let (mut rust, mut valid, mut cabi) = (Vec::new(), Vec::new(), Vec::new());
        let (mut diff, mut rest) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            let time = |f: &mut dyn FnMut(u64)| {
                let start = Instant::now();
                f(n);
                start.elapsed().as_nanos() as f64 / n as f64
            };
            let (r, v, c) = if round % 2 == 0 {
                let r = time(&mut rust_put);
                let v = time(&mut validated_put);
                (r, v, time(&mut c_put))
            } else {
                let c = time(&mut c_put);
                let v = time(&mut validated_put);
                (time(&mut rust_put), v, c)
            };
            rust.push(r);
            valid.push(v);
            cabi.push(c);
            diff.push(c - r);
            rest.push(c - v);
        }
        let overhead = median(diff);
        let (rust_median, cabi_median) = (median(rust.clone()), median(cabi.clone()));
        record(cabi_median, rust_median, overhead, rounds);
        println!();
        println!(
            "== fenced put on memory:, one run ({rounds} alternating rounds of {n} puts each) =="
        );
        println!("library: {}", lib.path.display());
        println!(
            "Rust  Store::put                 {:>7.1} ns/call (median)",
            median(rust)
        );
        println!(
            "Rust  names from C strings + put {:>7.1} ns/call (median)",
            median(valid)
        );
        println!(
            "C ABI fencing_put (dlopen, fn*)  {:>7.1} ns/call (median)",
            median(cabi)
        );
        println!(
            "overhead per call                {overhead:>7.1} ns (median of the rounds' differences; goal < {GOAL_NS} ns: {})",
            if overhead < GOAL_NS { "met" } else { "MISSED" }
        );
        println!(
            "  of which beyond reading the two names (strlen + UTF-8)  {:>7.1} ns",
            median(rest)
        );
    }
    // SAFETY: the handle from fencing_store_open, freed once, no longer used.
    unsafe { (lib.free)(handle) };
}
