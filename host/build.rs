//! Builds the kernels to PTX so the host library embeds them: `cargo build`, `cargo test` and
//! `cargo bench` need nothing else. `COALESCE_PTX_ARCH` picks the PTX target (default sm_75).
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let kernels = manifest.join("..").join("kernels-gpu");
    let arch = std::env::var("COALESCE_PTX_ARCH").unwrap_or_else(|_| coalesce_builder::DEFAULT_ARCH.to_string());
    let builder = coalesce_builder::PtxBuilder::new(&kernels).arch(&arch);
    for source in builder.sources() {
        println!("cargo:rerun-if-changed={}", source.display());
    }
    println!("cargo:rerun-if-env-changed=COALESCE_PTX_ARCH");
    let ptx = builder.build().unwrap_or_else(|e| panic!("building the kernels to PTX: {e}"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo")).join("kernels.ptx");
    std::fs::copy(&ptx, &out).unwrap_or_else(|e| panic!("copying {}: {e}", ptx.display()));
    println!("cargo:rustc-env=COALESCE_PTX_ARCH={arch}");
}
