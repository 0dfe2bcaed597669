//! The ncu comparison on real counters: `tests/data/ncu-sample.csv` holds five runs of the
//! bundle's ncu step on an H100 (commit 2ea6bc8, the kernels of this tree), in the step's format.
use std::collections::BTreeMap;

use coalesce::bank::Tile;
use coalesce::model::Counts;
use coalesce_benches::bank::Bank;
use coalesce_benches::family::Family;
use coalesce_benches::ncu::{compare, markdown, parse, parse_checked};

const SAMPLE: &str = include_str!("data/ncu-sample.csv");

#[test]
fn the_sample_parses_into_runs_and_metrics() {
    let runs = parse(SAMPLE);
    let ids: Vec<&str> = runs.iter().map(|r| r.run.as_str()).collect();
    assert_eq!(
        ids,
        [
            "coalescing/offset/offset=1",
            "layouts/aos_staged",
            "transpose/padded/shape=0",
            "bank/cols",
            "reduce/interleaved_conflicts"
        ]
    );
    let offset = &runs[0];
    assert_eq!(offset.kernel, coalesce_kernels::coalescing::coalescing_offset.name());
    assert_eq!(offset.metrics.len(), 10);
    assert_eq!(offset.metrics["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"], 10_485_760.0);
    assert_eq!(offset.metrics["dram__bytes_read.sum"], 268_463_104.0);
}

#[test]
fn the_model_meets_the_counters_and_marks_what_it_does_not_explain() {
    let runs = parse(SAMPLE);
    let mut predicted = BTreeMap::new();
    // bank/cols from the model itself (cheap: the ITERS loop is replayed for one warp).
    predicted.insert("bank/cols".to_string(), Bank::Tile(Tile::Cols).model(0, 132).unwrap().unwrap());
    // layouts/aos_staged at its bench size (2^25 float3, 2^20 warps), as the model counts it:
    // 3 coalesced loads and stores a warp, 6 conflict-free shared loads and stores.
    let warps = 1u64 << 20;
    predicted.insert(
        "layouts/aos_staged".to_string(),
        Counts {
            ld_requests: 3 * warps,
            ld_sectors: 12 * warps,
            st_requests: 3 * warps,
            st_sectors: 12 * warps,
            shared_ld_wavefronts: 6 * warps,
            shared_st_wavefronts: 6 * warps,
            dram_read_bytes: 12 << 25,
            dram_write_bytes: 12 << 25,
            ..Counts::default()
        },
    );
    let (rows, missing) = compare(&runs, &predicted);
    assert_eq!(missing, ["coalescing/offset/offset=1", "transpose/padded/shape=0", "reduce/interleaved_conflicts"]);
    let row = |run: &str, q: &str| rows.iter().find(|r| r.run == run && r.quantity == q).unwrap();
    // 32-way conflicts on every one of the ITERS column reads of every warp, exactly.
    let cols = row("bank/cols", "shared_ld_wavefronts");
    assert_eq!((cols.predicted, cols.measured, cols.off()), (1_107_296_256.0, 1_107_296_256.0, false));
    assert!(!row("bank/cols", "shared_ld_bank_conflicts").off());
    assert!(!row("bank/cols", "ld_sectors_per_request").off());
    // The table is 8 KiB and the sums 1 MiB: L2 holds them, DRAM sees other amounts.
    assert!(row("bank/cols", "dram_write_bytes").off());
    // The staged layout's loads meet the model; its shared loads show ~0.56 M conflicts the
    // index math does not make: marked.
    assert!(!row("layouts/aos_staged", "ld_sectors").off());
    let conflicts = row("layouts/aos_staged", "shared_ld_bank_conflicts");
    assert_eq!((conflicts.predicted, conflicts.measured, conflicts.off()), (0.0, 559_995.0, true));
    // No store-wavefront counter in this older sample: that row is left out, not invented.
    assert!(rows.iter().all(|r| r.quantity != "shared_st_wavefronts"));
    let table = markdown(&rows, false);
    assert!(table.contains("| layouts/aos_staged | shared_ld_bank_conflicts | 0 | 559,995 | ∞ | **off** (> 5 %) |"));
    let only_off = markdown(&rows, true);
    assert!(!only_off.contains("| bank/cols | shared_ld_wavefronts |"));
    assert!(only_off.lines().last().unwrap().starts_with("2 runs, "));
}

#[test]
fn a_run_of_two_launches_sums_their_counters() {
    // Stream-K's whole waves and its shared row, caught by one regex (IDs 0 and 1).
    let header = r#""ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value""#;
    let row = |id: u32, kernel: &str, metric: &str, value: &str| {
        format!(
            r#""{id}","9","gpu","127.0.0.1","{kernel}","1","13","(256, 1, 1)","(132, 3, 1)","0","9.0","Command line profiler metrics","{metric}","","{value}""#
        )
    };
    let (whole, row_k) = (
        coalesce_kernels::matmul::matmul_warptile_streamk_waves.name(),
        coalesce_kernels::matmul::matmul_warptile_streamk.name(),
    );
    let csv = [
        "# matmul/warptile_streamk/size=4096".to_string(),
        header.to_string(),
        row(0, whole, "dram__bytes_read.sum", "1,000"),
        row(0, whole, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "300"),
        row(1, row_k, "dram__bytes_read.sum", "24"),
        row(1, row_k, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "40"),
    ]
    .join("\n");
    let runs = parse(&csv);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].kernel, format!("{whole}+{row_k}"));
    assert_eq!(runs[0].metrics["dram__bytes_read.sum"], 1024.0);
    assert_eq!(runs[0].metrics["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"], 340.0);
}

#[test]
fn a_file_that_is_not_an_ncu_csv_is_refused() {
    assert_eq!(parse_checked(SAMPLE).unwrap(), parse(SAMPLE));
    let report = include_str!("data/sample-report.json");
    for (what, text) in [
        ("empty", ""),
        ("JSON", report),
        ("another CSV", "a,b,c\n1,2,3\n"),
        ("a quoted CSV", "\"ID\",\"Name\"\n\"0\",\"x\"\n"),
    ] {
        let e = parse_checked(text).unwrap_err();
        assert!(e.starts_with("not an ncu CSV"), "{what}: {e}");
        assert!(!e.contains('\n'), "{what}: one line");
    }
    // The header alone, or headers of runs ncu failed for: no metric rows.
    let header = SAMPLE.lines().find(|l| l.starts_with("\"ID\"")).unwrap();
    let e = parse_checked(&format!("# bank/cols\n{header}\nncu failed for bank/cols\n")).unwrap_err();
    assert!(e.contains("without metric rows"), "{e}");
}
