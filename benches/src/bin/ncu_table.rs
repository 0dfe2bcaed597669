//! The ncu counters of a bundle run beside the model (`cargo xtask ncu-table CSV`):
//!
//!   ncu_table CSV [--sms N] [--only-off]
//!
//! Reads the bundle's `ncu.csv`, predicts every run in it with the model (no GPU) for a GPU of
//! `--sms` SMs (default 132, the H100 of BENCHMARKS.md), and prints a markdown table of each
//! quantity, predicted and measured, with their ratio; rows further apart than 5 % (10 % for
//! DRAM bytes) are marked. `--only-off` prints the marked rows only.
use std::collections::BTreeMap;
use std::process::ExitCode;

use coalesce_benches::ncu::{compare, markdown, parse};
use coalesce_benches::predict::{predict, runs};

const USAGE: &str = "usage: ncu_table CSV [--sms N] [--only-off]";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (mut csv, mut sms, mut only_off) = (None, coalesce::model::DEFAULT_SMS, false);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--only-off" => only_off = true,
            "--sms" => match args.next().and_then(|v| v.parse().ok()).filter(|&v: &u32| v > 0) {
                Some(v) => sms = v,
                None => {
                    eprintln!("--sms needs a positive SM count\n{USAGE}");
                    return ExitCode::FAILURE;
                }
            },
            flag if flag.starts_with('-') => {
                eprintln!("unknown option {flag}\n{USAGE}");
                return ExitCode::FAILURE;
            }
            path => csv = Some(path.to_string()),
        }
    }
    let Some(path) = csv else {
        eprintln!("{USAGE}");
        return ExitCode::FAILURE;
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let profiled = parse(&text);
    let wanted: Vec<_> = runs("").into_iter().filter(|(v, p)| profiled.iter().any(|r| r.run == v.run_id(*p))).collect();
    let mut predicted = BTreeMap::new();
    for (run, prediction) in predict(&wanted, sms) {
        match prediction {
            Ok(Some(counts)) => {
                predicted.insert(run, counts);
            }
            Ok(None) => {}
            Err(e) => eprintln!("{run}: the model failed: {e}"),
        }
    }
    let (rows, missing) = compare(&profiled, &predicted);
    print!("{}", markdown(&rows, only_off));
    for run in missing {
        eprintln!("{run}: no model for this run (not in the registry, or a CPU variant)");
    }
    ExitCode::SUCCESS
}
