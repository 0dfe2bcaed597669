//! `report.md`: a header table saying what was measured where, the summary of every lesson, the
//! time model, how to read the warp pictures, then per family, in the order a lesson is read: the
//! variants' summaries, the family's warp pictures, its plots, the computed reading, and one table
//! of every run (in the units that fit the family).
use std::fmt::Write;

use super::cost::cublas_at;
use super::format::{SPEED_RULE, gbps, pct, ratio, speed, tflops, thousands, us};
use super::model::{Measurement, Model, Plot, Report};
use super::readings::readings;
use super::warp::WarpPicture;
use super::warp::bank_wavefronts;
use crate::bank::Bank;
use crate::family::Family;
use coalesce::bank::Tile;

/// The markdown of `report`, embedding `plots` and `pictures` in their families' sections (by
/// file name, relative to the markdown).
pub fn markdown(report: &Report, plots: &[Plot], pictures: &[WarpPicture]) -> String {
    let mut md = String::new();
    header(&mut md, report);
    super::summary::section(&mut md, report);
    super::time::section(&mut md, report, plots);
    warp_section(&mut md, report, pictures);
    for family in report.families() {
        section(&mut md, report, family, plots, pictures);
    }
    super::cost::section(&mut md, report, plots);
    super::peer::skipped_section(&mut md, report, pictures);
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
    let _ = writeln!(md, "\n{SPEED_RULE}");
}

/// "What a warp touches": how to read the pictures each lesson opens with (nothing without
/// pictures). A picture of a lesson with no runs here (the two GPUs on one) sits under "Not
/// measured here", and its link goes there.
fn warp_section(md: &mut String, r: &Report, pictures: &[WarpPicture]) {
    if pictures.is_empty() {
        return;
    }
    let _ = write!(
        md,
        "\n## What a warp touches\n\nWarp 0 of a lesson kernel, one memory instruction: its 32 lanes on top, below \
         them the 32-byte sectors (global memory, each drawn as eight 4-byte words, the lanes' words filled) or the \
         32 banks (shared memory, each stacking the distinct words asked of it) they land in. A figure draws all \
         its panels to one scale: a sector is as wide in each, so the bytes a warp moves take the room they cost. The lanes' addresses \
         come from the model's replay of the kernel's own index functions, and each count is the model's, the \
         counter behind the tables' sectors per request and bank conflicts; the pictures are computed when the \
         report is rendered, not read from the record. Each lesson below opens with its pictures: {}.\n",
        pictures
            .iter()
            .map(|p| {
                let anchor = if r.families().contains(&p.family) { p.family } else { super::peer::NOT_MEASURED_ANCHOR };
                format!("[{}](#{anchor})", p.file)
            })
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// The matmul table's column of [`speed`] against cuBLAS.
pub(crate) const SPEED_VS_CUBLAS: &str = "speed vs cuBLAS (>1 = faster)";

/// What a family's table shows besides the time: the units that fit its lesson.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Units {
    /// Memory-bound: GB/s and % of memcpy.
    Bandwidth,
    /// Shared-memory bound (the bank kernel): its global bytes are few, so no GB/s; the time
    /// against the conflict-free tile read and the model's wavefronts instead.
    Shared,
    /// FLOP-bound (matmul): TFLOP/s and the speed against cuBLAS at the same size.
    Flops,
}

fn units(runs: &[&Measurement], family: &str) -> Units {
    if family == Bank::NAME {
        Units::Shared
    } else if runs.iter().any(|m| m.flops > 0) {
        Units::Flops
    } else {
        Units::Bandwidth
    }
}

fn section(md: &mut String, r: &Report, family: &str, plots: &[Plot], pictures: &[WarpPicture]) {
    let _ = writeln!(md, "\n## {family}\n");
    for variant in r.variants(family) {
        if let Some(m) = r.get(family, variant) {
            let _ = writeln!(md, "- `{variant}`: {}", m.summary);
        }
    }
    // A lesson reads picture, plot, reading, then the table of every run.
    for p in pictures.iter().filter(|p| p.family == family) {
        let _ = writeln!(md, "\n![{}]({})\n\n{}", p.title, p.file, p.caption);
    }
    for plot in plots.iter().filter(|p| p.family == family) {
        let _ = writeln!(md, "\n![{}]({})", plot.title, plot.file);
    }
    let sentences = readings(r, family);
    if !sentences.is_empty() {
        md.push_str("\n**Reading.**\n\n");
        for s in sentences {
            let _ = writeln!(md, "- {s}");
        }
    }
    let runs: Vec<&Measurement> = r.family(family).collect();
    let units = units(&runs, family);
    let with_model = runs.iter().any(|m| m.model.is_some());
    // The conflict-free tile read every bank run is compared with (the same loads, one
    // wavefront each).
    let rows = r.of(Bank::Tile(Tile::Rows)).filter(|m| m.median_us > 0.0);
    let with_cublas = units == Units::Flops && runs.iter().any(|m| cublas_at(r, m.flops).is_some());
    let mut head = String::from("| run | median µs |");
    let mut rule = String::from("|---|---:|");
    let mut column = |name: &str| {
        let _ = write!(head, " {name} |");
        rule.push_str("---:|");
    };
    match units {
        Units::Bandwidth => {
            column("GB/s");
            column("% of memcpy");
        }
        Units::Shared => {
            if rows.is_some() {
                column("time × rows");
            }
            column("wavefronts a warp load (model)");
        }
        Units::Flops => {
            column("TFLOP/s");
            if with_cublas {
                column(SPEED_VS_CUBLAS);
            }
        }
    }
    let with_ncu = runs.iter().any(|m| m.ncu.is_some());
    if with_model {
        if units != Units::Shared {
            column("ld sectors/req");
            column("st sectors/req");
        }
        column("bank conflicts");
        if units != Units::Shared {
            column("DRAM rd / wr MB (model)");
        }
    }
    if with_ncu && units != Units::Shared {
        column("DRAM rd / wr MB (ncu)");
    }
    let _ = writeln!(md, "\n{head}\n{rule}");
    for m in runs {
        let cpu = if m.on_cpu { " (CPU)" } else { "" };
        let label = m.param_label().map_or(String::new(), |l| format!(" ({l})"));
        let _ = write!(md, "| {}{label}{cpu} | {} |", m.run, us(m.median_us));
        match units {
            Units::Bandwidth => {
                let _ = write!(md, " {} | {} |", gbps(m.gbps()), pct(m.percent_of(&r.memcpy)));
            }
            Units::Shared => {
                if let Some(rows) = rows {
                    let _ = write!(md, " {} |", ratio(m.median_us / rows.median_us));
                }
                let _ = write!(md, " {} |", bank_wavefronts(m).map_or(String::new(), |w| w.to_string()));
            }
            Units::Flops => {
                let cell = if m.flops > 0 { tflops(m.tflops()) } else { String::new() };
                let _ = write!(md, " {cell} |");
                if with_cublas {
                    let cell = cublas_at(r, m.flops).map_or(String::new(), |c| speed(c.median_us / m.median_us));
                    let _ = write!(md, " {cell} |");
                }
            }
        }
        if with_model {
            match &m.model {
                Some(model) => {
                    let conflicts = model.shared_ld_bank_conflicts + model.shared_st_bank_conflicts;
                    if units != Units::Shared {
                        if engine_driven(m, model) {
                            // Bulk copies and TMA move the bytes without a load or store request.
                            md.push_str(" (copy engine) | (copy engine) |");
                        } else {
                            let (ld, st) = (model.ld_sectors_per_request, model.st_sectors_per_request);
                            let _ = write!(md, " {ld:.2} | {st:.2} |");
                        }
                    }
                    let _ = write!(md, " {} |", thousands(conflicts));
                    if units != Units::Shared {
                        let _ = write!(md, " {} |", megabytes(model.dram_read_bytes, model.dram_write_bytes));
                    }
                }
                None if units != Units::Shared => md.push_str("  |  |  |  |"),
                None => md.push_str("  |"),
            }
        }
        if with_ncu && units != Units::Shared {
            match &m.ncu {
                Some(c) => {
                    let _ = write!(md, " {} |", megabytes(c.dram_read_bytes, c.dram_write_bytes));
                }
                None => md.push_str("  |"),
            }
        }
        md.push('\n');
    }
    match units {
        Units::Shared => md.push_str(
            "\nThe bank kernel's few global bytes say nothing of its cost, so this table has no GB/s: **time × rows** \
             is the time against the conflict-free tile read (`bank/rows`, the same loads), and the wavefronts a \
             warp load takes are the model's, computed when rendering.\n",
        ),
        Units::Flops if with_cublas => md.push_str(
            "\nMatrix multiplication is bound by arithmetic, not by memory, so this table has TFLOP/s instead of \
             GB/s; **speed vs cuBLAS** is cuBLAS's time (SGEMM through PyTorch, from this record's peers) over the \
             run's at the same size: above 1× the run is faster.\n",
        ),
        Units::Flops => md.push_str(
            "\nMatrix multiplication is bound by arithmetic, not by memory, so this table has TFLOP/s instead of \
             GB/s.\n",
        ),
        Units::Bandwidth => {}
    }
}

/// Whether a run moves its bytes through the copy hardware (bulk copies, TMA): bytes to move, and
/// (almost) no load or store request of the threads' own in the model, only a tail's.
fn engine_driven(m: &Measurement, model: &Model) -> bool {
    m.bytes > 0
        && model.ld_sectors_per_request <= 1.0
        && model.st_sectors_per_request <= 1.0
        && model.dram_read_bytes > 0
}

/// `read / written` in MB (10^6 bytes), one decimal.
fn megabytes(read: u64, written: u64) -> String {
    format!("{:.1} / {:.1}", read as f64 / 1e6, written as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_by_the_copy_hardware_are_named_not_shown_as_free() {
        let run = |ld: f64, st: f64, bytes: u64| {
            let model = Model {
                ld_sectors_per_request: ld,
                st_sectors_per_request: st,
                shared_ld_bank_conflicts: 0,
                shared_st_bank_conflicts: 0,
                dram_read_bytes: 1 << 28,
                dram_write_bytes: 1 << 28,
                time_inputs: None,
            };
            let m = Measurement {
                run: "f/v".into(),
                family: "f".into(),
                variant: "v".into(),
                param: None,
                summary: String::new(),
                median_us: 1.0,
                bytes,
                flops: 0,
                on_cpu: false,
                model: Some(model.clone()),
                ncu: None,
            };
            engine_driven(&m, &model)
        };
        // TMA (no request at all) and bulk copies (the tail's one sector) are the engine's.
        assert!(run(0.0, 0.0, 1 << 29) && run(1.0, 1.0, 1 << 29));
        // Coalesced threads' copies are not; nor is a run that moves nothing.
        assert!(!run(4.0, 4.0, 1 << 29) && !run(16.0, 16.0, 1 << 29) && !run(0.0, 0.0, 0));
    }

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_072_693_248), "1,072,693,248");
    }
}
