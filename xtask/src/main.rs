//! `cargo xtask build-ptx | list | report | model | ncu-table | bundle`: the project's own commands.
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use coalesce_builder::{DEFAULT_ARCH, EMBEDDED, EMBEDDED_DIR, PtxBuilder, find_ptxas, ptxas_report};

const USAGE: &str = "usage:
  cargo xtask build-ptx [--arch sm_XX] [--out PATH]   build the kernels to PTX (default arch sm_75)
                                                      and print ptxas's resource report if ptxas is on PATH
  cargo xtask build-ptx --refresh                     rebuild the modules the library embeds (host/ptx/:
                                                      sm_75, and sm_90 +ptx83); commit them after a kernel change
  cargo xtask list                                    every registered variant, one line each
  cargo xtask report [--out DIR] [--no-sweep] [FILTER]
                                                      measure every variant on this GPU against its memcpy, and
                                                      the cost curve (the library's entry points over sizes;
                                                      FILTER `sweep` for it alone), and write DIR/report.md,
                                                      report.json and SVG plots (default DIR: target/report)
  cargo xtask report --from FILE.json [--out DIR] [--peers PEERS.json]
                                                      re-render a saved report.json, no GPU needed; --peers puts
                                                      a bundle's peers.json (PyTorch, CuPy, cuBLAS) beside the
                                                      cost curve
  cargo xtask model [FILTER] [--json] [--sms N]       the transaction model of every run, no GPU needed: what
                                                      Nsight Compute should count for the launch the ncu step
                                                      profiles (table, or one JSON object per line)
  cargo xtask ncu-table CSV [--sms N] [--only-off]    a bundle's ncu.csv beside the model: markdown table of
                                                      predicted vs measured, rows off by > 5 % (DRAM 10 %) marked
  cargo xtask bundle [--out DIR]                      test/bench binaries, PTX, run.sh, cublas.py and peers.py for a GPU host
                                                      without Rust (default DIR: bundle)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("build-ptx") => build_ptx(&args[1..]),
        Some("list") => list(),
        Some("report") => return release_bin("report", &args[1..]),
        Some("model") => return release_bin("model", &args[1..]),
        Some("ncu-table") => return release_bin("ncu_table", &args[1..]),
        Some("bundle") => bundle(&args[1..]),
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("workspace root")
}

/// The value after `--name`, if present.
fn option(args: &[String], name: &str) -> Result<Option<String>, String> {
    match args.iter().position(|a| a == name) {
        None => Ok(None),
        Some(i) => args.get(i + 1).cloned().map(Some).ok_or(format!("{name} needs a value\n{USAGE}")),
    }
}

fn check_options(args: &[String], known: &[&str]) -> Result<(), String> {
    let mut i = 0;
    while i < args.len() {
        if !known.contains(&args[i].as_str()) {
            return Err(format!("unknown argument `{}`\n{USAGE}", args[i]));
        }
        i += 2;
    }
    Ok(())
}

fn build_ptx(args: &[String]) -> Result<(), String> {
    if args.first().map(String::as_str) == Some("--refresh") {
        return match args.len() {
            1 => refresh_ptx(),
            _ => Err(format!("--refresh takes no other argument\n{USAGE}")),
        };
    }
    check_options(args, &["--arch", "--out"])?;
    let arch = option(args, "--arch")?.unwrap_or_else(|| DEFAULT_ARCH.to_string());
    let out = option(args, "--out")?
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target").join(format!("coalesce-{arch}.ptx")));
    let ptx = PtxBuilder::new(root().join("kernels-gpu")).arch(&arch).build().map_err(|e| e.to_string())?;
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::copy(&ptx, &out).map_err(|e| format!("{}: {e}", out.display()))?;
    let text = std::fs::read_to_string(&out).map_err(|e| e.to_string())?;
    println!("{} ({} entries, {} bytes)", out.display(), coalesce_builder::ptx_entries(&text).len(), text.len());
    match find_ptxas() {
        Some(ptxas) => print!("{}", ptxas_report(&ptxas, &out, &arch)?),
        None => println!("ptxas not on PATH: no resource report"),
    }
    Ok(())
}

/// Rebuilds the modules the host library embeds and writes them into `host/ptx/`.
fn refresh_ptx() -> Result<(), String> {
    let dir = root().join(EMBEDDED_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (arch, file) in EMBEDDED {
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
        println!("{EMBEDDED_DIR}/{file}: {what} ({entries} entries, {} bytes)", text.len());
    }
    Ok(())
}

fn list() -> Result<(), String> {
    for v in coalesce_benches::registry::all() {
        let sweep = v
            .param()
            .map(|p| format!(" [{} {}..={}]", p.name, p.sweep[0], p.sweep[p.sweep.len() - 1]))
            .unwrap_or_default();
        println!("{:<32} {}{}", v.id(), v.summary(), sweep);
    }
    Ok(())
}

/// Runs one of the harness's binaries in release mode with the user's arguments: the report
/// (its CPU reference rows are timed too, so a debug build would misstate them), the model and
/// the ncu table (which replay launches of 2^26 elements and more). The binary says what went
/// wrong itself, in one line; its exit code is passed on.
fn release_bin(bin: &str, args: &[String]) -> ExitCode {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["run", "--quiet", "--release", "-p", "coalesce-benches", "--bin", bin, "--"])
        .args(args)
        .current_dir(root())
        .status();
    match status {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(s) => ExitCode::from(s.code().unwrap_or(1).clamp(1, 255) as u8),
        Err(e) => {
            eprintln!("could not run cargo: {e}");
            ExitCode::FAILURE
        }
    }
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

fn bundle(args: &[String]) -> Result<(), String> {
    check_options(args, &["--out"])?;
    let out = option(args, "--out")?.map(PathBuf::from).unwrap_or_else(|| root().join("bundle"));
    let bin = out.join("bin");
    let ptx_dir = out.join("ptx");
    if out.exists() {
        std::fs::remove_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
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
    std::fs::write(out.join("COMMIT"), format!("{commit}\n")).map_err(|e| e.to_string())?;
    for script in ["run.sh", "cublas.py", "peers.py"] {
        std::fs::copy(root().join("xtask").join(script), out.join(script)).map_err(|e| format!("{script}: {e}"))?;
    }
    println!("bundle at {} (commit {commit}): {}", out.display(), names.join(", "));
    Ok(())
}
