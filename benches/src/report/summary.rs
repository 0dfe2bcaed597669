//! The summary at the top of `report.md`: one row per lesson, saying what the lesson changes, what
//! that costs on the measured GPU (a ratio of the runs' times) and the model's count behind it.
//!
//! Like the readings, every number is computed from the report's runs when rendering, and a row
//! whose runs are missing is left out rather than guessed.
use std::fmt::Write;

use super::format::{pct, slower_or_faster, tflops, thousands};
use super::model::{Measurement, Model, Report};
use super::readings::{timed, widest_orders};
use crate::access_order::AccessOrder;
use crate::bank::Bank;
use crate::coalescing::Coalescing;
use crate::family::Family;
use crate::layouts::Layouts;
use crate::reduce::Reduce as ReduceRun;
use crate::transpose::Transpose as TransposeRun;
use coalesce::bank::Tile;
use coalesce::histogram::Method as Histogram;
use coalesce::layouts::AosMethod;
use coalesce::matmul::Method as Matmul;
use coalesce::reduce::Method as Reduce;
use coalesce::transpose::Method as Transpose;

/// One lesson's row of the summary.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    /// The family the lesson belongs to, e.g. `coalescing`.
    pub lesson: &'static str,
    /// What the lesson changes, e.g. `offset 1 vs 0`.
    pub change: String,
    /// Each comparison's time per unit of work (flop for compute-bound runs, else byte) of the
    /// changed run over the baseline's: above 1 the change is slower, below 1 faster.
    pub ratios: Vec<f64>,
    /// The ratios in words, e.g. `3.5% slower`.
    pub cost: String,
    /// The model's counts for the runs compared, e.g. `5 sectors a request instead of 4`.
    pub model: String,
    /// `(changed run, baseline run)` of each ratio, by run id.
    pub pairs: Vec<(String, String)>,
    /// What the time model says moves the time, per pair: the limit it names and the ratio it
    /// predicts, or that it does not explain the measured ratio (and by how much).
    pub why: String,
}

/// The summary's rows for `report`, lessons in a fixed order, those whose runs are absent left out.
pub fn summary(report: &Report) -> Vec<SummaryRow> {
    let timed = timed(report);
    let r = &timed;
    let predicted = super::time::rows(report).unwrap_or_default();
    let rows: Vec<SummaryRow> = [
        offset(r, Coalescing::Offset, "plain loads at offset 1 vs 0"),
        stride(r),
        offset(r, Coalescing::OffsetCg, "L2-only (`.cg`) loads at offset 1 vs 0"),
        any_offset(r),
        access_order(r),
        layouts(r),
        transpose(r),
        bank_stride(r),
        bank_padded(r),
        reduce(r),
        histogram(r),
        matmul(r),
    ]
    .into_iter()
    .flatten()
    .collect();
    rows.into_iter()
        .map(|mut row| {
            row.why = explain(report, &predicted, &row);
            row
        })
        .collect()
}

/// The time model's reading of each of `row`'s pairs (see [`SummaryRow::why`]).
fn explain(report: &Report, predicted: &[super::time::Row], row: &SummaryRow) -> String {
    if predicted.is_empty() {
        return "no time model in this record".into();
    }
    let parts: Vec<String> = row
        .pairs
        .iter()
        .zip(&row.ratios)
        .map(|((changed, base), &measured)| {
            let find = |id: &str| {
                let m = report.runs.iter().find(|m| m.run == id)?;
                let p = predicted.iter().find(|p| p.run == id)?;
                Some((m, p))
            };
            let (Some((cm, cp)), Some((bm, bp))) = (find(changed), find(base)) else {
                return "no time model for these runs".into();
            };
            let work = |m: &Measurement| if m.flops > 0 { m.flops as f64 } else { m.bytes as f64 };
            let q = (cp.predicted_us / work(cm)) / (bp.predicted_us / work(bm));
            if explained(q, measured) {
                let limit = if cp.limit == bp.limit {
                    cp.limit.name().to_string()
                } else {
                    format!("{} → {}", bp.limit.name(), cp.limit.name())
                };
                format!("{limit}: predicted {}", cost(q))
            } else {
                format!("not explained by the model: it predicts {}, measured {}", cost(q), cost(measured))
            }
        })
        .collect();
    parts.join("; ")
}

/// Whether a predicted ratio explains a measured one. A measured change of 3% or less is
/// explained by a prediction of 3% or less. A larger one needs a prediction in the same
/// direction, within 25% of it, that moves at least half as far (in log terms): a limit that
/// barely moves does not explain a time that does.
pub fn explained(predicted: f64, measured: f64) -> bool {
    let flat = |x: f64| (x - 1.0).abs() <= 0.03;
    if flat(measured) {
        return flat(predicted);
    }
    let same_way = (predicted - 1.0) * (measured - 1.0) > 0.0;
    let far_enough = predicted.ln().abs() >= 0.5 * measured.ln().abs();
    same_way && far_enough && (predicted / measured - 1.0).abs() <= 0.25
}

/// The summary section: a heading and a table, nothing when no row's runs are present.
pub(crate) fn section(md: &mut String, report: &Report) {
    let rows = summary(report);
    if rows.is_empty() {
        return;
    }
    md.push_str(
        "\n## Summary\n\nOne row per lesson: the change it makes, what that costs on this GPU (the ratio of \
         the two runs' times for the same work), the model's counts for the two runs, and why the time moves as \
         the time model reads it: the limit it names and the ratio it predicts from those counts and this run's \
         probes, or \"not explained by the model\" where its ratio is more than 25% off the measured one.\n\n\
         | lesson | change | cost on this GPU | the model's counts | why (time model) |\n|---|---|---|---|---|\n",
    );
    for row in rows {
        let _ = writeln!(md, "| {} | {} | {} | {} | {} |", row.lesson, row.change, row.cost, row.model, row.why);
    }
}

/// Time per unit of work: per flop for compute-bound runs, per byte otherwise.
fn time_per_work(m: &Measurement) -> f64 {
    m.median_us / if m.flops > 0 { m.flops as f64 } else { m.bytes as f64 }
}

/// `changed`'s time per unit of work over `base`'s.
fn ratio_of(changed: &Measurement, base: &Measurement) -> f64 {
    time_per_work(changed) / time_per_work(base)
}

/// A time ratio in words, always positive (see [`slower_or_faster`]).
fn cost(r: f64) -> String {
    slower_or_faster(r)
}

/// A sectors-per-request count: whole where it is whole (to 0.05), else one decimal.
fn sectors(x: f64) -> String {
    if (x - x.round()).abs() < 0.05 { format!("{}", x.round()) } else { format!("{x:.1}") }
}

/// Whether two byte counts are within 1% of each other.
fn near(a: u64, b: u64) -> bool {
    (a as f64 - b as f64).abs() <= 0.01 * (a.max(b) as f64)
}

/// The DRAM bytes (read plus written) Nsight Compute counted for `changed` and `base`, where
/// the record has counters for both and the model's bytes for either are more than 10% (and
/// 1 MB) off them.
pub fn contradicted_dram(changed: &Measurement, base: &Measurement) -> Option<(u64, u64)> {
    let counted = |m: &Measurement| m.ncu.as_ref().map(|n| n.dram_read_bytes + n.dram_write_bytes);
    let modelled = |m: &Measurement| m.model.as_ref().map(|n| n.dram_read_bytes + n.dram_write_bytes);
    let off = |m: &Measurement| {
        let (Some(n), Some(p)) = (counted(m), modelled(m)) else { return false };
        let gap = (n as f64 - p as f64).abs();
        gap > 0.10 * n as f64 && gap > 1e6
    };
    let (cc, cb) = (counted(changed)?, counted(base)?);
    (off(changed) || off(base)).then_some((cc, cb))
}

/// What the model counts differently for `changed` against `base`, in plain words.
fn model_diff(changed: &Measurement, base: &Measurement) -> String {
    let (Some(c), Some(b)) = (&changed.model, &base.model) else {
        return "no model counts for these runs".into();
    };
    let mut parts = Vec::new();
    let same = |x: f64, y: f64| (x - y).abs() < 0.05;
    let (cl, cs, bl, bs) =
        (c.ld_sectors_per_request, c.st_sectors_per_request, b.ld_sectors_per_request, b.st_sectors_per_request);
    if same(cl, cs) && same(bl, bs) && !same(cl, bl) {
        parts.push(format!("{} sectors a request instead of {}", sectors(cl), sectors(bl)));
    } else {
        if !same(cl, bl) {
            parts.push(format!("{} load sectors a request instead of {}", sectors(cl), sectors(bl)));
        }
        if !same(cs, bs) {
            parts.push(format!("{} store sectors a request instead of {}", sectors(cs), sectors(bs)));
        }
    }
    let conflicts = |m: &Model| m.shared_ld_bank_conflicts + m.shared_st_bank_conflicts;
    if conflicts(c) != conflicts(b) {
        parts.push(format!("{} shared bank conflicts instead of {}", thousands(conflicts(c)), thousands(conflicts(b))));
    }
    let dram = |m: &Model| m.dram_read_bytes + m.dram_write_bytes;
    if let Some((counted_c, counted_b)) = contradicted_dram(changed, base) {
        // The record's counters say otherwise: no DRAM claim, the counters instead.
        parts.push(format!(
            "DRAM bytes not claimed: the model's are more than 10% off the counters' ({} instead of {})",
            thousands(counted_c),
            thousands(counted_b)
        ));
    } else if !near(dram(c), dram(b)) {
        parts.push(format!("{} DRAM bytes instead of {}", thousands(dram(c)), thousands(dram(b))));
    } else if !parts.is_empty() {
        parts.push("the same DRAM bytes".into());
    }
    if parts.is_empty() { "the same sectors a request, bank conflicts and DRAM bytes".into() } else { parts.join("; ") }
}

/// A row comparing `changed` against `base`.
fn pair(lesson: &'static str, change: String, changed: &Measurement, base: &Measurement) -> SummaryRow {
    let r = ratio_of(changed, base);
    SummaryRow {
        lesson,
        change,
        ratios: vec![r],
        cost: cost(r),
        model: model_diff(changed, base),
        pairs: vec![(changed.run.clone(), base.run.clone())],
        why: String::new(),
    }
}

fn offset(r: &Report, variant: Coalescing, change: &str) -> Option<SummaryRow> {
    let (one, zero) = (r.at(variant, 1)?, r.at(variant, 0)?);
    Some(pair(Coalescing::NAME, change.into(), one, zero))
}

fn stride(r: &Report) -> Option<SummaryRow> {
    let unit = r.at(Coalescing::Stride, 1)?;
    let wide: Vec<(u32, &Measurement)> =
        [2, 4, 8, 32].into_iter().filter_map(|s| Some((s, r.at(Coalescing::Stride, s)?))).collect();
    if wide.is_empty() {
        return None;
    }
    let ratios: Vec<f64> = wide.iter().map(|(_, m)| ratio_of(m, unit)).collect();
    let strides: Vec<String> = wide.iter().map(|(s, _)| s.to_string()).collect();
    let costs: Vec<String> = wide.iter().zip(&ratios).map(|((s, _), q)| format!("{s}: {}", cost(*q))).collect();
    let model = wide
        .iter()
        .map(|(_, m)| m.model.as_ref().map(|m| sectors(m.ld_sectors_per_request)))
        .collect::<Option<Vec<String>>>()
        .zip(unit.model.as_ref())
        .map_or("no model counts for these runs".into(), |(s, u)| {
            format!("{} sectors a request instead of {}", s.join(", "), sectors(u.ld_sectors_per_request))
        });
    Some(SummaryRow {
        lesson: Coalescing::NAME,
        change: format!("stride {} vs 1", strides.join(", ")),
        ratios,
        cost: costs.join(", "),
        model,
        pairs: wide.iter().map(|(_, m)| (m.run.clone(), unit.run.clone())).collect(),
        why: String::new(),
    })
}

/// The any-offset copy at its slowest misaligned offsets against the same copy aligned.
fn any_offset(r: &Report) -> Option<SummaryRow> {
    let aligned = r.at(Coalescing::AnyOffset, 0)?;
    let sweep = r.sweep_of(Coalescing::AnyOffset);
    let (value, worst) = sweep
        .iter()
        .filter(|(v, _)| *v != 0)
        .min_by(|a, b| a.1.gbps().total_cmp(&b.1.gbps()))
        .map(|(v, m)| (*v, *m))?;
    let label = worst.param_label().unwrap_or_else(|| value.to_string());
    let mut row = pair(
        Coalescing::NAME,
        format!("the any-offset copy at its slowest misaligned offsets ({label}) vs aligned"),
        worst,
        aligned,
    );
    let _ = write!(row.cost, " ({} of memcpy)", pct(worst.percent_of(&r.memcpy)));
    Some(row)
}

fn access_order(r: &Report) -> Option<SummaryRow> {
    let (n, chunked, interleaved) = widest_orders(r)?;
    Some(pair(AccessOrder::NAME, format!("chunked vs interleaved, per_thread={n}"), chunked, interleaved))
}

fn layouts(r: &Report) -> Option<SummaryRow> {
    let (aos, soa) = (r.of(Layouts::Aos(AosMethod::Element))?, r.of(Layouts::Soa)?);
    Some(pair(Layouts::NAME, "array of structs vs struct of arrays".into(), aos, soa))
}

/// Naive → padded → wide transposes of the first shape measured, the wide one against memcpy.
fn transpose(r: &Report) -> Option<SummaryRow> {
    let naive = r.of(TransposeRun::Method(Transpose::Naive))?;
    let same = |v| r.runs_of::<TransposeRun>().find(|m| m.is(TransposeRun::Method(v)) && m.param == naive.param);
    let padded = same(Transpose::Padded)?;
    let shape = naive.param_label().map_or(String::new(), |l| format!(" ({l})"));
    let mut row = pair(TransposeRun::NAME, format!("padded tile vs naive{shape}"), padded, naive);
    if let Some(wide) = same(Transpose::Wide) {
        row.change = format!("naive → padded tile → wide tile{shape}");
        let q = ratio_of(wide, padded);
        row.ratios.push(q);
        row.pairs.push((wide.run.clone(), padded.run.clone()));
        row.cost = format!(
            "padded {} than naive; wide {} than padded, at {} of memcpy",
            row.cost,
            cost(q),
            pct(wide.percent_of(&r.memcpy))
        );
        row.model = format!("padded against naive: {}; wide against padded: {}", row.model, model_diff(wide, padded));
    } else {
        let _ = write!(row.cost, " ({} of memcpy)", pct(padded.percent_of(&r.memcpy)));
    }
    Some(row)
}

fn bank_stride(r: &Report) -> Option<SummaryRow> {
    let (wide, unit) = (r.at(Bank::Stride, 32)?, r.at(Bank::Stride, 1)?);
    Some(pair(Bank::NAME, "shared-memory stride 32 vs 1".into(), wide, unit))
}

fn bank_padded(r: &Report) -> Option<SummaryRow> {
    let (padded, cols) = (r.of(Bank::Tile(Tile::ColsPadded))?, r.of(Bank::Tile(Tile::Cols))?);
    Some(pair(Bank::NAME, "reading a tile's columns, padded vs unpadded".into(), padded, cols))
}

fn reduce(r: &Report) -> Option<SummaryRow> {
    let (best, seed) = (r.of(ReduceRun::Method(Reduce::ShuffleVec4))?, r.of(ReduceRun::Method(Reduce::Seed))?);
    Some(pair(ReduceRun::NAME, "`shuffle_vec4` vs the seed kernel".into(), best, seed))
}

/// Shared- against global-memory histograms on the skewed input (the first input otherwise).
fn histogram(r: &Report) -> Option<SummaryRow> {
    let global = r.sweep_of(Histogram::Global);
    let (value, g) = global
        .iter()
        .find(|(_, m)| m.param_label().as_deref() == Some("skewed"))
        .or_else(|| global.first())
        .map(|(v, m)| (*v, *m))?;
    let shared = r.at(Histogram::Shared, value)?;
    let input = g.param_label().unwrap_or_else(|| format!("input={value}"));
    Some(pair(Histogram::NAME, format!("shared-memory vs global atomics, {input} input"), shared, g))
}

/// The matmul ladder: each unswept kernel, then the warp-tiled one at the same size, in TFLOP/s.
fn matmul(r: &Report) -> Option<SummaryRow> {
    let naive = r.of(Matmul::Naive).filter(|m| m.flops > 0)?;
    let mut ladder: Vec<&Measurement> = r.runs_of::<Matmul>().filter(|m| m.param.is_none() && m.flops > 0).collect();
    ladder.extend(r.runs_of::<Matmul>().find(|m| m.is(Matmul::Warptile) && m.flops == naive.flops));
    let last = *ladder.last()?;
    if last.run == naive.run {
        return None;
    }
    let names: Vec<&str> = ladder.iter().map(|m| m.variant.as_str()).collect();
    let rates: Vec<String> = ladder.iter().map(|m| tflops(m.tflops())).collect();
    let q = ratio_of(last, naive);
    let loads = ladder
        .iter()
        .map(|m| m.model.as_ref().map(|m| sectors(m.ld_sectors_per_request)))
        .collect::<Option<Vec<String>>>();
    let model = match loads {
        Some(l) => {
            let dram = |m: &Measurement| m.model.as_ref().map_or(0, |m| m.dram_read_bytes + m.dram_write_bytes);
            let same = if near(dram(last), dram(naive)) && contradicted_dram(last, naive).is_none() {
                "; the same DRAM bytes"
            } else {
                ""
            };
            format!("{} load sectors a request{same}", l.join(" → "))
        }
        None => "no model counts for these runs".into(),
    };
    Some(SummaryRow {
        lesson: Matmul::NAME,
        change: names.join(" → "),
        ratios: vec![q],
        cost: format!("{} TFLOP/s: {} than naive", rates.join(" → "), cost(q)),
        model,
        pairs: vec![(last.run.clone(), naive.run.clone())],
        why: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::{cost, explained, sectors};

    #[test]
    fn a_ratio_is_explained_within_a_quarter_and_in_its_direction() {
        assert!(explained(1.3, 1.2) && explained(0.5, 0.45) && explained(1.01, 0.99));
        assert!(!explained(1.6, 1.2), "too far");
        assert!(!explained(1.1, 0.95), "the wrong way");
        assert!(!explained(1.0001, 1.036), "a limit that does not move");
        assert!(!explained(1.05, 1.02), "a change where none was measured");
    }

    #[test]
    fn costs_are_positive_words() {
        assert_eq!(cost(1.035), "3.5% slower");
        assert_eq!(cost(2.5), "2.50× slower");
        assert_eq!(cost(1.0 / 1.2), "20.0% faster");
        assert_eq!(cost(0.1), "10.00× faster");
        assert_eq!(cost(0.0), "n/a");
        assert_eq!(cost(f64::NAN), "n/a");
    }

    #[test]
    fn sectors_are_whole_where_whole() {
        assert_eq!(sectors(4.0), "4");
        assert_eq!(sectors(8.999991), "9");
        assert_eq!(sectors(8.499993), "8.5");
    }
}
