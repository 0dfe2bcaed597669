//! The transaction model for every registered run, without a GPU (`cargo xtask model`):
//!
//!   model [FILTER] [--json] [--sms N]
//!
//! One row per run at the size the ncu step profiles (the benchmark workload's first launch of
//! the variant's first kernel). `--json` prints one JSON object per line instead of a table;
//! `--sms` sets the SM count that GPU-sized grids are planned for (default 132, an H100 SXM).
//! FILTER is a substring of `family/variant/param=value`. Progress (run k of n) goes to stderr.
//! `--help` says the same.
use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use coalesce::model::Device;
use coalesce_benches::cli::{Failure, ModelArgs, exit};
use coalesce_benches::predict::{json_line, predict_with_progress, runs, table};

fn main() -> ExitCode {
    exit(run(ModelArgs::parse()))
}

fn run(args: ModelArgs) -> Result<(), Failure> {
    let selected = runs(&args.filter);
    if selected.is_empty() {
        return Err(format!("no registered run matches {:?} (see `cargo xtask list`)", args.filter).into());
    }
    // Progress on stderr, one line rewritten (the whole registry takes minutes on two cores).
    let start = std::time::Instant::now();
    let total = selected.len();
    let rows = predict_with_progress(&selected, Device { sms: args.sms, ..Device::default() }, |k, run| {
        eprint!("\r\x1b[K[{k}/{total}] {run} ({:.0} s)", start.elapsed().as_secs_f64());
    });
    eprintln!("\r\x1b[K{total} runs modelled in {:.0} s", start.elapsed().as_secs_f64());
    let mut out = std::io::stdout().lock();
    let mut failed = 0;
    if args.json {
        for (run, prediction, shape) in &rows {
            match prediction {
                Ok(Some(counts)) => writeln!(out, "{}", json_line(run, counts, shape))?,
                Ok(None) => {}
                Err(e) => {
                    eprintln!("{run}: {e}");
                    failed += 1;
                }
            }
        }
    } else {
        let rows: Vec<_> = rows.into_iter().map(|(run, p, _)| (run, p)).collect();
        write!(out, "{}", table(&rows))?;
        failed = rows.iter().filter(|(_, p)| p.is_err()).count();
    }
    out.flush()?;
    match failed {
        0 => Ok(()),
        n => Err(format!("the model failed for {n} run(s)").into()),
    }
}
