//! The L2 model against the committed records of every run's counters (BENCHMARKS.md): runs the
//! model follows within 10% stay within 10%. Only runs cheap to model in a debug build are here
//! (the whole registry takes minutes even in release: `cargo xtask ncu-table` does that).
use coalesce_benches::ncu::parse_checked;
use coalesce_benches::predict::{predict, runs};

/// Every run's counters on an H200.
const H200: &str = include_str!("../../results/ncu/h200-11b44ad.csv");
/// The H100's counters of its first 79 runs.
const H100: &str = include_str!("../../results/ncu/h100-7bdb538.csv");

/// Runs whose DRAM bytes the model gives within 10% of the H200 record, read and written (or
/// both under 1 MB): 1024³ multiplies through their tile streams, whose outputs stay in L2.
const FOLLOWED: [&str; 5] = [
    "matmul/warptile/size=1024",
    "matmul/warptile_sm90/size=1024",
    "matmul/warptile_async/size=1024",
    "matmul/warptile_spread/size=1024",
    "matmul/warptile_small/size=1024",
];

/// Multiplies of several waves whose blocks keep their SM busy (`matmul::blocks_at_once` in the
/// library's model): two blocks an SM that run one after the other (`regblock`, `warptile`),
/// and one block an SM with the same rows of tiles a wave (`warptile_async`), within 10% of the
/// H100 record; with every resident block progressing at once the first two read 4.4× and 1.75×
/// the model's bytes.
const ONE_AT_A_TIME: [&str; 3] = ["matmul/regblock", "matmul/warptile/size=4096", "matmul/warptile_async/size=4096"];

/// Asserts the model's DRAM bytes of each of `ids` are within 10% of `record`'s (or both under 1
/// MB), read and written.
fn within_10_percent(record: &str, ids: &[&str]) {
    let record = parse_checked(record).expect("the committed record parses");
    for &id in ids {
        let selected: Vec<_> = runs(id).into_iter().filter(|(v, p)| v.run_id(*p) == id).collect();
        assert_eq!(selected.len(), 1, "{id} is a registered run");
        let counts = predict(&selected, coalesce::model::Device::default()).remove(0).1.unwrap().expect("a GPU run");
        let counted = record.iter().find(|r| r.run == id).expect("the record has the run");
        for (what, model, metric) in [
            ("read", counts.dram_read_bytes, "dram__bytes_read.sum"),
            ("written", counts.dram_write_bytes, "dram__bytes_write.sum"),
        ] {
            let ncu = counted.metrics[metric];
            let close = (model as f64 - ncu).abs() <= 0.1 * ncu || (ncu < 1e6 && (model as f64) < 1e6);
            assert!(close, "{id}: DRAM bytes {what}, model {model}, ncu {ncu}");
        }
    }
}

#[test]
fn the_model_keeps_its_dram_bytes_within_10_percent_of_the_record() {
    within_10_percent(H200, &FOLLOWED);
}

#[test]
fn blocks_that_keep_their_sm_busy_read_what_one_at_a_time_reads() {
    within_10_percent(H100, &ONE_AT_A_TIME);
}
