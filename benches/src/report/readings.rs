//! One reading per family: the few comparisons a lesson is about, as sentences whose every number
//! is computed from the report.
//!
//! Hand-written readings go stale the moment a kernel or a GPU changes; these are recomputed on
//! every render. Each sentence needs particular runs: when one is missing the sentence is left out
//! (never a panic, never a guessed number), so a partial report gets a shorter reading.
use super::format::{gbps, pct, ratio, short, slower_or_faster, speed, tflops, thousands, us};
use super::model::{Measurement, Report};
use super::warp::bank_wavefronts;
use crate::access_order::AccessOrder;
use crate::bank::Bank;
use crate::coalescing::Coalescing;
use crate::distance::Distance;
use crate::family::Family;
use crate::layouts::Layouts;
use crate::peer::Peer;
use crate::reduce::Reduce as ReduceRun;
use crate::transpose::Transpose as TransposeRun;
use coalesce::access_order::{Lanes, Order};
use coalesce::bank::Tile;
use coalesce::layouts::AosMethod;
use coalesce::matmul::Method as Matmul;
use coalesce::reduce::Method as Reduce;
use coalesce::transpose::Method as Transpose;

/// The reading of `family`: sentences, each computed from `report` alone. Empty when the runs it
/// compares are absent. Families without a reading of their own get the fastest and slowest run.
pub fn readings(report: &Report, family: &str) -> Vec<String> {
    let timed = timed(report);
    let report = &timed;
    let sentences = match family {
        Coalescing::NAME => coalescing(report),
        AccessOrder::NAME => access_order(report),
        TransposeRun::NAME => transpose(report),
        Bank::NAME => bank(report),
        ReduceRun::NAME => reduce(report),
        Matmul::NAME => matmul(report),
        Distance::NAME => distance(report),
        Peer::NAME => super::peer::readings(report),
        Layouts::NAME => {
            let mut s = extremes(report, family);
            s.push(aos_vs_soa(report));
            s
        }
        // Any family added later: which variant wins, which loses.
        _ => extremes(report, family),
    };
    sentences.into_iter().flatten().collect()
}

/// `report` with only its timed runs: a run with no positive time has no bandwidth to compare, so
/// the table shows it as n/a and the readings and the summary treat it as missing rather than as
/// infinitely fast.
pub(crate) fn timed(report: &Report) -> Report {
    let mut timed = report.clone();
    timed.runs.retain(|m| m.median_us > 0.0 && m.median_us.is_finite());
    timed
}

/// The run with the highest bandwidth.
fn fastest<'a>(runs: impl IntoIterator<Item = &'a Measurement>) -> Option<&'a Measurement> {
    runs.into_iter().max_by(|a, b| a.gbps().total_cmp(&b.gbps()))
}

/// The run with the lowest bandwidth.
fn slowest<'a>(runs: impl IntoIterator<Item = &'a Measurement>) -> Option<&'a Measurement> {
    runs.into_iter().min_by(|a, b| a.gbps().total_cmp(&b.gbps()))
}

/// "`a` is N× faster than `b`", the winner named first whichever it is (bandwidth ratio, which is
/// the time ratio when both move the same bytes).
fn faster(a: &Measurement, b: &Measurement) -> String {
    let (win, lose) = if a.gbps() >= b.gbps() { (a, b) } else { (b, a) };
    format!("`{}` is {} faster than `{}`", short(win), ratio(win.gbps() / lose.gbps()), short(lose))
}

/// `name` with ` (CPU)` when it was timed on the host.
fn label(m: &Measurement) -> String {
    if m.on_cpu { format!("`{}` (CPU)", short(m)) } else { format!("`{}`", short(m)) }
}

fn coalescing(r: &Report) -> Vec<Option<String>> {
    // Misaligned: a warp's 32 floats do not start on a 128-byte line (offset not a multiple of 32).
    let offset = |variant: Coalescing, what: &str| {
        let sweep = r.sweep_of(variant);
        let base = sweep.iter().find(|(v, _)| *v == 0)?.1;
        let (k, worst) = sweep.iter().filter(|(v, _)| v % 32 != 0).min_by(|a, b| a.1.gbps().total_cmp(&b.1.gbps()))?;
        let verb = if worst.gbps() > base.gbps() { "even the slowest" } else { "the slowest" };
        Some(format!(
            "{what} {verb} misaligned offset (offset={k}, {} GB/s) is {} than offset=0 ({} GB/s).",
            gbps(worst.gbps()),
            slower_or_faster(worst.median_us / base.median_us * base.bytes as f64 / worst.bytes as f64),
            gbps(base.gbps())
        ))
    };
    let stride = || {
        let sweep = r.sweep_of(Coalescing::Stride);
        let (s, widest) = sweep.iter().max_by_key(|(v, _)| *v)?;
        let unit = sweep.iter().find(|(v, _)| *v == 1).filter(|(v, _)| v != s);
        let against =
            unit.map_or(String::new(), |(_, m)| format!(", against {} at stride 1", pct(m.percent_of(&r.memcpy))));
        Some(format!("Stride {s} runs at {} of memcpy{against}.", pct(widest.percent_of(&r.memcpy))))
    };
    let vec4 = || {
        let vec4 = |m: &&Measurement| m.is(Coalescing::Vec4) || m.is(Coalescing::Vec4Stream);
        let best = fastest(r.runs_of::<Coalescing>().filter(vec4))?;
        Some(format!("The best vec4 grid (`{}`) reaches {} of memcpy.", short(best), pct(best.percent_of(&r.memcpy))))
    };
    vec![
        offset(Coalescing::Offset, "Plain loads:"),
        offset(Coalescing::OffsetCg, "L2-only `.cg` loads:"),
        stride(),
        vec4(),
    ]
}

/// The largest `per_thread` both orders were measured at, with its (chunked, interleaved) runs.
pub(crate) fn widest_orders(r: &Report) -> Option<(u32, &Measurement, &Measurement)> {
    let chunked = r.sweep_of(AccessOrder::OneD(Order::Chunked));
    let interleaved = r.sweep_of(AccessOrder::OneD(Order::Interleaved));
    let (n, c) =
        chunked.into_iter().filter(|(n, _)| interleaved.iter().any(|(v, _)| v == n)).max_by_key(|(n, _)| *n)?;
    let i = interleaved.iter().find(|(v, _)| *v == n)?.1;
    Some((n, c, i))
}

fn access_order(r: &Report) -> Vec<Option<String>> {
    let orders = || {
        let (n, c, i) = widest_orders(r)?;
        Some(format!(
            "At per_thread={n}, interleaved runs at {} of memcpy and chunked at {}: {}.",
            pct(i.percent_of(&r.memcpy)),
            pct(c.percent_of(&r.memcpy)),
            faster(i, c)
        ))
    };
    let blocks = || {
        let (x, y) = (r.of(AccessOrder::TwoD(Lanes::AlongX))?, r.of(AccessOrder::TwoD(Lanes::AlongY))?);
        Some(format!(
            "In 2-D, lanes along a row (block_x) run at {} of memcpy and lanes down a column (block_y) at {}: {}.",
            pct(x.percent_of(&r.memcpy)),
            pct(y.percent_of(&r.memcpy)),
            faster(x, y)
        ))
    };
    vec![orders(), blocks()]
}

/// The fastest and the slowest run of a family, relative to memcpy.
fn extremes(r: &Report, family: &str) -> Vec<Option<String>> {
    let best = fastest(r.family(family));
    let worst = slowest(r.family(family)).filter(|w| best.is_some_and(|b| b.run != w.run));
    vec![
        best.map(|b| format!("Fastest: {} at {} of memcpy.", label(b), pct(b.percent_of(&r.memcpy)))),
        worst.zip(best).map(|(w, b)| {
            format!("Slowest: {} at {} of memcpy ({}).", label(w), pct(w.percent_of(&r.memcpy)), faster(b, w))
        }),
    ]
}

fn transpose(r: &Report) -> Vec<Option<String>> {
    // The copies are the ceilings the transposes are read against, not transposes; of a shape's
    // copies the fastest is its ceiling (the wide tile's, on the H100), not the 32x32 one.
    let copies =
        |m: &Measurement| matches!(m.variant_in::<TransposeRun>(), Some(TransposeRun::Method(t)) if t.copies());
    let variants: Vec<&str> = r
        .variants(TransposeRun::NAME)
        .into_iter()
        .filter(|v| r.runs_of::<TransposeRun>().any(|m| m.variant == *v && !copies(m)))
        .collect();
    let shapes: Vec<&Measurement> =
        r.runs_of::<TransposeRun>().filter(|m| m.is(TransposeRun::Method(Transpose::Copy))).collect();
    let mut sentences: Vec<Option<String>> = shapes
        .into_iter()
        .map(|first| {
            let ceiling = r
                .runs_of::<TransposeRun>()
                .filter(|m| copies(m) && m.param == first.param)
                .max_by(|a, b| a.gbps().total_cmp(&b.gbps()))?;
            let same_shape = |v: &str| r.runs_of::<TransposeRun>().find(|m| m.variant == v && m.param == first.param);
            let parts: Vec<String> = variants
                .iter()
                .filter_map(|v| same_shape(v))
                .map(|m| format!("{} {}", m.variant, pct(100.0 * m.gbps() / ceiling.gbps())))
                .collect();
            let shape = shape_prefix(first);
            (!parts.is_empty()).then(|| {
                format!(
                    "{shape}{} of the fastest copy of the same shape, `{}` ({} µs, {} of memcpy).",
                    parts.join(", "),
                    ceiling.variant,
                    us(ceiling.median_us),
                    pct(ceiling.percent_of(&r.memcpy))
                )
            })
        })
        .collect();
    let along_rows = TransposeRun::Method(Transpose::WideCopy);
    sentences.extend(r.runs_of::<TransposeRun>().filter(|m| m.is(along_rows)).map(|along| column_walk(r, along)));
    sentences
}

/// `shape=8192x8192: ` for a run with a parameter (its value labelled where the registry labels
/// it), nothing otherwise.
fn shape_prefix(m: &Measurement) -> String {
    let value = |p: &super::model::Param| m.param_label().unwrap_or_else(|| p.value.to_string());
    m.param.as_ref().map_or(String::new(), |p| format!("{}={}: ", p.name, value(p)))
}

/// What walking down columns costs at `along`'s shape: the wide tile's copy along rows against
/// the same copy down columns (and whether the model gives them the same transactions), and
/// where the wide transpose, which walks its input down columns, lands between them.
fn column_walk(r: &Report, along: &Measurement) -> Option<String> {
    let same = |v| r.runs_of::<TransposeRun>().find(|m| m.is(TransposeRun::Method(v)) && m.param == along.param);
    let down = same(Transpose::WideCopyDown)?;
    let shape = shape_prefix(along);
    let transactions = match (&along.model, &down.model) {
        (Some(a), Some(d)) if a == d => " for the same transactions in the model",
        (Some(_), Some(_)) => " (the model counts different transactions)",
        _ => "",
    };
    let wide = same(Transpose::Wide).map(|w| {
        format!(
            "; the wide transpose, which reads down columns and writes along rows, runs at {} of the along-rows copy",
            pct(100.0 * w.gbps() / along.gbps())
        )
    });
    Some(format!(
        "{shape}the wide tile's copy reads {} of memcpy with tiles along rows and {} down columns{transactions}: \
         walking down a column is {}{}.",
        pct(along.percent_of(&r.memcpy)),
        pct(down.percent_of(&r.memcpy)),
        slower_or_faster(down.median_us / along.median_us),
        wide.unwrap_or_default()
    ))
}

/// gcd(a, b), for the bank-conflict degree of a stride.
pub(crate) fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Strides sharing a conflict degree may differ by this much and still count as "the same time".
const SAME_DEGREE_TOLERANCE: f64 = 0.10;

fn bank(r: &Report) -> Vec<Option<String>> {
    let rows = r.of(Bank::Tile(Tile::Rows));
    let cols = rows.zip(r.of(Bank::Tile(Tile::Cols))).map(|(rows, cols)| {
        format!(
            "Reading a 32 × 32 tile down columns takes {} the time of reading it along rows ({} vs {} µs).",
            ratio(cols.median_us / rows.median_us),
            us(cols.median_us),
            us(rows.median_us)
        )
    });
    let padded = rows.zip(r.of(Bank::Tile(Tile::ColsPadded))).map(|(rows, padded)| {
        format!(
            "Padded columns are {} than rows ({} vs {} µs).",
            slower_or_faster(padded.median_us / rows.median_us),
            us(padded.median_us),
            us(rows.median_us)
        )
    });
    vec![cols, padded, stride_law(&r.sweep_of(Bank::Stride)), wavefront_fit(r)]
}

/// A least-squares line `intercept + slope × x`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Fit {
    pub intercept: f64,
    pub slope: f64,
}

impl Fit {
    /// The line's value at `x`.
    pub fn at(&self, x: f64) -> f64 {
        self.intercept + self.slope * x
    }

    /// `29 µs + 132.6 µs a wavefront`, the sign written out rather than added.
    pub fn describe(&self) -> String {
        let slope = format!("{:.1} µs a wavefront", self.slope);
        if self.intercept >= 0.0 {
            format!("{:.0} µs + {slope}", self.intercept)
        } else {
            format!("{slope} − {:.0} µs", -self.intercept)
        }
    }
}

/// The least-squares line of time (y) on wavefronts (x); `None` with fewer than two distinct x.
pub(crate) fn bank_fit(points: &[(f64, f64)]) -> Option<Fit> {
    let n = points.len() as f64;
    let (mx, my) = (points.iter().map(|p| p.0).sum::<f64>() / n, points.iter().map(|p| p.1).sum::<f64>() / n);
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (points.len() >= 2 && sxx > 0.0).then(|| {
        let slope = sxy / sxx;
        Fit { intercept: my - slope * mx, slope }
    })
}

/// The stride sweep's times against the model's wavefronts a warp load takes: the fitted line,
/// and how far the fewest and the most wavefronts' mean times lie from it.
fn wavefront_fit(r: &Report) -> Option<String> {
    let points: Vec<(f64, f64)> = r
        .sweep_of(Bank::Stride)
        .into_iter()
        .filter_map(|(_, m)| Some((bank_wavefronts(m)? as f64, m.median_us)))
        .collect();
    let fit = bank_fit(&points)?;
    let mean_at = |x: f64| {
        let t: Vec<f64> = points.iter().filter(|p| p.0 == x).map(|p| p.1).collect();
        t.iter().sum::<f64>() / t.len() as f64
    };
    let (lo, hi) = points.iter().fold((f64::MAX, f64::MIN), |(lo, hi), p| (lo.min(p.0), hi.max(p.0)));
    let off = |x: f64| {
        let (measured, line) = (mean_at(x), fit.at(x));
        format!(
            "{} µs measured against {} on the line at {x} wavefront{}",
            us(measured),
            us(line),
            if x == 1.0 { "" } else { "s" }
        )
    };
    Some(format!(
        "Against the model's wavefronts a warp load takes, the least-squares line over the stride sweep is {}: {}, \
         {}.",
        fit.describe(),
        off(lo),
        off(hi)
    ))
}

/// The side `n` of a square matmul of `flops` = 2n³, if it is one.
pub(crate) fn matmul_side(flops: u64) -> Option<u64> {
    let n = ((flops as f64) / 2.0).cbrt().round() as u64;
    (n.checked_pow(3).and_then(|c| c.checked_mul(2)) == Some(flops)).then_some(n)
}

/// Array of structs against struct of arrays, and whether the model's counts explain the
/// difference: the model counts DRAM bytes and sectors a request, so it explains AoS winning only
/// where AoS moves fewer of either.
fn aos_vs_soa(r: &Report) -> Option<String> {
    let (aos, soa) = (r.of(Layouts::Aos(AosMethod::Element))?, r.of(Layouts::Soa)?);
    let q = aos.median_us / aos.bytes as f64 / (soa.median_us / soa.bytes as f64);
    let head =
        format!("`aos` is {} than `soa` ({} vs {} µs)", slower_or_faster(q), us(aos.median_us), us(soa.median_us));
    let (Some(a), Some(s)) = (&aos.model, &soa.model) else {
        return Some(format!("{head}; the record has no model counts for them."));
    };
    let dram = |m: &super::model::Model| m.dram_read_bytes + m.dram_write_bytes;
    let bytes = if dram(a) == dram(s) {
        format!("the same DRAM bytes for both ({})", thousands(dram(a)))
    } else {
        format!("{} DRAM bytes for `aos` and {} for `soa`", thousands(dram(a)), thousands(dram(s)))
    };
    let counts = format!(
        "the model counts {bytes}, and {:.0} sectors a load request for `aos` against {:.0} for `soa`",
        a.ld_sectors_per_request, s.ld_sectors_per_request
    );
    let aos_moves_less = dram(a) < dram(s) || a.ld_sectors_per_request < s.ld_sectors_per_request;
    Some(if q < 1.0 && !aos_moves_less {
        format!(
            "{head}, and the model does not explain it: {counts}, so by its counts `aos` moves no less from DRAM \
             and more sectors through L1. What makes `aos` faster here is outside the model, which has no term \
             for DRAM page locality or for how many streams are in flight (`soa` reads and writes six arrays, \
             `aos` two): unexplained."
        )
    } else if q < 1.0 {
        format!("{head}, as the model's counts lead one to expect: {counts}.")
    } else {
        format!("{head}: {counts}.")
    })
}

/// Whether the stride sweep's time follows the conflict degree gcd(stride, 32): strides of one
/// degree within [`SAME_DEGREE_TOLERANCE`] of each other, and a higher degree always slower.
fn stride_law(sweep: &[(u32, &Measurement)]) -> Option<String> {
    // (degree, times), ascending degree.
    let mut groups: Vec<(u32, Vec<f64>)> = Vec::new();
    for (s, m) in sweep {
        let g = gcd(*s, 32);
        match groups.iter_mut().find(|(d, _)| *d == g) {
            Some((_, times)) => times.push(m.median_us),
            None => groups.push((g, vec![m.median_us])),
        }
    }
    groups.sort_by_key(|(g, _)| *g);
    if groups.len() < 2 {
        return None;
    }
    let mean = |t: &[f64]| t.iter().sum::<f64>() / t.len() as f64;
    let spread =
        |t: &[f64]| t.iter().cloned().fold(f64::MIN, f64::max) / t.iter().cloned().fold(f64::MAX, f64::min) - 1.0;
    let worst_spread = groups.iter().map(|(_, t)| spread(t)).fold(0.0, f64::max);
    let means: Vec<f64> = groups.iter().map(|(_, t)| mean(t)).collect();
    let rising = means.windows(2).all(|w| w[1] > w[0]);
    let (base_degree, base) = (groups[0].0, means[0]);
    let costs: Vec<String> =
        groups.iter().zip(&means).skip(1).map(|((g, _), m)| format!("{g}-way {}", ratio(m / base))).collect();
    let verdict = if rising && worst_spread <= SAME_DEGREE_TOLERANCE { "tracks" } else { "does not track" };
    Some(format!(
        "The stride sweep's time {verdict} gcd(stride, 32): strides of one conflict degree agree within {}, \
         and against the {base_degree}-way time the {} (mean per degree).",
        pct(100.0 * worst_spread),
        costs.join(", ")
    ))
}

fn reduce(r: &Report) -> Vec<Option<String>> {
    let best = fastest(r.runs_of::<ReduceRun>().filter(|m| !m.on_cpu));
    let headline = best.map(|b| {
        format!(
            "The best GPU method, `{}`, reads {} GB/s: {} of memcpy.",
            short(b),
            gbps(b.gbps()),
            pct(b.percent_of(&r.memcpy))
        )
    });
    let seed = best.zip(r.of(ReduceRun::Method(Reduce::Seed))).filter(|(b, s)| b.run != s.run).map(|(b, seed)| {
        format!(
            "It is {} faster than the seed ({} → {} µs).",
            ratio(b.gbps() / seed.gbps()),
            us(seed.median_us),
            us(b.median_us)
        )
    });
    let cpu = best.zip(fastest(r.runs_of::<ReduceRun>().filter(|m| m.on_cpu))).map(|(b, cpu)| {
        format!(
            "The fastest CPU reference, `{}` ({} GB/s), is {} slower than `{}`.",
            short(cpu),
            gbps(cpu.gbps()),
            ratio(b.gbps() / cpu.gbps()),
            short(b)
        )
    });
    vec![headline, seed, cpu]
}

/// The ladder at the naive kernel's size, the best run against naive, and the best run at the
/// largest size cuBLAS was timed at in this record against cuBLAS.
fn matmul(r: &Report) -> Vec<Option<String>> {
    let methods: Vec<&Measurement> = r.runs_of::<Matmul>().filter(|m| m.flops > 0).collect();
    let naive = r.of(Matmul::Naive).filter(|n| n.flops > 0);
    let ladder_size = naive.map(|n| n.flops).or_else(|| methods.first().map(|m| m.flops));
    let ladder = ladder_size.map(|size| {
        let parts: Vec<String> = methods
            .iter()
            .filter(|m| m.flops == size)
            .map(|m| format!("{} {}", short(m), tflops(m.tflops())))
            .collect();
        let at = matmul_side(size).map_or(String::new(), |n| format!(" at {n}³"));
        format!("TFLOP/s{at}: {}.", parts.join(" → "))
    });
    let best = methods.iter().copied().max_by(|a, b| a.tflops().total_cmp(&b.tflops()));
    let against_naive = best.zip(naive).filter(|(b, n)| b.run != n.run).map(|(b, naive)| {
        format!("The best, `{}`, reaches {} the naive kernel's TFLOP/s.", short(b), ratio(b.tflops() / naive.tflops()))
    });
    // The largest size both a run and cuBLAS were timed at.
    let cublas = methods
        .iter()
        .filter_map(|m| Some((m.flops, super::cost::cublas_at(r, m.flops)?)))
        .max_by_key(|(flops, _)| *flops)
        .and_then(|(flops, c)| {
            let fastest =
                methods.iter().filter(|m| m.flops == flops).max_by(|a, b| a.tflops().total_cmp(&b.tflops()))?;
            let rate = flops as f64 / (c.median_us * 1e-6) / 1e12;
            let at = matmul_side(flops).map_or(String::new(), |n| format!("At {n}³, "));
            Some(format!(
                "{at}the fastest run, `{}` ({} TFLOP/s), runs at {} the speed of cuBLAS ({} TFLOP/s, SGEMM through \
                 PyTorch, timed by this record's peers).",
                short(fastest),
                tflops(fastest.tflops()),
                speed(c.median_us / fastest.median_us),
                tflops(rate)
            ))
        });
    vec![ladder, against_naive, cublas]
}

fn distance(r: &Report) -> Vec<Option<String>> {
    let pair = |what: &str, gather: bool| {
        let (a, s) = (r.of(Distance { soa: false, gather })?, r.of(Distance { soa: true, gather })?);
        Some(format!(
            "{what}: AoS {} vs SoA {} of memcpy; {}.",
            pct(a.percent_of(&r.memcpy)),
            pct(s.percent_of(&r.memcpy)),
            faster(a, s)
        ))
    };
    vec![pair("All points", false), pair("Gathers", true)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcd_of_strides_with_32() {
        let degrees: Vec<u32> = [1, 2, 3, 4, 6, 8, 12, 16, 24, 31, 32].iter().map(|s| gcd(*s, 32)).collect();
        assert_eq!(degrees, [1, 2, 1, 4, 2, 8, 4, 16, 8, 1, 32]);
    }
}
