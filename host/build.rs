//! Builds the kernels to PTX so the host library embeds them: `cargo build`, `cargo test` and
//! `cargo bench` need nothing else. Two modules: the base one for `COALESCE_PTX_ARCH` (default
//! sm_75), which every GPU loads, and the Hopper one (sm_90, PTX ISA 8.3), which holds the
//! kernels that need Hopper hardware as well and is loaded only on such a device.
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let kernels = manifest.join("..").join("kernels-gpu");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    let arch = std::env::var("COALESCE_PTX_ARCH").unwrap_or_else(|_| coalesce_builder::DEFAULT_ARCH.to_string());
    println!("cargo:rerun-if-env-changed=COALESCE_PTX_ARCH");
    for (arch, file) in [(arch.as_str(), "kernels.ptx"), (coalesce_builder::HOPPER_ARCH, "kernels-sm_90.ptx")] {
        let builder = coalesce_builder::PtxBuilder::new(&kernels).arch(arch);
        for source in builder.sources() {
            println!("cargo:rerun-if-changed={}", source.display());
        }
        let ptx = builder.build().unwrap_or_else(|e| panic!("building the kernels to PTX for {arch}: {e}"));
        let out = out_dir.join(file);
        std::fs::copy(&ptx, &out).unwrap_or_else(|e| panic!("copying {}: {e}", ptx.display()));
    }
    println!("cargo:rustc-env=COALESCE_PTX_ARCH={arch}");
}
