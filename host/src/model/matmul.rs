//! Replays of the matrix multiplies in `kernels-gpu/src/matmul/`.
//!
//! Each stage's replay lives beside its launch, in its stage file (`host/src/matmul/<id>.rs`,
//! its `replay` module: the descriptor's `Replay`), replaying its kernels from their SASS (sm_90;
//! the Hopper kernels from the Hopper module, the rest from the main one) and saying what that
//! SASS is; a stage replays with earlier stages' warps and loops where its kernels share them.
//! This module finds a launch's stage in the table of descriptors and holds what the replays
//! share: a launch's buffers (`Launched`), the shape of a replay (`Replay`, `Blocks`, `Cx`), the
//! classes of uniform blocks and the tile stream below.
//!
//! Uniformity: a 4096³ multiply is 10^11 lane accesses, so each launch is replayed one block
//! per *class* and the class's count multiplied by its number of blocks. A block's global
//! addresses are its origin's plus offsets that do not depend on the block, and its shared
//! addresses do not depend on the block at all; so two blocks with the same number of valid
//! rows and columns (the guards, and the clamps of the guarded warp-tiled kernel, which clamp to
//! the block's last valid row or column) and the same origin offsets modulo a sector (the
//! alignment) make the same requests, sectors and wavefronts. The class key is exactly that.
//! The L2 and DRAM traffic is worked out apart (`tile_stream`): every block, in dispatch order
//! and a wave of blocks at a time, reads at each k step the rows of A and the columns of B of its
//! tile that lie inside the multiply and at the end writes its tile of C, and those sectors go
//! through the L2 model (the warp-tiled kernels' vectors and the clamped rows and columns read
//! inside those too). Stream-K's shared row is the exception: its replay's own loads and stores
//! are its trace.
//!
//! Which blocks make a wave (`blocks_at_once`): the blocks that *progress* at once, not all
//! those resident. An SM's warp schedulers issue from the oldest ready warp first
//! (greedy-then-oldest), so of two blocks on one SM the younger issues only in the clocks the
//! older leaves idle, when all its warps wait on memory. A block whose k step keeps the SM busy
//! for longer than a DRAM round trip (FMAs at 128 a clock, or shared wavefronts at one a clock)
//! leaves almost none: co-resident blocks run one after the other, the next starting where the
//! one before ends, and the wave is one block an SM. A block with less work a step than a round
//! trip mostly waits, and the blocks resident beside it progress with it. The counters tell the
//! two apart (H100, `results/ncu/h100-2996d56.csv`): `warptile` at 4096³ (2 blocks of 128 × 128
//! an SM) reads 607 MB from DRAM, `warptile_async` (1 block of 128 × 256, the same 8.25 rows of
//! tiles a wave if both blocks of an SM progressed) 342 MB; one block an SM at a time gives
//! 624 and 347, both blocks at once 347 and 347.
use std::collections::BTreeMap;

use super::{Buffer, Counts, Model, Op, Warp, block_warps, blocks, blocks_per_sm, lanes_where, no_replay};
use crate::error::{Error, Result};
use crate::launch::{Kernel, Launch};
use coalesce_kernels::matmul::{StreamK, WarpTile, mm_vectors, row_major};

/// Floats in a sector.
pub(crate) const SECTOR_FLOATS: u64 = super::SECTOR_BYTES / 4;
/// Bytes in a sector, for the tile streams.
const SECTOR: u64 = super::SECTOR_BYTES;

/// The buffers and sizes of one launch.
pub(crate) struct Launched {
    pub(crate) a: Buffer,
    pub(crate) b: Buffer,
    pub(crate) c: Buffer,
    pub(crate) m: u32,
    pub(crate) n: u32,
    pub(crate) k: u32,
    /// Whether A's and B's rows start on 16-byte boundaries (`mm_vectors`): split-K's guarded
    /// loads are vectors then.
    pub(crate) vectors: bool,
}

/// How the model replays a stage's launches: the `replay` of its descriptor
/// (`crate::matmul::Stage`), defined in its stage file.
pub(crate) struct Replay {
    /// Its blocks, class by class (`None` for a stream-K stage whose whole waves are another
    /// stage's blocks: `crate::matmul::Waves::blocks_of`).
    pub(crate) blocks: Option<Blocks>,
    /// Stream-K's shared row, replayed whole: its own loads and stores are its trace.
    pub(crate) row: Option<RowReplay>,
}

/// Stream-K's shared row on its launch.
pub(crate) type RowReplay = fn(&mut Model, &Launched, &Launch) -> Result<()>;
/// The origin `(row, col)` of a block's tile.
pub(crate) type Origin = fn(&Cx<'_>, (u32, u32)) -> Result<(u32, u32)>;

/// The replay of a launch's blocks (module docs: one block a class, then the tile stream).
pub(crate) struct Blocks {
    /// Rows and columns of C a block covers, and the columns of A (rows of B) a step of the tile
    /// stream reads.
    pub(crate) tile: fn(&Cx<'_>) -> (u32, u32, u32),
    /// The origin `(row, col)` of block `(bx, by)`'s tile.
    pub(crate) origin: Origin,
    /// One warp of a block.
    pub(crate) warp: fn(&mut Model, &Launched, &Cx<'_>, &Warp) -> Result<()>,
}

/// What a block's replay knows of its launch.
pub(crate) struct Cx<'a> {
    /// The shape of the stage whose blocks these are, if warp-tiled.
    pub(crate) warp_tile: Option<WarpTile>,
    /// Whether the stage's kernels guard every access (its descriptor's bounds).
    pub(crate) guarded: bool,
    pub(crate) launch: &'a Launch,
    pub(crate) m: u32,
    pub(crate) n: u32,
    pub(crate) k: u32,
    /// Stream-K's whole waves: each block takes the tile of its linear id.
    pub(crate) linear: bool,
    /// The `cp.async` tiled kernel's copy width: the same for every block.
    pub(crate) vectors: bool,
}

impl Cx<'_> {
    /// The shape of a warp-tiled stage.
    pub(crate) fn tile(&self) -> WarpTile {
        self.warp_tile.expect("a warp-tiled stage")
    }
}

/// A warp-tiled stage's block: its shape's tile, k a tile at a time.
pub(crate) fn own_tile(cx: &Cx<'_>) -> (u32, u32, u32) {
    let cfg = cx.tile();
    (cfg.bm, cfg.bn, cfg.bk)
}

/// What one launch's replay takes of its stage's descriptor (the stage that `crate::matmul`
/// finds for the launch's kernel in its table).
#[derive(Clone, Copy)]
pub(crate) struct Replayed {
    /// The stage's replay.
    pub(crate) replay: &'static Replay,
    /// Its warp tile, if warp-tiled.
    pub(crate) warp_tile: Option<WarpTile>,
    /// Whether its kernels guard every access.
    pub(crate) guarded: bool,
    /// Stream-K's whole waves: the stage's blocks, each taking the tile of its linear id.
    pub(crate) linear: bool,
}

/// Counts of a planned launch of a matmul kernel of `stage` (A, B and C at `addresses`, an
/// `m × n × k` multiply).
pub(crate) fn counts<S>(
    kernel: Kernel<S>,
    launch: Launch,
    (a, b, c): (u64, u64, u64),
    (m, n, k): (u32, u32, u32),
    stage: Replayed,
) -> Result<Counts> {
    let linear = stage.linear;
    let mut model = Model::new();
    let l = Launched {
        a: model.buffer(a),
        b: model.buffer(b),
        c: model.buffer(c),
        m,
        n,
        k,
        vectors: mm_vectors(n, k, a, b),
    };
    if !linear && let Some(row) = stage.replay.row {
        row(&mut model, &l, &launch)?;
        // The row's loads and stores are its replay's, in the trace already.
        return Ok(model.counts());
    }
    let replay = stage.replay.blocks.as_ref().ok_or_else(|| no_replay(kernel.name()))?;
    let cx = Cx {
        warp_tile: stage.warp_tile,
        guarded: stage.guarded,
        launch: &launch,
        m,
        n,
        k,
        linear,
        vectors: mm_vectors(n, k, a, b),
    };
    // Origin `(row, col)` of a block and how many of its rows and columns are inside C.
    let (block_rows, block_cols, bk) = (replay.tile)(&cx);
    let origin = |block: (u32, u32)| (replay.origin)(&cx, block);
    let residue = |x: u64| x % SECTOR_FLOATS;
    let key = |block: (u32, u32)| -> Result<_> {
        let (r0, c0) = origin(block)?;
        let rows = m.min(r0.saturating_add(block_rows)).saturating_sub(r0);
        let cols = n.min(c0.saturating_add(block_cols)).saturating_sub(c0);
        let (r0, c0) = (u64::from(r0), u64::from(c0));
        Ok((rows, cols, residue(row_major(r0, 0, k.into())), residue(c0), residue(row_major(r0, c0, n.into()))))
    };
    let mut classes: BTreeMap<_, ((u32, u32), u64)> = BTreeMap::new();
    for block in blocks(&launch) {
        classes.entry(key(block)?).or_insert((block, 0)).1 += 1;
    }
    // Shared wavefronts of the launch's blocks, for how long a block's k step keeps its SM busy.
    let mut wavefronts = 0u64;
    for (block, count) in classes.into_values() {
        let mut one = Model::instructions_only();
        let lb = Launched { a: one.buffer(a), b: one.buffer(b), c: one.buffer(c), m, n, k, vectors: cx.vectors };
        for w in block_warps(&launch, block) {
            (replay.warp)(&mut one, &lb, &cx, &w)?;
        }
        let counts = one.counts().repeated(count)?;
        wavefronts = wavefronts.saturating_add(counts.shared_ld_wavefronts.saturating_add(counts.shared_st_wavefronts));
        model.add(&counts)?;
    }
    // Blocks a multiprocessor holds: the kernel's declared minimum where it has one (its
    // registers are what limit it), else what its threads and shared memory allow.
    let per_sm = kernel.launch_bounds().map_or_else(|| blocks_per_sm(&launch), |(_, blocks)| blocks);
    let steps = u64::from(k).div_ceil(u64::from(bk.max(1))).max(1);
    let fmas = u64::from(block_rows) * u64::from(block_cols) * u64::from(bk);
    let step_wavefronts = wavefronts / launch.blocks().max(1) / steps;
    let at_once = blocks_at_once(per_sm, fmas, step_wavefronts);
    tile_stream(&mut model, &l, &launch, at_once, origin, (block_rows, block_cols), bk)?;
    Ok(model.counts())
}

/// FP32 FMAs a Hopper SM issues a clock (its 128 FP32 lanes).
const FMAS_PER_CLOCK: u64 = 128;
/// A DRAM round trip in SM clocks on an H100 or H200: about 340 ns (the time model's latency
/// probe: 337–354 ns, BENCHMARKS.md) at the 1.75–1.98 GHz the SMs run. The blocks it tells
/// apart are far from it either way (`blocks_at_once`): 16 clocks a step against 1,024–2,048.
const ROUND_TRIP_CLOCKS: u64 = 600;

/// Blocks of an SM that progress at once (module docs): `per_sm`, the blocks it holds, unless
/// one block's k step (`fmas` FMAs and `wavefronts` shared wavefronts) keeps the SM busy for a
/// DRAM round trip or longer; then one, the oldest.
fn blocks_at_once(per_sm: u32, fmas: u64, wavefronts: u64) -> u32 {
    let busy = (fmas / FMAS_PER_CLOCK).max(wavefronts);
    if busy >= ROUND_TRIP_CLOCKS { 1 } else { per_sm }
}

/// The corner of tile `tile` of schedule `sk`: a tile the replay finds in the schedule
/// ([`StreamK::segment`], a block of the whole waves) is one of its tiles, so this is an error
/// only for a launch made by hand whose grid the schedule does not have.
pub(crate) fn tile_origin(sk: StreamK, tile: u32) -> Result<(u32, u32)> {
    sk.origin(tile).ok_or_else(|| Error::OutOfRange {
        what: "stream-K tile",
        value: tile.into(),
        min: 0,
        max: u64::from(sk.tiles).saturating_sub(1),
    })
}

/// The L2 stream of a tiled launch (module docs): every block in dispatch order, with `per_sm`
/// of them progressing on each multiprocessor at once (`blocks_at_once`), reads at k step `kt`
/// (of `bk` columns of A, rows of B) the rows of A and the columns of B of its tile inside the
/// multiply, and at the end writes its tile of C. The sectors are the tile's: the L1 and the kernel's own load widths are the
/// instruction counts' business, and every stage reads each tile sector at least once a step.
fn tile_stream(
    model: &mut Model,
    l: &Launched,
    launch: &Launch,
    per_sm: u32,
    origin: impl Fn((u32, u32)) -> Result<(u32, u32)>,
    (block_rows, block_cols): (u32, u32),
    bk: u32,
) -> Result<()> {
    let (m, n, k) = (u64::from(l.m), u64::from(l.n), u64::from(l.k));
    let (a, b, c) = (l.a.base(), l.b.base(), l.c.base());
    let bk = u64::from(bk.max(1));
    let steps = u32::try_from(k.div_ceil(bk)).unwrap_or(u32::MAX);
    let Some(trace) = model.tile_trace(per_sm) else { return Ok(()) };
    // A's rows of one block's tile and B's columns, by step, kept for the blocks that share them.
    let mut rows_of_a: BTreeMap<u64, Vec<(u32, u64)>> = BTreeMap::new();
    let mut cols_of_b: BTreeMap<(u64, u64), Vec<(u32, u64)>> = BTreeMap::new();
    for (linear, block) in blocks(launch).enumerate() {
        let linear = linear as u64;
        let (r0, c0) = origin(block)?;
        let (r0, c0) = (u64::from(r0), u64::from(c0));
        let rows = m.min(r0 + u64::from(block_rows)).saturating_sub(r0);
        let cols = n.min(c0 + u64::from(block_cols)).saturating_sub(c0);
        if rows == 0 || cols == 0 {
            continue;
        }
        let from_a = rows_of_a.entry(r0).or_insert_with(|| {
            let mut out = Vec::new();
            for r in r0..r0 + rows {
                let row = a + 4 * row_major(r, 0, k);
                for (s, _, _) in trace.sectors_of(row, row + 4 * k) {
                    let first = (s * SECTOR).max(row);
                    out.push((((first - row) / 4 / bk) as u32, s));
                }
            }
            out
        });
        for &(step, s) in from_a.iter() {
            trace.push((linear, step, 0), s, Op::Read);
        }
        let from_b = cols_of_b.entry((c0, cols)).or_insert_with(|| {
            let mut out = Vec::new();
            for i in 0..k {
                let row = b + 4 * row_major(i, c0, n);
                out.extend(trace.sectors_of(row, row + 4 * cols).map(|(s, _, _)| ((i / bk) as u32, s)));
            }
            out
        });
        for &(step, s) in from_b.iter() {
            trace.push((linear, step, 1), s, Op::Read);
        }
        for r in r0..r0 + rows {
            let row = c + 4 * row_major(r, c0, n);
            let written: Vec<_> = trace.sectors_of(row, row + 4 * cols).collect();
            for (s, _, mask) in written {
                trace.push((linear, steps, 0), s, Op::Write(mask));
            }
        }
    }
    Ok(())
}

/// The one-output-a-thread kernels' 4-byte `STG.E` of C: the lanes whose `rc(lane)` (row, col)
/// lies inside C store it.
pub(crate) fn store_c(model: &mut Model, l: &Launched, w: &Warp, rc: impl Fn(u32) -> (u32, u32)) -> Result<()> {
    let inside = |lane| {
        let (r, c) = rc(lane);
        r < l.m && c < l.n
    };
    model.store(l.c, 4, lanes_where(w.lanes, inside), |lane| {
        let (r, c) = rc(lane);
        4 * row_major(r.into(), c.into(), l.n.into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use coalesce_kernels::matmul::{BK, BM, BN, NAIVE_BLOCK, TILE, WARPTILE};

    #[test]
    fn blocks_that_keep_their_sm_busy_for_a_round_trip_run_one_at_a_time() {
        // naive: a tile stream step is a sector of A's row (8 floats) for 8 × 32 outputs: 16
        // clocks of FMAs, no shared memory; its 8 resident blocks all progress.
        let naive = u64::from(NAIVE_BLOCK.0 * NAIVE_BLOCK.1) * SECTOR_FLOATS;
        assert_eq!(blocks_at_once(8, naive, 0), 8);
        // tiled: 256 clocks of FMAs a step, but 1,600 shared wavefronts (the replay's count).
        let tiled = u64::from(TILE * TILE * TILE);
        assert_eq!(blocks_at_once(2, tiled, 0), 2);
        assert_eq!(blocks_at_once(2, tiled, 1600), 1);
        // regblock and warptile: 1,024 and 2,048 clocks of FMAs a step.
        assert_eq!(blocks_at_once(8, u64::from(BM * BN * BK), 0), 1);
        assert_eq!(blocks_at_once(2, u64::from(WARPTILE.bm * WARPTILE.bn * WARPTILE.bk), 0), 1);
        // A kernel that holds one block an SM is unchanged.
        assert_eq!(blocks_at_once(1, 0, 0), 1);
    }
}
