//! The time model's section: the device parameters the probes measured in this run, every run's
//! predicted time beside its measured one with the limit that sets it, and how far off the
//! model is ([`crate::timing`]).
use std::fmt::Write;

use super::format::{pct, ratio, us};
use super::model::Report;
use crate::family::Family;
use crate::peer::Peer;
use crate::timing::{Predicted, RunCounts, Term, predict};

/// Families the model leaves out, and why: their time is made where it does not look.
const OUTSIDE: &[(&str, &str)] = &[(Peer::NAME, "NVLink: the peer's memory, which the model does not follow")];

/// One run with a prediction.
#[derive(Debug, Clone)]
pub struct Row {
    pub run: String,
    pub measured_us: f64,
    pub predicted_us: f64,
    pub limit: Term,
    /// The terms, largest first (microseconds).
    pub terms: Vec<(Term, f64)>,
}

impl Row {
    /// Predicted over measured.
    pub fn ratio(&self) -> f64 {
        self.predicted_us / self.measured_us
    }
}

/// Every GPU run of `r` the time model predicts (those with the probes' parameters and the
/// replay's counts, families outside the model left out), in report order; `None` for a record
/// without the probes.
pub fn rows(r: &Report) -> Option<Vec<Row>> {
    let params = r.params.as_ref()?;
    let memcpy_bps = r.memcpy.bytes as f64 / (r.memcpy.median_us * 1e-6);
    let rows: Vec<Row> = r
        .runs
        .iter()
        .filter(|m| !m.on_cpu && !OUTSIDE.iter().any(|(f, _)| *f == m.family))
        .filter_map(|m| {
            let (counts, shape) = m.model.as_ref()?.time_counts()?;
            let variant = crate::registry::find(&m.family, &m.variant);
            let sass = variant.and_then(|v| v.kernels().first()).and_then(|k| crate::timing::digest(k));
            let run = RunCounts { counts: &counts, shape: &shape, flops: m.flops, sass };
            let Predicted { seconds, limit, terms, .. } = predict(run, params, memcpy_bps, r.device.multiprocessors);
            Some(Row {
                run: m.run.clone(),
                measured_us: m.median_us,
                predicted_us: seconds * 1e6,
                limit,
                terms: terms.into_iter().map(|(t, s)| (t, s * 1e6)).collect(),
            })
        })
        .collect();
    (!rows.is_empty()).then_some(rows)
}

/// How the predictions fall against the measurements.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Accuracy {
    pub runs: usize,
    /// Median of |predicted / measured - 1|.
    pub median_error: f64,
    /// Share of runs within 25% and within 10%.
    pub within_25: f64,
    pub within_10: f64,
}

/// The accuracy over `rows` (`None` without rows).
pub fn accuracy<'a>(rows: impl IntoIterator<Item = &'a Row>) -> Option<Accuracy> {
    let mut errors: Vec<f64> = rows.into_iter().map(|r| (r.ratio() - 1.0).abs()).collect();
    if errors.is_empty() {
        return None;
    }
    errors.sort_by(f64::total_cmp);
    let n = errors.len();
    let median = if n % 2 == 1 { errors[n / 2] } else { (errors[n / 2 - 1] + errors[n / 2]) / 2.0 };
    let share = |limit: f64| errors.iter().filter(|&&e| e <= limit).count() as f64 / n as f64;
    Some(Accuracy { runs: n, median_error: median, within_25: share(0.25), within_10: share(0.10) })
}

/// The "Time model" section (nothing for a record without the probes).
pub fn section(md: &mut String, r: &Report, plots: &[super::model::Plot]) {
    let (Some(params), Some(rows)) = (r.params.as_ref(), rows(r)) else { return };
    let Some(all) = accuracy(&rows) else { return };
    md.push_str(
        "\n## Time model\n\nEach run's time predicted from the model's counts of it and the device parameters below, \
         which the probes (`kernels-gpu/src/probe.rs`) measured in this same run: nothing is fitted to a lesson, \
         and every run gets the same parameters. A launch costs an empty launch plus the largest of its limits \
         (`benches/src/timing.rs` says how each is worked out).\n\n",
    );
    let _ = writeln!(
        md,
        "**{} runs: median error {}, {} within 25%, {} within 10%** (targets: a median of at most 10%, 90% within \
         25%).\n",
        all.runs,
        pct(100.0 * all.median_error),
        pct(100.0 * all.within_25),
        pct(100.0 * all.within_10)
    );
    let issue = |t: Term| matches!(t, Term::Fp32 | Term::Issue);
    if let Some(memory) = accuracy(rows.iter().filter(|r| !issue(r.limit))) {
        let _ = writeln!(
            md,
            "Without the {} runs whose limit is instruction issue (the register-blocked matmuls, the conflict-free \
             bank strides: issue is counted from the SASS of each kernel's hot loop, and stalls on dependences and \
             barriers are not): {} runs, median error {}, {} within 25%.\n",
            all.runs - memory.runs,
            memory.runs,
            pct(100.0 * memory.median_error),
            pct(100.0 * memory.within_25)
        );
    }
    let outside: Vec<String> = OUTSIDE
        .iter()
        .filter(|(f, _)| r.runs.iter().any(|m| m.family == *f))
        .map(|(f, why)| format!("`{f}` ({why})"))
        .collect();
    if !outside.is_empty() {
        let _ = writeln!(md, "Left out: {}.\n", outside.join(", "));
    }
    md.push_str("| limit | runs | median error | within 25% |\n|---|--:|--:|--:|\n");
    let mut limits: Vec<Term> = rows.iter().map(|r| r.limit).collect();
    limits.sort();
    limits.dedup();
    for t in limits {
        let of: Vec<&Row> = rows.iter().filter(|r| r.limit == t).collect();
        if let Some(a) = accuracy(of.iter().copied()) {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} |",
                t.name(),
                a.runs,
                pct(100.0 * a.median_error),
                pct(100.0 * a.within_25)
            );
        }
    }
    md.push_str(&params_table(params));
    for p in plots.iter().filter(|p| p.family == "time") {
        let _ = writeln!(md, "\n![{}]({})\n", p.title, p.file);
    }
    md.push_str(
        "\n| run | measured µs | predicted µs | predicted / measured | limit | next limit |\n|---|--:|--:|--:|---|---|\n",
    );
    for row in &rows {
        let next = row.terms.get(1).map_or(String::new(), |(t, s)| format!("{} ({} µs)", t.name(), us(*s)));
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            row.run,
            us(row.measured_us),
            us(row.predicted_us),
            ratio(row.ratio()),
            row.limit.name(),
            next
        );
    }
}

fn params_table(p: &crate::calibrate::DeviceParams) -> String {
    let curve = |c: &[(f64, f64)]| {
        c.iter().map(|(x, y)| format!("{:.2} MB: {:.0}", x / 1e6, y / 1e9)).collect::<Vec<_>>().join(", ")
    };
    let rates = |c: &[(u32, f64)]| c.iter().map(|(a, y)| format!("{a}: {:.2}", y / 1e9)).collect::<Vec<_>>().join(", ");
    let rows = [
        ("DRAM read, 512-byte requests (GB/s at MB in flight)", curve(&p.dram_read_bps)),
        ("DRAM read, 128-byte requests", curve(&p.dram_read_words_bps)),
        ("L2 read, 512-byte requests", curve(&p.l2_read_bps)),
        ("L2 read, 128-byte requests", curve(&p.l2_read_words_bps)),
        ("DRAM write", format!("{:.0} GB/s", p.dram_write_bps / 1e9)),
        ("shared memory", format!("{:.1} G wavefronts/s", p.shared_wavefronts_per_s / 1e9)),
        ("global atomics (G/s at addresses)", rates(&p.global_atomics_per_s)),
        ("FP32", format!("{:.1} TFLOP/s", p.fp32_flops_per_s / 1e12)),
        (
            "latency, one dependent load",
            format!("DRAM {:.0} ns, L2 {:.0} ns", p.dram_latency_s * 1e9, p.l2_latency_s * 1e9),
        ),
        ("a launch", format!("{:.2} µs", p.launch_s * 1e6)),
        (
            "blocks started (G/s at warps a block)",
            if p.block_starts_per_s.is_empty() {
                "not measured (a record from before the probe): no dispatch limit".to_string()
            } else {
                p.block_starts_per_s.iter().map(|(w, r)| format!("{w}: {:.2}", r / 1e9)).collect::<Vec<_>>().join(", ")
            },
        ),
    ];
    let mut s = String::from("\n| device parameter (probes, this run) | value |\n|---|---|\n");
    for (k, v) in rows {
        let _ = writeln!(s, "| {k} | {v} |");
    }
    s
}
