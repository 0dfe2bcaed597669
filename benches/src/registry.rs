//! Every family, in teaching order: tests, benches, `xtask list`, the report and the ncu step
//! iterate [`all`] instead of keeping lists of their own. What a family and a variant are is
//! [`crate::family`]'s.
use crate::family::{Family, Variant};

/// Every family, in teaching order: its name and its variants.
pub fn families() -> Vec<(&'static str, Vec<&'static dyn Variant>)> {
    fn family<F: Family>() -> (&'static str, Vec<&'static dyn Variant>) {
        (F::NAME, F::ROWS.iter().map(|row| row as &'static dyn Variant).collect())
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

/// The registered variant `family/variant`, if there is one.
pub fn find(family: &str, variant: &str) -> Option<&'static dyn Variant> {
    all().find(|v| v.family() == family && v.name() == variant)
}

/// The label of `value` of the parameter of `family/variant` in the registry (see
/// [`crate::family::Param::labels`]); `None` for an unknown variant or a value that means itself.
pub fn param_label(family: &str, variant: &str, value: u32) -> Option<String> {
    find(family, variant)?.param_label(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transpose::Transpose;
    use coalesce::{histogram, matmul};

    #[test]
    fn library_methods_are_registered_once_each_in_order() {
        let rows = <matmul::Method as Family>::ROWS;
        assert_eq!(rows.iter().map(|row| row.variant).collect::<Vec<_>>(), matmul::Method::ALL);
        let rows = <histogram::Method as Family>::ROWS;
        assert_eq!(rows.iter().map(|row| row.variant).collect::<Vec<_>>(), histogram::Method::ALL);
        let transposes: Vec<_> = Transpose::ROWS
            .iter()
            .filter_map(|row| match row.variant {
                Transpose::Method(method) => Some(method),
                Transpose::Tma => None,
            })
            .collect();
        for (i, method) in transposes.iter().enumerate() {
            assert!(!transposes[..i].contains(method), "transpose {method:?} registered twice");
        }
    }

    #[test]
    fn parameter_values_are_named_for_what_they_mean() {
        let label = |family, variant, value| param_label(family, variant, value);
        assert_eq!(label("coalescing", "vec4", 0).as_deref(), Some("one-trip"));
        assert_eq!(label("coalescing", "vec4", 8).as_deref(), Some("8"));
        assert_eq!(label("coalescing", "any_offset", 12).as_deref(), Some("src+1/dst+2"));
        assert_eq!(label("transpose", "naive", 0).as_deref(), Some("8192x8192"));
        assert_eq!(label("transpose", "naive", 1).as_deref(), Some("4096x16384"));
        // A matmul stage's shapes are its descriptor's, each labelled by itself.
        assert_eq!(label("matmul", "warptile_edge", 2).as_deref(), Some("4000x4100x4033"));
        assert_eq!(label("matmul", "thin", 1).as_deref(), Some("4096x8x4096"));
        let skinny = all().find(|v| v.id() == "matmul/skinny").unwrap();
        assert_eq!(skinny.run_id(1), "matmul/skinny/shape=1");
        assert_eq!(skinny.check_values(), [1]);
        assert_eq!(skinny.param().unwrap().describe_sweep(), "shape: 1x4096x4096, 8x4096x4096");
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
