//! Integer sum reduction (wrapping `i32`, so GPU and CPU agree exactly). The seed's kernel as
//! designed, then the classic tree progression (each block writes a partial sum that a second
//! pass adds up), then a warp-shuffle kernel with 16-byte loads.

/// Threads per block for every tree kernel (the seed's BLOCK_SIZE).
pub const BLOCK: u32 = 256;
/// Blocks of the seed's launch (its BLOCKS).
pub const SEED_BLOCKS: u32 = 32;
/// Resident blocks per SM for the grid-stride kernels.
pub const BLOCKS_PER_SM: u32 = 8;
/// 16-byte vectors each thread of the shuffle kernel has in flight per loop trip.
pub const UNROLL: u32 = 4;

/// Blocks the one-element-per-thread tree kernels need for `n` elements.
pub const fn tree_blocks(n: u32) -> u32 {
    n.div_ceil(BLOCK)
}

/// Blocks of the "first add during load" kernels: each block covers `2 * BLOCK` elements.
pub const fn first_add_blocks(n: u32) -> u32 {
    n.div_ceil(2 * BLOCK)
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;
    use crate::prelude::{atomic, mem, shared, thread, warp};

    /// The seed's kernel, as designed: grid-stride accumulation, a shared-memory tree with two
    /// barriers per level (read, barrier, write, barrier), one `atomicAdd` per block.
    /// With its 32 × 256 launch, 8192 threads cannot keep enough loads in flight to fill DRAM.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn reduce_seed(input: *const i32, n: u32, output: *mut i32) {
        let s = shared::dynamic::<i32>();
        let t = thread::thread_idx_x();
        let mut temp = 0i32;
        let mut idx = thread::index_1d();
        // SAFETY (whole body): idx < n, the input's length (checked by the launcher); shared
        // indices < BLOCK, the launch's shared memory; `output` is one i32.
        unsafe {
            while idx < n {
                temp = temp.wrapping_add(*input.add(idx as usize));
                idx += thread::grid_size_1d();
            }
            *s.add(t as usize) = temp;
            thread::sync_threads();
            let mut length = BLOCK / 2;
            while length > 0 {
                let mut stage = 0i32;
                if t < length {
                    stage = (*s.add(t as usize)).wrapping_add(*s.add((t + length) as usize));
                }
                thread::sync_threads();
                if t < length {
                    *s.add(t as usize) = stage;
                }
                thread::sync_threads();
                length /= 2;
            }
            if thread::block_dim_x() * thread::block_idx_x() < n && t == 0 {
                atomic::add_i32(output, *s);
            }
        }
    }

    /// Loads one element per thread (0 past the end) into shared memory and waits.
    ///
    /// # Safety
    /// `input` holds `n` i32 and the launch has BLOCK i32 of shared memory.
    #[inline(always)]
    unsafe fn load_one(s: *mut i32, input: *const i32, n: u32) {
        let i = thread::index_1d();
        // SAFETY: i < n checked; thread index < BLOCK.
        unsafe { *s.add(thread::thread_idx_x() as usize) = if i < n { *input.add(i as usize) } else { 0 } };
        thread::sync_threads();
    }

    /// Step 1, interleaved addressing with a divergent branch: at level `d` only threads with
    /// `t % 2d == 0` work, so every warp stays busy with mostly idle lanes.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn reduce_interleaved_divergent(input: *const i32, n: u32, partial: *mut i32) {
        let s = shared::dynamic::<i32>();
        let t = thread::thread_idx_x();
        // SAFETY (whole body): shared indices < BLOCK; one partial per block.
        unsafe {
            load_one(s, input, n);
            let mut d = 1;
            while d < BLOCK {
                if t % (2 * d) == 0 {
                    *s.add(t as usize) = (*s.add(t as usize)).wrapping_add(*s.add((t + d) as usize));
                }
                thread::sync_threads();
                d *= 2;
            }
            if t == 0 {
                *partial.add(thread::block_idx_x() as usize) = *s;
            }
        }
    }

    /// Step 2, interleaved addressing with contiguous workers (`index = 2 d t`): no divergence
    /// in the first levels, but lanes `2d` words apart collide in the same banks.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn reduce_interleaved_conflicts(input: *const i32, n: u32, partial: *mut i32) {
        let s = shared::dynamic::<i32>();
        let t = thread::thread_idx_x();
        // SAFETY (whole body): shared indices < BLOCK; one partial per block.
        unsafe {
            load_one(s, input, n);
            let mut d = 1;
            while d < BLOCK {
                let index = 2 * d * t;
                if index < BLOCK {
                    *s.add(index as usize) = (*s.add(index as usize)).wrapping_add(*s.add((index + d) as usize));
                }
                thread::sync_threads();
                d *= 2;
            }
            if t == 0 {
                *partial.add(thread::block_idx_x() as usize) = *s;
            }
        }
    }

    /// Tree with sequential addressing: thread `t` adds `s[t + d]`, `d` halving each level.
    /// Conflict-free, and whole warps retire together.
    ///
    /// # Safety
    /// `s` holds BLOCK i32 loaded by every thread of the block.
    #[inline(always)]
    unsafe fn tree_sequential(s: *mut i32, down_to: u32) {
        let t = thread::thread_idx_x();
        let mut d = BLOCK / 2;
        while d > down_to {
            if t < d {
                // SAFETY: t + d < BLOCK.
                unsafe { *s.add(t as usize) = (*s.add(t as usize)).wrapping_add(*s.add((t + d) as usize)) };
            }
            thread::sync_threads();
            d /= 2;
        }
    }

    /// Step 3, sequential addressing: conflict-free, no divergence until the last warp, but
    /// half the threads are idle from the first level on.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn reduce_sequential(input: *const i32, n: u32, partial: *mut i32) {
        let s = shared::dynamic::<i32>();
        // SAFETY: the launcher sized shared memory (BLOCK i32), the input (n) and the partials
        // (one per block).
        unsafe {
            load_one(s, input, n);
            tree_to_partial::<false>(s, partial);
        }
    }

    /// Each thread adds two elements `BLOCK` apart while loading: half the blocks, no idle
    /// threads at the first level.
    ///
    /// # Safety
    /// `input` holds `n` i32 and the launch has BLOCK i32 of shared memory.
    #[inline(always)]
    unsafe fn load_two(s: *mut i32, input: *const i32, n: u32) {
        let t = thread::thread_idx_x();
        let i = thread::block_idx_x() * 2 * BLOCK + t;
        // SAFETY: both indices checked against n; t < BLOCK.
        unsafe {
            let a = if i < n { *input.add(i as usize) } else { 0 };
            let b = if i + BLOCK < n { *input.add((i + BLOCK) as usize) } else { 0 };
            *s.add(t as usize) = a.wrapping_add(b);
        }
        thread::sync_threads();
    }

    /// The last warp's levels without block barriers: the first warp adds the last 64 values
    /// with register shuffles (the modern form of Harris's volatile warp-synchronous code,
    /// which is unsafe since Volta's independent thread scheduling).
    ///
    /// # Safety
    /// `s` holds 64 or more i32 reduced down to its first 64 by the tree above.
    #[inline(always)]
    unsafe fn last_warp(s: *mut i32) -> i32 {
        let t = thread::thread_idx_x();
        let mut v = 0;
        if t < 32 {
            // SAFETY: t + d < 64.
            unsafe {
                v = (*s.add(t as usize)).wrapping_add(*s.add((t + 32) as usize));
                let mut d = 16;
                while d > 0 {
                    v = v.wrapping_add(warp::shfl_down_i32(v, d));
                    d /= 2;
                }
            }
        }
        v
    }

    /// Finishes a block: the sequential tree over the `BLOCK` shared values, then thread 0
    /// writes the block's partial sum. With `WARP_FINISH` the tree stops at 64 values and the
    /// first warp adds those with shuffles.
    ///
    /// # Safety
    /// `s` holds BLOCK i32 written by every thread before a barrier; `partial` has one i32 per
    /// block.
    #[inline(always)]
    unsafe fn tree_to_partial<const WARP_FINISH: bool>(s: *mut i32, partial: *mut i32) {
        // SAFETY: forwarded from the caller.
        unsafe {
            let v = if WARP_FINISH {
                tree_sequential(s, 32);
                last_warp(s)
            } else {
                tree_sequential(s, 0);
                *s
            };
            if thread::thread_idx_x() == 0 {
                *partial.add(thread::block_idx_x() as usize) = v;
            }
        }
    }

    /// Step 4, first add during load: `reduce_sequential` over `2 * BLOCK` elements a block.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn reduce_first_add(input: *const i32, n: u32, partial: *mut i32) {
        let s = shared::dynamic::<i32>();
        // SAFETY: as in `reduce_sequential`.
        unsafe {
            load_two(s, input, n);
            tree_to_partial::<false>(s, partial);
        }
    }

    /// Step 5, last warp unrolled: the tree stops at 64 values and one warp finishes with
    /// shuffles, saving five block-wide barriers.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn reduce_unroll_last_warp(input: *const i32, n: u32, partial: *mut i32) {
        let s = shared::dynamic::<i32>();
        // SAFETY: as in `reduce_sequential`.
        unsafe {
            load_two(s, input, n);
            tree_to_partial::<true>(s, partial);
        }
    }

    /// Step 6, many elements per thread: a grid sized to the GPU, each thread adds a
    /// grid-stride run of elements (two per trip, `BLOCK` apart) before the tree, so the tree
    /// and barriers are paid once per ~thousand elements instead of once per two.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn reduce_many_per_thread(input: *const i32, n: u32, partial: *mut i32) {
        let s = shared::dynamic::<i32>();
        let t = thread::thread_idx_x();
        let step = 2 * BLOCK * thread::grid_dim_x();
        let mut i = thread::block_idx_x() * 2 * BLOCK + t;
        let mut sum = 0i32;
        // SAFETY (whole body): indices checked against n; shared indices < BLOCK.
        unsafe {
            while i < n {
                sum = sum.wrapping_add(*input.add(i as usize));
                if i + BLOCK < n {
                    sum = sum.wrapping_add(*input.add((i + BLOCK) as usize));
                }
                i += step;
            }
            *s.add(t as usize) = sum;
            thread::sync_threads();
            tree_to_partial::<true>(s, partial);
        }
    }

    /// Warp shuffles and 16-byte loads: each thread keeps `UNROLL` independent 16-byte loads
    /// in flight (`ld.global.nc.v4`, 512 contiguous bytes per warp instruction), warps reduce
    /// in registers with `shfl.down`, 8 warp sums meet in shared memory, one atomic per block.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn reduce_shuffle_vec4(input: *const i32, n: u32, output: *mut i32) {
        let s = shared::dynamic::<i32>();
        let vectors = n / 4;
        let src = input as *const [i32; 4];
        let step = thread::grid_size_1d();
        let mut i = thread::index_1d();
        let mut acc = [0i32; UNROLL as usize];
        // SAFETY (whole body): vector indices < n / 4 and the tail index < n (the launcher
        // checked the length; device allocations are 256-byte aligned); shared indices < 32.
        unsafe {
            while i + (UNROLL - 1) * step < vectors {
                let mut v = [[0i32; 4]; UNROLL as usize];
                let mut k = 0;
                while k < UNROLL {
                    v[k as usize] = mem::load_v4_i32(src.add((i + k * step) as usize));
                    k += 1;
                }
                k = 0;
                while k < UNROLL {
                    let x = v[k as usize];
                    acc[k as usize] =
                        acc[k as usize].wrapping_add(x[0].wrapping_add(x[1]).wrapping_add(x[2].wrapping_add(x[3])));
                    k += 1;
                }
                i += UNROLL * step;
            }
            while i < vectors {
                let x = mem::load_v4_i32(src.add(i as usize));
                acc[0] = acc[0].wrapping_add(x[0].wrapping_add(x[1]).wrapping_add(x[2].wrapping_add(x[3])));
                i += step;
            }
            let mut sum = acc[0].wrapping_add(acc[1]).wrapping_add(acc[2].wrapping_add(acc[3]));
            let t = thread::index_1d();
            if t < n % 4 {
                sum = sum.wrapping_add(*input.add((vectors * 4 + t) as usize));
            }
            sum = warp::reduce_sum_i32(sum);
            let lane = thread::thread_idx_x() % 32;
            let warp_id = thread::thread_idx_x() / 32;
            if lane == 0 {
                *s.add(warp_id as usize) = sum;
            }
            thread::sync_threads();
            if warp_id == 0 {
                let warps = thread::block_dim_x() / 32;
                let v = if lane < warps { *s.add(lane as usize) } else { 0 };
                let v = warp::reduce_sum_i32(v);
                if lane == 0 {
                    atomic::add_i32(output, v);
                }
            }
        }
    }
}
