//! Replays of the transposes in `kernels-gpu/src/transpose.rs`.
//!
//! SASS (sm_90): each of the `TILE / BLOCK_ROWS` steps is one 4-byte `LDG.E` under
//! `r < rows && c < cols`, then for the copy and the naive kernel one `STG.E`; the shared-tile
//! kernels store the step's element with one `STS` and, after the barrier, each step is one `LDS`
//! of the transposed slot and one `STG.E`, under the same guard on `store_coords`.
//!
//! The wide kernel (SASS, sm_90): 4 steps of one `LDG.E.64` under the guard on
//! `wide_load_coords`, then per step two unguarded 4-byte `STS` (every lane stores its pair, zeros
//! outside the matrix); after the barrier, per step two 4-byte `LDS` and one `STG.E.64` under the
//! guard on `wide_store_coords`. The wide copies (SASS, sm_90): the same 4 loads, then per step
//! one `STG.E.64` under the same guard, at the index it loaded from; no tile.
//!
//! The TMA transpose (Hopper module, SASS sm_90): thread 0 moves each block's 64 × 64 tile with
//! two `UTMALDG` and two `UTMASTG` (the TMA unit: no load/store-pipe request, measured 0 on the
//! H100), and each of the 8 warps moves its `TMA_STEPS` elements of the tile from the loaded
//! boxes to the boxes to store with one 4-byte `LDS` and one 4-byte `STS` a step, at `tma_src`
//! and `tma_dst` of `tma_lane_coords`. Every tile makes the same shared accesses (the block's
//! boxes sit at the same offsets), so one tile is replayed and multiplied by the number of
//! tiles; the DRAM footprint is both whole matrices (boxes past the edge read zeros and store
//! nothing there).

use super::{Counts, FAKE_BASE, FAKE_SPACING, Model, block_warps, blocks, fake_slice, lanes_where};
use crate::buffer::DeviceViewMut;
use crate::error::{Result, product};
use crate::launch::Call;
use crate::transpose::{Method, TransposeSig, plan};
use coalesce_kernels::transpose::{
    BLOCK_ROWS, PITCH, PITCH_PADDED, TILE, TMA_STEPS, TMA_THREADS, WIDE_PITCH, WIDE_ROWS, WIDE_TILE, col_tiles,
    load_coords, row_major_index, store_coords, tile_origin, tile_slot, tma_dst, tma_lane_coords, tma_src,
    tma_supports, transpose_copy, transpose_naive, transpose_padded, transpose_shared, transpose_wide,
    transpose_wide_copy, transpose_wide_copy_down, transposed_index, wide_col_tiles, wide_load_coords, wide_row_tiles,
    wide_store_coords, wide_tile_origin, wide_tile_origin_along, wide_tiles,
};

/// Counts of a planned transpose (or tiled copy).
pub fn transpose(call: &Call<'_, TransposeSig>) -> Result<Counts> {
    let launch = call.launch();
    let &(input, ref output, rows, cols) = call.args();
    let mut m = Model::new();
    let (src, dst) = (m.buffer(input.address()), m.buffer(output.address()));
    let kernel = call.kernel();
    if kernel == transpose_wide || kernel == transpose_wide_copy || kernel == transpose_wide_copy_down {
        return wide(call);
    }
    let pitch = if kernel == transpose_shared {
        PITCH
    } else if kernel == transpose_padded {
        PITCH_PADDED
    } else {
        0
    };
    let inside = |(r, c): (u32, u32)| r < rows && c < cols;
    for block in blocks(&launch) {
        let origin = tile_origin(block.0, col_tiles(cols));
        for w in block_warps(&launch, block) {
            let t = |l| w.thread(l);
            let steps = (0..TILE).step_by(BLOCK_ROWS as usize);
            for j in steps.clone() {
                let at = |l| load_coords(origin, t(l), j);
                let active = lanes_where(w.lanes, |l| inside(at(l)));
                m.load(src, 4, active, |l| {
                    let (r, c) = at(l);
                    4 * row_major_index(r, c, cols)
                })?;
                if kernel == transpose_copy || kernel == transpose_naive {
                    let naive = kernel == transpose_naive;
                    m.store(dst, 4, active, |l| {
                        let (r, c) = at(l);
                        4 * if naive { transposed_index(r, c, rows) } else { row_major_index(r, c, cols) }
                    })?;
                } else {
                    m.shared_store(4, active, |l| {
                        let (tx, ty) = t(l);
                        4 * tile_slot(ty + j, tx, pitch)
                    })?;
                }
            }
            if pitch == 0 {
                continue;
            }
            for j in steps {
                let at = |l| store_coords(origin, t(l), j);
                let active = lanes_where(w.lanes, |l| inside(at(l)));
                m.shared_load(4, active, |l| {
                    let (tx, ty) = t(l);
                    4 * tile_slot(tx, ty + j, pitch)
                })?;
                m.store(dst, 4, active, |l| {
                    let (r, c) = at(l);
                    4 * transposed_index(r, c, rows)
                })?;
            }
        }
    }
    Ok(m.counts())
}

/// Counts of a planned wide transpose or wide copy (see the module docs for their
/// instructions).
fn wide(call: &Call<'_, TransposeSig>) -> Result<Counts> {
    let launch = call.launch();
    let &(input, ref output, rows, cols) = call.args();
    let kernel = call.kernel();
    let mut m = Model::new();
    let (src, dst) = (m.buffer(input.address()), m.buffer(output.address()));
    let inside = |(r, c): (u32, u32)| r < rows && c < cols;
    for block in blocks(&launch) {
        let origin = if kernel == transpose_wide_copy {
            wide_tile_origin_along(block.0, wide_col_tiles(cols))
        } else {
            wide_tile_origin(block.0, wide_row_tiles(rows))
        };
        for w in block_warps(&launch, block) {
            let t = |l| w.thread(l);
            // Step j's float pairs as the load phase takes them: the lanes inside the matrix and
            // each one's byte offset in the row-major input (the copies store to the same one).
            let pairs = |j| {
                let at = move |l| wide_load_coords(origin, t(l), j);
                (lanes_where(w.lanes, |l| inside(at(l))), move |l| {
                    let (r, c) = at(l);
                    4 * row_major_index(r, c, cols)
                })
            };
            for j in 0..WIDE_TILE / WIDE_ROWS {
                let (active, offset) = pairs(j);
                m.load(src, 8, active, offset)?;
            }
            if kernel != transpose_wide {
                for j in 0..WIDE_TILE / WIDE_ROWS {
                    let (active, offset) = pairs(j);
                    m.store(dst, 8, active, offset)?;
                }
                continue;
            }
            for j in 0..WIDE_TILE / WIDE_ROWS {
                let slot = |l| {
                    let (r, c) = wide_load_coords(origin, t(l), j);
                    tile_slot(r - origin.1, c - origin.0, WIDE_PITCH)
                };
                m.shared_store(4, w.lanes, |l| 4 * slot(l))?;
                m.shared_store(4, w.lanes, |l| 4 * (slot(l) + 1))?;
            }
            for j in 0..WIDE_TILE / WIDE_ROWS {
                let at = |l| wide_store_coords(origin, t(l), j);
                let active = lanes_where(w.lanes, |l| inside(at(l)));
                let slot = |l, down| {
                    let (r, c) = at(l);
                    tile_slot(r - origin.1 + down, c - origin.0, WIDE_PITCH)
                };
                m.shared_load(4, active, |l| 4 * slot(l, 0))?;
                m.shared_load(4, active, |l| 4 * slot(l, 1))?;
                m.store(dst, 8, active, |l| {
                    let (r, c) = at(l);
                    4 * transposed_index(r, c, rows)
                })?;
            }
        }
    }
    Ok(m.counts())
}

/// The `rows × cols` transpose (or copy) with `method`.
pub fn run(method: Method, rows: usize, cols: usize) -> Result<Counts> {
    let n = product("transpose rows * cols", rows, cols)?;
    let (input, mut output): (DeviceViewMut<'static, f32>, _) = (fake_slice(0, n), fake_slice(1, n));
    transpose(&plan(method, &input, &mut output, rows, cols)?)
}

/// The `rows × cols` TMA transpose (see the module docs). The model needs no tensor maps (their
/// encoding needs the driver): it replays the kernel's own shared-memory steps. Errors as the
/// library's TMA transpose for shapes it refuses.
pub fn tma(rows: usize, cols: usize) -> Result<Counts> {
    let (r32, c32) = (u32::try_from(rows), u32::try_from(cols));
    let (Ok(rows32), Ok(cols32)) = (r32, c32) else {
        return Err(crate::Error::Unsupported(format!("a {rows} x {cols} TMA transpose")));
    };
    if !tma_supports(rows32, cols32) {
        return Err(crate::Error::Unsupported(format!(
            "a {rows} x {cols} TMA transpose (rows and columns must be multiples of 4)"
        )));
    }
    let mut one = Model::instructions_only();
    for warp in 0..TMA_THREADS / 32 {
        for step in 0..TMA_STEPS {
            let rc = |l| tma_lane_coords(warp, l, step);
            one.shared_load(4, u32::MAX, |l| {
                let (r, c) = rc(l);
                4 * tma_src(r, c)
            })?;
            one.shared_store(4, u32::MAX, |l| {
                let (r, c) = rc(l);
                4 * tma_dst(r, c)
            })?;
        }
    }
    let mut m = Model::new();
    m.add(&one.counts().repeated(wide_tiles(rows32, cols32))?)?;
    let (src, dst) = (m.buffer(FAKE_BASE), m.buffer(FAKE_BASE + FAKE_SPACING));
    let bytes = 4 * rows as u64 * cols as u64;
    m.footprint_read(src, 0, bytes)?;
    m.footprint_write(dst, 0, bytes)?;
    Ok(m.counts())
}
