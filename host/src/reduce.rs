//! Integer sum reduction: launchers, CPU references and registry entries for
//! `kernels-gpu/src/reduce.rs`. Tree kernels write one partial sum per block; a second pass
//! (the shuffle kernel) adds the partials, and both passes are timed.
use cust::memory::{DeviceBuffer, DeviceSlice};

use crate::check::{POISON_BITS, Rng};
use crate::error::{Error, Result, at_least, check_aligned16, elements, exactly};
use crate::gpu::{Gpu, Launch, kernel_args};
use crate::registry::{Variant, Workload, variant};
use crate::util::{Fill, random_buffer};
use coalesce_kernels::coalescing::grid_stride_blocks;
pub use coalesce_kernels::reduce::*;

/// Sizes checked: one element, around a warp, a prime, and 2^26 + 3 (a vector tail).
pub const CHECK_SIZES: [usize; 5] = [1, 31, 33, 1_000_003, (1 << 26) + 3];
/// Elements of the benchmarks: 2^28 i32 (1 GiB).
pub const BENCH_N: usize = 1 << 28;

/// The reduction kernels, in teaching order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// The seed's kernel with the seed's launch (32 blocks of 256).
    Seed,
    /// The seed's kernel with a grid that fills the GPU.
    SeedFilled,
    InterleavedDivergent,
    InterleavedConflicts,
    Sequential,
    FirstAdd,
    UnrollLastWarp,
    ManyPerThread,
    ShuffleVec4,
}

impl Method {
    pub const fn kernel(self) -> &'static str {
        match self {
            Method::Seed | Method::SeedFilled => "reduce_seed",
            Method::InterleavedDivergent => "reduce_interleaved_divergent",
            Method::InterleavedConflicts => "reduce_interleaved_conflicts",
            Method::Sequential => "reduce_sequential",
            Method::FirstAdd => "reduce_first_add",
            Method::UnrollLastWarp => "reduce_unroll_last_warp",
            Method::ManyPerThread => "reduce_many_per_thread",
            Method::ShuffleVec4 => "reduce_shuffle_vec4",
        }
    }

    /// Whether the kernel adds into the output itself (atomics) rather than writing partials.
    const fn atomic(self) -> bool {
        matches!(self, Method::Seed | Method::SeedFilled | Method::ShuffleVec4)
    }

    /// Blocks for `n` elements on a GPU with `sms` multiprocessors.
    pub fn blocks(self, n: u32, sms: u32) -> u32 {
        match self {
            Method::Seed => SEED_BLOCKS,
            Method::SeedFilled | Method::ManyPerThread => grid_stride_blocks(n.into(), BLOCK, sms, BLOCKS_PER_SM),
            Method::InterleavedDivergent | Method::InterleavedConflicts | Method::Sequential => tree_blocks(n),
            Method::FirstAdd | Method::UnrollLastWarp => first_add_blocks(n),
            Method::ShuffleVec4 => grid_stride_blocks((n / 4).max(1).into(), BLOCK, sms, BLOCKS_PER_SM),
        }
    }
}

/// Validates a reduction of `n` elements and returns the first pass's launch.
pub fn plan(method: Method, n: usize, input_len: usize, partials_len: usize, sms: u32) -> Result<Launch> {
    let n32 = elements("reduce n", n)?;
    exactly("reduce input", input_len, n)?;
    let launch = Launch::linear(method.blocks(n32, sms), BLOCK).with_shared(BLOCK * 4);
    if !method.atomic() {
        at_least("reduce partials", partials_len, launch.grid.0 as usize)?;
    }
    Ok(launch)
}

/// Partial sums a method needs room for (0 for the single-pass kernels).
pub fn partials_needed(method: Method, n: usize, sms: u32) -> usize {
    if method.atomic() || n == 0 { 0 } else { method.blocks(n.min(u32::MAX as usize) as u32, sms) as usize }
}

/// Queues the sum of `input` into `output[0]` with `method` (`partials` is scratch space of
/// at least [`partials_needed`] elements for the tree kernels).
pub fn sum_into(
    gpu: &Gpu,
    method: Method,
    input: &DeviceSlice<i32>,
    partials: &mut DeviceSlice<i32>,
    output: &mut DeviceSlice<i32>,
) -> Result<()> {
    let n = input.len();
    let launch = plan(method, n, n, partials.len(), gpu.multiprocessors())?;
    if output.is_empty() {
        return Err(Error::LengthMismatch { what: "reduce output", expected: 1, got: 0 });
    }
    let output = output.index(0..1);
    gpu.zero(&output)?;
    let (src, n32, out) = (input.as_device_ptr(), n as u32, output.as_device_ptr());
    if method == Method::ShuffleVec4 {
        check_aligned16("reduce input", src.as_raw())?;
    }
    if method.atomic() {
        return gpu.launch(method.kernel(), launch, kernel_args![src, n32, out]);
    }
    let blocks = launch.grid.0;
    let part = partials.as_device_ptr();
    gpu.launch(method.kernel(), launch, kernel_args![src, n32, part])?;
    let second =
        Launch::linear(Method::ShuffleVec4.blocks(blocks, gpu.multiprocessors()), BLOCK).with_shared(BLOCK * 4);
    gpu.launch(Method::ShuffleVec4.kernel(), second, kernel_args![part, blocks, out])
}

/// The sum of `input` (wrapping), with the fastest kernel.
pub fn sum(gpu: &Gpu, input: &DeviceSlice<i32>) -> Result<i32> {
    let mut out = gpu.poisoned::<i32>(1, POISON_BITS)?;
    let mut none = gpu.poisoned::<i32>(1, 0)?;
    sum_into(gpu, Method::ShuffleVec4, input, &mut none, &mut out)?;
    Ok(out.as_host_vec()?[0])
}

/// CPU reference, one thread: the wrapping sum.
pub fn sum_cpu(input: &[i32]) -> i32 {
    input.iter().fold(0i32, |a, &b| a.wrapping_add(b))
}

/// CPU reference on every core (`std::thread::scope`, one chunk per core).
pub fn sum_cpu_threads(input: &[i32]) -> i32 {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = input.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let parts: Vec<_> = input.chunks(chunk).map(|c| s.spawn(move || sum_cpu(c))).collect();
        parts.into_iter().fold(0i32, |a, h| a.wrapping_add(h.join().expect("sum thread")))
    })
}

fn check(gpu: &Gpu, rng: &mut Rng, method: Method) -> Result<String> {
    for n in CHECK_SIZES {
        let input = rng.i32s(n);
        let d_input = gpu.upload(&input)?;
        let mut partials =
            gpu.poisoned::<i32>(partials_needed(method, n, gpu.multiprocessors()).max(1), POISON_BITS)?;
        let mut out = gpu.poisoned::<i32>(1, POISON_BITS)?;
        sum_into(gpu, method, &d_input, &mut partials, &mut out)?;
        gpu.synchronize()?;
        let (got, want) = (out.as_host_vec()?[0], sum_cpu(&input));
        if got != want {
            return Err(Error::Mismatch {
                what: format!("sum of n={n}"),
                index: 0,
                got: got.to_string(),
                want: want.to_string(),
            });
        }
    }
    Ok(format!("n in {CHECK_SIZES:?}"))
}

fn check_cpu_threads(_: &Gpu, rng: &mut Rng, _: u32) -> Result<String> {
    for n in CHECK_SIZES {
        let input = rng.i32s(n);
        let (got, want) = (sum_cpu_threads(&input), sum_cpu(&input));
        if got != want {
            return Err(Error::Mismatch {
                what: format!("threaded CPU sum of n={n}"),
                index: 0,
                got: got.to_string(),
                want: want.to_string(),
            });
        }
    }
    Ok(format!("n in {CHECK_SIZES:?}, against the single-thread sum"))
}

fn bench(gpu: &Gpu, method: Method) -> Result<Workload> {
    let n = BENCH_N;
    let input = random_buffer::<i32>(gpu, n, Fill::Bits, 5)?;
    let mut partials =
        random_buffer::<i32>(gpu, partials_needed(method, n, gpu.multiprocessors()).max(1), Fill::Bits, 6)?;
    let mut out: DeviceBuffer<i32> = random_buffer(gpu, 1, Fill::Bits, 7)?;
    Ok(Workload::new(4 * n as u64, move |gpu| sum_into(gpu, method, &input, &mut partials, &mut out)))
}

fn bench_cpu(threads: bool) -> Workload {
    let mut rng = Rng::new(11);
    let input = rng.i32s(BENCH_N);
    Workload::cpu(4 * BENCH_N as u64, move || {
        std::hint::black_box(if threads { sum_cpu_threads(&input) } else { sum_cpu(&input) });
    })
}

/// The reduction family, in teaching order; the last two are the CPU sums the seed compares with.
pub const VARIANTS: &[Variant] = &[
    variant!(
        "reduce",
        "seed",
        Method::Seed.kernel(),
        Method::Seed,
        "the seed's kernel and launch (32 x 256): grid-stride add, 2-barrier tree, 1 atomic a block"
    ),
    variant!(
        "reduce",
        "seed_filled",
        Method::SeedFilled.kernel(),
        Method::SeedFilled,
        "the seed's kernel with a grid that fills the GPU (8 blocks per SM)"
    ),
    variant!(
        "reduce",
        "interleaved_divergent",
        Method::InterleavedDivergent.kernel(),
        Method::InterleavedDivergent,
        "tree 1: t % 2d == 0 works, divergent warps"
    ),
    variant!(
        "reduce",
        "interleaved_conflicts",
        Method::InterleavedConflicts.kernel(),
        Method::InterleavedConflicts,
        "tree 2: contiguous workers at index 2dt, bank conflicts"
    ),
    variant!(
        "reduce",
        "sequential",
        Method::Sequential.kernel(),
        Method::Sequential,
        "tree 3: sequential addressing, conflict-free"
    ),
    variant!(
        "reduce",
        "first_add",
        Method::FirstAdd.kernel(),
        Method::FirstAdd,
        "tree 4: two elements added while loading, half the blocks"
    ),
    variant!(
        "reduce",
        "unroll_last_warp",
        Method::UnrollLastWarp.kernel(),
        Method::UnrollLastWarp,
        "tree 5: the last warp finishes with shuffles, no block barriers"
    ),
    variant!(
        "reduce",
        "many_per_thread",
        Method::ManyPerThread.kernel(),
        Method::ManyPerThread,
        "tree 6: grid-stride accumulation before the tree, GPU-sized grid"
    ),
    variant!(
        "reduce",
        "shuffle_vec4",
        Method::ShuffleVec4.kernel(),
        Method::ShuffleVec4,
        "16-byte loads, 4 in flight, warp shuffles, 1 atomic a block"
    ),
    Variant {
        family: "reduce",
        name: "cpu_single",
        kernels: &[],
        summary: "CPU reference: one thread",
        param: None,
        check: |_, _, _| Ok("the reference every GPU check compares with".into()),
        bench: |_, _| Ok(bench_cpu(false)),
    },
    Variant {
        family: "reduce",
        name: "cpu_threads",
        kernels: &[],
        summary: "CPU reference: every core (std::thread::scope)",
        param: None,
        check: check_cpu_threads,
        bench: |_, _| Ok(bench_cpu(true)),
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_rejects_bad_input() {
        assert!(matches!(plan(Method::Sequential, 0, 0, 0, 132), Err(Error::Empty(_))));
        assert!(matches!(plan(Method::Sequential, 10, 9, 10, 132), Err(Error::LengthMismatch { .. })));
        assert!(matches!(plan(Method::Sequential, 1000, 1000, 3, 132), Err(Error::LengthMismatch { expected: 4, .. })));
        assert!(plan(Method::ShuffleVec4, 1000, 1000, 0, 132).is_ok());
        assert_eq!(plan(Method::Seed, 1 << 20, 1 << 20, 0, 132).unwrap().grid.0, 32);
        assert_eq!(plan(Method::FirstAdd, 1025, 1025, 3, 132).unwrap().grid.0, 3);
    }

    #[test]
    fn cpu_sums_wrap_and_agree() {
        let input = [i32::MAX, 1, -5, 7];
        assert_eq!(sum_cpu(&input), i32::MIN + 2);
        let mut rng = Rng::new(3);
        let big = rng.i32s(100_003);
        assert_eq!(sum_cpu_threads(&big), sum_cpu(&big));
        assert_eq!(sum_cpu_threads(&[]), 0);
    }
}
