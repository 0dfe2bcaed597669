//! coalesce's device code: CUDA memory-access lessons as Rust kernels.
//!
//! Built for `nvptx64-nvidia-cuda` (see `builder/`) this crate becomes one PTX module whose entry
//! points are declared, one family module at a time, with [`kernel!`]. Built for the host it
//! exposes what both sides must agree on: each kernel's typed handle (its PTX name and parameter
//! list), the shared types, launch constants, and the index math that says which element each
//! thread touches. The host library launches through those handles and sizes launches with those
//! constants, and CI unit-tests the index math without a GPU.
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
#[macro_use]
pub mod prelude;

pub mod kernel;
pub mod launch;

pub mod access_order;
pub mod bank;
pub mod coalescing;
pub mod distance;
pub mod histogram;
pub mod layouts;
pub mod matmul;
pub mod probe;
pub mod reduce;
pub mod transpose;
pub mod types;
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
