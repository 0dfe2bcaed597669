//! Every registered variant against its CPU reference on the GPU: fresh random data, poisoned
//! outputs, every element compared, at each family's edge sizes.
//!
//! Without a GPU each check prints `SKIPPED` with the reason and counts as skipped, not passed.
//! `COALESCE_REQUIRE_GPU=1` (set by the bundle's run script) turns a missing GPU into a failure.
//! A non-flag argument filters checks by substring, as with libtest.
use std::process::ExitCode;
use std::time::Instant;

use coalesce::Gpu;
use coalesce::check::Rng;
use coalesce::registry;

fn main() -> ExitCode {
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let cases: Vec<_> = registry::all()
        .flat_map(|v| v.check_values().iter().map(move |&p| (v.run_id(p), v, p)))
        .filter(|(id, _, _)| filter.as_deref().is_none_or(|f| id.contains(f)))
        .collect();
    let required = std::env::var("COALESCE_REQUIRE_GPU").is_ok_and(|v| v == "1");
    println!("\nrunning {} GPU checks", cases.len());
    let gpu = match Gpu::new() {
        Ok(gpu) => gpu,
        Err(e) => {
            for (id, _, _) in &cases {
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
    let (mut passed, mut failed) = (0, 0);
    for (id, variant, param) in &cases {
        let start = Instant::now();
        match (variant.check)(&gpu, &mut rng, *param) {
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
    println!("\ngpu checks: {passed} passed, {failed} failed, 0 skipped");
    if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
