//! How the report writes numbers: times, rates, percentages, ratios and counts, the same way in
//! every table, reading and plot label.
use super::model::Measurement;
use coalesce::matmul::Method as Matmul;

/// A change of time in words, never a negative cost: `3.5% slower`, `2.33× slower`,
/// `12.0% faster`, `36.49× faster` for `ratio` = the changed run's time over the baseline's
/// (within 1.5× as a percentage, beyond as a factor).
pub(crate) fn slower_or_faster(ratio: f64) -> String {
    if !ratio.is_finite() || ratio <= 0.0 {
        return "n/a".into();
    }
    let (factor, word) = if ratio >= 1.0 { (ratio, "slower") } else { (1.0 / ratio, "faster") };
    if factor < 1.5 {
        format!("{} {word}", pct(100.0 * (factor - 1.0)))
    } else {
        format!("{} {word}", self::ratio(factor))
    }
}

/// A time in microseconds, as the tables print it.
pub(crate) fn us(x: f64) -> String {
    finite(x, format!("{x:.1}"))
}

/// A bandwidth in GB/s, as the tables print it (whole GB/s: the run-to-run noise is larger).
pub(crate) fn gbps(x: f64) -> String {
    finite(x, format!("{x:.0}"))
}

/// A percentage with one decimal and the `%` sign.
pub(crate) fn pct(x: f64) -> String {
    finite(x, format!("{x:.1}%"))
}

/// A ratio, e.g. `31.22×`.
pub(crate) fn ratio(x: f64) -> String {
    finite(x, format!("{x:.2}×"))
}

/// A speed against another implementation, `x` = its time over ours (above 1 ours is faster),
/// with three decimals, e.g. `1.008×`: the report's one way to set the library beside a peer
/// (cuBLAS, PyTorch, CuPy), as [`SPEED_RULE`] states it.
pub(crate) fn speed(x: f64) -> String {
    finite(x, format!("{x:.3}×"))
}

/// The report's convention for ratios, stated once in its header.
pub(crate) const SPEED_RULE: &str = "**Ratios.** Against another implementation (cuBLAS, PyTorch, CuPy, the \
    driver's copy) a ratio is a **speed**: its time over the library's, so above 1× the library is faster \
    (columns **speed vs cuBLAS** and **speed vs best peer**, each marked >1 = faster). A bandwidth is a share of \
    its ceiling (**% of memcpy**, % of the peer copy). A change within a lesson is a cost, said in words (2.33× \
    slower, 3.5% faster) or labelled as time (**time × rows**).";

/// TFLOP/s with two decimals.
pub(crate) fn tflops(x: f64) -> String {
    finite(x, format!("{x:.2}"))
}

/// `text`, or `n/a` where a zero time or zero bandwidth made the value meaningless.
fn finite(x: f64, text: String) -> String {
    if x.is_finite() { text } else { "n/a".into() }
}

/// `run` without its leading `family/`, for labels inside a family's section or plot.
pub(crate) fn short(m: &Measurement) -> &str {
    m.run.strip_prefix(&m.family).and_then(|r| r.strip_prefix('/')).unwrap_or(&m.run)
}

/// `n` with comma thousands separators, so counts of millions read at a glance.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A run as a person reads it in a plot: the variant, then the parameter's own label where the
/// registry gives one (`spread_edge 4095x4095x4095`, `global skewed`), a matmul size as a cube
/// (`warptile 4096³`), else `name=value`.
pub(crate) fn label(m: &Measurement) -> String {
    let Some(p) = &m.param else { return m.variant.clone() };
    match m.param_label() {
        Some(l) => format!("{} {l}", m.variant),
        None if p.name == "size" && m.in_family::<Matmul>() => format!("{} {}³", m.variant, p.value),
        None => format!("{} {}={}", m.variant, p.name, p.value),
    }
}
