//! Global-memory coalescing: how the addresses of one warp's 32 threads map onto 32-byte sectors.
//!
//! The progression: an offset copy (alignment), a strided copy (spread), the offset copy again with
//! L2-only loads (sector granularity), and a grid-stride 16-byte copy that aims at the device memcpy.

/// Threads per block for every copy here: 8 warps, a multiple of the warp so each warp starts on
/// its own 128-byte boundary when the offset is 0.
pub const BLOCK: u32 = 256;
/// Largest offset of the offset-copy sweep (32 floats = 128 bytes: aligned again).
pub const MAX_OFFSET: u32 = 32;
/// Largest stride of the stride-copy sweep (from 8 floats on, every thread needs its own sector).
pub const MAX_STRIDE: u32 = 32;
/// 16-byte vectors each thread of the vectorised copy moves per loop trip, all loads first.
pub const UNROLL: u32 = 4;
/// Resident 256-thread blocks per multiprocessor the grid-stride launch aims for (2048 threads).
pub const BLOCKS_PER_SM: u32 = 8;

/// Element that thread `i` of an offset copy reads and writes.
#[inline(always)]
pub const fn offset_index(i: u32, offset: u32) -> u32 {
    i + offset
}

/// Elements each buffer of an offset copy of `n` elements must hold.
pub const fn offset_len(n: usize, offset: usize) -> usize {
    n + offset
}

/// Element that thread `i` of a stride copy reads and writes (64-bit: `i * stride` passes 2^32).
#[inline(always)]
pub const fn stride_index(i: u32, stride: u32) -> u64 {
    i as u64 * stride as u64
}

/// Elements each buffer of a stride copy of `n` elements must hold.
pub const fn stride_len(n: usize, stride: usize) -> usize {
    if n == 0 { 0 } else { (n - 1) * stride + 1 }
}

/// Blocks of a grid-stride launch over `items` work items: enough to fill every multiprocessor
/// (`sms * blocks_per_sm`), never more than the work needs, at least one.
pub const fn grid_stride_blocks(items: u64, block: u32, sms: u32, blocks_per_sm: u32) -> u32 {
    let needed = items.div_ceil(block as u64);
    let full = sms as u64 * blocks_per_sm as u64;
    let blocks = if needed < full { needed } else { full };
    if blocks == 0 { 1 } else { blocks as u32 }
}

/// Blocks for one unrolled trip per thread over `vectors` 16-byte vectors (one chunk of
/// `UNROLL * BLOCK` vectors per block): the whole copy in one pass, no grid-stride loop.
pub const fn one_trip_blocks(vectors: u32) -> u32 {
    let blocks = vectors.div_ceil(BLOCK * UNROLL);
    if blocks == 0 { 1 } else { blocks }
}

/// How the vectorised copy splits `n` floats: `(vectors, tail)`, with `4 * vectors + tail == n`.
pub const fn vec4_split(n: u32) -> (u32, u32) {
    (n / 4, n % 4)
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;
    use crate::prelude::{mem, thread};

    /// Offset copy: `out[i + offset] = in[i + offset]` for `i < n`, 4 bytes per thread.
    /// A warp touches 128 contiguous bytes: 4 sectors when `offset % 8 == 0`, else 5.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn coalescing_offset(input: *const f32, output: *mut f32, n: u32, offset: u32) {
        let i = thread::index_1d();
        if i < n {
            let j = offset_index(i, offset) as usize;
            // SAFETY: the launcher checked both buffers hold `offset_len(n, offset)` elements.
            unsafe { *output.add(j) = *input.add(j) };
        }
    }

    /// Stride copy: `out[i * stride] = in[i * stride]`. Changes the spacing instead of the start:
    /// a warp spans `128 * stride` bytes, so from stride 8 on it needs 32 sectors for 128 useful bytes.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn coalescing_stride(input: *const f32, output: *mut f32, n: u32, stride: u32) {
        let i = thread::index_1d();
        if i < n {
            let j = stride_index(i, stride) as usize;
            // SAFETY: the launcher checked both buffers hold `stride_len(n, stride)` elements.
            unsafe { *output.add(j) = *input.add(j) };
        }
    }

    /// Offset copy with `ld.global.cg` (L2 only). Changes the cache path of the load: a misaligned
    /// warp then fetches 5 sectors instead of two 128-byte L1 lines (8 sectors).
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn coalescing_offset_cg(input: *const f32, output: *mut f32, n: u32, offset: u32) {
        let i = thread::index_1d();
        if i < n {
            let j = offset_index(i, offset) as usize;
            // SAFETY: the launcher checked both buffers hold `offset_len(n, offset)` elements.
            unsafe { *output.add(j) = mem::load_cg_f32(input.add(j)) };
        }
    }

    /// Grid-stride copy with 16-byte loads and stores, `UNROLL` vectors in flight per thread.
    /// Each warp instruction moves 512 contiguous bytes (16 full sectors); enough blocks keep
    /// the loads outstanding that saturate DRAM.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn coalescing_vec4(input: *const f32, output: *mut f32, n: u32) {
        // SAFETY: forwarded launcher guarantees (see `vec4_copy`).
        unsafe { vec4_copy::<false>(input, output, n) }
    }

    /// `coalescing_vec4` with read-only-path loads (`ld.global.nc`) and streaming stores
    /// (`st.global.cs`): same traffic, less cache pollution from lines that are never reused.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn coalescing_vec4_stream(input: *const f32, output: *mut f32, n: u32) {
        // SAFETY: forwarded launcher guarantees (see `vec4_copy`), and `input` is not written.
        unsafe { vec4_copy::<true>(input, output, n) }
    }

    /// # Safety
    /// Both buffers hold `n` floats and are 16-byte aligned (device allocations are 256-byte
    /// aligned); the launcher checks the lengths. Every index below is < `vectors` or `n`.
    #[inline(always)]
    unsafe fn vec4_copy<const STREAMING: bool>(input: *const f32, output: *mut f32, n: u32) {
        let (vectors, tail) = vec4_split(n);
        let src = input as *const [f32; 4];
        let dst = output as *mut [f32; 4];
        // SAFETY (both closures): callers pass i < vectors; see the function's contract.
        let load = |i: u32| unsafe {
            if STREAMING { mem::load_v4_f32_nc(src.add(i as usize)) } else { mem::load_v4_f32(src.add(i as usize)) }
        };
        let store = |i: u32, v| unsafe {
            if STREAMING {
                mem::store_v4_f32_cs(dst.add(i as usize), v)
            } else {
                mem::store_v4_f32(dst.add(i as usize), v)
            }
        };
        // Each block copies contiguous chunks of UNROLL * BLOCK vectors (16 KiB), grid-striding
        // over chunks: every warp instruction moves 512 contiguous bytes and each block streams
        // through one DRAM region at a time.
        let (t, block) = (thread::thread_idx_x(), thread::block_dim_x());
        let chunk = UNROLL * block;
        let mut base = thread::block_idx_x() * chunk;
        let step = thread::grid_dim_x() * chunk;
        while base + chunk <= vectors {
            let mut v = [[0.0f32; 4]; UNROLL as usize];
            let mut k = 0;
            while k < UNROLL {
                v[k as usize] = load(base + k * block + t);
                k += 1;
            }
            k = 0;
            while k < UNROLL {
                store(base + k * block + t, v[k as usize]);
                k += 1;
            }
            base += step;
        }
        // The last, partial chunk (at most one block reaches it).
        if base < vectors {
            let mut k = 0;
            while k < UNROLL {
                let i = base + k * block + t;
                if i < vectors {
                    store(i, load(i));
                }
                k += 1;
            }
        }
        let g = thread::index_1d();
        if g < tail {
            let j = (vectors * 4 + g) as usize;
            // SAFETY: j < n.
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
    fn grid_stride_blocks_fill_but_never_exceed_the_work() {
        assert_eq!(grid_stride_blocks(0, 256, 132, 8), 1);
        assert_eq!(grid_stride_blocks(1, 256, 132, 8), 1);
        assert_eq!(grid_stride_blocks(257, 256, 132, 8), 2);
        assert_eq!(grid_stride_blocks(1 << 30, 256, 132, 8), 1056);
    }

    #[test]
    fn vec4_split_covers_every_element() {
        for n in [0u32, 1, 3, 4, 5, 31, 33, 1_000_003] {
            let (v, t) = vec4_split(n);
            assert_eq!(4 * v + t, n);
            assert!(t < 4);
        }
    }
}
