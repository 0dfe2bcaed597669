//! [`sum`] and [`sum_to`], the library's sum, and the reduction lessons that lead to them: plans,
//! launchers and CPU references for `kernels-gpu/src/reduce.rs` (the `i32` lessons) and
//! `kernels-gpu/src/reduce/elements.rs` (the library's other element types).
//!
//! The seed kernel and `reduce_shuffle_vec4` add into `output[0]` with atomics, so `output[0]`
//! is zeroed first. The tree kernels write one partial sum per block; a second pass
//! (`reduce_shuffle_vec4` over the partials) adds them into `output[0]`. [`sum`] and [`sum_to`]
//! are the entry points for real use, for every [`SumElement`] (`i32`, `u32`, `i64`, `u64`,
//! `f32`, `f64`): 16-byte loads, 64-bit indices, any size, any view.

use crate::buffer::{DeviceRead, DeviceWrite};
use crate::buffer::{DeviceView, DeviceViewMut};
use crate::error::{Error, Result, at_least, elements32, non_empty};
use crate::gpu::Gpu;
use crate::launch::{Call, In, Kernel, Launch, Out, Signature};
use coalesce_kernels::WARP_SIZE;
use coalesce_kernels::launch::MAX_ELEMENTS_32;
use coalesce_kernels::reduce::elements::*;
use coalesce_kernels::reduce::*;
use cust::memory::DeviceCopy;

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

/// The sum of `input` (any length from 1: 64-bit indices) for every [`SumElement`]: integers
/// wrap at their width, floats are added in the fixed order [`sum_order_cpu`] describes.
/// Errors: `Empty` for an empty input. Any sub-slice: the elements before its first 512-byte
/// (integers) or 16-byte (floats) boundary are added one by one.
pub fn sum<T: SumElement>(gpu: &Gpu, input: &impl DeviceRead<T>) -> Result<T> {
    // The handle's result slot, not an allocation a call: the total lands in its first word
    // (read back below), the float sums' counter and block totals in the rest.
    gpu.with_result_slot(scratch_words(gpu.multiprocessors()), |slot| {
        let (result, scratch) = slot.split_at_mut(RESULT_WORDS)?;
        let mut total = result.reinterpret::<T>().ok_or_else(|| unsupported_view::<T>("result"))?;
        let mut total = total.slice_mut(..1)?;
        queue_sum(gpu, input.view(), total.view_mut(), Some(scratch))?;
        Ok(total.to_vec()?[0])
    })
}

/// Queues the sum of `input` into `total[0]`, on the device ([`sum`]'s sum): nothing is
/// allocated and the host does not wait (unlike [`sum`], which reads the result back), so
/// back-to-back calls queue as fast as the host can launch; read `total` (or synchronize) when
/// the value is needed. The integer sums zero `total[0]` and add into it with one atomic a
/// block; the float sums store it once, from the block that adds the block totals.
/// Errors: `Empty` for an empty input, `LengthMismatch` for an empty `total`, both (and the
/// devices) checked before anything is queued. Any sub-slice, as [`sum`].
pub fn sum_to<T: SumElement>(gpu: &Gpu, input: &impl DeviceRead<T>, total: &mut impl DeviceWrite<T>) -> Result<()> {
    match T::KIND {
        Kind::Wrap32 | Kind::Wrap64 => queue_sum(gpu, input.view(), total.view_mut(), None),
        Kind::F32 | Kind::F64 => gpu.with_result_slot(scratch_words(gpu.multiprocessors()), |slot| {
            let (_, scratch) = slot.split_at_mut(RESULT_WORDS)?;
            queue_sum(gpu, input.view(), total.view_mut(), Some(scratch))
        }),
    }
}

/// An element type [`sum`] and [`sum_to`] add (sealed: these six).
///
/// | type | sum | kernel |
/// |---|---|---|
/// | `i32`, `u32` | wraps at 32 bits (the same bits either way) | `reduce_shuffle_vec4` |
/// | `i64`, `u64` | wraps at 64 bits | `reduce_sum_u64` |
/// | `f32` | fixed order, accumulated in `f64`, rounded once | `reduce_sum_f32` |
/// | `f64` | fixed order, accumulated in `f64` | `reduce_sum_f64` |
///
/// Integers wrap (`i32::MAX + 1 == i32::MIN`), as `wrapping_add` does: the sum of any order is
/// the same bits, and a widened sum would need a result type wider than the input's.
///
/// The float sums run in a fixed order, so the same values give the same bits every call: the
/// order is `coalesce_kernels::reduce::elements`'s (each thread adds its grid-stride run of
/// 16-byte vectors in index order, a shuffle tree adds a block's threads, the last block adds
/// the block totals in index order with the same tree). The grid is a function of the length
/// and the multiprocessor count, and the head of the view's start modulo 16 bytes, so a view
/// at the same element offset modulo `16 / size` from a buffer's start (allocations are
/// 256-byte aligned) gives the same bits on any GPU with as many multiprocessors;
/// [`sum_order_cpu`] runs that order on the CPU. No float atomics: a block's total is stored
/// in its own slot, and only the order of the integer tickets that elect the last block varies.
///
/// Error bound: every element meets at most `L = `[`sum_depth`] `f64` additions on its way to
/// the total (its thread's run, the two trees, the last block's run and trees), so
/// `|f64 total - exact| <= γ_L Σ|x|` with `γ_L = L u / (1 - L u)`, `u = 2^-53` (Higham,
/// *Accuracy and Stability of Numerical Algorithms*, 4.2); the `f32` sum rounds that total once,
/// adding at most `2^-24 |total|`. [`sum_error_bound`] computes it. At 2^28 `f32` on 132
/// multiprocessors `L` is 1,019: the `f64` part is 1.1e-13 Σ|x|, so the `f32` sum is the
/// correctly rounded exact sum unless cancellation leaves it below about 1e-6 Σ|x|.
pub trait SumElement: DeviceCopy + bytemuck::Pod + PartialEq + std::fmt::Debug + sealed::Element {}

impl SumElement for i32 {}
impl SumElement for u32 {}
impl SumElement for i64 {}
impl SumElement for u64 {}
impl SumElement for f32 {}
impl SumElement for f64 {}

mod sealed {
    /// How a [`super::SumElement`] is summed.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Kind {
        /// Wrapping, 4 bytes: `reduce_shuffle_vec4` over the bits as `i32`.
        Wrap32,
        /// Wrapping, 8 bytes: `reduce_sum_u64` over the bits as `u64`.
        Wrap64,
        /// `reduce_sum_f32`.
        F32,
        /// `reduce_sum_f64`.
        F64,
    }

    /// The part of [`super::SumElement`] only this crate implements: its kind, and its value as
    /// the float sums' `f64` (`None` for the integers).
    pub trait Element: Copy {
        const KIND: Kind;
        fn as_f64(self) -> Option<f64>;
        fn from_f64(total: f64) -> Self;
        fn wrapping_add(self, other: Self) -> Self;
        const ZERO: Self;
    }

    macro_rules! integers {
        ($($t:ty: $kind:ident),*) => {$(
            impl Element for $t {
                const KIND: Kind = Kind::$kind;
                const ZERO: Self = 0;
                fn as_f64(self) -> Option<f64> {
                    None
                }
                fn from_f64(_: f64) -> Self {
                    0
                }
                fn wrapping_add(self, other: Self) -> Self {
                    <$t>::wrapping_add(self, other)
                }
            }
        )*};
    }
    integers!(i32: Wrap32, u32: Wrap32, i64: Wrap64, u64: Wrap64);

    impl Element for f32 {
        const KIND: Kind = Kind::F32;
        const ZERO: Self = 0.0;
        fn as_f64(self) -> Option<f64> {
            Some(f64::from(self))
        }
        fn from_f64(total: f64) -> Self {
            // Round to nearest, as the kernel's `cvt.rn.f32.f64`.
            total as f32
        }
        fn wrapping_add(self, other: Self) -> Self {
            self + other
        }
    }

    impl Element for f64 {
        const KIND: Kind = Kind::F64;
        const ZERO: Self = 0.0;
        fn as_f64(self) -> Option<f64> {
            Some(self)
        }
        fn from_f64(total: f64) -> Self {
            total
        }
        fn wrapping_add(self, other: Self) -> Self {
            self + other
        }
    }
}
use sealed::Kind;

/// The kernels of the sums past `i32` (no lesson: the registry holds none of them; the
/// `library/` checks and `gpu --types` run them).
pub const ELEMENT_KERNELS: [&str; 3] = [reduce_sum_u64.name(), reduce_sum_f32.name(), reduce_sum_f64.name()];

/// Parameter list of the wrapping 64-bit sum: input, total, n.
pub type WideSig = fn(*const u64, *mut u64, u64);
/// Parameter list of a float sum: input, total, counter, block totals, n.
pub type FloatSig<F> = fn(*const F, *mut F, *mut u64, *mut u64, u64);

/// Words of a handle's result slot before the float sums' scratch: the total [`sum`] reads back.
const RESULT_WORDS: usize = 1;

/// u64 words of the result slot the sums of a handle on `sms` multiprocessors need: the result
/// word, the float sums' counter, and one block total for every block of their largest grid.
fn scratch_words(sms: u32) -> usize {
    RESULT_WORDS + 1 + sms as usize * SUM_BLOCKS_PER_SM as usize
}

/// [`Error::Unsupported`] for a view whose bytes are not whole elements of the kernel's type
/// (only a stand-in at a made-up address can be).
fn unsupported_view<T>(what: &str) -> Error {
    Error::Unsupported(format!(
        "the sum's {what} view of {}-byte elements is not aligned to its kernel's elements",
        std::mem::size_of::<T>()
    ))
}

/// Validates `reduce_sum_u64` over all of `input` (any length from 1, any start) adding into
/// `total[0]` (which the caller zeroes) and returns its launch. Errors: `Empty` for an empty
/// input, `LengthMismatch` for an empty `total`.
pub fn plan_sum_u64<'a>(
    input: &'a impl DeviceRead<u64>,
    total: &'a mut impl DeviceWrite<u64>,
    sms: u32,
) -> Result<Call<'a, WideSig>> {
    non_empty("reduce input", input.len())?;
    at_least("reduce output", total.len(), 1)?;
    let n = input.len() as u64;
    let launch = Launch::linear(sum_blocks(n, 2, sms), SUM_BLOCK).with_shared(SUM_SHARED_BYTES);
    // SAFETY: the kernel adds elements `g < head_elements(..) <= n` one by one, loads vector `i`
    // (16 bytes) only for `i < (n - head) / 2` from the 512-byte boundary at `head` (8-byte
    // aligned u64 views reach one within 63 elements), and tail elements below `n`, the input's
    // exact length; it adds into `total[0]` (checked) and indexes `SUM_WARPS` accumulators of
    // the SUM_SHARED_BYTES launched, with the SUM_BLOCK threads it assumes.
    Ok(unsafe { Call::new(reduce_sum_u64, launch, (In::of(input), Out::of(total), n)) }.adding_atomically())
}

/// A float sum's kernel and its elements a 16-byte vector.
trait FloatKernel: DeviceCopy + 'static {
    const KERNEL: Kernel<FloatSig<Self>>;
    const PER_VECTOR: u64;
}

impl FloatKernel for f32 {
    const KERNEL: Kernel<FloatSig<f32>> = reduce_sum_f32;
    const PER_VECTOR: u64 = 4;
}

impl FloatKernel for f64 {
    const KERNEL: Kernel<FloatSig<f64>> = reduce_sum_f64;
    const PER_VECTOR: u64 = 2;
}

/// Validates a float sum of all of `input` into `total[0]` with `scratch` (the counter, which
/// must hold 0, then one block total a block) and returns its launch. Crate-private: the
/// kernel trusts the counter to start at 0 and no other kernel to touch it meanwhile, which
/// only the handle's own slot guarantees (zeroed when allocated, left at 0 by every launch, and
/// the launches ordered on the device's one stream).
fn plan_in_order<'a, F: FloatKernel>(
    input: &'a impl DeviceRead<F>,
    total: &'a mut impl DeviceWrite<F>,
    scratch: &'a mut impl DeviceWrite<u64>,
    sms: u32,
) -> Result<Call<'a, FloatSig<F>>> {
    non_empty("reduce input", input.len())?;
    at_least("reduce output", total.len(), 1)?;
    let n = input.len() as u64;
    let blocks = sum_blocks(n, F::PER_VECTOR, sms);
    at_least("reduce scratch", scratch.len(), 1 + u64::from(blocks))?;
    let (counter, partials) = scratch.split_at_mut(1)?;
    let launch = Launch::linear(blocks, SUM_BLOCK).with_shared(SUM_SHARED_BYTES);
    // SAFETY: the kernel reads elements below `n`, the input's exact length, with 16-byte
    // loads only from the first 16-byte boundary on (`head_elements`; every f32 or f64 view is
    // aligned to its elements); block `b < blocks` stores `partials[b]` (the scratch holds
    // `1 + blocks` words: checked), the last block reads `partials[..blocks]` and stores
    // `total[0]` (checked non-empty) and `counter[0]`, which it leaves at 0; the counter starts
    // at 0 and only this launch touches it (this function's contract, kept by its callers).
    // Shared indices stay inside SUM_SHARED_BYTES, launched with the SUM_BLOCK threads assumed.
    let args = (In::of(input), Out::of(total), Out::from_view(counter), Out::from_view(partials), n);
    Ok(unsafe { Call::new(F::KERNEL, launch, args) })
}

/// Validates the sum of `input` into `total[0]` (and, for the floats, the slot's `scratch`),
/// admits every launch, then queues it: nothing is written unless all of it is accepted.
fn queue_sum<T: SumElement>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    total: DeviceViewMut<'_, T>,
    scratch: Option<DeviceViewMut<'_, u64>>,
) -> Result<()> {
    let sms = gpu.multiprocessors();
    // Each arm sees the bits as its kernel's element type: the same bits for the integers (the
    // wrapping sum of `u32` is `i32`'s), the type itself for the floats.
    match T::KIND {
        Kind::Wrap32 => {
            let (input, mut total) = as_kernel_type::<T, i32>(input, total)?;
            gpu.admit(&plan_shuffle(&input, &mut total, sms)?)?;
            gpu.zero(&mut total.slice_mut(..1)?)?;
            gpu.launch(plan_shuffle(&input, &mut total, sms)?)
        }
        Kind::Wrap64 => {
            let (input, mut total) = as_kernel_type::<T, u64>(input, total)?;
            gpu.admit(&plan_sum_u64(&input, &mut total, sms)?)?;
            gpu.zero(&mut total.slice_mut(..1)?)?;
            gpu.launch(plan_sum_u64(&input, &mut total, sms)?)
        }
        Kind::F32 => queue_in_order::<T, f32>(gpu, input, total, scratch),
        Kind::F64 => queue_in_order::<T, f64>(gpu, input, total, scratch),
    }
}

/// [`queue_sum`]'s float arms (`T` is `F`).
fn queue_in_order<T: SumElement, F: FloatKernel>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    total: DeviceViewMut<'_, T>,
    scratch: Option<DeviceViewMut<'_, u64>>,
) -> Result<()> {
    let sms = gpu.multiprocessors();
    let mut scratch = scratch.ok_or_else(|| Error::Unsupported("a float sum needs the handle's scratch".into()))?;
    let (input, mut total) = as_kernel_type::<T, F>(input, total)?;
    // Admitted (sizes, devices) before it is queued; the kernel writes nothing before it runs.
    gpu.admit(&plan_in_order(&input, &mut total, &mut scratch, sms)?)?;
    gpu.launch(plan_in_order(&input, &mut total, &mut scratch, sms)?)
}

/// `input` and `total` seen as elements of the kernel's type `K` (of `T`'s width).
fn as_kernel_type<'a, 'b, T: SumElement, K: DeviceCopy>(
    input: DeviceView<'a, T>,
    total: DeviceViewMut<'b, T>,
) -> Result<(DeviceView<'a, K>, DeviceViewMut<'b, K>)> {
    let input = input.reinterpret::<K>().ok_or_else(|| unsupported_view::<T>("input"))?;
    let total = total.reinterpret::<K>().ok_or_else(|| unsupported_view::<T>("total"))?;
    Ok((input, total))
}

/// The sum [`sum`] computes, on the CPU, for the values of a view starting at device address
/// `address` on a GPU of `sms` multiprocessors: the wrapping sum for the integers; for the
/// floats the kernels' order step by step (`coalesce_kernels::reduce::elements`), so the GPU's
/// result equals it bit for bit. Only `address % 16` matters.
pub fn sum_order_cpu<T: SumElement>(values: &[T], address: u64, sms: u32) -> T {
    let per_vector = match T::KIND {
        Kind::Wrap32 | Kind::Wrap64 => return values.iter().fold(T::ZERO, |a, &b| a.wrapping_add(b)),
        Kind::F32 | Kind::F64 => VECTOR_BYTES / std::mem::size_of::<T>() as u64,
    };
    let x = |i: u64| values[i as usize].as_f64().unwrap_or(0.0);
    let n = values.len() as u64;
    let head = head_elements(address, n, std::mem::size_of::<T>() as u64, FLOAT_BOUNDARY);
    let (vectors, tail) = vector_split(n - head, per_vector);
    let blocks = sum_blocks(n, per_vector, sms);
    let step = grid_threads64(blocks);
    // Step 1, one sweep: vector `i` belongs to thread `i % step`, and a thread meets its vectors
    // in increasing `i`, so adding them in sweep order keeps each thread's order.
    let mut partial = vec![0.0f64; step as usize];
    for i in 0..vectors {
        let acc = &mut partial[(i % step) as usize];
        for e in 0..per_vector {
            *acc += x(head + i * per_vector + e);
        }
    }
    for g in 0..head {
        partial[g as usize] += x(g);
    }
    for g in 0..tail {
        partial[g as usize] += x(head + vectors * per_vector + g);
    }
    // Step 2: each block's total.
    let totals: Vec<f64> = partial.chunks(SUM_BLOCK as usize).map(block_tree).collect();
    // Step 3: the last block's threads run through the totals, then the block tree.
    let mut last = vec![0.0f64; SUM_BLOCK as usize];
    for (j, total) in totals.iter().enumerate() {
        last[j % SUM_BLOCK as usize] += total;
    }
    T::from_f64(block_tree(&last))
}

/// The block tree over `SUM_BLOCK` thread values: each warp's shuffle tree, then warp 0's over
/// the warp sums.
fn block_tree(threads: &[f64]) -> f64 {
    let warp = |w: &[f64]| warp_tree(std::array::from_fn(|l| w[l]), |a, b| a + b);
    let sums: Vec<f64> = threads.chunks(32).map(warp).collect();
    warp(&sums)
}

/// `L`, the most `f64` additions any element of a float sum of `n` elements meets on a GPU of
/// `sms` multiprocessors (the bound of [`SumElement`]): its thread's run (every vector's
/// elements, a head and a tail element), the warp and block trees (5 + 5), the last block's run
/// through the block totals and its trees (5 + 5). 0 for the integer sums, which are exact.
pub fn sum_depth<T: SumElement>(n: u64, sms: u32) -> u64 {
    let per_vector = match T::KIND {
        Kind::Wrap32 | Kind::Wrap64 => return 0,
        Kind::F32 | Kind::F64 => VECTOR_BYTES / std::mem::size_of::<T>() as u64,
    };
    let blocks = sum_blocks(n, per_vector, sms);
    let trips = (n / per_vector).div_ceil(grid_threads64(blocks));
    let tree = 2 * u64::from(WARP_SIZE.ilog2());
    trips * per_vector + 2 + tree + u64::from(blocks).div_ceil(u64::from(SUM_BLOCK)) + tree
}

/// The bound on `|sum(x) - Σx|` of [`SumElement`] for `n` elements whose absolute values add
/// up to `sum_abs` and whose exact sum is `exact` (for `f32`: `γ_L sum_abs`, plus the final
/// rounding's `2^-24 (|exact| + γ_L sum_abs)`). 0 for the integer sums.
pub fn sum_error_bound<T: SumElement>(n: u64, sms: u32, exact: f64, sum_abs: f64) -> f64 {
    let l = sum_depth::<T>(n, sms) as f64;
    let u = f64::EPSILON / 2.0;
    let gamma = l * u / (1.0 - l * u);
    let accumulated = gamma * sum_abs;
    match T::KIND {
        Kind::Wrap32 | Kind::Wrap64 => 0.0,
        Kind::F64 => accumulated,
        Kind::F32 => accumulated + (f32::EPSILON as f64 / 2.0) * (exact.abs() + accumulated),
    }
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
    fn typed_sum_plans_check_sizes_and_scratch() {
        // SAFETY: descriptors only; nothing is launched.
        let (input, mut total, mut scratch) = unsafe {
            (
                DeviceViewMut::<u64>::stand_in(0x1000_0008, 1_000_003),
                DeviceViewMut::<u64>::stand_in(0x2000_0000, 1),
                DeviceViewMut::<u64>::stand_in(0x3000_0000, scratch_words(132) - RESULT_WORDS),
            )
        };
        let call = plan_sum_u64(&input, &mut total, 132).unwrap();
        assert!(call.atomic());
        assert_eq!(
            (call.launch(), call.args().2),
            (Launch::linear(132 * 2, 1024).with_shared(SUM_SHARED_BYTES), 1_000_003)
        );
        assert_eq!(plan_sum_u64(&input, &mut total, 1).unwrap().launch().grid.0, 2);
        // SAFETY: as above.
        let (empty, mut none) =
            unsafe { (DeviceViewMut::<u64>::stand_in(0x1000, 0), DeviceViewMut::<u64>::stand_in(0x2000, 0)) };
        assert!(matches!(plan_sum_u64(&empty, &mut total, 132), Err(Error::Empty(_))));
        assert!(matches!(plan_sum_u64(&input, &mut none, 132), Err(Error::LengthMismatch { .. })));
        // The float sums: one block total a block after the counter; never marked atomic (their
        // atomics are on the handle's own scratch, whatever device the total is on).
        // SAFETY: as above.
        let (floats, mut ftotal) = unsafe {
            (DeviceViewMut::<f32>::stand_in(0x1000_0004, 1 << 28), DeviceViewMut::<f32>::stand_in(0x2000_0000, 1))
        };
        let call = plan_in_order(&floats, &mut ftotal, &mut scratch, 132).unwrap();
        assert!(!call.atomic());
        assert_eq!(call.launch(), Launch::linear(264, 1024).with_shared(SUM_SHARED_BYTES));
        assert_eq!(call.args().4, 1 << 28);
        let mut short = scratch.slice_mut(..264).unwrap();
        assert!(matches!(
            plan_in_order(&floats, &mut ftotal, &mut short, 132),
            Err(Error::LengthMismatch { what: "reduce scratch", expected: 265, got: 264 })
        ));
        // The slot a handle keeps is enough for its largest grid.
        assert_eq!(scratch_words(132), 1 + 1 + 264);
    }

    #[test]
    fn integer_sums_wrap_at_their_width() {
        assert_eq!(sum_order_cpu(&[i32::MAX, 1], 0, 132), i32::MIN);
        assert_eq!(sum_order_cpu(&[u32::MAX, 2], 0, 132), 1);
        assert_eq!(sum_order_cpu(&[i64::MAX, 1, 1], 0, 132), i64::MIN + 1);
        assert_eq!(sum_order_cpu(&[u64::MAX, u64::MAX], 0, 132), u64::MAX - 1);
        // u32 and i32 are the same bits: the kernel is the same one.
        let values: Vec<u32> = (0..1000u32).map(|i| i.wrapping_mul(0x9e37_79b9)).collect();
        let as_i32: Vec<i32> = values.iter().map(|&v| v as i32).collect();
        assert_eq!(sum_order_cpu(&values, 4, 132), sum_cpu(&as_i32) as u32);
        assert_eq!((sum_depth::<i64>(1 << 30, 132), sum_error_bound::<u32>(1 << 30, 132, 0.0, 1e30)), (0, 0.0));
    }

    #[test]
    fn float_sums_have_the_documented_depth() {
        // 2^28 f32 on 132 SMs: 264 blocks of 1024, 249 trips of 4 elements, a head and a tail
        // element, 10 tree levels, one run over 264 block totals, 10 more levels.
        assert_eq!(sum_depth::<f32>(1 << 28, 132), 249 * 4 + 2 + 10 + 1 + 10);
        assert_eq!(sum_depth::<f64>(1, 132), 2 + 10 + 1 + 10);
        // The final rounding of the f32 sum: half an ulp of the total, on top of the f64 part.
        let b32 = sum_error_bound::<f32>(1 << 28, 132, 1.0, 0.0);
        assert_eq!(b32, f64::from(f32::EPSILON) / 2.0);
        // 2^28 f64: 497 trips of 2; the bound is γ_L, a hair over L u.
        assert_eq!(sum_depth::<f64>(1 << 28, 132), 497 * 2 + 23);
        let (b64, lu) = (sum_error_bound::<f64>(1 << 28, 132, 1.0, 1.0), 1017.0 * f64::EPSILON / 2.0);
        assert!(b64 > lu && b64 < lu * (1.0 + 1e-12), "{b64} {lu}");
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
