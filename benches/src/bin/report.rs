//! The lesson report: measures every registered variant on this machine's GPU against the device
//! memcpy of the same run and writes `DIR/report.md`, `DIR/report.json`, the plots and
//! `DIR/report.html` (the same report as one page, plots inlined).
//!
//!   report [--out DIR] [--no-sweep] [--peers PEERS.json] [FILTER]
//!                                        measure (needs a GPU), then render (default DIR: target/report)
//!   report --from FILE.json [--out DIR] [--peers PEERS.json] [--ncu NCU.csv]
//!                                        re-render a saved run, no GPU needed
//!
//! FILTER is a substring of `family/variant/param=value`, or of `sweep/ENTRY` for the cost curve
//! (the library's entry points over sizes, `coalesce_benches::sweep`), which `--no-sweep` leaves
//! out. `--peers` puts `peers.py`'s timings (PyTorch, CuPy, cuBLAS on the same GPU) beside the
//! cost curve; re-rendering with it keeps them in the written report.json. A progress line (run k
//! of n, time left) goes to stderr while it measures. `--ncu` puts a bundle's Nsight Compute
//! counters (`run.sh ncu`'s `ncu.csv`, from the same kind of GPU) beside the model's DRAM bytes,
//! run by run; they are kept in the written report.json. `--help` says the same.
use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use coalesce_benches::cli::{Failure, ReportArgs, exit, print};

use coalesce_benches::family::Variant;
use coalesce_benches::measure::{Measured, measure_memcpy, measure_variant};
use coalesce_benches::open_gpu;
use coalesce_benches::predict::predict_shaped;
use coalesce_benches::report::{Device, Measurement, Param, Report, Skipped, attach_counters, attach_models, render};

fn measurement(m: &Measured, v: Option<(&dyn Variant, u32)>) -> Measurement {
    let (family, variant, param, summary) = match v {
        Some((v, value)) => (
            v.family().to_string(),
            v.name().to_string(),
            v.param().map(|p| Param { name: p.name.to_string(), value }),
            v.summary().to_string(),
        ),
        None => ("baseline".into(), "memcpy_dtod".into(), None, "cuMemcpyDtoDAsync of 2 x 256 MiB".into()),
    };
    Measurement {
        run: m.id.clone(),
        family,
        variant,
        param,
        summary,
        median_us: m.median.as_secs_f64() * 1e6,
        bytes: m.bytes,
        flops: m.flops,
        on_cpu: m.on_cpu,
        model: None,
        ncu: None,
    }
}

fn measure(filter: &str, with_sweep: bool) -> Result<Report, String> {
    let gpu = open_gpu().map_err(|e| format!("report needs a GPU: {e}"))?;
    let runs = coalesce_benches::predict::runs(filter);
    let fail = |e: coalesce::Error| e.to_string();
    let memcpy = measurement(&measure_memcpy(&gpu).map_err(fail)?, None);
    let started = Instant::now();
    let params = coalesce_benches::calibrate::calibrate(&gpu).map_err(|e| format!("probes: {e}"))?;
    eprint!("probes ({:.0} s): {}", started.elapsed().as_secs_f64(), params.describe());
    let start = Instant::now();
    let mut measured = Vec::new();
    let mut skipped = Vec::new();
    for (k, &(v, p)) in runs.iter().enumerate() {
        let elapsed = start.elapsed().as_secs_f64();
        let left = if k == 0 { 0.0 } else { elapsed / k as f64 * (runs.len() - k) as f64 };
        eprint!("\r\x1b[K[{}/{}] {} ({:.0} s left)", k + 1, runs.len(), v.run_id(p), left);
        let _ = std::io::stderr().flush();
        match measure_variant(&gpu, v, p) {
            Ok(m) => measured.push(measurement(&m, Some((v, p)))),
            // A kernel this device cannot run (the Hopper module on an older GPU): left out.
            Err(e) if e.is_unavailable() => {
                eprintln!("\r\x1b[Kskipped {}: {e}", v.run_id(p));
                skipped.push(Skipped { run: v.run_id(p), reason: e.to_string() });
            }
            Err(e) => return Err(format!("{}: {e}", v.run_id(p))),
        }
    }
    eprintln!("\r\x1b[K{} runs in {:.0} s", runs.len(), start.elapsed().as_secs_f64());
    // The model beside every timing: what Nsight Compute should count for the run's profiled
    // launch on this GPU's SM count (CPU, a few seconds for every run on a many-core host).
    // Joined by run id: a skipped run (the Hopper module on an older GPU) shifts no other run's.
    for (run, e) in attach_models(&mut measured, predict_shaped(&runs, coalesce::model::Device::of(gpu.info()))) {
        eprintln!("{run}: no model ({e})");
    }
    let sweep = if with_sweep {
        let start = Instant::now();
        let rows = coalesce_benches::sweep::run(&gpu, filter).map_err(|e| format!("sweep: {e}"))?;
        eprintln!("sweep: {} points in {:.0} s", rows.len(), start.elapsed().as_secs_f64());
        rows
    } else {
        Vec::new()
    };
    let info = gpu.info();
    Ok(Report {
        device: Device {
            name: info.name.clone(),
            multiprocessors: info.multiprocessors,
            compute_capability: info.compute_capability,
            driver: gpu.driver_version().map_err(fail)?,
            memory_bytes: info.memory_bytes,
        },
        date: std::env::var("COALESCE_DATE").unwrap_or_else(|_| now_utc()),
        commit: std::env::var("COALESCE_COMMIT").unwrap_or_else(|_| env!("COALESCE_BUILD_COMMIT").to_string()),
        ptx_arch: coalesce::PTX_ARCH.to_string(),
        memcpy,
        params: Some(params),
        runs: measured,
        sweep,
        peers: None,
        skipped,
    })
}

/// The current UTC time as RFC 3339, from the system clock (no date crate needed).
fn now_utc() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

fn main() -> ExitCode {
    exit(run(ReportArgs::parse()))
}

fn run(args: ReportArgs) -> Result<(), Failure> {
    let mut report = match &args.from {
        Some(file) => {
            let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
            Report::from_json(&text).map_err(|e| format!("{}: {e}", file.display()))?
        }
        None => measure(&args.filter, !args.no_sweep)?,
    };
    if args.remodel {
        let runs: Vec<_> = coalesce_benches::predict::runs(&args.filter)
            .into_iter()
            .filter(|(v, p)| report.runs.iter().any(|m| m.run == v.run_id(*p)))
            .collect();
        let device = coalesce::model::Device { sms: report.device.multiprocessors, ..Default::default() };
        let (start, total) = (Instant::now(), runs.len());
        let predictions = coalesce_benches::predict::predict_with_progress(&runs, device, |k, run| {
            eprint!("\r\x1b[K[{k}/{total}] {run} ({:.0} s)", start.elapsed().as_secs_f64());
        });
        eprintln!("\r\x1b[K{total} runs modelled in {:.0} s", start.elapsed().as_secs_f64());
        for (run, e) in attach_models(&mut report.runs, predictions) {
            eprintln!("{run}: no model ({e})");
        }
    }
    if let Some(file) = &args.ncu {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let profiled = coalesce_benches::ncu::parse_checked(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let found = attach_counters(&mut report.runs, &profiled);
        eprintln!("{}: counters of {found} of the report's {} runs", file.display(), report.runs.len());
    }
    if let Some(file) = &args.peers {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        report.peers = Some(serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?);
    }
    let files = render(&report, &args.out).map_err(|e| format!("writing the report to {}: {e}", args.out.display()))?;
    print(&files.iter().map(|f| format!("{}\n", f.display())).collect::<String>())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rfc3339() {
        let d = now_utc();
        assert_eq!(d.len(), 20);
        assert!(d.starts_with("20") && d.ends_with('Z'));
    }
}
