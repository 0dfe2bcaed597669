//! Reduction lessons: the registry entries, checks and workloads for `coalesce::reduce`, and the
//! large check of the library's `sum` past 2^31 elements.
use coalesce::model::Counts;
use coalesce::reduce::{self as lib, Method};
use coalesce::util::Fill;
use coalesce::{DeviceBuffer, Gpu, Result};
use coalesce_kernels::reduce::reduce_shuffle_vec4;
use coalesce_kernels::util::fill_value;

use crate::check::{CheckResult, LARGE_N, POISON_BITS, Rng, room, same_values};
use crate::family::{Family, Param, Row};
use crate::workload::{Workload, random_buffer};

/// Sizes checked: one element, around a warp, a prime, and 2^26 + 3 (a vector tail).
pub const CHECK_SIZES: [usize; 5] = [1, 31, 33, 1_000_003, (1 << 26) + 3];
/// Elements of the benchmarks: 2^28 i32 (1 GiB).
pub const BENCH_N: usize = 1 << 28;

/// The reduction variants: the library's methods, the library's sum over views, and the CPU
/// sums the seed compares with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduce {
    /// A library method through `sum_into` (the trees add their partials with a second pass).
    Method(Method),
    /// The library's sum (`sum_to`, the shuffle kernel) over a view starting `offset` elements
    /// into its buffer.
    SumAt,
    /// CPU reference, one thread.
    CpuSingle,
    /// CPU reference, every core.
    CpuThreads,
}

/// Element offsets of `sum_at`'s view: every start a 16-byte boundary can be off by.
const OFFSET: Param = Param { name: "offset", sweep: &[0, 1, 2, 3], check: &[0, 1, 2, 3], labels: None };

impl Family for Reduce {
    const NAME: &'static str = "reduce";
    const ROWS: &'static [Row<Self>] = VARIANTS;

    fn check(self, gpu: &Gpu, rng: &mut Rng, offset: u32) -> CheckResult<String> {
        match self {
            Reduce::Method(method) => check_gpu(gpu, rng, method),
            Reduce::SumAt => check_at(gpu, rng, offset as usize),
            Reduce::CpuSingle => check_cpu(rng, false),
            Reduce::CpuThreads => check_cpu(rng, true),
        }
    }

    fn bench(self, gpu: &Gpu, offset: u32) -> Result<Workload> {
        let method = match self {
            Reduce::Method(method) => method,
            Reduce::SumAt => {
                // A view `offset` elements into a buffer 3 longer than the sum.
                let offset = offset as usize;
                let input = random_buffer::<i32>(gpu, BENCH_N + 3, Fill::Bits, 5)?;
                let mut out: DeviceBuffer<i32> = random_buffer(gpu, 1, Fill::Bits, 7)?;
                return Ok(Workload::new(4 * BENCH_N as u64, move |gpu| {
                    lib::sum_to(gpu, &input.slice(offset..offset + BENCH_N)?, &mut out)
                }));
            }
            Reduce::CpuSingle => return Ok(bench_cpu(false)),
            Reduce::CpuThreads => return Ok(bench_cpu(true)),
        };
        let n = BENCH_N;
        let input = random_buffer::<i32>(gpu, n, Fill::Bits, 5)?;
        let needed = lib::partials_needed(method, n, gpu.multiprocessors());
        let mut partials = random_buffer::<i32>(gpu, needed.max(1), Fill::Bits, 6)?;
        let mut out: DeviceBuffer<i32> = random_buffer(gpu, 1, Fill::Bits, 7)?;
        Ok(Workload::new(4 * n as u64, move |gpu| lib::sum_into(gpu, method, &input, &mut partials, &mut out)))
    }

    fn model(self, offset: u32, sms: u32) -> Result<Option<Counts>> {
        use coalesce::model::reduce as model;
        match self {
            // The profiled launch is the first pass (`sum_into`'s first kernel) over BENCH_N.
            Reduce::Method(method) => model::first_launch(method, BENCH_N, sms).map(Some),
            Reduce::SumAt => model::shuffle_at(BENCH_N, offset as usize, sms).map(Some),
            Reduce::CpuSingle | Reduce::CpuThreads => Ok(None),
        }
    }
}

/// The reduction variants, one row each, in teaching order.
#[rustfmt::skip]
const VARIANTS: &[Row<Reduce>] = &[
    method(Method::Seed, "seed", "the seed's kernel and launch (32 x 256): grid-stride add, 2-barrier tree, 1 atomic a block"),
    method(Method::SeedFilled, "seed_filled", "the seed's kernel with a grid that fills the GPU (8 blocks per SM)"),
    method(Method::InterleavedDivergent, "interleaved_divergent", "tree 1: t % 2d == 0 works, divergent warps"),
    method(Method::InterleavedConflicts, "interleaved_conflicts", "tree 2: contiguous workers at index 2dt, bank conflicts"),
    method(Method::Sequential, "sequential", "tree 3: sequential addressing, conflict-free"),
    method(Method::FirstAdd, "first_add", "tree 4: two elements added while loading, half the blocks"),
    method(Method::UnrollLastWarp, "unroll_last_warp", "tree 5: the last warp finishes with shuffles, no block barriers"),
    method(Method::ManyPerThread, "many_per_thread", "tree 6: grid-stride accumulation before the tree, GPU-sized grid"),
    method(Method::ShuffleVec4, "shuffle_vec4", "16-byte loads, 4 in flight, warp shuffles, 1 atomic a block"),
    Row::new(Reduce::SumAt, "sum_at", "shuffle_vec4 over a view `offset` elements in: up to 127 elements added one by one, so every warp's 16-byte loads cover one aligned 512-byte block").launches(reduce_shuffle_vec4).swept(OFFSET),
    Row::new(Reduce::CpuSingle, "cpu_single", "CPU reference: one thread"),
    Row::new(Reduce::CpuThreads, "cpu_threads", "CPU reference: every core (std::thread::scope)"),
];

/// A library method's row, run through `sum_into`: its first pass's kernel (the one ncu
/// profiles), then, for the methods that write partial sums, the second pass's.
const fn method(method: Method, name: &'static str, summary: &'static str) -> Row<Reduce> {
    let row = Row::new(Reduce::Method(method), name, summary);
    let row = match method.lesson_kernel() {
        Some(first) => row.launches(first),
        None => row.launches(reduce_shuffle_vec4),
    };
    if method.atomic() { row } else { row.launches(reduce_shuffle_vec4) }
}

/// `sum` and `sum_to` over views `offset` elements into buffers 3 longer, at every check size,
/// against the CPU.
fn check_at(gpu: &Gpu, rng: &mut Rng, offset: usize) -> CheckResult<String> {
    // `sum` peels up to 127 elements to the first 512-byte boundary: starts `offset + 4j` cover,
    // over the four offsets, every position in a 512-byte block; sizes straddle the head lengths.
    const SIZES: [usize; 14] = [1, 2, 31, 32, 33, 127, 128, 129, 130, 255, 513, 4099, 1_000_003, (1 << 26) + 3];
    const STARTS: usize = 32;
    for n in SIZES {
        let host = rng.i32s(n + 4 * STARTS);
        let input = gpu.upload(&host)?;
        // The large sizes at the first and last start only: the small ones find the edges.
        let starts: Vec<usize> = if n > 5000 { vec![0, STARTS - 1] } else { (0..STARTS).collect() };
        for at in starts.into_iter().map(|j| offset + 4 * j) {
            let view = input.slice(at..at + n)?;
            let want = lib::sum_cpu(&host[at..at + n]);
            let mut total = gpu.poisoned::<i32>(1, POISON_BITS)?;
            lib::sum_to(gpu, &view, &mut total)?;
            same_values(&format!("sum_to of n={n} at element {at}"), &total.to_vec()?, &[want])?;
            same_values(&format!("sum of n={n} at element {at}"), &[lib::sum(gpu, &view)?], &[want])?;
        }
    }
    Ok(format!("n in {SIZES:?} at elements {offset}+4j (j < {STARTS}), sum and sum_to"))
}

/// Every check size against the CPU sum (poisoned partials and output, so a pass that skipped
/// its write never matches), then the refusal of a buffer off a 16-byte boundary where the
/// method reads one with vector loads, which must leave the output untouched.
fn check_gpu(gpu: &Gpu, rng: &mut Rng, method: Method) -> CheckResult<String> {
    let sms = gpu.multiprocessors();
    for n in CHECK_SIZES {
        let input = rng.i32s(n);
        let d_input = gpu.upload(&input)?;
        let mut partials = gpu.poisoned::<i32>(lib::partials_needed(method, n, sms).max(1), POISON_BITS)?;
        let mut out = gpu.poisoned::<i32>(1, POISON_BITS)?;
        lib::sum_into(gpu, method, &d_input, &mut partials, &mut out)?;
        gpu.synchronize()?;
        same_values(&format!("sum of n={n}"), &out.to_vec()?, &[lib::sum_cpu(&input)])?;
    }
    // Sub-slices at element offsets 1-3 (4-12 bytes past a 16-byte boundary): the input for
    // every method, the partials too for the trees.
    let n = 1000;
    let host = rng.i32s(n + 3);
    let input = gpu.upload(&host)?;
    let mut partials = gpu.poisoned::<i32>(lib::partials_needed(method, n, sms) + 3, POISON_BITS)?;
    for at in 1..4 {
        let mut out = gpu.poisoned::<i32>(1, POISON_BITS)?;
        lib::sum_into(gpu, method, &input.slice(at..at + n)?, &mut partials.slice_mut(at..)?, &mut out)?;
        gpu.synchronize()?;
        same_values(&format!("sum of n={n} at element {at}"), &out.to_vec()?, &[lib::sum_cpu(&host[at..at + n])])?;
    }
    Ok(format!("n in {CHECK_SIZES:?}; input and partials at element offsets 1-3"))
}

/// The CPU references: one thread against a 64-bit sum truncated to 32 bits (the wrapping sum
/// computed another way); every core against one thread.
fn check_cpu(rng: &mut Rng, threads: bool) -> CheckResult<String> {
    for n in CHECK_SIZES {
        let input = rng.i32s(n);
        let (what, got, want) = if threads {
            ("threaded CPU sum", lib::sum_cpu_threads(&input), lib::sum_cpu(&input))
        } else {
            ("CPU sum", lib::sum_cpu(&input), input.iter().map(|&x| i64::from(x)).sum::<i64>() as i32)
        };
        same_values(&format!("{what} of n={n}"), &[got], &[want])?;
    }
    Ok(if threads {
        format!("n in {CHECK_SIZES:?}, against the single-thread sum")
    } else {
        format!("n in {CHECK_SIZES:?}, against a 64-bit sum: the reference every GPU check compares with")
    })
}

fn bench_cpu(threads: bool) -> Workload {
    let mut rng = Rng::new(11);
    let input = rng.i32s(BENCH_N);
    Workload::cpu(4 * BENCH_N as u64, move || {
        std::hint::black_box(if threads { lib::sum_cpu_threads(&input) } else { lib::sum_cpu(&input) });
    })
}

/// The wrapping sum of `fill_value(i, seed, Fill::Bits) as i32` over `i < n`, on every core.
fn fill_sum_cpu(n: usize, seed: u32) -> i32 {
    let threads = std::thread::available_parallelism().map_or(4, |t| t.get());
    let chunk = n.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let parts: Vec<_> = (0..n)
            .step_by(chunk)
            .map(|start| {
                s.spawn(move || {
                    (start..(start + chunk).min(n))
                        .fold(0i32, |a, i| a.wrapping_add(fill_value(i as u64, seed, Fill::Bits) as i32))
                })
            })
            .collect();
        parts.into_iter().fold(0i32, |a, h| a.wrapping_add(h.join().expect("sum thread")))
    })
}

/// `reduce::sum` over `LARGE_N` (2^31 + 5) i32 filled on the GPU, against the CPU's sum of the
/// same hash: 64-bit indices, a grid-stride loop of many trips and a 1-element tail.
pub fn check_large(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    let n = LARGE_N;
    if let Some(skip) = room(gpu, 4 * n as u64) {
        return Ok(skip);
    }
    let seed = rng.next_u64() as u32;
    let input: DeviceBuffer<i32> = random_buffer(gpu, n, Fill::Bits, seed)?;
    let got = lib::sum(gpu, &input)?;
    same_values("sum of 2^31+5", &[got], &[fill_sum_cpu(n, seed)])?;
    Ok(format!("{n} i32, against the CPU's sum of the same hash"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_sum_matches_a_plain_fold() {
        for n in [1, 7, 1000, 100_003] {
            let want = (0..n).fold(0i32, |a, i| a.wrapping_add(fill_value(i as u64, 9, Fill::Bits) as i32));
            assert_eq!(fill_sum_cpu(n, 9), want, "n={n}");
        }
    }

    #[test]
    fn every_method_is_registered_once_in_order() {
        let methods: Vec<Method> = Reduce::ROWS
            .iter()
            .filter_map(|row| match row.variant {
                Reduce::Method(method) => Some(method),
                _ => None,
            })
            .collect();
        assert_eq!(methods, Method::ALL);
    }
}
