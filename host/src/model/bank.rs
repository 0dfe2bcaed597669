//! Replays of the bank-conflict kernels in `kernels-gpu/src/bank.rs`.
//!
//! SASS (sm_90): the table copy is one 4-byte `LDG.E` and one `STS` per word a thread copies
//! (`WORDS / BLOCK` of them), then `ITERS` 4-byte `LDS` (volatile: one per step, never merged),
//! then one `STG.E` of the thread's sum.
//!
//! Uniformity: step `k` of every warp reads `index(lane(t), k, ..)`, and `lane(t)` runs over
//! 0..32 in every (whole) warp of the fixed launch, so all warps make the same `ITERS` shared
//! loads. They are replayed for one warp and counted once per warp: exact, and 8448 times less
//! work than replaying 34.6 M identical instructions.

use super::{Counts, Model, fake_slice, lanes_where, no_replay, warps};
use crate::buffer::DeviceViewMut;
use crate::error::{Error, Result};
use crate::launch::{Call, Launch};
use crate::lessons::bank::{Pattern, StrideSig, Tile, TileSig, WORDS, plan_stride, plan_tile};
use coalesce_kernels::bank::{ITERS, bank_stride, lane, output_index, table_word};

/// Counts of a planned tile read.
pub fn tile(call: &Call<'_, TileSig>) -> Result<Counts> {
    let &(table, ref out) = call.args();
    let kernel = call.kernel();
    let tile = [Tile::Rows, Tile::Cols, Tile::ColsPadded].into_iter().find(|t| t.kernel() == kernel);
    replay(call.launch(), table.address(), out.address(), Pattern::Tile(tile.ok_or_else(|| no_replay(kernel.name()))?))
}

/// Counts of a planned stride read.
pub fn stride(call: &Call<'_, StrideSig>) -> Result<Counts> {
    if call.kernel() != bank_stride {
        return Err(no_replay(call.kernel().name()));
    }
    let &(table, ref out, stride) = call.args();
    replay(call.launch(), table.address(), out.address(), Pattern::Stride(stride))
}

fn replay(launch: Launch, table: u64, out: u64, pattern: Pattern) -> Result<Counts> {
    let mut m = Model::new();
    let (src, dst) = (m.buffer(table), m.buffer(out));
    let mut warps_seen = 0u64;
    for w in warps(&launch) {
        warps_seen += 1;
        let t = |l| w.thread(l).0;
        let mut j = 0;
        loop {
            let active = lanes_where(w.lanes, |l| table_word(t(l), j) < WORDS);
            if active == 0 {
                break;
            }
            m.load(src, 4, active, |l| 4 * u64::from(table_word(t(l), j)))?;
            m.shared_store(4, active, |l| 4 * table_word(t(l), j))?;
            j += 1;
        }
        m.store(dst, 4, w.lanes, |l| 4 * u64::from(output_index(w.block.0, t(l))))?;
    }
    // The ITERS loop of one warp, counted for every warp (see the module docs).
    let mut one = Model::instructions_only();
    let first = warps(&launch).next().ok_or(Error::Empty("a launch with a warp"))?;
    for k in 0..ITERS {
        one.shared_load(4, first.lanes, |l| 4 * pattern.index(lane(first.thread(l).0), k))?;
    }
    m.add(&one.counts().repeated(warps_seen)?)?;
    Ok(m.counts())
}

/// The bank kernel reading with `pattern`.
pub fn run(pattern: Pattern) -> Result<Counts> {
    let (table, mut out): (DeviceViewMut<'static, i32>, DeviceViewMut<'static, i32>) =
        (fake_slice(0, WORDS as usize), fake_slice(1, crate::lessons::bank::OUTPUTS as usize));
    match pattern {
        Pattern::Tile(t) => tile(&plan_tile(t, &table, &mut out)?),
        Pattern::Stride(s) => stride(&plan_stride(&table, &mut out, s)?),
    }
}
