//! The device prelude: a small cuda_std-like surface so kernels read like the CUDA C they teach.
//! Every function here is `#[inline(always)]` and compiles to one or two PTX instructions.

use core::arch::asm;
use core::arch::nvptx;

/// Stops the grid with an error (`trap`): the host sees a failed launch.
#[inline(always)]
pub fn trap() -> ! {
    // SAFETY: `trap` has no preconditions; it aborts the kernel.
    unsafe { nvptx::trap() }
}

/// Thread and block coordinates (`threadIdx`, `blockIdx`, `blockDim`, `gridDim`).
pub mod thread {
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
}

/// Dynamic shared memory: the bytes the host asked for at launch (`extern __shared__`).
pub mod shared {
    /// Base of the block's dynamic shared memory, typed as `T`. The launcher sizes it.
    #[inline(always)]
    pub fn dynamic<T>() -> *mut T {
        core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<T>()
    }
}

/// Warp-level primitives.
pub mod warp {
    pub use crate::WARP_SIZE as SIZE;

    /// Every lane of a full warp takes part.
    pub const FULL_MASK: u32 = 0xffff_ffff;

    unsafe extern "C" {
        #[link_name = "llvm.nvvm.shfl.sync.down.i32"]
        fn shfl_sync_down_i32(mask: u32, value: i32, delta: u32, clamp: u32) -> i32;
    }

    /// `__shfl_down_sync(FULL_MASK, value, delta)`: the value of lane `lane + delta`.
    ///
    /// # Safety
    /// All 32 lanes of the warp must execute this call together (converged, none exited):
    /// with the full mask, a shuffle from divergent code is undefined behaviour.
    #[inline(always)]
    pub unsafe fn shfl_down_i32(value: i32, delta: u32) -> i32 {
        // SAFETY: the caller guarantees the whole warp is converged here.
        unsafe { shfl_sync_down_i32(FULL_MASK, value, delta, 0x1f) }
    }

    /// `__shfl_down_sync` for `f32` (the same 32 bits moved).
    ///
    /// # Safety
    /// As [`shfl_down_i32`]: the whole warp calls it together.
    #[inline(always)]
    pub unsafe fn shfl_down_f32(value: f32, delta: u32) -> f32 {
        // SAFETY: forwarded from the caller.
        f32::from_bits(unsafe { shfl_down_i32(value.to_bits() as i32, delta) } as u32)
    }

    /// Sum over the warp; lane 0 holds the total (wrapping for integers).
    ///
    /// # Safety
    /// As [`shfl_down_i32`]: the whole warp calls it together.
    #[inline(always)]
    pub unsafe fn reduce_sum_i32(mut value: i32) -> i32 {
        let mut delta = SIZE / 2;
        while delta > 0 {
            // SAFETY: forwarded from the caller.
            value = value.wrapping_add(unsafe { shfl_down_i32(value, delta) });
            delta /= 2;
        }
        value
    }
}

/// Global-memory loads and stores whose width or cache policy is the point of a lesson,
/// written as inline PTX so the compiler cannot split or merge them.
pub mod mem {
    use super::asm;

    /// `ld.global.cg.f32`: cache in L2 only, so every miss moves 32-byte sectors, not L1 lines.
    ///
    /// # Safety
    /// `ptr` must point to a readable `f32` in global memory.
    #[inline(always)]
    pub unsafe fn load_cg_f32(ptr: *const f32) -> f32 {
        let value: f32;
        // SAFETY: the caller guarantees `ptr` is a valid global address.
        unsafe {
            asm!("ld.global.cg.f32 {v}, [{p}];", v = out(reg32) value, p = in(reg64) ptr,
                 options(pure, readonly, nostack, preserves_flags));
        }
        value
    }

    /// `ld.global.v4.f32`: one 16-byte load per thread (a warp reads 512 contiguous bytes).
    ///
    /// # Safety
    /// `ptr` must be 16-byte aligned and point to 4 readable `f32`s in global memory.
    #[inline(always)]
    pub unsafe fn load_v4_f32(ptr: *const [f32; 4]) -> [f32; 4] {
        let (a, b, c, d): (f32, f32, f32, f32);
        // SAFETY: the caller guarantees alignment and validity.
        unsafe {
            asm!("ld.global.v4.f32 {{{a}, {b}, {c}, {d}}}, [{p}];",
                 a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
                 p = in(reg64) ptr, options(pure, readonly, nostack, preserves_flags));
        }
        [a, b, c, d]
    }

    /// `ld.global.nc.v4.f32`: a 16-byte load through the read-only (non-coherent) path.
    ///
    /// # Safety
    /// As [`load_v4_f32`], and the memory must not be written during the kernel.
    #[inline(always)]
    pub unsafe fn load_v4_f32_nc(ptr: *const [f32; 4]) -> [f32; 4] {
        let (a, b, c, d): (f32, f32, f32, f32);
        // SAFETY: the caller guarantees alignment, validity and that nothing writes it.
        unsafe {
            asm!("ld.global.nc.v4.f32 {{{a}, {b}, {c}, {d}}}, [{p}];",
                 a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
                 p = in(reg64) ptr, options(pure, readonly, nostack, preserves_flags));
        }
        [a, b, c, d]
    }

    /// `st.global.cs.v4.f32`: a 16-byte streaming store (evict-first: the line is not reused).
    ///
    /// # Safety
    /// `ptr` must be 16-byte aligned and point to 4 writable `f32`s in global memory.
    #[inline(always)]
    pub unsafe fn store_v4_f32_cs(ptr: *mut [f32; 4], v: [f32; 4]) {
        // SAFETY: the caller guarantees alignment and validity.
        unsafe {
            asm!("st.global.cs.v4.f32 [{p}], {{{a}, {b}, {c}, {d}}};",
                 p = in(reg64) ptr, a = in(reg32) v[0], b = in(reg32) v[1],
                 c = in(reg32) v[2], d = in(reg32) v[3], options(nostack, preserves_flags));
        }
    }

    /// `ld.global.nc.v4.s32`: a 16-byte read-only load of four `i32`s.
    ///
    /// # Safety
    /// `ptr` must be 16-byte aligned, point to 4 readable `i32`s in global memory, and that
    /// memory must not be written during the kernel.
    #[inline(always)]
    pub unsafe fn load_v4_i32(ptr: *const [i32; 4]) -> [i32; 4] {
        let (a, b, c, d): (i32, i32, i32, i32);
        // SAFETY: the caller guarantees alignment, validity and that nothing writes it.
        unsafe {
            asm!("ld.global.nc.v4.s32 {{{a}, {b}, {c}, {d}}}, [{p}];",
                 a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
                 p = in(reg64) ptr, options(pure, readonly, nostack, preserves_flags));
        }
        [a, b, c, d]
    }

    /// `st.global.v4.f32`: one 16-byte store per thread.
    ///
    /// # Safety
    /// `ptr` must be 16-byte aligned and point to 4 writable `f32`s in global memory.
    #[inline(always)]
    pub unsafe fn store_v4_f32(ptr: *mut [f32; 4], v: [f32; 4]) {
        // SAFETY: the caller guarantees alignment and validity.
        unsafe {
            asm!("st.global.v4.f32 [{p}], {{{a}, {b}, {c}, {d}}};",
                 p = in(reg64) ptr, a = in(reg32) v[0], b = in(reg32) v[1],
                 c = in(reg32) v[2], d = in(reg32) v[3], options(nostack, preserves_flags));
        }
    }
}

/// Atomics on global memory (core's atomics lower to `atom.global.*`).
pub mod atomic {
    use core::sync::atomic::{AtomicI32, Ordering};

    /// `atomicAdd(ptr, value)` on an `i32` (wrapping), relaxed like CUDA's.
    ///
    /// # Safety
    /// `ptr` must point to a 4-byte aligned `i32` in global memory.
    #[inline(always)]
    pub unsafe fn add_i32(ptr: *mut i32, value: i32) -> i32 {
        // SAFETY: the caller guarantees `ptr` is valid and aligned; all access to it is atomic.
        unsafe { AtomicI32::from_ptr(ptr) }.fetch_add(value, Ordering::Relaxed)
    }
}

/// Arithmetic that must map to one instruction.
pub mod math {
    /// `fma.rn.f32`: `a * b + c` with one rounding (Rust never contracts `a * b + c` itself).
    #[inline(always)]
    pub fn fma(a: f32, b: f32, c: f32) -> f32 {
        // SAFETY: a pure floating-point operation with no preconditions.
        unsafe { core::intrinsics::fmaf32(a, b, c) }
    }
}
