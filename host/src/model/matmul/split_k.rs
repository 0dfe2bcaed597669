//! Stages 14 to 16, split_k, split_k_wide and split_k_tall (Hopper, any shape): `warptile_small`'s guarded tiles, each tile's k cut
//! into ranges, a block a range; partial tiles meet in a workspace, added by a tile's last block.
//!
//! SASS (sm_90, the Hopper module):
//! - `matmul_split_k`: `matmul_warptile_edge`'s k loop over the block's k range of the 64 × 128
//!   tile, its whole k tiles read as `LDG.E.128` where rows start on 16-byte boundaries
//!   (`mm_vectors`; B's only by the lanes whose 4 columns are inside n); then 16 `STG.E.128` of
//!   its sums into the workspace (`split_k_slot`: a warp's 32 lanes 512 contiguous bytes), one `ATOMG.ADD` of thread 0, and on the tile's last
//!   block 16 `LDG.E.128` (`ld.global.cg`) for each other split's partial, then C's floats as
//!   `matmul_warptile_edge` stores them (64 `STG.E`, guarded). Which block of a tile arrives last
//!   depends on timing; the replay takes the last split's, the same counts as any other's. With
//!   one split (tiles that fill the GPU) a block stores its tile as `matmul_warptile_edge` does.
//! - `matmul_split_k_wide` and `matmul_split_k_tall` (stages 15 and 16): the same on 32 × 128
//!   and 128 × 32 tiles, 8 `STG.E.128` of sums a thread, and the last block loads the partials
//!   two splits at a time (`split_k_group`), its own read back too.

use super::warptile::{store_c_vectors, warptile_k_loop};
use super::{Launched, Replay};
use crate::error::Result;
use crate::launch::Launch;
use crate::model::{Model, block_warps};
use coalesce_kernels::matmul::{SPLIT_K, SPLIT_K_TALL, SPLIT_K_WIDE, SplitK, split_k_group, split_k_slot};

/// A made-up address for the split-K kernel's workspace and tickets (module globals, no buffers
/// of the call).
const WORKSPACE_ADDRESS: u64 = 0x7100_0000_0000;
const TICKETS_ADDRESS: u64 = 0x7200_0000_0000;

/// Counts of a split-K launch on schedule `sk` (its grid's, of its kernel's tile): every block's
/// warps replayed.
fn split_k_counts(model: &mut Model, l: &Launched, launch: &Launch, sk: SplitK) -> Result<()> {
    let (workspace, tickets) = (model.buffer(WORKSPACE_ADDRESS), model.buffer(TICKETS_ADDRESS));
    let (gx, gy) = sk.grid();
    let cfg = sk.cfg;
    for by in 0..gy {
        for bx in 0..gx {
            let (tx, z) = sk.block(bx);
            let tile = sk.tile(tx, by);
            let origin = cfg.block_origin(tx, by);
            let (first, end) = sk.walked(z, l.k);
            for w in block_warps(launch, (bx, by)) {
                let t = |lane| w.thread(lane).0;
                warptile_k_loop(model, l, &w, (cfg, true, l.vectors), origin, first..end)?;
                // One split: the tile stored as the guarded warp tile stores it.
                if sk.splits == 1 {
                    store_c_vectors(model, l, &w, cfg, origin, true)?;
                    continue;
                }
                let slots = |model: &mut Model, split: u32, store: bool| -> Result<()> {
                    for i in 0..cfg.tm {
                        for h in 0..cfg.tn / 4 {
                            let at = |lane| 4 * (sk.partial(tile, split) + u64::from(split_k_slot(cfg, t(lane), i, h)));
                            if store {
                                model.store(workspace, 16, w.lanes, at)?;
                            } else {
                                model.load(workspace, 16, w.lanes, at)?;
                            }
                        }
                    }
                    Ok(())
                };
                slots(model, z, true)?;
                if w.thread(0).0 == 0 {
                    model.atomic(tickets, 4 * u64::from(tile))?;
                }
                if z + 1 == sk.splits {
                    // Its own partial too where it loads splits in groups.
                    let own = u32::from(split_k_group(cfg) > 1);
                    for split in 0..z + own {
                        slots(model, split, false)?;
                    }
                    if w.thread(0).0 == 0 {
                        model.store(tickets, 4, 1, |_| 4 * u64::from(tile))?;
                    }
                    store_c_vectors(model, l, &w, cfg, origin, true)?;
                }
            }
        }
    }
    Ok(())
}

/// Stage 14's replay: its whole launch, block by block.
pub(crate) const REPLAY: Replay = Replay {
    blocks: None,
    row: Some(|model, l, launch| split_k_counts(model, l, launch, SplitK::of_grid(SPLIT_K.cfg, l.n, launch.grid))),
};

/// Stage 15's replay (32 × 128 tiles).
pub(crate) const WIDE_REPLAY: Replay = Replay {
    blocks: None,
    row: Some(|model, l, launch| split_k_counts(model, l, launch, SplitK::of_grid(SPLIT_K_WIDE.cfg, l.n, launch.grid))),
};

/// Stage 16's replay (128 × 32 tiles).
pub(crate) const TALL_REPLAY: Replay = Replay {
    blocks: None,
    row: Some(|model, l, launch| split_k_counts(model, l, launch, SplitK::of_grid(SPLIT_K_TALL.cfg, l.n, launch.grid))),
};
