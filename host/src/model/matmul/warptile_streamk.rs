//! Stage 8, warptile_streamk (Hopper): warptile_async's whole waves, then a row of blocks shares the last.
//! 4096² on 132 SMs: the last wave takes 0.88 of a tile time, not 1; a C tile read + write a cut.
//!
//! SASS (sm_90, the Hopper module):
//! - `matmul_warptile_streamk`: `warptile_async`'s k loop for each segment of a block's range, the
//!   flag handshake of thread 0, and 16-byte loads of C before a cut tile's stores.

use super::warptile::store_c_vectors;
use super::warptile_async::async_k_loop_warp;
use super::warptile_spread::spread_k_loop_warp;
use super::{Launched, Replay};
use crate::error::Result;
use crate::launch::Launch;
use crate::model::{Model, Warp, block_warps};
use coalesce_kernels::matmul::{StreamK, WARPTILE_ASYNC, WTA_STAGES, WTS_STAGES, WarpTile, row_major};

/// Counts of a stream-K row on schedule `sk` (its grid's, [`StreamK`]): each block is
/// replayed segment by segment, as the kernel's `warptile_streamk` runs them: the k loop, the
/// wait for the previous block (one `ld.acquire` of thread 0: a spin past the first read is not
/// counted, it depends on timing) and its flag cleared (a store), the partial sums read back
/// from C (`ld.global.cg`, 16 bytes a 4 accumulators), C stored, and the flag set for the next
/// block (a store). The whole waves before it are a launch of their own
/// (`matmul_warptile_streamk_waves`, counted as the async kernel). With `spread`, the k loop is
/// the spread ring's (`matmul_spread_streamk`, stage 10).
pub(super) fn stream_k_counts(
    model: &mut Model,
    l: &Launched,
    launch: &Launch,
    sk: StreamK,
    spread: bool,
) -> Result<()> {
    let cfg = WARPTILE_ASYNC;
    let flags = model.buffer(FLAGS_ADDRESS);
    for x in 0..sk.wave {
        let mut u = 0;
        while let Some((tile, k0, k1)) = sk.segment(x, u) {
            let origin = super::tile_origin(sk, tile)?;
            for w in block_warps(launch, (x, 0)) {
                if spread {
                    spread_k_loop_warp(model, l, &w, (cfg, WTS_STAGES), origin, (k0, k1))?;
                } else {
                    async_k_loop_warp(model, l, &w, (cfg, WTA_STAGES), origin, (k0, k1))?;
                }
                let first = w.thread(0).0 == 0;
                if k0 > 0 {
                    if first {
                        model.load(flags, 4, 1, |_| 0)?;
                        model.store(flags, 4, 1, |_| 0)?;
                    }
                    load_c_vectors(model, l, &w, cfg, origin)?;
                }
                store_c_vectors(model, l, &w, cfg, origin, false)?;
                if k1 < sk.iters && first {
                    model.store(flags, 4, 1, |_| 0)?;
                }
            }
            u += 1;
        }
    }
    Ok(())
}

/// A made-up address for the stream-K kernel's flags (a module global, no buffer of the call).
pub(super) const FLAGS_ADDRESS: u64 = 0x7000_0000_0000;

/// The 16-byte reads of C before a partial tile is added to it (`store_tile` with `add`).
pub(super) fn load_c_vectors(
    model: &mut Model,
    l: &Launched,
    w: &Warp,
    cfg: WarpTile,
    (row0, col0): (u32, u32),
) -> Result<()> {
    let t = |lane| w.thread(lane).0;
    for i in 0..cfg.tm {
        for h in 0..cfg.tn / 4 {
            model.load(l.c, 16, w.lanes, |lane| {
                4 * row_major(
                    (row0 + cfg.out_row(t(lane), i)).into(),
                    (col0 + cfg.out_col(t(lane), h)).into(),
                    l.n.into(),
                )
            })?;
        }
    }
    Ok(())
}

/// Stage 8's replay: the shared row (its whole waves are `warptile_async`'s blocks, replayed as
/// that stage's).
pub(crate) const REPLAY: Replay = Replay {
    blocks: None,
    row: Some(|model, l, launch| {
        stream_k_counts(model, l, launch, StreamK::of(l.m, l.n, l.k, launch.grid.0, false), false)
    }),
};

/// Stage 10's replay: stage 8's row over the spread ring's k loop (its whole waves are
/// `warptile_spread`'s blocks).
pub(crate) const SPREAD_REPLAY: Replay = Replay {
    blocks: None,
    row: Some(|model, l, launch| {
        stream_k_counts(model, l, launch, StreamK::of(l.m, l.n, l.k, launch.grid.0, false), true)
    }),
};
