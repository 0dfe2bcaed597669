//! A small cuda_builder: compiles the `coalesce-kernels` crate to one PTX module with rustc's own
//! `nvptx64-nvidia-cuda` target, and asks `ptxas` (when present) for its resource report.
//!
//! Used by `cargo xtask build-ptx`, which writes the modules the host library embeds
//! ([`EMBEDDED`], committed in `host/ptx/`), and by the test that checks they are up to date.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The default PTX target: the oldest architecture CUDA 13's ptxas accepts (Turing). The driver
/// compiles this PTX for newer GPUs (Ampere, Hopper, ...) when the module is loaded.
pub const DEFAULT_ARCH: &str = "sm_75";

/// The rustc target the kernels are compiled for.
pub const TARGET: &str = "nvptx64-nvidia-cuda";

/// The cargo profile of the nvptx build, defined in the workspace's `Cargo.toml`: release with
/// fat LTO, `panic = "abort"` and one codegen unit, so the kernels come out as one module.
pub const PROFILE: &str = "ptx";

/// The architecture of the Hopper module: the kernels that need sm_90 (cp.async pipelines, TMA
/// bulk and tensor copies, mbarriers, thread-block clusters) are compiled only into PTX built
/// for it (see `kernels-gpu/src/kernel.rs`'s `hopper_kernel!`).
pub const HOPPER_ARCH: &str = "sm_90";

/// The PTX ISA the Hopper module is built for: 8.3. Its kernels need 8.0 (the bulk copies and
/// mbarrier transaction counts); 8.3 came with an earlier TMA transpose that fenced tensor maps
/// in global memory (`fence.proxy.tensormap::generic`), and the kernels' gates
/// (`target_feature = "ptx83"`) still name it. rustc's nvptx target defaults to PTX 7.8 for
/// sm_90.
pub const HOPPER_FEATURES: &[&str] = &["+ptx83"];

/// The modules the host library embeds, as `(arch, file)`: committed in `host/ptx/`, so the
/// library builds on stable Rust without this builder. The base module for [`DEFAULT_ARCH`], which
/// every GPU loads, and the Hopper module for [`HOPPER_ARCH`] with [`HOPPER_FEATURES`].
pub const EMBEDDED: [(&str, &str); 2] = [(DEFAULT_ARCH, "coalesce-sm_75.ptx"), (HOPPER_ARCH, "coalesce-sm_90.ptx")];
/// The SASS digest of the Hopper module ([`sass`]), beside it in `host/ptx/`: what the time model
/// reads for instruction issue. Every kernel is in the Hopper module, the base ones too.
pub const SASS_DIGEST: &str = "coalesce-sm_90.sass.tsv";

/// The command that rebuilds the [`EMBEDDED`] modules into `host/ptx/` (on the pinned nightly).
pub const REFRESH_COMMAND: &str = "cargo xtask build-ptx --refresh";

/// Where the [`EMBEDDED`] modules are committed, relative to the workspace root.
pub const EMBEDDED_DIR: &str = "host/ptx";

/// The target features a build for `arch` gets unless told otherwise: [`HOPPER_FEATURES`] from
/// sm_90 on (so `--arch sm_90` yields the Hopper module), none before.
pub fn default_features(arch: &str) -> Vec<String> {
    let digits: String = arch.trim_start_matches("sm_").chars().take_while(|c| c.is_ascii_digit()).collect();
    match digits.parse::<u32>() {
        Ok(sm) if sm >= 90 => HOPPER_FEATURES.iter().map(|f| f.to_string()).collect(),
        _ => Vec::new(),
    }
}

/// Checks that `feature` looks like `+name` or `-name` with `name` made of `[a-z0-9_]`.
pub fn validate_feature(feature: &str) -> Result<(), BuildError> {
    let name = feature.strip_prefix(['+', '-']).unwrap_or("");
    if !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') {
        Ok(())
    } else {
        Err(BuildError::BadFeature(feature.to_string()))
    }
}

/// Why a PTX build failed.
#[derive(Debug)]
pub enum BuildError {
    /// `arch` is not of the form `sm_NN`.
    BadArch(String),
    /// A target feature is not of the form `+name` / `-name`.
    BadFeature(String),
    /// cargo could not be started.
    Spawn(std::io::Error),
    /// cargo ran and failed; its stderr is in the message.
    Cargo(String),
    /// The build succeeded but no PTX file was found where rustc writes it.
    NoPtx(PathBuf),
    /// Reading or copying a file failed.
    Io(PathBuf, std::io::Error),
    /// A kernel's launch bounds could not be written into the PTX.
    LaunchBounds(String),
    /// A grid-constant parameter's alignment could not be written into the PTX.
    GridConstant(String),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::BadArch(a) => {
                write!(f, "unsupported arch `{a}`: expected sm_NN, e.g. sm_90")
            }
            BuildError::BadFeature(t) => write!(f, "bad target feature `{t}`: expected +name or -name, e.g. +ptx83"),
            BuildError::Spawn(e) => write!(f, "could not run cargo: {e}"),
            BuildError::Cargo(log) => write!(f, "cargo failed to build the kernels:\n{log}"),
            BuildError::NoPtx(dir) => write!(f, "no PTX (.s) found in {}", dir.display()),
            BuildError::Io(p, e) => write!(f, "{}: {e}", p.display()),
            BuildError::LaunchBounds(why) | BuildError::GridConstant(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for BuildError {}

/// Checks that `arch` looks like `sm_NN` or `sm_NNN` (optionally with an `a`/`f` suffix).
pub fn validate_arch(arch: &str) -> Result<(), BuildError> {
    let digits = arch.strip_prefix("sm_").map(|rest| rest.trim_end_matches(['a', 'f'])).unwrap_or("");
    if (2..=3).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()) {
        Ok(())
    } else {
        Err(BuildError::BadArch(arch.to_string()))
    }
}

/// Builds the kernel crate at `crate_dir` for `arch` into `target_dir/<arch>`.
#[derive(Debug, Clone)]
pub struct PtxBuilder {
    crate_dir: PathBuf,
    target_dir: PathBuf,
    arch: String,
    features: Option<Vec<String>>,
}

impl PtxBuilder {
    /// A builder for the kernel crate in `crate_dir`, with the default arch and
    /// `<crate_dir>/../target/ptx` as target directory.
    pub fn new(crate_dir: impl Into<PathBuf>) -> Self {
        let crate_dir = crate_dir.into();
        let target_dir = crate_dir.join("..").join("target").join("ptx");
        PtxBuilder { crate_dir, target_dir, arch: DEFAULT_ARCH.to_string(), features: None }
    }

    /// The GPU architecture passed to rustc as `-C target-cpu`.
    pub fn arch(mut self, arch: impl Into<String>) -> Self {
        self.arch = arch.into();
        self
    }

    /// Target features passed to rustc as `-C target-feature=..` (e.g. `+ptx83`), replacing the
    /// arch's [`default_features`].
    pub fn features<S: Into<String>>(mut self, features: impl IntoIterator<Item = S>) -> Self {
        self.features = Some(features.into_iter().map(Into::into).collect());
        self
    }

    /// The target features the build passes: those set with [`PtxBuilder::features`], else the
    /// arch's defaults.
    pub fn target_features(&self) -> Vec<String> {
        self.features.clone().unwrap_or_else(|| default_features(&self.arch))
    }

    /// Where cargo builds (one subdirectory per arch, so arches never overwrite each other).
    pub fn target_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.target_dir = dir.into();
        self
    }

    /// The source files a build depends on (for `cargo:rerun-if-changed`).
    pub fn sources(&self) -> Vec<PathBuf> {
        vec![self.crate_dir.join("src"), self.crate_dir.join("Cargo.toml")]
    }

    /// Runs the build and returns the path of the PTX it produced.
    pub fn build(&self) -> Result<PathBuf, BuildError> {
        validate_arch(&self.arch)?;
        let features = self.target_features();
        for f in &features {
            validate_feature(f)?;
        }
        // One subdirectory per arch and feature set, so builds never overwrite each other.
        let mut subdir = self.arch.clone();
        for f in &features {
            subdir.push_str(&f.replace('+', "_").replace('-', "_no_"));
        }
        let target_dir = self.target_dir.join(subdir);
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
        let mut cmd = Command::new(cargo);
        // A build script or `cargo clippy` hands cargo settings for the *host* build down through
        // the environment; none of them applies to this nested nvptx build.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            let host_only = (key.starts_with("CARGO_") && key != "CARGO_HOME")
                || key.starts_with("RUSTC")
                || key.starts_with("RUSTDOC")
                || key == "RUSTFLAGS"
                || key == "CARGO";
            if host_only {
                cmd.env_remove(key.as_ref());
            }
        }
        cmd.arg("rustc")
            .args(["--profile", PROFILE])
            .arg("--quiet")
            .args(["--target", TARGET])
            .arg("-Zbuild-std=core")
            .args(["--crate-type", "staticlib"])
            .arg("--manifest-path")
            .arg(self.crate_dir.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(&target_dir)
            .args(["--", "-C"])
            .arg(format!("target-cpu={}", self.arch))
            .arg("--emit=asm");
        if !features.is_empty() {
            cmd.arg("-C").arg(format!("target-feature={}", features.join(",")));
        }
        let output = cmd.output().map_err(BuildError::Spawn)?;
        if !output.status.success() {
            return Err(BuildError::Cargo(String::from_utf8_lossy(&output.stderr).into_owned()));
        }
        let deps = target_dir.join(TARGET).join(PROFILE).join("deps");
        let raw = newest_ptx(&deps)?;
        let text = std::fs::read_to_string(&raw).map_err(|e| BuildError::Io(raw.clone(), e))?;
        let ptx = apply_launch_bounds(&text).map_err(BuildError::LaunchBounds)?;
        let ptx = apply_grid_constants(&ptx).map_err(BuildError::GridConstant)?;
        // Written aside and renamed into place, so that a build running beside this one (two
        // tests, say) never reads the file half-written.
        static WRITES: AtomicUsize = AtomicUsize::new(0);
        let n = WRITES.fetch_add(1, Ordering::Relaxed);
        let tmp = target_dir.join(format!("coalesce-kernels.ptx.{}-{n}", std::process::id()));
        std::fs::write(&tmp, ptx).map_err(|e| BuildError::Io(tmp.clone(), e))?;
        let out = target_dir.join("coalesce-kernels.ptx");
        std::fs::rename(&tmp, &out).map_err(|e| BuildError::Io(out.clone(), e))?;
        Ok(out)
    }
}

/// What follows `prefix` in the name of each marker static in `ptx` (a `.global` declaration
/// whose name starts with `prefix`): the markers `kernel!` and `grid_constant!` export.
fn marker_symbols<'a>(ptx: &'a str, prefix: &'a str) -> impl Iterator<Item = &'a str> {
    ptx.lines()
        .filter(|l| l.trim_start().starts_with('.') && l.contains(".global"))
        .filter_map(move |l| l.split(prefix).nth(1))
        .filter_map(|rest| rest.split([';', '[', ' ', '=']).next())
}

/// Marker symbols `kernel!` exports for kernels declared with `#[launch_bounds(T, B)]`.
const LAUNCH_BOUNDS_PREFIX: &str = "__coalesce_launch_bounds__";

/// `(entry, max threads, min blocks)` of every launch-bounds marker in `ptx`.
pub fn launch_bounds(ptx: &str) -> Vec<(String, u32, u32)> {
    marker_symbols(ptx, LAUNCH_BOUNDS_PREFIX)
        .filter_map(|symbol| {
            let mut parts = symbol.rsplitn(3, "__");
            let blocks = parts.next()?.parse().ok()?;
            let threads = parts.next()?.parse().ok()?;
            Some((parts.next()?.to_string(), threads, blocks))
        })
        .collect()
}

/// Writes each launch-bounds marker's `.maxntid T, 1, 1` and `.minnctapersm B` into its entry's
/// header (between the parameter list and the body), as nvcc does for `__launch_bounds__`.
/// `Err` names a marker whose entry is missing.
pub fn apply_launch_bounds(ptx: &str) -> Result<String, String> {
    let bounds = launch_bounds(ptx);
    let mut out = String::with_capacity(ptx.len() + 64 * bounds.len());
    let mut pending: Option<&(String, u32, u32)> = None;
    let mut applied = 0;
    for line in ptx.lines() {
        if let Some(rest) = line.trim_start().strip_prefix(".visible .entry ") {
            let name = rest.split(['(', ' ']).next().unwrap_or("");
            pending = bounds.iter().find(|(entry, _, _)| entry == name);
        }
        if line.trim() == "{"
            && let Some((_, threads, blocks)) = pending.take()
        {
            out.push_str(&format!(".maxntid {threads}, 1, 1\n.minnctapersm {blocks}\n"));
            applied += 1;
        }
        out.push_str(line);
        out.push('\n');
    }
    if applied == bounds.len() {
        Ok(out)
    } else {
        let entries = ptx_entries(ptx);
        let missing: Vec<&str> =
            bounds.iter().map(|(e, _, _)| e.as_str()).filter(|e| !entries.iter().any(|x| x == e)).collect();
        Err(format!("launch bounds for entries the PTX does not define: {missing:?}"))
    }
}

/// Marker symbols `grid_constant!` exports for by-value tensor-map parameters.
const GRID_CONSTANT_PREFIX: &str = "__coalesce_grid_constant__";

/// The alignment the TMA needs of a tensor map, and its size.
const MAP_ALIGN: u32 = 64;
const MAP_BYTES: u32 = 128;

/// `(entry, parameter index)` of every grid-constant marker in `ptx`.
pub fn grid_constants(ptx: &str) -> Vec<(String, u32)> {
    marker_symbols(ptx, GRID_CONSTANT_PREFIX)
        .filter_map(|symbol| {
            let (entry, index) = symbol.rsplit_once("__")?;
            Some((entry.to_string(), index.parse().ok()?))
        })
        .collect()
}

/// Declares each grid-constant marker's parameter `.align 64`, as nvcc does for a
/// `__grid_constant__ const CUtensorMap`: rustc emits a 128-byte by-value parameter as
/// `.param .align 8 .b8 ENTRY_param_I[128]`. `Err` names a marker whose entry has no such
/// parameter (a wrong name or index, or a parameter that is not a tensor map).
pub fn apply_grid_constants(ptx: &str) -> Result<String, String> {
    let markers = grid_constants(ptx);
    let mut out = String::with_capacity(ptx.len());
    let mut applied = vec![false; markers.len()];
    for line in ptx.lines() {
        let declared = line.trim_start().strip_prefix(".param .align ").and_then(|rest| {
            let (align, rest) = rest.split_once(" .b8 ")?;
            let name = rest.trim_end_matches(',').strip_suffix(&format!("[{MAP_BYTES}]"))?;
            Some((align, name))
        });
        if let Some((align, name)) = declared
            && let Some(i) = markers.iter().position(|(entry, index)| name == format!("{entry}_param_{index}"))
        {
            let indent = &line[..line.len() - line.trim_start().len()];
            let rest = &line.trim_start()[".param .align ".len() + align.len()..];
            out.push_str(&format!("{indent}.param .align {MAP_ALIGN}{rest}\n"));
            applied[i] = true;
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    let missing: Vec<String> = markers
        .iter()
        .zip(&applied)
        .filter(|(_, done)| !**done)
        .map(|((entry, index), _)| format!("{entry} parameter {index}"))
        .collect();
    if missing.is_empty() {
        Ok(out)
    } else {
        Err(format!("grid_constant! names parameters that are not {MAP_BYTES}-byte by-value params: {missing:?}"))
    }
}

/// The most recently written `coalesce_kernels-*.s` in `deps` (rustc names the PTX after the
/// crate and its metadata hash).
fn newest_ptx(deps: &Path) -> Result<PathBuf, BuildError> {
    let entries = std::fs::read_dir(deps).map_err(|e| BuildError::Io(deps.to_path_buf(), e))?;
    entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.starts_with("coalesce_kernels-") && name.ends_with(".s")
        })
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .ok_or_else(|| BuildError::NoPtx(deps.to_path_buf()))
}

/// The `.entry` names a PTX module defines, in order.
pub fn ptx_entries(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| l.trim_start().strip_prefix(".visible .entry "))
        .map(|rest| rest.split(['(', ' ']).next().unwrap_or("").to_string())
        .collect()
}

/// `ptxas` from `PATH`, `$CUDA_PATH/bin` or `/usr/local/cuda/bin`, if any.
pub fn find_ptxas() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> =
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    for var in ["CUDA_PATH", "CUDA_ROOT"] {
        if let Some(root) = std::env::var_os(var) {
            dirs.push(PathBuf::from(root).join("bin"));
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/bin"));
    dirs.into_iter().map(|d| d.join("ptxas")).find(|p| p.is_file())
}

/// Assembles `ptx` for `gpu` (e.g. `sm_90`) with `ptxas -v` and returns its resource report
/// (registers, shared memory, stack frame, spills per entry). `Err` carries ptxas's complaint.
pub fn ptxas_report(ptxas: &Path, ptx: &Path, gpu: &str) -> Result<String, String> {
    let out = Command::new(ptxas)
        .args(["-v", "--gpu-name", gpu, "-o", "/dev/null"])
        .arg(ptx)
        .output()
        .map_err(|e| format!("could not run {}: {e}", ptxas.display()))?;
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.success() { Ok(text) } else { Err(text) }
}

pub mod sass;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_constant_parameters_get_the_tma_alignment() {
        let ptx = ".visible .global .align 1 .b8 __coalesce_grid_constant__k__1;\n\
                   .visible .entry k(\n\t.param .align 8 .b8 k_param_0[128],\n\
                   \t.param .align 8 .b8 k_param_1[128],\n\t.param .u32 k_param_2\n)\n{\nret;\n}\n";
        assert_eq!(grid_constants(ptx), [("k".to_string(), 1)]);
        let out = apply_grid_constants(ptx).unwrap();
        assert!(out.contains("\t.param .align 8 .b8 k_param_0[128],\n"), "{out}");
        assert!(out.contains("\t.param .align 64 .b8 k_param_1[128],\n"), "{out}");
        assert!(out.contains("\t.param .u32 k_param_2\n"), "{out}");
        // A marker naming a parameter that is not a 128-byte one, or an entry that is not there.
        for bad in ["__coalesce_grid_constant__k__2", "__coalesce_grid_constant__gone__0"] {
            let ptx = ptx.replace("__coalesce_grid_constant__k__1", bad);
            assert!(apply_grid_constants(&ptx).is_err(), "{bad}");
        }
        // No markers, no change.
        let plain = ".visible .entry k(\n\t.param .align 8 .b8 k_param_0[128]\n)\n{\nret;\n}\n";
        assert_eq!(apply_grid_constants(plain).unwrap(), plain);
    }

    #[test]
    fn arch_validation() {
        for good in ["sm_75", "sm_80", "sm_90", "sm_90a", "sm_100", "sm_120f"] {
            assert!(validate_arch(good).is_ok(), "{good}");
        }
        for bad in ["", "sm_", "sm_9", "compute_90", "sm_90;rm", "sm_1000", "90"] {
            assert!(validate_arch(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hopper_arches_get_the_ptx_isa_their_kernels_need() {
        assert!(default_features("sm_75").is_empty());
        assert!(default_features("sm_80").is_empty());
        assert_eq!(default_features("sm_90"), ["+ptx83"]);
        assert_eq!(default_features("sm_90a"), ["+ptx83"]);
        assert_eq!(default_features("sm_100"), ["+ptx83"]);
        let b = PtxBuilder::new("/x").arch("sm_90").features(["+ptx80"]);
        assert_eq!(b.target_features(), ["+ptx80"]);
        for good in ["+ptx83", "-sm_90", "+sm_90a"] {
            assert!(validate_feature(good).is_ok(), "{good}");
        }
        for bad in ["", "+", "ptx83", "+ptx83,+x", "+PTX", "+a b"] {
            assert!(validate_feature(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn launch_bounds_go_into_their_entry_header() {
        let ptx = ".visible .global .align 1 .b8 __coalesce_launch_bounds__foo_bar__256__2;\n\
                   .visible .entry baz(\n.param .u64 a\n)\n{\nret;\n}\n\
                   .visible .entry foo_bar(\n.param .u64 a\n)\n{\nret;\n}\n";
        assert_eq!(launch_bounds(ptx), [("foo_bar".to_string(), 256, 2)]);
        let out = apply_launch_bounds(ptx).unwrap();
        assert!(out.contains("foo_bar(\n.param .u64 a\n)\n.maxntid 256, 1, 1\n.minnctapersm 2\n{\n"), "{out}");
        assert!(out.contains("baz(\n.param .u64 a\n)\n{\n"), "{out}");
        assert_eq!(out.matches(".maxntid").count(), 1);
        let orphan = ".visible .global .align 1 .b8 __coalesce_launch_bounds__gone__32__1;\n";
        assert!(apply_launch_bounds(orphan).unwrap_err().contains("gone"));
    }

    #[test]
    fn entries_are_read_from_ptx_text() {
        let ptx = ".visible .entry foo(\n.param .u64 a\n)\n.func bar()\n.visible .entry baz()\n";
        assert_eq!(ptx_entries(ptx), ["foo", "baz"]);
    }
}
