//! Renders the committed H100 record (`results/report.json`: every family, the model's counts
//! for every run, the cost curve and the peers) and checks the parts of the report that teach: the
//! warp pictures against the model's own functions and against the record's tables, the plots'
//! series and the units each family's table uses, and readings that never state a negative cost.
mod common;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use coalesce::access_order::Order;
use coalesce::bank::{OUTPUTS, Pattern, Tile};
use coalesce::coalescing::Load;
use coalesce::histogram::Method as Histogram;
use coalesce::model::warp::{self, Op, Space, WarpAccess};
use coalesce::reduce::Method as Reduce;
use coalesce::transpose::Method as Transpose;
use coalesce_benches::report::{self, Measurement, Report, WARP_FILES};
use coalesce_kernels::bank::ITERS;

const RECORD: &str = include_str!("../../results/report.json");
/// The H200 record: two GPUs, so the peer family measured.
const TWO_GPU_RECORD: &str = include_str!("../../results/h200/report.json");

fn record() -> Report {
    Report::from_json(RECORD).expect("the committed record parses")
}

/// `report` rendered into a fresh folder of its own; the folder and the markdown.
fn render(report: &Report, name: &str) -> (PathBuf, String) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("report_teach-{name}"));
    if dir.exists() {
        fs::remove_dir_all(&dir).expect("remove the previous run's folder");
    }
    report::render(report, &dir).expect("render");
    let md = fs::read_to_string(dir.join("report.md")).expect("report.md written");
    (dir, md)
}

fn run<'a>(r: &'a Report, id: &str) -> &'a Measurement {
    r.runs.iter().find(|m| m.run == id).unwrap_or_else(|| panic!("{id} is in the record"))
}

fn xml(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text of every `<text>` element of an SVG, after checking it parses as an `<svg>` document.
fn svg_texts(path: &Path) -> Vec<String> {
    let text = xml(path);
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{} is not XML: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg", "{} root", path.display());
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| {
            n.descendants().filter(|d| d.is_text()).filter_map(|d| d.text()).collect::<String>().trim().to_string()
        })
        .collect()
}

/// One panel of a warp picture as the SVG states it.
struct Panel {
    case: String,
    count: u64,
    unit: String,
    heading: String,
    /// Sector boxes drawn (global panels).
    sectors: usize,
    /// Sector boxes drawn on the link between two GPUs (panels of reads from the other GPU).
    crossings: usize,
    /// `data-memory`: `peer` where the sectors are the other GPU's.
    memory: Option<String>,
    /// `data-link-bytes` and `data-useful-bytes` of a read from the other GPU.
    link_bytes: Option<u64>,
    useful_bytes: Option<u64>,
    /// Distinct words drawn per bank (shared panels).
    per_bank: HashMap<u32, usize>,
}

fn panels(path: &Path) -> Vec<Panel> {
    let text = xml(path);
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{} is not XML: {e}", path.display()));
    doc.descendants()
        .filter(|n| n.has_tag_name("g") && n.attribute("class") == Some("panel"))
        .map(|g| {
            let attr = |name: &str| g.attribute(name).unwrap_or_else(|| panic!("panel without {name}")).to_string();
            let rects = |class: &'static str| g.descendants().filter(move |n| n.attribute("class") == Some(class));
            let mut per_bank = HashMap::new();
            for word in rects("word") {
                let bank: u32 = word.attribute("data-bank").expect("a word's bank").parse().expect("a bank number");
                *per_bank.entry(bank).or_insert(0) += 1;
            }
            let heading = g
                .descendants()
                .find(|n| n.has_tag_name("text"))
                .map(|t| t.descendants().filter(|d| d.is_text()).filter_map(|d| d.text()).collect::<String>())
                .expect("a heading");
            Panel {
                case: attr("data-case"),
                count: attr("data-count").parse().expect("a count"),
                unit: attr("data-unit"),
                heading,
                sectors: rects("sector").count(),
                crossings: rects("crossing").count(),
                memory: g.attribute("data-memory").map(str::to_string),
                link_bytes: g.attribute("data-link-bytes").map(|b| b.parse().expect("a byte count")),
                useful_bytes: g.attribute("data-useful-bytes").map(|b| b.parse().expect("a byte count")),
                per_bank,
            }
        })
        .collect()
}

/// The model's access for a panel's case, computed here from the case's name alone.
fn access(case: &str) -> WarpAccess {
    let per_thread = report::PICTURE_PER_THREAD;
    let (rows, cols) = coalesce_benches::transpose::BENCH_SHAPES[0];
    let number = |prefix: &str| case.strip_prefix(prefix).and_then(|v| v.parse::<u32>().ok());
    let got = if let Some(o) = number("offset=") {
        warp::offset_copy(Load::Cached, o)
    } else if let Some(s) = number("stride=") {
        warp::stride_copy(s)
    } else if case == "aos" {
        warp::aos_loads().map(|[x, _, _]| x)
    } else if case == "aos_y" {
        warp::aos_loads().map(|[_, y, _]| y)
    } else if case == "aos_z" {
        warp::aos_loads().map(|[_, _, z]| z)
    } else if case == "soa" {
        warp::soa_load()
    } else if case == format!("interleaved/per_thread={per_thread}") {
        warp::walk(Order::Interleaved, per_thread, 0)
    } else if case == format!("chunked/per_thread={per_thread}") {
        warp::walk(Order::Chunked, per_thread, 0)
    } else if let Some(space) = [("aos_staged/round", Space::Global), ("aos_staged/x", Space::Shared)]
        .into_iter()
        .find_map(|(name, space)| (name == case).then_some(space))
    {
        warp::aos_staged(space, 0)
    } else if let Some((method, space, op)) = [
        ("shared/column", Transpose::Shared, Space::Shared, Op::Load),
        ("padded/column", Transpose::Padded, Space::Shared, Op::Load),
        ("padded/store", Transpose::Padded, Space::Global, Op::Store),
    ]
    .into_iter()
    .find_map(|(name, method, space, op)| (name == case).then_some((method, space, op)))
    {
        warp::transpose_tile(method, space, op, rows, cols)
    } else if let Some((method, kind)) = [
        ("global/uniform", Histogram::Global, 0),
        ("global/skewed", Histogram::Global, 1),
        ("shared/uniform", Histogram::Shared, 0),
        ("shared/skewed", Histogram::Shared, 1),
    ]
    .into_iter()
    .find_map(|(name, method, kind)| (name == case).then_some((method, kind)))
    {
        // Warp 0 adds values of the first block only.
        let block = coalesce_kernels::histogram::BLOCK * coalesce_kernels::histogram::VECTORS_PER_THREAD * 4;
        warp::histogram_atomic(method, &coalesce_benches::histogram::bench_values(kind, block as usize))
    } else if case == "cp_async/global" {
        warp::cp_async(Space::Global)
    } else if case == "cp_async/ring" {
        warp::cp_async(Space::Shared)
    } else if case == "copy_read" {
        warp::copy_any_load()
    } else if let Some(o) = number("offset_read/offset=") {
        warp::offset_copy(Load::Cached, o)
    } else if let Some(s) = number("stride_read/stride=") {
        warp::stride_copy(s)
    } else if case == "naive/load" {
        warp::transpose_naive(Op::Load, rows, cols)
    } else if case == "naive/store" {
        warp::transpose_naive(Op::Store, rows, cols)
    } else if let Some(tile) = [("rows", Tile::Rows), ("cols", Tile::Cols), ("cols_padded", Tile::ColsPadded)]
        .into_iter()
        .find_map(|(name, tile)| (name == case).then_some(tile))
    {
        warp::tile_read(tile)
    } else if let Some(d) = number("interleaved_conflicts/d=") {
        warp::reduce_level(Reduce::InterleavedConflicts, d)
    } else if let Some(d) = number("sequential/d=") {
        warp::reduce_level(Reduce::Sequential, d)
    } else {
        panic!("a panel case this test does not know: {case}")
    };
    got.unwrap_or_else(|e| panic!("{case}: {e}"))
}

/// The record's run whose table row a panel's count must agree with, and which of its counts.
fn table_count(r: &Report, case: &str) -> Option<f64> {
    let model = |id: &str| run(r, id).model.clone().expect("the record's runs carry the model's counts");
    let per_thread = report::PICTURE_PER_THREAD;
    Some(match case {
        "aos" => model("layouts/aos").ld_sectors_per_request,
        "soa" => model("layouts/soa").ld_sectors_per_request,
        "naive/load" => model("transpose/naive/shape=0").ld_sectors_per_request,
        "naive/store" => model("transpose/naive/shape=0").st_sectors_per_request,
        "aos_staged/round" => model("layouts/aos_staged").ld_sectors_per_request,
        "padded/store" => model("transpose/padded/shape=0").st_sectors_per_request,
        c if c.starts_with("offset=") => model(&format!("coalescing/offset/{c}")).ld_sectors_per_request,
        c if c.starts_with("stride=") => model(&format!("coalescing/stride/{c}")).ld_sectors_per_request,
        c if c.ends_with(&format!("/per_thread={per_thread}")) => {
            model(&format!("access_order/{c}")).ld_sectors_per_request
        }
        // The two-GPU reads, where the record measured them.
        c if c.starts_with("copy_read") || c.starts_with("offset_read/") || c.starts_with("stride_read/") => {
            let id = format!("peer/{c}");
            r.runs.iter().find(|m| m.run == id)?;
            model(&id).ld_sectors_per_request
        }
        _ => return None,
    })
}

#[test]
fn each_warp_picture_states_the_models_count() {
    let r = record();
    let (dir, md) = render(&r, "pictures");
    let page = xml(&dir.join("report.html"));
    let mut seen = 0;
    for file in WARP_FILES {
        let path = dir.join(file);
        assert!(path.exists(), "{file} drawn from the full record");
        svg_texts(&path);
        // Linked from the markdown's section, inlined in the page.
        assert!(md.contains(&format!("]({file})")), "{file} linked");
        let svg = xml(&path);
        assert!(page.contains(svg[svg.find("<svg").unwrap()..].trim()), "{file} inlined in report.html");
        let panels = panels(&path);
        assert!(panels.len() >= 2, "{file}: a comparison, {} panels", panels.len());
        for p in panels {
            let a = access(&p.case);
            let (count, unit) = match (p.unit.as_str(), a.contention) {
                ("sector", None) => (a.sectors(), "sector"),
                ("atomic", Some(c)) => (c.busiest, "atomic"),
                ("wavefront", None) => (a.wavefronts(), "wavefront"),
                (unit, c) => panic!("{file} {}: a panel in {unit}s of an access with contention {c:?}", p.case),
            };
            assert_eq!(p.count, count, "{file} {}: the model counts {count} {unit}s", p.case);
            let plural = if count == 1 { "" } else { "s" };
            assert!(p.heading.contains(&format!(": {count} {unit}{plural}")), "{file} {}: {:?}", p.case, p.heading);
            // Only reads of the other GPU's memory draw their sectors again, on the link.
            let crossing = if p.memory.as_deref() == Some("peer") { p.sectors } else { 0 };
            assert_eq!(p.crossings, crossing, "{file} {}: {:?}", p.case, p.memory);
            if unit == "sector" {
                assert_eq!(p.sectors as u64, count, "{file} {}: one box a sector", p.case);
            } else if unit == "atomic" {
                // Every lane's bin is drawn: the busiest takes `count` of the lines.
                assert!(p.sectors >= 1 && count >= 1, "{file} {}", p.case);
            } else {
                let deepest = p.per_bank.values().copied().max().unwrap_or(0) as u64;
                assert_eq!(deepest, count, "{file} {}: the deepest bank is the wavefront count", p.case);
            }
            // The same count as the record's table, where a run of the case is in it.
            if let Some(table) = table_count(&r, &p.case) {
                assert_eq!(count as f64, table, "{file} {}: picture and table agree", p.case);
            }
            seen += 1;
        }
    }
    assert!(seen >= 15, "{seen} panels");
    // The bank kernel's table: its conflicts are the pictures' wavefronts beyond the first, for
    // every load of every warp.
    let loads = u64::from(ITERS) * u64::from(OUTPUTS / 32);
    for (id, tile) in [("bank/rows", Tile::Rows), ("bank/cols", Tile::Cols), ("bank/cols_padded", Tile::ColsPadded)] {
        let conflicts = run(&r, id).model.as_ref().expect("model").shared_ld_bank_conflicts;
        assert_eq!((warp::tile_read(tile).unwrap().wavefronts() - 1) * loads, conflicts, "{id}");
    }
    // The section sits after the summary, before the first family.
    let at = md.find("\n## What a warp touches\n").expect("the section");
    assert!(md.find("\n## Summary\n").unwrap() < at && at < md.find("\n## coalescing\n").unwrap());

    // Without a family's runs, its picture is neither drawn nor linked, and a stale one goes.
    let mut partial = r.clone();
    partial.runs.retain(|m| m.family != "reduce");
    report::render(&partial, &dir).expect("re-render without reduce");
    assert!(!dir.join("warp_reduce.svg").exists());
    assert!(!xml(&dir.join("report.md")).contains("warp_reduce.svg"));
}

/// The least-squares line of `points`, computed here.
fn fit(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    let (sx, sy) = points.iter().fold((0.0, 0.0), |(a, b), p| (a + p.0, b + p.1));
    let (mx, my) = (sx / n, sy / n);
    let slope = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>()
        / points.iter().map(|p| (p.0 - mx).powi(2)).sum::<f64>();
    (my - slope * mx, slope)
}

#[test]
fn the_plots_show_each_lesson() {
    let r = record();
    let (dir, md) = render(&r, "plots");
    let texts = |file: &str| svg_texts(&dir.join(file));

    // Offsets against offset 0 on an axis that does not start at 0, sectors on a second axis.
    let t = texts("coalescing_offset.svg");
    assert!(t.iter().any(|t| t.starts_with("% of plain loads at offset 0, axis from ")), "{t:?}");
    for label in ["coalescing/offset", "coalescing/offset_cg", "sectors per request, coalescing/offset (model)"] {
        assert!(t.iter().any(|t| t == label), "coalescing_offset.svg: {label} in {t:?}");
    }
    assert!(t.iter().any(|t| t == "sectors per load request (model)"), "the right axis");

    // Strides on a log axis, with the model's useful bytes.
    let t = texts("coalescing_stride.svg");
    for label in
        ["coalescing/stride, % of stride 1", "useful bytes / bytes moved (model)", "stride (floats, log2 scale)"]
    {
        assert!(t.iter().any(|t| t == label), "coalescing_stride.svg: {label}");
    }
    for power in ["1", "2", "4", "8", "16", "32"] {
        assert!(t.iter().any(|t| t == power), "coalescing_stride.svg: tick {power}");
    }

    // Bank time against the model's wavefronts, with the least-squares line fitted here.
    let points: Vec<(f64, f64)> = r
        .runs
        .iter()
        .filter(|m| m.run.starts_with("bank/stride/"))
        .map(|m| {
            let s = m.param.as_ref().expect("a stride").value;
            (warp::bank_read(Pattern::Stride(s), 0).unwrap().wavefronts() as f64, m.median_us)
        })
        .collect();
    let (a, b) = fit(&points);
    let t = texts("bank_stride.svg");
    let line = format!("least squares: {a:.0} µs + {b:.1} µs a wavefront");
    assert!(t.contains(&line), "{line:?} not in {t:?}");
    assert!(t.iter().any(|t| t == "wavefronts a warp load takes (model)"));
    assert!(md.contains(&format!("the least-squares line over the stride sweep is {a:.0} µs + {b:.1} µs a wavefront")));

    // Transpose and histogram bars, one colour per shape or input.
    let t = texts("transpose.svg");
    for label in ["shape=8192x8192", "shape=4096x16384", "naive", "padded", "wide"] {
        assert!(t.iter().any(|t| t == label), "transpose.svg: {label}");
    }
    let t = texts("histogram.svg");
    for label in ["input=uniform", "input=skewed", "global", "shared", "cluster"] {
        assert!(t.iter().any(|t| t == label), "histogram.svg: {label}");
    }

    // The matmul ladder at the naive kernel's size, against cuBLAS at that size.
    let naive = run(&r, "matmul/naive");
    let cublas = r
        .peers
        .as_ref()
        .expect("peers")
        .rows
        .iter()
        .find(|p| p.peer == "cublas" && 2 * p.n.pow(3) == naive.flops)
        .expect("cuBLAS at the ladder's size");
    let t = texts("matmul.svg");
    let rate = naive.flops as f64 / cublas.median_us / 1e6;
    assert!(t.contains(&format!("cuBLAS (torch) at {}³: {rate:.2}", cublas.n)), "{t:?}");
    // Each bar is labelled by its variant and its parameter as a person reads it.
    for m in r.runs.iter().filter(|m| m.family == "matmul") {
        let name = match (&m.param, m.param_label()) {
            (None, _) => m.variant.clone(),
            (Some(_), Some(l)) => format!("{} {l}", m.variant),
            (Some(p), None) => format!("{} {}³", m.variant, p.value),
        };
        assert_eq!(t.contains(&name), m.flops == naive.flops, "matmul.svg: {name} on the ladder");
    }
    assert!(t.iter().any(|t| t.starts_with("FP32 peak (FMA probe, this run): ")), "{t:?}");
    // Bytes per FMA, falling with each stage's reuse: naive's 5 (two 4-byte loads, 2.5 sectors a
    // request of A's broadcast row) to the tiled kernel's 0.25 (32 FMAs a loaded float).
    let t = texts("matmul_loads.svg");
    assert!(t.iter().any(|t| *t == "5.00") && t.iter().any(|t| *t == "0.25"), "{t:?}");
    // TFLOP/s against size, every size-swept variant and cuBLAS from the same record.
    let t = texts("matmul_size.svg");
    assert!(t.iter().any(|t| t == "cuBLAS (torch), same record"));
    for variant in ["warptile", "warptile_sm90", "warptile_async", "warptile_streamk", "warptile_small"] {
        assert!(t.iter().any(|t| *t == format!("matmul/{variant}")), "matmul_size.svg: {variant}");
    }
    assert!(md.contains("](matmul_size.svg)") && md.contains("](transpose.svg)") && md.contains("](histogram.svg)"));
}

/// The header and body rows of the table under `## family`.
fn family_table(md: &str, family: &str) -> Vec<HashMap<String, String>> {
    let start = md.find(&format!("\n## {family}\n")).unwrap_or_else(|| panic!("## {family}"));
    common::first_table(&md[start..], "| run |")
}

#[test]
fn each_familys_table_uses_the_units_that_fit() {
    let r = record();
    let (_, md) = render(&r, "units");
    // Shared memory: no GB/s; the time against the conflict-free read and the model's wavefronts.
    let rows_time = run(&r, "bank/rows").median_us;
    let bank = family_table(&md, "bank");
    assert_eq!(bank.len(), r.runs.iter().filter(|m| m.family == "bank").count());
    for row in &bank {
        assert!(!row.contains_key("GB/s") && !row.contains_key("% of memcpy"), "{row:?}");
        let m = run(&r, &row["run"]);
        assert_eq!(row["time × rows"], format!("{:.2}×", m.median_us / rows_time));
        let pattern = match m.variant.as_str() {
            "rows" => Pattern::Tile(Tile::Rows),
            "cols" => Pattern::Tile(Tile::Cols),
            "cols_padded" => Pattern::Tile(Tile::ColsPadded),
            _ => Pattern::Stride(m.param.as_ref().expect("a stride").value),
        };
        let wavefronts = warp::bank_read(pattern, 0).unwrap().wavefronts();
        assert_eq!(row["wavefronts a warp load (model)"], wavefronts.to_string(), "{}", row["run"]);
    }
    // FLOP-bound: TFLOP/s and the speed against cuBLAS at the same size (cuBLAS's time over the
    // run's), no GB/s.
    let peers = &r.peers.as_ref().expect("peers").rows;
    for row in family_table(&md, "matmul") {
        assert!(!row.contains_key("GB/s") && !row.contains_key("% of memcpy"), "{row:?}");
        let id = row["run"].split(" (").next().unwrap();
        let m = run(&r, id);
        assert_eq!(row["TFLOP/s"], format!("{:.2}", m.flops as f64 / m.median_us / 1e6));
        let cublas = peers.iter().find(|p| p.peer == "cublas" && 2 * p.n.pow(3) == m.flops);
        let want = cublas.map_or(String::new(), |c| format!("{:.3}×", c.median_us / m.median_us));
        assert_eq!(row["speed vs cuBLAS (>1 = faster)"], want, "{id}");
    }
    // Memory-bound families keep GB/s and % of memcpy.
    for row in family_table(&md, "transpose") {
        assert!(row.contains_key("GB/s") && row.contains_key("% of memcpy"));
    }
}

/// Whether `text` holds a signed number: a `-` or `+` (or a minus sign) right before a digit,
/// other than inside a parameter label such as `src+1/dst+0`.
fn signed_number(text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    chars.windows(3).any(|w| {
        let sign = matches!(w[1], '-' | '−') || (w[1] == '+' && !w[0].is_ascii_alphabetic());
        sign && w[2].is_ascii_digit() && !w[0].is_ascii_alphanumeric()
    })
}

#[test]
fn readings_never_state_a_negative_cost() {
    assert!(signed_number("costs -5.1%") && signed_number("is +5.8% of") && signed_number("(−3 µs)"));
    assert!(!signed_number("src+1/dst+0") && !signed_number("2-way, 1-D") && !signed_number("lane l - 1"));
    let r = record();
    let (_, md) = render(&r, "readings");
    let bullets: Vec<&str> = md.lines().filter_map(|l| l.strip_prefix("- ")).collect();
    assert!(bullets.len() > 30);
    for line in bullets.iter().copied().chain(report::summary(&r).iter().map(|row| row.cost.as_str())) {
        assert!(!signed_number(line), "a signed number in {line:?}");
        assert!(!line.contains("costs -") && !line.contains("costs +"), "{line:?}");
    }
    // The record's L2-only loads are slower at offset 0 than at any misaligned offset: said as
    // "faster", with the measured numbers.
    let base = run(&r, "coalescing/offset_cg/offset=0");
    assert!(
        bullets.iter().any(|b| b.starts_with("L2-only `.cg` loads: even the slowest misaligned offset")
            && b.contains("faster than offset=0")
            && b.contains(&format!("({:.0} GB/s)", base.bytes as f64 / base.median_us / 1e3))),
        "{bullets:#?}"
    );
    // AoS beats SoA in this record while the model counts the same DRAM bytes (within 1%) and
    // more sectors a request for AoS: the reading says the model does not explain it.
    let (aos, soa) = (run(&r, "layouts/aos"), run(&r, "layouts/soa"));
    assert!(aos.median_us < soa.median_us);
    let (ma, ms) = (aos.model.as_ref().unwrap(), soa.model.as_ref().unwrap());
    let (da, ds) =
        ((ma.dram_read_bytes + ma.dram_write_bytes) as f64, (ms.dram_read_bytes + ms.dram_write_bytes) as f64);
    assert!((da - ds).abs() <= 0.01 * da.max(ds), "{da} against {ds}");
    let layouts: Vec<&&str> = bullets.iter().filter(|b| b.starts_with("`aos` is ")).collect();
    assert_eq!(layouts.len(), 1, "{bullets:#?}");
    let sentence = layouts[0];
    let faster = 100.0 * (soa.median_us / aos.median_us - 1.0);
    assert!(sentence.contains(&format!("`aos` is {faster:.1}% faster than `soa`")), "{sentence}");
    assert!(sentence.contains("the model does not explain it") && sentence.ends_with("unexplained."), "{sentence}");
    assert!(sentence.contains(&format!(
        "{:.0} sectors a load request for `aos` against {:.0}",
        ma.ld_sectors_per_request, ms.ld_sectors_per_request
    )));
}

/// The pictures are drawn to scale: within a figure every sector is as wide, so a panel's sectors
/// take room in proportion to the bytes they move.
#[test]
fn warp_pictures_draw_every_panel_to_one_scale() {
    let r = record();
    let (dir, _) = render(&r, "scale");
    for file in ["warp_stride.svg", "warp_access_order.svg", "warp_offset.svg", "warp_layouts.svg", "warp_peer.svg"] {
        let svg = std::fs::read_to_string(dir.join(file)).unwrap();
        let widths: std::collections::BTreeSet<&str> = svg
            .lines()
            .filter(|l| l.contains("class=\"sector\""))
            .filter_map(|l| l.split("width=\"").nth(1)?.split('"').next())
            .collect();
        assert_eq!(widths.len(), 1, "{file}: sector widths {widths:?}");
    }
}

/// The two-GPU picture: a read of the other GPU's memory moves whole sectors across the link,
/// the wasted bytes with the used. Drawn from the model whether or not the record could measure
/// the lesson: in the peer section of the H200 record, under "Not measured here" in the H100's.
#[test]
fn the_two_gpu_picture_sends_every_sector_across_the_link() {
    let two = Report::from_json(TWO_GPU_RECORD).expect("the H200 record parses");
    let one = record();
    assert!(one.runs.iter().all(|m| m.family != "peer") && one.skipped.iter().any(|s| s.run.starts_with("peer/")));
    // (case, sectors, bytes used): the copy's 16-byte vectors, one float off a sector, stride 8.
    let want = [("copy_read", 16, 512), ("offset_read/offset=1", 5, 128), ("stride_read/stride=8", 32, 128)];
    for (r, name, heading) in [(&two, "peer-two", "\n## peer\n"), (&one, "peer-one", "\n## Not measured here\n")] {
        let (dir, md) = render(r, name);
        let panels = panels(&dir.join("warp_peer.svg"));
        assert_eq!(panels.iter().map(|p| p.case.as_str()).collect::<Vec<_>>(), want.map(|w| w.0), "{name}");
        for (p, (case, sectors, used)) in panels.iter().zip(want) {
            assert_eq!(
                (p.count, p.sectors, p.crossings),
                (sectors, sectors as usize, sectors as usize),
                "{name} {case}"
            );
            assert_eq!(p.memory.as_deref(), Some("peer"), "{name} {case}: every sector is the other GPU's");
            assert_eq!((p.link_bytes, p.useful_bytes), (Some(32 * sectors), Some(used)), "{name} {case}");
            assert!(
                p.heading.contains(&format!("{used} of the {} bytes moved are used", 32 * sectors)),
                "{:?}",
                p.heading
            );
        }
        // Stride 8: 32 sectors cross for 4 sectors' worth of floats.
        assert_eq!(panels[2].useful_bytes.unwrap().div_ceil(32), 4);
        // In its place: after the heading, before the next section.
        let at = md.find(heading).unwrap_or_else(|| panic!("{name}: {heading:?}"));
        let end = md[at + 1..].find("\n## ").map_or(md.len(), |e| at + 1 + e);
        let image = md.find("](warp_peer.svg)").expect("the picture is embedded");
        assert!(at < image && image < end, "{name}: the picture sits in {heading:?}");
        assert!(md.contains("[warp_peer.svg](#"), "{name}: linked from the pictures' section");
    }
    // Each count is the H200 record's table's: the same sectors a request as the measured runs.
    let (dir, md) = render(&two, "peer-table");
    for p in panels(&dir.join("warp_peer.svg")) {
        assert_eq!(Some(p.count as f64), table_count(&two, &p.case), "{}", p.case);
    }
    // The lesson reads picture, then reading, then table.
    let section = &md[md.find("\n## peer\n").unwrap()..];
    let (picture, reading, table) = (
        section.find("](warp_peer.svg)").unwrap(),
        section.find("**Reading.**").unwrap(),
        section.find("| run |").unwrap(),
    );
    assert!(picture < reading && reading < table);
    // A record with neither peer runs nor skipped ones (a filtered run) has no such picture.
    let mut none = one.clone();
    none.skipped.clear();
    let (dir, md) = render(&none, "peer-none");
    assert!(!dir.join("warp_peer.svg").exists() && !md.contains("warp_peer.svg"));
}
