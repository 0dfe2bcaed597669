//! The report renderer: turns the JSON record of one measurement run into `report.md`, SVG plots,
//! the warp pictures and `report.html`, with no GPU involved.
//!
//! The JSON ([`Report`]) is the source of every measured number: the markdown, the readings and the
//! plots compute them from it when rendering, so a report can never contradict its own data and
//! can be re-rendered after the renderer improves. What the record does not hold, the warp
//! pictures and the wavefronts a warp load of the bank kernel takes, comes from the transaction
//! model (`coalesce::model`) at render time, and the report says so where it shows them. [`render`] writes everything into one folder,
//! including `report.json` itself, so the folder is self-contained.
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

mod cost;
mod format;
mod html;
mod markdown;
mod model;
mod peer;
mod plots;
mod readings;
mod summary;
pub mod time;
mod warp;

pub use html::html;
pub use markdown::markdown;
pub use model::{
    Counted, Device, Measurement, Model, Param, PeerRow, Peers, PeersInfo, Plot, Report, Skipped, SweepRow, TimeInputs,
    attach_counters, attach_models,
};
pub use plots::{PLOT_FILES, SWEEP_PLOT_FILES, plots};
pub use readings::readings;
pub use summary::{SummaryRow, explained, summary};
pub use warp::{PICTURE_PER_THREAD, WARP_FILES, WarpPicture, pictures};

/// Writes `dir/report.md`, `dir/report.json`, one SVG per plot and per warp picture whose runs
/// are present and `dir/report.html` (the markdown as one page, each SVG file inlined) into `dir`
/// (created if missing); returns the paths written, markdown first, then the JSON, the plots, the
/// pictures and the page last.
///
/// A plot or picture whose runs are absent is not written, and a file of that name left in `dir`
/// by an earlier render is removed, so the folder never shows a drawing of data the report lacks.
pub fn render(report: &Report, dir: &Path) -> io::Result<Vec<PathBuf>> {
    fs::create_dir_all(dir)?;
    let plots = plots(report)?;
    let pictures = pictures(report)?;
    let md_path = dir.join("report.md");
    let md = markdown(report, &plots, &pictures);
    fs::write(&md_path, &md)?;
    let json_path = dir.join("report.json");
    fs::write(&json_path, report.to_json() + "\n")?;
    let mut written = vec![md_path, json_path];
    let files = plots.iter().map(|p| (p.file, &p.svg)).chain(pictures.iter().map(|p| (p.file, &p.svg)));
    for (file, svg) in files.clone() {
        let path = dir.join(file);
        fs::write(&path, svg)?;
        written.push(path);
    }
    // The page inlines the SVG files just written (not the drawings in memory), so it shows
    // exactly what the folder holds.
    let html_path = dir.join("report.html");
    let svgs = files
        .map(|(file, _)| Ok((file, fs::read_to_string(dir.join(file))?)))
        .collect::<io::Result<Vec<(&str, String)>>>()?;
    let page = html(&md, |file| svgs.iter().find(|(f, _)| *f == file).map(|(_, svg)| svg.clone()));
    fs::write(&html_path, page)?;
    written.push(html_path);
    let drawn = |f: &str| svgs.iter().any(|(file, _)| *file == f);
    for stale in PLOT_FILES.iter().chain(SWEEP_PLOT_FILES).chain(WARP_FILES).filter(|f| !drawn(f)) {
        match fs::remove_file(dir.join(stale)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(written)
}
