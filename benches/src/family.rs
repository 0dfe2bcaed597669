//! What a family of kernel variants is: a table with one [`Row`] per variant (its name, summary,
//! kernels and swept [`Param`]) and the behaviour of [`Family`] (check, bench, model), seen by
//! everything else as object-safe [`Variant`]s. No family is imported here: each family module
//! imports this one, and [`crate::registry`] lists the families.
use coalesce::launch::Kernel;
use coalesce::model::Counts;
use coalesce::{Gpu, Result};
use coalesce_kernels::kernel::Module;

use crate::check::{CheckResult, Rng};
use crate::workload::Workload;

/// A parameter a variant is swept over (offset, stride, ...).
#[derive(Debug, Clone, Copy)]
pub struct Param {
    /// Its name, as benches and reports print it.
    pub name: &'static str,
    /// The values benches sweep.
    pub sweep: &'static [u32],
    /// The values the correctness check runs (a subset covering the edge cases).
    pub check: &'static [u32],
    /// What a value means where the number alone does not say (`blocks_per_sm=0` is
    /// `one-trip`, transpose `shape=0` is `8192x8192`); `None` where the value is its meaning.
    pub labels: Option<Labels>,
}

/// How a parameter's values are labelled.
#[derive(Debug, Clone, Copy)]
pub enum Labels {
    /// Each value by a function of it.
    Each(fn(u32) -> String),
    /// Each value an index into these `(m, n, k)` shapes, labelled `MxNxK`: a matmul stage's
    /// benchmark shapes, as its descriptor lists them.
    Shapes(&'static [(usize, usize, usize)]),
}

impl Param {
    /// What `value` means, for people: its label, or the number itself (also for an index past
    /// [`Labels::Shapes`]).
    pub fn label(&self, value: u32) -> String {
        match self.labels {
            None => value.to_string(),
            Some(Labels::Each(f)) => f(value),
            Some(Labels::Shapes(shapes)) => {
                shapes.get(value as usize).map_or_else(|| value.to_string(), |(m, n, k)| format!("{m}x{n}x{k}"))
            }
        }
    }

    /// The swept values as `list` prints them, labelled: every value up to 8, else the first
    /// three, `...`, the last and their count (`offset: 0, 1, 2, ... 32 (33 values)`).
    pub fn describe_sweep(&self) -> String {
        let labels: Vec<String> = self.sweep.iter().map(|&v| self.label(v)).collect();
        let values = if labels.len() <= 8 {
            labels.join(", ")
        } else {
            format!("{}, ... {} ({} values)", labels[..3].join(", "), labels[labels.len() - 1], labels.len())
        };
        format!("{}: {values}", self.name)
    }
}

/// The most kernels one variant launches: a tree reduction's two passes, stream-K's whole waves
/// and shared row.
pub const MAX_KERNELS: usize = 2;

/// One variant, described once: the row of its family's table ([`Family::ROWS`]) that the
/// registry, the checks, the benches, the report, the model and `xtask list` all read.
#[derive(Debug, Clone, Copy)]
pub struct Row<V> {
    /// The family's value that runs it ([`Family`]'s behaviour is a `match` over these).
    pub variant: V,
    /// Its name inside the family, e.g. "offset".
    pub name: &'static str,
    /// One line: the access pattern and what it costs.
    pub summary: &'static str,
    /// The entry names ([`Row::kernels`]) and modules of the first `launched` kernels it
    /// launches, in order.
    kernels: [&'static str; MAX_KERNELS],
    modules: [Module; MAX_KERNELS],
    launched: usize,
    /// The parameter it is swept over, if any.
    pub param: Option<Param>,
    /// How many launches of one benchmark workload, from its first, the ncu step profiles
    /// (their counters summed) and [`Family::model`] counts: 1 (the first kernel's first
    /// launch) unless one run is more than one launch of equal standing.
    pub profiled: u32,
}

impl<V: Copy> Row<V> {
    /// A variant that launches no kernel (a CPU reference, a driver copy) until
    /// [`Row::launches`] says which, has no parameter, and has its first launch profiled.
    pub const fn new(variant: V, name: &'static str, summary: &'static str) -> Self {
        Row {
            variant,
            name,
            summary,
            kernels: [""; MAX_KERNELS],
            modules: [Module::Base; MAX_KERNELS],
            launched: 0,
            param: None,
            profiled: 1,
        }
    }

    /// The same variant launching `kernel` too, after the others.
    pub const fn launches<Sig>(mut self, kernel: Kernel<Sig>) -> Self {
        assert!(self.launched < MAX_KERNELS, "a variant launches at most MAX_KERNELS kernels");
        self.kernels[self.launched] = kernel.name();
        self.modules[self.launched] = kernel.module();
        self.launched += 1;
        self
    }

    /// The same variant, swept over `param`.
    pub const fn swept(self, param: Param) -> Self {
        Row { param: Some(param), ..self }
    }

    /// The same variant with its first `launches` launches profiled together.
    pub const fn profiling(self, launches: u32) -> Self {
        Row { profiled: launches, ..self }
    }

    /// PTX entry points it launches (empty for CPU-only comparisons and driver copies). The
    /// first names the variant; the ncu step profiles the first [`Row::profiled`] launches of
    /// any of them.
    pub fn kernels(&self) -> &[&'static str] {
        &self.kernels[..self.launched]
    }

    /// `Ok` where `gpu` can run every kernel it launches; else why not, as the library says it
    /// (the Hopper module on an older device).
    pub fn runs_on(&self, gpu: &Gpu) -> Result<()> {
        (0..self.launched).try_for_each(|i| gpu.module_ready(self.modules[i], self.kernels[i]))
    }
}

impl<F: Family> Row<F> {
    /// A variant launching `kernel`, named by it less the family's prefix (`matmul_tiled`:
    /// `tiled`), so it has one name on every side.
    pub const fn by_kernel<Sig>(variant: F, summary: &'static str, kernel: Kernel<Sig>) -> Self {
        Row::new(variant, unprefixed(F::NAME, kernel.name()), summary).launches(kernel)
    }
}

/// `kernel` less `family` and the `_` after it; `kernel` itself where it does not start so.
const fn unprefixed(family: &str, kernel: &'static str) -> &'static str {
    let (prefix, bytes) = (family.as_bytes(), kernel.as_bytes());
    if bytes.len() <= prefix.len() + 1 || bytes[prefix.len()] != b'_' {
        return kernel;
    }
    let mut i = 0;
    while i < prefix.len() {
        if bytes[i] != prefix[i] {
            return kernel;
        }
        i += 1;
    }
    match core::str::from_utf8(bytes.split_at(prefix.len() + 1).1) {
        Ok(rest) => rest,
        Err(_) => kernel,
    }
}

/// One family: its variants' table and what they do. Behaviour is one `match` over the family's
/// values per method, so a value without a check, bench or model does not compile.
pub trait Family: Copy + Sync + 'static {
    /// The family's module name on every side, e.g. "coalescing".
    const NAME: &'static str;
    /// Every variant's row, in teaching order.
    const ROWS: &'static [Row<Self>];
    /// Runs the variant on fresh random data at the family's edge sizes and compares every
    /// element with the CPU reference; returns a one-line account of what it checked. Called
    /// only where the device runs the row's kernels ([`Row::runs_on`]).
    fn check(self, gpu: &Gpu, rng: &mut Rng, value: u32) -> CheckResult<String>;
    /// Prepares the benchmark workload for one parameter value. Called only where the device
    /// runs the row's kernels.
    fn bench(self, gpu: &Gpu, value: u32) -> Result<Workload>;
    /// What Nsight Compute should count for the launches the ncu step profiles: the first
    /// [`Row::profiled`] launches of the variant's kernels in its benchmark workload (`gpu
    /// --once`; with one, the first kernel's), at the benchmark size, on a GPU of `sms` SMs,
    /// predicted by `coalesce::model` without a GPU. `Ok(None)` for CPU-only variants.
    fn model(self, value: u32, sms: u32) -> Result<Option<Counts>>;
}

/// A registered variant of any family (the object-safe view of a [`Row`] and its [`Family`]).
pub trait Variant: Sync {
    /// Family name.
    fn family(&self) -> &'static str;
    /// See [`Row::name`].
    fn name(&self) -> &'static str;
    /// See [`Row::summary`].
    fn summary(&self) -> &'static str;
    /// See [`Row::kernels`].
    fn kernels(&self) -> &[&'static str];
    /// See [`Row::profiled`].
    fn profiled(&self) -> u32;
    /// See [`Row::param`].
    fn param(&self) -> Option<Param>;
    /// See [`Family::check`]; `SKIPPED (why)` where the device cannot run the variant's kernels.
    fn check(&self, gpu: &Gpu, rng: &mut Rng, value: u32) -> CheckResult<String>;
    /// See [`Family::bench`]; the library's refusal where the device cannot run the variant's
    /// kernels.
    fn bench(&self, gpu: &Gpu, value: u32) -> Result<Workload>;
    /// See [`Family::model`].
    fn model(&self, value: u32, sms: u32) -> Result<Option<Counts>>;

    /// What the ncu step passes to `--kernel-name` for [`Variant::profiled`] launches: the
    /// first kernel's name, or a regex of all the kernels when it catches more than one launch
    /// (`None` for CPU-only variants).
    fn ncu_filter(&self) -> Option<String> {
        let kernels = self.kernels();
        match kernels {
            [] => None,
            [first, ..] if self.profiled() == 1 => Some(first.to_string()),
            _ => Some(format!("regex:^({})$", kernels.join("|"))),
        }
    }

    /// `family/name`.
    fn id(&self) -> String {
        format!("{}/{}", self.family(), self.name())
    }

    /// Parameter values to check (one `0` when the variant has no parameter).
    fn check_values(&self) -> &'static [u32] {
        self.param().map_or(&[0], |p| p.check)
    }

    /// Parameter values to benchmark (one `0` when the variant has no parameter).
    fn sweep_values(&self) -> &'static [u32] {
        self.param().map_or(&[0], |p| p.sweep)
    }

    /// What the parameter's `value` means (`one-trip`, `8192x8192`), when the variant has a
    /// parameter whose values are labelled.
    fn param_label(&self, value: u32) -> Option<String> {
        self.param().filter(|p| p.labels.is_some()).map(|p| p.label(value))
    }

    /// `family/name` or `family/name/param=value` for one run: the key of report.json and the
    /// ncu step (never labelled; see [`Variant::param_label`]).
    fn run_id(&self, value: u32) -> String {
        match self.param() {
            Some(p) => format!("{}/{}={value}", self.id(), p.name),
            None => self.id(),
        }
    }
}

impl<F: Family> Variant for Row<F> {
    fn family(&self) -> &'static str {
        F::NAME
    }
    fn name(&self) -> &'static str {
        self.name
    }
    fn summary(&self) -> &'static str {
        self.summary
    }
    fn kernels(&self) -> &[&'static str] {
        Row::kernels(self)
    }
    fn profiled(&self) -> u32 {
        self.profiled
    }
    fn param(&self) -> Option<Param> {
        self.param
    }
    fn check(&self, gpu: &Gpu, rng: &mut Rng, value: u32) -> CheckResult<String> {
        if let Err(e) = self.runs_on(gpu) {
            return Ok(format!("SKIPPED ({e})"));
        }
        self.variant.check(gpu, rng, value)
    }
    fn bench(&self, gpu: &Gpu, value: u32) -> Result<Workload> {
        self.runs_on(gpu)?;
        self.variant.bench(gpu, value)
    }
    fn model(&self, value: u32, sms: u32) -> Result<Option<Counts>> {
        self.variant.model(value, sms)
    }
}

/// `start, start + 1, ..., start + N - 1` as a constant array, for sweeps.
pub const fn range<const N: usize>(start: u32) -> [u32; N] {
    let mut values = [0; N];
    let mut i = 0;
    while i < N {
        values[i] = start + i as u32;
        i += 1;
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;
    use coalesce_kernels::coalescing::{coalescing_cp_async, coalescing_offset};
    use coalesce_kernels::matmul::matmul_warptile_edge_sm90;
    use coalesce_kernels::transpose::transpose_copy;

    #[test]
    fn a_row_keeps_its_kernels_in_launch_order_with_their_modules() {
        let row = Row::new((), "x", "y").launches(coalescing_offset).launches(coalescing_cp_async);
        assert_eq!(row.kernels(), [coalescing_offset.name(), coalescing_cp_async.name()]);
        // The second is a Hopper kernel: `runs_on` asks the device for its module.
        assert_eq!(row.modules, [Module::Base, Module::Hopper]);
        assert!(Row::new((), "cpu", "y").kernels().is_empty());
    }

    #[test]
    fn a_kernel_less_its_family_prefix_is_the_variant_name() {
        assert_eq!(unprefixed("matmul", matmul_warptile_edge_sm90.name()), "warptile_edge_sm90");
        // Only a whole family name followed by `_` is a prefix.
        assert_eq!(unprefixed("matmul", "matmulx_tiled"), "matmulx_tiled");
        assert_eq!(unprefixed("matmul", "matmul_"), "matmul_");
        assert_eq!(unprefixed("matmul", "matmul"), "matmul");
        assert_eq!(unprefixed("reduce", transpose_copy.name()), transpose_copy.name());
    }
}
