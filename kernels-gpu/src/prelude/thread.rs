//! Thread and block coordinates (`threadIdx`, `blockIdx`, `blockDim`, `gridDim`).

use core::arch::nvptx;

macro_rules! special_register {
    ($($name:ident => $intrinsic:ident),* $(,)?) => {$(
        #[inline(always)]
        pub fn $name() -> u32 {
            // SAFETY: reading a special register has no preconditions.
            unsafe { nvptx::$intrinsic() as u32 }
        }
    )*};
}
special_register! {
    thread_idx_x => _thread_idx_x, thread_idx_y => _thread_idx_y,
    block_idx_x => _block_idx_x, block_idx_y => _block_idx_y,
    block_dim_x => _block_dim_x, block_dim_y => _block_dim_y,
    grid_dim_x => _grid_dim_x, grid_dim_y => _grid_dim_y,
}

/// `blockIdx.x * blockDim.x + threadIdx.x`: the global index of a 1-D launch.
#[inline(always)]
pub fn index_1d() -> u32 {
    block_idx_x() * block_dim_x() + thread_idx_x()
}

/// Threads in the whole 1-D grid: the step of a grid-stride loop.
#[inline(always)]
pub fn grid_size_1d() -> u32 {
    block_dim_x() * grid_dim_x()
}

/// Linear id of the block in its (2-D) grid: `blockIdx.y * gridDim.x + blockIdx.x`.
#[inline(always)]
pub fn block_linear() -> u32 {
    block_idx_y() * grid_dim_x() + block_idx_x()
}

/// Linear id of the thread inside its (2-D) block: x runs fastest, as warps are formed.
#[inline(always)]
pub fn linear_in_block() -> u32 {
    thread_idx_y() * block_dim_x() + thread_idx_x()
}

/// `__syncthreads()`: a block-wide barrier that also orders shared-memory accesses.
#[inline(always)]
pub fn sync_threads() {
    // SAFETY: every caller reaches the barrier from uniform control flow (kernels keep
    // their barriers outside divergent branches).
    unsafe { nvptx::_syncthreads() }
}
