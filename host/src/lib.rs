//! coalesce: fast, safe CUDA memory operations from Rust — and the lessons of memory access,
//! each as a Rust kernel, launched through `cust`.
//!
//! # The library
//!
//! A [`Gpu`] handle, device memory as [`DeviceBuffer`]s and the views borrowed from them, typed
//! [`Error`]s, and the entry points, each for any size and any sub-slice:
//!
//! | call | what it does |
//! |---|---|
//! | [`coalescing::copy`] | `output = input`, any element type at any offset, 16-byte vectors (~99% of memcpy) |
//! | [`transpose::transpose`] | `output = inputᵀ` of a `rows × cols` matrix of 1-, 2-, 4- or 8-byte elements through shared tiles |
//! | [`reduce::sum`], [`reduce::sum_to`] | the sum of `i32`, `u32`, `i64`, `u64` (wrapping) or `f32`, `f64` (fixed order), returned or left on the device |
//! | [`matmul::matmul`] | `c = a · b` in `f32`, warp-tiled, stream-K where it pays |
//! | [`Gpu::enable_peer_access`], [`Gpu::memcpy_peer`] | a second GPU's memory, mapped or copied |
//!
//! ```no_run
//! use coalesce::{Gpu, coalescing, matmul, reduce, transpose};
//! # fn main() -> coalesce::Result<()> {
//! let gpu = Gpu::new()?;
//! let input = gpu.upload(&vec![1.5f32; 1 << 20])?;
//! let mut output = gpu.poisoned::<f32>(1 << 20, 0)?;
//! coalescing::copy(&gpu, &input, &mut output)?;
//! assert_eq!(output.to_vec()?[12345], 1.5);
//! transpose::transpose(&gpu, &input, &mut output, 1024, 1024)?;
//! let ints = gpu.upload(&[1i32, 2, 3])?;
//! assert_eq!(reduce::sum(&gpu, &ints)?, 6);
//! let (a, b) = (gpu.upload(&vec![1.0f32; 64 * 32])?, gpu.upload(&vec![2.0f32; 32 * 16])?);
//! let mut c = gpu.poisoned::<f32>(64 * 16, 0)?;
//! matmul::matmul(&gpu, &a, &b, &mut c, (64, 16, 32))?;
//! assert_eq!(c.to_vec()?[0], 64.0);
//! # Ok(()) }
//! ```
//!
//! # The lessons
//!
//! Each family module ([`coalescing`], [`transpose`], [`reduce`], ...) holds the plans that
//! validate a launch and return a typed [`launch::Call`], the safe launchers built on them, and the CPU
//! references the kernels are checked against; it re-exports by name the few kernel-crate types
//! and limits its own signatures use (a [`layouts::Float3`], a [`coalescing::MAX_OFFSET`]). The
//! kernels live in the `coalesce-kernels` crate (`kernels-gpu/`), declared once each with
//! `kernel!`, compiled to PTX (committed in `host/ptx/`) and embedded here as [`PTX`]; a program
//! that wants the index math, the launch constants or the typed kernel handles depends on that
//! crate itself (`coalesce_kernels::coalescing::offset_index`). This crate names only what its own
//! signatures use.
//! [`model`] replays a planned launch on the CPU and counts what Nsight Compute would, and follows
//! it through L2 to DRAM. The lesson harness (registry, checks, workloads, report) is a separate
//! crate that depends on this one, never the other way round.
//!
//! # Device memory
//!
//! [`Gpu::upload`] and [`Gpu::poisoned`] return a [`DeviceBuffer`], freed when dropped;
//! [`DeviceRead::slice`] and [`DeviceWrite::slice_mut`] lend a [`DeviceView`] (shared, `Copy`) or
//! a [`DeviceViewMut`] (exclusive) of a sub-range. A view borrows its buffer, so the borrow
//! checker refuses a view that outlives its buffer, an output that overlaps an input, and two
//! overlapping exclusive views; no safe function makes a view from an address, and every plan
//! takes memory through the sealed [`DeviceRead`] and [`DeviceWrite`] traits, so only memory
//! allocated here reaches a launch. (`host/src/buffer.rs` keeps each refused program as a
//! `compile_fail` test.) A buffer keeps its device's context alive and may be used and dropped on
//! any thread, after the [`Gpu`] that allocated it is gone.
//!
//! # How a launch is typed
//!
//! A kernel is declared once in `kernels-gpu` with `kernel!`, which gives the host a
//! [`Kernel<fn(P1, .., Pn)>`](launch::Kernel) handle. [`launch::Signature`] maps that parameter
//! list to the host values that must be passed for it: a `*const T` parameter takes an
//! [`In<T>`](launch::In) (the address of a slice borrowed for reading), a `*mut T` an
//! [`Out<T>`](launch::Out) (a slice borrowed exclusively), a tensor map a [`launch::MapIn`] or
//! [`launch::MapOut`], and a scalar the same scalar. A [`launch::Call`] couples a handle, a
//! [`launch::Launch`] and those arguments; arguments of the wrong type, count or order do not
//! compile, and swapping an input for an output does not either. All of it lives in [`launch`],
//! for plans and for programs that launch kernels of their own.
//!
//! A `Call` is made only by a plan, through the `unsafe` [`launch::Call::new`]: the plan validates the
//! sizes first, and its `SAFETY` comment says why every index the kernel computes for that launch
//! stays inside the borrowed buffers. [`Gpu::launch`] then runs it safely.

mod buffer;
pub(crate) mod driver;
mod error;
mod gpu;

pub mod access_order;
pub mod bank;
pub mod coalescing;
pub mod distance;
pub mod histogram;
pub mod launch;
pub mod layouts;
pub mod matmul;
pub mod model;
pub mod probe;
pub mod reduce;
pub mod transpose;
pub mod util;

pub use buffer::{DeviceBuffer, DeviceRead, DeviceView, DeviceViewMut, DeviceWrite};
pub use cust::memory::DeviceCopy;
pub use error::{Error, Result};
pub use gpu::{DeviceInfo, Gpu};

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
