//! The L2 model against the committed record of every run's counters on an H200
//! (`results/ncu/h200-11b44ad.csv`, BENCHMARKS.md): runs the model follows within 10% stay
//! within 10%. Only runs cheap to model in a debug build are here (the whole registry takes
//! minutes even in release: `cargo xtask ncu-table` does that).
use coalesce_benches::ncu::parse_checked;
use coalesce_benches::predict::{predict, runs};

const RECORD: &str = include_str!("../../results/ncu/h200-11b44ad.csv");

/// Runs whose DRAM bytes the model gives within 10% of the record, read and written (or both
/// under 1 MB): 1024³ multiplies through their tile streams, whose outputs stay in L2.
const FOLLOWED: [&str; 5] = [
    "matmul/warptile/size=1024",
    "matmul/warptile_sm90/size=1024",
    "matmul/warptile_async/size=1024",
    "matmul/warptile_spread/size=1024",
    "matmul/warptile_small/size=1024",
];

#[test]
fn the_model_keeps_its_dram_bytes_within_10_percent_of_the_record() {
    let record = parse_checked(RECORD).expect("the committed record parses");
    for id in FOLLOWED {
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
