//! Criterion benches over the registry: `cargo bench` (filter with `cargo bench -- FILTER`).
//!
//! Groups, and what criterion's HTML report (`target/criterion/report/index.html`) draws for them:
//! - a numeric sweep (offset, stride, per_thread, blocks_per_sm, size, ...) is one group per family
//!   and parameter (`coalescing/offset`, `bank/stride`), each variant a function and the value its
//!   numeric parameter, and no throughput: criterion draws a group's line chart only when all its
//!   inputs are numbers and takes the x axis from the throughput's byte count when one is set
//!   (`as_number` in criterion 0.8's `report.rs`), which is the same for every offset, so a
//!   throughput would leave the offsets a violin plot of rows. Sweeps over positive values spanning
//!   8× or more get a logarithmic summary axis (`PlotConfiguration::summary_scale`).
//! - a value that names something rather than counts it (a transpose shape, a histogram input, an
//!   offset pair, `blocks_per_sm=0` meaning one trip) is a group of its own, `family/param=label`,
//!   comparing the variants at that value (`transpose/shape=8192x8192/naive`), with
//!   `Throughput::Bytes`, so criterion prints GB/s (bytes read + written once);
//! - variants without a parameter share their family's group, with throughput, and the device
//!   memcpy has a group of its own (`baseline`).
//!
//! Each sample is timed with CUDA events (`iter_custom`).
//!
//! The default timings (0.1 s warm-up, 0.3 s measurement, 10 samples) suit event-timed kernels,
//! whose samples vary by well under 1%, and keep the whole run near five minutes on an H100;
//! criterion's own flags (`--warm-up-time`, `--measurement-time`, `--sample-size`) override them.
use std::time::Duration;

use criterion::{AxisScale, BenchmarkId, Criterion, PlotConfiguration, SamplingMode, Throughput};

use coalesce::Gpu;
use coalesce_benches::family::Variant;
use coalesce_benches::workload::Workload;
use coalesce_benches::{coalescing, open_gpu, registry};

type Group<'a> = criterion::BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// One benchmark of the plan: a variant at one value, and how it is named.
struct Bench {
    variant: &'static dyn Variant,
    value: u32,
    /// The numeric parameter criterion plots against, for numeric sweeps.
    numeric: Option<f64>,
}

impl Bench {
    /// The benchmark's id inside its group: `variant/value` for numeric sweeps, else the variant.
    fn id(&self) -> BenchmarkId {
        match self.numeric {
            Some(_) => BenchmarkId::new(self.variant.name(), self.label()),
            None => BenchmarkId::from_parameter(self.variant.name()),
        }
    }

    /// The id as `--list` prints it, after the group's name.
    fn listed(&self) -> String {
        match self.numeric {
            Some(_) => format!("{}/{}", self.variant.name(), self.label()),
            None => self.variant.name().to_string(),
        }
    }

    fn label(&self) -> String {
        self.variant.param().map_or_else(|| self.value.to_string(), |p| p.label(self.value))
    }
}

/// The groups, in registry order, each with its benchmarks (see the module docs).
fn plan() -> Vec<(String, Vec<Bench>)> {
    let mut groups: Vec<(String, Vec<Bench>)> = Vec::new();
    for v in registry::all() {
        for &value in v.sweep_values() {
            let (name, numeric) = match v.param() {
                None => (v.family().to_string(), None),
                Some(p) => match p.label(value).parse::<f64>() {
                    Ok(x) => (format!("{}/{}", v.family(), p.name), Some(x)),
                    // A `/` inside a label (`src+1/dst+2`) would read as one more level of the id.
                    Err(_) => (format!("{}/{}={}", v.family(), p.name, p.label(value).replace('/', ",")), None),
                },
            };
            let bench = Bench { variant: v, value, numeric };
            match groups.iter_mut().find(|(n, _)| *n == name) {
                Some((_, benches)) => benches.push(bench),
                None => groups.push((name, vec![bench])),
            }
        }
    }
    groups
}

/// A logarithmic summary axis for positive values spanning 8× or more (powers of two, sizes),
/// linear otherwise (offsets from 0).
fn scale(benches: &[Bench]) -> AxisScale {
    let values: Vec<f64> = benches.iter().filter_map(|b| b.numeric).collect();
    let (lo, hi) = values.iter().fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
    if !values.is_empty() && lo > 0.0 && hi >= 8.0 * lo { AxisScale::Logarithmic } else { AxisScale::Linear }
}

fn bench_workload(group: &mut Group<'_>, gpu: &Gpu, id: BenchmarkId, throughput: bool, mut w: Workload) {
    if throughput {
        group.throughput(Throughput::Bytes(w.bytes));
    }
    if w.on_cpu {
        group.bench_function(id, |b| b.iter(|| w.launch(gpu).expect("CPU run failed")));
    } else {
        group.bench_function(id, |b| {
            b.iter_custom(|iters| coalesce::timing::time(gpu, iters, || w.launch(gpu)).expect("GPU run failed"))
        });
    }
}

fn families(c: &mut Criterion, gpu: &Gpu) {
    let mut baseline = c.benchmark_group("baseline");
    let memcpy = coalescing::bench_memcpy(gpu).expect("memcpy");
    bench_workload(&mut baseline, gpu, BenchmarkId::from_parameter("memcpy_dtod"), true, memcpy);
    baseline.finish();
    for (name, benches) in plan() {
        let mut group = c.benchmark_group(&name);
        // Slow kernels (the naive matmul, the CPU sums) take tens of milliseconds a run: flat
        // sampling keeps their ten samples equal instead of growing linearly.
        group.sampling_mode(SamplingMode::Flat);
        group.plot_config(PlotConfiguration::default().summary_scale(scale(&benches)));
        for b in &benches {
            match b.variant.bench(gpu, b.value) {
                Ok(w) => bench_workload(&mut group, gpu, b.id(), b.numeric.is_none(), w),
                // The Hopper module's kernels on an older GPU: said, not benched.
                Err(e) if e.is_unavailable() => println!("SKIPPED {}: {e}", b.variant.run_id(b.value)),
                Err(e) => panic!("bench workload {}: {e}", b.variant.run_id(b.value)),
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
            // `--list` needs no GPU: the benchmarks a run would time, as criterion lists them.
            if std::env::args().any(|a| a == "--list") {
                println!("baseline/memcpy_dtod: benchmark");
                for (name, benches) in plan() {
                    for b in &benches {
                        println!("{name}/{}: benchmark", b.listed());
                    }
                }
            }
            return;
        }
    };
    let mut c = config().configure_from_args();
    families(&mut c, &gpu);
    c.final_summary();
}
