//! The library's sums of element types past `i32` (`coalesce::reduce::sum::<T>`): 64-bit integers
//! (wrapping) and floats (in a fixed order, so the same input gives the same bits every call).
//!
//! Each thread adds a grid-stride run of 16-byte vectors, `UNROLL` loads in flight, exactly as
//! `reduce_shuffle_vec4` does for `i32` (and `u32`, whose wrapping sum is the same bits, runs that
//! very kernel); the block adds its threads' partials with a shuffle tree. The wrapping 64-bit sum
//! then adds each block's total into `total[0]` with one atomic (any order gives the same bits).
//! The float sums cannot (the order of the atomics would change the rounding), so each block
//! stores its total in its own slot of `partials` and the last block to finish (the one that
//! takes the last ticket of `counter`) adds the slots in index order with the same tree.
//!
//! # The float sums' order
//!
//! With `g = block * SUM_BLOCK + thread` and `step` the grid's threads (`grid_threads64`), and the
//! input split into `head` elements (up to the first 16-byte boundary), `vectors` whole 16-byte
//! vectors after them and `tail` elements past those:
//! 1. thread `g` adds, in `f64`, from `+0.0`: the elements of vectors `g, g + step, g + 2 step, ..`
//!    in index order (each vector's elements in order), then head element `g` if `g < head`, then
//!    tail element `g` if `g < tail`;
//! 2. each warp adds its 32 partials with the shuffle tree (`warp_tree`: at delta 16, 8, 4, 2, 1,
//!    lane `l < delta` adds lane `l + delta`'s value), lane 0 of every warp parks the warp's sum
//!    in shared word `warp`, and warp 0 adds those 32 the same way: the block's total;
//! 3. the last block's thread `t` adds, from `+0.0`, the totals of blocks `t, t + SUM_BLOCK, ..`,
//!    and the block adds those as in step 2. An `f32` sum rounds that `f64` once, at the end.
//!
//! The grid is `sum_blocks(n, ..)`: a function of `n` and the multiprocessor count alone, and the
//! head of the view's address modulo 16 alone. So the same values at the same element offset
//! modulo `16 / size_of::<T>()` from a buffer's start (allocations are 256-byte aligned) give the
//! same bits on any GPU with as many multiprocessors; `coalesce::reduce::sum_order_cpu` runs the
//! same order on the CPU.

use super::{SHUFFLE_BLOCK, SHUFFLE_BLOCKS_PER_SM};
use crate::WARP_SIZE;
use crate::kernel;
#[cfg(target_arch = "nvptx64")]
use crate::prelude::{atomic, mem, shared, thread, warp};

/// Threads per block of the typed sums: the shuffle kernel's 1024 (its traversal functions,
/// `thread_index64` and `grid_threads64`, are theirs too).
pub const SUM_BLOCK: u32 = SHUFFLE_BLOCK;
/// Resident blocks per SM the grid is sized for.
pub const SUM_BLOCKS_PER_SM: u32 = SHUFFLE_BLOCKS_PER_SM;
/// Warps of a block: the warp sums the block tree adds, one per lane of warp 0.
pub const SUM_WARPS: u32 = SUM_BLOCK / WARP_SIZE;
/// Shared memory of every typed sum: one 8-byte accumulator per warp, then the float sums'
/// "this block is the last" flag.
pub const SUM_SHARED_BYTES: u32 = SUM_WARPS * 8 + 8;
/// Bytes one vector load reads.
pub const VECTOR_BYTES: u64 = 16;
/// The boundary the wrapping sum's head runs up to: 512 bytes, so every warp's 16-byte loads
/// cover one aligned 512-byte block (as `reduce_shuffle_vec4`'s, whose measurements chose it).
/// The order of a wrapping sum does not change its bits.
pub const WRAP_BOUNDARY: u64 = 512;
/// The boundary the float sums' head runs up to: the 16 bytes a vector load needs and no more,
/// so their order (and bits) depends on the view's start only modulo 16 bytes, which for a view
/// into a buffer is its element offset modulo `16 / size` (allocations are 256-byte aligned).
/// A view off a 512-byte boundary reads about 3% slower for it (`reduce_shuffle_vec4`'s
/// measurements); one at a buffer's start is on one.
pub const FLOAT_BOUNDARY: u64 = 16;

const _: () = assert!(SUM_WARPS == WARP_SIZE, "warp 0 adds the warp sums one a lane, every lane one");
const _: () = assert!(SUM_BLOCK <= crate::launch::MAX_BLOCK_THREADS);
const _: () = assert!(WRAP_BOUNDARY.is_multiple_of(VECTOR_BYTES) && FLOAT_BOUNDARY.is_multiple_of(VECTOR_BYTES));
// The head's elements (fewer than a boundary's worth of the smallest, 4-byte, elements) and the
// tail's (fewer than a vector's) are added by the first threads of block 0.
const _: () = assert!(WRAP_BOUNDARY / 4 <= SUM_BLOCK as u64, "one thread a head element");

/// Elements of `size` bytes before the first `boundary`-byte boundary at or after byte address
/// `address` (a multiple of `size`), at most `n`: the head a sum adds one by one before its
/// 16-byte loads. `size` and `boundary` are non-zero, `size` divides `boundary`.
pub const fn head_elements(address: u64, n: u64, size: u64, boundary: u64) -> u64 {
    let to_boundary = ((boundary - address % boundary) % boundary) / size;
    if to_boundary < n { to_boundary } else { n }
}

/// How the elements past the head split: `(vectors, tail)`, whole 16-byte vectors of
/// `per_vector` elements and the `tail < per_vector` elements after them.
pub const fn vector_split(elements: u64, per_vector: u64) -> (u64, u64) {
    (elements / per_vector, elements % per_vector)
}

/// Blocks of a typed sum over `n` elements, `per_vector` to a 16-byte vector, on `sms`
/// multiprocessors: a grid-stride launch over the vectors (at least one block, which adds the
/// head and tail). A function of `n` and `sms` only: the float sums' order depends on it.
pub const fn sum_blocks(n: u64, per_vector: u64, sms: u32) -> u32 {
    let vectors = n / per_vector;
    crate::launch::grid_stride_blocks(if vectors == 0 { 1 } else { vectors }, SUM_BLOCK, sms, SUM_BLOCKS_PER_SM)
}

/// The shuffle tree over one warp's 32 values, as the kernels run it: at each delta 16, 8, 4,
/// 2, 1, lane `l < delta` adds lane `l + delta`'s value to its own; lane 0 ends with the sum.
/// `values[l]` is lane `l`'s value; `add` is the element type's addition.
pub fn warp_tree<A: Clone>(mut values: [A; WARP_SIZE as usize], add: impl Fn(A, A) -> A) -> A {
    let mut delta = WARP_SIZE / 2;
    while delta > 0 {
        for lane in 0..delta as usize {
            values[lane] = add(values[lane].clone(), values[lane + delta as usize].clone());
        }
        delta /= 2;
    }
    values[0].clone()
}

kernel! {
    #[launch_bounds(1024, 2)]
    /// The wrapping sum of 64-bit integers (`u64` and `i64`: the same bits) into `total[0]`,
    /// which the host zeroes: `reduce_shuffle_vec4`'s plan at 8 bytes an element. 16-byte
    /// `ld.global.nc.v2.u64` loads, `UNROLL` in flight a thread (a warp instruction reads 512
    /// contiguous bytes), after a head of up to 63 elements added one by one to the first
    /// 512-byte boundary; one atomic a block.
    pub unsafe fn reduce_sum_u64(input: *const u64, total: *mut u64, n: u64) {
        let s = shared::dynamic::<u64>();
        let head = head_elements(input as u64, n, 8, WRAP_BOUNDARY);
        // SAFETY: the plan checked `input` holds n u64 and `total` at least one, and launched
        // SUM_BLOCK threads with SUM_SHARED_BYTES of shared memory (see `device`).
        unsafe {
            let sum = device::block_total(device::thread_partial::<u64>(input, n, head), s);
            if thread::thread_idx_x() == 0 {
                atomic::add_u64(total, sum);
            }
        }
    }
}

/// Declares a float sum's kernel: its body is `device::in_order`, written once.
macro_rules! float_sum {
    ($(#[$attr:meta])* $name:ident: $t:ty) => {
        kernel! {
            #[launch_bounds(1024, 2)]
            $(#[$attr])*
            pub unsafe fn $name(input: *const $t, total: *mut $t, counter: *mut u64, partials: *mut u64, n: u64) {
                // SAFETY: forwarded plan guarantees (see `device::in_order`).
                unsafe { device::in_order::<$t>(input, total, counter, partials, n) }
            }
        }
    };
}

float_sum! {
    /// The `f32` sum in the module's fixed order, accumulated in `f64` (the bandwidth leaves the
    /// SM time for the conversions; the error bound is then the `f64` one plus the final
    /// rounding to `f32`): 16-byte `ld.global.nc.v4.f32` loads, `UNROLL` in flight, each
    /// block's total in `partials[block]`, the last block to take a ticket of `counter[0]`
    /// (which it leaves at 0 again) adds them in index order into `total[0]`.
    reduce_sum_f32: f32
}

float_sum! {
    /// The `f64` sum in the module's fixed order, accumulated in `f64`: as `reduce_sum_f32`,
    /// with `ld.global.nc.v2.f64` loads.
    reduce_sum_f64: f64
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::super::{UNROLL, grid_threads64, thread_index64, unrolled_vector, whole_trip};
    use super::*;

    /// What a thread accumulates in: wrapping `u64` or `f64`.
    pub(super) trait Acc: Copy {
        const ZERO: Self;
        fn plus(self, other: Self) -> Self;
        /// # Safety
        /// The whole warp calls it together, converged.
        unsafe fn shfl_down(self, delta: u32) -> Self;
    }

    impl Acc for u64 {
        const ZERO: Self = 0;
        #[inline(always)]
        fn plus(self, other: Self) -> Self {
            self.wrapping_add(other)
        }
        #[inline(always)]
        unsafe fn shfl_down(self, delta: u32) -> Self {
            // SAFETY: forwarded from the caller.
            unsafe { warp::shfl_down_u64(self, delta) }
        }
    }

    impl Acc for f64 {
        const ZERO: Self = 0.0;
        #[inline(always)]
        fn plus(self, other: Self) -> Self {
            self + other
        }
        #[inline(always)]
        unsafe fn shfl_down(self, delta: u32) -> Self {
            // SAFETY: forwarded from the caller.
            f64::from_bits(unsafe { warp::shfl_down_u64(self.to_bits(), delta) })
        }
    }

    /// An element type the sums read 16 bytes at a time.
    pub(super) trait Summed: Copy {
        type Acc: Acc;
        /// One 16-byte vector of elements.
        type Vector: Copy;
        /// Elements in a vector.
        const PER_VECTOR: u64;
        const EMPTY: Self::Vector;
        /// # Safety
        /// `p` is 16-byte aligned and points to a vector of the input, which nothing writes.
        unsafe fn load(p: *const Self::Vector) -> Self::Vector;
        /// `acc` plus the vector's elements, one at a time in index order.
        fn add_vector(acc: Self::Acc, v: Self::Vector) -> Self::Acc;
        fn add_one(acc: Self::Acc, x: Self) -> Self::Acc;
    }

    impl Summed for u64 {
        type Acc = u64;
        type Vector = [u64; 2];
        const PER_VECTOR: u64 = 2;
        const EMPTY: [u64; 2] = [0; 2];
        #[inline(always)]
        unsafe fn load(p: *const [u64; 2]) -> [u64; 2] {
            // SAFETY: forwarded from the caller.
            unsafe { mem::load_v2_u64(p) }
        }
        #[inline(always)]
        fn add_vector(acc: u64, v: [u64; 2]) -> u64 {
            acc.wrapping_add(v[0]).wrapping_add(v[1])
        }
        #[inline(always)]
        fn add_one(acc: u64, x: u64) -> u64 {
            acc.wrapping_add(x)
        }
    }

    impl Summed for f32 {
        type Acc = f64;
        type Vector = [f32; 4];
        const PER_VECTOR: u64 = 4;
        const EMPTY: [f32; 4] = [0.0; 4];
        #[inline(always)]
        unsafe fn load(p: *const [f32; 4]) -> [f32; 4] {
            // SAFETY: forwarded from the caller.
            unsafe { mem::load_v4_f32_nc(p) }
        }
        #[inline(always)]
        fn add_vector(acc: f64, v: [f32; 4]) -> f64 {
            acc + v[0] as f64 + v[1] as f64 + v[2] as f64 + v[3] as f64
        }
        #[inline(always)]
        fn add_one(acc: f64, x: f32) -> f64 {
            acc + x as f64
        }
    }

    impl Summed for f64 {
        type Acc = f64;
        type Vector = [f64; 2];
        const PER_VECTOR: u64 = 2;
        const EMPTY: [f64; 2] = [0.0; 2];
        #[inline(always)]
        unsafe fn load(p: *const [f64; 2]) -> [f64; 2] {
            // SAFETY: forwarded from the caller.
            unsafe { mem::load_v2_f64(p) }
        }
        #[inline(always)]
        fn add_vector(acc: f64, v: [f64; 2]) -> f64 {
            acc + v[0] + v[1]
        }
        #[inline(always)]
        fn add_one(acc: f64, x: f64) -> f64 {
            acc + x
        }
    }

    /// A float sum's element: how its `f64` total becomes the result.
    pub(super) trait Float: Summed<Acc = f64> {
        fn round(total: f64) -> Self;
    }

    impl Float for f32 {
        #[inline(always)]
        fn round(total: f64) -> f32 {
            total as f32
        }
    }

    impl Float for f64 {
        #[inline(always)]
        fn round(total: f64) -> f64 {
            total
        }
    }

    /// This thread's partial (step 1 of the module's order): its vectors in index order, then
    /// its head element, then its tail element.
    ///
    /// # Safety
    /// `input` holds `n` elements, `head <= n` of them before a 16-byte boundary
    /// (`head_elements`), and nothing writes them during the kernel; the block has
    /// `SUM_BLOCK` threads.
    #[inline(always)]
    pub(super) unsafe fn thread_partial<E: Summed>(input: *const E, n: u64, head: u64) -> E::Acc {
        let (vectors, tail) = vector_split(n - head, E::PER_VECTOR);
        // SAFETY: head <= n, and input + head is on a 16-byte boundary.
        let src = unsafe { input.add(head as usize) } as *const E::Vector;
        let g = thread_index64(thread::block_idx_x(), thread::thread_idx_x());
        let step = grid_threads64(thread::grid_dim_x());
        let mut i = g;
        let mut acc = E::Acc::ZERO;
        // SAFETY (whole body): vector indices < vectors from the boundary at `head`, head
        // indices < head, tail indices < n (the caller's contract).
        unsafe {
            while whole_trip(i, step, vectors) {
                // Every load of the trip is issued before the first add; the adds then take the
                // vectors in index order, as a one-at-a-time loop would.
                let mut v = [E::EMPTY; UNROLL as usize];
                let mut k = 0;
                while k < UNROLL {
                    v[k as usize] = E::load(src.add(unrolled_vector(i, k, step) as usize));
                    k += 1;
                }
                k = 0;
                while k < UNROLL {
                    acc = E::add_vector(acc, v[k as usize]);
                    k += 1;
                }
                i += UNROLL as u64 * step;
            }
            while i < vectors {
                acc = E::add_vector(acc, E::load(src.add(i as usize)));
                i += step;
            }
            if g < head {
                acc = E::add_one(acc, *input.add(g as usize));
            }
            if g < tail {
                acc = E::add_one(acc, *input.add((head + vectors * E::PER_VECTOR + g) as usize));
            }
        }
        acc
    }

    /// The block's sum of every thread's `value` (step 2 of the module's order), in thread 0
    /// (the other threads' results mean nothing).
    ///
    /// # Safety
    /// Every thread of the `SUM_BLOCK`-thread block calls it (it holds a barrier and whole-warp
    /// shuffles); `s` holds `SUM_WARPS` accumulators of shared memory that no thread touches
    /// between the last barrier before the call and the call.
    #[inline(always)]
    pub(super) unsafe fn block_total<A: Acc>(value: A, s: *mut A) -> A {
        let t = thread::thread_idx_x();
        let (warp_id, lane) = (t / WARP_SIZE, t % WARP_SIZE);
        // SAFETY (whole body): every lane of every warp reaches each shuffle (no thread returns
        // and the branches hold whole warps: warp 0 is lanes 0-31); shared indices < SUM_WARPS.
        unsafe {
            let mut v = tree(value);
            if lane == 0 {
                *s.add(warp_id as usize) = v;
            }
            thread::sync_threads();
            if warp_id == 0 {
                v = tree(*s.add(lane as usize));
            }
            v
        }
    }

    /// `warp_tree` with shuffles: lane 0 gets the warp's sum.
    ///
    /// # Safety
    /// The whole warp calls it together, converged.
    #[inline(always)]
    unsafe fn tree<A: Acc>(mut v: A) -> A {
        let mut delta = WARP_SIZE / 2;
        while delta > 0 {
            // SAFETY: forwarded from the caller.
            v = v.plus(unsafe { v.shfl_down(delta) });
            delta /= 2;
        }
        v
    }

    /// A float sum in the module's order.
    ///
    /// # Safety
    /// `input` holds `n` elements that nothing writes during the kernel, `total` one, `partials`
    /// one u64 a block of the grid and `counter` one u64 that holds 0 and that no other kernel
    /// touches while this one runs; the launch has `SUM_BLOCK` threads a block and
    /// `SUM_SHARED_BYTES` of shared memory (the plan checks all of it; the counter's holder
    /// keeps it to one launch at a time).
    #[inline(always)]
    pub(super) unsafe fn in_order<E: Float>(
        input: *const E,
        total: *mut E,
        counter: *mut u64,
        partials: *mut u64,
        n: u64,
    ) {
        let s = shared::dynamic::<f64>();
        let t = thread::thread_idx_x();
        let (b, grid) = (thread::block_idx_x(), thread::grid_dim_x());
        let head = head_elements(input as u64, n, core::mem::size_of::<E>() as u64, FLOAT_BOUNDARY);
        // SAFETY (whole body): the caller's contract; shared slots: SUM_WARPS f64, then the
        // flag at byte SUM_WARPS * 8 (inside SUM_SHARED_BYTES); partial indices < grid.
        unsafe {
            let sum = block_total(thread_partial::<E>(input, n, head), s);
            let last = s.add(SUM_WARPS as usize) as *mut u32;
            if t == 0 {
                *partials.add(b as usize) = sum.to_bits();
                // Release: the partial is visible GPU-wide before the ticket is taken.
                atomic::fence_gpu();
                let ticket = atomic::add_u64(counter, 1);
                // Acquire: every partial whose ticket came before is visible to this thread,
                // and through the barrier below to its block.
                atomic::fence_gpu();
                *last = (ticket + 1 == grid as u64) as u32;
            }
            thread::sync_threads();
            // Uniform over the block: every thread reads the flag behind the same barrier.
            if *last != 0 {
                let mut acc = 0.0f64;
                let mut j = t;
                while j < grid {
                    acc += f64::from_bits(mem::load_relaxed_u64(partials.add(j as usize)));
                    j += SUM_BLOCK;
                }
                // `block_total`'s first barrier orders warp 0's reads of `s` above before the
                // warp sums written into it now.
                let sum = block_total(acc, s);
                if t == 0 {
                    *total = E::round(sum);
                    // Every block has taken its ticket: the next launch starts from 0 again.
                    atomic::store_u64(counter, 0);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_end_on_the_boundary_and_never_pass_n() {
        for size in [4u64, 8] {
            for boundary in [FLOAT_BOUNDARY, WRAP_BOUNDARY] {
                for start in (0..2 * boundary).step_by(size as usize) {
                    let head = head_elements(0x1000_0000 + start, 1 << 20, size, boundary);
                    assert_eq!((start + head * size) % boundary, 0, "size {size} start {start}");
                    assert!(head * size < boundary);
                    assert_eq!(head_elements(0x1000_0000 + start, 2, size, boundary), head.min(2));
                }
            }
        }
        assert_eq!(vector_split(11, 4), (2, 3));
    }

    #[test]
    fn grids_depend_on_n_and_the_gpu_only() {
        assert_eq!(sum_blocks(1, 4, 132), 1);
        assert_eq!(sum_blocks(3, 4, 132), 1);
        assert_eq!(sum_blocks(1 << 28, 4, 132), 132 * SUM_BLOCKS_PER_SM);
        assert_eq!(sum_blocks(5 * 1024 * 2, 2, 132), 5);
    }

    #[test]
    fn the_warp_tree_adds_every_lane_once() {
        let lanes: [u64; 32] = core::array::from_fn(|l| 1 << l);
        assert_eq!(warp_tree(lanes, |a, b| a + b), u32::MAX as u64);
        // The grouping is a tree, not left to right: lane 0 first meets lane 16.
        let order = warp_tree(core::array::from_fn(|l| vec![l]), |a, b| [a, b].concat());
        assert_eq!(order[..4], [0, 16, 8, 24]);
    }
}
