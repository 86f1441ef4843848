//! Gives libfencing.so its soname, so that a program linked against it by
//! full path still records `libfencing.so` (and finds it on the library
//! path) rather than the build directory it was linked from.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libfencing.so");
    }
}
