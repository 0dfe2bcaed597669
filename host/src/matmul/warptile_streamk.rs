//! Stage 8, warptile_streamk (Hopper): warptile_async's whole waves, then a row of blocks shares the last.
//! 4096² on 132 SMs: the last wave takes 0.88 of a tile time, not 1; a C tile read + write a cut.
//!
//! The host side: the schedule on a GPU of a given size, when it pays, and its two launches.
//!
//! Below the launch: the model's replay of its kernels (`replay`) and their footprint for the
//! index proofs (`footprint`).

use super::lesson::{Bench, Lesson, STREAMK_SHAPES};
use super::{Bounds, MatmulSig, Method, Stage, Waves};
use crate::launch::{Kernel, Launch};
use coalesce_kernels::launch::MAX_GRID_Y;
use coalesce_kernels::matmul::{
    SK_MAX_WAVE, StreamK, WARPTILE_ASYNC, matmul_warptile_streamk, matmul_warptile_streamk_waves,
};

/// Sizes the stream-K kernel is swept over: 3072³ (288 tiles, 2.18 waves on 132 SMs), 4096³
/// (3.88) and 8192³ (15.5).
const STREAMK_SIZES: Bench = Bench::Cubes { sweep: &[3072, 4096, 8192], check: &[3072] };

/// Stage 8's descriptor: `warptile_async`'s blocks over the whole waves, then the shared row; no
/// guards, so whole [`WARPTILE_ASYNC`] tiles only.
pub(super) const STAGE: Stage = Stage {
    method: Method::WarptileStreamk,
    kernel: matmul_warptile_streamk,
    waves: Some(Waves { kernel: matmul_warptile_streamk_waves, blocks_of: Method::WarptileAsync }),
    warp_tile: Some(WARPTILE_ASYNC),
    bounds: Bounds::tiles_of(WARPTILE_ASYNC),
    block_rows: WARPTILE_ASYNC.bm,
    launch: |_, m, n, _, sms| launch(m, n, sms),
    #[cfg(feature = "model")]
    replay: replay::REPLAY,
    #[cfg(feature = "model")]
    footprint: footprint::FOOTPRINT,
    lesson: Lesson {
        summary: "warptile_async over the whole waves by linear block id, then one row shares the rest by k iteration (sm_90)",
        bench: STREAMK_SIZES,
        checks: &[&STREAMK_SHAPES],
    },
};

/// The stream-K schedule of an `m × n` multiply on a GPU of `sms` multiprocessors: a wave of
/// one block a multiprocessor (at least one, at most [`SK_MAX_WAVE`]), as many whole waves as
/// the tiles fill, the rest shared by one row ([`StreamK`]; k plays no part in the grids).
pub const fn stream_k(m: u32, n: u32, sms: u32) -> StreamK {
    schedule(m, n, sms, false)
}

/// [`stream_k`], or with `edge` the schedule of stage 11's guarded kernels, whose partial tiles
/// count as whole ones ([`StreamK::covering`]).
pub(super) const fn schedule(m: u32, n: u32, sms: u32, edge: bool) -> StreamK {
    let wave = if sms == 0 {
        1
    } else if sms > SK_MAX_WAVE {
        SK_MAX_WAVE
    } else {
        sms
    };
    StreamK::of(m, n, 0, wave, edge)
}

/// Whether sharing the last wave out
/// ([`Method::WarptileStreamk`]) beats whole tiles
/// ([`Method::WarptileAsync`]) for an `m × n × k`
/// multiply of whole 128 × 256 × 16 tiles on
/// `sms` multiprocessors, as measured on the H100: more than one wave, the last at most 90%
/// full (4096²: 512 tiles, 116 of 132 in the last wave; at 2048 × 4096, 124 of 132, it lost
/// 1%), at least 32 k tiles (with few, cutting a tile costs more than the wave it saves: 4096 ×
/// 4096 × 48 ran 16% slower), and a grid that fits.
pub const fn stream_k_pays(m: u32, n: u32, k: u32, sms: u32) -> bool {
    let sk = stream_k(m, n, sms);
    let last = sk.tiles % sk.wave;
    sms == sk.wave
        && sk.tiles > sk.wave
        && last != 0
        && 10 * last <= 9 * sk.wave
        && k / WARPTILE_ASYNC.bk >= 32
        && sk.waves < MAX_GRID_Y
}

/// The shared row's launch: `warptile_async`'s blocks on [`StreamK::row_grid`], one block a
/// multiprocessor.
pub(super) const fn launch(m: u32, n: u32, sms: u32) -> Launch {
    row_launch(m, n, sms, super::warptile_async::launch(m, n))
}

/// The shared row's launch for blocks like `tile`'s (threads and ring): [`StreamK::row_grid`].
pub(super) const fn row_launch(m: u32, n: u32, sms: u32, tile: Launch) -> Launch {
    Launch { grid: stream_k(m, n, sms).row_grid(), ..tile }
}

/// Stream-K's two launches over any k loop: `whole` on [`StreamK::whole_grid`], then `row` on
/// `row_launch` (its blocks' threads and ring), each left out where it has no tile; with `edge`
/// the guarded kernels' schedule ([`schedule`]).
pub(super) fn launches_of(
    (m, n, sms, edge): (u32, u32, u32, bool),
    (whole, row): (Kernel<MatmulSig>, Kernel<MatmulSig>),
    row_launch: Launch,
) -> [Option<(Kernel<MatmulSig>, Launch)>; 2] {
    // Planned on every launch of a multiply: two slots on the stack, no allocation.
    let sk = schedule(m, n, sms, edge);
    let waves = (whole, Launch { grid: sk.whole_grid(), ..row_launch });
    [(sk.waves > 0).then_some(waves), (sk.sk_tiles() > 0).then_some((row, row_launch))]
}

#[cfg(feature = "model")]
pub(super) mod replay {
    //! The model's replay of the stage's launches (what the replays share:
    //! `crate::model::matmul`).
    //!
    //! SASS (sm_90, the Hopper module):
    //! - `matmul_warptile_streamk`: `warptile_async`'s k loop for each segment of a block's range, the
    //!   flag handshake of thread 0, and 16-byte loads of C before a cut tile's stores.

    use crate::error::Result;
    use crate::launch::Launch;
    use crate::matmul::warptile::replay::store_c_vectors;
    use crate::matmul::warptile_async::replay::{KLoop, k_loop};
    use crate::model::matmul::{Launched, Replay, tile_origin};
    use crate::model::{Model, Warp, block_warps};
    use coalesce_kernels::matmul::{StreamK, WARPTILE_ASYNC, WarpTile, row_major};

    /// Counts of a stream-K row on the schedule its grid gives ([`StreamK`]): each block is
    /// replayed segment by segment, as the kernel's `warptile_streamk` runs them: the k loop, the
    /// wait for the previous block (one `ld.acquire` of thread 0: a spin past the first read is not
    /// counted, it depends on timing) and its flag cleared (a store), the partial sums read back
    /// from C (`ld.global.cg`, 16 bytes a 4 accumulators), C stored, and the flag set for the next
    /// block (a store). The whole waves before it are a launch of their own
    /// (`matmul_warptile_streamk_waves`, counted as the async kernel). The k loop is `k_loop`:
    /// the async ring's here, the spread ring's in stage 10 (`matmul_spread_streamk`).
    pub(crate) fn stream_k_counts(model: &mut Model, l: &Launched, launch: &Launch, k_loop: KLoop) -> Result<()> {
        let cfg = WARPTILE_ASYNC;
        let sk = StreamK::of(l.m, l.n, l.k, launch.grid.0, false);
        let flags = model.buffer(FLAGS_ADDRESS);
        for x in 0..sk.wave {
            let mut u = 0;
            while let Some((tile, k0, k1)) = sk.segment(x, u) {
                let origin = tile_origin(sk, tile)?;
                for w in block_warps(launch, (x, 0)) {
                    k_loop(model, l, &w, origin, (k0, k1))?;
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
    pub(crate) const FLAGS_ADDRESS: u64 = 0x7000_0000_0000;

    /// The 16-byte reads of C before a partial tile is added to it (`store_tile` with `add`).
    fn load_c_vectors(
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
    pub(crate) const REPLAY: Replay =
        Replay { blocks: None, row: Some(|model, l, launch| stream_k_counts(model, l, launch, k_loop)) };
}

/// What stream-K's shared row touches (`spread_streamk`'s too): the tiles its schedule hands
/// out. The k loop and the stores inside a tile are its whole waves' kernel's, walked as that
/// stage's ([`Waves::blocks_of`]).
#[cfg(feature = "model")]
pub(super) mod footprint {
    use super::stream_k;
    use crate::matmul::footprint::{Footprint, Matrix, Probe, Touch, Walked, ensure, ensure_eq, tile_cells};
    use coalesce_kernels::matmul::{StreamK, WARPTILE_ASYNC, row_major};

    pub(crate) const FOOTPRINT: Footprint = Footprint {
        launch,
        block: |_, _, _, _| Ok(()),
        stores: |p, (x, _), store| {
            // The row's schedule from its grid, as the kernel forms it: a tile's last segment
            // stores it.
            let (m, n, k) = p.dims;
            let sk = StreamK::of(m, n, k, p.grid.0, false);
            let mut u = 0;
            while let Some((tile, _, k1)) = sk.segment(x, u) {
                if k1 == sk.iters {
                    let origin = sk.origin(tile).expect("a tile of the schedule");
                    tile_cells(WARPTILE_ASYNC, origin).for_each(|(row, col)| store(row, col));
                }
                u += 1;
            }
        },
    };

    /// The row is the host's schedule, and every tile it names is a whole tile of the band.
    fn launch(p: &Probe, touch: Touch<'_>) -> Walked {
        let (m, n, k) = p.dims;
        let (n64, k64) = (u64::from(n), u64::from(k));
        let cfg = WARPTILE_ASYNC;
        let sk = stream_k(m, n, p.sms);
        ensure_eq!(p.grid, sk.row_grid());
        for address in [p.addresses.0, p.addresses.1, p.addresses.2] {
            ensure_eq!(address % 16, 0);
        }
        let sk = StreamK { iters: k / cfg.bk, ..sk };
        let mut tiles = Vec::new();
        for x in 0..sk.wave {
            let mut u = 0;
            while let Some((tile, k0, k1)) = sk.segment(x, u) {
                ensure!(k0 < k1 && k1 <= sk.iters);
                tiles.push(tile);
                u += 1;
            }
        }
        for tile in tiles {
            let (row0, col0) = sk.origin(tile).ok_or("a tile past the schedule's")?;
            ensure!(row0 + cfg.bm <= m && col0 + cfg.bn <= n);
            let (last_row, last_col) = (u64::from(row0 + cfg.bm - 1), u64::from(col0 + cfg.bn - 1));
            touch(Matrix::C, row_major(last_row, last_col, n64), 1)?;
            touch(Matrix::A, row_major(last_row, k64 - 1, k64), 1)?;
        }
        touch(Matrix::B, k64 * n64 - 1, 1)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matmul::tests::launches_of;
    use crate::matmul::*;

    #[test]
    fn stream_k_plans_whole_waves_then_a_shared_row() {
        // Stream-K on 132 SMs: 4096 x 4096 is 512 tiles, 3 whole waves through the async kernel,
        // then the 116 left shared by a row of 132.
        let ring = 3 * 16 * (132 + 256) * 4;
        let sk = launches_of(Method::WarptileStreamk, (4096, 4096, 16), (4096 * 16, 16 * 4096, 4096 * 4096)).unwrap();
        let grids: Vec<_> = sk.iter().map(|(name, l, _)| (*name, l.grid, l.block, l.shared_bytes)).collect();
        assert_eq!(
            grids,
            [
                (matmul_warptile_streamk_waves.name(), (132, 3), (256, 1), ring),
                (matmul_warptile_streamk.name(), (132, 1), (256, 1), ring)
            ]
        );
        // 132 tiles are one whole wave and nothing shared; 90 tiles are all shared.
        let one = |m: usize, n: usize| {
            launches_of(Method::WarptileStreamk, (m, n, 16), (m * 16, 16 * n, m * n))
                .unwrap()
                .into_iter()
                .map(|(name, l, _)| (name, l.grid))
                .collect::<Vec<_>>()
        };
        assert_eq!(one(1536, 2816), [(matmul_warptile_streamk_waves.name(), (132, 1))]);
        assert_eq!(one(1280, 2304), [(matmul_warptile_streamk.name(), (132, 1))]);
    }
}
