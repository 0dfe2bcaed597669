//! Integer sum reduction (wrapping `i32`, so GPU and CPU agree exactly). The seed's kernel as
//! designed, then the classic tree progression (each block writes a partial sum that a second
//! pass adds up), then a warp-shuffle kernel with 16-byte loads. The library's sums of other
//! element types are in [`elements`].
//!
//! Every kernel takes `(input, output or partials, n)`. The lesson kernels index in 32 bits
//! (`n <= launch::MAX_ELEMENTS_32`); `reduce_shuffle_vec4`, the library's `sum`, indexes in 64
//! bits and takes any size.

use crate::WARP_SIZE;
pub use crate::coalescing::vec4_split;

pub mod elements;
use crate::kernel;
#[cfg(target_arch = "nvptx64")]
use crate::prelude::{atomic, mem, shared, thread, warp};

/// Threads per block for every reduce kernel (the seed's BLOCK_SIZE). The kernels index with
/// this constant, never with `blockDim`: the plans launch exactly this many threads a block.
pub const BLOCK: u32 = 256;
/// Warps in a block: the warp sums the shuffle kernel adds in shared memory.
pub const WARPS: u32 = BLOCK / WARP_SIZE;
/// Dynamic shared memory of every reduce launch: one `i32` per thread (the trees use all of it,
/// the shuffle kernel its first `WARPS` words).
pub const SHARED_BYTES: u32 = BLOCK * 4;
/// Blocks of the seed's launch (its BLOCKS).
pub const SEED_BLOCKS: u32 = 32;
/// Resident blocks per SM for the grid-stride kernels.
pub const BLOCKS_PER_SM: u32 = 8;
/// 16-byte vectors each thread of the shuffle kernel has in flight per loop trip.
pub const UNROLL: u32 = 4;
/// Threads per block of the shuffle kernel: 1024, two blocks per SM. With the same 2048 resident
/// threads per SM as 8 blocks of 256, the H100 read 2^28 i32 at 3112 GB/s instead of 3078
/// (a CUDA C sweep of block size × blocks per SM × loads in flight; BENCHMARKS.md): a quarter of
/// the blocks, so a quarter of the block launches, warp-sum rounds and atomics.
pub const SHUFFLE_BLOCK: u32 = 1024;
/// Resident shuffle blocks per SM.
pub const SHUFFLE_BLOCKS_PER_SM: u32 = 2;
/// Warps of a shuffle block: its warp sums fill one warp.
pub const SHUFFLE_WARPS: u32 = SHUFFLE_BLOCK / WARP_SIZE;

// The trees halve `BLOCK` down to one value (`d = BLOCK / 2, BLOCK / 4, .. 1`), and the
// interleaved ones rely on `2 d t < BLOCK` implying `2 d t + d < BLOCK`: both need a power of two.
const _: () = assert!(BLOCK.is_power_of_two(), "the trees halve BLOCK down to 1");
// Warps must not straddle blocks, and the shuffles need all 32 lanes of every warp.
const _: () = assert!(BLOCK.is_multiple_of(WARP_SIZE), "every warp of a block is whole");
// `last_warp` adds `s[t + 32]` for `t < 32`: the tree above it must leave 64 values.
const _: () = assert!(BLOCK >= 2 * WARP_SIZE, "the last warp starts from 64 values");
// One warp adds the warp sums of a block, one per lane.
const _: () = assert!(WARPS <= WARP_SIZE, "the warp sums fit one warp");
// The shuffle kernel's whole-trip bound `i + (UNROLL - 1) * step` needs at least one load.
const _: () = assert!(UNROLL >= 1);
const _: () = assert!(SHARED_BYTES >= WARPS * 4);
const _: () =
    assert!(SHUFFLE_BLOCK.is_multiple_of(WARP_SIZE) && SHUFFLE_WARPS <= WARP_SIZE, "shuffle warp sums fit one warp");
const _: () =
    assert!(SHARED_BYTES >= SHUFFLE_WARPS * 4, "the shuffle kernel's warp sums fit the launch's shared memory");
const _: () = assert!(SHUFFLE_BLOCK <= crate::launch::MAX_BLOCK_THREADS);

/// Blocks the one-element-per-thread tree kernels need for `n` elements.
pub const fn tree_blocks(n: u32) -> u32 {
    n.div_ceil(BLOCK)
}

/// Blocks of the "first add during load" kernels: each block covers `2 * BLOCK` elements.
pub const fn first_add_blocks(n: u32) -> u32 {
    n.div_ceil(2 * BLOCK)
}

/// Blocks of the seed kernel's GPU-filling grid: `BLOCKS_PER_SM` per SM, never more than one
/// per `BLOCK` elements (so the grid-stride step `BLOCK * blocks` stays at most 2^31).
pub const fn seed_filled_blocks(n: u32, sms: u32) -> u32 {
    crate::launch::grid_stride_blocks(n as u64, BLOCK, sms, BLOCKS_PER_SM)
}

/// Blocks of `reduce_many_per_thread`: `BLOCKS_PER_SM` per SM, never more than one per
/// `2 * BLOCK` elements (a block's first trip covers that many), so the 32-bit grid-stride step
/// `2 * BLOCK * blocks` stays at most 2^31 and `i + step` never wraps.
pub const fn many_blocks(n: u32, sms: u32) -> u32 {
    crate::launch::grid_stride_blocks(n as u64, 2 * BLOCK, sms, BLOCKS_PER_SM)
}

/// Blocks of `reduce_shuffle_vec4` over `n` elements: a grid-stride launch over its 16-byte
/// vectors (at least one block, for the tail when `n < 4`).
pub const fn shuffle_blocks(n: u64, sms: u32) -> u32 {
    let (vectors, _) = vec4_split(n);
    crate::launch::grid_stride_blocks(if vectors == 0 { 1 } else { vectors }, SHUFFLE_BLOCK, sms, SHUFFLE_BLOCKS_PER_SM)
}

/// Global number of thread `t` of block `b`: the element a one-element-per-thread kernel loads,
/// and the first element of the seed's grid-stride run.
#[inline(always)]
pub const fn thread_index(b: u32, t: u32) -> u32 {
    b * BLOCK + t
}

/// Threads in a grid of `blocks` blocks: the step of the seed's grid-stride loop.
#[inline(always)]
pub const fn grid_threads(blocks: u32) -> u32 {
    blocks * BLOCK
}

/// The first of the two elements thread `t` of block `b` adds while loading (its partner is
/// `BLOCK` further): block `b` covers elements `2 b BLOCK .. 2 (b + 1) BLOCK`.
#[inline(always)]
pub const fn pair_index(b: u32, t: u32) -> u32 {
    b * 2 * BLOCK + t
}

/// The second element of the pair that starts at element `i`: `BLOCK` further, so each of a
/// pair's two warp loads reads 128 contiguous bytes.
#[inline(always)]
pub const fn pair_partner(i: u32) -> u32 {
    i + BLOCK
}

/// Step of `reduce_many_per_thread`'s grid-stride loop over pairs, for a grid of `blocks`.
#[inline(always)]
pub const fn pair_step(blocks: u32) -> u32 {
    2 * BLOCK * blocks
}

/// Level `d` (1, 2, .. BLOCK / 2) of the divergent interleaved tree: thread `t` works when
/// `t % 2d == 0` and adds word `t + d` into word `t`.
#[inline(always)]
pub const fn divergent_pair(t: u32, d: u32) -> Option<(u32, u32)> {
    if t.is_multiple_of(2 * d) { Some((t, t + d)) } else { None }
}

/// Level `d` (1, 2, .. BLOCK / 2) of the interleaved tree with contiguous workers: thread `t`
/// adds word `2 d t + d` into word `2 d t` while `2 d t < BLOCK`.
#[inline(always)]
pub const fn conflict_pair(t: u32, d: u32) -> Option<(u32, u32)> {
    let index = 2 * d * t;
    if index < BLOCK { Some((index, index + d)) } else { None }
}

/// Level `d` (BLOCK / 2, BLOCK / 4, .. 1) of a sequential tree: thread `t < d` adds word
/// `t + d` into word `t`.
#[inline(always)]
pub const fn sequential_pair(t: u32, d: u32) -> Option<(u32, u32)> {
    if t < d { Some((t, t + d)) } else { None }
}

/// The words lane `t` of the first warp adds before the shuffles, once the tree has left 64.
#[inline(always)]
pub const fn last_warp_pair(t: u32) -> (u32, u32) {
    (t, t + WARP_SIZE)
}

/// `(warp, lane)` of thread `t` of a block: the warp whose sum the shuffle kernel parks in
/// shared word `warp`, and the lane inside it.
#[inline(always)]
pub const fn warp_lane(t: u32) -> (u32, u32) {
    (t / WARP_SIZE, t % WARP_SIZE)
}

/// Global number of thread `t` of block `b` in 64 bits: the first vector the shuffle kernel
/// loads, and the tail element (`4 * vectors + index`) it adds when below `n % 4`.
#[inline(always)]
pub const fn thread_index64(b: u32, t: u32) -> u64 {
    b as u64 * SHUFFLE_BLOCK as u64 + t as u64
}

/// Threads in a grid of `blocks` blocks, in 64 bits: the shuffle kernel's grid-stride step.
#[inline(always)]
pub const fn grid_threads64(blocks: u32) -> u64 {
    blocks as u64 * SHUFFLE_BLOCK as u64
}

/// Vector that load `k` of a trip starting at vector `i` reads: the `UNROLL` loads of one trip
/// are a grid apart, so each warp instruction still reads 32 consecutive vectors.
#[inline(always)]
pub const fn unrolled_vector(i: u64, k: u32, step: u64) -> u64 {
    i + k as u64 * step
}

/// Whether a trip starting at vector `i` is whole (all `UNROLL` loads below `vectors`).
#[inline(always)]
pub const fn whole_trip(i: u64, step: u64, vectors: u64) -> bool {
    unrolled_vector(i, UNROLL - 1, step) < vectors
}

/// Elements of `reduce_shuffle_vec4`'s input at byte address `address` (a multiple of 4) added
/// one by one before its 16-byte loads, which start on the next 512-byte boundary, so that every
/// warp's 512 bytes are one aligned 512-byte block (at most 127, and at most `n`). On the H100 a
/// CUDA C twin summed 2^28 i32 at element offsets 1-3 at 96.9% of the aligned speed when it peeled
/// to a 32-byte boundary, 97.3% to 128 bytes, 99.9% to 512 and 99.2% to 4096.
pub const fn shuffle_head(address: u64, n: u64) -> u64 {
    let to_boundary = (128 - (address / 4) % 128) % 128;
    if to_boundary < n { to_boundary } else { n }
}

/// The element past the last whole vector that thread number `g < n % 4` adds.
#[inline(always)]
pub const fn tail_index(vectors: u64, g: u64) -> u64 {
    vectors * 4 + g
}

kernel! {
    /// The seed's kernel, as designed: grid-stride accumulation (each warp load reads 128
    /// contiguous bytes, 4 sectors), a shared-memory tree with two barriers per level (read,
    /// barrier, write, barrier), one `atomicAdd` per block into `output[0]`. With its 32 × 256
    /// launch, 8192 threads cannot keep enough loads in flight to fill DRAM.
    pub unsafe fn reduce_seed(input: *const i32, output: *mut i32, n: u32) {
        let s = shared::dynamic::<i32>();
        let t = thread::thread_idx_x();
        let b = thread::block_idx_x();
        let step = grid_threads(thread::grid_dim_x());
        let mut temp = 0i32;
        let mut idx = thread_index(b, t);
        // SAFETY (whole body): idx < n, the input's length, and `idx + step` does not wrap
        // (the plan's grid keeps `step <= 2^31` and `n < 2^31`); shared indices < BLOCK, the
        // launch's shared memory; `output` holds at least one i32. All checked by the plan.
        unsafe {
            while idx < n {
                temp = temp.wrapping_add(*input.add(idx as usize));
                idx += step;
            }
            *s.add(t as usize) = temp;
            thread::sync_threads();
            let mut length = BLOCK / 2;
            while length > 0 {
                let mut stage = 0i32;
                let pair = sequential_pair(t, length);
                if let Some((a, c)) = pair {
                    stage = (*s.add(a as usize)).wrapping_add(*s.add(c as usize));
                }
                thread::sync_threads();
                if let Some((a, _)) = pair {
                    *s.add(a as usize) = stage;
                }
                thread::sync_threads();
                length /= 2;
            }
            if thread_index(b, 0) < n && t == 0 {
                atomic::add_i32(output, *s);
            }
        }
    }
}

kernel! {
    /// Tree 1, interleaved addressing with a divergent branch: one element per thread (a warp
    /// loads 128 contiguous bytes), then at level `d` only threads with `t % 2d == 0` work, so
    /// every warp stays busy with mostly idle lanes. Writes one partial sum per block.
    pub unsafe fn reduce_interleaved_divergent(input: *const i32, partials: *mut i32, n: u32) {
        let s = shared::dynamic::<i32>();
        let t = thread::thread_idx_x();
        // SAFETY (whole body): the plan sized shared memory (BLOCK i32), the input (n) and the
        // partials (one per block); `divergent_pair` stays below BLOCK.
        unsafe {
            device::load_one(s, input, n);
            let mut d = 1;
            while d < BLOCK {
                if let Some((a, c)) = divergent_pair(t, d) {
                    *s.add(a as usize) = (*s.add(a as usize)).wrapping_add(*s.add(c as usize));
                }
                thread::sync_threads();
                d *= 2;
            }
            if t == 0 {
                *partials.add(thread::block_idx_x() as usize) = *s;
            }
        }
    }
}

kernel! {
    /// Tree 2, interleaved addressing with contiguous workers (`index = 2 d t`): changes who
    /// works, not what is added. No divergence in the first levels, but lanes `2d` words apart
    /// collide in the same banks (a `2d`-way conflict per shared access while `2d <= 32`).
    pub unsafe fn reduce_interleaved_conflicts(input: *const i32, partials: *mut i32, n: u32) {
        let s = shared::dynamic::<i32>();
        let t = thread::thread_idx_x();
        // SAFETY (whole body): as in `reduce_interleaved_divergent`; `conflict_pair` stays
        // below BLOCK.
        unsafe {
            device::load_one(s, input, n);
            let mut d = 1;
            while d < BLOCK {
                if let Some((a, c)) = conflict_pair(t, d) {
                    *s.add(a as usize) = (*s.add(a as usize)).wrapping_add(*s.add(c as usize));
                }
                thread::sync_threads();
                d *= 2;
            }
            if t == 0 {
                *partials.add(thread::block_idx_x() as usize) = *s;
            }
        }
    }
}

kernel! {
    /// Tree 3, sequential addressing: thread `t` adds `s[t + d]`, `d` halving from `BLOCK / 2`.
    /// Changes the addressing: a warp reads 32 consecutive words (conflict-free), no divergence
    /// until the last warp, but half the threads are idle from the first level on.
    pub unsafe fn reduce_sequential(input: *const i32, partials: *mut i32, n: u32) {
        let s = shared::dynamic::<i32>();
        // SAFETY: the plan sized shared memory (BLOCK i32), the input (n) and the partials (one
        // per block).
        unsafe {
            device::load_one(s, input, n);
            device::tree_to_partial::<false>(s, partials);
        }
    }
}

kernel! {
    /// Tree 4, first add during load: each thread adds two elements `BLOCK` apart (two warp
    /// loads of 128 contiguous bytes each) before `reduce_sequential`'s tree: half the blocks,
    /// no idle threads at the first level.
    pub unsafe fn reduce_first_add(input: *const i32, partials: *mut i32, n: u32) {
        let s = shared::dynamic::<i32>();
        // SAFETY: as in `reduce_sequential` (one partial per `2 * BLOCK` elements).
        unsafe {
            device::load_two(s, input, n);
            device::tree_to_partial::<false>(s, partials);
        }
    }
}

kernel! {
    /// Tree 5, last warp unrolled: `reduce_first_add` whose tree stops at 64 values; one warp
    /// finishes with register shuffles, saving five block-wide barriers.
    pub unsafe fn reduce_unroll_last_warp(input: *const i32, partials: *mut i32, n: u32) {
        let s = shared::dynamic::<i32>();
        // SAFETY: as in `reduce_first_add`.
        unsafe {
            device::load_two(s, input, n);
            device::tree_to_partial::<true>(s, partials);
        }
    }
}

kernel! {
    /// Tree 6, many elements per thread: a grid sized to the GPU, each thread adds a
    /// grid-stride run of elements (two per trip, `BLOCK` apart: two 128-byte warp loads)
    /// before `reduce_unroll_last_warp`'s tree, so the tree and barriers are paid once per
    /// ~thousand elements instead of once per two.
    pub unsafe fn reduce_many_per_thread(input: *const i32, partials: *mut i32, n: u32) {
        let s = shared::dynamic::<i32>();
        let t = thread::thread_idx_x();
        let step = pair_step(thread::grid_dim_x());
        let mut i = pair_index(thread::block_idx_x(), t);
        let mut sum = 0i32;
        // SAFETY (whole body): indices checked against n, and `i + step` does not wrap (the
        // plan's grid keeps `step <= 2^31`, `n < 2^31`); shared indices < BLOCK; one partial per
        // block. All checked by the plan.
        unsafe {
            while i < n {
                sum = sum.wrapping_add(*input.add(i as usize));
                if pair_partner(i) < n {
                    sum = sum.wrapping_add(*input.add(pair_partner(i) as usize));
                }
                i += step;
            }
            *s.add(t as usize) = sum;
            thread::sync_threads();
            device::tree_to_partial::<true>(s, partials);
        }
    }
}

kernel! {
    /// Warp shuffles and 16-byte loads: each thread keeps `UNROLL` independent 16-byte loads
    /// in flight (`ld.global.nc.v4`: a warp instruction reads 512 contiguous bytes, 16 full
    /// sectors), warps reduce in registers with `shfl.down`, the `SHUFFLE_WARPS` warp sums of a
    /// 1024-thread block meet in shared memory, one atomic per block into `output[0]`. Changes the tree kernels' loads
    /// (4× wider) and drops the partials pass. 64-bit `n` and indices: any size, any start (up
    /// to 127 elements before the first 512-byte boundary are added one by one): the library's
    /// `sum`, and the second pass of the tree methods over their partials.
    pub unsafe fn reduce_shuffle_vec4(input: *const i32, output: *mut i32, n: u64) {
        let s = shared::dynamic::<i32>();
        // Any start: threads 0..head add the elements before the first 512-byte boundary.
        let head = shuffle_head(input as u64, n);
        let (vectors, tail) = vec4_split(n - head);
        // SAFETY: head <= n, and input + head is on a 512-byte boundary (`shuffle_head`).
        let src = unsafe { input.add(head as usize) } as *const [i32; 4];
        let t = thread::thread_idx_x();
        let g = thread_index64(thread::block_idx_x(), t);
        let step = grid_threads64(thread::grid_dim_x());
        let mut i = g;
        // One accumulator: the sum wraps, so the order of the adds does not matter. With 64-bit
        // indices, four accumulators took 34 registers (ptxas, sm_90), past the 32 that keep
        // 8 blocks (2048 threads) resident per SM.
        let mut sum = 0i32;
        let add4 = |x: [i32; 4]| x[0].wrapping_add(x[1]).wrapping_add(x[2].wrapping_add(x[3]));
        // SAFETY (whole body): head indices < head, vector indices < (n - head) / 4 from the
        // 512-byte boundary at `head`, tail indices < n, and `output` at least one i32 (the plan
        // checked n and the output); shared indices
        // < SHUFFLE_WARPS words, within the launch's shared memory (asserted at compile time).
        unsafe {
            while whole_trip(i, step, vectors) {
                // Every load of the trip is issued before the first add: UNROLL in flight.
                let mut v = [[0i32; 4]; UNROLL as usize];
                let mut k = 0;
                while k < UNROLL {
                    v[k as usize] = mem::load_v4_i32(src.add(unrolled_vector(i, k, step) as usize));
                    k += 1;
                }
                k = 0;
                while k < UNROLL {
                    sum = sum.wrapping_add(add4(v[k as usize]));
                    k += 1;
                }
                i += UNROLL as u64 * step;
            }
            while i < vectors {
                sum = sum.wrapping_add(add4(mem::load_v4_i32(src.add(i as usize))));
                i += step;
            }
            if g < head {
                sum = sum.wrapping_add(*input.add(g as usize));
            }
            if g < tail as u64 {
                sum = sum.wrapping_add(*input.add((head + tail_index(vectors, g)) as usize));
            }
            // SAFETY: every thread of the block reaches this line (no thread returns early and
            // the loops and the tail branch above have all ended), and the block is whole warps
            // of 32 live lanes (SHUFFLE_BLOCK % 32 == 0): the full warp is converged here.
            sum = warp::reduce_sum_i32(sum);
            let (warp_id, lane) = warp_lane(t);
            if lane == 0 {
                *s.add(warp_id as usize) = sum;
            }
            thread::sync_threads();
            if warp_id == 0 {
                let v = if lane < SHUFFLE_WARPS { *s.add(lane as usize) } else { 0 };
                // SAFETY: `warp_id == 0` holds for all 32 lanes of warp 0 and for no other
                // lane, so the whole of warp 0 (and only it) enters, converged after the barrier.
                let v = warp::reduce_sum_i32(v);
                if lane == 0 {
                    atomic::add_i32(output, v);
                }
            }
        }
    }
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;

    /// Loads one element per thread (0 past the end) into shared memory and waits.
    ///
    /// # Safety
    /// `input` holds `n` i32, the launch has `BLOCK` threads and BLOCK i32 of shared memory,
    /// and `thread_index` does not wrap for its grid (at most `n.div_ceil(BLOCK)` blocks).
    #[inline(always)]
    pub(super) unsafe fn load_one(s: *mut i32, input: *const i32, n: u32) {
        let t = thread::thread_idx_x();
        let i = thread_index(thread::block_idx_x(), t);
        // SAFETY: i < n checked; t < BLOCK.
        unsafe { *s.add(t as usize) = if i < n { *input.add(i as usize) } else { 0 } };
        thread::sync_threads();
    }

    /// Each thread adds two elements `BLOCK` apart while loading: half the blocks, no idle
    /// threads at the first level.
    ///
    /// # Safety
    /// `input` holds `n` i32, the launch has `BLOCK` threads and BLOCK i32 of shared memory,
    /// and `pair_index + BLOCK` does not wrap for its grid (at most `n.div_ceil(2 * BLOCK)`).
    #[inline(always)]
    pub(super) unsafe fn load_two(s: *mut i32, input: *const i32, n: u32) {
        let t = thread::thread_idx_x();
        let i = pair_index(thread::block_idx_x(), t);
        // SAFETY: both indices checked against n; t < BLOCK.
        unsafe {
            let a = if i < n { *input.add(i as usize) } else { 0 };
            let b = if pair_partner(i) < n { *input.add(pair_partner(i) as usize) } else { 0 };
            *s.add(t as usize) = a.wrapping_add(b);
        }
        thread::sync_threads();
    }

    /// Tree with sequential addressing: thread `t` adds `s[t + d]`, `d` halving each level
    /// while `d > down_to`. Conflict-free, and whole warps retire together.
    ///
    /// # Safety
    /// `s` holds BLOCK i32 loaded by every thread of the block.
    #[inline(always)]
    unsafe fn tree_sequential(s: *mut i32, down_to: u32) {
        let t = thread::thread_idx_x();
        let mut d = BLOCK / 2;
        while d > down_to {
            if let Some((a, c)) = sequential_pair(t, d) {
                // SAFETY: t + d < BLOCK.
                unsafe { *s.add(a as usize) = (*s.add(a as usize)).wrapping_add(*s.add(c as usize)) };
            }
            thread::sync_threads();
            d /= 2;
        }
    }

    /// The last warp's levels without block barriers: the first warp adds the last 64 values
    /// with register shuffles (the modern form of Harris's volatile warp-synchronous code,
    /// which is unsafe since Volta's independent thread scheduling).
    ///
    /// # Safety
    /// `s` holds 64 or more i32 reduced down to its first 64 by the tree above, behind a
    /// barrier; every thread of the block calls this.
    #[inline(always)]
    unsafe fn last_warp(s: *mut i32) -> i32 {
        let t = thread::thread_idx_x();
        let mut v = 0;
        if t < WARP_SIZE {
            let (a, c) = last_warp_pair(t);
            // SAFETY: a < c < 64 <= BLOCK. The branch is taken by all 32 lanes of warp 0 and
            // by no other lane (the block is whole warps), so warp 0 calls the shuffles whole
            // and converged.
            unsafe {
                v = (*s.add(a as usize)).wrapping_add(*s.add(c as usize));
                v = warp::reduce_sum_i32(v);
            }
        }
        v
    }

    /// Finishes a block: the sequential tree over the `BLOCK` shared values, then thread 0
    /// writes the block's partial sum. With `WARP_FINISH` the tree stops at 64 values and the
    /// first warp adds those with shuffles.
    ///
    /// # Safety
    /// `s` holds BLOCK i32 written by every thread before a barrier; `partials` has one i32 per
    /// block; every thread of the block calls this.
    #[inline(always)]
    pub(super) unsafe fn tree_to_partial<const WARP_FINISH: bool>(s: *mut i32, partials: *mut i32) {
        // SAFETY: forwarded from the caller.
        unsafe {
            let v = if WARP_FINISH {
                tree_sequential(s, WARP_SIZE);
                last_warp(s)
            } else {
                tree_sequential(s, 0);
                *s
            };
            if thread::thread_idx_x() == 0 {
                *partials.add(thread::block_idx_x() as usize) = v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distances of the interleaved trees (1, 2, .. BLOCK / 2) and of the sequential ones.
    fn up() -> impl Iterator<Item = u32> {
        (0..BLOCK.trailing_zeros()).map(|k| 1 << k)
    }

    #[test]
    fn every_tree_level_stays_in_shared_memory_and_adds_each_word_once() {
        type Pair = fn(u32, u32) -> Option<(u32, u32)>;
        type Reads = fn(u32) -> u32;
        // Words each level reads: the interleaved trees fold BLOCK / d live words into half as
        // many, the sequential tree the first 2d.
        let trees: [(Pair, Reads); 3] =
            [(divergent_pair, |d| BLOCK / d), (conflict_pair, |d| BLOCK / d), (sequential_pair, |d| 2 * d)];
        for (pair, reads) in trees {
            for d in up() {
                let mut read = vec![0u32; BLOCK as usize];
                for t in 0..BLOCK {
                    if let Some((a, c)) = pair(t, d) {
                        assert!(a < BLOCK && c < BLOCK, "d={d} t={t}");
                        read[a as usize] += 1;
                        read[c as usize] += 1;
                    }
                }
                assert_eq!(read.iter().sum::<u32>(), reads(d), "d={d}");
                assert!(read.iter().all(|&r| r <= 1), "d={d}: a word read twice in one level");
            }
        }
        assert_eq!(last_warp_pair(31), (31, 63));
    }

    /// Simulates the interleaved and sequential trees on a block of values: the sum lands in
    /// word 0.
    #[test]
    fn trees_leave_the_block_sum_in_word_zero() {
        let values: Vec<i32> = (0..BLOCK as i32).map(|i| i * 7919 - 1000).collect();
        let want = values.iter().fold(0i32, |a, &b| a.wrapping_add(b));
        for (pair, levels) in [
            (divergent_pair as fn(u32, u32) -> Option<(u32, u32)>, up().collect::<Vec<_>>()),
            (conflict_pair, up().collect()),
            (sequential_pair, up().collect::<Vec<_>>().into_iter().rev().collect()),
        ] {
            let mut s = values.clone();
            for d in levels {
                let updates: Vec<_> = (0..BLOCK).filter_map(|t| pair(t, d)).collect();
                for (a, c) in updates {
                    s[a as usize] = s[a as usize].wrapping_add(s[c as usize]);
                }
            }
            assert_eq!(s[0], want);
        }
    }

    /// Every element is added exactly once by the grid-stride loops, for several grid sizes.
    #[test]
    fn grid_stride_loops_cover_every_element_once() {
        for n in [1u32, 31, 255, 256, 257, 511, 512, 513, 5000, 100_003] {
            for sms in [1, 3, 132] {
                // The seed (filled) and the seed's fixed grid.
                for blocks in [seed_filled_blocks(n, sms), SEED_BLOCKS] {
                    let mut hits = vec![0u8; n as usize];
                    for b in 0..blocks {
                        for t in 0..BLOCK {
                            let mut i = thread_index(b, t);
                            while i < n {
                                hits[i as usize] += 1;
                                i += grid_threads(blocks);
                            }
                        }
                    }
                    assert!(hits.iter().all(|&h| h == 1), "seed n={n} blocks={blocks}");
                }
                let blocks = many_blocks(n, sms);
                let mut hits = vec![0u8; n as usize];
                for b in 0..blocks {
                    for t in 0..BLOCK {
                        let mut i = pair_index(b, t);
                        while i < n {
                            hits[i as usize] += 1;
                            if i + BLOCK < n {
                                hits[(i + BLOCK) as usize] += 1;
                            }
                            i += pair_step(blocks);
                        }
                    }
                }
                assert!(hits.iter().all(|&h| h == 1), "many n={n}");
            }
            let mut hits = vec![0u8; n as usize];
            for b in 0..first_add_blocks(n) {
                for t in 0..BLOCK {
                    let i = pair_index(b, t);
                    for j in [i, i + BLOCK] {
                        if j < n {
                            hits[j as usize] += 1;
                        }
                    }
                }
            }
            assert!(hits.iter().all(|&h| h == 1), "first add n={n}");
            let mut hits = vec![0u8; n as usize];
            for b in 0..tree_blocks(n) {
                for t in 0..BLOCK {
                    let i = thread_index(b, t);
                    if i < n {
                        hits[i as usize] += 1;
                    }
                }
            }
            assert!(hits.iter().all(|&h| h == 1), "tree n={n}");
        }
    }

    /// The shuffle kernel's loops (whole trips, then single vectors, then the tail) add every
    /// element exactly once.
    #[test]
    fn shuffle_loops_cover_every_element_once() {
        for n in [1u64, 2, 3, 4, 5, 1023, 1024 * 4 + 3, 100_003, 1 << 20] {
            for sms in [1, 2, 132] {
                let blocks = shuffle_blocks(n, sms);
                let (vectors, tail) = vec4_split(n);
                let step = grid_threads64(blocks);
                let mut hits = vec![0u8; n as usize];
                let mut hit_vector = |v: u64| {
                    for j in 0..4 {
                        hits[(4 * v + j) as usize] += 1;
                    }
                };
                for b in 0..blocks {
                    for t in 0..SHUFFLE_BLOCK {
                        let g = thread_index64(b, t);
                        let mut i = g;
                        while whole_trip(i, step, vectors) {
                            for k in 0..UNROLL {
                                hit_vector(unrolled_vector(i, k, step));
                            }
                            i += UNROLL as u64 * step;
                        }
                        while i < vectors {
                            hit_vector(i);
                            i += step;
                        }
                    }
                }
                for g in 0..tail as u64 {
                    hits[tail_index(vectors, g) as usize] += 1;
                }
                assert!(hits.iter().all(|&h| h == 1), "n={n} sms={sms}");
            }
        }
    }

    #[test]
    fn grids_keep_the_32_bit_steps_from_wrapping() {
        let n = crate::launch::MAX_ELEMENTS_32 as u32;
        let huge = u32::MAX;
        assert_eq!(tree_blocks(n), 1 << 23);
        assert_eq!(first_add_blocks(n), 1 << 22);
        assert!(grid_threads(seed_filled_blocks(n, huge)) <= 1 << 31);
        assert!(pair_step(many_blocks(n, huge)) <= 1 << 31);
        assert!((n - 1).checked_add(pair_step(many_blocks(n, huge))).is_some());
        assert_eq!(shuffle_blocks(3, 132), 1);
        assert_eq!(shuffle_blocks((1 << 31) + 5, 132), 132 * SHUFFLE_BLOCKS_PER_SM);
        assert_eq!(thread_index64(u32::MAX, SHUFFLE_BLOCK - 1), u32::MAX as u64 * 1024 + 1023);
    }
}
