//! The "What a warp touches" pictures: one warp of a lesson kernel, lanes on top and, below, the
//! 32-byte sectors (global memory) or the 32 banks (shared memory) its lanes land in.
//!
//! Nothing here is drawn from hand-placed coordinates: every panel is a [`WarpAccess`] from the
//! model ([`coalesce::model::warp`]), which replays warp 0 with the kernel's own index functions,
//! and every count a panel states is that access's count from the model's counter, the one the
//! family replays (and so the tables' sectors per request and bank conflicts) use. A picture is
//! drawn only when the report has the runs of its lesson, or, for the two-GPU lesson, lists its
//! runs as skipped: that picture needs the model, not a second GPU.
//!
//! The SVG is written by hand (rectangles, lines and text), so each panel can carry its case and
//! count as attributes (`data-case`, `data-count`, `data-unit`) for the tests to read back.
use std::fmt::Write;
use std::io;

use coalesce::access_order::Order;
use coalesce::bank::{Pattern, Tile};
use coalesce::coalescing::Load;
use coalesce::histogram::Method as Histogram;
use coalesce::model::warp::{self, Op, Space, WarpAccess};
use coalesce::reduce::Method as Reduce;
use coalesce::transpose::Method as Transpose;

use super::format::pct;
use super::model::{Measurement, Report};
use crate::access_order::AccessOrder;
use crate::bank::Bank;
use crate::coalescing::Coalescing;
use crate::family::Family;
use crate::layouts::Layouts;
use crate::peer::Peer;
use crate::reduce::Reduce as ReduceRun;
use crate::transpose::Transpose as TransposeRun;
use coalesce::layouts::AosMethod;

/// Every picture file [`pictures`] can produce, so a render can remove stale ones.
pub const WARP_FILES: &[&str] = &[
    "warp_offset.svg",
    "warp_stride.svg",
    "warp_layouts.svg",
    "warp_access_order.svg",
    "warp_transpose.svg",
    "warp_bank.svg",
    "warp_reduce.svg",
    "warp_histogram.svg",
    "warp_async.svg",
    "warp_peer.svg",
];

/// The `per_thread` the access-order picture shows: from 8 floats (32 bytes) a thread on, each
/// lane of a chunked walk has a sector of its own.
pub const PICTURE_PER_THREAD: u32 = 8;

/// One picture: a few panels of one lesson, side by side in meaning, stacked on the page.
#[derive(Debug, Clone)]
pub struct WarpPicture {
    /// File name, written next to `report.md`.
    pub file: &'static str,
    /// The lesson (family) it illustrates.
    pub family: &'static str,
    /// Title, drawn at the top and used as the markdown image's alt text.
    pub title: String,
    /// What the picture shows, in words, every number from its panels.
    pub caption: String,
    /// Each panel's case (as `data-case` names it) and its count.
    pub panels: Vec<(String, u64)>,
    /// The SVG document.
    pub svg: String,
}

/// One panel: a label and the access it draws.
struct Panel {
    /// `data-case`, e.g. `offset=1`.
    case: String,
    /// The panel's heading, before its count.
    label: String,
    access: WarpAccess,
}

fn model_error(e: coalesce::Error) -> io::Error {
    io::Error::other(format!("the model's warp replay failed: {e}"))
}

/// Every picture whose lesson has runs in `report`, in [`WARP_FILES`] order.
pub fn pictures(report: &Report) -> io::Result<Vec<WarpPicture>> {
    let has = |found: Option<&Measurement>| found.is_some();
    let coalescing = |v| has(report.of(v));
    let transposes = |m| has(report.of(TransposeRun::Method(m)));
    let banks = |t| has(report.of(Bank::Tile(t)));
    let reduces = |m| has(report.of(ReduceRun::Method(m)));
    let histograms = |m: Histogram| has(report.of(m));
    let mut out = Vec::new();
    if coalescing(Coalescing::Offset) {
        out.push(offset().map_err(model_error)?);
    }
    if coalescing(Coalescing::Stride) {
        out.push(stride().map_err(model_error)?);
    }
    if has(report.of(Layouts::Aos(AosMethod::Element))) && has(report.of(Layouts::Soa)) {
        out.push(layouts(has(report.of(Layouts::Aos(AosMethod::Staged)))).map_err(model_error)?);
    }
    if has(report.of(AccessOrder::OneD(Order::Chunked))) && has(report.of(AccessOrder::OneD(Order::Interleaved))) {
        out.push(access_order().map_err(model_error)?);
    }
    if let Some(naive) = report.of(TransposeRun::Method(Transpose::Naive)) {
        let shape = naive.param_value().unwrap_or(0) as usize;
        let (rows, cols) =
            crate::transpose::BENCH_SHAPES.get(shape).copied().unwrap_or(crate::transpose::BENCH_SHAPES[0]);
        let fix = transposes(Transpose::Shared) && transposes(Transpose::Padded);
        out.push(transpose(rows, cols, fix).map_err(model_error)?);
    }
    if banks(Tile::Rows) || banks(Tile::Cols) || banks(Tile::ColsPadded) {
        out.push(bank().map_err(model_error)?);
    }
    if reduces(Reduce::InterleavedConflicts) || reduces(Reduce::Sequential) {
        out.push(reduce().map_err(model_error)?);
    }
    if histograms(Histogram::Global) && histograms(Histogram::Shared) {
        out.push(histogram().map_err(model_error)?);
    }
    if coalescing(Coalescing::CpAsync) {
        out.push(async_copies(coalescing(Coalescing::Bulk)).map_err(model_error)?);
    }
    // The reads across the link, measured or skipped for want of a second GPU.
    let reads = [Peer::CopyRead, Peer::OffsetRead, Peer::StrideRead];
    if reads.into_iter().any(|v| has(report.of(v)) || report.was_skipped(v)) {
        out.push(peer().map_err(model_error)?);
    }
    Ok(out)
}

/// The bytes a global access moves (its sectors) against the bytes its lanes asked for.
fn useful(a: &WarpAccess) -> String {
    let moved = a.sectors() * coalesce::model::SECTOR_BYTES;
    format!(
        "{} of the {moved} bytes moved are used: {}",
        a.useful_bytes(),
        pct(100.0 * a.useful_bytes() as f64 / moved as f64)
    )
}

fn offset() -> coalesce::Result<WarpPicture> {
    let (zero, one) = (warp::offset_copy(Load::Cached, 0)?, warp::offset_copy(Load::Cached, 1)?);
    let unit_stride = warp::stride_copy(1)?;
    let same = unit_stride.active == zero.active && unit_stride.address == zero.address;
    let zero_label = if same { "offset 0 (the same lanes as stride 1)" } else { "offset 0" };
    // The offsets (of those the lesson sweeps) at which the warp needs no more than at 0.
    let mut aligned = Vec::new();
    for o in 0..=coalesce::coalescing::MAX_OFFSET {
        if warp::offset_copy(Load::Cached, o)?.sectors() == zero.sectors() {
            aligned.push(o.to_string());
        }
    }
    let caption = format!(
        "Lane l of warp 0 reads float offset + l. At offset 0 its {} bytes fill {} sectors; at offset 1 \
         they straddle {}: {}. Of the offsets 0 to {}, only {} need no more sectors than offset 0.",
        zero.useful_bytes(),
        zero.sectors(),
        one.sectors(),
        useful(&one),
        coalesce::coalescing::MAX_OFFSET,
        aligned.join(", ")
    );
    Ok(picture(
        "warp_offset.svg",
        Coalescing::NAME,
        "coalescing: the load of warp 0 at offset 0 and 1",
        caption,
        vec![
            Panel { case: "offset=0".into(), label: zero_label.into(), access: zero },
            Panel { case: "offset=1".into(), label: "offset 1".into(), access: one },
        ],
    ))
}

fn stride() -> coalesce::Result<WarpPicture> {
    let mut panels = Vec::new();
    for s in [1, 2, 3] {
        panels.push(Panel { case: format!("stride={s}"), label: format!("stride {s}"), access: warp::stride_copy(s)? });
    }
    let parts: Vec<String> = panels
        .iter()
        .map(|p| format!("stride {}: {} sectors, {}", &p.case[7..], p.access.sectors(), useful(&p.access)))
        .collect();
    let caption = format!(
        "Lane l reads float stride × l: the warp still asks for 128 bytes, but its lanes spread over more \
         sectors. {}.",
        parts.join("; ")
    );
    Ok(picture(
        "warp_stride.svg",
        Coalescing::NAME,
        "coalescing: the load of warp 0 at stride 1, 2 and 3",
        caption,
        panels,
    ))
}

fn layouts(staged: bool) -> coalesce::Result<WarpPicture> {
    let [x, y, z] = warp::aos_loads()?;
    let soa = warp::soa_load()?;
    let sectors = |a: &WarpAccess| {
        let mut s: Vec<u64> = a.lanes().map(|l| a.sector(l)).collect();
        s.sort_unstable();
        s.dedup();
        s
    };
    let same = sectors(&x) == sectors(&y) && sectors(&y) == sectors(&z);
    let three = if same {
        format!(
            "its loads of y and z ({} and {} sectors) touch the very same sectors, so the three loads together \
             fetch {} distinct sectors for {} bytes",
            y.sectors(),
            z.sectors(),
            x.sectors(),
            3 * x.useful_bytes()
        )
    } else {
        format!("its loads of y and z touch {} and {} sectors", y.sectors(), z.sectors())
    };
    let mut caption = format!(
        "Array of structs: lane l's x is 12 bytes after lane l - 1's, so the load of x touches {} sectors; {three}. \
         Struct of arrays: the load of x touches {} sectors, and y and z are the same in their own arrays.",
        x.sectors(),
        soa.sectors()
    );
    let mut panels = vec![
        Panel { case: "aos".into(), label: "AoS, load of x".into(), access: x },
        Panel { case: "aos_y".into(), label: "AoS, load of y (the same sectors: L1 hits)".into(), access: y },
        Panel { case: "aos_z".into(), label: "AoS, load of z (the same sectors again)".into(), access: z },
        Panel { case: "soa".into(), label: "SoA, load of x".into(), access: soa },
    ];
    if staged {
        // The fix that keeps the layout: load the block's floats in order, then pick fields from
        // shared memory.
        let round = warp::aos_staged(Space::Global, 0)?;
        let field = warp::aos_staged(Space::Shared, 0)?;
        caption += &format!(
            " Staged AoS keeps the layout and changes the loads: each of three rounds reads 32 consecutive floats \
             ({} sectors, {}), whatever fields they are, into shared memory; each lane then reads its x three words \
             after the lane before, over all 32 banks: {}.",
            round.sectors(),
            useful(&round),
            plural(field.wavefronts(), "wavefront")
        );
        panels.push(Panel {
            case: "aos_staged/round".into(),
            label: "staged AoS, round 0 (consecutive floats)".into(),
            access: round,
        });
        panels.push(Panel {
            case: "aos_staged/x".into(),
            label: "staged AoS, read of x from shared memory".into(),
            access: field,
        });
    }
    let title = if staged {
        "layouts: warp 0 loading x, y and z (array of structs), x (struct of arrays), and staged"
    } else {
        "layouts: warp 0 loading x, y and z (array of structs), and x (struct of arrays)"
    };
    Ok(picture("warp_layouts.svg", Layouts::NAME, title, caption, panels))
}

fn access_order() -> coalesce::Result<WarpPicture> {
    let n = PICTURE_PER_THREAD;
    let interleaved = warp::walk(Order::Interleaved, n, 0)?;
    let chunked = warp::walk(Order::Chunked, n, 0)?;
    let caption = format!(
        "The first step of the 1-D walk with per_thread={n}. Interleaved, the lanes read neighbouring floats: {} \
         sectors. Chunked, each lane starts its own {}-byte chunk: {} sectors, {}.",
        interleaved.sectors(),
        4 * n,
        chunked.sectors(),
        useful(&chunked)
    );
    Ok(picture(
        "warp_access_order.svg",
        AccessOrder::NAME,
        &format!("access_order: step 0 of warp 0, per_thread={n}"),
        caption,
        vec![
            Panel { case: format!("interleaved/per_thread={n}"), label: "interleaved".into(), access: interleaved },
            Panel { case: format!("chunked/per_thread={n}"), label: "chunked".into(), access: chunked },
        ],
    ))
}

fn transpose(rows: usize, cols: usize, fix: bool) -> coalesce::Result<WarpPicture> {
    let load = warp::transpose_naive(Op::Load, rows, cols)?;
    let store = warp::transpose_naive(Op::Store, rows, cols)?;
    let mut caption = format!(
        "The naive transpose of a {rows} × {cols} matrix: warp 0 reads 32 floats along a row of the input ({} \
         sectors) and writes them down a column of the output, {} bytes apart: {} sectors, one per lane, {}.",
        load.sectors(),
        4 * rows,
        store.sectors(),
        useful(&store)
    );
    let mut panels = vec![
        Panel { case: "naive/load".into(), label: "naive, load (a row of the input)".into(), access: load },
        Panel { case: "naive/store".into(), label: "naive, store (a column of the output)".into(), access: store },
    ];
    if fix {
        // The fix: the tile turns the column into a row, and its pitch decides the banks.
        let tiled = warp::transpose_tile(Transpose::Padded, Space::Global, Op::Store, rows, cols)?;
        let column = warp::transpose_tile(Transpose::Shared, Space::Shared, Op::Load, rows, cols)?;
        let padded = warp::transpose_tile(Transpose::Padded, Space::Shared, Op::Load, rows, cols)?;
        caption += &format!(
            " The shared tile is the fix: the warp stores a row of the tile it staged, along a row of the output ({} \
             sectors), after reading it down a column of the tile: {} at a pitch of 32 floats, every lane in one \
             bank, and {} at 33.",
            tiled.sectors(),
            plural(column.wavefronts(), "wavefront"),
            plural(padded.wavefronts(), "wavefront")
        );
        panels.push(Panel {
            case: "shared/column".into(),
            label: "32 × 32 tile, read down a column".into(),
            access: column,
        });
        panels.push(Panel {
            case: "padded/column".into(),
            label: "32 × 33 tile, read down a column".into(),
            access: padded,
        });
        panels.push(Panel {
            case: "padded/store".into(),
            label: "tiled, store (a row of the output)".into(),
            access: tiled,
        });
    }
    let title = if fix {
        format!("transpose: warp 0 of the naive kernel and of the shared tile, {rows}x{cols}")
    } else {
        format!("transpose: warp 0 of the naive kernel, {rows}x{cols}")
    };
    Ok(picture("warp_transpose.svg", TransposeRun::NAME, &title, caption, panels))
}

fn bank() -> coalesce::Result<WarpPicture> {
    let tiles = [(Tile::Rows, "rows", "32 × 32 tile along a row"), (Tile::Cols, "cols", "32 × 32 tile down a column")];
    let mut panels = Vec::new();
    for (tile, case, label) in
        tiles.into_iter().chain([(Tile::ColsPadded, "cols_padded", "32 × 33 tile down a column")])
    {
        panels.push(Panel { case: case.into(), label: label.into(), access: warp::tile_read(tile)? });
    }
    let stride2 = warp::bank_read(Pattern::Stride(2), 0)?;
    let counts: Vec<String> =
        panels.iter().map(|p| format!("{} {}", p.case, plural(p.access.wavefronts(), "wavefront"))).collect();
    let caption = format!(
        "Step 0 of the bank kernel's shared-memory reads, warp 0: each lane reads one 4-byte word, and a bank \
         delivers one word a wavefront, so the load takes as many wavefronts as the most distinct words one bank \
         holds: {}. The stride sweep reads word stride × l: stride 2 puts two lanes on each even bank ({}).",
        counts.join(", "),
        plural(stride2.wavefronts(), "wavefront")
    );
    Ok(picture(
        "warp_bank.svg",
        Bank::NAME,
        "bank: one shared-memory load of warp 0 over the 32 banks",
        caption,
        panels,
    ))
}

fn reduce() -> coalesce::Result<WarpPicture> {
    let block = coalesce_kernels::reduce::BLOCK;
    let levels: Vec<u32> = (0..block.trailing_zeros()).map(|k| 1 << k).collect();
    let per_level = |method: Reduce| -> coalesce::Result<Vec<String>> {
        levels.iter().map(|&d| Ok(format!("{}", warp::reduce_level(method, d)?.wavefronts()))).collect()
    };
    let (conflicts, sequential) = (per_level(Reduce::InterleavedConflicts)?, per_level(Reduce::Sequential)?);
    let levels_text: Vec<String> = levels.iter().map(u32::to_string).collect();
    let panels = vec![
        Panel {
            case: "interleaved_conflicts/d=1".into(),
            label: "interleaved_conflicts, level d=1".into(),
            access: warp::reduce_level(Reduce::InterleavedConflicts, 1)?,
        },
        Panel {
            case: "interleaved_conflicts/d=4".into(),
            label: "interleaved_conflicts, level d=4".into(),
            access: warp::reduce_level(Reduce::InterleavedConflicts, 4)?,
        },
        Panel {
            case: format!("sequential/d={}", block / 2),
            label: format!("sequential, level d={}", block / 2),
            access: warp::reduce_level(Reduce::Sequential, block / 2)?,
        },
    ];
    let caption = format!(
        "Warp 0's load of s[a] at a level d of the shared-memory tree (lanes that sit the level out are grey). \
         Interleaved with contiguous workers, lane t reads word 2dt, so lanes pile onto fewer banks as d grows: \
         at d = {} the load takes {} wavefronts. Sequential addressing reads word t at every level: {} \
         wavefronts.",
        levels_text.join(", "),
        conflicts.join(", "),
        sequential.join(", ")
    );
    Ok(picture(
        "warp_reduce.svg",
        ReduceRun::NAME,
        "reduce: warp 0 reading the shared-memory tree, two ways",
        caption,
        panels,
    ))
}

fn histogram() -> coalesce::Result<WarpPicture> {
    // The first block's values of each benchmark input, which its warp 0 adds first.
    let block = (coalesce_kernels::histogram::BLOCK * coalesce_kernels::histogram::VECTORS_PER_THREAD * 4) as usize;
    let uniform = crate::histogram::bench_values(0, block);
    let skewed = crate::histogram::bench_values(1, block);
    let panel = |method, values: &[u32], case: &str, label: &str| -> coalesce::Result<Panel> {
        Ok(Panel { case: case.into(), label: label.into(), access: warp::histogram_atomic(method, values)? })
    };
    let panels = vec![
        panel(Histogram::Global, &uniform, "global/uniform", "global bins, uniform input")?,
        panel(Histogram::Global, &skewed, "global/skewed", "global bins, skewed input")?,
        panel(Histogram::Shared, &uniform, "shared/uniform", "shared bins, uniform input")?,
        panel(Histogram::Shared, &skewed, "shared/skewed", "shared bins, skewed input")?,
    ];
    let busiest = |p: &Panel| p.access.contention.map_or(0, |c| c.busiest);
    let caption = format!(
        "The first atomic add of warp 0 of each histogram, over the benchmark's own first values. Into global \
         bins, lanes on the same bin wait on each other at the L2: uniform input puts at most {} on one bin, \
         skewed input {}, one after another, and every block's warps queue on those same few addresses. Into the \
         block's shared bins, lanes on one word are one update (`ATOMS.POPC.INC` adds their count), and only \
         distinct bins in one bank wait: {} for uniform input, {} for skewed. The shared kernels then flush each \
         block's non-zero bins to global memory once.",
        plural(busiest(&panels[0]), "lane"),
        plural(busiest(&panels[1]), "lane"),
        plural(panels[2].access.wavefronts(), "wavefront"),
        plural(panels[3].access.wavefronts(), "wavefront"),
    );
    Ok(picture(
        "warp_histogram.svg",
        Histogram::NAME,
        "histogram: warp 0's first atomic add, global against shared bins",
        caption,
        panels,
    ))
}

fn async_copies(bulk: bool) -> coalesce::Result<WarpPicture> {
    let global = warp::cp_async(Space::Global)?;
    let ring = warp::cp_async(Space::Shared)?;
    let mut caption = format!(
        "Who moves the bytes. In the `cp.async` copy each lane still names its own 16 bytes ({} sectors a warp, \
         as a vector load), but the load unit writes them into the block's shared ring itself: no register holds \
         them, and the warp goes on issuing while {} chunks are in flight. Once its group has landed, the warp reads \
         the vectors back out of the ring ({}) and stores them.",
        global.sectors(),
        coalesce_kernels::coalescing::CP_STAGES,
        plural(ring.wavefronts(), "wavefront")
    );
    if bulk {
        let chunk = coalesce_kernels::coalescing::BULK_CHUNK_BYTES;
        caption += &format!(
            " The TMA bulk copy goes further: lane 0 alone issues one `cp.async.bulk` for {chunk} bytes ({} sectors), \
             and the TMA unit generates every address; no lane issues a load, which is why its table shows no \
             sectors a request.",
            u64::from(chunk) / coalesce::model::SECTOR_BYTES
        );
    }
    Ok(picture(
        "warp_async.svg",
        Coalescing::NAME,
        "coalescing: warp 0 of the cp.async copy, global side and ring",
        caption,
        vec![
            Panel { case: "cp_async/global".into(), label: "cp.async into shared memory".into(), access: global },
            Panel {
                case: "cp_async/ring".into(),
                label: "the landed vectors, read from the ring".into(),
                access: ring,
            },
        ],
    ))
}

fn peer() -> coalesce::Result<WarpPicture> {
    let panels = vec![
        Panel { case: "copy_read".into(), label: "copy_read".into(), access: warp::copy_any_load()? },
        Panel {
            case: "offset_read/offset=1".into(),
            label: "offset_read, offset 1".into(),
            access: warp::offset_copy(Load::Cached, 1)?,
        },
        Panel {
            case: "stride_read/stride=8".into(),
            label: "stride_read, stride 8".into(),
            access: warp::stride_copy(8)?,
        },
    ];
    let sector = coalesce::model::SECTOR_BYTES;
    let crossing = |a: &WarpAccess| {
        let moved = a.sectors() * sector;
        format!(
            "{}, {moved} bytes across the link for the {} its lanes use",
            plural(a.sectors(), "sector"),
            a.useful_bytes()
        )
    };
    let [copy, offset, stride] = [&panels[0].access, &panels[1].access, &panels[2].access];
    let caption = format!(
        "Which side's memory a lane reads. Each read of the peer lesson runs on this GPU (GPU 0) and loads its \
         input from the other GPU's memory (GPU 1): the warp's load is the very instruction of the local copy, \
         the model counts the same sectors, and each sector crosses the link (NVLink, or PCIe) whole, as it would \
         leave local DRAM whole. The library's copy, a 16-byte vector a lane: {}. One float off a 32-byte \
         boundary: {}. Stride 8: {}, {} sectors' worth: the wasted bytes take the link's bandwidth too.",
        crossing(copy),
        crossing(offset),
        crossing(stride),
        stride.useful_bytes().div_ceil(sector)
    );
    Ok(picture_on(
        Side::Peer,
        "warp_peer.svg",
        Peer::NAME,
        "peer: warp 0 on GPU 0 reading GPU 1's memory, every sector across the link",
        caption,
        panels,
    ))
}

fn plural(n: u64, what: &str) -> String {
    if n == 1 { format!("1 {what}") } else { format!("{n} {what}s") }
}

// Drawing.

const WIDTH: f64 = 820.0;
const MARGIN: f64 = 46.0;
const LANE_H: f64 = 18.0;
/// Vertical room for the lines from the lanes down to the sectors or banks.
const FAN: f64 = 64.0;
const SECTOR_H: f64 = 22.0;
const WORD_H: f64 = 13.0;
const INK: &str = "#1b1b1b";
const LANE: &str = "#0072b2";
const IDLE: &str = "#c8c8c8";
const HIT: &str = "#e69f00";
/// The link between two GPUs, behind the sectors crossing it.
const LINK: &str = "#e3edf6";
/// Height of the link's band: a sector and room above and below it.
const LINK_H: f64 = SECTOR_H + 14.0;
/// Room between the link and the other GPU's memory, for the arrows up.
const LINK_FAN: f64 = 26.0;

fn lane_w() -> f64 {
    (WIDTH - 2.0 * MARGIN) / 32.0
}

fn lane_x(l: u32) -> f64 {
    MARGIN + lane_w() * (f64::from(l) + 0.5)
}

/// `text` with the XML special characters escaped.
fn xml(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// What a panel's heading counts: a global atomic's lanes on its busiest address, else sectors
/// (global) or wavefronts (shared).
fn count(a: &WarpAccess) -> u64 {
    match (a.space, a.contention) {
        (Space::Global, Some(c)) => c.busiest,
        (Space::Global, None) => a.sectors(),
        (Space::Shared, _) => a.wavefronts(),
    }
}

/// Whose memory a figure's global panels read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// The GPU the warp runs on.
    Local,
    /// The other GPU's, across the link: each sector drawn again on the link, crossing it.
    Peer,
}

fn picture(file: &'static str, family: &'static str, title: &str, caption: String, panels: Vec<Panel>) -> WarpPicture {
    picture_on(Side::Local, file, family, title, caption, panels)
}

fn picture_on(
    side: Side,
    file: &'static str,
    family: &'static str,
    title: &str,
    caption: String,
    panels: Vec<Panel>,
) -> WarpPicture {
    let mut body = String::new();
    let mut y = 44.0;
    // One scale for the figure: the sector width that fits its widest panel.
    let sector_w = panels
        .iter()
        .filter(|p| p.access.space == Space::Global)
        .map(|p| fitting_sector_width(&p.access))
        .fold(f64::INFINITY, f64::min);
    for p in &panels {
        y = match p.access.space {
            Space::Global => sectors_panel(&mut body, p, y, sector_w, side),
            Space::Shared => banks_panel(&mut body, p, y),
        } + 18.0;
    }
    let height = y.ceil();
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} \
         {height}\" font-family=\"sans-serif\">\n<rect width=\"{WIDTH}\" height=\"{height}\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"26\" font-size=\"18\" text-anchor=\"middle\" fill=\"{INK}\">{}</text>\n",
        WIDTH / 2.0,
        xml(title)
    );
    svg.push_str(&body);
    svg.push_str("</svg>\n");
    let panels = panels.iter().map(|p| (p.case.clone(), count(&p.access))).collect();
    WarpPicture { file, family, title: title.to_string(), caption, panels, svg }
}

/// The lane row at `y`: active lanes filled, the others grey.
fn lanes_row(svg: &mut String, a: &WarpAccess, y: f64) {
    let w = lane_w();
    for l in 0..32u32 {
        let x = MARGIN + w * f64::from(l);
        let fill = if a.active & (1 << l) != 0 { LANE } else { IDLE };
        let _ = writeln!(
            svg,
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{LANE_H}\" fill=\"{fill}\" stroke=\"white\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"9\" text-anchor=\"middle\" fill=\"white\">{l}</text>",
            w,
            x + w / 2.0,
            y + 12.5
        );
    }
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"{INK}\">lane</text>",
        MARGIN - 3.0,
        y + 12.5
    );
}

/// The heading of a panel at `y`, with its count; the group carrying the case and count, and
/// `attributes` (more `data-` attributes, or nothing).
fn open_panel(svg: &mut String, p: &Panel, count: u64, unit: &str, y: f64, detail: &str, attributes: &str) {
    let _ = writeln!(
        svg,
        "<g class=\"panel\" data-case=\"{}\" data-count=\"{count}\" data-unit=\"{unit}\"{attributes}>\n\
         <text x=\"{MARGIN}\" y=\"{:.1}\" font-size=\"14\" fill=\"{INK}\"><tspan font-weight=\"bold\">{}: {}</tspan> {}</text>",
        xml(&p.case),
        y + 12.0,
        xml(&p.label),
        plural(count, unit),
        xml(detail)
    );
}

/// `+96`, or `+32KiB` for whole KiB past the first: where a sector starts in its buffer.
fn byte_offset(bytes: u64) -> String {
    if bytes >= 1024 && bytes.is_multiple_of(1024) { format!("+{}KiB", bytes / 1024) } else { format!("+{bytes}") }
}

/// Lanes → the sectors they touch. Sectors are drawn in address order, each as eight 4-byte
/// words, touched words filled, and labelled with their byte offset where the label fits.
/// Adjacent sectors sit side by side; a gap (…) stands for memory no lane touches.
/// Adjacent sectors sit `APART` from each other, runs of consecutive ones `GAP` apart.
const GAP: f64 = 14.0;
const APART: f64 = 3.0;

/// The distinct sectors `a` touches, in runs of consecutive ones.
fn sector_runs(a: &WarpAccess) -> Vec<Vec<u64>> {
    let mut sectors: Vec<u64> = a.lanes().map(|l| a.sector(l)).collect();
    sectors.sort_unstable();
    sectors.dedup();
    let mut runs: Vec<Vec<u64>> = Vec::new();
    for &s in &sectors {
        match runs.last_mut() {
            Some(run) if run.last().is_some_and(|&last| last + 1 == s) => run.push(s),
            _ => runs.push(vec![s]),
        }
    }
    runs
}

/// The space between `runs`' sectors.
fn spacing(runs: &[Vec<u64>]) -> f64 {
    let k: usize = runs.iter().map(Vec::len).sum();
    APART * (k - runs.len()) as f64 + GAP * runs.len().saturating_sub(1) as f64
}

/// The widest a sector may be drawn for `a`'s sectors to fit the width: at most eight lanes
/// wide, so a warp whose 32 floats fill 4 sectors has each lane above its own word.
fn fitting_sector_width(a: &WarpAccess) -> f64 {
    let runs = sector_runs(a);
    let k = runs.iter().map(Vec::len).sum::<usize>().max(1) as f64;
    ((WIDTH - 2.0 * MARGIN - spacing(&runs)) / k).min(8.0 * lane_w() - APART)
}

/// One warp's global access drawn with sectors `sector_w` wide: the same width in every panel of
/// a figure, so a panel's sectors take room in proportion to the bytes they move. Read from the
/// other GPU ([`Side::Peer`]), the sectors sit in that GPU's memory at the bottom, and each is
/// drawn again on the link between, whole, its unused words with it: the lanes get their words
/// from those copies.
fn sectors_panel(svg: &mut String, p: &Panel, top: f64, sector_w: f64, side: Side) -> f64 {
    let a = &p.access;
    let sector_bytes = coalesce::model::SECTOR_BYTES;
    match (a.contention, side) {
        // An atomic's cost is its busiest address, not the sectors it touches.
        (Some(c), _) => {
            let runs: usize = sector_runs(a).iter().map(Vec::len).sum();
            let detail = format!(
                "on the busiest bin, one after another ({} over {})",
                plural(c.addresses, "bin"),
                plural(runs as u64, "sector")
            );
            open_panel(svg, p, c.busiest, "atomic", top, &detail, "");
        }
        (None, Side::Local) => open_panel(svg, p, a.sectors(), "sector", top, &format!("({})", useful(a)), ""),
        (None, Side::Peer) => {
            let attributes = format!(
                " data-memory=\"peer\" data-link-bytes=\"{}\" data-useful-bytes=\"{}\"",
                a.sectors() * sector_bytes,
                a.useful_bytes()
            );
            open_panel(svg, p, a.sectors(), "sector", top, &format!("across the link ({})", useful(a)), &attributes);
        }
    }
    let lanes_y = top + 22.0;
    lanes_row(svg, a, lanes_y);
    let runs = sector_runs(a);
    let (gap, apart) = (GAP, APART);
    let k = runs.iter().map(Vec::len).sum::<usize>().max(1) as f64;
    let total = sector_w * k + spacing(&runs);
    // Where each sector starts, in address order.
    let mut at: Vec<(u64, f64)> = Vec::new();
    let mut x = (WIDTH - total) / 2.0;
    for run in &runs {
        for (i, &s) in run.iter().enumerate() {
            if i > 0 {
                x += apart;
            }
            at.push((s, x));
            x += sector_w;
        }
        x += gap;
    }
    // The row the lanes' lines reach (the sectors, or their copies on the link) and the sectors'.
    let reach = lanes_y + LANE_H + FAN;
    let y = match side {
        Side::Local => reach,
        Side::Peer => reach + LINK_H + LINK_FAN,
    };
    let words_per_sector = sector_bytes / 4;
    let word_w = sector_w / words_per_sector as f64;
    let words = |row_y: f64, svg: &mut String, class: &str, x: f64, s: u64| {
        let _ = writeln!(
            svg,
            "<rect class=\"{class}\" x=\"{x:.1}\" y=\"{row_y:.1}\" width=\"{sector_w:.1}\" height=\"{SECTOR_H}\" \
             fill=\"white\" stroke=\"{INK}\" stroke-width=\"1.5\"/>"
        );
        for k in 0..words_per_sector {
            let word = s * words_per_sector + k;
            if a.lanes().any(|l| a.words(l).contains(&word)) {
                let _ = writeln!(
                    svg,
                    "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{HIT}\"/>",
                    x + word_w * k as f64 + 0.5,
                    row_y + 1.0,
                    (word_w - 1.0).max(0.8),
                    SECTOR_H - 2.0
                );
            }
        }
    };
    let mut label_end = f64::MIN;
    for (i, &(s, x)) in at.iter().enumerate() {
        if i > 0 && at[i - 1].0 + 1 != s {
            let _ = writeln!(
                svg,
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"{INK}\">…</text>",
                x - gap / 2.0,
                y + SECTOR_H / 2.0 + 4.0
            );
        }
        // The sector's byte offset, where it fits beside the previous label.
        let label = byte_offset(s * sector_bytes);
        if x >= label_end {
            let _ = writeln!(
                svg,
                "<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"9\" fill=\"{INK}\">{label}</text>",
                y + SECTOR_H + 11.0
            );
            label_end = x + 5.2 * label.chars().count() as f64 + 6.0;
        }
        words(y, svg, "sector", x, s);
    }
    if side == Side::Peer {
        // The link: each sector crossing it whole, an arrow from the other GPU's memory up to it.
        let _ = writeln!(
            svg,
            "<rect class=\"link\" x=\"{MARGIN}\" y=\"{reach:.1}\" width=\"{:.1}\" height=\"{LINK_H}\" fill=\"{LINK}\"/>",
            WIDTH - 2.0 * MARGIN
        );
        for &(s, x) in &at {
            words(reach + (LINK_H - SECTOR_H) / 2.0, svg, "crossing", x, s);
            let (cx, from, to) = (x + sector_w / 2.0, y - 1.0, reach + LINK_H + 1.0);
            let _ = writeln!(
                svg,
                "<line x1=\"{cx:.1}\" y1=\"{from:.1}\" x2=\"{cx:.1}\" y2=\"{:.1}\" stroke=\"{INK}\" stroke-opacity=\"0.6\"/>\
                 <path d=\"M{cx:.1} {to:.1} l-3 6 h6 z\" fill=\"{INK}\" fill-opacity=\"0.6\"/>",
                to + 5.0
            );
        }
        let side_label = |svg: &mut String, text: &str, row_y: f64, anchor: &str, x: f64| {
            let _ = writeln!(
                svg,
                "<text x=\"{x:.1}\" y=\"{row_y:.1}\" font-size=\"10\" text-anchor=\"{anchor}\" fill=\"{INK}\">{text}</text>"
            );
        };
        side_label(svg, "link", reach + LINK_H / 2.0 + 4.0, "end", MARGIN - 3.0);
        side_label(svg, "GPU 0", lanes_y + 12.5, "start", WIDTH - MARGIN + 4.0);
        side_label(svg, "GPU 1", y + SECTOR_H / 2.0 + 4.0, "start", WIDTH - MARGIN + 4.0);
    }
    // A line from each lane to its first word, where the lane gets it.
    let word_row = reach + if side == Side::Peer { (LINK_H - SECTOR_H) / 2.0 } else { 0.0 };
    for l in a.lanes() {
        let word = a.words(l).start;
        if let Some(&(_, x)) = at.iter().find(|(s, _)| *s == word / words_per_sector) {
            let cx = x + word_w * ((word % words_per_sector) as f64 + 0.5);
            let _ = writeln!(
                svg,
                "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{cx:.1}\" y2=\"{word_row:.1}\" stroke=\"{LANE}\" stroke-opacity=\"0.55\"/>",
                lane_x(l),
                lanes_y + LANE_H
            );
        }
    }
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"{INK}\">sector</text>",
        MARGIN - 3.0,
        y + SECTOR_H / 2.0 + 4.0
    );
    svg.push_str("</g>\n");
    y + SECTOR_H + 14.0
}

/// Lanes → the 32 banks (bank b under lane b). Each bank stacks the distinct words asked of it,
/// one box a word; the tallest stack is the wavefront count.
fn banks_panel(svg: &mut String, p: &Panel, top: f64) -> f64 {
    let a = &p.access;
    let mut per_bank: Vec<Vec<u64>> = vec![Vec::new(); 32];
    for l in a.lanes() {
        for w in a.words(l) {
            let bank = &mut per_bank[WarpAccess::bank(w) as usize];
            if !bank.contains(&w) {
                bank.push(w);
            }
        }
    }
    for bank in &mut per_bank {
        bank.sort_unstable();
    }
    let deepest = per_bank.iter().map(Vec::len).max().unwrap_or(0);
    let detail = format!("(the deepest bank holds {})", plural(deepest as u64, "distinct word"));
    open_panel(svg, p, a.wavefronts(), "wavefront", top, &detail, "");
    let lanes_y = top + 22.0;
    lanes_row(svg, a, lanes_y);
    let banks_y = lanes_y + LANE_H + FAN;
    let w = lane_w();
    for l in a.lanes() {
        let bank = WarpAccess::bank(a.words(l).start);
        let _ = writeln!(
            svg,
            "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{banks_y:.1}\" stroke=\"{LANE}\" stroke-opacity=\"0.55\"/>",
            lane_x(l),
            lanes_y + LANE_H,
            lane_x(bank)
        );
    }
    for (b, words) in per_bank.iter().enumerate() {
        let x = MARGIN + w * b as f64;
        let _ = writeln!(
            svg,
            "<rect x=\"{x:.1}\" y=\"{banks_y:.1}\" width=\"{w:.1}\" height=\"14\" fill=\"#eeeeee\" stroke=\"white\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"9\" text-anchor=\"middle\" fill=\"{INK}\">{b}</text>",
            x + w / 2.0,
            banks_y + 10.5
        );
        for (i, word) in words.iter().enumerate() {
            let y = banks_y + 15.0 + WORD_H * i as f64;
            let _ = writeln!(
                svg,
                "<rect class=\"word\" data-bank=\"{b}\" x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" \
                 fill=\"{HIT}\" stroke=\"white\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"8\" text-anchor=\"middle\" \
                 fill=\"{INK}\">{word}</text>",
                x + 1.0,
                w - 2.0,
                WORD_H - 1.0,
                x + w / 2.0,
                y + 9.0
            );
        }
    }
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"{INK}\">bank</text>\
         <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"{INK}\">words</text>",
        MARGIN - 3.0,
        banks_y + 10.5,
        MARGIN - 3.0,
        banks_y + 24.0
    );
    svg.push_str("</g>\n");
    banks_y + 15.0 + WORD_H * deepest as f64 + 4.0
}

/// The shared-memory pattern of a bank run, by its variant (and stride).
fn bank_pattern(m: &Measurement) -> Option<Pattern> {
    if m.family != Bank::NAME {
        return None;
    }
    match m.variant.as_str() {
        "rows" => Some(Pattern::Tile(Tile::Rows)),
        "cols" => Some(Pattern::Tile(Tile::Cols)),
        "cols_padded" => Some(Pattern::Tile(Tile::ColsPadded)),
        "stride" => m.param_value().map(Pattern::Stride),
        _ => None,
    }
}

/// The wavefronts one warp's shared-memory load takes in bank run `m`, as the model counts
/// them (every step of these patterns takes as many as step 0); `None` for other runs.
pub(crate) fn bank_wavefronts(m: &Measurement) -> Option<u64> {
    warp::bank_read(bank_pattern(m)?, 0).ok().map(|a| a.wavefronts())
}
