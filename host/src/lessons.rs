//! The lessons that are only lessons: families whose kernels exist to show one memory-access
//! effect, each with its plans (a validated launch, returned as a typed
//! [`Call`](crate::launch::Call)), the safe launchers built on them and the CPU reference the
//! kernels are checked against.
//!
//! | family | what it shows |
//! |---|---|
//! | [`access_order`] | which element each thread takes: chunks vs interleaved, lanes along x vs y |
//! | [`layouts`] | a `float3` as AoS, AoS staged through shared memory, SoA, a 16-byte struct |
//! | [`bank`] | shared-memory bank conflicts: a tile's rows, columns and padded columns, a stride sweep |
//! | [`histogram`] | atomics: global, per-block shared, a cluster's distributed shared memory |
//! | [`distance`] | AoS vs SoA points, read whole and gathered |
//!
//! The families whose last lesson is a library entry point keep their lessons beside it:
//! [`coalescing`](crate::coalescing) (offset, stride and L2-only copies before [`copy`](crate::coalescing::copy)),
//! [`transpose`](mod@crate::transpose) (naive, shared, padded and wide tiles, the TMA),
//! [`reduce`](crate::reduce) (the tree kernels before the shuffle that [`sum`](crate::reduce::sum) runs)
//! and [`matmul`](mod@crate::matmul) (one stage a file, in teaching order).
//!
//! The kernels are in `coalesce-kernels` (`kernels-gpu/src/<family>.rs`), [`crate::model`]
//! counts what each launch does to memory without a GPU, and the lesson harness
//! (`coalesce-benches`: registry, checks, workloads, report) runs and times them. Each plan's
//! errors name its limits: the lessons' element-wise kernels index in 32 bits, up to
//! `coalesce_kernels::launch::MAX_ELEMENTS_32` elements.

pub mod access_order;
pub mod bank;
pub mod distance;
pub mod histogram;
pub mod layouts;
