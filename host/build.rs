//! Finds the CUDA driver library (`libcuda.so`) that cust links against, so that no environment
//! variable is needed where one is installed: the NVIDIA driver's (`libcuda.so`, or only
//! `libcuda.so.1`, in the system's library directories or wherever `ldconfig` knows it), a CUDA
//! toolkit's, or Debian's `libcuda1` on a machine without a GPU. Where only `libcuda.so.1`
//! exists, links through a `libcuda.so` made in `OUT_DIR`. Where there is none, stops the build
//! with one line that says what to install.
//!
//! cust's own build script (cust_raw's) still wants `<dir>/lib64` for some `dir` in
//! `CUDA_LIBRARY_PATH`, `/opt/cuda` or `/usr/local/cuda*`; in this workspace `.cargo/config.toml`
//! points `CUDA_LIBRARY_PATH` at an empty one (`.cargo/cuda/lib64`), unless it is set already.
use std::path::{Path, PathBuf};
use std::process::Command;

const MISSING: &str = "no libcuda.so (the CUDA driver library) found: install the NVIDIA driver, or on a machine \
                       without a GPU Debian's libcuda1 (contrib/non-free), or set CUDA_LIBRARY_PATH to a \
                       directory whose lib64/ holds libcuda.so";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    for var in ["CUDA_LIBRARY_PATH", "LIBRARY_PATH", "DOCS_RS"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    // docs.rs has no driver and links nothing; other systems are left to cust's build script.
    if std::env::var_os("DOCS_RS").is_some() || target_os != "linux" {
        return;
    }
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let dirs = candidates(&arch);
    if let Some(dir) = dirs.iter().find(|d| d.join("libcuda.so").exists()) {
        if !is_default_dir(dir, &arch) {
            println!("cargo:rustc-link-search=native={}", dir.display());
        }
        return;
    }
    // A driver installed without its development symlink: link through one of our own.
    if let Some(dir) = dirs.iter().find(|d| d.join("libcuda.so.1").exists()) {
        let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
        let link = out.join("libcuda.so");
        let _ = std::fs::remove_file(&link);
        match std::os::unix::fs::symlink(dir.join("libcuda.so.1"), &link) {
            Ok(()) => println!("cargo:rustc-link-search=native={}", out.display()),
            Err(e) => fail(&format!("could not link {} to {}: {e}", link.display(), dir.display())),
        }
        return;
    }
    fail(MISSING);
}

/// Fails the build with `message` as cargo's one error line (cargo stops once the script ends).
fn fail(message: &str) {
    println!("cargo::error={message}");
}

/// Where to look, in order: the user's `CUDA_LIBRARY_PATH` (each `<dir>/lib64`, as cust reads
/// it), a CUDA toolkit, the linker's `LIBRARY_PATH`, the system's library directories, Debian's
/// `libcuda1` without a GPU, WSL's driver, then whatever `ldconfig` knows.
fn candidates(arch: &str) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(paths) = std::env::var_os("CUDA_LIBRARY_PATH") {
        for dir in std::env::split_paths(&paths) {
            dirs.push(dir.join("lib64"));
            dirs.push(dir.join("lib64").join("stubs"));
        }
    }
    for root in ["/usr/local/cuda", "/opt/cuda"] {
        dirs.push(Path::new(root).join("lib64"));
        dirs.push(Path::new(root).join("lib64").join("stubs"));
    }
    if let Some(paths) = std::env::var_os("LIBRARY_PATH") {
        dirs.extend(std::env::split_paths(&paths));
    }
    let multiarch = format!("{arch}-linux-gnu");
    dirs.push(Path::new("/usr/lib").join(&multiarch));
    dirs.push(Path::new("/lib").join(&multiarch));
    dirs.extend(["/usr/lib64", "/usr/lib"].map(PathBuf::from));
    dirs.push(Path::new("/usr/lib").join(&multiarch).join("nvidia").join("current"));
    dirs.push(PathBuf::from("/usr/lib/wsl/lib"));
    dirs.extend(ldconfig_dirs());
    dirs
}

/// The directories `ldconfig -p` lists a `libcuda.so*` in.
fn ldconfig_dirs() -> Vec<PathBuf> {
    let output = ["ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"]
        .iter()
        .find_map(|cmd| Command::new(cmd).arg("-p").output().ok().filter(|o| o.status.success()));
    let Some(output) = output else { return Vec::new() };
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|l| l.trim_start().starts_with("libcuda.so"))
        .filter_map(|l| l.split("=> ").nth(1))
        .filter_map(|path| Path::new(path.trim()).parent().map(Path::to_path_buf))
        .collect()
}

/// Directories the linker searches anyway: no `-L` for them, so they keep their place after
/// everything else's.
fn is_default_dir(dir: &Path, arch: &str) -> bool {
    let multiarch = format!("{arch}-linux-gnu");
    [Path::new("/usr/lib").join(&multiarch), Path::new("/lib").join(&multiarch)]
        .iter()
        .chain(&["/usr/lib64", "/usr/lib", "/lib64", "/lib"].map(PathBuf::from))
        .any(|d| d == dir)
}
