//! The device prelude: a small cuda_std-like surface so kernels read like the CUDA C they teach.
//! Every function here is `#[inline(always)]` and compiles to one or two PTX instructions.
//!
//! One module per concept, each named for what a CUDA C programmer would reach for:
//!
//! | module | CUDA C |
//! | --- | --- |
//! | [`thread`] | `threadIdx`, `blockIdx`, `blockDim`, `gridDim`, `__syncthreads()` |
//! | [`shared`] | `extern __shared__`, `__cvta_generic_to_shared`, `atomicAdd` on shared memory |
//! | [`warp`] | `__shfl_down_sync` and warp reductions |
//! | [`mem`] | vector loads and stores (`float4`), cache hints (`__ldcg`, `__ldg`, `__stcs`) |
//! | [`atomic`] | `atomicAdd`, `__threadfence()`, release / acquire flags |
//! | [`math`] | `fmaf` |
//! | [`order`] | nothing: compiler ordering hints that emit no instruction |
//! | `async_copy` (sm_80) | `cp.async` (`cuda::memcpy_async`, `__pipeline_*`) |
//! | `mbarrier` (sm_90) | `cuda::barrier` with transaction counts |
//! | `bulk` (sm_90) | TMA bulk and tensor copies (`cp.async.bulk`, `cp.async.bulk.tensor`) |
//! | `cluster` (sm_90) | thread-block clusters and distributed shared memory |
//!
//! The unroll macros `unroll_tile!` (32 steps), `unroll_16!`, `unroll_8!`, `unroll_4!` and
//! `unroll_2!` stand in for `#pragma unroll`.

use core::arch::nvptx;

#[macro_use]
mod unroll;

pub mod atomic;
pub mod math;
pub mod mem;
pub mod order;
pub mod shared;
pub mod thread;
pub mod warp;

#[cfg(target_feature = "sm_80")]
pub mod async_copy;

#[cfg(all(target_feature = "sm_90", target_feature = "ptx83"))]
pub mod bulk;
#[cfg(all(target_feature = "sm_90", target_feature = "ptx83"))]
pub mod cluster;
#[cfg(all(target_feature = "sm_90", target_feature = "ptx83"))]
pub mod mbarrier;

/// Stops the grid with an error (`trap`): the host sees a failed launch.
#[inline(always)]
pub fn trap() -> ! {
    // SAFETY: `trap` has no preconditions; it aborts the kernel.
    unsafe { nvptx::trap() }
}
