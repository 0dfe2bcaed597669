//! Nsight Compute's counters beside the model's: parses the bundle's `ncu.csv` (a `# RUN_ID`
//! line before each run's `ncu --csv` rows) and renders the comparison table BENCHMARKS.md
//! carries (`cargo xtask ncu-table CSV`).
use std::collections::BTreeMap;
use std::fmt::Write;

use coalesce::model::Counts;

use crate::predict::thousands;

/// How far a counter may be from the model before its row is marked: 5 %, and 10 % for DRAM
/// bytes (the model's L2 keeps and evicts lines by rules of its own, not the hardware's).
pub const TOLERANCE: f64 = 0.05;
/// See [`TOLERANCE`].
pub const DRAM_TOLERANCE: f64 = 0.10;

/// The ncu metric each model quantity is compared with (`None`: a ratio of two of them).
pub const METRICS: [(&str, Option<&str>); 12] = [
    ("ld_requests", Some("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")),
    ("ld_sectors", Some("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")),
    ("st_requests", Some("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum")),
    ("st_sectors", Some("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum")),
    ("ld_sectors_per_request", None),
    ("st_sectors_per_request", None),
    ("shared_ld_wavefronts", Some("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum")),
    ("shared_ld_bank_conflicts", Some("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")),
    ("shared_st_wavefronts", Some("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum")),
    ("shared_st_bank_conflicts", Some("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")),
    ("dram_read_bytes", Some("dram__bytes_read.sum")),
    ("dram_write_bytes", Some("dram__bytes_write.sum")),
];

/// Shared-memory wavefronts as the SASS instructions account for them (the Source page's
/// count), without the L1 data-bank arbitration the hardware counters above also include; the
/// bundle collects them where ncu has them.
pub const SASS_WAVEFRONTS: [(&str, &str); 2] = [
    ("shared_ld_wavefronts", "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"),
    ("shared_st_wavefronts", "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum"),
];

/// The counters of one profiled run.
#[derive(Debug, Clone, PartialEq)]
pub struct Profiled {
    /// The registry's run id, from the `# RUN_ID` line.
    pub run: String,
    /// The kernel ncu caught (`a+b` when it caught launches of two).
    pub kernel: String,
    /// Metric name to value, summed over the launches ncu caught.
    pub metrics: BTreeMap<String, f64>,
}

/// Splits one CSV line into fields (double quotes, `""` inside them for a quote).
fn fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let (mut quoted, mut chars) = (false, line.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut field)),
            (c, _) => field.push(c),
        }
    }
    out.push(field);
    out
}

/// `"268,463,872"` as 268463872 (ncu writes thousands separators).
fn number(text: &str) -> Option<f64> {
    text.replace(',', "").trim().parse().ok()
}

/// Parses the bundle's `ncu.csv`. Lines that are neither a `# RUN_ID`, a header nor a metric row
/// (the step's own notes, e.g. "ncu failed for RUN") are skipped.
pub fn parse(csv: &str) -> Vec<Profiled> {
    let mut out: Vec<Profiled> = Vec::new();
    let mut columns: Option<(usize, usize, usize)> = None;
    for line in csv.lines() {
        if let Some(run) = line.strip_prefix("# ") {
            out.push(Profiled { run: run.trim().to_string(), kernel: String::new(), metrics: BTreeMap::new() });
            continue;
        }
        if !line.starts_with('"') {
            continue;
        }
        let f = fields(line);
        if f.first().map(String::as_str) == Some("ID") {
            let at = |name: &str| f.iter().position(|h| h == name);
            columns = at("Kernel Name").zip(at("Metric Name")).zip(at("Metric Value")).map(|((k, n), v)| (k, n, v));
            continue;
        }
        let (Some((k, n, v)), Some(current)) = (columns, out.last_mut()) else { continue };
        if let (Some(kernel), Some(name), Some(value)) = (f.get(k), f.get(n), f.get(v).and_then(|v| number(v))) {
            if !current.kernel.split('+').any(|seen| seen == kernel) {
                if !current.kernel.is_empty() {
                    current.kernel.push('+');
                }
                current.kernel.push_str(kernel);
            }
            // One row per launch and metric: a run of several launches sums them.
            *current.metrics.entry(name.clone()).or_insert(0.0) += value;
        }
    }
    out
}

/// Parses the bundle's `ncu.csv` as [`parse`] does, but refuses text that is not one: no
/// `"ID",...,"Kernel Name",...,"Metric Name","Metric Value"` header line (`ncu --csv`'s), or no
/// metric row under a `# RUN_ID` line. The error is one line, for people.
pub fn parse_checked(csv: &str) -> Result<Vec<Profiled>, String> {
    let header = csv.lines().filter(|l| l.starts_with('"')).map(fields).any(|f| {
        let has = |name: &str| f.iter().any(|h| h == name);
        f.first().map(String::as_str) == Some("ID") && has("Kernel Name") && has("Metric Name") && has("Metric Value")
    });
    if !header {
        return Err("not an ncu CSV: no \"ID\",...,\"Kernel Name\",...,\"Metric Name\",\"Metric Value\" header \
                    line (expected the bundle's ncu.csv, from `run.sh ncu`)"
            .into());
    }
    let profiled = parse(csv);
    if profiled.iter().all(|p| p.metrics.is_empty()) {
        return Err(
            "an ncu CSV without metric rows under a `# RUN_ID` line (did every ncu run fail? see ncu.err)".into()
        );
    }
    Ok(profiled)
}

/// One quantity of one run, predicted and measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub run: String,
    pub quantity: &'static str,
    pub predicted: f64,
    pub measured: f64,
    /// The SASS-attributed wavefronts, for the shared-memory wavefront rows when ncu had them.
    pub sass: Option<f64>,
}

impl Row {
    /// `measured / predicted` (infinite when only the hardware counted something).
    pub fn ratio(&self) -> f64 {
        if self.predicted == 0.0 {
            if self.measured == 0.0 { 1.0 } else { f64::INFINITY }
        } else {
            self.measured / self.predicted
        }
    }

    /// The tolerance of this quantity.
    pub fn tolerance(&self) -> f64 {
        if self.quantity.starts_with("dram_") { DRAM_TOLERANCE } else { TOLERANCE }
    }

    /// Whether the counter is further from the model than the tolerance.
    pub fn off(&self) -> bool {
        (self.ratio() - 1.0).abs() > self.tolerance()
    }
}

/// The rows of every profiled run the model predicts (`predicted` by run id), quantities both
/// sides count as 0 left out. Runs without a prediction are returned apart.
pub fn compare(profiled: &[Profiled], predicted: &BTreeMap<String, Counts>) -> (Vec<Row>, Vec<String>) {
    let (mut rows, mut missing) = (Vec::new(), Vec::new());
    for p in profiled {
        let Some(counts) = predicted.get(&p.run) else {
            missing.push(p.run.clone());
            continue;
        };
        let get = |metric: &str| p.metrics.get(metric).copied();
        let per = |sectors: &str, requests: &str| match (get(sectors), get(requests)) {
            (Some(s), Some(r)) if r > 0.0 => Some(s / r),
            (Some(_), Some(_)) => Some(0.0),
            _ => None,
        };
        for ((quantity, predicted), (name, metric)) in counts.fields().into_iter().zip(METRICS) {
            debug_assert_eq!(quantity, name);
            let measured = match (metric, quantity) {
                (Some(metric), _) => get(metric),
                (None, "ld_sectors_per_request") => per(METRICS[1].1.unwrap_or(""), METRICS[0].1.unwrap_or("")),
                (None, _) => per(METRICS[3].1.unwrap_or(""), METRICS[2].1.unwrap_or("")),
            };
            let Some(measured) = measured else { continue };
            if predicted == 0.0 && measured == 0.0 {
                continue;
            }
            let sass = SASS_WAVEFRONTS.iter().find(|(q, _)| *q == quantity).and_then(|(_, m)| get(m));
            rows.push(Row { run: p.run.clone(), quantity, predicted, measured, sass });
        }
    }
    (rows, missing)
}

fn value(quantity: &str, v: f64) -> String {
    if quantity.ends_with("_per_request") { format!("{v:.2}") } else { thousands(v.round() as u64) }
}

/// The comparison as a markdown table (only the marked rows with `only_off`), with a closing
/// line that counts them.
pub fn markdown(rows: &[Row], only_off: bool) -> String {
    let mut out = String::from("| run | quantity | model | ncu | ncu / model | |\n|---|---|--:|--:|--:|---|\n");
    let off = rows.iter().filter(|r| r.off()).count();
    for r in rows.iter().filter(|r| !only_off || r.off()) {
        let ratio = if r.ratio().is_finite() { format!("{:.3}", r.ratio()) } else { "∞".to_string() };
        let mut note = if r.off() { format!("**off** (> {:.0} %)", 100.0 * r.tolerance()) } else { String::new() };
        if let Some(sass) = r.sass {
            let _ =
                write!(note, "{}SASS-attributed: {}", if note.is_empty() { "" } else { "; " }, value(r.quantity, sass));
        }
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            r.run,
            r.quantity,
            value(r.quantity, r.predicted),
            value(r.quantity, r.measured),
            ratio,
            note
        );
    }
    let runs: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.run.as_str()).collect();
    let _ = writeln!(
        out,
        "\n{} runs, {} compared quantities, {} off by more than {:.0} % ({:.0} % for DRAM bytes)",
        runs.len(),
        rows.len(),
        off,
        100.0 * TOLERANCE,
        100.0 * DRAM_TOLERANCE
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_keep_commas_inside_quotes() {
        assert_eq!(fields(r#""a","(256, 1, 1)","1,024""#), ["a", "(256, 1, 1)", "1,024"]);
        assert_eq!(fields(r#""say ""hi""",x"#), ["say \"hi\"", "x"]);
        assert_eq!(number("268,463,872"), Some(268_463_872.0));
        assert_eq!(number("n/a"), None);
    }

    #[test]
    fn rows_are_marked_past_their_tolerance() {
        let row = |quantity, predicted, measured| Row { run: "r".into(), quantity, predicted, measured, sass: None };
        assert!(!row("ld_sectors", 100.0, 104.9).off());
        assert!(row("ld_sectors", 100.0, 105.1).off());
        assert!(!row("dram_read_bytes", 100.0, 109.0).off());
        assert!(row("dram_write_bytes", 100.0, 89.0).off());
        assert!(row("shared_ld_bank_conflicts", 0.0, 3.0).off());
        assert_eq!(row("shared_ld_bank_conflicts", 0.0, 3.0).ratio(), f64::INFINITY);
    }
}
