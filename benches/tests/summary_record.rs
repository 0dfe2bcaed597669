//! The summary against the committed record (`results/report.json`, with the committed ncu
//! table's counters attached): no row claims a DRAM count the record's counters contradict by
//! more than 10%, and every "why" either names a limit whose predicted ratio is within 25% of
//! the measured one, in its direction, or says the model does not explain it.
mod common;

use coalesce_benches::report::{self, Report};

fn record() -> Report {
    record_at("results/report.json")
}

/// The committed record at `relative` (from the workspace root).
fn record_at(relative: &str) -> Report {
    let path = format!("{}/../{relative}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    Report::from_json(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `report.md` as `report --from` renders `r` now (not the committed one), in a scratch folder
/// named for `name`.
fn rendered(r: &Report, name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("coalesce-{name}-{}", std::process::id()));
    report::render(r, &dir).unwrap();
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    md
}

#[test]
fn no_summary_row_claims_what_the_counters_contradict() {
    let r = record();
    let rows = report::summary(&r);
    assert!(rows.len() >= 8, "the record's summary has {} rows", rows.len());
    let mut checked = 0;
    for row in &rows {
        for (changed, base) in &row.pairs {
            let find = |id: &str| r.runs.iter().find(|m| m.run == id).unwrap_or_else(|| panic!("{id}"));
            let (c, b) = (find(changed), find(base));
            let (Some(_), Some(_)) = (&c.ncu, &b.ncu) else { continue };
            checked += 1;
            let off = |m: &report::Measurement| {
                let (n, p) = (m.ncu.as_ref().unwrap(), m.model.as_ref().unwrap());
                let (n, p) =
                    ((n.dram_read_bytes + n.dram_write_bytes) as f64, (p.dram_read_bytes + p.dram_write_bytes) as f64);
                (n - p).abs() > 0.10 * n && (n - p).abs() > 1e6
            };
            if off(c) || off(b) {
                // The pair's DRAM claim gives way to the counters: a row of one pair makes none, a
                // row of several says which it does not claim.
                let claims = row.model.contains("the same DRAM bytes") || row.model.contains("DRAM bytes instead of");
                if row.pairs.len() == 1 {
                    assert!(!claims, "{}: {} claims DRAM bytes the counters contradict", row.change, row.model);
                } else if claims {
                    assert!(row.model.contains("DRAM bytes not claimed"), "{}: {}", row.change, row.model);
                }
            }
        }
    }
    assert!(checked > 0, "no summary pair has counters in the record: attach the ncu table");
}

#[test]
fn every_why_is_explained_or_says_it_is_not() {
    let r = record();
    let rows = report::summary(&r);
    let predicted = report::time::rows(&r).expect("the committed record has the probes and the time model's counts");
    for row in &rows {
        let parts: Vec<&str> = row.why.split("; ").collect();
        assert_eq!(parts.len(), row.pairs.len(), "{}: {}", row.change, row.why);
        for ((part, (changed, base)), &measured) in parts.iter().zip(&row.pairs).zip(&row.ratios) {
            if part.starts_with("not explained by the model") {
                continue;
            }
            let p = |id: &str| predicted.iter().find(|p| p.run == id).unwrap_or_else(|| panic!("{id}: no prediction"));
            let m = |id: &str| r.runs.iter().find(|m| m.run == id).unwrap();
            let work = |id: &str| if m(id).flops > 0 { m(id).flops as f64 } else { m(id).bytes as f64 };
            let q = (p(changed).predicted_us / work(changed)) / (p(base).predicted_us / work(base));
            assert!(
                report::explained(q, measured),
                "{}: '{part}' but predicted {q:.3} against measured {measured:.3}",
                row.change
            );
            assert!(part.contains(p(changed).limit.name()), "{}: '{part}' does not name the limit", row.change);
        }
    }
}

/// The rows of the first markdown table after `heading` in `text`.
fn table_after<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
    let start = text.find(heading).unwrap_or_else(|| panic!("no {heading:?}"));
    text[start..].lines().skip_while(|l| !l.starts_with('|')).take_while(|l| l.starts_with('|')).collect()
}

#[test]
fn benchmarks_at_a_glance_is_the_records_summary() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let benchmarks = std::fs::read_to_string(format!("{root}/BENCHMARKS.md")).unwrap();
    let glance = table_after(&benchmarks, "## At a glance");
    // What `report --from results/report.json` renders now, not the committed report.md.
    let md = rendered(&record(), "glance");
    let summary = table_after(&md, "## Summary");
    assert!(summary.len() > 2, "the record renders no summary");
    assert_eq!(glance, summary, "BENCHMARKS.md's At a glance is not what the record renders");
}

/// `matmul::matmul`'s speed over cuBLAS's at side `n` in the record's cost curve (cuBLAS's time
/// over the library's, both timed in the same run).
fn speed_over_cublas(r: &Report, n: u64) -> f64 {
    let lib = r.sweep.iter().find(|s| s.entry == "matmul" && s.n == n).unwrap_or_else(|| panic!("matmul at {n}"));
    let peers = r.peers.as_ref().expect("the record has its peers");
    let cublas = peers.rows.iter().find(|p| p.peer == "cublas" && p.entry == "matmul" && p.n == n).expect("cuBLAS");
    cublas.median_us / lib.median_us
}

#[test]
fn the_readmes_cublas_ratios_are_the_records() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap().replace('\n', " ");
    let r = record();
    let at = |n| format!("{:.3}×", speed_over_cublas(&r, n));
    let big = format!("{}, {} and {} the speed of cuBLAS FP32 at 2048³, 4096³ and", at(2048), at(4096), at(8192));
    assert!(readme.contains(&big), "README.md should say: {big}");
    let small = format!("{:.2}× at 1024³", speed_over_cublas(&r, 1024));
    assert!(readme.contains(&small), "README.md should say: {small}");
}

/// BENCHMARKS.md's time-model figures (the targets row and the first two columns of the section's
/// table) are what the committed H100 and H200 records render, to the digits shown.
#[test]
fn benchmarks_time_model_figures_are_the_records() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let benchmarks = std::fs::read_to_string(format!("{root}/BENCHMARKS.md")).unwrap();
    let headline = |md: &str| {
        let line = md.lines().find(|l| l.contains(" runs: median error ")).expect("the time model's headline");
        let median = line.split("median error ").nth(1).and_then(|s| s.split(',').next()).unwrap().to_string();
        let within = line.split(", ").nth(1).and_then(|s| s.split(' ').next()).unwrap().to_string();
        (median, within)
    };
    let (h100, h200) =
        (headline(&rendered(&record(), "h100")), headline(&rendered(&record_at("results/h200/report.json"), "h200")));
    let table = table_after(&benchmarks, "## The time model: predicted against measured");
    let row = |name: &str| {
        let line = table.iter().find(|l| l.starts_with(&format!("| {name} |"))).unwrap_or_else(|| panic!("{name}"));
        line.split('|').map(|c| c.trim().trim_matches('*').to_string()).collect::<Vec<_>>()
    };
    let (median, within) = (row("median error"), row("within 25%"));
    assert_eq!((&median[2], &within[2]), (&h100.0, &h100.1), "H100 column");
    assert_eq!((&median[3], &within[3]), (&h200.0, &h200.1), "H200 column");
    let target = benchmarks.lines().find(|l| l.starts_with("| time model: median error")).expect("the targets row");
    for (median, within) in [&h100, &h200] {
        assert!(target.contains(&format!("**{median}**, **{within}**")), "targets row: {target}");
    }
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap().replace('\n', " ");
    let said = format!(
        "median error {} on an H100 and {} on an H200, {} and {} of the runs within 25%",
        h100.0, h200.0, h100.1, h200.1
    );
    assert!(readme.contains(&said), "README.md should say: {said}");
}

/// BENCHMARKS.md's matmul shape table is the record's, cell for cell.
#[test]
fn benchmarks_shape_table_is_the_records() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let benchmarks = std::fs::read_to_string(format!("{root}/BENCHMARKS.md")).unwrap();
    let md = rendered(&record(), "shapes");
    let cells = |line: &str| line.split('|').map(|c| c.trim().to_string()).collect::<Vec<_>>();
    let ours: Vec<Vec<String>> =
        table_after(&benchmarks, "### matmul at every shape (issue 37)").iter().skip(2).map(|l| cells(l)).collect();
    let record: Vec<Vec<String>> =
        table_after(&md, "### matmul at every shape").iter().skip(2).map(|l| cells(l)).collect();
    assert_eq!(ours.len(), record.len(), "one row a shape");
    for (b, r) in ours.iter().zip(&record) {
        // BENCHMARKS leaves out the record's TFLOP/s column (index 3 of the record's).
        let r: Vec<&String> = r.iter().enumerate().filter(|(i, _)| *i != 3).map(|(_, c)| c).collect();
        assert_eq!(b.iter().collect::<Vec<_>>(), r, "{}", b[1]);
    }
}

/// The number of a speed cell as the report prints it (`1.008× (torch)` → `1.008`), empty for none.
fn speed_of(cell: &str) -> String {
    cell.split('×').next().unwrap_or("").trim().to_string()
}

/// The smallest and largest of `speeds` (printed numbers), as `lo–hi`.
fn span(speeds: &[String]) -> String {
    let by = |a: &&String, b: &&String| a.parse::<f64>().unwrap().total_cmp(&b.parse::<f64>().unwrap());
    let (lo, hi) = (speeds.iter().min_by(by).unwrap(), speeds.iter().max_by(by).unwrap());
    if lo == hi { lo.clone() } else { format!("{lo}–{hi}") }
}

/// BENCHMARKS.md's speeds against the strongest peer (the cost-curve tables, the two issue-37
/// targets rows and the shapes' findings) are the record's, to the digits shown: each cell is the
/// report's "speed vs best peer" or "speed vs best" at that size, each range the span of those.
#[test]
fn benchmarks_peer_speeds_are_the_records() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let benchmarks = std::fs::read_to_string(format!("{root}/BENCHMARKS.md")).unwrap();
    let md = rendered(&record(), "peer-speeds");
    // The report's speed of `imp` in the cost table of `entry`, by size label (`2^20`, `512³`).
    let speeds = |entry: &str, imp: &str| -> Vec<(String, String)> {
        let start = md.find(&format!("\n### {entry}\n")).unwrap_or_else(|| panic!("### {entry}"));
        let column = format!("{imp} speed vs best peer (>1 = faster)");
        common::first_table(&md[start..], "| size |")
            .into_iter()
            .map(|row| (row["size"].clone(), row.get(&column).unwrap_or_else(|| panic!("{column}")).clone()))
            .collect()
    };
    let section = {
        let start = benchmarks.find("## The cost curve: a call against its peers").expect("the cost-curve section");
        &benchmarks[start..start + benchmarks[start..].find("### matmul at every shape").unwrap()]
    };
    let rows = [
        ("`coalescing::copy`", "copy", "coalescing::copy"),
        ("`reduce::sum_to` (result on the device)", "sum", "reduce::sum_to"),
        ("`reduce::sum` (result on the host)", "sum", "reduce::sum"),
        ("`transpose::transpose`, square", "transpose", "transpose::transpose"),
        ("`transpose::transpose`, 1:4", "transpose_1x4", "transpose::transpose"),
        ("`matmul::matmul`", "matmul", "matmul::matmul"),
    ];
    let cells = |line: &str| line.trim().trim_matches('|').split('|').map(|c| c.trim().to_string()).collect::<Vec<_>>();
    let mut header = Vec::new();
    let mut checked = 0;
    for line in section.lines().filter(|l| l.starts_with('|')) {
        let row = cells(line);
        if row[0] == "entry point" {
            header = row;
            continue;
        }
        let Some(&(_, entry, imp)) = rows.iter().find(|r| r.0 == row[0]) else { continue };
        let record = speeds(entry, imp);
        for (size, cell) in header.iter().zip(&row).skip(2) {
            let (_, want) = record.iter().find(|(s, _)| s == size).unwrap_or_else(|| panic!("{entry} at {size}"));
            assert_eq!(cell, &format!("{}×", speed_of(want)), "{} at {size}", row[0]);
            checked += 1;
        }
    }
    assert_eq!(checked, 5 * 6 + 6, "every cell of both tables");

    // The targets row: each entry's span from 2^20 up (matmul from 1024³), from the same cells.
    let from = |entry: &str, imp: &str, least: u64, peer: Option<&str>| -> Vec<String> {
        speeds(entry, imp)
            .into_iter()
            .filter(|(size, cell)| {
                let n = match size.strip_suffix('³') {
                    Some(side) => side.parse::<u64>().unwrap(),
                    None => 1u64 << size.trim_start_matches("2^").parse::<u32>().unwrap(),
                };
                n >= least && peer.is_none_or(|p| cell.ends_with(&format!("({p})")))
            })
            .map(|(_, cell)| speed_of(&cell))
            .collect()
    };
    let mut transposes = from("transpose", "transpose::transpose", 1 << 20, None);
    transposes.extend(from("transpose_1x4", "transpose::transpose", 1 << 20, None));
    let mut geam = from("transpose", "transpose::transpose", 1 << 24, Some("cublas geam"));
    geam.extend(from("transpose_1x4", "transpose::transpose", 1 << 24, Some("cublas geam")));
    let matmul_512 = speeds("matmul", "matmul::matmul").into_iter().find(|(s, _)| s == "512³").unwrap().1;
    let said = format!(
        "from 2^20: copy {}×, `sum_to` {}×, `sum` {}×, transposes {}× ({}× of `geam` from 2^24); matmul {}× from \
         1024³, **{}× at 512³**",
        span(&from("copy", "coalescing::copy", 1 << 20, None)),
        span(&from("sum", "reduce::sum_to", 1 << 20, None)),
        span(&from("sum", "reduce::sum", 1 << 20, None)),
        span(&transposes),
        span(&geam),
        span(&from("matmul", "matmul::matmul", 1024, None)),
        speed_of(&matmul_512)
    );
    assert!(benchmarks.contains(&said), "BENCHMARKS.md's targets row should say: {said}");

    // The shapes: the targets row and the findings quote the shape table's speeds.
    let shapes: Vec<Vec<String>> =
        table_after(&md, "### matmul at every shape").iter().skip(2).map(|l| cells(l)).collect();
    let at = |shape: &str| {
        let row = shapes.iter().find(|r| r[0] == shape).unwrap_or_else(|| panic!("{shape}"));
        speed_of(&row[5])
    };
    let list = |shapes: &[&str]| shapes.iter().map(|s| format!("{}×", at(s))).collect::<Vec<_>>().join(", ");
    let small = span(&["256x256x256", "384x384x384", "512x512x512"].map(at));
    let said = format!(
        "256³–512³ **{small}×**, 768³ **{}×**, 1024³ {}×; m = 1, 8, 32, 128: **{}**; n = 1, 8, 32, 128: **{}**; k = \
         64, 128: {}",
        at("768x768x768"),
        at("1024x1024x1024"),
        list(&["1x4096x4096", "8x4096x4096", "32x4096x4096", "128x4096x4096"]),
        list(&["4096x1x4096", "4096x8x4096", "4096x32x4096", "4096x128x4096"]),
        list(&["4096x4096x64", "4096x4096x128"])
    );
    assert!(benchmarks.contains(&said), "BENCHMARKS.md's targets row should say: {said}");
    let flat = benchmarks.replace("\n  ", " ");
    let thin = format!(
        "(k = 64 and 128, {}× and {}× cuBLAS's speed) and 1024³ ({}×)",
        at("4096x4096x64"),
        at("4096x4096x128"),
        at("1024x1024x1024")
    );
    assert!(flat.contains(&thin), "BENCHMARKS.md should say: {thin}");
    assert!(flat.contains(&format!("the library runs at {small}× its speed up to 512³")), "{small}");
}
