//! Criterion benches over the registry: `cargo bench` (filter with `cargo bench -- FILTER`).
//!
//! One group per family and swept parameter (`coalescing/offset`, `bank/stride`, ...), the swept
//! value as each benchmark's numeric input, so criterion's HTML report
//! (`target/criterion/report/index.html`) draws throughput against the parameter; variants without
//! a parameter share their family's group, and the device memcpy has a group of its own
//! (`baseline`). Each sample is timed with CUDA events (`iter_custom`) and `Throughput::Bytes`
//! makes criterion print GB/s (bytes read + written once).
//!
//! The default timings (0.1 s warm-up, 0.3 s measurement, 10 samples) suit event-timed kernels,
//! whose samples vary by well under 1%, and keep the whole run near five minutes on an H100;
//! criterion's own flags (`--warm-up-time`, `--measurement-time`, `--sample-size`) override them.
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};

use coalesce::Gpu;
use coalesce_benches::family::Variant;
use coalesce_benches::workload::Workload;
use coalesce_benches::{coalescing, open_gpu, registry};

type Group<'a> = criterion::BenchmarkGroup<'a, criterion::measurement::WallTime>;

fn bench_workload(group: &mut Group<'_>, gpu: &Gpu, id: BenchmarkId, mut w: Workload) {
    group.throughput(Throughput::Bytes(w.bytes));
    if w.on_cpu {
        group.bench_function(id, |b| b.iter(|| w.launch(gpu).expect("CPU run failed")));
    } else {
        group.bench_function(id, |b| b.iter_custom(|iters| gpu.time(iters, || w.launch(gpu)).expect("GPU run failed")));
    }
}

/// `family/param` for a swept variant, `family` otherwise.
fn group_name(v: &dyn Variant) -> String {
    match v.param() {
        Some(p) => format!("{}/{}", v.family(), p.name),
        None => v.family().to_string(),
    }
}

fn families(c: &mut Criterion, gpu: &Gpu) {
    let mut baseline = c.benchmark_group("baseline");
    bench_workload(
        &mut baseline,
        gpu,
        BenchmarkId::new("memcpy_dtod", 0),
        coalescing::bench_memcpy(gpu).expect("memcpy"),
    );
    baseline.finish();
    // Groups in registry order, each holding every variant that shares its name.
    let mut names: Vec<String> = Vec::new();
    for v in registry::all() {
        if !names.contains(&group_name(v)) {
            names.push(group_name(v));
        }
    }
    for name in names {
        let mut group = c.benchmark_group(&name);
        // Slow kernels (the naive matmul, the CPU sums) take tens of milliseconds a run: flat
        // sampling keeps their ten samples equal instead of growing linearly.
        group.sampling_mode(SamplingMode::Flat);
        for v in registry::all().filter(|v| group_name(*v) == name) {
            for &value in v.sweep_values() {
                match v.bench(gpu, value) {
                    Ok(w) => bench_workload(&mut group, gpu, BenchmarkId::new(v.name(), value), w),
                    // The Hopper module's kernels on an older GPU: said, not benched.
                    Err(e) if e.is_unavailable() => println!("SKIPPED {}: {e}", v.run_id(value)),
                    Err(e) => panic!("bench workload {}: {e}", v.run_id(value)),
                }
            }
        }
        group.finish();
    }
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_millis(300))
        .nresamples(10_000)
}

/// What `criterion_main!` would do, after a look for the GPU: without one there is nothing to
/// time, so the run is one SKIPPED line, before criterion starts (whose start-up probes for
/// gnuplot and says when it falls back to plotters).
fn main() {
    let gpu = match open_gpu() {
        Ok(gpu) => gpu,
        Err(e) => {
            println!("SKIPPED all GPU benches: {e}");
            return;
        }
    };
    let mut c = config().configure_from_args();
    families(&mut c, &gpu);
    c.final_summary();
}
