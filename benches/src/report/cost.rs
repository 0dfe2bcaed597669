//! The cost curve's section: one table and two plots per entry point (time per call, and
//! bandwidth or TFLOP/s, against size), the library's implementations and the device memcpy from
//! the report's `sweep`, the peers (PyTorch, CuPy, cuBLAS) from its `peers` where present, and
//! per implementation the sizes where a call costs its launch rather than its work.
use std::fmt::Write;

use super::format::{gbps, speed, tflops, us};
use super::model::{PeerRow, Plot, Report};
use crate::sweep::{ENTRIES, MATMUL_SHAPES, SUM_READ_BACK, SweepRow, entry, work};

/// cuBLAS's name among `peers.py`'s peers.
pub const CUBLAS: &str = "cublas";
/// cuBLAS's calls captured in a CUDA graph (kernel time, without PyTorch's dispatch).
pub const CUBLAS_GRAPH: &str = "cublas graph";

/// One timed call of one implementation at one size.
#[derive(Debug, Clone)]
pub(crate) struct Point {
    pub n: u64,
    pub shape: String,
    pub median_us: f64,
    pub bytes: u64,
    pub flops: u64,
}

impl Point {
    /// GB/s of the bytes counted once, or TFLOP/s where the call is counted in flops.
    pub fn rate(&self) -> f64 {
        let seconds = self.median_us * 1e-6;
        if self.flops > 0 { self.flops as f64 / seconds / 1e12 } else { self.bytes as f64 / seconds / 1e9 }
    }
}

/// One implementation's points, by size.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub label: String,
    pub points: Vec<Point>,
}

/// One entry point's curve: every implementation that has a point of it.
#[derive(Debug, Clone)]
pub(crate) struct Curve {
    pub entry: String,
    pub series: Vec<Series>,
}

impl Curve {
    /// Counted in flops (matmul) rather than bytes.
    pub fn flops(&self) -> bool {
        self.series.iter().flat_map(|s| &s.points).any(|p| p.flops > 0)
    }

    /// `GB/s` or `TFLOP/s`.
    pub fn rate_unit(&self) -> &'static str {
        if self.flops() { "TFLOP/s" } else { "GB/s" }
    }

    /// The size as the tables and readings print it: `2^20` elements, or `1024³`.
    pub fn size(&self, n: u64) -> String {
        if self.flops() {
            format!("{n}³")
        } else if n.is_power_of_two() {
            format!("2^{}", n.ilog2())
        } else {
            n.to_string()
        }
    }

    /// Every size any series has, ascending.
    fn sizes(&self) -> Vec<u64> {
        let mut sizes: Vec<u64> = self.series.iter().flat_map(|s| s.points.iter().map(|p| p.n)).collect();
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    }
}

/// A peer's name as the tables and legends show it.
fn peer_label(peer: &str) -> String {
    match peer {
        CUBLAS => "cuBLAS (torch)".into(),
        CUBLAS_GRAPH => "cuBLAS (torch, CUDA graph)".into(),
        other => other.into(),
    }
}

/// `matmul::matmul` at every shape of [`MATMUL_SHAPES`] beside cuBLAS timed in the same record:
/// the time of each, the library's speed against the fastest peer (its time over ours), and for the
/// skinny products (m or n at most 8) the rate at which the library reads the large operand against
/// the DRAM read probe's.
fn shapes_section(md: &mut String, r: &Report) {
    let ours: Vec<&SweepRow> = r.sweep.iter().filter(|s| s.entry == entry::MATMUL_SHAPES).collect();
    let peers: Vec<&PeerRow> =
        r.peers.iter().flat_map(|p| &p.rows).filter(|p| p.entry == entry::MATMUL_SHAPES && p.median_us > 0.0).collect();
    if ours.is_empty() && peers.is_empty() {
        return;
    }
    let dram = r.params.as_ref().map(|p| p.dram_read_bps.iter().map(|x| x.1).fold(0.0, f64::max)).filter(|b| *b > 0.0);
    md.push_str(
        "\n### matmul at every shape\n\n`matmul::matmul` at the shapes programs use besides squares (issue 37): \
         small squares, skinny products (one side from 1 to 128, the others 4096) and thin k, beside cuBLAS \
         through PyTorch timed in the same record, both as a batch of calls between CUDA events and, where \
         `peers.py` could capture one, as a CUDA graph of that batch (kernel time, without PyTorch's dispatch). \
         **speed vs best** is the faster one's time over the library's: above 1× the library is faster. \
         **large operand** is, for a product with m or n at most 8, the bytes of the operand read once (B, or A) \
         over the library's time, against the DRAM read probe's most.\n\n| shape | matmul::matmul µs | TFLOP/s | \
         cuBLAS µs | cuBLAS graph µs | speed vs best (>1 = faster) | large operand |\n|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for (i, &(m, n, k)) in MATMUL_SHAPES.iter().enumerate() {
        let i = i as u64;
        let lib = ours.iter().find(|s| s.n == i).map(|s| s.median_us).filter(|t| *t > 0.0);
        let peer = |name: &str| peers.iter().find(|p| p.n == i && p.peer == name).map(|p| p.median_us);
        let (batch, graph) = (peer(CUBLAS), peer(CUBLAS_GRAPH));
        let best = [batch, graph].into_iter().flatten().fold(None, |b: Option<f64>, t| Some(b.map_or(t, |b| b.min(t))));
        let cell = |t: Option<f64>| t.map_or(String::new(), us);
        let flops = 2.0 * (m * n * k) as f64;
        let rate = lib.map_or(String::new(), |t| tflops(flops / (t * 1e-6) / 1e12));
        let against = lib.zip(best).map_or(String::new(), |(l, b)| speed(b / l));
        let large = if m.min(n) <= 8 {
            let bytes = 4.0 * (k * m.max(n)) as f64;
            lib.map_or(String::new(), |t| {
                let bps = bytes / (t * 1e-6);
                match dram {
                    Some(peak) => format!("{} GB/s ({})", gbps(bps / 1e9), super::format::pct(100.0 * bps / peak)),
                    None => format!("{} GB/s", gbps(bps / 1e9)),
                }
            })
        } else {
            String::new()
        };
        let _ = writeln!(
            md,
            "| {m}x{n}x{k} | {} | {rate} | {} | {} | {against} | {large} |",
            cell(lib),
            cell(batch),
            cell(graph)
        );
    }
}

/// The curves of `report`: the known entries in [`ENTRIES`] order, then any others in the order
/// they appear; in each, the sweep's implementations then the peers, points by size. Points with
/// no positive time are left out (they have no rate).
pub(crate) fn curves(report: &Report) -> Vec<Curve> {
    let peers = report.peers.iter().flat_map(|p| &p.rows);
    // The matmul shapes are a table of their own ([`shapes_section`]), not a curve over sizes.
    let mut entries: Vec<&str> = ENTRIES.into_iter().filter(|e| *e != entry::MATMUL_SHAPES).collect();
    for e in report.sweep.iter().map(|r| r.entry.as_str()).chain(peers.clone().map(|r| r.entry.as_str())) {
        if !entries.contains(&e) && e != entry::MATMUL_SHAPES {
            entries.push(e);
        }
    }
    let mut curves = Vec::new();
    for entry in entries {
        let mut series: Vec<Series> = Vec::new();
        let mut add = |label: String, point: Point| {
            if !(point.median_us > 0.0 && point.median_us.is_finite()) {
                return;
            }
            match series.iter_mut().find(|s| s.label == label) {
                Some(s) => s.points.push(point),
                None => series.push(Series { label, points: vec![point] }),
            }
        };
        for r in report.sweep.iter().filter(|r| r.entry == entry) {
            let point =
                Point { n: r.n, shape: r.shape.clone(), median_us: r.median_us, bytes: r.bytes, flops: r.flops };
            add(r.implementation.clone(), point);
        }
        for r in peers.clone().filter(|r| r.entry == entry) {
            let (bytes, flops) = work(entry, r.n);
            add(peer_label(&r.peer), Point { n: r.n, shape: r.shape.clone(), median_us: r.median_us, bytes, flops });
        }
        for s in &mut series {
            s.points.sort_by_key(|p| p.n);
        }
        if !series.is_empty() {
            curves.push(Curve { entry: entry.to_string(), series });
        }
    }
    curves
}

/// A call within this factor of the time at the smallest size costs its launch, not its work.
pub const FLAT: f64 = 2.0;

/// The largest size up to which `s`'s time stays within [`FLAT`]× its time at its smallest
/// size, counting from the smallest; `None` with fewer than two points or when the second
/// already takes longer.
pub(crate) fn flat_until(s: &Series) -> Option<u64> {
    let first = s.points.first()?;
    let flat: Vec<&Point> = s.points.iter().take_while(|p| p.median_us <= FLAT * first.median_us).collect();
    (flat.len() >= 2).then(|| flat[flat.len() - 1].n)
}

/// The reading of one curve: for each implementation, its time at the smallest size, the size
/// up to which the time stays flat (launch and synchronisation), and its rate at the largest.
pub(crate) fn reading(c: &Curve) -> Vec<String> {
    c.series
        .iter()
        .filter_map(|s| {
            let (first, last) = (s.points.first()?, s.points.last()?);
            let rate = |p: &Point| if c.flops() { tflops(p.rate()) } else { gbps(p.rate()) };
            let tail = format!("at {} it reaches {} {}.", c.size(last.n), rate(last), c.rate_unit());
            if s.points.len() < 2 {
                return Some(format!(
                    "`{}`: measured at {} only: {} µs a call, {} {}.",
                    s.label,
                    c.size(last.n),
                    us(last.median_us),
                    rate(last),
                    c.rate_unit()
                ));
            }
            Some(match flat_until(s) {
                Some(until) if until < last.n => format!(
                    "`{}`: {} µs a call at {}, and within {FLAT}× of that up to {}: launch and synchronisation \
                     dominate there, the work only above; {tail}",
                    s.label,
                    us(first.median_us),
                    c.size(first.n),
                    c.size(until)
                ),
                Some(_) => format!(
                    "`{}`: within {FLAT}× of {} µs a call at every size measured: launch and synchronisation \
                     dominate throughout; {tail}",
                    s.label,
                    us(first.median_us)
                ),
                None => format!(
                    "`{}`: {} µs a call at {}, already growing with the size at the next; {tail}",
                    s.label,
                    us(first.median_us),
                    c.size(first.n)
                ),
            })
        })
        .collect()
}

/// The section's markdown, embedding `plots` of family `sweep`. Empty when the report has no
/// cost curve and no peers.
pub(crate) fn section(md: &mut String, r: &Report, plots: &[Plot]) {
    let curves = curves(r);
    if r.sweep.is_empty() && r.peers.is_none() {
        return;
    }
    md.push_str("\n## cost curve\n\n");
    md.push_str(
        "The library's entry points over sizes, each call timed as the runs above (back-to-back calls \
         between CUDA events, median of samples), so at small sizes the time is what a call costs the \
         host: its launch, and for `reduce::sum` an allocation and a wait for the result \
         (`reduce::sum_to` leaves the total on the device). Bytes are counted once (copy and transpose \
         8 per element, sum 4); matmul counts 2n³ flops (2mnk at the shapes of its own table).\n\n",
    );
    if r.sweep.is_empty() {
        md.push_str("This record has no sweep of the library's entry points (it was measured without one): the peers alone.\n\n");
    }
    match &r.peers {
        None => md.push_str(
            "Peers (PyTorch, CuPy, cuBLAS) were not measured for this record: run `run.sh peers` on the same \
             GPU and re-render with `report --from report.json --peers peers.json`.\n",
        ),
        Some(p) => {
            let version = |name: &str, v: &Option<String>| match v {
                Some(v) => format!("{name} {v}"),
                None => format!("{name} not importable"),
            };
            let _ = write!(
                md,
                "Peers timed by `peers.py` on {} ({}, {}) the same way: a batch of back-to-back calls between \
                 CUDA events, median of samples.",
                p.info.device,
                version("torch", &p.info.torch),
                version("CuPy", &p.info.cupy)
            );
            if p.info.device != r.device.name {
                let _ = write!(md, " **They ran on another device than the report ({}).**", r.device.name);
            }
            md.push_str(
                " **speed vs best peer** is the fastest peer's time at that size over the library's, among the peers \
                 that leave the result on the device or, for a call that reads it back, among those that read it \
                 back: above 1× the library is faster.\n",
            );
        }
    }
    for c in &curves {
        let _ = writeln!(md, "\n### {}\n", c.entry);
        let labels: Vec<&str> = c.series.iter().map(|s| s.label.as_str()).collect();
        md.push_str("| size | shape |");
        let mut rule = String::from("|---|---|");
        for l in &labels {
            let _ = write!(md, " {l} µs |");
            rule.push_str("---:|");
        }
        for l in &labels {
            let _ = write!(md, " {l} {} |", c.rate_unit());
            rule.push_str("---:|");
        }
        let ours: Vec<&Series> = c.series.iter().filter(|s| !is_peer(r, &s.label)).collect();
        let against_best = !ours.is_empty() && c.series.iter().any(|s| is_peer(r, &s.label));
        if against_best {
            for s in &ours {
                let _ = write!(md, " {} speed vs best peer (>1 = faster) |", s.label);
                rule.push_str("---:|");
            }
        }
        let _ = writeln!(md, "\n{rule}");
        for n in c.sizes() {
            let at = |s: &Series| s.points.iter().find(|p| p.n == n).cloned();
            let shape = c.series.iter().find_map(at).map_or(String::new(), |p| p.shape);
            let _ = write!(md, "| {} | {shape} |", c.size(n));
            for s in &c.series {
                let cell = at(s).map_or(String::new(), |p| us(p.median_us));
                let _ = write!(md, " {cell} |");
            }
            for s in &c.series {
                let rate = |p: Point| if c.flops() { tflops(p.rate()) } else { gbps(p.rate()) };
                let _ = write!(md, " {} |", at(s).map_or(String::new(), rate));
            }
            if against_best {
                for s in &ours {
                    let cell = at(s)
                        .zip(best_peer(r, c, n, reads_back(&s.label)))
                        .map_or(String::new(), |(p, (peer, t))| format!("{} ({peer})", speed(t / p.median_us)));
                    let _ = write!(md, " {cell} |");
                }
            }
            md.push('\n');
        }
        let sentences = reading(c);
        if !sentences.is_empty() {
            md.push_str("\n**Reading.**\n\n");
            for s in sentences {
                let _ = writeln!(md, "- {s}");
            }
        }
        let files = [format!("cost_{}_time.svg", c.entry), format!("cost_{}_rate.svg", c.entry)];
        for plot in plots.iter().filter(|p| p.family == "sweep" && files.iter().any(|f| f == p.file)) {
            let _ = writeln!(md, "\n![{}]({})", plot.title, plot.file);
        }
    }
    shapes_section(md, r);
}

/// Whether a series of a curve is another library's (a peer's), not one of the sweep's own.
fn is_peer(r: &Report, label: &str) -> bool {
    !r.sweep.iter().any(|row| row.implementation == label)
}

/// Whether a series' call hands its result back to the host (`reduce::sum`, a peer's `.item()`
/// or `int()`): those are compared with each other, the rest with the rest.
fn reads_back(label: &str) -> bool {
    label == SUM_READ_BACK || label.ends_with(".item()") || label.ends_with("int()")
}

/// The fastest peer of curve `c` at size `n` among those that read back (or do not), with its
/// time in µs: the strongest correct implementation `peers.py` timed (it leaves out a peer whose
/// result it found wrong).
fn best_peer(r: &Report, c: &Curve, n: u64, host: bool) -> Option<(String, f64)> {
    c.series
        .iter()
        .filter(|s| is_peer(r, &s.label) && reads_back(&s.label) == host)
        .filter_map(|s| s.points.iter().find(|p| p.n == n).map(|p| (s.label.clone(), p.median_us)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// cuBLAS's row of the peers at the square size whose 2n³ flops are `flops`, if it was timed.
pub(crate) fn cublas_at(r: &Report, flops: u64) -> Option<&PeerRow> {
    if flops == 0 {
        return None;
    }
    let peers = r.peers.as_ref()?;
    let flops_of = |n: u64| n.checked_pow(3).and_then(|c| c.checked_mul(2));
    peers.rows.iter().find(|p| p.peer == CUBLAS && p.entry == entry::MATMUL && flops_of(p.n) == Some(flops))
}
