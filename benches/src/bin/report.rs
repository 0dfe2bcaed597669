//! Prints the BENCHMARKS.md tables: every registered variant's median time, GB/s (bytes read +
//! written once) and percentage of the device-to-device memcpy measured in the same run.
//!   report [FILTER]   (substring of `family/variant`)
use std::process::ExitCode;

use coalesce_benches::measure::{Measured, measure_memcpy, measure_variant};
use coalesce_benches::{open_gpu, registry};

fn row(m: &Measured, memcpy_gbps: f64) -> String {
    let tflops = if m.flops > 0 { format!("{:.2}", m.tflops()) } else { "".into() };
    format!(
        "| {} | {:.1} | {:.0} | {:.1}% | {} |",
        m.id,
        m.median.as_secs_f64() * 1e6,
        m.gbps(),
        100.0 * m.gbps() / memcpy_gbps,
        tflops
    )
}

fn main() -> ExitCode {
    let filter = std::env::args().nth(1).unwrap_or_default();
    let gpu = match open_gpu() {
        Ok(gpu) => gpu,
        Err(e) => {
            eprintln!("SKIPPED report: {e}");
            return ExitCode::FAILURE;
        }
    };
    let run = || -> coalesce::Result<()> {
        println!(
            "device: {} ({} SMs), driver CUDA {}, PTX {}",
            gpu.name(),
            gpu.multiprocessors(),
            gpu.driver_version()?,
            coalesce::PTX_ARCH
        );
        let before = measure_memcpy(&gpu)?;
        let base = before.gbps();
        println!("\n| run | median µs | GB/s | % of memcpy | TFLOP/s |\n|---|---:|---:|---:|---:|");
        println!("{}", row(&before, base));
        for variant in registry::all().filter(|v| v.id().contains(&filter)) {
            for &value in variant.sweep_values() {
                let m = measure_variant(&gpu, variant, value)?;
                println!("{}", row(&m, base));
            }
        }
        let after = measure_memcpy(&gpu)?;
        println!("{}", row(&Measured { id: "baseline/memcpy_dtod (again, at the end)".into(), ..after }, base));
        Ok(())
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("report failed: {e}");
            ExitCode::FAILURE
        }
    }
}
