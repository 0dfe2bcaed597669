//! coalesce: CUDA memory-access lessons as Rust kernels, launched safely through `cust`.
//!
//! Each family module (`coalescing`, ...) holds safe launchers that validate their input and
//! return [`Result`], the CPU references they are checked against, and their registry entries.
//! The kernels themselves live in the `coalesce-kernels` crate (`kernels-gpu/`), compiled to
//! PTX at build time and embedded here as [`PTX`].
//!
//! ```no_run
//! use coalesce::{Gpu, coalescing};
//! # fn main() -> coalesce::Result<()> {
//! let gpu = Gpu::new()?;
//! let input = gpu.upload(&vec![1.5f32; 1 << 20])?;
//! let mut output = gpu.poisoned::<f32>(1 << 20, 0)?;
//! coalescing::copy(&gpu, &input, &mut output)?;
//! assert_eq!(output.as_host_vec()?[12345], 1.5);
//! # Ok(()) }
//! ```

pub mod access_order;
pub mod bank;
pub mod check;
pub mod coalescing;
pub mod distance;
pub mod error;
pub mod gpu;
pub mod layouts;
pub mod matmul;
pub mod reduce;
pub mod registry;
pub mod transpose;
pub mod util;

pub use cust::memory::{DeviceBuffer, DeviceSlice};
pub use error::{Error, Result};
pub use gpu::{Gpu, Launch};

/// The kernels as PTX, built from `kernels-gpu/` by `build.rs` for [`PTX_ARCH`].
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// The architecture the embedded PTX targets (`COALESCE_PTX_ARCH` at build time, default sm_75);
/// the driver compiles it for the GPU it runs on.
pub const PTX_ARCH: &str = env!("COALESCE_PTX_ARCH");
