//! Global-memory coalescing: how the addresses of one warp's 32 threads map onto 32-byte sectors.
//!
//! The progression: an offset copy (alignment), a strided copy (spread), the offset copy again with
//! L2-only loads (sector granularity), and a 16-byte copy that aims at the device memcpy.

use crate::kernel;
#[cfg(target_arch = "nvptx64")]
use crate::prelude::{mem, thread};

/// Threads per block for every copy here: 8 warps, a multiple of the warp so each warp starts on
/// its own 128-byte boundary when the offset is 0.
pub const BLOCK: u32 = 256;
/// Largest offset of the offset-copy sweep (32 floats = 128 bytes: aligned again).
pub const MAX_OFFSET: u32 = 32;
/// Largest stride of the stride-copy sweep (from 8 floats on, every thread needs its own sector).
pub const MAX_STRIDE: u32 = 32;
/// 16-byte vectors each thread of the vectorised copy moves per loop trip, all loads first.
/// Two, not four: on the H100 one trip per thread reached 99.6% of the memcpy with 2 vectors in
/// flight and 98.8% with 4 (a CUDA C sweep of 2/4/8/16 vectors × 128..1024 threads; BENCHMARKS.md).
pub const UNROLL: u32 = 2;
/// Vectors one block of the vectorised copy moves per trip: a contiguous 8 KiB chunk.
pub const CHUNK: u32 = UNROLL * BLOCK;
/// Resident 256-thread blocks per multiprocessor a persistent launch aims for (2048 threads).
pub const BLOCKS_PER_SM: u32 = 8;

const _: () = assert!(BLOCK.is_multiple_of(crate::WARP_SIZE), "warps must not straddle blocks");
const _: () = assert!(CHUNK == 512, "the vec4 copy moves 8 KiB chunks");

/// Element that thread `i` of an offset copy reads and writes.
#[inline(always)]
pub const fn offset_index(i: u32, offset: u32) -> u32 {
    i + offset
}

/// Elements each buffer of an offset copy of `n` elements must hold.
pub const fn offset_len(n: u64, offset: u32) -> u64 {
    n + offset as u64
}

/// Element that thread `i` of a stride copy reads and writes (64-bit: `i * stride` passes 2^32).
#[inline(always)]
pub const fn stride_index(i: u32, stride: u32) -> u64 {
    i as u64 * stride as u64
}

/// Elements each buffer of a stride copy of `n` elements must hold.
pub const fn stride_len(n: u64, stride: u32) -> u64 {
    if n == 0 { 0 } else { (n - 1) * stride as u64 + 1 }
}

/// How the vectorised copy splits `n` floats: `(vectors, tail)`, with `4 * vectors + tail == n`.
pub const fn vec4_split(n: u64) -> (u64, u32) {
    (n / 4, (n % 4) as u32)
}

/// Vector that thread `t` moves at unrolled step `k` of chunk `chunk` (chunk `c` is vectors
/// `c * CHUNK ..`): a warp's 32 lanes take 32 consecutive vectors, 512 contiguous bytes.
#[inline(always)]
pub const fn vec4_index(chunk: u64, k: u32, t: u32) -> u64 {
    chunk * CHUNK as u64 + (k * BLOCK + t) as u64
}

/// Float that thread `t` of block `b` copies past the last whole vector (the `n % 4` tail).
#[inline(always)]
pub const fn vec4_tail_index(vectors: u64, b: u32, t: u32) -> (u64, u32) {
    (vectors * 4, b * BLOCK + t)
}

/// Blocks for one unrolled trip per thread over `vectors` 16-byte vectors (one chunk per block):
/// the whole copy in one pass, no grid-stride loop.
pub const fn one_trip_blocks(vectors: u64) -> u64 {
    let blocks = vectors.div_ceil(CHUNK as u64);
    if blocks == 0 { 1 } else { blocks }
}

kernel! {
    /// Offset copy: `out[i + offset] = in[i + offset]` for `i < n`, 4 bytes per thread.
    /// A warp touches 128 contiguous bytes: 4 sectors when `offset % 8 == 0`, else 5.
    pub unsafe fn coalescing_offset(input: *const f32, output: *mut f32, n: u32, offset: u32) {
        let i = thread::index_1d();
        if i < n {
            let j = offset_index(i, offset) as usize;
            // SAFETY: the plan checked both buffers hold `offset_len(n, offset)` elements.
            unsafe { *output.add(j) = *input.add(j) };
        }
    }
}

kernel! {
    /// Stride copy: `out[i * stride] = in[i * stride]`. Changes the spacing instead of the start:
    /// a warp spans `128 * stride` bytes, so from stride 8 on it needs 32 sectors for 128 useful bytes.
    pub unsafe fn coalescing_stride(input: *const f32, output: *mut f32, n: u32, stride: u32) {
        let i = thread::index_1d();
        if i < n {
            let j = stride_index(i, stride) as usize;
            // SAFETY: the plan checked both buffers hold `stride_len(n, stride)` elements.
            unsafe { *output.add(j) = *input.add(j) };
        }
    }
}

kernel! {
    /// Offset copy with `ld.global.cg` (L2 only). Changes the cache path of the load: a misaligned
    /// warp then fetches 5 sectors instead of two 128-byte L1 lines (8 sectors).
    pub unsafe fn coalescing_offset_cg(input: *const f32, output: *mut f32, n: u32, offset: u32) {
        let i = thread::index_1d();
        if i < n {
            let j = offset_index(i, offset) as usize;
            // SAFETY: the plan checked both buffers hold `offset_len(n, offset)` elements.
            unsafe { *output.add(j) = mem::load_cg_f32(input.add(j)) };
        }
    }
}

kernel! {
    /// 16-byte copy, `UNROLL` vectors in flight per thread, each block streaming contiguous 8 KiB
    /// chunks (grid-striding over chunks when the grid is smaller than the copy). Every warp
    /// instruction moves 512 contiguous bytes: 16 full sectors. 64-bit indices: any size.
    pub unsafe fn coalescing_vec4(input: *const f32, output: *mut f32, n: u64) {
        // SAFETY: forwarded plan guarantees (see `vec4_copy`).
        unsafe { device::vec4_copy::<false>(input, output, n) }
    }
}

kernel! {
    /// `coalescing_vec4` with read-only-path loads (`ld.global.nc`) and streaming stores
    /// (`st.global.cs`): the same sectors, less cache pollution from lines that are never reused.
    pub unsafe fn coalescing_vec4_stream(input: *const f32, output: *mut f32, n: u64) {
        // SAFETY: forwarded plan guarantees (see `vec4_copy`), and `input` is not written.
        unsafe { device::vec4_copy::<true>(input, output, n) }
    }
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;

    /// # Safety
    /// Both buffers hold `n` floats and start on 16-byte boundaries; the launch has `BLOCK`
    /// threads a block (the plan checks all three). Every index below is < `vectors` or `n`.
    #[inline(always)]
    pub(super) unsafe fn vec4_copy<const STREAMING: bool>(input: *const f32, output: *mut f32, n: u64) {
        let (vectors, tail) = vec4_split(n);
        let src = input as *const [f32; 4];
        let dst = output as *mut [f32; 4];
        // SAFETY (both closures): callers pass i < vectors; see the function's contract.
        let load = |i: u64| unsafe {
            if STREAMING { mem::load_v4_f32_nc(src.add(i as usize)) } else { mem::load_v4_f32(src.add(i as usize)) }
        };
        let store = |i: u64, v| unsafe {
            if STREAMING {
                mem::store_v4_f32_cs(dst.add(i as usize), v)
            } else {
                mem::store_v4_f32(dst.add(i as usize), v)
            }
        };
        let t = thread::thread_idx_x();
        let mut chunk = thread::block_idx_x() as u64;
        let step = thread::grid_dim_x() as u64;
        while (chunk + 1) * CHUNK as u64 <= vectors {
            let mut v = [[0.0f32; 4]; UNROLL as usize];
            let mut k = 0;
            while k < UNROLL {
                v[k as usize] = load(vec4_index(chunk, k, t));
                k += 1;
            }
            k = 0;
            while k < UNROLL {
                store(vec4_index(chunk, k, t), v[k as usize]);
                k += 1;
            }
            chunk += step;
        }
        // The last, partial chunk (exactly one block reaches it).
        if chunk * (CHUNK as u64) < vectors {
            let mut k = 0;
            while k < UNROLL {
                let i = vec4_index(chunk, k, t);
                if i < vectors {
                    store(i, load(i));
                }
                k += 1;
            }
        }
        let (first, g) = vec4_tail_index(vectors, thread::block_idx_x(), t);
        if g < tail {
            let j = (first + g as u64) as usize;
            // SAFETY: j < 4 * vectors + tail == n.
            unsafe { *output.add(j) = *input.add(j) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_index_shifts_every_thread() {
        assert_eq!(offset_index(0, 0), 0);
        assert_eq!(offset_index(31, 1), 32);
        assert_eq!(offset_len(1000, 32), 1032);
    }

    #[test]
    fn stride_index_is_64_bit() {
        assert_eq!(stride_index(3, 32), 96);
        assert_eq!(stride_index(u32::MAX, 32), u32::MAX as u64 * 32);
        assert_eq!(stride_len(0, 7), 0);
        assert_eq!(stride_len(1, 32), 1);
        assert_eq!(stride_len(33, 2), 65);
    }

    #[test]
    fn vec4_split_covers_every_element() {
        for n in [0u64, 1, 3, 4, 5, 31, 33, 1_000_003, (1 << 31) + 5] {
            let (v, t) = vec4_split(n);
            assert_eq!(4 * v + t as u64, n);
            assert!(t < 4);
        }
    }

    #[test]
    fn one_trip_covers_every_vector_once() {
        for vectors in [1u64, 1023, 1024, 1025, 5000] {
            let mut hits = vec![0u8; vectors as usize];
            for chunk in 0..one_trip_blocks(vectors) {
                for k in 0..UNROLL {
                    for t in 0..BLOCK {
                        let i = vec4_index(chunk, k, t);
                        if i < vectors {
                            hits[i as usize] += 1;
                        }
                    }
                }
            }
            assert!(hits.iter().all(|&h| h == 1), "{vectors} vectors");
        }
    }
}
