//! The command lines of the harness's binaries (`report`, `model`, `ncu_table`), declared once:
//! the binaries parse them, and `cargo xtask` parses the same declarations before it builds and
//! runs a binary, so `cargo xtask report --help` answers without a build and a wrong flag is
//! refused before one.
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Measure every registered variant on this GPU against its memcpy, and the cost curve (the
/// library's entry points over sizes), then write DIR/report.md, report.json, SVG plots and
/// report.html; or re-render a saved report.json without a GPU (--from).
#[derive(Debug, Clone, Parser)]
#[command(name = "report")]
pub struct ReportArgs {
    /// Where report.md, report.json, the plots and report.html go.
    #[arg(long, value_name = "DIR", default_value = "target/report")]
    pub out: PathBuf,
    /// Re-render this saved report.json instead of measuring (no GPU needed).
    #[arg(long, value_name = "FILE.json")]
    pub from: Option<PathBuf>,
    /// A bundle's peers.json (PyTorch, CuPy, cuBLAS timings) to put beside the cost curve.
    #[arg(long, value_name = "PEERS.json")]
    pub peers: Option<PathBuf>,
    /// A bundle's ncu.csv (`run.sh ncu`, the same GPU): its DRAM counters beside the model's.
    #[arg(long, value_name = "NCU.csv")]
    pub ncu: Option<PathBuf>,
    /// With --from: run the model again (CPU, minutes) and put its counts, with what the time
    /// model needs, in place of the record's.
    #[arg(long, requires = "from")]
    pub remodel: bool,
    /// Leave the cost curve out of the measurement.
    #[arg(long)]
    pub no_sweep: bool,
    /// Only the runs whose id contains FILTER (`family/variant/param=value`, or `sweep/ENTRY`
    /// for the cost curve: `sweep` measures it alone).
    #[arg(value_name = "FILTER", default_value = "", hide_default_value = true)]
    pub filter: String,
}

/// The transaction model of every registered run, without a GPU: what Nsight Compute should
/// count for the launch the ncu step profiles (the benchmark workload's first launch of the
/// variant's first kernel), as a table or one JSON object per line.
#[derive(Debug, Clone, Parser)]
#[command(name = "model")]
pub struct ModelArgs {
    /// Only the runs whose id contains FILTER (`family/variant/param=value`).
    #[arg(value_name = "FILTER", default_value = "", hide_default_value = true)]
    pub filter: String,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The SM count GPU-sized grids are planned for (132: an H100 SXM).
    #[arg(long, value_name = "N", default_value_t = coalesce::model::DEFAULT_SMS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub sms: u32,
}

/// A bundle's ncu.csv beside the model: a markdown table of each quantity, predicted and
/// measured, with their ratio; rows further apart than 5 % (10 % for DRAM bytes) are marked.
#[derive(Debug, Clone, Parser)]
#[command(name = "ncu_table")]
pub struct NcuTableArgs {
    /// The bundle's ncu.csv (`run.sh ncu` writes it: a `# RUN_ID` line before each run's
    /// `ncu --csv` rows).
    #[arg(value_name = "CSV")]
    pub csv: PathBuf,
    /// The SM count of the profiled GPU (132: the H100 of BENCHMARKS.md).
    #[arg(long, value_name = "N", default_value_t = coalesce::model::DEFAULT_SMS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub sms: u32,
    /// Print the marked rows only.
    #[arg(long)]
    pub only_off: bool,
}

/// What went wrong in a binary: a message for people, or stdout closed under it.
#[derive(Debug)]
pub enum Failure {
    /// One line for stderr (printed after `error: `).
    Message(String),
    /// Writing to stdout failed; a closed pipe (`| head`) is no failure.
    Stdout(io::Error),
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure::Message(message)
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::Stdout(e)
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Message(m) => f.write_str(m),
            Failure::Stdout(e) => write!(f, "writing to stdout: {e}"),
        }
    }
}

/// The exit code of a binary's `run`: success, a quiet success when stdout was closed early
/// (`model --json | head -1`), or `error: MESSAGE` (Display, never Debug) on stderr and 1.
pub fn exit(result: Result<(), Failure>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Stdout(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Writes `text` to stdout and flushes it (so a closed pipe shows here, as an error, rather than
/// as a panic in `println!`).
pub fn print(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn report(args: &[&str]) -> Result<ReportArgs, clap::Error> {
        ReportArgs::try_parse_from(std::iter::once("report").chain(args.iter().copied()))
    }

    #[test]
    fn the_declarations_are_consistent() {
        ReportArgs::command().debug_assert();
        ModelArgs::command().debug_assert();
        NcuTableArgs::command().debug_assert();
    }

    #[test]
    fn report_arguments() {
        let a = report(&["--out", "x", "coalescing"]).unwrap();
        assert_eq!((a.out, a.from, a.filter), (PathBuf::from("x"), None, "coalescing".to_string()));
        assert!(!a.no_sweep && a.peers.is_none());
        let a = report(&["--from", "r.json", "--peers", "p.json", "--no-sweep"]).unwrap();
        assert_eq!((a.from, a.peers, a.no_sweep), (Some("r.json".into()), Some("p.json".into()), true));
        assert_eq!(report(&[]).unwrap().out, PathBuf::from("target/report"));
        for bad in [&["--peers"][..], &["--bogus"], &["--out"]] {
            assert!(report(bad).is_err(), "{bad:?}");
        }
        assert_eq!(report(&["--help"]).unwrap_err().kind(), clap::error::ErrorKind::DisplayHelp);
    }

    #[test]
    fn model_and_ncu_table_arguments() {
        let m = ModelArgs::try_parse_from(["model", "bank", "--json", "--sms", "108"]).unwrap();
        assert_eq!((m.filter.as_str(), m.json, m.sms), ("bank", true, 108));
        assert_eq!(ModelArgs::try_parse_from(["model"]).unwrap().sms, coalesce::model::DEFAULT_SMS);
        assert!(ModelArgs::try_parse_from(["model", "--sms", "0"]).is_err());
        let n = NcuTableArgs::try_parse_from(["ncu_table", "ncu.csv", "--only-off"]).unwrap();
        assert_eq!((n.csv, n.only_off), (PathBuf::from("ncu.csv"), true));
        assert!(NcuTableArgs::try_parse_from(["ncu_table"]).is_err());
    }

    #[test]
    fn a_closed_pipe_is_a_quiet_success() {
        assert_eq!(exit(Err(io::Error::from(io::ErrorKind::BrokenPipe).into())), ExitCode::SUCCESS);
        assert_eq!(exit(Err("bad".to_string().into())), ExitCode::FAILURE);
    }
}
