//! [`sum`] and [`sum_to`], the library's integer sum, and the reduction lessons that lead to them:
//! plans, launchers and CPU references for `kernels-gpu/src/reduce.rs`.
//!
//! The seed kernel and `reduce_shuffle_vec4` add into `output[0]` with atomics, so `output[0]`
//! is zeroed first. The tree kernels write one partial sum per block; a second pass
//! (`reduce_shuffle_vec4` over the partials) adds them into `output[0]`. [`sum`] is the entry
//! point for real use: the shuffle kernel, 64-bit indices, any size.

use crate::buffer::{DeviceRead, DeviceWrite};
use crate::error::{Error, Result, at_least, elements32, non_empty};
use crate::gpu::Gpu;
use crate::launch::{Call, In, Kernel, Launch, Out, Signature};
use coalesce_kernels::launch::MAX_ELEMENTS_32;
use coalesce_kernels::reduce::*;

/// Parameter list of the lesson kernels (32-bit indices): input, output or partials, n.
pub(crate) type LessonSig = fn(*const i32, *mut i32, u32);
/// Parameter list of `reduce_shuffle_vec4` (64-bit indices): input, output, n.
pub(crate) type ShuffleSig = fn(*const i32, *mut i32, u64);

/// The reduction kernels, in teaching order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// The seed's kernel with the seed's launch (32 blocks of 256).
    Seed,
    /// The seed's kernel with a grid that fills the GPU.
    SeedFilled,
    /// Tree 1: interleaved addressing, divergent branch.
    InterleavedDivergent,
    /// Tree 2: interleaved addressing, contiguous workers (bank conflicts).
    InterleavedConflicts,
    /// Tree 3: sequential addressing.
    Sequential,
    /// Tree 4: first add during load.
    FirstAdd,
    /// Tree 5: the last warp finishes with shuffles.
    UnrollLastWarp,
    /// Tree 6: grid-stride accumulation before the tree.
    ManyPerThread,
    /// 16-byte loads and warp shuffles, one pass (the library's [`sum`]).
    ShuffleVec4,
}

impl Method {
    /// Every method, in teaching order.
    pub const ALL: [Method; 9] = [
        Method::Seed,
        Method::SeedFilled,
        Method::InterleavedDivergent,
        Method::InterleavedConflicts,
        Method::Sequential,
        Method::FirstAdd,
        Method::UnrollLastWarp,
        Method::ManyPerThread,
        Method::ShuffleVec4,
    ];

    /// The 32-bit lesson kernel of the method's first pass; `None` for `ShuffleVec4`, whose
    /// kernel takes a 64-bit `n` ([`plan_shuffle`]).
    pub const fn lesson_kernel(self) -> Option<Kernel<LessonSig>> {
        Some(match self {
            Method::Seed | Method::SeedFilled => reduce_seed,
            Method::InterleavedDivergent => reduce_interleaved_divergent,
            Method::InterleavedConflicts => reduce_interleaved_conflicts,
            Method::Sequential => reduce_sequential,
            Method::FirstAdd => reduce_first_add,
            Method::UnrollLastWarp => reduce_unroll_last_warp,
            Method::ManyPerThread => reduce_many_per_thread,
            Method::ShuffleVec4 => return None,
        })
    }

    /// Whether the first pass adds into `output[0]` itself (atomics) rather than writing
    /// partial sums for a second pass.
    pub const fn atomic(self) -> bool {
        matches!(self, Method::Seed | Method::SeedFilled | Method::ShuffleVec4)
    }

    /// Blocks of the first pass over `n` elements on a GPU with `sms` multiprocessors. The lesson
    /// kernels take at most `MAX_ELEMENTS_32` elements (their plans refuse more); a larger `n`
    /// is counted as that many here.
    pub const fn blocks(self, n: u64, sms: u32) -> u32 {
        let n32 = if n > MAX_ELEMENTS_32 { MAX_ELEMENTS_32 as u32 } else { n as u32 };
        match self {
            Method::Seed => SEED_BLOCKS,
            Method::SeedFilled => seed_filled_blocks(n32, sms),
            Method::InterleavedDivergent | Method::InterleavedConflicts | Method::Sequential => tree_blocks(n32),
            Method::FirstAdd | Method::UnrollLastWarp => first_add_blocks(n32),
            Method::ManyPerThread => many_blocks(n32, sms),
            Method::ShuffleVec4 => shuffle_blocks(n, sms),
        }
    }
}

/// Partial sums `method` needs room for over `n` elements (0 for the atomic methods and for
/// `n == 0`).
pub fn partials_needed(method: Method, n: usize, sms: u32) -> usize {
    if method.atomic() || n == 0 { 0 } else { method.blocks(n as u64, sms) as usize }
}

/// Validates the first pass of a lesson `method` (any but `ShuffleVec4`) over all of `input`
/// and returns its launch. `output` is what the kernel writes:
/// - `Seed`, `SeedFilled`: `output[0]` (at least one element), which the kernel adds into, so
///   the caller zeroes it first;
/// - the trees: the partial sums, one per block: at least [`partials_needed`] elements, at any
///   offset (the second pass, [`plan_second`], adds the ones before its first 512-byte boundary
///   one by one).
///
/// Errors: `Unsupported` for `ShuffleVec4`; `Empty` or `OutOfRange` (above `MAX_ELEMENTS_32`)
/// for the input's length; `LengthMismatch` for a short output or partials.
pub fn plan_first<'a>(
    method: Method,
    input: &'a impl DeviceRead<i32>,
    output: &'a mut impl DeviceWrite<i32>,
    sms: u32,
) -> Result<Call<'a, LessonSig>> {
    let Some(kernel) = method.lesson_kernel() else {
        return Err(Error::Unsupported("reduce_shuffle_vec4 takes a 64-bit n: plan it with plan_shuffle".into()));
    };
    let n = elements32("reduce input", input.len())?;
    let blocks = method.blocks(n.into(), sms);
    if method.atomic() {
        at_least("reduce output", output.len(), 1)?;
    } else {
        at_least("reduce partials", output.len(), blocks.into())?;
    }
    let launch = Launch::linear(blocks, BLOCK).with_shared(SHARED_BYTES);
    // SAFETY: the launch has the `BLOCK` threads and `BLOCK` words of shared memory the kernels
    // index with (shared indices: `t < BLOCK`, and the tree levels' pairs, which stay below
    // BLOCK). Input reads are guarded by `< n`, the input's exact length, and the 32-bit indices
    // never wrap: `n <= 2^31 - 1` (checked above) and the grids keep every first index below
    // `blocks * BLOCK <= 2^31` (trees: `tree_blocks`, `first_add_blocks`) and every grid-stride
    // step at most 2^31 (`seed_filled_blocks`, `many_blocks`: at most one block per `BLOCK` or
    // `2 * BLOCK` elements; `SEED_BLOCKS * BLOCK` = 8192), so `i + step < 2^32`. The seed writes
    // `output[0]` (at least one element, checked); the trees write `partials[b]` for each block
    // `b < blocks`, and the partials hold at least `blocks` (checked).
    let call = unsafe { Call::new(kernel, launch, (In::of(input), Out::of(output), n)) };
    // The seed kernel adds into `output[0]`; the tree kernels store one partial a block.
    Ok(if method.atomic() { call.adding_atomically() } else { call })
}

/// Validates `reduce_shuffle_vec4` over all of `input` (any length from 1, 64-bit) adding into
/// `output[0]` (which the caller zeroes) and returns its launch.
///
/// Errors: `Empty` for an empty input, `LengthMismatch` for an empty output. Any start: the
/// kernel adds the elements before the first 512-byte boundary one by one.
pub fn plan_shuffle<'a>(
    input: &'a impl DeviceRead<i32>,
    output: &'a mut impl DeviceWrite<i32>,
    sms: u32,
) -> Result<Call<'a, ShuffleSig>> {
    non_empty("reduce input", input.len())?;
    at_least("reduce output", output.len(), 1)?;
    let n = input.len() as u64;
    let launch = Launch::linear(shuffle_blocks(n, sms), SHUFFLE_BLOCK).with_shared(SHARED_BYTES);
    // SAFETY: the kernel adds elements `g < shuffle_head(address, n) <= n` one by one, loads
    // vector `i` (16 bytes) only for `i < (n - head) / 4` from the 512-byte boundary at `head`
    // (4-byte aligned i32 views reach one within 127 elements), and element `head +
    // tail_index(..)` only below `n`, the input's exact length; 64-bit indices never wrap below
    // 2^62 elements. It adds into `output[0]`
    // (at least one element, checked) and indexes `WARPS <= BLOCK` words of the `BLOCK` words
    // of shared memory; the launch has the `BLOCK` threads it assumes.
    Ok(unsafe { Call::new(reduce_shuffle_vec4, launch, (In::of(input), Out::of(output), n)) }.adding_atomically())
}

/// Validates the second pass of a tree method: `reduce_shuffle_vec4` over the first `count`
/// partial sums (the first pass's block count), adding into `output[0]`, and returns its launch.
///
/// Errors: `Empty` for `count == 0`, `LengthMismatch` for fewer than `count` partials or an
/// empty output. Partials may start anywhere, as [`plan_shuffle`]'s input.
pub fn plan_second<'a>(
    partials: &'a impl DeviceRead<i32>,
    count: usize,
    output: &'a mut impl DeviceWrite<i32>,
    sms: u32,
) -> Result<Call<'a, ShuffleSig>> {
    non_empty("reduce partials count", count)?;
    at_least("reduce partials", partials.len(), count as u64)?;
    at_least("reduce output", output.len(), 1)?;
    let n = count as u64;
    let launch = Launch::linear(shuffle_blocks(n, sms), SHUFFLE_BLOCK).with_shared(SHARED_BYTES);
    // SAFETY: as in `plan_shuffle` with `n = count`: the kernel reads partials below `count`,
    // which the slice holds (checked), from any 4-byte aligned start, and adds into
    // `output[0]` (checked non-empty).
    Ok(unsafe { Call::new(reduce_shuffle_vec4, launch, (In::of(partials), Out::of(output), n)) }.adding_atomically())
}

/// What [`passes`] does with each planned launch.
#[derive(Clone, Copy)]
enum Pass<'g> {
    /// Drops it: the plan has checked the sizes.
    Plan,
    /// Checks that `Gpu::launch` would take it (devices, module), queueing nothing.
    Admit(&'g Gpu),
    /// Queues it.
    Queue(&'g Gpu),
}

fn queue<'a, Sig: Signature<'a>>(pass: Pass<'_>, call: Call<'a, Sig>) -> Result<()> {
    match pass {
        Pass::Plan => Ok(()),
        Pass::Admit(gpu) => gpu.admit(&call),
        Pass::Queue(gpu) => gpu.launch(call),
    }
}

/// Plans every launch of `method` in order and hands each to `pass` once planned.
fn passes(
    gpu: Pass<'_>,
    method: Method,
    input: &impl DeviceRead<i32>,
    partials: &mut impl DeviceWrite<i32>,
    output: &mut impl DeviceWrite<i32>,
    sms: u32,
) -> Result<()> {
    if method == Method::ShuffleVec4 {
        return queue(gpu, plan_shuffle(input, output, sms)?);
    }
    if method.atomic() {
        return queue(gpu, plan_first(method, input, output, sms)?);
    }
    let first = plan_first(method, input, partials, sms)?;
    let count = first.launch().grid.0 as usize;
    queue(gpu, first)?;
    queue(gpu, plan_second(partials, count, output, sms)?)
}

/// Checks every launch [`sum_into`] would queue, queueing nothing: `Ok` exactly when `sum_into`
/// gets past its checks.
pub fn validate(
    method: Method,
    input: &impl DeviceRead<i32>,
    partials: &mut impl DeviceWrite<i32>,
    output: &mut impl DeviceWrite<i32>,
    sms: u32,
) -> Result<()> {
    passes(Pass::Plan, method, input, partials, output, sms)
}

/// Queues the wrapping sum of all of `input` into `output[0]` with `method`: zeroes `output[0]`,
/// runs the first pass and, for the tree methods, the second pass over the partials. `partials`
/// is scratch space of at least [`partials_needed`] elements, at any offset, for the tree
/// methods (the atomic methods do not touch it: it may be empty).
///
/// Every launch is planned before anything is queued, so a refused input (one that only the
/// second pass would refuse included) leaves `output` untouched. Errors: those of
/// [`plan_first`], [`plan_shuffle`] and [`plan_second`].
pub fn sum_into(
    gpu: &Gpu,
    method: Method,
    input: &impl DeviceRead<i32>,
    partials: &mut impl DeviceWrite<i32>,
    output: &mut impl DeviceWrite<i32>,
) -> Result<()> {
    let sms = gpu.multiprocessors();
    // Every launch is admitted (sizes, devices, module) before `output[0]` is zeroed.
    passes(Pass::Admit(gpu), method, input, partials, output, sms)?;
    gpu.zero(&mut output.slice_mut(..1)?)?;
    passes(Pass::Queue(gpu), method, input, partials, output, sms)
}

/// The wrapping sum of `input` (any length from 1: 64-bit indices), with the fastest kernel.
/// Errors: `Empty` for an empty input. Any sub-slice: the elements before its first 32-byte
/// boundary are added one by one.
pub fn sum(gpu: &Gpu, input: &impl DeviceRead<i32>) -> Result<i32> {
    // The handle's result slot, not an allocation a call: [`sum_to`] into it, then one read back.
    gpu.with_result_slot(|total| {
        sum_to(gpu, input, total)?;
        Ok(total.to_vec()?[0])
    })
}

/// Queues the wrapping sum of `input` into `total[0]`, on the device: zeroes `total[0]` and
/// launches the shuffle kernel, which adds into it. Nothing is allocated and the host does not
/// wait (unlike [`sum`], which reads the result back), so back-to-back calls
/// queue as fast as the host can launch; read `total` (or synchronize) when the value is needed.
/// Errors: `Empty` for an empty input, `LengthMismatch` for an empty `total`, both before
/// anything is queued. Any sub-slice, as [`sum`].
pub fn sum_to(gpu: &Gpu, input: &impl DeviceRead<i32>, total: &mut impl DeviceWrite<i32>) -> Result<()> {
    let sms = gpu.multiprocessors();
    // Admitted (sizes, devices) before the zeroing is queued, so a refused call leaves `total`
    // untouched.
    gpu.admit(&plan_shuffle(input, total, sms)?)?;
    gpu.zero(&mut total.slice_mut(..1)?)?;
    gpu.launch(plan_shuffle(input, total, sms)?)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calls_that_add_with_atomics_say_so() {
        // SAFETY: descriptors only; nothing is launched.
        let (input, mut out, mut partials) = unsafe {
            (
                DeviceViewMut::<i32>::stand_in(1 << 21, 1 << 20),
                DeviceViewMut::<i32>::stand_in(1 << 30, 1),
                DeviceViewMut::<i32>::stand_in(1 << 31, 1 << 16),
            )
        };
        assert!(plan_shuffle(&input, &mut out, 132).unwrap().atomic());
        assert!(plan_second(&partials, 10, &mut out, 132).unwrap().atomic());
        for method in Method::ALL.into_iter().filter(|&m| m != Method::ShuffleVec4) {
            let call = if method.atomic() {
                plan_first(method, &input, &mut out, 132)
            } else {
                plan_first(method, &input, &mut partials, 132)
            };
            assert_eq!(call.unwrap().atomic(), method.atomic(), "{method:?}");
        }
    }
    use crate::buffer::DeviceViewMut;

    /// Descriptors at made-up 16-byte aligned addresses (input, partials, output).
    fn slices(
        n: usize,
        partials: usize,
        output: usize,
    ) -> (DeviceViewMut<'static, i32>, DeviceViewMut<'static, i32>, DeviceViewMut<'static, i32>) {
        // SAFETY: descriptors only; no planned call is launched.
        unsafe {
            (
                DeviceViewMut::stand_in(0x1_0000_0000, n),
                DeviceViewMut::stand_in(0x2_0000_0000, partials),
                DeviceViewMut::stand_in(0x3_0000_0000, output),
            )
        }
    }

    #[test]
    fn first_pass_plans_reject_bad_input_before_launch() {
        let plan = |method, n, out_len| {
            let (input, mut out, _) = slices(n, out_len, 0);
            plan_first(method, &input, &mut out, 132).map(|c| (c.launch(), c.args().2))
        };
        assert!(matches!(plan(Method::Sequential, 0, 10), Err(Error::Empty(_))));
        assert!(matches!(plan(Method::Seed, 1 << 31, 1), Err(Error::OutOfRange { .. })));
        assert!(matches!(plan(Method::ShuffleVec4, 1000, 1), Err(Error::Unsupported(_))));
        assert!(matches!(plan(Method::Seed, 1000, 0), Err(Error::LengthMismatch { expected: 1, .. })));
        assert!(matches!(plan(Method::Sequential, 1000, 3), Err(Error::LengthMismatch { expected: 4, .. })));
        assert_eq!(plan(Method::Seed, 1 << 20, 1).unwrap(), (Launch::linear(32, 256).with_shared(1024), 1 << 20));
        assert_eq!(plan(Method::SeedFilled, 1 << 20, 1).unwrap().0.grid.0, 132 * 8);
        assert_eq!(plan(Method::FirstAdd, 1025, 3).unwrap().0.grid.0, 3);
        assert_eq!(plan(Method::ManyPerThread, 1 << 28, 1056).unwrap().0.grid.0, 1056);
        // The largest lesson size: 2^23 blocks of the one-element-per-thread trees.
        let max = MAX_ELEMENTS_32 as usize;
        assert_eq!(
            plan(Method::Sequential, max, 1 << 23).unwrap(),
            (Launch::linear(1 << 23, 256).with_shared(1024), max as u32)
        );
    }

    /// Partials and inputs off a 16-byte boundary: the second pass adds the elements before its
    /// first boundary one by one, so every plan takes them (the old plans refused them, since
    /// the kernel's vector loads would have faulted there).
    #[test]
    fn partials_at_any_offset_are_planned() {
        let n = 100_000;
        let need = partials_needed(Method::Sequential, n, 132);
        // SAFETY: stand-ins; nothing is launched.
        let (input, mut partials, mut output) = unsafe {
            (
                DeviceViewMut::<i32>::stand_in(0x1000_0000, n),
                DeviceViewMut::<i32>::stand_in(0x2000_0004, need),
                DeviceViewMut::<i32>::stand_in(0x3000_0000, 1),
            )
        };
        for method in Method::ALL.into_iter().filter(|m| !m.atomic()) {
            assert!(plan_first(method, &input, &mut partials, 132).is_ok(), "{method:?}");
            assert_eq!(validate(method, &input, &mut partials, &mut output, 132), Ok(()), "{method:?}");
        }
        assert!(plan_second(&partials, need, &mut output, 132).is_ok());
        assert_eq!(validate(Method::Seed, &input, &mut partials, &mut output, 132), Ok(()));
    }

    #[test]
    fn shuffle_plans_take_any_size_and_start_and_check_output() {
        let plan = |n, out_len| {
            let (input, _, mut out) = slices(n, 0, out_len);
            plan_shuffle(&input, &mut out, 132).map(|c| (c.launch(), c.args().2))
        };
        assert!(matches!(plan(0, 1), Err(Error::Empty(_))));
        assert!(matches!(plan(10, 0), Err(Error::LengthMismatch { expected: 1, got: 0, .. })));
        assert_eq!(plan(3, 1).unwrap(), (Launch::linear(1, 1024).with_shared(1024), 3));
        let big = (1usize << 31) + 5;
        assert_eq!(plan(big, 1).unwrap(), (Launch::linear(132 * 2, 1024).with_shared(1024), big as u64));
        // SAFETY: descriptors only.
        let (input, mut out) = unsafe {
            (DeviceViewMut::<i32>::stand_in(0x1000_0008, 64), DeviceViewMut::<i32>::stand_in(0x2000_0000, 1))
        };
        assert!(plan_shuffle(&input, &mut out, 132).is_ok());
        // The second pass: n is the partials count, not the slice's length.
        let (_, partials, mut out) = slices(0, 4000, 1);
        assert_eq!(plan_second(&partials, 1056, &mut out, 132).unwrap().args().2, 1056);
        assert!(matches!(plan_second(&partials, 0, &mut out, 132), Err(Error::Empty(_))));
        assert!(matches!(plan_second(&partials, 4001, &mut out, 132), Err(Error::LengthMismatch { .. })));
        let (_, partials, mut empty) = slices(0, 4000, 0);
        assert!(matches!(plan_second(&partials, 10, &mut empty, 132), Err(Error::LengthMismatch { .. })));
    }

    #[test]
    fn validation_covers_every_pass_of_every_method() {
        for method in Method::ALL {
            let n = 1_000_003;
            let need = partials_needed(method, n, 132);
            let (input, mut partials, mut output) = slices(n, need, 1);
            assert_eq!(validate(method, &input, &mut partials, &mut output, 132), Ok(()), "{method:?}");
            // An empty output is refused whichever pass writes it.
            let (input, mut partials, mut output) = slices(n, need, 0);
            assert!(matches!(
                validate(method, &input, &mut partials, &mut output, 132),
                Err(Error::LengthMismatch { .. })
            ));
            if need > 0 {
                let (input, mut partials, mut output) = slices(n, need - 1, 1);
                assert!(matches!(
                    validate(method, &input, &mut partials, &mut output, 132),
                    Err(Error::LengthMismatch { what: "reduce partials", .. })
                ));
            }
        }
        assert_eq!(partials_needed(Method::ShuffleVec4, 1000, 132), 0);
        assert_eq!(partials_needed(Method::Sequential, 0, 132), 0);
        assert_eq!(partials_needed(Method::FirstAdd, 1025, 132), 3);
    }

    /// `sum_to`'s plan: the shuffle kernel over the whole input into `total[0]`; an empty
    /// `total` (or input) is refused before anything is queued.
    #[test]
    fn sum_to_refuses_an_empty_total() {
        let (input, _, mut empty) = slices(1000, 0, 0);
        assert!(matches!(
            plan_shuffle(&input, &mut empty, 132),
            Err(Error::LengthMismatch { what: "reduce output", expected: 1, got: 0 })
        ));
        let (input, _, mut total) = slices(1000, 0, 1);
        assert_eq!(plan_shuffle(&input, &mut total, 132).unwrap().args().2, 1000);
        let (empty_input, _, mut total) = slices(0, 0, 1);
        assert!(matches!(plan_shuffle(&empty_input, &mut total, 132), Err(Error::Empty(_))));
    }

    #[test]
    fn cpu_sums_wrap_and_agree() {
        let input = [i32::MAX, 1, -5, 7];
        assert_eq!(sum_cpu(&input), i32::MIN + 2);
        let big: Vec<i32> = (0..100_003).map(|i: i32| i.wrapping_mul(0x9e37_79b9_u32 as i32)).collect();
        assert_eq!(sum_cpu_threads(&big), sum_cpu(&big));
        let wide = big.iter().map(|&x| i64::from(x)).sum::<i64>() as i32;
        assert_eq!(sum_cpu(&big), wide);
        assert_eq!(sum_cpu_threads(&[]), 0);
    }
}
