//! Gives libfencing.so its soname, so that a program linked against it by
//! full path still records `libfencing.so` (and finds it on the library
//! path) rather than the build directory it was linked from.
//!
//! And exports only the library's own `fencing_*` functions: a dependency
//! that defines C functions of its own (object_store's crc-fast, for the S3
//! checksums, exports `crc_fast_*` by default) would otherwise export them
//! from libfencing.so too. `--exclude-libs ALL` keeps the symbols of the
//! archives linked in (every dependency's rlib) out of the dynamic table,
//! with the system's linker; zig's (the release builds) has no such option.
//!
//! On macOS, the install name `@rpath/libfencing.dylib`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    match std::env::var("CARGO_CFG_TARGET_OS").as_deref() {
        Ok("linux") => {
            println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libfencing.so");
            // zig's linker (the release builds, scripts/release) has no
            // --exclude-libs: there crc-fast's functions stay exported
            // (docs/packaging.md, "Checks").
            let zig = std::env::var("RUSTC_LINKER").is_ok_and(|linker| linker.contains("zig"));
            if !zig {
                println!("cargo:rustc-cdylib-link-arg=-Wl,--exclude-libs,ALL");
            }
        }
        // The same on macOS: found through the program's run paths, not by
        // the build directory's name.
        Ok("macos") => {
            println!("cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/libfencing.dylib");
        }
        _ => {}
    }
}
