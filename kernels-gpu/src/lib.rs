//! coalesce's device code: CUDA memory-access lessons as Rust kernels.
//!
//! Built for `nvptx64-nvidia-cuda` (see `builder/`) this crate becomes one PTX module whose entry
//! points are the `extern "gpu-kernel"` functions of each family module. Built for the host it
//! exposes only what both sides must agree on: launch constants and the index math that says
//! which element each thread touches. The host library uses those to size launches and CI
//! unit-tests them without a GPU.
#![cfg_attr(not(test), no_std)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        abi_gpu_kernel,
        stdarch_nvptx,
        asm_experimental_arch,
        link_llvm_intrinsics,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem,
        core_intrinsics
    )
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

#[cfg(target_arch = "nvptx64")]
pub mod prelude;

pub mod access_order;
pub mod bank;
pub mod coalescing;
pub mod distance;
pub mod layouts;
pub mod matmul;
pub mod reduce;
pub mod transpose;
pub mod util;

/// Threads per warp on every NVIDIA GPU so far.
pub const WARP_SIZE: u32 = 32;

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // A panic in a kernel is a bug (an index check the host should have prevented):
    // stop the grid so the launch reports an error instead of writing garbage.
    prelude::trap()
}
