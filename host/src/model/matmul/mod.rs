//! Replays of the matrix multiplies in `kernels-gpu/src/matmul/`.
//!
//! One file a stage, as the kernels' (teaching order: `naive`, `tiled`, `prefetch`, `cp_async`,
//! `regblock`, `warptile`, `async_ring`, `stream_k`, `spread_ring`, `spread_edge`; stage 10,
//! `spread_stream_k`, is `stream_k`'s replay over `spread_ring`'s loop), each replaying its
//! kernels from their SASS (sm_90; the Hopper kernels from the Hopper module, the rest from the
//! main one) and saying what that SASS is; this module dispatches a launch to its stage and
//! holds what they share.
//!
//! Uniformity: a 4096³ multiply is 10^11 lane accesses, so each launch is replayed one block
//! per *class* and the class's count multiplied by its number of blocks. A block's global
//! addresses are its origin's plus offsets that do not depend on the block, and its shared
//! addresses do not depend on the block at all; so two blocks with the same number of valid
//! rows and columns (the guards, and the clamps of the guarded warp-tiled kernel, which clamp to
//! the block's last valid row or column) and the same origin offsets modulo a sector (the
//! alignment) make the same requests, sectors and wavefronts. The class key is exactly that.
//! The L2 and DRAM traffic is worked out apart (`tile_stream`): every block, in dispatch order
//! and a wave of resident blocks at a time, reads at each k step the rows of A and the columns of
//! B of its tile that lie inside the multiply and at the end writes its tile of C, and those
//! sectors go through the L2 model (the warp-tiled kernels' vectors and the clamped rows and
//! columns read inside those too). Stream-K's shared row is the exception: its replay's own
//! loads and stores are its trace.
use crate::buffer::DeviceViewMut;
use std::collections::BTreeMap;

use super::{Buffer, Counts, Model, Op, Warp, block_warps, blocks, blocks_per_sm, fake_slice, lanes_where, no_replay};
use crate::error::{Error, Result, product};
use crate::launch::{Call, Launch};
use crate::matmul::{MatmulSig, Method, plan};
use coalesce_kernels::matmul::{
    BM, BN, NAIVE_BLOCK, StreamK, TILE, WTA_STAGES, WarpTile, matmul_spread_edge_waves, matmul_spread_streamk_waves,
    matmul_warptile_streamk_waves, mm_vectors, naive_coords, rb_block_origin, row_major, tiled_coords,
};

// One file a stage (teaching order in the module docs).
mod async_ring;
mod cp_async;
mod naive;
mod prefetch;
mod regblock;
mod spread_edge;
mod spread_ring;
mod stream_k;
mod tiled;
mod warptile;

/// Floats in a sector.
const SECTOR_FLOATS: u64 = super::SECTOR_BYTES / 4;
/// Bytes in a sector, for the tile streams.
const SECTOR: u64 = super::SECTOR_BYTES;

/// The buffers and sizes of one launch.
struct Launched {
    a: Buffer,
    b: Buffer,
    c: Buffer,
    m: u32,
    n: u32,
    k: u32,
}

/// Counts of a planned matmul launch.
pub fn matmul(call: &Call<'_, MatmulSig>) -> Result<Counts> {
    let launch = call.launch();
    let &(a, b, ref c, m, n, k) = call.args();
    let kernel = call.kernel();
    // Stream-K's whole waves are the async (or spread) kernel, its tiles found by linear block id
    // (stage 11's are its own method's, found in `origin` with the partial tiles counted).
    let linear = kernel == matmul_warptile_streamk_waves || kernel == matmul_spread_streamk_waves;
    let method = if kernel == matmul_warptile_streamk_waves {
        Method::WarpTileAsync
    } else if kernel == matmul_spread_streamk_waves {
        Method::WarpTileSpread
    } else if kernel == matmul_spread_edge_waves {
        Method::WarpTileSpreadEdge
    } else {
        Method::ALL.into_iter().find(|method| method.kernel() == kernel).ok_or_else(|| no_replay(kernel.name()))?
    };
    let mut model = Model::new();
    let l =
        Launched { a: model.buffer(a.address()), b: model.buffer(b.address()), c: model.buffer(c.address()), m, n, k };
    if method.stream_k() && kernel != matmul_spread_edge_waves {
        // Stage 11's row (the guarded ring) counts the partial tiles too.
        let edge = method == Method::WarpTileSpreadEdge;
        let sk = StreamK::of(m, n, k, launch.grid.0, edge);
        if edge {
            spread_edge::row_counts(&mut model, &l, &launch, sk)?;
        } else {
            stream_k::stream_k_counts(&mut model, &l, &launch, sk, method == Method::WarpTileSpreadStreamK)?;
        }
        // The row's loads and stores are its replay's, in the trace already.
        return Ok(model.counts());
    }
    // Origin `(row, col)` of a block and how many of its rows and columns are inside C.
    let (block_rows, block_cols) = match method {
        Method::Naive => (NAIVE_BLOCK.1, NAIVE_BLOCK.0),
        Method::RegisterBlocked => (BM, BN),
        Method::WarpTile
        | Method::WarpTileSm90
        | Method::WarpTileAsync
        | Method::WarpTileStreamK
        | Method::WarpTileSpread
        | Method::WarpTileSpreadStreamK
        | Method::WarpTileSpreadEdge
        | Method::WarpTileSmall
        | Method::WarpTileEdge
        | Method::WarpTileEdgeSm90 => {
            let cfg = warp_tile(method);
            (cfg.bm, cfg.bn)
        }
        Method::Tiled | Method::Prefetch | Method::CpAsync => (TILE, TILE),
    };
    let origin = |(bx, by): (u32, u32)| -> Result<(u32, u32)> {
        Ok(match method {
            Method::Naive => naive_coords(bx, by, 0, 0),
            Method::RegisterBlocked => rb_block_origin(bx, by),
            Method::WarpTileAsync | Method::WarpTileSpread => async_ring::async_origin(&launch, n, (bx, by), linear),
            // The kernel's linear block id, in its u32 arithmetic.
            Method::WarpTileSpreadEdge => {
                tile_origin(StreamK::covering(m, n, k, launch.grid.0), by.wrapping_mul(launch.grid.0).wrapping_add(bx))?
            }
            Method::WarpTile
            | Method::WarpTileSm90
            | Method::WarpTileStreamK
            | Method::WarpTileSpreadStreamK
            | Method::WarpTileSmall
            | Method::WarpTileEdge
            | Method::WarpTileEdgeSm90 => warp_tile(method).block_origin(bx, by),
            Method::Tiled | Method::Prefetch | Method::CpAsync => tiled_coords(bx, by, 0, 0),
        })
    };
    // The cp.async kernel's copy width: the same for every block.
    let vectors = mm_vectors(n, k, a.address(), b.address());
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
    for (block, count) in classes.into_values() {
        let mut one = Model::instructions_only();
        let lb =
            Launched { a: one.buffer(a.address()), b: one.buffer(b.address()), c: one.buffer(c.address()), m, n, k };
        for w in block_warps(&launch, block) {
            match method {
                Method::Naive => naive::naive_warp(&mut one, &lb, &w)?,
                Method::RegisterBlocked => regblock::regblock_warp(&mut one, &lb, &launch, &w)?,
                Method::CpAsync => cp_async::cp_async_warp(&mut one, &lb, &w, vectors)?,
                Method::WarpTile
                | Method::WarpTileSm90
                | Method::WarpTileSmall
                | Method::WarpTileEdge
                | Method::WarpTileEdgeSm90 => {
                    // Guarded: the warp-tiled kernels that do not need whole tiles.
                    warptile::warptile_warp(&mut one, &lb, &w, warp_tile(method), !method.whole_tiles_only())?
                }
                Method::WarpTileAsync => {
                    let origin = async_ring::async_origin(&launch, n, w.block, linear);
                    async_ring::warptile_async_warp(&mut one, &lb, &w, origin, WTA_STAGES)?
                }
                Method::WarpTileSpread => {
                    let origin = async_ring::async_origin(&launch, n, w.block, linear);
                    spread_ring::warptile_spread_warp(&mut one, &lb, &w, origin)?
                }
                Method::WarpTileSpreadEdge => spread_edge::waves_warp(&mut one, &lb, &w, origin(w.block)?)?,
                Method::WarpTileStreamK | Method::WarpTileSpreadStreamK => {
                    unreachable!("counted by stream_k_counts above")
                }
                Method::Tiled => tiled::tiled_warp(&mut one, &lb, &w)?,
                Method::Prefetch => prefetch::prefetch_warp(&mut one, &lb, &w)?,
            }
        }
        model.add(&one.counts().repeated(count)?)?;
    }
    // Blocks a multiprocessor holds: the kernel's declared minimum where it has one (its
    // registers are what limit it), else what its threads and shared memory allow.
    let per_sm = kernel.launch_bounds().map_or_else(|| blocks_per_sm(&launch), |(_, blocks)| blocks);
    let bk = match method {
        // A thread walks k a float at a time; a sector of A's row holds 8 of them.
        Method::Naive => SECTOR_FLOATS as u32,
        Method::RegisterBlocked => coalesce_kernels::matmul::BK,
        Method::Tiled | Method::Prefetch | Method::CpAsync => TILE,
        _ => warp_tile(method).bk,
    };
    tile_stream(&mut model, &l, &launch, per_sm, origin, (block_rows, block_cols), bk)?;
    Ok(model.counts())
}

/// The corner of tile `tile` of schedule `sk`: a tile the replay finds in the schedule
/// ([`StreamK::segment`], a block of the whole waves) is one of its tiles, so this is an error
/// only for a launch made by hand whose grid the schedule does not have.
fn tile_origin(sk: StreamK, tile: u32) -> Result<(u32, u32)> {
    sk.origin(tile).ok_or_else(|| Error::OutOfRange {
        what: "stream-K tile",
        value: tile.into(),
        min: 0,
        max: u64::from(sk.tiles).saturating_sub(1),
    })
}

/// The shape of a warp-tiled method.
fn warp_tile(method: Method) -> WarpTile {
    method.warp_tile().expect("a warp-tiled method")
}

/// The L2 stream of a tiled launch (module docs): every block in dispatch order, with `per_sm`
/// of them on each multiprocessor at once, reads at k step `kt` (of `bk` columns of A, rows of
/// B) the rows of A and the columns of B of its tile inside the multiply, and at the end writes
/// its tile of C. The sectors are the tile's: the L1 and the kernel's own load widths are the
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
fn store_c(model: &mut Model, l: &Launched, w: &Warp, rc: impl Fn(u32) -> (u32, u32)) -> Result<()> {
    let inside = |lane| {
        let (r, c) = rc(lane);
        r < l.m && c < l.n
    };
    model.store(l.c, 4, lanes_where(w.lanes, inside), |lane| {
        let (r, c) = rc(lane);
        4 * row_major(r.into(), c.into(), l.n.into())
    })
}

/// The `m × n × k` multiply with `method`, one band (at most `method.band_rows()` rows): what
/// Nsight Compute counts for its launches together (stream-K's two summed), every method
/// replayed from its SASS (module docs). Errors as [`plan`] (a whole-tiles-only method refuses
/// other shapes).
pub fn run(method: Method, (m, n, k): (usize, usize, usize), sms: u32) -> Result<Counts> {
    let a: DeviceViewMut<'static, f32> = fake_slice(0, product("matmul m * k", m, k)?);
    let b: DeviceViewMut<'static, f32> = fake_slice(1, product("matmul k * n", k, n)?);
    let mut c: DeviceViewMut<'static, f32> = fake_slice(2, product("matmul m * n", m, n)?);
    let mut total = Counts::default();
    plan(method, &a, &b, &mut c, (m, n, k), sms, |call| {
        total = total.plus(&matmul(&call)?)?;
        Ok(())
    })?;
    Ok(total)
}
