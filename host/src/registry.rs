//! Every kernel variant, registered once: tests, benches, `xtask list` and the report iterate
//! over [`all`] instead of keeping lists of their own.
use crate::check::Rng;
use crate::error::Result;
use crate::gpu::Gpu;

/// A parameter a variant is swept over (offset, stride, ...).
#[derive(Debug, Clone, Copy)]
pub struct Param {
    /// Its name, as benches and reports print it.
    pub name: &'static str,
    /// The values benches sweep.
    pub sweep: &'static [u32],
    /// The values the correctness test checks (a subset covering the edge cases).
    pub check: &'static [u32],
}

/// Queues one run of prepared work.
type Launcher = dyn FnMut(&Gpu) -> Result<()>;

/// Prepared GPU work: buffers allocated and filled, ready to be launched again and again.
pub struct Workload {
    /// Bytes the work must move through device memory: each input read once plus each output
    /// written once (for sweeps, the useful bytes).
    pub bytes: u64,
    /// Floating-point operations, for compute-bound kernels (0 otherwise).
    pub flops: u64,
    /// Runs on the CPU (time it with a host clock, not CUDA events).
    pub on_cpu: bool,
    launch: Box<Launcher>,
}

impl Workload {
    /// Work that moves `bytes` and is queued by `launch`.
    pub fn new(bytes: u64, launch: impl FnMut(&Gpu) -> Result<()> + 'static) -> Self {
        Workload { bytes, flops: 0, on_cpu: false, launch: Box::new(launch) }
    }

    /// CPU work (a reference the GPU is compared with) that moves `bytes`.
    pub fn cpu(bytes: u64, mut run: impl FnMut() + 'static) -> Self {
        Workload {
            bytes,
            flops: 0,
            on_cpu: true,
            launch: Box::new(move |_| {
                run();
                Ok(())
            }),
        }
    }

    /// The same work, counted as `flops` floating-point operations.
    pub fn with_flops(mut self, flops: u64) -> Self {
        self.flops = flops;
        self
    }

    /// Queues one run on `gpu`'s stream (or, for CPU work, runs it).
    pub fn launch(&mut self, gpu: &Gpu) -> Result<()> {
        (self.launch)(gpu)
    }
}

/// One kernel variant of one family.
#[derive(Clone, Copy)]
pub struct Variant {
    /// Family (module name on both sides), e.g. "coalescing".
    pub family: &'static str,
    /// Variant name inside the family, e.g. "offset".
    pub name: &'static str,
    /// PTX entry points the variant launches (empty for CPU-only comparisons).
    pub kernels: &'static [&'static str],
    /// One line: the access pattern and what it costs.
    pub summary: &'static str,
    /// The parameter it is swept over, if any.
    pub param: Option<Param>,
    /// Runs the variant on fresh random data at the family's edge sizes and compares every
    /// element with the CPU reference; returns a one-line account of what it checked.
    pub check: fn(&Gpu, &mut Rng, u32) -> Result<String>,
    /// Prepares the benchmark workload for one parameter value.
    pub bench: fn(&Gpu, u32) -> Result<Workload>,
}

impl Variant {
    /// `family/name`.
    pub fn id(&self) -> String {
        format!("{}/{}", self.family, self.name)
    }

    /// Parameter values to check (one `0` when the variant has no parameter).
    pub fn check_values(&self) -> &'static [u32] {
        self.param.map_or(&[0], |p| p.check)
    }

    /// Parameter values to benchmark (one `0` when the variant has no parameter).
    pub fn sweep_values(&self) -> &'static [u32] {
        self.param.map_or(&[0], |p| p.sweep)
    }

    /// `family/name` or `family/name/param=value` for one run.
    pub fn run_id(&self, value: u32) -> String {
        match self.param {
            Some(p) => format!("{}/{}={value}", self.id(), p.name),
            None => self.id(),
        }
    }
}

/// A [`Variant`] whose check and bench are the calling module's `check(gpu, rng, arg)` and
/// `bench(gpu, arg)` (no swept parameter), or, given a [`Param`], `check(gpu, rng, arg, value)`
/// and `bench(gpu, arg, value)`.
macro_rules! variant {
    ($family:literal, $name:literal, $kernel:expr, $arg:expr, $summary:literal) => {
        $crate::registry::Variant {
            family: $family,
            name: $name,
            kernels: &[$kernel],
            summary: $summary,
            param: None,
            check: |gpu, rng, _| check(gpu, rng, $arg),
            bench: |gpu, _| bench(gpu, $arg),
        }
    };
    ($family:literal, $name:literal, $kernel:expr, $arg:expr, $summary:literal, $param:expr) => {
        $crate::registry::Variant {
            family: $family,
            name: $name,
            kernels: &[$kernel],
            summary: $summary,
            param: Some($param),
            check: |gpu, rng, value| check(gpu, rng, $arg, value),
            bench: |gpu, value| bench(gpu, $arg, value),
        }
    };
}
pub(crate) use variant;

/// The families, in teaching order.
pub const FAMILIES: &[&[Variant]] = &[
    crate::coalescing::VARIANTS,
    crate::access_order::VARIANTS,
    crate::layouts::VARIANTS,
    crate::transpose::VARIANTS,
    crate::bank::VARIANTS,
    crate::reduce::VARIANTS,
    crate::matmul::VARIANTS,
    crate::distance::VARIANTS,
];

/// Every registered variant, family by family.
pub fn all() -> impl Iterator<Item = &'static Variant> {
    FAMILIES.iter().flat_map(|f| f.iter())
}

/// `0, 1, ..., N-1` as a constant array, for sweeps.
pub const fn range<const N: usize>(start: u32) -> [u32; N] {
    let mut values = [0; N];
    let mut i = 0;
    while i < N {
        values[i] = start + i as u32;
        i += 1;
    }
    values
}
