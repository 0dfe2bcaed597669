//! The ncu counters of a bundle run beside the model (`cargo xtask ncu-table CSV`):
//!
//!   ncu_table CSV [--sms N] [--only-off]
//!
//! Reads the bundle's `ncu.csv` (refusing a file that is not one), predicts every run in it with
//! the model (no GPU) for a GPU of `--sms` SMs (default 132, the H100 of BENCHMARKS.md), and
//! prints a markdown table of each quantity, predicted and measured, with their ratio; rows
//! further apart than 5 % (10 % for DRAM bytes) are marked. `--only-off` prints the marked rows
//! only. `--help` says the same.
use std::collections::BTreeMap;
use std::process::ExitCode;

use clap::Parser;
use coalesce::model::Device;
use coalesce_benches::cli::{Failure, NcuTableArgs, exit, print};
use coalesce_benches::ncu::{compare, markdown, parse_checked};
use coalesce_benches::predict::{predict, runs};

fn main() -> ExitCode {
    exit(run(NcuTableArgs::parse()))
}

fn run(args: NcuTableArgs) -> Result<(), Failure> {
    let path = args.csv.display();
    let text = std::fs::read_to_string(&args.csv).map_err(|e| format!("{path}: {e}"))?;
    let profiled = parse_checked(&text).map_err(|e| format!("{path}: {e}"))?;
    let wanted: Vec<_> = runs("").into_iter().filter(|(v, p)| profiled.iter().any(|r| r.run == v.run_id(*p))).collect();
    let mut predicted = BTreeMap::new();
    for (run, prediction) in predict(&wanted, Device { sms: args.sms, ..Device::default() }) {
        match prediction {
            Ok(Some(counts)) => {
                predicted.insert(run, counts);
            }
            Ok(None) => {}
            Err(e) => eprintln!("{run}: the model failed: {e}"),
        }
    }
    let (rows, missing) = compare(&profiled, &predicted);
    print(&markdown(&rows, args.only_off))?;
    for run in missing {
        eprintln!("{run}: no model for this run (not in the registry, or a CPU variant)");
    }
    Ok(())
}
