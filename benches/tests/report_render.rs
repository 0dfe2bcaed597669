//! Renders the committed sample report (numbers from the H100 run in BENCHMARKS.md) and checks
//! the output against the JSON: every table cell and reading number is recomputed here from the
//! raw fields (bytes, median µs, flops), independently of the renderer's own arithmetic.
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

mod common;

use coalesce_benches::report::{self, Measurement, PLOT_FILES, Report};

const SAMPLE: &str = include_str!("data/sample-report.json");

fn sample() -> Report {
    Report::from_json(SAMPLE).expect("the committed sample parses")
}

/// A fresh, empty folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("report_render-{name}"));
    if dir.exists() {
        fs::remove_dir_all(&dir).expect("remove the previous run's folder");
    }
    fs::create_dir_all(&dir).expect("create the test folder");
    dir
}

fn render(report: &Report, name: &str) -> (PathBuf, String) {
    let dir = scratch(name);
    report::render(report, &dir).expect("render");
    let md = fs::read_to_string(dir.join("report.md")).expect("report.md written");
    (dir, md)
}

// Independent recomputations from the raw fields.

fn gbps(m: &Measurement) -> f64 {
    m.bytes as f64 / m.median_us / 1e3
}

fn pct(r: &Report, m: &Measurement) -> f64 {
    100.0 * gbps(m) / gbps(&r.memcpy)
}

fn tflops(m: &Measurement) -> f64 {
    m.flops as f64 / m.median_us / 1e6
}

fn run<'a>(r: &'a Report, id: &str) -> &'a Measurement {
    r.runs.iter().find(|m| m.run == id).unwrap_or_else(|| panic!("{id} is in the sample"))
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The sweep of `family/variant` as (value, run).
fn sweep<'a>(r: &'a Report, family: &str, variant: &str) -> Vec<(u32, &'a Measurement)> {
    r.runs
        .iter()
        .filter(|m| m.family == family && m.variant == variant)
        .map(|m| (m.param.as_ref().expect("swept").value, m))
        .collect()
}

/// The markdown section of `family`: from its `## family` heading to the next heading.
fn section<'a>(md: &'a str, family: &str) -> &'a str {
    let start = md.find(&format!("\n## {family}\n")).unwrap_or_else(|| panic!("section {family}"));
    let rest = &md[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |e| e + 3);
    &rest[..end]
}

/// The reading bullets of `family`'s section.
fn reading(md: &str, family: &str) -> Vec<String> {
    let s = section(md, family);
    let Some(start) = s.find("**Reading.**") else { return Vec::new() };
    s[start..].lines().filter_map(|l| l.strip_prefix("- ")).map(str::to_string).collect()
}

/// Every table in `md` whose header starts with `run`, as rows of column name → cell.
fn table_rows(md: &str) -> Vec<HashMap<String, String>> {
    let cells = |line: &str| -> Vec<String> {
        line.trim().trim_start_matches('|').trim_end_matches('|').split('|').map(|c| c.trim().to_string()).collect()
    };
    let lines: Vec<&str> = md.lines().collect();
    let mut rows = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].starts_with("| run |") {
            let header = cells(lines[i]);
            assert!(lines[i + 1].starts_with("|---"), "rule under the header: {}", lines[i + 1]);
            i += 2;
            while i < lines.len() && lines[i].starts_with('|') {
                let row = cells(lines[i]);
                assert_eq!(row.len(), header.len(), "cells in {}", lines[i]);
                rows.push(header.iter().cloned().zip(row).collect());
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    rows
}

/// The text of every `<text>` element of a parsed SVG, after checking it is an `<svg>` document.
fn svg_texts(path: &Path) -> Vec<String> {
    let xml = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{} is not XML: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg", "{} root", path.display());
    doc.descendants().filter(|n| n.has_tag_name("text")).map(|n| n.text().unwrap_or("").trim().to_string()).collect()
}

#[test]
fn every_plot_is_an_svg_with_title_and_legend() {
    let r = sample();
    let dir = scratch("plots");
    let written = report::render(&r, &dir).expect("render");
    let memcpy = format!("memcpy ({:.0} GB/s)", gbps(&r.memcpy));
    let expected: [(&str, Vec<String>); 9] = [
        (
            "coalescing_offset.svg",
            vec![
                "coalescing/offset".into(),
                "coalescing/offset_cg".into(),
                "sectors per request, coalescing/offset (model)".into(),
            ],
        ),
        // The sample's stride runs carry no model counts: the measured series alone.
        ("coalescing_stride.svg", vec!["coalescing/stride, % of stride 1".into()]),
        ("access_order.svg", vec!["access_order/chunked".into(), "access_order/interleaved".into(), memcpy.clone()]),
        ("layouts.svg", vec!["% of memcpy".into(), "memcpy = 100%".into()]),
        ("transpose.svg", vec!["shape=8192x8192".into(), "shape=4096x16384".into(), memcpy.clone()]),
        ("bank_stride.svg", vec!["bank/stride (one dot a stride)".into(), "bank/rows, cols, cols_padded".into()]),
        ("reduce.svg", vec!["GPU GB/s".into(), "CPU GB/s".into(), memcpy.clone()]),
        ("matmul.svg", vec!["FP32 TFLOP/s".into()]),
        ("distance.svg", vec!["% of memcpy".into(), "memcpy = 100%".into()]),
    ];
    for (file, labels) in &expected {
        let path = dir.join(file);
        assert!(written.contains(&path), "render returned {file}");
        let texts = svg_texts(&path);
        for label in labels {
            assert!(texts.contains(label), "{file}: legend label {label:?} missing from {texts:?}");
        }
        let family = file.trim_end_matches(".svg").split('_').next().expect("family prefix");
        assert!(texts.iter().any(|t| t.contains(':') && t.starts_with(family)), "{file}: no title in {texts:?}");
    }
    // Bar charts name every method on the category axis and print its value at the bar.
    let texts = svg_texts(&dir.join("reduce.svg"));
    for m in r.runs.iter().filter(|m| m.family == "reduce") {
        assert!(texts.contains(&m.variant), "reduce.svg: no category {}", m.variant);
        assert!(texts.contains(&format!("{:.0}", gbps(m))), "reduce.svg: no value for {}", m.variant);
    }
    let texts = svg_texts(&dir.join("matmul.svg"));
    for m in r.runs.iter().filter(|m| m.family == "matmul") {
        assert!(texts.contains(&format!("{:.2}", tflops(m))), "matmul.svg: no TFLOP/s for {}", m.variant);
    }
    // Axis labels.
    for (file, axis) in [("coalescing_offset.svg", "offset (floats)"), ("bank_stride.svg", "median µs")] {
        assert!(svg_texts(&dir.join(file)).iter().any(|t| t == axis), "{file}: axis label {axis:?}");
    }
    // Nothing else was written (report.md, report.json, the plots, the warp pictures of the
    // lessons the sample has: not the histogram's, nor the two GPUs', report.html), and every plot
    // is embedded in the markdown.
    assert!(r.runs.iter().all(|m| m.family != "histogram") && !dir.join("warp_histogram.svg").exists());
    assert!(r.runs.iter().all(|m| m.family != "peer") && r.skipped.is_empty() && !dir.join("warp_peer.svg").exists());
    let async_copy = r.runs.iter().any(|m| m.run.starts_with("coalescing/cp_async"));
    assert_eq!(dir.join("warp_async.svg").exists(), async_copy);
    let pictures = report::WARP_FILES.len() - 2 - usize::from(!async_copy);
    assert_eq!(written.len(), 3 + expected.len() + pictures, "{written:?}");
    assert_eq!(written.last(), Some(&dir.join("report.html")), "the page is written last");
    let md = fs::read_to_string(dir.join("report.md")).expect("report.md");
    for (file, _) in &expected {
        assert!(md.contains(&format!("]({file})")), "{file} embedded");
    }
}

#[test]
fn table_cells_equal_the_json() {
    let r = sample();
    let (_, md) = render(&r, "tables");
    let rows = table_rows(&md);
    assert_eq!(rows.len(), r.runs.len(), "one row per run");
    for row in &rows {
        let (cell, cpu) = match row["run"].strip_suffix(" (CPU)") {
            Some(id) => (id, true),
            None => (row["run"].as_str(), false),
        };
        // The run id, then what its parameter value means where the registry labels it
        // (`coalescing/vec4/blocks_per_sm=0 (one-trip)`).
        let id = cell.split(" (").next().unwrap();
        let m = run(&r, id);
        match m.param_label() {
            Some(label) => assert_eq!(cell, format!("{id} ({label})"), "{id}: labelled value"),
            None => assert_eq!(cell, id, "{id}: no label"),
        }
        assert_eq!(cpu, m.on_cpu, "{id}: (CPU) mark");
        assert_eq!(row["median µs"], format!("{:.1}", m.median_us), "{id}: median");
        // The units that fit the family: TFLOP/s for the FLOP-bound family, the time against the
        // conflict-free tile and the model's wavefronts for the shared-memory one, GB/s and % of
        // memcpy for the rest.
        let family_flops = r.runs.iter().any(|o| o.family == m.family && o.flops > 0);
        let shared = m.family == "bank";
        let bandwidth = !family_flops && !shared;
        assert_eq!(row.contains_key("GB/s"), bandwidth, "{id}: GB/s column");
        assert_eq!(row.contains_key("% of memcpy"), bandwidth, "{id}: % of memcpy column");
        if bandwidth {
            assert_eq!(row["GB/s"], format!("{:.0}", gbps(m)), "{id}: GB/s");
            assert_eq!(row["% of memcpy"], format!("{:.1}%", pct(&r, m)), "{id}: % of memcpy");
        }
        assert_eq!(row.contains_key("TFLOP/s"), family_flops, "{id}: TFLOP/s column");
        if m.flops > 0 {
            assert_eq!(row["TFLOP/s"], format!("{:.2}", tflops(m)), "{id}: TFLOP/s");
        }
        if shared {
            let rows_time = run(&r, "bank/rows").median_us;
            assert_eq!(row["time × rows"], format!("{:.2}×", m.median_us / rows_time), "{id}: time × rows");
            assert!(row.contains_key("wavefronts a warp load (model)"), "{id}: wavefronts column");
        }
        let family_model = r.runs.iter().any(|o| o.family == m.family && o.model.is_some());
        assert_eq!(row.contains_key("bank conflicts"), family_model, "{id}: model columns");
        assert_eq!(row.contains_key("ld sectors/req"), family_model && !shared, "{id}: sector columns");
        if let Some(model) = &m.model {
            if !shared {
                assert_eq!(row["ld sectors/req"], format!("{:.2}", model.ld_sectors_per_request), "{id}: ld");
                assert_eq!(row["st sectors/req"], format!("{:.2}", model.st_sectors_per_request), "{id}: st");
            }
            let conflicts = (model.shared_ld_bank_conflicts + model.shared_st_bank_conflicts).to_string();
            assert_eq!(row["bank conflicts"].replace(',', ""), conflicts, "{id}: conflicts");
        } else if family_model && !shared {
            assert_eq!(row["ld sectors/req"], "", "{id}: no model, empty cell");
        }
    }
    // Spot values straight from BENCHMARKS.md, so a consistent-but-wrong formula also fails.
    let cell = |id: &str, col: &str| rows.iter().find(|row| row["run"] == id).map(|row| row[col].clone());
    assert_eq!(cell("coalescing/offset/offset=0", "GB/s").as_deref(), Some("2365"));
    assert_eq!(cell("layouts/aos", "% of memcpy").as_deref(), Some("101.1%"));
    assert_eq!(cell("matmul/regblock", "TFLOP/s").as_deref(), Some("44.19"));
    assert_eq!(cell("reduce/cpu_single (CPU)", "median µs").as_deref(), Some("103063.6"));
    assert_eq!(cell("bank/cols", "bank conflicts").as_deref(), Some("1,072,693,248"));
    // The header.
    let d = &r.device;
    for (key, value) in [
        ("device", d.name.clone()),
        ("SMs", d.multiprocessors.to_string()),
        ("compute capability", format!("{}.{}", d.compute_capability.0, d.compute_capability.1)),
        ("driver", d.driver.clone()),
        ("PTX arch", r.ptx_arch.clone()),
        ("date", r.date.clone()),
        ("commit", r.commit.clone()),
        ("memcpy", format!("{:.0} GB/s", gbps(&r.memcpy))),
    ] {
        assert!(md.contains(&format!("\n| {key} | {value} |\n")), "header row {key} = {value}");
    }
}

#[test]
fn readings_match_a_recomputation() {
    let r = sample();
    let (_, md) = render(&r, "readings");
    let has = |family: &str, text: &str| {
        let sentences = reading(&md, family);
        assert!(sentences.iter().any(|s| s.contains(text)), "{family} reading lacks {text:?}: {sentences:#?}");
    };
    let families = ["coalescing", "access_order", "layouts", "transpose", "bank", "reduce", "matmul", "distance"];
    for family in families {
        assert!(!reading(&md, family).is_empty(), "{family} has a reading");
    }
    let ratio = |x: f64| format!("{x:.2}×");

    // coalescing: the worst misaligned offset (not a multiple of 32) against offset 0, the widest
    // stride, the best vec4 grid.
    let offsets = sweep(&r, "coalescing", "offset");
    let base = offsets.iter().find(|(v, _)| *v == 0).expect("offset 0").1;
    let (k, worst) =
        offsets.iter().filter(|(v, _)| v % 32 != 0).min_by(|a, b| gbps(a.1).total_cmp(&gbps(b.1))).unwrap();
    assert_eq!(*k, 17, "the sample's slowest offset");
    has(
        "coalescing",
        &format!(
            "(offset={k}, {:.0} GB/s) is {} than offset=0",
            gbps(worst),
            cost_words(worst.median_us / base.median_us)
        ),
    );
    has("coalescing", &format!("Stride 32 runs at {:.1}% of memcpy", pct(&r, run(&r, "coalescing/stride/stride=32"))));
    let best_vec4 =
        r.runs.iter().filter(|m| m.variant.starts_with("vec4")).max_by(|a, b| gbps(a).total_cmp(&gbps(b))).unwrap();
    has("coalescing", &format!("(`vec4/blocks_per_sm=0`) reaches {:.1}% of memcpy", pct(&r, best_vec4)));

    // access_order: interleaved vs chunked at the largest per_thread; block_x vs block_y.
    let (c, i) = (run(&r, "access_order/chunked/per_thread=128"), run(&r, "access_order/interleaved/per_thread=128"));
    let (pi, pc) = (pct(&r, i), pct(&r, c));
    has("access_order", &format!("At per_thread=128, interleaved runs at {pi:.1}% of memcpy and chunked at {pc:.1}%"));
    has("access_order", &format!("`interleaved/per_thread=128` is {} faster", ratio(gbps(i) / gbps(c))));
    let (x, y) = (run(&r, "access_order/block_x"), run(&r, "access_order/block_y"));
    has("access_order", &format!("`block_x` is {} faster than `block_y`", ratio(gbps(x) / gbps(y))));

    // layouts: best and slowest.
    has("layouts", &format!("Fastest: `aos` at {:.1}% of memcpy", pct(&r, run(&r, "layouts/aos"))));
    has("layouts", &format!("Slowest: `aligned16` at {:.1}% of memcpy", pct(&r, run(&r, "layouts/aligned16"))));

    // transpose: every method as % of the copy of the same shape.
    for shape in [0, 1] {
        let copy = run(&r, &format!("transpose/copy/shape={shape}"));
        for method in ["naive", "shared", "padded"] {
            let m = run(&r, &format!("transpose/{method}/shape={shape}"));
            has("transpose", &format!("{method} {:.1}%", 100.0 * gbps(m) / gbps(copy)));
        }
        // The shape named for what it is (`shape=0` is 8192 x 8192).
        let (rows, cols) = coalesce_benches::transpose::BENCH_SHAPES[shape];
        has("transpose", &format!("shape={rows}x{cols}: naive"));
    }

    // bank: cols vs rows, padded vs rows, the gcd law.
    let (rows, cols, padded) = (run(&r, "bank/rows"), run(&r, "bank/cols"), run(&r, "bank/cols_padded"));
    has("bank", &format!("takes {} the time", ratio(cols.median_us / rows.median_us)));
    has("bank", &format!("Padded columns are {} than rows", cost_words(padded.median_us / rows.median_us)));
    let strides = sweep(&r, "bank", "stride");
    let mean = |degree: u32| {
        let t: Vec<f64> = strides.iter().filter(|(s, _)| gcd(*s, 32) == degree).map(|(_, m)| m.median_us).collect();
        t.iter().sum::<f64>() / t.len() as f64
    };
    has("bank", "time tracks gcd(stride, 32)");
    for degree in [2, 4, 8, 16, 32] {
        has("bank", &format!("{degree}-way {}", ratio(mean(degree) / mean(1))));
    }

    // reduce: best GPU method, speedup over the seed, the CPU.
    let best =
        r.runs.iter().filter(|m| m.family == "reduce" && !m.on_cpu).max_by(|a, b| gbps(a).total_cmp(&gbps(b))).unwrap();
    assert_eq!(best.variant, "shuffle_vec4");
    has("reduce", &format!("`shuffle_vec4`, reads {:.0} GB/s: {:.1}% of memcpy", gbps(best), pct(&r, best)));
    let seed = run(&r, "reduce/seed");
    has("reduce", &format!("It is {} faster than the seed", ratio(seed.median_us / best.median_us)));
    let cpu = run(&r, "reduce/cpu_threads");
    has("reduce", &format!("`cpu_threads` ({:.0} GB/s), is {} slower", gbps(cpu), ratio(gbps(best) / gbps(cpu))));

    // matmul: TFLOP/s per method, best vs naive.
    for method in ["naive", "tiled", "prefetch", "regblock"] {
        has("matmul", &format!("{method} {:.2}", tflops(run(&r, &format!("matmul/{method}")))));
    }
    let (regblock, naive) = (run(&r, "matmul/regblock"), run(&r, "matmul/naive"));
    has("matmul", &format!("`regblock`, reaches {} the naive", ratio(tflops(regblock) / tflops(naive))));

    // distance: AoS vs SoA, all points and gathers.
    for (what, aos, soa) in [("All points", "aos_all", "soa_all"), ("Gathers", "aos_gather", "soa_gather")] {
        let (a, s) = (run(&r, &format!("distance/{aos}")), run(&r, &format!("distance/{soa}")));
        has("distance", &format!("{what}: AoS {:.1}% vs SoA {:.1}% of memcpy", pct(&r, a), pct(&r, s)));
        let (win, lose, x) =
            if gbps(a) >= gbps(s) { (aos, soa, gbps(a) / gbps(s)) } else { (soa, aos, gbps(s) / gbps(a)) };
        has("distance", &format!("`{win}` is {} faster than `{lose}`", ratio(x)));
    }
}

#[test]
fn report_json_round_trips() {
    let r = sample();
    assert_eq!(Report::from_json(&r.to_json()).expect("to_json parses"), r);
    let (dir, _) = render(&r, "round-trip");
    let written = fs::read_to_string(dir.join("report.json")).expect("report.json written");
    assert_eq!(Report::from_json(&written).expect("report.json parses"), r);
    // Absent optional fields stay absent rather than becoming nulls.
    let memcpy = &r.memcpy;
    assert!(memcpy.param.is_none() && memcpy.model.is_none());
    assert!(!written.contains("null"), "no null fields written");
    // The accessors agree with the raw fields.
    let m = run(&r, "matmul/regblock");
    assert!((m.gbps() - gbps(m)).abs() < 1e-9 && (m.tflops() - tflops(m)).abs() < 1e-12);
    assert!((m.percent_of(memcpy) - pct(&r, m)).abs() < 1e-9);
}

#[test]
fn a_missing_family_loses_its_section_and_plot() {
    let full = sample();
    let dir = scratch("missing-family");
    // A full render first: the partial one below must also remove the plot it no longer draws.
    report::render(&full, &dir).expect("render the full sample");
    assert!(dir.join("bank_stride.svg").exists() && dir.join("warp_bank.svg").exists());
    let drawn: Vec<&str> =
        PLOT_FILES.iter().chain(report::WARP_FILES).copied().filter(|f| dir.join(f).exists()).collect();

    let mut r = full.clone();
    r.runs.retain(|m| m.family != "bank");
    let written = report::render(&r, &dir).expect("render without bank");
    let md = fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(!dir.join("bank_stride.svg").exists(), "stale bank plot removed");
    assert!(!written.iter().any(|p| p.ends_with("bank_stride.svg")));
    assert!(!md.contains("## bank") && !md.contains("bank_stride.svg"));
    assert!(!dir.join("warp_bank.svg").exists() && !md.contains("warp_bank.svg"), "stale bank picture removed");
    for file in drawn.iter().filter(|f| !f.contains("bank")) {
        assert!(dir.join(file).exists(), "{file} still drawn");
    }

    // One of two offset variants missing: the plot keeps the other; both missing: no plot.
    let mut r = full.clone();
    r.runs.retain(|m| !(m.family == "coalescing" && m.variant == "offset"));
    let dir = scratch("missing-variant");
    report::render(&r, &dir).expect("render without coalescing/offset");
    let texts = svg_texts(&dir.join("coalescing_offset.svg"));
    assert!(texts.iter().any(|t| t == "coalescing/offset_cg") && !texts.iter().any(|t| t == "coalescing/offset"));
    r.runs.retain(|m| !(m.family == "coalescing" && m.variant == "offset_cg"));
    report::render(&r, &dir).expect("render without any offset sweep");
    assert!(!dir.join("coalescing_offset.svg").exists());
    assert!(dir.join("coalescing_stride.svg").exists());
}

#[test]
fn the_column_walk_reading_compares_the_wide_copies() {
    // The wide transpose and its two copies made from the sample's padded transpose (any recorded
    // ones replaced): the copies 6% and 2% faster than the transpose, with the same model counts.
    // The reading gives both against memcpy, the cost of the column walk, and where the
    // transpose lands.
    let mut r = sample();
    r.runs.retain(|m| !m.variant.starts_with("wide"));
    let padded = run(&r, "transpose/padded/shape=0").clone();
    let wide = Measurement { variant: "wide".into(), run: "transpose/wide/shape=0".into(), ..padded.clone() };
    r.runs.push(wide.clone());
    let counts = report::Model {
        ld_sectors_per_request: 8.0,
        st_sectors_per_request: 8.0,
        shared_ld_bank_conflicts: 0,
        shared_st_bank_conflicts: 0,
        dram_read_bytes: wide.bytes / 2,
        dram_write_bytes: wide.bytes / 2,
        time_inputs: None,
    };
    for (variant, speedup) in [("wide_copy", 1.06), ("wide_copy_down", 1.02)] {
        let mut m = Measurement { model: Some(counts.clone()), ..wide.clone() };
        m.variant = variant.into();
        m.run = format!("transpose/{variant}/shape=0");
        m.median_us = wide.median_us / speedup;
        r.runs.push(m);
    }
    let (_, md) = render(&r, "column_walk");
    let (along, down) = (run(&r, "transpose/wide_copy/shape=0"), run(&r, "transpose/wide_copy_down/shape=0"));
    let sentence = format!(
        "shape=8192x8192: the wide tile's copy reads {:.1}% of memcpy with tiles along rows and {:.1}% down columns for the \
         same transactions in the model: walking down a column is {}; the wide transpose, which reads down \
         columns and writes along rows, runs at {:.1}% of the along-rows copy.",
        pct(&r, along),
        pct(&r, down),
        cost_words(down.median_us / along.median_us),
        100.0 * gbps(&wide) / gbps(along)
    );
    let sentences = reading(&md, "transpose");
    assert!(sentences.contains(&sentence), "{sentence:?} not in {sentences:#?}");
    // The copies are not listed as transposes; the transposes are read against the fastest copy
    // of their shape (the wide tile's here), so none is past 100% of its ceiling.
    assert!(!sentences.iter().any(|s| s.contains("wide_copy ")), "{sentences:#?}");
    let against = sentences.iter().find(|s| s.contains("of the fastest copy of the same shape, `wide_copy`"));
    let percents: Vec<f64> = against
        .expect("a sentence against the fastest copy")
        .split('%')
        .filter_map(|part| part.rsplit(' ').next()?.parse().ok())
        .collect();
    assert!(!percents.is_empty() && percents.iter().all(|&p| p <= 100.0), "{against:?}");
    // Without the down-columns copy there is no such sentence.
    r.runs.retain(|m| m.variant != "wide_copy_down");
    let (_, md) = render(&r, "column_walk_partial");
    assert!(!reading(&md, "transpose").iter().any(|s| s.contains("down columns")));
}

#[test]
fn partial_and_odd_reports_render_without_panicking() {
    let full = sample();
    // The runs each reading leans on removed: shorter readings, no panic, no made-up numbers.
    let mut r = full.clone();
    let anchors = [
        "coalescing/offset/offset=0",
        "coalescing/offset_cg/offset=0",
        "bank/rows",
        "reduce/seed",
        "matmul/naive",
        "transpose/copy/shape=0",
        "transpose/copy/shape=1",
        "distance/soa_all",
        "access_order/block_y",
    ];
    r.runs.retain(|m| !anchors.contains(&m.run.as_str()));
    let (_, md) = render(&r, "partial");
    assert!(!reading(&md, "coalescing").iter().any(|s| s.contains("offset=0")));
    assert!(reading(&md, "transpose").is_empty());
    assert!(!reading(&md, "bank").iter().any(|s| s.contains("rows")));
    assert!(reading(&md, "bank").iter().any(|s| s.contains("gcd(stride, 32)")));
    assert!(!reading(&md, "reduce").iter().any(|s| s.contains("seed")));
    assert!(!reading(&md, "distance").iter().any(|s| s.starts_with("All points")));
    assert!(reading(&md, "distance").iter().any(|s| s.starts_with("Gathers")));

    // No runs at all: the header alone, no plots.
    let mut empty = full.clone();
    empty.runs.clear();
    let dir = scratch("empty");
    let written = report::render(&empty, &dir).expect("render an empty report");
    assert_eq!(written.len(), 3, "only report.md, report.json and report.html: {written:?}");
    assert!(!fs::read_to_string(dir.join("report.md")).expect("report.md").contains("## Summary"), "no summary rows");

    // A family the renderer does not know, and a zero time: rendered, generic reading, n/a.
    let mut odd = full.clone();
    let mut extra = full.runs[0].clone();
    extra.run = "histogram/atomic".into();
    extra.family = "histogram".into();
    extra.variant = "atomic".into();
    extra.param = None;
    extra.model = None;
    let mut zero = extra.clone();
    zero.run = "histogram/zero_time".into();
    zero.variant = "zero_time".into();
    zero.median_us = 0.0;
    odd.runs.extend([extra, zero]);
    // Zero times inside plotted families too: a bar labelled n/a, a point left out.
    for m in odd.runs.iter_mut().filter(|m| m.run == "reduce/seed" || m.run == "coalescing/offset/offset=2") {
        m.median_us = 0.0;
    }
    let (dir, md) = render(&odd, "odd");
    assert!(reading(&md, "histogram").iter().any(|s| s.starts_with("Fastest:")));
    assert!(section(&md, "histogram").contains("| histogram/zero_time | 0.0 | n/a | n/a |"));
    assert!(svg_texts(&dir.join("reduce.svg")).iter().any(|t| t == "n/a"));
    assert!(!md.contains("n/a of memcpy") && !md.contains("n/a faster"), "readings skip zero times");
    assert!(reading(&md, "reduce").iter().any(|s| s.contains("`shuffle_vec4`")));
    for file in PLOT_FILES.iter().chain(report::WARP_FILES).filter(|f| dir.join(f).exists()) {
        svg_texts(&dir.join(file));
    }
}

/// A small cost curve: three sizes of every entry, the library's implementations and memcpy
/// (`sweep`), torch and CuPy for the memory-bound entries and cuBLAS for matmul (`peers`), with
/// made-up times: a flat launch floor, then time growing with the size.
fn with_sweep(mut r: Report, peers: bool) -> Report {
    use coalesce_benches::report::{PeerRow, Peers, PeersInfo, SweepRow};
    use coalesce_benches::sweep::{shape, work};
    let sizes = |entry: &str| -> Vec<u64> {
        if entry == "matmul" { vec![64, 256, 8192] } else { vec![1 << 10, 1 << 18, 1 << 30] }
    };
    let implementations = [
        ("copy", vec!["coalescing::copy", "gpu.memcpy"]),
        ("sum", vec!["reduce::sum", "reduce::sum_to"]),
        ("transpose", vec!["transpose::transpose"]),
        ("transpose_1x4", vec!["transpose::transpose"]),
        ("matmul", vec!["matmul::matmul"]),
    ];
    // Floor µs + work at 2500 GB/s (or 40 TFLOP/s), each implementation a little slower.
    let time = |entry: &str, n: u64, k: usize| {
        let (bytes, flops) = work(entry, n);
        let t = (3.0 + k as f64) + bytes as f64 / 2.5e6 / (1.0 + 0.1 * k as f64) + flops as f64 / 4e7;
        // To 0.1 µs, as a measured record holds them (and so they round-trip through JSON exactly).
        (t * 10.0).round() / 10.0
    };
    for (entry, imps) in &implementations {
        for n in sizes(entry) {
            for (k, imp) in imps.iter().enumerate() {
                let (bytes, flops) = work(entry, n);
                r.sweep.push(SweepRow {
                    entry: entry.to_string(),
                    implementation: imp.to_string(),
                    shape: shape(entry, n),
                    n,
                    median_us: time(entry, n, k),
                    bytes,
                    flops,
                });
            }
        }
    }
    if peers {
        let mut rows = Vec::new();
        for (entry, _) in &implementations {
            let names: &[&str] = if *entry == "matmul" { &["cublas"] } else { &["torch", "cupy"] };
            for n in sizes(entry) {
                for (k, peer) in names.iter().enumerate() {
                    let median_us = time(entry, n, k + 2) + 5.0;
                    rows.push(PeerRow {
                        entry: entry.to_string(),
                        shape: shape(entry, n),
                        n,
                        peer: peer.to_string(),
                        median_us,
                    });
                }
            }
        }
        let info = PeersInfo {
            device: r.device.name.clone(),
            torch: Some("2.9.0".into()),
            cupy: None,
            cuda: Some("13.0".into()),
            date: None,
        };
        r.peers = Some(Peers { info, rows });
    }
    r
}

/// Every table under `### entry` in the cost-curve section, as rows of column name → cell.
fn cost_table(md: &str, entry: &str) -> Vec<HashMap<String, String>> {
    let start = md.find(&format!("\n### {entry}\n")).unwrap_or_else(|| panic!("### {entry}"));
    let rest = &md[start + 1..];
    let end = rest[4..].find("\n### ").map_or(rest.len(), |e| e + 4);
    common::first_table(&rest[..end], "| size |")
}

#[test]
fn the_cost_curve_tables_and_plots_show_every_series() {
    let r = with_sweep(sample(), true);
    let (dir, md) = render(&r, "cost-curve");
    assert!(md.contains("\n## cost curve\n"));
    assert!(md.contains("torch 2.9.0, CuPy not importable"), "peers' versions");
    assert!(!md.contains("were not measured"));
    // The family tables are unchanged: still one row per registry run.
    assert_eq!(table_rows(&md).len(), r.runs.len());
    let peers = r.peers.as_ref().expect("peers");
    for entry in ["copy", "sum", "transpose", "transpose_1x4", "matmul"] {
        let rows = cost_table(&md, entry);
        assert_eq!(rows.len(), 3, "{entry}: one row per size");
        let unit = if entry == "matmul" { "TFLOP/s" } else { "GB/s" };
        let mut labels = Vec::new();
        for s in r.sweep.iter().filter(|s| s.entry == entry) {
            let size = if entry == "matmul" { format!("{}³", s.n) } else { format!("2^{}", s.n.ilog2()) };
            let row = rows.iter().find(|row| row["size"] == size).unwrap_or_else(|| panic!("{entry} {size}"));
            assert_eq!(row["shape"], s.shape);
            let imp = &s.implementation;
            assert_eq!(row[&format!("{imp} µs")], format!("{:.1}", s.median_us), "{entry} {size} {imp}");
            let rate = if s.flops > 0 {
                format!("{:.2}", s.flops as f64 / s.median_us / 1e6)
            } else {
                format!("{:.0}", s.bytes as f64 / s.median_us / 1e3)
            };
            assert_eq!(row[&format!("{imp} {unit}")], rate, "{entry} {size} {imp} rate");
            // Beside its fastest peer as a speed, the peer's time over the library's (above 1× the
            // library is faster). `reduce::sum` reads its result back, and no peer here does.
            let best = peers
                .rows
                .iter()
                .filter(|p| p.entry == entry && p.n == s.n)
                .min_by(|a, b| a.median_us.total_cmp(&b.median_us))
                .expect("a peer at every size");
            let name = if best.peer == "cublas" { "cuBLAS (torch)" } else { best.peer.as_str() };
            let want = if imp == "reduce::sum" {
                String::new()
            } else {
                format!("{:.3}× ({name})", best.median_us / s.median_us)
            };
            assert_eq!(row[&format!("{imp} speed vs best peer (>1 = faster)")], want, "{entry} {size} {imp}");
            labels.push(imp.clone());
        }
        for p in peers.rows.iter().filter(|p| p.entry == entry) {
            let label = if p.peer == "cublas" { "cuBLAS (torch)".to_string() } else { p.peer.clone() };
            let size = if entry == "matmul" { format!("{}³", p.n) } else { format!("2^{}", p.n.ilog2()) };
            let row = rows.iter().find(|row| row["size"] == size).expect("peer size");
            assert_eq!(row[&format!("{label} µs")], format!("{:.1}", p.median_us), "{entry} {size} {label}");
            labels.push(label);
        }
        labels.dedup();
        // Both plots name every series in their legend, and are embedded under the entry.
        for kind in ["time", "rate"] {
            let file = format!("cost_{entry}_{kind}.svg");
            let texts = svg_texts(&dir.join(&file));
            for label in &labels {
                assert!(texts.contains(label), "{file}: series {label:?} missing from {texts:?}");
            }
            assert!(texts.iter().any(|t| t.starts_with(&format!("{entry}: "))), "{file}: title");
            assert!(md.contains(&format!("]({file})")), "{file} embedded");
        }
        // The reading: where each series stops being flat.
        let section = &md[md.find(&format!("\n### {entry}\n")).unwrap()..];
        assert!(section.contains("launch and synchronisation dominate"), "{entry} reading");
    }
    // With the made-up times, copy is flat (within 2x of 2^10) up to 2^18 but not 2^30.
    assert!(md.contains("`coalescing::copy`: 3.0 µs a call at 2^10, and within 2× of that up to 2^18"), "{md}");
    for file in coalesce_benches::report::SWEEP_PLOT_FILES {
        assert!(dir.join(file).exists(), "{file} written");
    }

    // Without peers: the section says so, the plots keep the sweep's series; the JSON round-trips.
    let bare = with_sweep(sample(), false);
    let (dir, md) = render(&bare, "cost-curve-bare");
    assert!(md.contains("Peers (PyTorch, CuPy, cuBLAS) were not measured"));
    assert!(!svg_texts(&dir.join("cost_copy_time.svg")).iter().any(|t| t == "torch"));
    assert!(Report::from_json(&fs::read_to_string(dir.join("report.json")).unwrap()).unwrap() == bare);
    assert!(Report::from_json(&r.to_json()).unwrap() == r, "sweep and peers round-trip");

    // peers.json as peers.py writes it (CuPy absent: null) parses.
    let written = r#"{"info": {"device": "NVIDIA H100 80GB HBM3", "torch": "2.9.0+cu130", "cupy": null,
        "cuda": "13.0", "date": "2026-11-22T15:00:00Z"},
        "rows": [{"entry": "copy", "shape": "1024", "n": 1024, "peer": "torch", "median_us": 9.51}]}"#;
    let parsed: coalesce_benches::report::Peers = serde_json::from_str(written).expect("peers.json parses");
    assert_eq!((parsed.info.cupy, parsed.rows[0].n, parsed.rows[0].median_us), (None, 1024, 9.51));

    // A record without a sweep: no section, and the stale cost plots are removed.
    let (dir, md) = {
        let plain = sample();
        report::render(&plain, &dir).expect("re-render without the sweep");
        (dir.clone(), fs::read_to_string(dir.join("report.md")).unwrap())
    };
    assert!(!md.contains("## cost curve"));
    assert!(!dir.join("cost_copy_time.svg").exists());
}

/// A time ratio in the summary's words, recomputed: `3.5% slower`, `2.33× slower`, `12.0% faster`.
fn cost_words(q: f64) -> String {
    let (factor, word) = if q >= 1.0 { (q, "slower") } else { (1.0 / q, "faster") };
    if factor < 1.5 { format!("{:.1}% {word}", 100.0 * (factor - 1.0)) } else { format!("{factor:.2}× {word}") }
}

/// Time per unit of work: per flop where the run counts flops, else per byte.
fn per_work(m: &Measurement) -> f64 {
    m.median_us / if m.flops > 0 { m.flops as f64 } else { m.bytes as f64 }
}

/// The summary table's rows of `md`, as their four cells.
fn summary_rows(md: &str) -> Vec<Vec<String>> {
    let start = md.find("\n## Summary\n").expect("a summary section");
    let s = &md[start + 1..];
    let end = s[3..].find("\n## ").map_or(s.len(), |e| e + 3);
    s[..end]
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---") && !l.starts_with("| lesson "))
        .map(|l| l.trim_matches('|').split('|').map(|c| c.trim().to_string()).collect())
        .collect()
}

#[test]
fn the_summary_rows_are_computed_from_the_runs() {
    let r = sample();
    let (_, md) = render(&r, "summary");
    // The summary comes after the header table, before the first family's section.
    let summary_at = md.find("\n## Summary\n").expect("summary");
    assert!(md.find("| memcpy run |").expect("header") < summary_at);
    assert!(summary_at < md.find("\n## coalescing\n").expect("coalescing section"));
    let table = summary_rows(&md);
    let rows = report::summary(&r);
    assert_eq!(table.len(), rows.len());
    assert!((8..=15).contains(&rows.len()), "a short table: {} rows", rows.len());
    for (cells, row) in table.iter().zip(&rows) {
        assert_eq!(
            cells,
            &[row.lesson.to_string(), row.change.clone(), row.cost.clone(), row.model.clone(), row.why.clone()]
        );
        assert!(!row.cost.contains('-') && !row.cost.contains("n/a"), "a positive cost: {}", row.cost);
    }
    let find =
        |change: &str| rows.iter().find(|row| row.change.starts_with(change)).unwrap_or_else(|| panic!("{change}"));

    // Offset 1 against 0: the time ratio and the model's sectors, from the JSON.
    let (one, zero) = (run(&r, "coalescing/offset/offset=1"), run(&r, "coalescing/offset/offset=0"));
    let q = one.median_us / zero.median_us;
    let row = find("plain loads at offset 1 vs 0");
    assert!((row.ratios[0] - q).abs() < 1e-12, "{} vs {q}", row.ratios[0]);
    assert_eq!(row.cost, cost_words(q));
    let (m1, m0) = (one.model.as_ref().expect("model"), zero.model.as_ref().expect("model"));
    assert_eq!(m1.dram_read_bytes + m1.dram_write_bytes, m0.dram_read_bytes + m0.dram_write_bytes);
    assert_eq!(
        row.model,
        format!(
            "{} sectors a request instead of {}; the same DRAM bytes",
            m1.ld_sectors_per_request, m0.ld_sectors_per_request
        )
    );

    // Strides 2, 4, 8 and 32 against 1.
    let row = find("stride 2, 4, 8, 32 vs 1");
    let unit = run(&r, "coalescing/stride/stride=1");
    for (s, got) in [2, 4, 8, 32].iter().zip(&row.ratios) {
        let want = run(&r, &format!("coalescing/stride/stride={s}")).median_us / unit.median_us;
        assert!((got - want).abs() < 1e-12, "stride {s}: {got} vs {want}");
        assert!(row.cost.contains(&format!("{s}: {}", cost_words(want))), "{}", row.cost);
    }

    // Padded columns against unpadded: faster, said as such.
    let row = find("reading a tile's columns, padded vs unpadded");
    let q = run(&r, "bank/cols_padded").median_us / run(&r, "bank/cols").median_us;
    assert!((row.ratios[0] - q).abs() < 1e-12);
    assert!(q < 1.0 && row.cost == cost_words(q) && row.cost.ends_with("faster"));

    // The seed reduction against shuffle_vec4, and the matmul ladder in TFLOP/s.
    let q = run(&r, "reduce/shuffle_vec4").median_us / run(&r, "reduce/seed").median_us;
    assert_eq!(find("`shuffle_vec4` vs the seed").cost, cost_words(q));
    let row = find("naive → tiled");
    let ladder: Vec<&Measurement> = r.runs.iter().filter(|m| m.family == "matmul" && m.param.is_none()).collect();
    let rates: Vec<String> = ladder.iter().map(|m| format!("{:.2}", tflops(m))).collect();
    let q = per_work(ladder.last().expect("matmul runs")) / per_work(ladder[0]);
    assert_eq!(row.cost, format!("{} TFLOP/s: {} than naive", rates.join(" → "), cost_words(q)));

    // A row whose runs are missing is left out; the others stay.
    let mut partial = r.clone();
    partial.runs.retain(|m| m.run != "coalescing/offset/offset=1" && m.family != "matmul");
    let rows = report::summary(&partial);
    assert!(!rows.iter().any(|row| row.change.starts_with("plain loads") || row.lesson == "matmul"));
    assert!(rows.iter().any(|row| row.change.starts_with("L2-only")));
    let (_, md) = render(&partial, "summary-partial");
    assert_eq!(summary_rows(&md).len(), rows.len());
}

/// `text` with the HTML special characters escaped, as the page writes cell text.
fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

#[test]
fn the_html_page_holds_every_table_and_inlines_every_plot() {
    let r = with_sweep(sample(), true);
    let dir = scratch("html");
    let written = report::render(&r, &dir).expect("render");
    let md = fs::read_to_string(dir.join("report.md")).expect("report.md");
    let page = fs::read_to_string(dir.join("report.html")).expect("report.html written");
    assert!(page.starts_with("<!DOCTYPE html>") && page.trim_end().ends_with("</html>"));

    // Every markdown table is a table of the page, with as many rows, each plain cell in a cell.
    let lines: Vec<&str> = md.lines().collect();
    let tables = lines.windows(2).filter(|w| w[1].starts_with("|---")).count();
    assert!(tables >= 10, "{tables} tables in the markdown");
    assert_eq!(page.matches("<table>").count(), tables);
    let rows = lines.iter().filter(|l| l.starts_with('|') && !l.starts_with("|---")).count();
    assert_eq!(page.matches("<tr>").count(), rows);
    for line in lines.iter().filter(|l| l.starts_with('|') && !l.starts_with("|---")) {
        for cell in line.trim_matches('|').split('|').map(str::trim) {
            if !cell.is_empty() && !cell.contains('`') && !cell.contains('*') {
                assert!(page.contains(&format!(">{}</t", escape_html(cell))), "cell {cell:?} of {line:?}");
            }
        }
    }

    // Every plot written is inlined: its SVG document, from `<svg` on, is in the page.
    let svgs: Vec<&PathBuf> = written.iter().filter(|p| p.extension().is_some_and(|e| e == "svg")).collect();
    assert!(svgs.len() >= 8);
    assert_eq!(page.matches("<svg").count(), svgs.len());
    for path in svgs {
        let svg = fs::read_to_string(path).expect("svg");
        let doc = &svg[svg.find("<svg").expect("an svg element")..];
        assert!(page.contains(doc.trim()), "{} inlined", path.display());
        let file = path.file_name().and_then(|f| f.to_str()).expect("name");
        assert!(!page.contains(&format!("({file})")) && !page.contains(&format!("\"{file}\"")), "{file} not linked");
    }

    // Self-contained: no network, no script.
    for bad in ["src=\"http", "href=\"http", "<script", "<link", "@import"] {
        assert!(!page.contains(bad), "the page contains {bad}");
    }
    // Well-formed enough: every block element opened is closed.
    for tag in ["table", "thead", "tbody", "tr", "ul", "li", "p", "figure", "h1", "h2", "h3", "strong", "code"] {
        let open = page.matches(&format!("<{tag}>")).count() + page.matches(&format!("<{tag} ")).count();
        assert_eq!(open, page.matches(&format!("</{tag}>")).count(), "<{tag}> opened and closed");
    }
    assert_eq!(page.matches("<svg").count(), page.matches("</svg>").count());
    assert!(page.contains("<h2 id=\"summary\">Summary</h2>"));
    // A contents list after the title links every lesson's heading, in order.
    let nav = &page[page.find("<nav>").expect("a contents list")..page.find("</nav>").expect("closed")];
    assert!(page.find("</h1>").unwrap() < page.find("<nav>").unwrap(), "after the title");
    let links: Vec<&str> = nav.split("href=\"#").skip(1).map(|l| &l[..l.find('"').unwrap()]).collect();
    assert!(links.contains(&"summary") && links.len() >= 5, "{links:?}");
    for id in &links {
        assert!(page.contains(&format!("<h2 id=\"{id}\">")), "#{id} has its heading");
    }
    // Text is escaped: the markdown's `<`-free prose never opens a stray tag.
    assert!(!page.contains("<<") && !page.contains("&&"));
}

/// The views look runs up through the registry's types (`Report::of(Coalescing::Offset)`), never
/// by a family's name in a string: a renamed family or variant is then a compile error, not a
/// silently missing sentence or plot. Their unit tests may name families in fixtures.
#[test]
fn the_report_spells_no_family_name() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/report");
    let families: Vec<&str> = coalesce_benches::registry::families().into_iter().map(|(name, _)| name).collect();
    let mut files = 0;
    for entry in fs::read_dir(&dir).expect("src/report") {
        let path = entry.expect("a directory entry").path();
        let text = fs::read_to_string(&path).expect("a source file");
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for family in &families {
            assert!(!code.contains(&format!("\"{family}\"")), "{}: spells \"{family}\"", path.display());
        }
        files += 1;
    }
    assert!(files >= 10, "{files} files read");
}
