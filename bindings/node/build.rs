fn main() {
    napi_build::setup();
    // On macOS the addon would name itself by the directory it was built
    // in; Node loads it by path, so any name works: a neutral one.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("macos") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/fencing.node");
    }
}
