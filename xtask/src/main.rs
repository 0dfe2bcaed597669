//! `cargo xtask build-ptx | list | report | model | ncu-table | bundle`: the project's own commands
//! (`cargo xtask --help`, or `cargo xtask COMMAND --help`).
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::mpsc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use coalesce_benches::cli::{Failure, ModelArgs, NcuTableArgs, ReportArgs};
use coalesce_builder::{DEFAULT_ARCH, EMBEDDED, EMBEDDED_DIR, PtxBuilder, TARGET, find_ptxas, ptxas_report};

/// The project's own commands: build the kernels, list and measure the lessons, run the model,
/// compare it with Nsight Compute, and bundle everything for a GPU host without Rust.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask", arg_required_else_help = true)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Build the kernels to PTX and print ptxas's resource report if ptxas is on PATH; or, with
    /// --refresh, rebuild the modules the library embeds (host/ptx/).
    BuildPtx {
        /// The GPU architecture (one the toolchain's nvptx target knows, e.g. sm_75, sm_90).
        #[arg(long, value_name = "sm_XX", default_value = DEFAULT_ARCH)]
        arch: String,
        /// Where the PTX goes [default: target/coalesce-ARCH.ptx].
        #[arg(long, value_name = "PATH")]
        out: Option<PathBuf>,
        /// Rebuild the modules the library embeds (host/ptx/: sm_75, and sm_90 +ptx83); commit
        /// them after a kernel change.
        #[arg(long, conflicts_with_all = ["arch", "out"])]
        refresh: bool,
    },
    /// Every registered variant, one line each, with its swept parameter's values.
    List,
    /// Measure every variant on this GPU against its memcpy, and the cost curve; or re-render a
    /// saved report.json (--from), no GPU needed.
    Report(ReportArgs),
    /// The transaction model of every run, no GPU needed: what Nsight Compute should count.
    Model(ModelArgs),
    /// A bundle's ncu.csv beside the model: predicted vs measured, rows off by > 5 % marked.
    NcuTable(NcuTableArgs),
    /// Test and bench binaries, PTX, run.sh, cublas.py and peers.py for a GPU host without Rust.
    Bundle {
        /// The bundle's folder, emptied first [default: bundle/ at the workspace root].
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let cli = Cli::parse_from(&args);
    let result = match cli.command {
        Cmd::BuildPtx { refresh: true, .. } => refresh_ptx(),
        Cmd::BuildPtx { arch, out, .. } => build_ptx(&arch, out),
        Cmd::List => list(),
        // Parsed here (so `--help` and a wrong flag answer without a build), then passed on as given.
        Cmd::Report(report) => {
            // Measuring needs a GPU: say so before minutes of building, and point at the record.
            if report.from.is_none()
                && let Err(e) = coalesce_benches::gpu_present()
            {
                eprintln!(
                    "error: `cargo xtask report` measures on this machine's GPU, and there is none ({e}).\n\
                     To read the H100 record instead (no GPU needed, under a second):\n    \
                     cargo xtask report --from results/report.json"
                );
                return ExitCode::FAILURE;
            }
            return release_bin("report", forwarded(&args, "report"));
        }
        Cmd::Model(_) => return release_bin("model", forwarded(&args, "model")),
        Cmd::NcuTable(_) => return release_bin("ncu_table", forwarded(&args, "ncu-table")),
        Cmd::Bundle { out } => bundle(&out.unwrap_or_else(|| root().join("bundle"))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Stdout(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

type Result<T = (), E = Failure> = std::result::Result<T, E>;

/// Writes `text` to stdout through its lock; a closed pipe comes back as an error, not a panic.
fn print(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// The arguments after subcommand `name`, as the user gave them.
fn forwarded<'a>(args: &'a [String], name: &str) -> &'a [String] {
    args.iter().skip(1).position(|a| a == name).map_or(&[], |i| &args[i + 2..])
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("workspace root")
}

/// Architectures the toolchain's nvptx target knows when `rustc --print target-cpus` does not
/// answer.
const FALLBACK_ARCHES: [&str; 13] = [
    "sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_120",
    "sm_120a",
];

/// The CPU names of `rustc --print target-cpus` output (`    sm_70   - This is the default...`).
fn parse_target_cpus(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| name.starts_with("sm_"))
        .map(str::to_string)
        .collect()
}

/// The architectures the pinned toolchain builds the kernels for: its nvptx target's CPUs, or
/// [`FALLBACK_ARCHES`] when rustc cannot be asked.
fn known_arches() -> Vec<String> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let asked = Command::new(rustc).args(["--print", "target-cpus", "--target", TARGET]).current_dir(root()).output();
    let cpus = match asked {
        Ok(out) if out.status.success() => parse_target_cpus(&String::from_utf8_lossy(&out.stdout)),
        _ => Vec::new(),
    };
    if cpus.is_empty() { FALLBACK_ARCHES.map(str::to_string).to_vec() } else { cpus }
}

/// `arch` if the toolchain knows it, else one line saying what it accepts (numerically sorted).
fn check_arch(arch: &str, known: &[String]) -> Result<(), String> {
    if known.iter().any(|k| k == arch) {
        return Ok(());
    }
    let mut sorted: Vec<&String> = known.iter().collect();
    let digits =
        |a: &str| a.trim_start_matches("sm_").trim_end_matches(char::is_alphabetic).parse::<u32>().unwrap_or(0);
    sorted.sort_by_key(|a| (digits(a), a.len(), a.to_string()));
    let list: Vec<&str> = sorted.iter().map(|s| s.as_str()).collect();
    Err(format!("unknown --arch `{arch}`: the toolchain's {TARGET} target knows {}", list.join(", ")))
}

fn build_ptx(arch: &str, out: Option<PathBuf>) -> Result {
    check_arch(arch, &known_arches())?;
    let out = out.unwrap_or_else(|| root().join("target").join(format!("coalesce-{arch}.ptx")));
    eprintln!("building the kernels for {arch} (nvptx64, release)…");
    let ptx = PtxBuilder::new(root().join("kernels-gpu")).arch(arch).build().map_err(|e| e.to_string())?;
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::copy(&ptx, &out).map_err(|e| format!("{}: {e}", out.display()))?;
    let text = std::fs::read_to_string(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    print(&format!(
        "{} ({} entries, {} bytes)\n",
        out.display(),
        coalesce_builder::ptx_entries(&text).len(),
        text.len()
    ))?;
    match find_ptxas() {
        Some(ptxas) => print(&ptxas_report(&ptxas, &out, arch)?)?,
        None => print("ptxas not on PATH: no resource report\n")?,
    }
    Ok(())
}

/// Rebuilds the modules the host library embeds and writes them into `host/ptx/`.
fn refresh_ptx() -> Result {
    let dir = root().join(EMBEDDED_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (arch, file) in EMBEDDED {
        eprintln!("building the kernels for {arch} (nvptx64, release)…");
        let ptx = PtxBuilder::new(root().join("kernels-gpu")).arch(arch).build().map_err(|e| e.to_string())?;
        let text = std::fs::read_to_string(&ptx).map_err(|e| format!("{}: {e}", ptx.display()))?;
        let out = dir.join(file);
        let old = std::fs::read_to_string(&out).ok();
        let what = match old {
            Some(old) if old == text => "unchanged",
            Some(_) => "updated",
            None => "written",
        };
        std::fs::write(&out, &text).map_err(|e| format!("{}: {e}", out.display()))?;
        let entries = coalesce_builder::ptx_entries(&text).len();
        print(&format!("{EMBEDDED_DIR}/{file}: {what} ({entries} entries, {} bytes)\n", text.len()))?;
        if arch == coalesce_builder::HOPPER_ARCH {
            refresh_sass_digest(&out)?;
        }
    }
    Ok(())
}

/// Writes the Hopper module's SASS digest beside it, where ptxas (and cuobjdump) are found.
fn refresh_sass_digest(ptx: &std::path::Path) -> Result {
    let digest = root().join(EMBEDDED_DIR).join(coalesce_builder::SASS_DIGEST);
    let Some(ptxas) = find_ptxas() else {
        return Ok(print(&format!(
            "{EMBEDDED_DIR}/{}: not refreshed (ptxas not on PATH; the time model's issue bound reads it)\n",
            coalesce_builder::SASS_DIGEST
        ))?);
    };
    let (digests, version) = coalesce_builder::sass::digest_ptx(&ptxas, ptx, coalesce_builder::HOPPER_ARCH)?;
    let text = coalesce_builder::sass::render(&digests, &version);
    let what =
        if std::fs::read_to_string(&digest).ok().as_deref() == Some(text.as_str()) { "unchanged" } else { "written" };
    std::fs::write(&digest, &text).map_err(|e| format!("{}: {e}", digest.display()))?;
    Ok(print(&format!("{EMBEDDED_DIR}/{}: {what} ({} kernels)\n", coalesce_builder::SASS_DIGEST, digests.len()))?)
}

/// Every registered variant with its summary and, for a swept one, its parameter's values named
/// for what they mean (`blocks_per_sm: 1, 2, ... 64, one-trip`).
fn list() -> Result {
    let mut out = io::stdout().lock();
    for v in coalesce_benches::registry::all() {
        let sweep = v.param().map(|p| format!(" [{}]", p.describe_sweep())).unwrap_or_default();
        writeln!(out, "{:<32} {}{sweep}", v.id(), v.summary())?;
    }
    out.flush()?;
    Ok(())
}

/// Builds one of the harness's binaries in release mode and runs it with the user's arguments:
/// the report (its CPU reference rows are timed too, so a debug build would misstate them), the
/// model and the ncu table (which replay launches of 2^26 elements and more). The binary says
/// what went wrong itself, in one line; its exit code is passed on.
fn release_bin(bin: &str, args: &[String]) -> ExitCode {
    let exe = match build_release_bin(bin) {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    match Command::new(&exe).args(args).current_dir(root()).status() {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(s) => ExitCode::from(s.code().unwrap_or(1).clamp(1, 255) as u8),
        Err(e) => {
            eprintln!("error: could not run {}: {e}", exe.display());
            ExitCode::FAILURE
        }
    }
}

/// `cargo build --release` of the harness's binary `bin`; returns its path. Says on stderr what
/// it builds first when the binary is not there yet (the first build takes about a minute), or
/// once a rebuild has taken more than a moment.
fn build_release_bin(bin: &str) -> Result<PathBuf, String> {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from);
    let note = format!("building the {bin} binary (release)…");
    let first = !target.join("release").join(bin).exists();
    if first {
        eprintln!("{note} (the first build takes a minute or two)");
    }
    let (done, waiting) = mpsc::channel::<()>();
    let notice = std::thread::spawn(move || {
        if !first && waiting.recv_timeout(Duration::from_millis(1500)).is_err() {
            eprintln!("{note}");
        }
    });
    let built = cargo_executables(&["build", "--release", "-p", "coalesce-benches", "--bin", bin]);
    let _ = done.send(());
    let _ = notice.join();
    built?.into_iter().next().ok_or_else(|| format!("cargo built no `{bin}` executable"))
}

/// Runs cargo with `--message-format=json` and returns the executables it reports.
fn cargo_executables(args: &[&str]) -> Result<Vec<PathBuf>, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(args)
        .arg("--message-format=json")
        .current_dir(root())
        .output()
        .map_err(|e| format!("cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!("cargo {} failed:\n{}", args.join(" "), String::from_utf8_lossy(&out.stderr)));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    Ok(stdout
        .lines()
        .filter_map(|l| l.split("\"executable\":\"").nth(1))
        .filter_map(|rest| rest.split('"').next())
        .map(PathBuf::from)
        .collect())
}

/// `gpu-0123abcd` -> `gpu`.
fn artifact_name(path: &Path) -> String {
    let name = path.file_name().unwrap().to_string_lossy();
    match name.rsplit_once('-') {
        Some((stem, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => stem.to_string(),
        _ => name.into_owned(),
    }
}

fn copy_into(dir: &Path, from: &Path, name: &str) -> Result<(), String> {
    let to = dir.join(name);
    std::fs::copy(from, &to).map_err(|e| format!("{} -> {}: {e}", from.display(), to.display()))?;
    Ok(())
}

fn bundle(out: &Path) -> Result {
    let bin = out.join("bin");
    let ptx_dir = out.join("ptx");
    if out.exists() {
        std::fs::remove_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    for d in [&bin, &ptx_dir] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    for (_, file) in EMBEDDED {
        copy_into(&ptx_dir, &root().join(EMBEDDED_DIR).join(file), file)?;
    }
    let mut executables = cargo_executables(&["test", "--release", "--no-run", "--workspace"])?;
    executables.extend(cargo_executables(&["bench", "--no-run", "-p", "coalesce-benches"])?);
    for bin_name in ["report", "model", "ncu_table"] {
        executables.extend(cargo_executables(&["build", "--release", "-p", "coalesce-benches", "--bin", bin_name])?);
    }
    let mut names = Vec::new();
    for exe in &executables {
        let name = artifact_name(exe);
        copy_into(&bin, exe, &name)?;
        names.push(name);
    }
    let commit = Command::new("git")
        .args(["describe", "--always", "--dirty", "--abbrev=12"])
        .current_dir(root())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    std::fs::write(out.join("COMMIT"), format!("{commit}\n")).map_err(|e| format!("COMMIT: {e}"))?;
    for script in ["run.sh", "cublas.py", "peers.py"] {
        std::fs::copy(root().join("xtask").join(script), out.join(script)).map_err(|e| format!("{script}: {e}"))?;
    }
    print(&format!("bundle at {} (commit {commit}): {}\n", out.display(), names.join(", ")))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("cargo xtask").chain(args.iter().copied()))
    }

    #[test]
    fn the_readme_installs_the_pinned_toolchain() {
        let pin = std::fs::read_to_string(root().join("rust-toolchain.toml")).unwrap();
        let channel = pin.lines().find_map(|l| l.strip_prefix("channel = ")).unwrap().trim_matches('"');
        let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
        assert!(
            readme.contains(&format!("rustup toolchain install {channel} ")),
            "README's install line is not {channel}"
        );
    }

    #[test]
    fn arguments() {
        Cli::command().debug_assert();
        match parse(&["build-ptx", "--arch", "sm_90"]).unwrap().command {
            Cmd::BuildPtx { arch, out: None, refresh: false } => assert_eq!(arch, "sm_90"),
            other => panic!("{other:?}"),
        }
        match parse(&["build-ptx"]).unwrap().command {
            Cmd::BuildPtx { arch, .. } => assert_eq!(arch, DEFAULT_ARCH),
            other => panic!("{other:?}"),
        }
        assert!(parse(&["build-ptx", "--refresh", "--arch", "sm_90"]).is_err());
        assert!(matches!(parse(&["ncu-table", "x.csv", "--only-off"]).unwrap().command, Cmd::NcuTable(_)));
        assert!(parse(&["ncu-table"]).is_err(), "the CSV is required");
        assert!(parse(&["list", "extra"]).is_err());
        assert!(parse(&["bogus"]).is_err());
        for cmd in ["build-ptx", "list", "report", "model", "ncu-table", "bundle"] {
            assert_eq!(parse(&[cmd, "--help"]).unwrap_err().kind(), clap::error::ErrorKind::DisplayHelp, "{cmd}");
        }
    }

    #[test]
    fn the_binaries_get_the_arguments_as_given() {
        let args: Vec<String> = ["xtask", "model", "--json", "model"].map(String::from).into();
        assert_eq!(forwarded(&args, "model"), ["--json", "model"]);
        let args: Vec<String> = ["xtask", "report"].map(String::from).into();
        assert!(forwarded(&args, "report").is_empty());
    }

    #[test]
    fn arches_are_checked_against_the_toolchain() {
        let text = "Available CPUs for this target:\n    sm_100\n    sm_70   - This is the default target CPU.\n    \
                    sm_75\n    sm_90a\n\nAvailable features:\n";
        let known = parse_target_cpus(text);
        assert_eq!(known, ["sm_100", "sm_70", "sm_75", "sm_90a"]);
        assert!(check_arch("sm_75", &known).is_ok());
        let e = check_arch("sm_42", &known).unwrap_err();
        assert_eq!(
            e,
            "unknown --arch `sm_42`: the toolchain's nvptx64-nvidia-cuda target knows sm_70, sm_75, sm_90a, sm_100"
        );
        // The fallback list holds what the library embeds.
        let fallback = FALLBACK_ARCHES.map(str::to_string);
        for (arch, _) in EMBEDDED {
            assert!(check_arch(arch, &fallback).is_ok(), "{arch}");
        }
    }
}
