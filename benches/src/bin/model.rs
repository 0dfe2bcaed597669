//! The transaction model for every registered run, without a GPU (`cargo xtask model`):
//!
//!   model [FILTER] [--json] [--sms N]
//!
//! One row per run at the size the ncu step profiles (the benchmark workload's first launch of
//! the variant's first kernel). `--json` prints one JSON object per line instead of a table;
//! `--sms` sets the SM count that GPU-sized grids are planned for (default 132, an H100 SXM).
//! FILTER is a substring of `family/variant/param=value`.
use std::process::ExitCode;

use coalesce_benches::predict::{json_line, predict, runs, table};

const USAGE: &str = "usage: model [FILTER] [--json] [--sms N]";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (mut json, mut sms, mut filter) = (false, coalesce::model::DEFAULT_SMS, String::new());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--json" => json = true,
            "--sms" => match args.next().and_then(|v| v.parse().ok()).filter(|&v: &u32| v > 0) {
                Some(v) => sms = v,
                None => {
                    eprintln!("--sms needs a positive SM count\n{USAGE}");
                    return ExitCode::FAILURE;
                }
            },
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            flag if flag.starts_with('-') => {
                eprintln!("unknown option {flag}\n{USAGE}");
                return ExitCode::FAILURE;
            }
            f => filter = f.to_string(),
        }
    }
    let selected = runs(&filter);
    if selected.is_empty() {
        eprintln!("no registered run matches {filter:?} (see `cargo xtask list`)");
        return ExitCode::FAILURE;
    }
    let rows = predict(&selected, sms);
    let mut failed = false;
    if json {
        for (run, prediction) in &rows {
            match prediction {
                Ok(Some(counts)) => println!("{}", json_line(run, counts)),
                Ok(None) => {}
                Err(e) => {
                    eprintln!("{run}: {e}");
                    failed = true;
                }
            }
        }
    } else {
        print!("{}", table(&rows));
        failed = rows.iter().any(|(_, p)| p.is_err());
    }
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}
