//! Every registered variant against its CPU reference on the GPU: fresh random data, poisoned
//! outputs, every element compared, at each family's edge sizes; then the library's entry points
//! over sub-slice views and shared handles (`library/views/...`, `library/handles/...`) and past
//! 2^31 elements (`library/...`).
//!
//! Without a GPU each check prints `SKIPPED` with the reason and counts as skipped, not passed.
//! `COALESCE_REQUIRE_GPU=1` (set by the bundle's run script) turns a missing GPU into a failure.
//! Non-flag arguments filter checks by substring, as with libtest (a check runs if any
//! matches). `COALESCE_DEVICE` picks the GPU; `COALESCE_BASE_MODULE_ONLY=1` runs it as a pre-Hopper
//! GPU would (the Hopper variants SKIPPED);
//! `COALESCE_SKIP_LARGE=1` leaves out the `library/` checks past 2^31 elements.
//!
//! Two more modes serve the bundle's Nsight Compute step, so it keeps no list of its own:
//! `gpu --list` prints `RUN_ID KERNEL LAUNCHES` for every benchmark run (no GPU needed: the
//! `--kernel-name` filter and launch count of `Variant::ncu_filter`/`profiled`), and
//! `gpu --once RUN_ID` prepares that run's workload and launches it exactly once (`--rounds N`:
//! N times back to back, so a profiler can skip the first, which also writes back the lines the
//! workload's own preparation left dirty in L2).
//!
//! `gpu --checks [FILTER...]` prints the ids of the checks it would run, one a line (no GPU
//! needed), for the bundle's `racecheck` step, which runs each under compute-sanitizer on its own.
//! `COALESCE_SANITIZER=1` sizes the matmul checks for a sanitizer
//! (`coalesce_benches::check::sanitizer_sized`).
//!
//! `gpu --peer-matrix` times the library's copy and `cuMemcpyPeer` across every ordered pair of
//! the devices the driver reports (`coalesce_benches::peer::matrix`) and prints the matrices.
//!
//! `gpu --types` times the library's copy, sum and transpose of every element type at 2^28 bytes
//! beside the device memcpy and prints the table (`coalesce_benches::elements::speeds`).
use std::process::ExitCode;
use std::time::Instant;

use coalesce_benches::check::{CheckResult, Rng};
use coalesce_benches::{large, library, open_gpu, registry};

type Check = Box<dyn Fn(&coalesce::Gpu, &mut Rng) -> CheckResult<String>>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        for v in registry::all() {
            for &value in v.sweep_values() {
                let filter = v.ncu_filter().unwrap_or_else(|| "-".into());
                println!("{} {filter} {}", v.run_id(value), v.profiled());
            }
        }
        return ExitCode::SUCCESS;
    }
    if args.iter().any(|a| a == "--types") {
        return types();
    }
    if args.iter().any(|a| a == "--peer-matrix") {
        return match coalesce_benches::peer::matrix() {
            Ok(pairs) => {
                println!("{}", coalesce_benches::peer::matrix_table(&pairs));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("--peer-matrix: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if let Some(i) = args.iter().position(|a| a == "--once") {
        let rounds = match args.iter().position(|a| a == "--rounds").map(|j| args.get(j + 1).map(|n| n.parse::<u32>()))
        {
            None => 1,
            Some(Some(Ok(n))) if n >= 1 => n,
            Some(_) => {
                eprintln!("--rounds takes a count of at least 1");
                return ExitCode::FAILURE;
            }
        };
        return once(args.get(i + 1).map(String::as_str).unwrap_or(""), rounds);
    }
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let mut cases: Vec<(String, Check)> = Vec::new();
    for v in registry::all() {
        for &p in v.check_values() {
            cases.push((v.run_id(p), Box::new(move |gpu, rng| v.check(gpu, rng, p))));
        }
    }
    for check in library::CHECKS {
        cases.push((check.id.to_string(), Box::new(move |gpu, rng| (check.run)(gpu, rng))));
    }
    // COALESCE_SKIP_LARGE=1 leaves them out (compute-sanitizer would take far too long over them).
    if !std::env::var("COALESCE_SKIP_LARGE").is_ok_and(|v| v == "1") {
        for check in large::CHECKS {
            cases.push((check.id.to_string(), Box::new(move |gpu, rng| (check.run)(gpu, rng))));
        }
    }
    cases.retain(|(id, _)| filters.is_empty() || filters.iter().any(|f| id.contains(f.as_str())));
    if args.iter().any(|a| a == "--checks") {
        for (id, _) in &cases {
            println!("{id}");
        }
        return ExitCode::SUCCESS;
    }
    let required = std::env::var("COALESCE_REQUIRE_GPU").is_ok_and(|v| v == "1");
    println!("\nrunning {} GPU checks", cases.len());
    let gpu = match open_gpu() {
        Ok(gpu) => gpu,
        Err(e) => {
            for (id, _) in &cases {
                println!("test {id} ... SKIPPED ({e})");
            }
            println!("\ngpu checks: 0 passed, 0 failed, {} skipped", cases.len());
            if required {
                println!("COALESCE_REQUIRE_GPU=1 but no GPU could be used: {e}");
                return ExitCode::FAILURE;
            }
            return ExitCode::SUCCESS;
        }
    };
    let mut rng = Rng::fresh();
    println!("device: {} ({} SMs), PTX {}, seed {}", gpu.name(), gpu.multiprocessors(), coalesce::PTX_ARCH, rng.seed());
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for (id, check) in &cases {
        let start = Instant::now();
        match check(&gpu, &mut rng) {
            Ok(what) if what.starts_with("SKIPPED") => {
                skipped += 1;
                println!("test {id} ... {what}");
            }
            Ok(what) => {
                passed += 1;
                println!("test {id} ... ok ({what}; {:.1} s)", start.elapsed().as_secs_f64());
            }
            Err(e) => {
                failed += 1;
                println!("test {id} ... FAILED: {e}");
            }
        }
    }
    println!("\ngpu checks: {passed} passed, {failed} failed, {skipped} skipped");
    if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// `--types`: the element types' speed table on the harness's GPU.
fn types() -> ExitCode {
    let run = || -> coalesce::Result<String> {
        let gpu = open_gpu()?;
        let table = coalesce_benches::elements::speed_table(&coalesce_benches::elements::speeds(&gpu)?);
        Ok(format!("device: {} ({} SMs)\n\n{table}", gpu.name(), gpu.multiprocessors()))
    };
    match run() {
        Ok(table) => {
            println!("{table}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("--types: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The `--once` id of an empty launch (`probe_empty`), no registered run.
const NULL_RUN: &str = "probe/empty";

/// Launches run `id`'s workload `rounds` times (after preparing it), for a profiler to catch.
fn once(id: &str, rounds: u32) -> ExitCode {
    if id == NULL_RUN {
        // A launch that reads and writes nothing: what ncu counts for it is the profiler's own
        // floor, which every other run's counters include.
        let run = || -> coalesce::Result<()> {
            let gpu = open_gpu()?;
            gpu.synchronize()?;
            gpu.launch(coalesce::timing::probe::empty(1, 1)?)?;
            gpu.synchronize()
        };
        return match run() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{id}: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let found = registry::all().find_map(|v| v.sweep_values().iter().find(|&&p| v.run_id(p) == id).map(|&p| (v, p)));
    let Some((variant, value)) = found else {
        eprintln!("no benchmark run {id:?} (see `gpu --list`)");
        return ExitCode::FAILURE;
    };
    let run = || -> coalesce::Result<()> {
        let gpu = open_gpu()?;
        let mut workload = variant.bench(&gpu, value)?;
        gpu.synchronize()?;
        for _ in 0..rounds {
            workload.launch(&gpu)?;
        }
        gpu.synchronize()
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        // Nothing to profile on this machine (the peer lessons on one GPU): said, not failed.
        Err(e) if e.is_unavailable() => {
            eprintln!("{id}: SKIPPED ({e})");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{id}: {e}");
            ExitCode::FAILURE
        }
    }
}
