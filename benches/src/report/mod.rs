//! The report renderer: turns the JSON record of one measurement run into `report.md` and SVG
//! plots, with no GPU involved.
//!
//! The JSON ([`Report`]) is the only source: every number in the markdown, in the readings and in
//! the plots is computed from it when rendering, so a report can never contradict its own data and
//! can be re-rendered after the renderer improves. [`render`] writes everything into one folder,
//! including `report.json` itself, so the folder is self-contained.
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

mod cost;
mod html;
mod markdown;
mod model;
mod peer;
mod plots;
mod readings;
mod summary;

pub use html::html;
pub use markdown::markdown;
pub use model::{Device, Measurement, Model, Param, PeerRow, Peers, PeersInfo, Report, Skipped, SweepRow};
pub use plots::{PLOT_FILES, Plot, SWEEP_PLOT_FILES, plots};
pub use readings::readings;
pub use summary::{SummaryRow, summary};

/// Writes `dir/report.md`, `dir/report.json`, one SVG per plot whose runs are present and
/// `dir/report.html` (the markdown as one page, each plot's SVG file inlined) into `dir` (created
/// if missing); returns the paths written, markdown first and the page last.
///
/// A plot whose runs are absent is not written, and a file of that name left in `dir` by an
/// earlier render is removed, so the folder never shows a plot of data the report lacks.
pub fn render(report: &Report, dir: &Path) -> io::Result<Vec<PathBuf>> {
    fs::create_dir_all(dir)?;
    let plots = plots(report)?;
    let md_path = dir.join("report.md");
    let md = markdown(report, &plots);
    fs::write(&md_path, &md)?;
    let json_path = dir.join("report.json");
    fs::write(&json_path, report.to_json() + "\n")?;
    let mut written = vec![md_path, json_path];
    for plot in &plots {
        let path = dir.join(plot.file);
        fs::write(&path, &plot.svg)?;
        written.push(path);
    }
    // The page inlines the SVG files just written (not the plots in memory), so it shows exactly
    // what the folder holds.
    let html_path = dir.join("report.html");
    let svgs = plots
        .iter()
        .map(|p| Ok((p.file, fs::read_to_string(dir.join(p.file))?)))
        .collect::<io::Result<Vec<(&str, String)>>>()?;
    let page = html(&md, |file| svgs.iter().find(|(f, _)| *f == file).map(|(_, svg)| svg.clone()));
    fs::write(&html_path, page)?;
    written.push(html_path);
    for stale in PLOT_FILES.iter().chain(SWEEP_PLOT_FILES).filter(|f| !plots.iter().any(|p| p.file == **f)) {
        match fs::remove_file(dir.join(stale)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(written)
}

/// A time in microseconds, as the tables print it.
pub(crate) fn us(x: f64) -> String {
    finite(x, format!("{x:.1}"))
}

/// A bandwidth in GB/s, as the tables print it (whole GB/s: the run-to-run noise is larger).
pub(crate) fn gbps(x: f64) -> String {
    finite(x, format!("{x:.0}"))
}

/// A percentage with one decimal and the `%` sign.
pub(crate) fn pct(x: f64) -> String {
    finite(x, format!("{x:.1}%"))
}

/// A signed percentage difference, e.g. `+0.3%`.
pub(crate) fn signed_pct(x: f64) -> String {
    finite(x, format!("{x:+.1}%"))
}

/// A ratio, e.g. `31.22×`.
pub(crate) fn ratio(x: f64) -> String {
    finite(x, format!("{x:.2}×"))
}

/// TFLOP/s with two decimals.
pub(crate) fn tflops(x: f64) -> String {
    finite(x, format!("{x:.2}"))
}

/// `text`, or `n/a` where a zero time or zero bandwidth made the value meaningless.
fn finite(x: f64, text: String) -> String {
    if x.is_finite() { text } else { "n/a".into() }
}

/// `run` without its leading `family/`, for labels inside a family's section or plot.
pub(crate) fn short(m: &Measurement) -> &str {
    m.run.strip_prefix(&m.family).and_then(|r| r.strip_prefix('/')).unwrap_or(&m.run)
}
