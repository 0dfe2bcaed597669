//! coalesce: fast, safe CUDA memory operations from Rust — and the lessons of memory access,
//! each as a Rust kernel, launched through `cust`.
//!
//! # The library
//!
//! A [`Gpu`] handle, device memory as [`DeviceBuffer`]s and the views borrowed from them, typed
//! [`Error`]s, and the entry points, each for any size and any sub-slice, re-exported here from
//! their families' modules:
//!
//! | call | what it does |
//! |---|---|
//! | [`copy`] | `output = input`, any element type at any offset, 16-byte vectors (~99% of memcpy) |
//! | [`transpose()`] | `output = inputᵀ` of a `rows × cols` matrix of 1-, 2-, 4- or 8-byte elements through shared tiles |
//! | [`sum`], [`sum_to`] | the sum of `i32`, `u32`, `i64`, `u64` (wrapping) or `f32`, `f64` (fixed order), returned or left on the device |
//! | [`matmul()`] | `c = a · b` in `f32`: warp-tiled, stream-K where it pays, a slab of B a block for m ≤ 8 |
//! | [`Gpu::enable_peer_access`], [`Gpu::memcpy_peer`] | a second GPU's memory, mapped or copied |
//!
//! ```no_run
//! use coalesce::{Gpu, copy, matmul, sum, transpose};
//! # fn main() -> coalesce::Result<()> {
//! let gpu = Gpu::new()?;
//! let input = gpu.upload(&vec![1.5f32; 1 << 20])?;
//! let mut output = gpu.poisoned::<f32>(1 << 20, 0)?;
//! copy(&gpu, &input, &mut output)?;
//! assert_eq!(output.to_vec()?[12345], 1.5);
//! transpose(&gpu, &input, &mut output, 1024, 1024)?;
//! let ints = gpu.upload(&[1i32, 2, 3])?;
//! assert_eq!(sum(&gpu, &ints)?, 6);
//! let (a, b) = (gpu.upload(&vec![1.0f32; 64 * 32])?, gpu.upload(&vec![2.0f32; 32 * 16])?);
//! let mut c = gpu.poisoned::<f32>(64 * 16, 0)?;
//! matmul(&gpu, &a, &b, &mut c, (64, 16, 32))?;
//! assert_eq!(c.to_vec()?[0], 64.0);
//! # Ok(()) }
//! ```
//!
//! # Beyond the entry points
//!
//! - [`coalescing`], [`transpose`](mod@transpose), [`reduce`] and [`matmul`](mod@matmul): each
//!   entry point's module, which also holds the lessons that lead up to it (the offset and
//!   stride copies, the naive and tiled transposes, the tree reductions, the matmul stages).
//! - [`lessons`]: the families that are only lessons (access order, layouts, bank conflicts,
//!   histograms, gathers).
//! - [`launch`]: the typed launch every plan returns, for programs that launch the kernels
//!   themselves (below).
//! - [`util`]: filling device memory with pseudo-random data on the GPU.
//! - [`timing`]: CUDA-event timing and the device probes the harness's time model is built on.
//! - [`model`]: replays a planned launch on the CPU and counts what Nsight Compute would, and
//!   follows it through L2 to DRAM ([`matmul::model`] for a multiply).
//!
//! The last two are the lesson harness's tools, which no entry point uses: they come with the
//! feature `model`, on by default. A program that only calls the library leaves them out with
//! `coalesce-cuda = { version = "0.1", default-features = false }`, and the library builds in
//! a fraction of the time: a tenth of it in release, a third in debug.
//!
//! A family's plans validate a launch and return a typed [`launch::Call`]; its safe launchers
//! are built on them, beside the CPU references the kernels are checked against. A family
//! re-exports by name the few kernel-crate types and limits its own signatures use (a
//! [`lessons::layouts::Float3`], a [`coalescing::MAX_OFFSET`]). The kernels live in the
//! `coalesce-kernels` crate (`kernels-gpu/`), declared once each with `kernel!`, compiled to PTX
//! (committed in `host/ptx/`) and embedded here as [`PTX`]; a program that wants the index math,
//! the launch constants or the typed kernel handles depends on that crate itself
//! (`coalesce_kernels::coalescing::offset_index`). The lesson harness (registry, checks,
//! workloads, report) is a separate crate that depends on this one, never the other way round.
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
//! [`Out<T>`](launch::Out) (a slice borrowed exclusively), a scalar the same scalar, and a
//! tensor map (the TMA transpose's) a borrow of its tensor that only its plan makes. A
//! [`launch::Call`] couples a handle, a [`launch::Launch`] and those arguments; arguments of the
//! wrong type, count or order do not compile, and swapping an input for an output does not
//! either. All of it lives in [`launch`], for plans and for programs that launch kernels of
//! their own.
//!
//! A `Call` is made only by a plan, through the `unsafe` [`launch::Call::new`]: the plan validates the
//! sizes first, and its `SAFETY` comment says why every index the kernel computes for that launch
//! stays inside the borrowed buffers. [`Gpu::launch`] then runs it safely.

// Without the feature `model` the docs' links to its modules have nothing to point to; every
// other link is checked by the default build's docs.
#![cfg_attr(not(feature = "model"), allow(rustdoc::broken_intra_doc_links))]
// docs.rs marks what the features gate (rustdoc's `--cfg docsrs` there).
#![cfg_attr(docsrs, feature(doc_cfg))]

mod buffer;
pub(crate) mod driver;
mod error;
mod gpu;

// The library: the handle, device memory, errors and the entry points.
pub use buffer::{DeviceBuffer, DeviceRead, DeviceView, DeviceViewMut, DeviceWrite};
pub use cust::memory::DeviceCopy;
pub use error::{Error, Result};
pub use gpu::{DeviceInfo, Gpu};

#[doc(inline)]
pub use coalescing::copy;
#[doc(inline)]
pub use matmul::matmul;
#[doc(inline)]
pub use reduce::{sum, sum_to};
#[doc(inline)]
pub use transpose::transpose;

pub mod coalescing;
pub mod matmul;
pub mod reduce;
pub mod transpose;

// Beyond the entry points.
pub mod launch;
pub mod lessons;
#[cfg(feature = "model")]
pub mod model;
#[cfg(feature = "model")]
pub mod timing;
pub mod util;

// The lesson families where the harness (`coalesce-benches`) names them, at the root as
// `coalesce_kernels` and the harness keep theirs; documented under `lessons`.
#[doc(hidden)]
pub use lessons::{access_order, bank, distance, histogram, layouts};

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
