//! coalesce: CUDA memory-access lessons as Rust kernels, launched safely through `cust`.
//!
//! Each family module (`coalescing`, ...) holds the plans that validate a launch and return a
//! typed [`Call`], the safe launchers built on them, and the CPU references the kernels are
//! checked against. The kernels live in the `coalesce-kernels` crate (`kernels-gpu/`), declared
//! once each with `kernel!`, compiled to PTX (committed in `host/ptx/`) and embedded here as
//! [`PTX`]. The lesson harness (registry, checks, workloads, report) is a separate crate that
//! depends on this one, never the other way round.
//!
//! ```no_run
//! use coalesce::{Gpu, coalescing};
//! # fn main() -> coalesce::Result<()> {
//! let gpu = Gpu::new()?;
//! let input = gpu.upload(&vec![1.5f32; 1 << 20])?;
//! let mut output = gpu.poisoned::<f32>(1 << 20, 0)?;
//! coalescing::copy(&gpu, &input, &mut output)?;
//! assert_eq!(output.to_vec()?[12345], 1.5);
//! # Ok(()) }
//! ```

pub mod access_order;
pub mod bank;
pub mod buffer;
pub mod coalescing;
pub mod distance;
pub mod driver;
pub mod error;
pub mod gpu;
pub mod histogram;
pub mod launch;
pub mod layouts;
pub mod matmul;
pub mod model;
pub mod reduce;
pub mod transpose;
pub mod util;

pub use buffer::{DeviceBuffer, DeviceRead, DeviceView, DeviceViewMut, DeviceWrite};
pub use coalesce_kernels as kernels;
pub use cust::memory::DeviceCopy;
pub use error::{Error, Result};
pub use gpu::{DeviceInfo, Gpu};
pub use launch::{Call, In, Kernel, Launch, MapIn, MapOut, Out};

/// The kernels as PTX for [`PTX_ARCH`]: `host/ptx/coalesce-sm_75.ptx`, built from `kernels-gpu/`
/// on the pinned nightly by `cargo xtask build-ptx --refresh` and committed, so that the library
/// itself builds on stable Rust.
pub const PTX: &str = include_str!("../ptx/coalesce-sm_75.ptx");

/// The Hopper module: every kernel built for sm_90 with PTX ISA 8.3, the kernels declared with
/// `hopper_kernel!` among them (they exist in no other module). [`Gpu`] loads it on first use of
/// one of them, on devices of compute capability 9.0 or newer.
/// Committed beside [`PTX`] as `host/ptx/coalesce-sm_90.ptx`.
pub const PTX_SM90: &str = include_str!("../ptx/coalesce-sm_90.ptx");

/// The architecture [`PTX`] targets; the driver compiles it for the GPU it runs on.
pub const PTX_ARCH: &str = "sm_75";
