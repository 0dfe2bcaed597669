//! `report.md`: a header table saying what was measured where, the summary of every lesson, then
//! per family the variants' summaries, one table of every run, the computed reading and the
//! family's plots.
use std::fmt::Write;

use super::{Measurement, Plot, Report, gbps, pct, readings, tflops, us};

/// The markdown of `report`, embedding `plots` (by file name, relative to the markdown) in their
/// families' sections.
pub fn markdown(report: &Report, plots: &[Plot]) -> String {
    let mut md = String::new();
    header(&mut md, report);
    super::summary::section(&mut md, report);
    for family in report.families() {
        section(&mut md, report, family, plots);
    }
    super::cost::section(&mut md, report, plots);
    super::peer::skipped_section(&mut md, report);
    md
}

fn header(md: &mut String, r: &Report) {
    let d = &r.device;
    let (major, minor) = d.compute_capability;
    let m = &r.memcpy;
    let rows: [(&str, String); 10] = [
        ("device", d.name.clone()),
        ("SMs", d.multiprocessors.to_string()),
        ("compute capability", format!("{major}.{minor}")),
        ("memory", format!("{:.1} GiB", d.memory_bytes as f64 / (1u64 << 30) as f64)),
        ("driver", d.driver.clone()),
        ("PTX arch", r.ptx_arch.clone()),
        ("date", r.date.clone()),
        ("commit", r.commit.clone()),
        ("memcpy", format!("{} GB/s", gbps(m.gbps()))),
        ("memcpy run", format!("{}: {} µs for {} bytes", m.run, us(m.median_us), thousands(m.bytes))),
    ];
    md.push_str("# coalesce report\n\n| | |\n|---|---|\n");
    for (k, v) in rows {
        let _ = writeln!(md, "| {k} | {v} |");
    }
    md.push_str(
        "\nGB/s counts the bytes each run must move, once: every input read plus every output \
         written. **% of memcpy** divides by the device-to-device memcpy above, measured first in \
         the same run. Times are medians; rows marked (CPU) are host wall-clock times.\n",
    );
}

fn section(md: &mut String, r: &Report, family: &str, plots: &[Plot]) {
    let _ = writeln!(md, "\n## {family}\n");
    for variant in r.variants(family) {
        if let Some(m) = r.get(family, variant) {
            let _ = writeln!(md, "- `{variant}`: {}", m.summary);
        }
    }
    let runs: Vec<&Measurement> = r.family(family).collect();
    let with_flops = runs.iter().any(|m| m.flops > 0);
    let with_model = runs.iter().any(|m| m.model.is_some());
    md.push_str("\n| run | median µs | GB/s | % of memcpy |");
    let mut rule = String::from("|---|---:|---:|---:|");
    if with_flops {
        md.push_str(" TFLOP/s |");
        rule.push_str("---:|");
    }
    if with_model {
        md.push_str(" ld sectors/req | st sectors/req | bank conflicts |");
        rule.push_str("---:|---:|---:|");
    }
    let _ = writeln!(md, "\n{rule}");
    for m in runs {
        let cpu = if m.on_cpu { " (CPU)" } else { "" };
        let label = m.param_label().map_or(String::new(), |l| format!(" ({l})"));
        let _ = write!(
            md,
            "| {}{label}{cpu} | {} | {} | {} |",
            m.run,
            us(m.median_us),
            gbps(m.gbps()),
            pct(m.percent_of(&r.memcpy))
        );
        if with_flops {
            let cell = if m.flops > 0 { tflops(m.tflops()) } else { String::new() };
            let _ = write!(md, " {cell} |");
        }
        if with_model {
            match &m.model {
                Some(model) => {
                    let conflicts = model.shared_ld_bank_conflicts + model.shared_st_bank_conflicts;
                    let _ = write!(
                        md,
                        " {:.2} | {:.2} | {} |",
                        model.ld_sectors_per_request,
                        model.st_sectors_per_request,
                        thousands(conflicts)
                    );
                }
                None => md.push_str("  |  |  |"),
            }
        }
        md.push('\n');
    }
    let sentences = readings(r, family);
    if !sentences.is_empty() {
        md.push_str("\n**Reading.**\n\n");
        for s in sentences {
            let _ = writeln!(md, "- {s}");
        }
    }
    for plot in plots.iter().filter(|p| p.family == family) {
        let _ = writeln!(md, "\n![{}]({})", plot.title, plot.file);
    }
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

#[cfg(test)]
mod tests {
    use super::thousands;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_072_693_248), "1,072,693,248");
    }
}
