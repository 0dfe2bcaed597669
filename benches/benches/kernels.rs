//! Criterion benches: one group per family, the device memcpy as baseline in every group,
//! swept parameters as benchmark inputs. Each sample is timed with CUDA events (`iter_custom`)
//! and `Throughput::Bytes` makes criterion print GB/s (bytes read + written once).
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

use coalesce::Gpu;
use coalesce_benches::workload::Workload;
use coalesce_benches::{coalescing, open_gpu, registry};

fn bench_workload(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    gpu: &Gpu,
    id: BenchmarkId,
    mut w: Workload,
) {
    group.throughput(Throughput::Bytes(w.bytes));
    if w.on_cpu {
        group.bench_function(id, |b| b.iter(|| w.launch(gpu).expect("CPU run failed")));
    } else {
        group.bench_function(id, |b| b.iter_custom(|iters| gpu.time(iters, || w.launch(gpu)).expect("GPU run failed")));
    }
}

fn families(c: &mut Criterion) {
    let gpu = match open_gpu() {
        Ok(gpu) => gpu,
        Err(e) => {
            println!("SKIPPED all GPU benches: {e}");
            return;
        }
    };
    for (name, family) in registry::families() {
        let mut group = c.benchmark_group(name);
        let memcpy = coalescing::bench_memcpy(&gpu).expect("memcpy workload");
        bench_workload(&mut group, &gpu, BenchmarkId::new("memcpy_dtod", "baseline"), memcpy);
        for variant in family.iter() {
            for &value in variant.sweep_values() {
                let w = variant.bench(&gpu, value).expect("bench workload");
                let param = variant.param().map_or("-".to_string(), |p| format!("{}={value}", p.name));
                bench_workload(&mut group, &gpu, BenchmarkId::new(variant.name(), param), w);
            }
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = families
}
criterion_main!(benches);
