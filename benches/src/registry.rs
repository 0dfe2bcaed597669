//! Every kernel variant, registered once: each family's variants are the values of one enum that
//! implements [`Family`]; tests, benches, `xtask list`, the report and the ncu step iterate
//! [`all`] instead of keeping lists of their own.
use coalesce::model::Counts;
use coalesce::{Gpu, Result};

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
    pub labels: Option<fn(u32) -> String>,
}

impl Param {
    /// What `value` means, for people: its label, or the number itself.
    pub fn label(&self, value: u32) -> String {
        self.labels.map_or_else(|| value.to_string(), |f| f(value))
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

/// One family's variants: an enum whose values are the variants, listed in teaching order in
/// [`Family::VARIANTS`]. Each method is one `match` over the enum, so adding a variant without
/// its name, summary, kernels, check or bench does not compile.
pub trait Family: Copy + Sync + 'static {
    /// The family's module name on every side, e.g. "coalescing".
    const NAME: &'static str;
    /// Every variant, in teaching order.
    const VARIANTS: &'static [Self];
    /// The variant's name inside the family, e.g. "offset".
    fn name(self) -> &'static str;
    /// One line: the access pattern and what it costs.
    fn summary(self) -> &'static str;
    /// PTX entry points the variant launches, from their typed handles (empty for CPU-only
    /// comparisons). The first names the variant; the ncu step profiles the first
    /// [`Family::profiled`] launches of any of them.
    fn kernels(self) -> &'static [&'static str];
    /// How many launches of one benchmark workload, from its first, the ncu step profiles
    /// (their counters summed) and [`Family::model`] counts: 1 (the first kernel's first
    /// launch) unless one multiply is more than one launch of equal standing.
    fn profiled(self) -> u32 {
        1
    }
    /// The parameter it is swept over, if any.
    fn param(self) -> Option<Param> {
        None
    }
    /// Runs the variant on fresh random data at the family's edge sizes and compares every
    /// element with the CPU reference; returns a one-line account of what it checked.
    fn check(self, gpu: &Gpu, rng: &mut Rng, value: u32) -> CheckResult<String>;
    /// Prepares the benchmark workload for one parameter value.
    fn bench(self, gpu: &Gpu, value: u32) -> Result<Workload>;
    /// What Nsight Compute should count for the launches the ncu step profiles: the first
    /// [`Family::profiled`] launches of the variant's kernels in its benchmark workload (`gpu
    /// --once`; with one, the first kernel's), at the benchmark size, on a GPU of `sms` SMs,
    /// predicted by `coalesce::model` without a GPU. `Ok(None)` for CPU-only variants.
    fn model(self, value: u32, sms: u32) -> Result<Option<Counts>>;
}

/// A registered variant of any family (the object-safe view of [`Family`]).
pub trait Variant: Sync {
    /// Family name.
    fn family(&self) -> &'static str;
    /// Variant name inside the family.
    fn name(&self) -> &'static str;
    /// See [`Family::summary`].
    fn summary(&self) -> &'static str;
    /// See [`Family::kernels`].
    fn kernels(&self) -> &'static [&'static str];
    /// See [`Family::profiled`].
    fn profiled(&self) -> u32;
    /// See [`Family::param`].
    fn param(&self) -> Option<Param>;
    /// See [`Family::check`].
    fn check(&self, gpu: &Gpu, rng: &mut Rng, value: u32) -> CheckResult<String>;
    /// See [`Family::bench`].
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

impl<F: Family> Variant for F {
    fn family(&self) -> &'static str {
        F::NAME
    }
    fn name(&self) -> &'static str {
        Family::name(*self)
    }
    fn summary(&self) -> &'static str {
        Family::summary(*self)
    }
    fn kernels(&self) -> &'static [&'static str] {
        Family::kernels(*self)
    }
    fn profiled(&self) -> u32 {
        Family::profiled(*self)
    }
    fn param(&self) -> Option<Param> {
        Family::param(*self)
    }
    fn check(&self, gpu: &Gpu, rng: &mut Rng, value: u32) -> CheckResult<String> {
        Family::check(*self, gpu, rng, value)
    }
    fn bench(&self, gpu: &Gpu, value: u32) -> Result<Workload> {
        Family::bench(*self, gpu, value)
    }
    fn model(&self, value: u32, sms: u32) -> Result<Option<Counts>> {
        Family::model(*self, value, sms)
    }
}

/// The variants of family `F`.
fn variants<F: Family>() -> &'static [F] {
    F::VARIANTS
}

/// `[[entry]; N]`: the one PTX entry of each method of a library family that the registry takes
/// as its variants (`impl Family for Method`), in `Method::ALL` order, so `method as usize`
/// indexes it (checked at compile time: `ALL` must list the methods in declaration order).
macro_rules! method_kernels {
    ($method:ty) => {{
        let mut out = [[""]; <$method>::ALL.len()];
        let mut i = 0;
        while i < out.len() {
            assert!(<$method>::ALL[i] as usize == i, "Method::ALL is in declaration order");
            out[i] = [<$method>::ALL[i].kernel().name()];
            i += 1;
        }
        out
    }};
}
pub(crate) use method_kernels;

/// A variant's name from its kernel's entry name, less the family's prefix (`matmul_tiled` →
/// `tiled`): one name on every side.
pub fn name_from_kernel(family: &'static str, kernel: &'static str) -> &'static str {
    kernel.strip_prefix(family).and_then(|rest| rest.strip_prefix('_')).unwrap_or(kernel)
}

/// Every family, in teaching order: its name and its variants.
pub fn families() -> Vec<(&'static str, Vec<&'static dyn Variant>)> {
    fn family<F: Family>() -> (&'static str, Vec<&'static dyn Variant>) {
        (F::NAME, variants::<F>().iter().map(|v| v as &'static dyn Variant).collect())
    }
    vec![
        family::<crate::coalescing::Coalescing>(),
        family::<crate::access_order::AccessOrder>(),
        family::<crate::layouts::Layouts>(),
        family::<crate::transpose::Transpose>(),
        family::<crate::bank::Bank>(),
        family::<crate::reduce::Reduce>(),
        family::<coalesce::histogram::Method>(),
        family::<coalesce::matmul::Method>(),
        family::<crate::distance::Distance>(),
        family::<crate::peer::Peer>(),
    ]
}

/// Every registered variant, family by family.
pub fn all() -> impl Iterator<Item = &'static dyn Variant> {
    families().into_iter().flat_map(|(_, variants)| variants)
}

/// The label of `value` of the parameter of `family/variant` in the registry (see
/// [`Param::labels`]); `None` for an unknown variant or a value that means itself.
pub fn param_label(family: &str, variant: &str, value: u32) -> Option<String> {
    all().find(|v| v.family() == family && v.name() == variant)?.param_label(value)
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

    #[test]
    fn parameter_values_are_named_for_what_they_mean() {
        let label = |family, variant, value| param_label(family, variant, value);
        assert_eq!(label("coalescing", "vec4", 0).as_deref(), Some("one-trip"));
        assert_eq!(label("coalescing", "vec4", 8).as_deref(), Some("8"));
        assert_eq!(label("coalescing", "any_offset", 12).as_deref(), Some("src+1/dst+2"));
        assert_eq!(label("transpose", "naive", 0).as_deref(), Some("8192x8192"));
        assert_eq!(label("transpose", "naive", 1).as_deref(), Some("4096x16384"));
        // A value that means itself has no label; run ids never carry one.
        assert_eq!(label("coalescing", "offset", 1), None);
        let vec4 = all().find(|v| v.id() == "coalescing/vec4").unwrap();
        assert_eq!(vec4.run_id(0), "coalescing/vec4/blocks_per_sm=0");
        assert_eq!(vec4.param().unwrap().describe_sweep(), "blocks_per_sm: 1, 2, 4, 8, 16, 32, 64, one-trip");
        let offset = all().find(|v| v.id() == "coalescing/offset").unwrap().param().unwrap();
        assert_eq!(offset.describe_sweep(), "offset: 0, 1, 2, ... 32 (33 values)");
        // Every labelled value of every variant is a label, not an empty string.
        for v in all() {
            for &value in v.sweep_values() {
                assert!(v.param_label(value).is_none_or(|l| !l.is_empty()), "{}", v.run_id(value));
            }
        }
    }
}
