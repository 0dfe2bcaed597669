//! The SVG plots: sweeps as line charts in the units that show each lesson (offsets against offset
//! 0 with the model's sectors per request on a second axis, strides on a log axis with the model's
//! useful-bytes fraction, bank time against the model's wavefronts, matmul TFLOP/s against size
//! beside cuBLAS), per-method comparisons as horizontal bar charts in registry order.
//!
//! Plots are drawn into strings (plotters' SVG backend) and only then written by
//! [`super::render`], so a drawing error never leaves a half-written file, and a plot whose runs
//! are absent is simply not produced. Text is emitted as SVG `<text>` elements rendered by the
//! viewer, so no font library is needed at build or run time.
use std::error::Error;
use std::io;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::cost::{CUBLAS, Curve, Point as CostPoint, cublas_at, curves};
use super::format::{gbps, label, tflops};
use super::model::{Measurement, Plot, Report, name_of};
use super::readings::{bank_fit, matmul_side};
use super::warp::bank_wavefronts;
use crate::access_order::AccessOrder;
use crate::bank::Bank;
use crate::coalescing::Coalescing;
use crate::distance::Distance;
use crate::family::Family;
use crate::layouts::Layouts;
use crate::reduce::Reduce as ReduceRun;
use crate::sweep::entry;
use crate::transpose::Transpose as TransposeRun;
use coalesce::access_order::Order;
use coalesce::histogram::Method as Histogram;
use coalesce::matmul::Method as Matmul;

/// Every plot file [`plots`] can produce, so [`super::render`] can remove stale ones.
pub const PLOT_FILES: &[&str] = &[
    "coalescing_offset.svg",
    "coalescing_stride.svg",
    "access_order.svg",
    "layouts.svg",
    "transpose.svg",
    "bank_stride.svg",
    "reduce.svg",
    "histogram.svg",
    "matmul.svg",
    "matmul_loads.svg",
    "matmul_size.svg",
    "distance.svg",
    "time_model.svg",
];

/// Every cost-curve plot file [`plots`] can produce (family `sweep`): per entry point, time per
/// call and bandwidth (or TFLOP/s) against size.
pub const SWEEP_PLOT_FILES: &[&str] = &[
    "cost_copy_time.svg",
    "cost_copy_rate.svg",
    "cost_sum_time.svg",
    "cost_sum_rate.svg",
    "cost_transpose_time.svg",
    "cost_transpose_rate.svg",
    "cost_transpose_1x4_time.svg",
    "cost_transpose_1x4_rate.svg",
    "cost_matmul_time.svg",
    "cost_matmul_rate.svg",
];

type DrawResult<T> = Result<T, Box<dyn Error + Send + Sync>>;

/// Every plot whose runs are present in `report`, in [`PLOT_FILES`] order.
pub fn plots(report: &Report) -> io::Result<Vec<Plot>> {
    let mut out = Vec::new();
    for (file, family, chart) in charts(report) {
        let Some(chart) = chart else { continue };
        let svg = chart.draw().map_err(|e| io::Error::other(format!("drawing {file}: {e}")))?;
        out.push(Plot { file, family, title: chart.title().to_string(), svg });
    }
    Ok(out)
}

/// `(file, family, chart)` of every plot, `None` where its runs are missing from `report`.
fn charts(report: &Report) -> Vec<(&'static str, &'static str, Option<Chart>)> {
    let specs = [
        ("coalescing_offset.svg", Coalescing::NAME, coalescing_offset(report)),
        ("coalescing_stride.svg", Coalescing::NAME, coalescing_stride(report)),
        ("access_order.svg", AccessOrder::NAME, access_order(report)),
        ("layouts.svg", Layouts::NAME, percent_bars::<Layouts>(report, "layouts: % of memcpy per layout (float3)")),
        (
            "transpose.svg",
            TransposeRun::NAME,
            grouped_bars::<TransposeRun>(report, "transpose: bandwidth per method and shape"),
        ),
        ("bank_stride.svg", Bank::NAME, bank_stride(report)),
        ("reduce.svg", ReduceRun::NAME, reduce(report)),
        (
            "histogram.svg",
            Histogram::NAME,
            grouped_bars::<Histogram>(report, "histogram: bandwidth per method and input"),
        ),
        ("matmul.svg", Matmul::NAME, matmul(report)),
        ("matmul_loads.svg", Matmul::NAME, matmul_loads(report)),
        ("matmul_size.svg", Matmul::NAME, matmul_size(report)),
        (
            "distance.svg",
            Distance::NAME,
            percent_bars::<Distance>(report, "distance: % of memcpy per layout and access"),
        ),
        ("time_model.svg", "time", time_model(report)),
    ];
    let mut specs: Vec<(&'static str, &'static str, Option<Chart>)> = specs.into();
    for c in curves(report) {
        let (time, rate) = (format!("cost_{}_time.svg", c.entry), format!("cost_{}_rate.svg", c.entry));
        // Curves of entries this renderer has no file name for are tabled, not plotted.
        let (Some(time), Some(rate)) =
            (SWEEP_PLOT_FILES.iter().find(|f| **f == time), SWEEP_PLOT_FILES.iter().find(|f| **f == rate))
        else {
            continue;
        };
        specs.push((time, "sweep", Some(cost_time(&c))));
        specs.push((rate, "sweep", Some(cost_rate(&c))));
    }
    specs
}

/// How a series is drawn.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    /// A line through dots at the points.
    Line,
    /// Dots only (measurements that share an x, in no order along it).
    Dots,
    /// A line only (a fit).
    Plain,
}

/// A named series of (x, y) points.
struct Series {
    label: String,
    points: Vec<(f64, f64)>,
    style: Style,
}

fn series(label: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
    Series { label: label.into(), points, style: Style::Line }
}

/// Series drawn against a second value axis on the right.
struct Secondary {
    desc: String,
    range: (f64, f64),
    series: Vec<Series>,
}

/// A line chart: sweeps against their parameter.
struct Lines {
    title: String,
    x_desc: &'static str,
    y_desc: String,
    series: Vec<Series>,
    /// The value axis' range, where the data's own (from 0) would hide the lesson.
    y_range: Option<(f64, f64)>,
    secondary: Option<Secondary>,
    /// A horizontal line across the whole x range (the memcpy ceiling), with its legend label.
    ceiling: Option<(String, f64)>,
    /// x holds log2 of the parameter; axis labels show the parameter itself.
    log2_x: bool,
    /// With `log2_x`: labels are `2^k` rather than the parameter.
    x_exponents: bool,
    /// y holds log10 of the value; axis labels show the value itself, at powers of ten.
    log10_y: bool,
    /// x likewise.
    log10_x: bool,
}

/// One bar of a bar chart.
struct Bar {
    name: String,
    value: f64,
    /// Index into [`Bars::groups`]: bars of one group share a colour and a legend entry.
    group: usize,
}

/// A horizontal bar chart: one bar per method, top to bottom in registry order.
struct Bars {
    title: String,
    value_desc: &'static str,
    groups: Vec<String>,
    bars: Vec<Bar>,
    format: fn(f64) -> String,
    /// Vertical reference lines (memcpy, or 100%; cuBLAS and the FP32 peak), each with its
    /// legend label.
    references: Vec<(String, f64)>,
}

enum Chart {
    Lines(Lines),
    Bars(Bars),
}

impl Chart {
    fn title(&self) -> &str {
        match self {
            Chart::Lines(c) => &c.title,
            Chart::Bars(c) => &c.title,
        }
    }

    fn draw(&self) -> DrawResult<String> {
        match self {
            Chart::Lines(c) => draw_lines(c),
            Chart::Bars(c) => draw_bars(c),
        }
    }
}

/// Series colours, distinguishable in print and for the common colour-vision deficiencies: the
/// eight of Okabe–Ito (yellow darkened to read on white), then two of Tol's muted scheme, so
/// every chart of the report (at most ten series) gives each its own.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(230, 159, 0),
    RGBColor(180, 160, 20),
    RGBColor(136, 34, 85),
    RGBColor(51, 34, 136),
];
const REFERENCE: RGBColor = RGBColor(110, 110, 110);
const FONT: &str = "sans-serif";

fn memcpy_label(r: &Report) -> (String, f64) {
    (format!("memcpy ({} GB/s)", gbps(r.memcpy.gbps())), r.memcpy.gbps())
}

/// `y(run)` against the swept parameter for each of the variants of family `F` named `variants`
/// that has runs.
fn sweep_series<F: Family>(
    r: &Report,
    variants: &[&str],
    x: fn(u32) -> f64,
    y: impl Fn(&Measurement) -> f64,
) -> Vec<Series> {
    variants
        .iter()
        .map(|v| {
            // A zero time has no finite value to plot; the table shows it as n/a.
            let points =
                r.sweep(F::NAME, v).into_iter().map(|(p, m)| (x(p), y(m))).filter(|(_, y)| y.is_finite()).collect();
            series(format!("{}/{v}", F::NAME), points)
        })
        .filter(|s| !s.points.is_empty())
        .collect()
}

/// The registry's names of `variants`, those it has.
fn names<F: Family + PartialEq>(variants: &[F]) -> Vec<&'static str> {
    variants.iter().filter_map(|&v| name_of(v)).collect()
}

/// GB/s against the swept parameter for each of `variants` that has runs.
fn gbps_series<F: Family + PartialEq>(r: &Report, variants: &[F], x: fn(u32) -> f64) -> Vec<Series> {
    sweep_series::<F>(r, &names(variants), x, Measurement::gbps)
}

fn lines(title: &str, x_desc: &'static str, y_desc: &str, series: Vec<Series>) -> Lines {
    Lines {
        title: title.into(),
        x_desc,
        y_desc: y_desc.into(),
        series,
        y_range: None,
        secondary: None,
        ceiling: None,
        log2_x: false,
        x_exponents: false,
        log10_y: false,
        log10_x: false,
    }
}

/// A value range around `values` (and `anchor`) that shows differences of a few percent: padded,
/// whole units at the ends, and from 0 only when the data come near it.
fn tight_range(values: impl Iterator<Item = f64>, anchor: f64) -> (f64, f64) {
    let (lo, hi) = values.filter(|v| v.is_finite()).fold((anchor, anchor), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let pad = ((hi - lo) * 0.15).max(0.5);
    let (y0, y1) = ((lo - pad).floor(), (hi + pad).ceil());
    if y0 <= 0.25 * y1 { (0.0, y1) } else { (y0, y1) }
}

/// Each offset's bandwidth as a percentage of the plain loads' at offset 0, on an axis tight
/// enough to show a 3% step, with the model's sectors per request on the right: the step in time
/// sits where the sectors go from 4 to 5.
fn coalescing_offset(r: &Report) -> Option<Chart> {
    let variants = [Coalescing::Offset, Coalescing::OffsetCg];
    let base_of = |v| r.at(v, 0).map(Measurement::gbps);
    let (base_variant, base) = variants.iter().find_map(|&v| Some((v, base_of(v)?)))?;
    let measured = sweep_series::<Coalescing>(r, &names(&variants), f64::from, |m| 100.0 * m.gbps() / base);
    if measured.is_empty() {
        return None;
    }
    let (y0, y1) = tight_range(measured.iter().flat_map(|s| s.points.iter().map(|p| p.1)), 100.0);
    let from = if y0 > 0.0 { format!(", axis from {y0:.0}%") } else { String::new() };
    let kind = if base_variant == Coalescing::Offset { "plain loads" } else { "L2-only loads" };
    let base_name = name_of(base_variant)?;
    let sectors: Vec<(f64, f64)> = r
        .sweep_of(base_variant)
        .into_iter()
        .filter_map(|(p, m)| Some((f64::from(p), m.model.as_ref()?.ld_sectors_per_request)))
        .collect();
    let secondary = (!sectors.is_empty()).then(|| {
        let top = sectors.iter().map(|p| p.1).fold(0.0, f64::max).ceil() + 1.0;
        Secondary {
            desc: "sectors per load request (model)".into(),
            range: (0.0, top),
            series: vec![series(format!("sectors per request, {}/{base_name} (model)", Coalescing::NAME), sectors)],
        }
    });
    Some(Chart::Lines(Lines {
        y_range: Some((y0, y1)),
        secondary,
        ..lines(
            "coalescing: bandwidth vs start offset, against offset 0",
            "offset (floats)",
            &format!("% of {kind} at offset 0{from}"),
            measured,
        )
    }))
}

/// Bandwidth against stride on a log axis, as a percentage of stride 1's, beside the model's
/// useful-bytes fraction: the 4 bytes a lane asks for over the 32-byte sectors a request moves
/// per lane (4 / sectors per request for these 4-byte loads).
fn coalescing_stride(r: &Report) -> Option<Chart> {
    let sweep = r.sweep_of(Coalescing::Stride);
    let unit = sweep.iter().find(|(s, _)| *s == 1)?.1.gbps();
    let log2 = |s: u32| f64::from(s.max(1)).log2();
    let mut all = vec![series(
        format!("{}/{}, % of stride 1", Coalescing::NAME, name_of(Coalescing::Stride)?),
        sweep.iter().map(|(s, m)| (log2(*s), 100.0 * m.gbps() / unit)).filter(|p| p.1.is_finite()).collect(),
    )];
    let useful: Vec<(f64, f64)> = sweep
        .iter()
        .filter_map(|(s, m)| Some((log2(*s), m.model.as_ref()?.ld_sectors_per_request)))
        .filter(|(_, spr)| *spr > 0.0)
        .map(|(x, spr)| (x, 100.0 * 4.0 / spr))
        .collect();
    if !useful.is_empty() {
        all.push(series("useful bytes / bytes moved (model)", useful));
    }
    Some(Chart::Lines(Lines {
        log2_x: true,
        y_range: Some((0.0, 110.0)),
        ..lines(
            "coalescing: stride against stride 1, and what the model moves",
            "stride (floats, log2 scale)",
            "% (of stride 1's GB/s; of the bytes moved)",
            all,
        )
    }))
}

fn access_order(r: &Report) -> Option<Chart> {
    let orders = [AccessOrder::OneD(Order::Chunked), AccessOrder::OneD(Order::Interleaved)];
    let series = gbps_series(r, &orders, |p| f64::from(p.max(1)).log2());
    (!series.is_empty()).then(|| {
        Chart::Lines(Lines {
            ceiling: Some(memcpy_label(r)),
            log2_x: true,
            ..lines(
                "access_order: bandwidth vs elements per thread",
                "elements per thread (log2 scale)",
                "GB/s",
                series,
            )
        })
    })
}

/// Measured time against the model's wavefronts a warp load takes, for the stride sweep and the
/// tile reads, with the least-squares line of the stride sweep's times on its wavefronts: where
/// the points sit on the line, the wavefronts explain the time.
fn bank_stride(r: &Report) -> Option<Chart> {
    let point = |m: &Measurement| Some((bank_wavefronts(m)? as f64, m.median_us));
    let strides: Vec<(f64, f64)> = r.sweep_of(Bank::Stride).into_iter().filter_map(|(_, m)| point(m)).collect();
    let tiles: Vec<(f64, f64)> = r.runs_of::<Bank>().filter(|m| m.param.is_none()).filter_map(point).collect();
    let mut all = Vec::new();
    if !strides.is_empty() {
        let label = format!("{}/{} (one dot a stride)", Bank::NAME, name_of(Bank::Stride)?);
        all.push(Series { style: Style::Dots, ..series(label, strides.clone()) });
    }
    if !tiles.is_empty() {
        let names: Vec<&str> =
            Bank::ROWS.iter().filter(|row| row.variant != Bank::Stride).map(|row| row.name).collect();
        all.push(Series { style: Style::Dots, ..series(format!("{}/{}", Bank::NAME, names.join(", ")), tiles) });
    }
    if let Some(fit) = bank_fit(&strides) {
        let (lo, hi) = strides.iter().fold((f64::MAX, f64::MIN), |(lo, hi), p| (lo.min(p.0), hi.max(p.0)));
        let line = vec![(lo, fit.at(lo)), (hi, fit.at(hi))];
        all.push(Series { style: Style::Plain, ..series(format!("least squares: {}", fit.describe()), line) });
    }
    (!all.is_empty()).then(|| {
        Chart::Lines(lines(
            "bank: time vs the model's wavefronts a warp load",
            "wavefronts a warp load takes (model)",
            "median µs",
            all,
        ))
    })
}

fn reduce(r: &Report) -> Option<Chart> {
    let runs: Vec<&Measurement> = r.runs_of::<ReduceRun>().collect();
    if runs.is_empty() {
        return None;
    }
    let bars = runs.iter().map(|m| Bar { name: label(m), value: m.gbps(), group: usize::from(m.on_cpu) }).collect();
    Some(Chart::Bars(Bars {
        title: "reduce: bandwidth per method".into(),
        value_desc: "GB/s",
        groups: vec!["GPU GB/s".into(), "CPU GB/s".into()],
        bars,
        format: |v| format!("{v:.0}"),
        references: vec![memcpy_label(r)],
    }))
}

/// The size of the matmul ladder: the naive kernel's, else the first matmul run's.
fn ladder_size(r: &Report) -> Option<u64> {
    let naive = r.of(Matmul::Naive).filter(|m| m.flops > 0);
    naive.map_or_else(|| r.runs_of::<Matmul>().find(|m| m.flops > 0).map(|m| m.flops), |n| Some(n.flops))
}

/// The matmul ladder: every run at the size of the naive kernel's, in registry order, in TFLOP/s,
/// with cuBLAS at that size where the record's peers timed it.
fn matmul(r: &Report) -> Option<Chart> {
    let size = ladder_size(r)?;
    let bars: Vec<Bar> = r
        .runs_of::<Matmul>()
        .filter(|m| m.flops == size)
        .map(|m| Bar { name: label(m), value: m.tflops(), group: 0 })
        .collect();
    let side = matmul_side(size).map_or(String::new(), |n| format!(" at {n}³"));
    let cublas = cublas_at(r, size).map(|c| {
        let rate = size as f64 / (c.median_us * 1e-6) / 1e12;
        (format!("cuBLAS (torch){side}: {}", tflops(rate)), rate)
    });
    // The ceiling every stage climbs towards: FMAs at the rate the FMA probe measured.
    let peak = r.params.as_ref().map(|p| {
        let rate = p.fp32_flops_per_s / 1e12;
        (format!("FP32 peak (FMA probe, this run): {}", tflops(rate)), rate)
    });
    (!bars.is_empty()).then(|| {
        Chart::Bars(Bars {
            title: format!("matmul: the lesson ladder{side}, TFLOP/s"),
            value_desc: "TFLOP/s",
            groups: vec!["FP32 TFLOP/s".into()],
            bars,
            format: |v| format!("{v:.2}"),
            references: cublas.into_iter().chain(peak).collect(),
        })
    })
}

/// TFLOP/s against the matrix side for every variant swept over `size`, with cuBLAS from the
/// record's peers over the same range of sizes.
/// Why tiling wins: the bytes of global loads each FMA of the ladder's runs asks of L1 (the
/// model's load sectors × 32 over FMAs), falling by the tile's reuse at every stage.
fn matmul_loads(r: &Report) -> Option<Chart> {
    let size = ladder_size(r)?;
    let bars: Vec<Bar> = r
        .runs_of::<Matmul>()
        .filter(|m| m.flops == size)
        .filter_map(|m| {
            let t = m.model.as_ref()?.time_inputs.as_ref()?;
            Some(Bar { name: label(m), value: t.ld_sectors as f64 * 32.0 / (m.flops as f64 / 2.0), group: 0 })
        })
        .collect();
    let side = matmul_side(size).map_or(String::new(), |n| format!(" at {n}³"));
    (!bars.is_empty()).then(|| {
        Chart::Bars(Bars {
            title: format!("matmul: global bytes each FMA asks of L1{side} (the model's sectors)"),
            value_desc: "bytes per FMA",
            groups: vec!["load bytes per FMA".into()],
            bars,
            format: |v| if v >= 0.1 { format!("{v:.2}") } else { format!("{v:.4}") },
            references: Vec::new(),
        })
    })
}

fn matmul_size(r: &Report) -> Option<Chart> {
    let variants: Vec<&str> = r
        .variants(Matmul::NAME)
        .into_iter()
        .filter(|v| r.get(Matmul::NAME, v).and_then(|m| m.param.as_ref()).is_some_and(|p| p.name == "size"))
        .collect();
    let log2 = |n: u32| f64::from(n.max(1)).log2();
    let mut all = sweep_series::<Matmul>(r, &variants, log2, Measurement::tflops);
    if all.is_empty() {
        return None;
    }
    let (lo, hi) =
        all.iter().flat_map(|s| s.points.iter()).fold((f64::MAX, f64::MIN), |(lo, hi), p| (lo.min(p.0), hi.max(p.0)));
    let cublas: Vec<(f64, f64)> = r
        .peers
        .iter()
        .flat_map(|p| &p.rows)
        .filter(|p| p.peer == CUBLAS && p.entry == entry::MATMUL && p.median_us > 0.0)
        .map(|p| ((p.n as f64).log2(), 2.0 * (p.n as f64).powi(3) / (p.median_us * 1e-6) / 1e12))
        .filter(|(x, _)| (lo..=hi).contains(x))
        .collect();
    if !cublas.is_empty() {
        all.push(series("cuBLAS (torch), same record", cublas));
    }
    Some(Chart::Lines(Lines {
        log2_x: true,
        ..lines("matmul: TFLOP/s vs size", "matrix side n of n × n × n (log2 scale)", "TFLOP/s", all)
    }))
}

/// Every run of `family` as a bar of GB/s, coloured by its parameter's value (a shape, an input),
/// with the memcpy line.
fn grouped_bars<F: Family>(r: &Report, title: &str) -> Option<Chart> {
    let runs: Vec<&Measurement> = r.runs_of::<F>().collect();
    let mut groups: Vec<(Option<u32>, String)> = Vec::new();
    for m in &runs {
        if !groups.iter().any(|(v, _)| *v == m.param_value()) {
            let name = m.param.as_ref().map_or_else(
                || "GB/s".to_string(),
                |p| format!("{}={}", p.name, m.param_label().unwrap_or_else(|| p.value.to_string())),
            );
            groups.push((m.param_value(), name));
        }
    }
    let bars = runs
        .iter()
        .map(|m| Bar {
            name: m.variant.clone(),
            value: m.gbps(),
            group: groups.iter().position(|(v, _)| *v == m.param_value()).unwrap_or(0),
        })
        .collect::<Vec<_>>();
    (!bars.is_empty()).then(|| {
        Chart::Bars(Bars {
            title: title.into(),
            value_desc: "GB/s",
            groups: groups.into_iter().map(|(_, name)| name).collect(),
            bars,
            format: |v| format!("{v:.0}"),
            references: vec![memcpy_label(r)],
        })
    })
}

/// Each run of `family` as a percentage of memcpy, with the 100% line.
fn percent_bars<F: Family>(r: &Report, title: &str) -> Option<Chart> {
    let bars: Vec<Bar> = r
        .runs_of::<F>()
        .map(|m| Bar { name: label(m), value: m.percent_of(&r.memcpy), group: usize::from(m.on_cpu) })
        .collect();
    (!bars.is_empty()).then(|| {
        Chart::Bars(Bars {
            title: title.into(),
            value_desc: "% of memcpy",
            groups: vec!["% of memcpy".into(), "% of memcpy (CPU)".into()],
            bars,
            format: |v| format!("{v:.1}%"),
            references: vec![("memcpy = 100%".into(), 100.0)],
        })
    })
}

/// The size axis of a cost curve: log2 of the elements, or of the matmul's side.
fn cost_x(c: &Curve) -> (&'static str, bool) {
    if c.flops() { ("matrix side n of n³ (log2 scale)", false) } else { ("elements (log2 scale)", true) }
}

/// One series an implementation of `c`: log2 of the size against `y` of each point (points whose
/// `y` is not finite left out).
fn cost_series(c: &Curve, y: impl Fn(&CostPoint) -> f64) -> Vec<Series> {
    c.series
        .iter()
        .map(|s| {
            series(
                s.label.clone(),
                s.points.iter().map(|p| ((p.n as f64).log2(), y(p))).filter(|(_, y)| y.is_finite()).collect(),
            )
        })
        .collect()
}

/// A vertical line between the last size whose bytes fit the L2 and the first that does not
/// (none for curves counted in flops, or with no size on one side), spanning the series' values:
/// left of it a call's data can stay in the L2 from one call to the next.
fn l2_resident_line(c: &Curve, series: &[Series], from_zero: bool) -> Option<Series> {
    if c.flops() {
        return None;
    }
    let l2 = coalesce::model::l2::DEFAULT_L2_BYTES;
    let points = || c.series.iter().flat_map(|s| &s.points);
    let inside = points().filter(|p| p.bytes <= l2).map(|p| p.n).max()?;
    let outside = points().filter(|p| p.bytes > l2).map(|p| p.n).min()?;
    let x = ((inside as f64).log2() + (outside as f64).log2()) / 2.0;
    let ys = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let (lo, hi) = ys.fold((f64::MAX, f64::MIN), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let lo = if from_zero { 0.0 } else { lo };
    (lo < hi).then(|| Series {
        label: format!("data fit the {} MiB L2 left of this line", l2 >> 20),
        points: vec![(x, lo), (x, hi)],
        style: Style::Plain,
    })
}

fn cost_time(c: &Curve) -> Chart {
    let (x_desc, x_exponents) = cost_x(c);
    let mut series = cost_series(c, |p| p.median_us.log10());
    series.extend(l2_resident_line(c, &series, false));
    Chart::Lines(Lines {
        log2_x: true,
        x_exponents,
        log10_y: true,
        ..lines(&format!("{}: time per call vs size (log-log)", c.entry), x_desc, "µs per call (log10 scale)", series)
    })
}

fn cost_rate(c: &Curve) -> Chart {
    let (x_desc, x_exponents) = cost_x(c);
    let mut series = cost_series(c, |p| p.rate());
    series.extend(l2_resident_line(c, &series, true));
    let title = format!("{}: {} vs size", c.entry, c.rate_unit());
    Chart::Lines(Lines { log2_x: true, x_exponents, ..lines(&title, x_desc, c.rate_unit(), series) })
}

/// The upper end of a value axis starting at 0: a little above the largest value, so points
/// and labels at the top are not clipped.
fn axis_top(values: impl Iterator<Item = f64>) -> f64 {
    let top = values.filter(|v| v.is_finite()).fold(0.0, f64::max);
    if top > 0.0 { top * 1.12 } else { 1.0 }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// What a legend entry shows beside its label.
#[derive(Clone, Copy)]
enum Swatch {
    Line(RGBColor),
    Box(RGBColor),
    Dot(RGBColor),
}

const LEGEND_FONT: u32 = 14;
const LEGEND_ROW: u32 = 22;
/// Swatch width plus the gap before the label, and the gap after the label.
const SWATCH: i32 = 32;
const ENTRY_GAP: i32 = 28;

/// Width of `label` in pixels: SVG text is laid out by the viewer, so this estimates it from the
/// character count (plotters' own estimate for fonts it cannot measure).
fn text_width(label: &str) -> i32 {
    (label.chars().count() as f64 * f64::from(LEGEND_FONT) * 0.55).ceil() as i32
}

/// The legend entries laid out in rows no wider than `width`: (entry index, x offset) per row.
fn legend_rows(entries: &[(String, Swatch)], width: i32) -> Vec<Vec<(usize, i32)>> {
    let mut rows: Vec<Vec<(usize, i32)>> = vec![Vec::new()];
    let mut x = 0;
    for (i, (label, _)) in entries.iter().enumerate() {
        let w = SWATCH + text_width(label);
        if x > 0 && x + w > width {
            rows.push(Vec::new());
            x = 0;
        }
        if let Some(row) = rows.last_mut() {
            row.push((i, x));
        }
        x += w + ENTRY_GAP;
    }
    rows
}

/// Clears `root`, draws `title` at its top and the legend at its bottom, and returns the area
/// left between them for the chart. The legend gets its own strip so it never hides data.
fn frame<'a>(root: &Area<'a>, title: &str, legend: &[(String, Swatch)]) -> DrawResult<Area<'a>> {
    root.fill(&WHITE)?;
    let area = root.titled(title, (FONT, 22))?;
    let (width, height) = area.dim_in_pixel();
    let rows = legend_rows(legend, width as i32 - 32);
    let strip = rows.len() as u32 * LEGEND_ROW + 12;
    let (chart, key) = area.split_vertically(height.saturating_sub(strip));
    let font = TextStyle::from((FONT, LEGEND_FONT).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    for (r, row) in rows.iter().enumerate() {
        let row_width = row.last().map_or(0, |&(i, x)| x + SWATCH + text_width(&legend[i].0));
        let left = (width as i32 - row_width) / 2;
        let y = (r as u32 * LEGEND_ROW + LEGEND_ROW / 2) as i32;
        for &(i, x) in row {
            let (label, swatch) = &legend[i];
            let x = left + x;
            match *swatch {
                Swatch::Line(c) => key.draw(&PathElement::new(vec![(x, y), (x + 24, y)], c.stroke_width(3)))?,
                Swatch::Box(c) => key.draw(&Rectangle::new([(x + 4, y - 7), (x + 20, y + 7)], c.filled()))?,
                Swatch::Dot(c) => key.draw(&Circle::new((x + 12, y), 4, c.filled()))?,
            }
            key.draw(&Text::new(label.clone(), (x + SWATCH, y), font.clone()))?;
        }
    }
    Ok(chart)
}

/// The label of log10 value `v` on a log axis: the value at whole decades, nothing between.
fn decade(v: f64) -> String {
    if v.fract() != 0.0 {
        String::new()
    } else {
        let value = 10f64.powf(v);
        if v >= 0.0 { format!("{value:.0}") } else { format!("{value}") }
    }
}

/// The time model against the measurement, log-log: one dot per run, coloured by the limit
/// the model names, and the line where they agree.
fn time_model(r: &Report) -> Option<Chart> {
    let rows = super::time::rows(r)?;
    let mut by_limit: Vec<(crate::timing::Term, Vec<(f64, f64)>)> = Vec::new();
    for row in &rows {
        let point = (row.measured_us.log10(), row.predicted_us.log10());
        match by_limit.iter_mut().find(|(t, _)| *t == row.limit) {
            Some((_, points)) => points.push(point),
            None => by_limit.push((row.limit, vec![point])),
        }
    }
    by_limit.sort_by_key(|(t, _)| *t);
    let all = rows.iter().flat_map(|r| [r.measured_us.log10(), r.predicted_us.log10()]);
    let (lo, hi) = all.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = (lo.floor(), hi.ceil().max(lo.floor() + 1.0));
    let mut series: Vec<Series> = by_limit
        .into_iter()
        .map(|(t, points)| Series { label: format!("limit: {}", t.name()), points, style: Style::Dots })
        .collect();
    series.push(Series { label: "predicted = measured".into(), points: vec![(lo, lo), (hi, hi)], style: Style::Plain });
    let band = 1.25f64.log10();
    series.push(Series {
        label: "25% off".into(),
        points: vec![(lo, lo + band), (hi - band, hi), (hi, hi - band), (lo + band, lo)],
        style: Style::Plain,
    });
    let mut c = lines(
        "time model: predicted against measured, one dot per run",
        "measured µs (log)",
        "predicted µs (log)",
        series,
    );
    (c.log10_x, c.log10_y, c.y_range) = (true, true, Some((lo, hi)));
    Some(Chart::Lines(c))
}

fn draw_lines(c: &Lines) -> DrawResult<String> {
    let secondary: &[Series] = c.secondary.as_ref().map_or(&[], |s| &s.series);
    let color = |i: usize| PALETTE[i % PALETTE.len()];
    let swatch =
        |i: usize, s: &Series| if s.style == Style::Dots { Swatch::Dot(color(i)) } else { Swatch::Line(color(i)) };
    let mut legend: Vec<(String, Swatch)> =
        c.series.iter().chain(secondary).enumerate().map(|(i, s)| (s.label.clone(), swatch(i, s))).collect();
    legend.extend(c.ceiling.iter().map(|(label, _)| (label.clone(), Swatch::Line(REFERENCE))));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (820, 500)).into_drawing_area();
        let area = frame(&root, &c.title, &legend)?;
        let xs = c.series.iter().chain(secondary).flat_map(|s| s.points.iter().map(|p| p.0));
        let (mut x0, mut x1) = xs.fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
        if x1 <= x0 {
            (x0, x1) = (x0 - 1.0, x0 + 1.0);
        }
        let ys = c.series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
        let (y0, y1) = if let Some(range) = c.y_range {
            range
        } else if c.log10_y {
            // Whole decades, at least one.
            let (lo, hi) = ys.fold((f64::MAX, f64::MIN), |(lo, hi), y| (lo.min(y), hi.max(y)));
            let (lo, hi) = if lo <= hi { (lo.floor(), hi.ceil()) } else { (0.0, 1.0) };
            (lo, if hi > lo { hi } else { lo + 1.0 })
        } else {
            (0.0, axis_top(ys.chain(c.ceiling.iter().map(|(_, y)| *y))))
        };
        let (s0, s1) = c.secondary.as_ref().map_or((0.0, 1.0), |s| s.range);
        let mut chart = ChartBuilder::on(&area)
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(72)
            .right_y_label_area_size(if c.secondary.is_some() { 72 } else { 0 })
            .build_cartesian_2d(x0..x1, y0..y1)?
            .set_secondary_coord(x0..x1, s0..s1);
        let (log2_x, x_exponents, wide, log10_x) = (c.log2_x, c.x_exponents, x1 - x0 > 12.0, c.log10_x);
        let x_label = move |v: &f64| {
            if log10_x {
                decade(*v)
            } else if !log2_x {
                format!("{v}")
            } else if v.fract() != 0.0 {
                String::new()
            } else if !x_exponents {
                format!("{}", 2f64.powf(*v))
            } else if wide && (*v as i64) % 2 != 0 {
                // Every other power where a label per power would crowd the axis.
                String::new()
            } else {
                format!("2^{v}")
            }
        };
        let log10_y = c.log10_y;
        let y_label = move |v: &f64| if !log10_y { format!("{v:.0}") } else { decade(*v) };
        let mut mesh = chart.configure_mesh();
        mesh.max_light_lines(1)
            .axis_desc_style((FONT, 15))
            .label_style((FONT, 13))
            .x_desc(c.x_desc)
            .y_desc(c.y_desc.as_str())
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label);
        if log2_x {
            // One label per power of two.
            mesh.x_labels((x1 - x0) as usize + 1);
        }
        if log10_y {
            // One label per decade.
            mesh.y_labels((y1 - y0) as usize + 1);
        }
        if log10_x {
            mesh.x_labels((x1 - x0) as usize + 1);
        }
        mesh.draw()?;
        if let Some(s) = &c.secondary {
            chart
                .configure_secondary_axes()
                .axis_desc_style((FONT, 15))
                .label_style((FONT, 13))
                .y_desc(s.desc.as_str())
                .y_label_formatter(&|v| format!("{v:.0}"))
                .draw()?;
        }
        if let Some((_, y)) = &c.ceiling {
            chart.draw_series(LineSeries::new([(x0, *y), (x1, *y)], REFERENCE.stroke_width(2)))?;
        }
        for (i, s) in c.series.iter().enumerate() {
            let color = color(i);
            if s.style != Style::Dots {
                chart.draw_series(LineSeries::new(s.points.iter().copied(), color.stroke_width(2)))?;
            }
            if s.style != Style::Plain {
                chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
            }
        }
        for (i, s) in secondary.iter().enumerate() {
            let color = color(c.series.len() + i);
            // Crosses, not dots, so the model's values read apart from the measured ones.
            chart.draw_secondary_series(LineSeries::new(s.points.iter().copied(), color.stroke_width(2)))?;
            chart.draw_secondary_series(s.points.iter().map(|&p| Cross::new(p, 4, color.stroke_width(2))))?;
        }
        root.present()?;
    }
    Ok(svg)
}

fn draw_bars(c: &Bars) -> DrawResult<String> {
    let n = c.bars.len();
    let longest = c.bars.iter().map(|b| b.name.chars().count()).max().unwrap_or(0);
    let present = |g: &usize| c.bars.iter().any(|b| b.group == *g);
    let mut legend: Vec<(String, Swatch)> = (0..c.groups.len())
        .filter(present)
        .map(|g| (c.groups[g].clone(), Swatch::Box(PALETTE[g % PALETTE.len()])))
        .collect();
    let reference_color = |i: usize| if i == 0 { REFERENCE } else { RGBColor(0, 0, 0) };
    legend.extend(
        c.references.iter().enumerate().map(|(i, (label, _))| (label.clone(), Swatch::Line(reference_color(i)))),
    );
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (820, 170 + 34 * n as u32)).into_drawing_area();
        let area = frame(&root, &c.title, &legend)?;
        // Room to the right of the longest bar for its value label.
        let top = axis_top(c.bars.iter().map(|b| b.value).chain(c.references.iter().map(|(_, v)| *v))) * 1.05;
        // Bar i sits in segment n-1-i, so registry order reads top to bottom.
        let last = n as i32 - 1;
        let mut chart = ChartBuilder::on(&area)
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(24 + 8 * longest as u32)
            .build_cartesian_2d(0.0..top, (0..last).into_segmented())?;
        let name_at = |v: &SegmentValue<i32>| match v {
            SegmentValue::CenterOf(p) => {
                usize::try_from(last - p).ok().and_then(|i| c.bars.get(i)).map_or(String::new(), |b| b.name.clone())
            }
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .disable_y_mesh()
            .max_light_lines(1)
            .axis_desc_style((FONT, 15))
            .label_style((FONT, 13))
            .x_desc(c.value_desc)
            .y_labels(n + 1)
            .y_label_formatter(&name_at)
            .x_label_formatter(&|v| format!("{v:.0}"))
            .draw()?;
        for (i, (_, x)) in c.references.iter().enumerate() {
            let line = [(*x, SegmentValue::Exact(0)), (*x, SegmentValue::Last)];
            chart.draw_series(LineSeries::new(line, reference_color(i).stroke_width(2)))?;
        }
        let at = |i: usize| last - i as i32;
        // A run with a zero time has no meaningful bar: it keeps its row, labelled n/a.
        let drawn = || c.bars.iter().enumerate().filter(|(_, b)| b.value.is_finite());
        chart.draw_series(drawn().map(|(i, b)| {
            let color = PALETTE[b.group % PALETTE.len()];
            let mut bar = Rectangle::new(
                [(0.0, SegmentValue::Exact(at(i))), (b.value, SegmentValue::Exact(at(i) + 1))],
                color.filled(),
            );
            bar.set_margin(5, 5, 0, 0);
            bar
        }))?;
        let font = TextStyle::from((FONT, 13).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
        chart.draw_series(c.bars.iter().enumerate().map(|(i, b)| {
            let (x, text) = if b.value.is_finite() { (b.value, (c.format)(b.value)) } else { (0.0, "n/a".into()) };
            EmptyElement::at((x, SegmentValue::CenterOf(at(i)))) + Text::new(text, (6, 0), font.clone())
        }))?;
        root.present()?;
    }
    Ok(svg)
}

#[cfg(test)]
mod colour_tests {
    use super::*;

    #[test]
    fn every_series_of_a_chart_has_a_colour_of_its_own() {
        // The H100 record, every plot of it (with its peers: cuBLAS beside the matmul stages).
        let report = Report::from_json(include_str!("../../../results/report.json")).expect("the record parses");
        let mut seen = 0;
        for (file, _, chart) in charts(&report) {
            let coloured = match chart {
                Some(Chart::Lines(c)) => c.series.len() + c.secondary.as_ref().map_or(0, |s| s.series.len()),
                Some(Chart::Bars(c)) => c.groups.len(),
                None => continue,
            };
            seen += 1;
            assert!(coloured <= PALETTE.len(), "{file}: {coloured} series for {} colours", PALETTE.len());
        }
        assert!(seen >= 10, "{seen} charts drawn");
        let mut distinct = PALETTE.to_vec();
        distinct.sort_by_key(|c| (c.0, c.1, c.2));
        distinct.dedup();
        assert_eq!(distinct.len(), PALETTE.len(), "the palette repeats a colour");
    }
}
