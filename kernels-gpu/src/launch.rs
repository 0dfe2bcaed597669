//! Launch geometry both sides agree on: the driver's grid limits, the one 32-bit limit of the
//! lesson kernels, and the grid helpers every family sizes its launches with.

/// Largest `gridDim.x` (2^31 - 1).
pub const MAX_GRID_X: u32 = i32::MAX as u32;
/// Largest `gridDim.y` and `gridDim.z`.
pub const MAX_GRID_Y: u32 = 65_535;
/// Most threads in one block.
pub const MAX_BLOCK_THREADS: u32 = 1024;
/// Dynamic shared memory a block gets without opting in (`cuFuncSetAttribute`).
pub const DEFAULT_SHARED_BYTES: u32 = 48 * 1024;
/// Most dynamic shared memory a block may opt in to on sm_90 (227 KiB); older devices refuse
/// the launch if it is past theirs.
pub const MAX_SHARED_BYTES: u32 = 227 * 1024;
/// Most blocks in a thread-block cluster without the non-portable opt-in.
pub const MAX_CLUSTER_BLOCKS: u32 = 8;

/// Largest element count a lesson kernel with 32-bit indices takes. Its indices are `u32` and a
/// grid-stride step may be added before the bound check, so counts stay below 2^31. This is the
/// only place that limit is written; the entry points meant for real use (`copy`, `sum`,
/// `transpose`, `matmul`) index in 64 bits and have no such limit.
pub const MAX_ELEMENTS_32: u64 = (1 << 31) - 1;

/// Whether `n` elements fit a kernel with 32-bit indices.
pub const fn fits_32(n: u64) -> bool {
    n <= MAX_ELEMENTS_32
}

/// Blocks of a grid-stride launch over `items` work items: enough to fill every multiprocessor
/// (`sms * blocks_per_sm`), never more than the work needs, at least one. A `block` of 0 threads
/// (no launch has one) is taken as 1 instead of dividing by zero.
pub const fn grid_stride_blocks(items: u64, block: u32, sms: u32, blocks_per_sm: u32) -> u32 {
    let block = if block == 0 { 1 } else { block };
    let needed = items.div_ceil(block as u64);
    let full = sms as u64 * blocks_per_sm as u64;
    let blocks = if needed < full { needed } else { full };
    if blocks == 0 {
        1
    } else if blocks > MAX_GRID_X as u64 {
        MAX_GRID_X
    } else {
        blocks as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_stride_blocks_fill_but_never_exceed_the_work() {
        assert_eq!(grid_stride_blocks(0, 256, 132, 8), 1);
        assert_eq!(grid_stride_blocks(1, 256, 132, 8), 1);
        assert_eq!(grid_stride_blocks(257, 256, 132, 8), 2);
        assert_eq!(grid_stride_blocks(1 << 30, 256, 132, 8), 1056);
        assert_eq!(grid_stride_blocks(u64::MAX, 1, u32::MAX, u32::MAX), MAX_GRID_X);
        // A block of no threads is one thread (it divided by zero).
        assert_eq!(grid_stride_blocks(300, 0, 132, 8), grid_stride_blocks(300, 1, 132, 8));
        assert_eq!(grid_stride_blocks(300, 0, 132, 8), 300);
        assert!(fits_32(MAX_ELEMENTS_32) && !fits_32(MAX_ELEMENTS_32 + 1));
    }
}
