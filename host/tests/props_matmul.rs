//! Property tests of the matmul plans (every kernel: the general ones, the whole-tiles-only
//! register-blocked and warp-tiled ones, the guarded warp-tiled ones `matmul` uses for any
//! other shape, and stream-K's launches, stage 11's over any shape included): over random
//! accepted shapes, m up to 10M rows and past (several row bands) included, every A, B and C
//! index a thread of each planned band can compute (with the kernels' own index functions and
//! guards) lies inside the band's sub-slices and those inside the buffers; the bands tile C
//! exactly once; stream-K's segments compute each (tile, k tile) once; rejected inputs return
//! their documented error, before any band is planned.
use std::ops::Range;

use coalesce::Error;

use coalesce::DeviceViewMut;
use coalesce::matmul::*;
use coalesce_kernels::matmul::*;
use proptest::prelude::*;

/// A, B and C at made-up addresses 256-byte aligned, as whole allocations are.
const BASE: (u64, u64, u64) = (0x1_0000_0000, 0x1000_0000_0000, 0x2000_0000_0000);

fn slices(
    lens: (usize, usize, usize),
    skew: u64,
) -> (DeviceViewMut<'static, f32>, DeviceViewMut<'static, f32>, DeviceViewMut<'static, f32>) {
    // SAFETY: descriptors only; no planned call is ever launched.
    unsafe {
        (
            DeviceViewMut::stand_in(BASE.0 + skew, lens.0),
            DeviceViewMut::stand_in(BASE.1, lens.1),
            DeviceViewMut::stand_in(BASE.2, lens.2),
        )
    }
}

/// The stages of the table (`Method::ALL`) that `keep` picks: every strategy draws from the
/// table, so a new stage is drawn (and its kernel's index proofs below must cover it).
fn stages(keep: impl Fn(&Stage) -> bool) -> impl Strategy<Value = Method> + Clone {
    let picked: Vec<Method> = Method::ALL.into_iter().filter(|m| keep(m.stage())).collect();
    assert!(!picked.is_empty(), "a strategy with no stage");
    proptest::sample::select(picked)
}

/// The one-launch kernels that take any shape.
fn general() -> impl Strategy<Value = Method> + Clone {
    stages(|s| s.bounds == Bounds::Guarded && s.waves.is_none())
}

/// The kernels that take any shape, stage 11's stream-K over the guarded ring among them (two
/// launches a band, so not in `general()`, whose tests expect one).
fn any_shape() -> impl Strategy<Value = Method> + Clone {
    stages(|s| s.bounds == Bounds::Guarded)
}

/// The one-launch kernels that take whole tiles only.
fn whole_tiles() -> impl Strategy<Value = Method> + Clone {
    stages(|s| s.bounds != Bounds::Guarded && s.waves.is_none())
}

/// Stream-K's stages, whole tiles only (`guarded` false) or any shape.
fn stream_k_stages(guarded: Option<bool>) -> impl Strategy<Value = Method> + Clone {
    stages(move |s| s.waves.is_some() && guarded.is_none_or(|g| g == (s.bounds == Bounds::Guarded)))
}

/// The split-K tile of a split-K stage's kernel.
fn split_k_tile(method: Method) -> SplitKTile {
    let tile = match method {
        Method::SplitKWide => SPLIT_K_WIDE,
        Method::SplitKTall => SPLIT_K_TALL,
        _ => SPLIT_K,
    };
    assert_eq!(method.warp_tile(), Some(tile.cfg), "{method:?} is a split-K stage");
    tile
}

/// `(m, n, k)` rounded up to whole tiles of `method` (unchanged for the guarded kernels).
fn round_up(method: Method, (m, n, k): (usize, usize, usize)) -> (usize, usize, usize) {
    let (bm, bn, bk) = match method.stage().bounds {
        Bounds::WholeTiles { bm, bn, bk } => (bm, bn, bk),
        Bounds::Guarded => (1, 1, 1),
    };
    (m.next_multiple_of(bm as usize), n.next_multiple_of(bn as usize), k.next_multiple_of(bk as usize))
}

/// Rows: small, up to 10M, and within 40 rows of a band boundary of any of the kernels.
fn rows() -> impl Strategy<Value = usize> {
    let boundary = (1usize..=3, prop_oneof![Just(NAIVE_BLOCK.1), Just(TILE)], -40isize..=40)
        .prop_map(|(j, block, d)| (j * band_rows(block) as usize).saturating_add_signed(d).max(1));
    prop_oneof![1usize..5000, 1usize..=10_000_000, boundary]
}

/// One planned band as the tests see it: its rows, launch and arguments, and where its pointers
/// point, in elements from the start of the whole buffers.
#[derive(Debug)]
struct Band {
    kernel: &'static str,
    rows: Range<usize>,
    grid: (u32, u32),
    block: (u32, u32),
    shared: u32,
    dims: (u32, u32, u32),
    offsets: (u64, u64, u64),
    addresses: (u64, u64, u64),
}

/// Plans `method` over buffers of exactly the right lengths and records every band's launches
/// (one each, two for stream-K).
fn plan_all(method: Method, (m, n, k): (usize, usize, usize)) -> Result<Vec<Band>, Error> {
    let (a, b, mut c) = slices((m * k, k * n, m * n), 0);
    let mut out = Vec::new();
    plan_bands(method, &a, &b, &mut c, (m, n, k), 132, |rows, call| {
        let launch = call.launch();
        launch.check_limits()?;
        let (pa, pb, pc, bm, bn, bk) = call.args();
        let addresses = (pa.address(), pb.address(), pc.address());
        let offsets = ((addresses.0 - BASE.0) / 4, (addresses.1 - BASE.1) / 4, (addresses.2 - BASE.2) / 4);
        out.push(Band {
            kernel: call.kernel().name(),
            rows,
            grid: launch.grid,
            block: launch.block,
            shared: launch.shared_bytes,
            dims: (*bm, *bn, *bk),
            offsets,
            addresses,
        });
        Ok(())
    })?;
    Ok(out)
}

/// Blocks worth probing: the four corners of the grid and one at random.
fn blocks((gx, gy): (u32, u32), probe: u64) -> [(u32, u32); 5] {
    let (x, y) = ((probe % gx as u64) as u32, ((probe >> 32) % gy as u64) as u32);
    [(0, 0), (gx - 1, 0), (0, gy - 1), (gx - 1, gy - 1), (x, y)]
}

/// Checks that elements `offset + index .. offset + index + width` lie inside the band's part
/// (`part` elements) and the band's part inside the whole buffer (`whole` elements).
fn inside(what: &str, index: u64, width: u64, offset: u64, part: u64, whole: u64) -> Result<(), TestCaseError> {
    prop_assert!(index + width <= part, "{what}: index {index} + {width} past the band's {part}");
    prop_assert!(offset + part <= whole, "{what}: band part {offset} + {part} past the buffer's {whole}");
    Ok(())
}

/// The tile of block `(bx, by)` of a warp-tiled launch of `grid` over `n` columns, as the
/// kernel computes it: stream-K's whole waves (`linear`) from the block's linear id (the guarded
/// ring counting partial tiles), the others from its coordinates.
fn warp_tile_origin(method: Method, grid: (u32, u32), n: u32, (bx, by): (u32, u32), linear: bool) -> (u32, u32) {
    let cfg = method.warp_tile().unwrap();
    let tiles_n = if method.whole_tiles_only() { n / cfg.bn } else { n.div_ceil(cfg.bn) };
    if linear { cfg.tile_origin(by * grid.0 + bx, tiles_n) } else { cfg.block_origin(bx, by) }
}

/// The stream-K schedule of `method` over an `m × n × k` band on the 132 SMs `plan_all` plans
/// for, from the kernels' side (`StreamK`'s constructors), not the host's `stream_k`, so that
/// the two are checked against each other.
fn schedule(method: Method, (m, n, k): (u32, u32, u32)) -> StreamK {
    let wave = 132u32.clamp(1, SK_MAX_WAVE);
    StreamK::of(m, n, k, wave, !method.whole_tiles_only())
}

/// Stream-K's launches of one band of `method`, in order: the whole waves' kernel, then the
/// shared row's (`None` for the other methods).
fn stream_k_kernels(method: Method) -> Option<[&'static str; 2]> {
    method.stage().waves.map(|waves| [waves.kernel.name(), method.kernel().name()])
}

/// Every index the threads of the probed blocks of one launch of `method`'s plan compute,
/// following each kernel's guards.
fn check_band(method: Method, band: &Band, whole: (usize, usize, usize), probe: u64) -> Result<(), TestCaseError> {
    let (m, n, k) = band.dims;
    let (m64, n64, k64) = (m as u64, n as u64, k as u64);
    let (oa, ob, oc) = band.offsets;
    let (wa, wb, wc) = (whole.0 as u64, whole.1 as u64, whole.2 as u64);
    prop_assert_eq!(m as usize, band.rows.len());
    prop_assert_eq!(band.block, method.launch(m, n, 132).block);
    let rng = |salt: u64| (probe ^ salt).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 7;
    // Stream-K's whole waves are the async (spread) kernel by linear block id: checked as it, on
    // its grid (the table's `Waves::blocks_of`). The guarded ring's have no kernel of their own
    // to be checked as: checked with its row, which runs the same k loop and stores.
    let waves = Method::ALL.into_iter().find_map(|stage_k| {
        let waves = stage_k.stage().waves.filter(|w| w.kernel.name() == band.kernel)?;
        Some((waves.blocks_of, stage_k))
    });
    let stream_k_waves = waves.is_some();
    let kernel = match waves {
        Some((kernel, _)) => kernel,
        None => Method::ALL.into_iter().find(|m| m.kernel().name() == band.kernel).unwrap(),
    };
    if let Some((_, stream_k_method)) = waves {
        prop_assert_eq!(method, stream_k_method);
        prop_assert_eq!(band.grid, schedule(method, band.dims).whole_grid());
    }
    match kernel {
        Method::Naive => {
            prop_assert!(band.grid.0 * NAIVE_BLOCK.0 >= n && band.grid.1 * NAIVE_BLOCK.1 >= m, "grid covers the band");
            for (bx, by) in blocks(band.grid, probe) {
                let r = rng(bx as u64 ^ (by as u64) << 20);
                let threads =
                    [(0, 0), (NAIVE_BLOCK.0 - 1, NAIVE_BLOCK.1 - 1), ((r % 32) as u32, ((r >> 8) % 8) as u32)];
                for (tx, ty) in threads {
                    let (row, col) = naive_coords(bx, by, tx, ty);
                    if row < m && col < n {
                        for i in [0, k64 - 1, (r >> 16) % k64] {
                            inside("A", row_major(row as u64, i, k64), 1, oa, m64 * k64, wa)?;
                            inside("B", row_major(i, col as u64, n64), 1, ob, k64 * n64, wb)?;
                        }
                        inside("C", row_major(row as u64, col as u64, n64), 1, oc, m64 * n64, wc)?;
                    }
                }
            }
        }
        Method::Tiled | Method::Prefetch | Method::CpAsync => {
            prop_assert!(band.grid.0 * TILE >= n && band.grid.1 * TILE >= m, "grid covers the band");
            let tiles = k.div_ceil(TILE);
            for (bx, by) in blocks(band.grid, probe) {
                let r = rng(bx as u64 ^ (by as u64) << 20);
                let threads = [(0, 0), (TILE - 1, TILE - 1), (TILE - 1, 0), ((r % 32) as u32, ((r >> 8) % 32) as u32)];
                for (tx, ty) in threads {
                    let (row, col) = tiled_coords(bx, by, tx, ty);
                    prop_assert!(tile_offset(ty, tx) < TILED_SHARED_FLOATS / 2);
                    // Every tile the loop (and the prefetch of tile t + 1 < tiles) stages.
                    for t in [0, tiles - 1, ((r >> 16) % tiles as u64) as u32] {
                        let (ac, br) = (tile_a_col(t, tx), tile_b_row(t, ty));
                        if row < m && ac < k {
                            inside("A", row_major(row as u64, ac as u64, k64), 1, oa, m64 * k64, wa)?;
                        }
                        if br < k && col < n {
                            inside("B", row_major(br as u64, col as u64, n64), 1, ob, k64 * n64, wb)?;
                        }
                    }
                    if row < m && col < n {
                        inside("C", row_major(row as u64, col as u64, n64), 1, oc, m64 * n64, wc)?;
                    }
                }
            }
        }
        Method::Regblock => {
            // No guards: the grid is exactly the band's tiles and every vector is aligned.
            prop_assert_eq!((band.grid.0 * BN, band.grid.1 * BM), (n, m));
            for address in [band.addresses.0, band.addresses.1, band.addresses.2] {
                prop_assert_eq!(address % 16, 0);
            }
            let tiles = k / BK;
            for (bx, by) in blocks(band.grid, probe) {
                let r = rng(bx as u64 ^ (by as u64) << 20);
                let (row0, col0) = rb_block_origin(bx, by);
                for t in [0, 1, 31, 32, RB_THREADS - 1, (r % RB_THREADS as u64) as u32] {
                    for kt in [0, tiles - 1, ((r >> 16) % tiles as u64) as u32] {
                        let ia = rb_a_index(row0, rb_a_load(t), kt, k);
                        let ib = rb_b_index(col0, rb_b_load(t), kt, n);
                        prop_assert!(ia.is_multiple_of(4) && ib.is_multiple_of(4), "16-byte vectors");
                        inside("A", ia, 4, oa, m64 * k64, wa)?;
                        inside("B", ib, 4, ob, k64 * n64, wb)?;
                    }
                    let (tx, ty) = rb_thread(t);
                    for i in 0..TM {
                        for half in 0..2 {
                            let ic = row_major(rb_out_row(row0, ty, i) as u64, rb_out_col(col0, tx, half) as u64, n64);
                            prop_assert!(ic.is_multiple_of(4));
                            inside("C", ic, 4, oc, m64 * n64, wc)?;
                        }
                    }
                }
            }
        }
        Method::WarptileStreamk | Method::SpreadStreamk => {
            // The row is the schedule's, and every tile it names is a whole tile of the band
            // (the k loop and stores inside a tile are `WarptileAsync`'s or `WarptileSpread`'s,
            // checked there).
            let sk = stream_k(m, n, 132);
            prop_assert_eq!(band.grid, sk.row_grid());
            for address in [band.addresses.0, band.addresses.1, band.addresses.2] {
                prop_assert_eq!(address % 16, 0);
            }
            let sk = StreamK { iters: k / WARPTILE_ASYNC.bk, ..sk };
            let mut tiles = Vec::new();
            for x in 0..sk.wave {
                let mut u = 0;
                while let Some((tile, k0, k1)) = sk.segment(x, u) {
                    prop_assert!(k0 < k1 && k1 <= sk.iters);
                    tiles.push(tile);
                    u += 1;
                }
            }
            for tile in tiles {
                let (row0, col0) = sk.origin(tile).unwrap();
                prop_assert!(row0 + WARPTILE_ASYNC.bm <= m && col0 + WARPTILE_ASYNC.bn <= n);
                inside("C", row_major((row0 + 127) as u64, (col0 + 255) as u64, n64), 1, oc, m64 * n64, wc)?;
                inside("A", row_major((row0 + 127) as u64, k64 - 1, k64), 1, oa, m64 * k64, wa)?;
            }
            inside("B", k64 * n64 - 1, 1, ob, k64 * n64, wb)?;
        }
        Method::SpreadEdge => {
            let cfg = WARPTILE_ASYNC;
            prop_assert_eq!(band.shared, cfg.ring_bytes(WTS_STAGES));
            // The probed blocks' work, as the kernels find it: `(block, tile origin, k tiles
            // kt0..kt1)`. A whole wave's block takes the tile of its linear id (of the partial
            // ones counted too) and all of k, partial last k tile included.
            let mut work = Vec::new();
            if stream_k_waves {
                for (bx, by) in blocks(band.grid, probe) {
                    let origin = warp_tile_origin(method, band.grid, n, (bx, by), true);
                    work.push(((bx, by), origin, (0, cfg.k_tiles(k, true))));
                }
            } else {
                // The row reads its wave from its grid: the host's must be the schedule's.
                prop_assert_eq!(band.grid, schedule(method, band.dims).row_grid());
                prop_assert!(band.grid.0 <= SK_MAX_WAVE, "one flag a block");
                let sk = StreamK::covering(m, n, k, band.grid.0);
                let probed = blocks(band.grid, probe).map(|(x, _)| x);
                for x in 0..sk.wave {
                    let mut u = 0;
                    while let Some((tile, k0, k1)) = sk.segment(x, u) {
                        prop_assert!(tile < sk.tiles && k0 < k1 && k1 <= sk.iters);
                        if probed.contains(&x) {
                            work.push(((x, u), sk.origin(tile).unwrap(), (k0, k1)));
                        }
                        u += 1;
                    }
                }
            }
            let bk = cfg.bk;
            let threads = cfg.threads();
            let stage = cfg.stage_floats();
            let whole = k / bk;
            for ((bx, by), (row0, col0), (kt0, kt1)) in work {
                // `edge_k_loop`'s safety contract.
                prop_assert!(row0 < m && col0 < n, "tile at ({row0}, {col0}) starts past C");
                prop_assert!(kt0 < kt1 && kt1 <= k.div_ceil(bk));
                let r = rng(bx as u64 ^ (by as u64) << 20);
                let tiles = kt1.min(whole).saturating_sub(kt0);
                let walked = if tiles == 0 { vec![] } else { vec![0, tiles - 1, ((r >> 16) % tiles as u64) as u32] };
                for t in [0, 1, 31, 32, threads - 1, (r % threads as u64) as u32] {
                    // The ring's whole k tiles (the copies' sources as the kernel forms them:
                    // A's from the range's start, B's per tile): rows of A and columns of B
                    // clamped, and no check on k, so every column of A and row of B must be
                    // below k.
                    for kt in walked.iter().copied() {
                        let st = (kt % WTS_STAGES) * stage;
                        for e in 0..cfg.a_floats() {
                            let at = cfg.a_copy(t, e);
                            prop_assert!(at.0 < cfg.bm && at.1 < bk);
                            prop_assert!(4 * (st + cfg.at_offset(at, 0)) < cfg.ring_bytes(WTS_STAGES));
                            let row = cfg.a_src_row(row0, at, m, true) as u64;
                            let ia = row_major(row, (kt0 * bk + at.1) as u64, k64) + (kt * bk) as u64;
                            inside("A", ia, 1, oa, m64 * k64, wa)?;
                        }
                        for e in 0..cfg.b_floats() {
                            let at = cfg.b_copy(t, e);
                            prop_assert!(at.0 < bk && at.1 < cfg.bn);
                            prop_assert!(4 * (st + cfg.b_offset(at)) < cfg.ring_bytes(WTS_STAGES));
                            let col = cfg.b_wrap_col(col0, at, n) as u64;
                            inside("B", row_major(((kt0 + kt) * bk + at.0) as u64, col, n64), 1, ob, k64 * n64, wb)?;
                        }
                    }
                    // The partial last k tile, into stage 0: only the copies below k.
                    if kt1 > whole {
                        let left = cfg.k_left(whole, k);
                        prop_assert!(0 < left && left < bk);
                        for e in 0..cfg.a_floats() {
                            let at = cfg.a_copy(t, e);
                            if at.1 < left {
                                let row = cfg.a_src_row(row0, at, m, true) as u64;
                                let ia = row_major(row, (kt0 * bk + at.1) as u64, k64) + (tiles * bk) as u64;
                                inside("A", ia, 1, oa, m64 * k64, wa)?;
                            }
                        }
                        for e in 0..cfg.b_floats() {
                            let at = cfg.b_copy(t, e);
                            if at.0 < left {
                                let col = cfg.b_wrap_col(col0, at, n) as u64;
                                let ib = row_major(((kt0 + tiles) * bk + at.0) as u64, col, n64);
                                inside("B", ib, 1, ob, k64 * n64, wb)?;
                            }
                        }
                    }
                    // Stores (and the row's reads of published sums) float by float inside C.
                    for (row, col) in thread_cells(cfg, t, (row0, col0)) {
                        if row < m && col < n {
                            inside("C", row_major(row as u64, col as u64, n64), 1, oc, m64 * n64, wc)?;
                        }
                    }
                }
            }
        }
        Method::Thin => {
            prop_assert_eq!(band.grid, thin_grid(m, n));
            prop_assert_eq!(band.block, (THIN_THREADS, 1));
            prop_assert!(band.shared >= THIN_SHARED_BYTES);
            for (bx, by) in blocks(band.grid, probe) {
                let r = rng(bx as u64 ^ (by as u64) << 20);
                let col0 = bx * THIN_COLS;
                for w in [0, THIN_WARPS - 1, (r % THIN_WARPS as u64) as u32] {
                    for lane in [0, 31, ((r >> 8) % 32) as u32] {
                        let t = w * 32 + lane;
                        // The first chunk and the last (partial or whole).
                        let last = (k64 - 1) / THIN_CHUNK as u64 * THIN_CHUNK as u64;
                        for c0 in [0, last] {
                            for row in 0..THIN_WARP_ROWS {
                                let row = thin_row(by, w, row).min(m - 1) as u64;
                                for s in 0..THIN_STEPS {
                                    let kk = thin_k(c0, s, lane);
                                    for q in 0..4 {
                                        if kk + q < k64 {
                                            inside("A", row_major(row, kk + q, k64), 1, oa, m64 * k64, wa)?;
                                        }
                                    }
                                    prop_assert!(
                                        thin_staged(THIN_COLS - 1, s * THIN_STEP + 4 * lane) + 4
                                            <= THIN_SHARED_BYTES / 4
                                    );
                                }
                            }
                            for h in 0..THIN_STAGED_ROWS {
                                let kk = c0 + (h * THIN_THREADS + t) as u64;
                                for j in 0..THIN_COLS {
                                    if kk < k64 && col0 + j < n {
                                        inside("B", row_major(kk, (col0 + j) as u64, n64), 1, ob, k64 * n64, wb)?;
                                    }
                                    prop_assert!(thin_staged(j, h * THIN_THREADS + t) < THIN_SHARED_BYTES / 4);
                                }
                            }
                        }
                        for row in 0..THIN_WARP_ROWS {
                            let row = thin_row(by, w, row);
                            for j in 0..THIN_COLS {
                                if lane == 0 && row < m && col0 + j < n {
                                    inside("C", row_major(row as u64, (col0 + j) as u64, n64), 1, oc, m64 * n64, wc)?;
                                }
                            }
                        }
                    }
                }
            }
        }
        Method::SplitK | Method::SplitKWide | Method::SplitKTall => {
            // The grid is the schedule's, which the kernel reads back from it; each block's k
            // loop is the guarded warp tile's over its range, checked as that one below at the
            // range's first and last k tiles; then its partial into the workspace, and C.
            let tile = split_k_tile(method);
            let cfg = tile.cfg;
            let sk = SplitK::of(tile, m, n, 132);
            prop_assert_eq!(band.grid, sk.grid());
            prop_assert_eq!(SplitK::of_grid(cfg, n, band.grid), sk);
            prop_assert!(sk.fits() || sk.splits == 1);
            prop_assert_eq!(band.shared, cfg.shared_bytes());
            for (bx, by) in blocks(band.grid, probe) {
                let r = rng(bx as u64 ^ (by as u64) << 20);
                let (tx, z) = sk.block(bx);
                prop_assert!(tx < sk.tiles_x && z < sk.splits);
                let (first, end) = sk.walked(z, k);
                let (row0, col0) = cfg.block_origin(tx, by);
                prop_assert!(row0 < m && col0 < n);
                if sk.fits() {
                    prop_assert!(
                        sk.partial(sk.tile(tx, by), z) + tile.tile_floats() as u64 <= SPLIT_K_WORKSPACE_FLOATS as u64
                    );
                    prop_assert!(sk.tile(tx, by) < SPLIT_K_TICKETS);
                }
                let threads = cfg.threads();
                for t in [0, 1, 31, 32, threads - 1, (r % threads as u64) as u32] {
                    for kt in [first, end.saturating_sub(1).max(first)] {
                        let kt64 = kt as u64 * cfg.bk as u64;
                        for v in 0..cfg.a_vectors() {
                            let at = cfg.a_load(t, v);
                            let row = cfg.a_src_row(row0, at, m, true) as u64;
                            for j in 0..4u64 {
                                if kt64 + at.1 as u64 + j < k64 {
                                    inside("A", row_major(row, kt64 + at.1 as u64 + j, k64), 1, oa, m64 * k64, wa)?;
                                }
                            }
                        }
                        for v in 0..cfg.b_vectors() {
                            let bt = cfg.b_load(t, v);
                            let kr = kt64 + bt.0 as u64;
                            if kr < k64 {
                                for j in 0..4 {
                                    let col = cfg.b_src_col(col0, bt, j, n, true) as u64;
                                    inside("B", row_major(kr, col, n64), 1, ob, k64 * n64, wb)?;
                                }
                            }
                        }
                    }
                    for i in 0..cfg.tm {
                        for h in 0..cfg.tn / 4 {
                            prop_assert!(split_k_slot(cfg, t, i, h) + 4 <= tile.tile_floats());
                        }
                    }
                    for (row, col) in thread_cells(cfg, t, (row0, col0)) {
                        if row < m && col < n {
                            inside("C", row_major(row as u64, col as u64, n64), 1, oc, m64 * n64, wc)?;
                        }
                    }
                }
            }
        }
        Method::Skinny => {
            let (width, thread_rows) = band.block;
            prop_assert!(band.grid.0 * width >= n && band.grid.1 * SKINNY_ROWS >= m, "grid covers the band");
            prop_assert!(band.shared >= SKINNY_THREADS * SKINNY_ROWS * 4);
            let stride = skinny_step(thread_rows);
            let vectors = skinny_vectors(k, band.addresses.0);
            for (bx, by) in blocks(band.grid, probe) {
                let r = rng(bx as u64 ^ (by as u64) << 20);
                let row0 = by * SKINNY_ROWS;
                let threads = [
                    (0, 0),
                    (width - 1, thread_rows - 1),
                    ((r % width as u64) as u32, ((r >> 8) % thread_rows as u64) as u32),
                ];
                for (tx, ty) in threads {
                    // Every lane reads at its column clamped to the last, and A's rows clamped.
                    let col = (bx * width + tx).min(n - 1) as u64;
                    // The first step, the last whole one and the partial one after it.
                    let whole_steps = k64 / stride;
                    for k0 in [0, whole_steps.saturating_sub(1) * stride, whole_steps * stride] {
                        if k0 >= k64 {
                            continue;
                        }
                        let whole = k0 + stride <= k64;
                        let kk = skinny_k(k0, ty);
                        for u in 0..SKINNY_UNROLL as u64 {
                            if whole || kk + u < k64 {
                                inside("B", row_major(kk + u, col, n64), 1, ob, k64 * n64, wb)?;
                                for i in 0..SKINNY_ROWS {
                                    let row = (row0 + i).min(m - 1) as u64;
                                    inside("A", row_major(row, kk + u, k64), 1, oa, m64 * k64, wa)?;
                                }
                            }
                        }
                        if whole && vectors {
                            // Two 16-byte vectors of each row: aligned where A is.
                            prop_assert_eq!(row_major(m64 - 1, kk, k64) % 4, 0);
                            prop_assert_eq!(band.addresses.0 % 16, 0);
                        }
                    }
                    for i in 0..SKINNY_ROWS {
                        prop_assert!(skinny_partial(tx, ty, i, width) < SKINNY_THREADS * SKINNY_ROWS);
                    }
                }
                // The outputs: o = i * width + x, each stored where inside C.
                for o in 0..skinny_rows(m, row0) * width {
                    let (row, col) = (row0 + o / width, bx * width + o % width);
                    prop_assert!(row < m);
                    if col < n {
                        inside("C", row_major(row as u64, col as u64, n64), 1, oc, m64 * n64, wc)?;
                    }
                }
            }
        }
        Method::Warptile
        | Method::WarptileSm90
        | Method::WarptileAsync
        | Method::WarptileSpread
        | Method::WarptileSmall
        | Method::WarptileEdge
        | Method::WarptileEdgeSm90 => {
            let method = kernel;
            // The cp.async kernels copy A one float at a time into their ring.
            let ring = match method {
                Method::WarptileAsync => Some(WTA_STAGES),
                Method::WarptileSpread => Some(WTS_STAGES),
                _ => None,
            };
            let cfg = method.warp_tile().unwrap();
            let edge = !method.whole_tiles_only();
            if edge {
                prop_assert_eq!(band.grid, (n.div_ceil(cfg.bn), m.div_ceil(cfg.bm)));
            } else if stream_k_waves {
                // The first `waves * wave` tiles, fewer than the band's (checked above).
                prop_assert!(band.grid.0 * band.grid.1 <= (m / cfg.bm) * (n / cfg.bn));
            } else {
                // No guards: the grid is exactly the band's tiles and every vector is aligned.
                prop_assert_eq!((band.grid.0 * cfg.bn, band.grid.1 * cfg.bm), (n, m));
                for address in [band.addresses.0, band.addresses.1, band.addresses.2] {
                    prop_assert_eq!(address % 16, 0);
                }
            }
            let tiles = if edge { k.div_ceil(cfg.bk) } else { k / cfg.bk };
            let threads = cfg.threads();
            for (bx, by) in blocks(band.grid, probe) {
                let r = rng(bx as u64 ^ (by as u64) << 20);
                let (row0, col0) = warp_tile_origin(method, band.grid, n, (bx, by), stream_k_waves);
                for t in [0, 1, 31, 32, threads - 1, (r % threads as u64) as u32] {
                    for kt in [0, tiles - 1, ((r >> 16) % tiles as u64) as u32] {
                        let kt64 = kt as u64 * cfg.bk as u64;
                        // The cp.async kernel copies A one float at a time, each into its
                        // transposed place in the ring.
                        if let Some(stages) = ring {
                            for e in 0..cfg.a_floats() {
                                let (row, col) = cfg.a_copy(t, e);
                                prop_assert!(row < cfg.bm && col < cfg.bk);
                                let at = (stages - 1) * cfg.stage_floats() + cfg.at_offset((row, col), 0);
                                prop_assert!(4 * at < cfg.ring_bytes(stages));
                                inside(
                                    "A",
                                    row_major((row0 + row) as u64, kt64 + col as u64, k64),
                                    1,
                                    oa,
                                    m64 * k64,
                                    wa,
                                )?;
                            }
                        }
                        // A: vector v, elements j, read where the kernel reads them (the
                        // guarded kernel skips k past the end).
                        for v in 0..if ring.is_some() { 0 } else { cfg.a_vectors() } {
                            let at = cfg.a_load(t, v);
                            let row = cfg.a_src_row(row0, at, m, edge) as u64;
                            for j in 0..4u64 {
                                let kc = kt64 + at.1 as u64 + j;
                                if !edge || kc < k64 {
                                    inside("A", row_major(row, kc, k64), 1, oa, m64 * k64, wa)?;
                                }
                            }
                            if !edge {
                                prop_assert!(
                                    row_major(row, kt64 + at.1 as u64, k64).is_multiple_of(4),
                                    "16-byte A vectors"
                                );
                            }
                        }
                        for v in 0..cfg.b_vectors() {
                            let bt = cfg.b_load(t, v);
                            let kr = kt64 + bt.0 as u64;
                            if edge && kr >= k64 {
                                continue;
                            }
                            for j in 0..4 {
                                let col = cfg.b_src_col(col0, bt, j, n, edge) as u64;
                                inside("B", row_major(kr, col, n64), 1, ob, k64 * n64, wb)?;
                            }
                            if !edge {
                                prop_assert!(row_major(kr, col0 as u64 + bt.1 as u64, n64).is_multiple_of(4));
                            }
                        }
                    }
                    for i in 0..cfg.tm {
                        for h in 0..cfg.tn / 4 {
                            let (row, col) = (row0 + cfg.out_row(t, i), col0 + cfg.out_col(t, h));
                            for j in 0..4 {
                                if !edge || (row < m && col + j < n) {
                                    inside("C", row_major(row as u64, (col + j) as u64, n64), 1, oc, m64 * n64, wc)?;
                                }
                            }
                            if !edge {
                                prop_assert!(row_major(row as u64, col as u64, n64).is_multiple_of(4));
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// The elements of C thread `t` of a warp-tiled block at `(row0, col0)` stores, inside C or not:
/// row `i`, then vector `h`, then float `j` of it (`WarpTile::out_row`, `out_col`).
fn thread_cells(cfg: WarpTile, t: u32, (row0, col0): (u32, u32)) -> impl Iterator<Item = (u32, u32)> {
    (0..cfg.tm)
        .flat_map(move |i| (0..cfg.tn).map(move |q| (row0 + cfg.out_row(t, i), col0 + cfg.out_col(t, q / 4) + q % 4)))
}

/// [`thread_cells`] of every thread of the block.
fn tile_cells(cfg: WarpTile, origin: (u32, u32)) -> impl Iterator<Item = (u32, u32)> {
    (0..cfg.threads()).flat_map(move |t| thread_cells(cfg, t, origin))
}

/// The (bx, by, t, i, h, j) that store element `(r, c)` of a band's C in a warp-tiled launch
/// (the guarded kernel skips stores past m and n).
fn warp_tile_owners(method: Method, grid: (u32, u32), (m, n): (u32, u32), (r, c): (u32, u32)) -> usize {
    let cfg = method.warp_tile().unwrap();
    let (bx, by) = (c / cfg.bn, r / cfg.bm);
    if bx >= grid.0 || by >= grid.1 {
        return 0;
    }
    let (row0, col0) = warp_tile_origin(method, grid, n, (bx, by), false);
    tile_cells(cfg, (row0, col0)).filter(|&(row, col)| (row, col) == (r, c) && row < m && col < n).count()
}

/// The bands start at row 0, follow each other, end at m, each within one launch's limit, and
/// point at rows `r0..` of A and C and at all of B. A band is one launch of the method's kernel,
/// or stream-K's launches of its schedule: the whole waves, then the shared row, each there only
/// if it has tiles, over as many tiles as the band has (partial ones counted by the guarded
/// ring).
fn check_tiling(method: Method, launches: &[Band], (m, n, k): (usize, usize, usize)) -> Result<(), TestCaseError> {
    prop_assert_eq!(stream_k_kernels(method).is_some(), method.stream_k());
    let (mut next, mut bands, mut i) = (0, 0, 0);
    while i < launches.len() {
        let band = &launches[i];
        let ours: Vec<&Band> = launches[i..].iter().take_while(|b| b.rows == band.rows).collect();
        prop_assert_eq!(band.rows.start, next);
        prop_assert!(!band.rows.is_empty() && band.rows.len() <= method.band_rows() as usize);
        for launch in &ours {
            prop_assert_eq!(launch.offsets, ((band.rows.start * k) as u64, 0, (band.rows.start * n) as u64));
            prop_assert_eq!((launch.dims.1 as usize, launch.dims.2 as usize), (n, k));
        }
        let kernels: Vec<&str> = ours.iter().map(|b| b.kernel).collect();
        let expect = match stream_k_kernels(method) {
            Some([waves, row]) => {
                let sk = schedule(method, band.dims);
                let cfg = WARPTILE_ASYNC;
                prop_assert_eq!(sk.tiles, band.dims.0.div_ceil(cfg.bm) * band.dims.1.div_ceil(cfg.bn));
                [(sk.waves > 0, waves), (sk.sk_tiles() > 0, row)]
                    .into_iter()
                    .filter_map(|(on, name)| on.then_some(name))
                    .collect()
            }
            None => vec![method.kernel().name()],
        };
        prop_assert_eq!(kernels, expect);
        next = band.rows.end;
        bands += 1;
        i += ours.len();
    }
    prop_assert_eq!(next, m);
    prop_assert_eq!(bands, m.div_ceil(method.band_rows() as usize));
    Ok(())
}

/// Every launch of stream-K `method`'s plan of `shape` stays inside (`check_band`), the bands
/// tile C (`check_tiling`), and each band's launches take every tile of it once: the whole
/// waves' grid the first `waves * wave` tiles, the row the rest.
fn check_stream_k_plan(method: Method, shape: (usize, usize, usize), probe: u64) -> Result<(), TestCaseError> {
    let (m, n, k) = shape;
    let [waves, row] = stream_k_kernels(method).unwrap();
    let launches = plan_all(method, shape).unwrap();
    check_tiling(method, &launches, shape)?;
    let mut next = 0;
    for (i, band) in launches.iter().enumerate() {
        check_band(method, band, (m * k, k * n, m * n), probe)?;
        // Each band is the whole waves, then the row that shares the rest, each there only if
        // it has tiles: together every tile of the band once.
        let sk = schedule(method, band.dims);
        if method.whole_tiles_only() {
            // The host plans with its own `stream_k`: the kernels' schedule.
            prop_assert_eq!(stream_k(band.dims.0, band.dims.1, 132), StreamK { iters: 0, ..sk });
        }
        let first = i == 0 || launches[i - 1].rows != band.rows;
        if first {
            prop_assert_eq!(band.rows.start, next);
            next = band.rows.end;
        }
        let expect: Vec<&str> = [(sk.waves > 0, waves), (sk.sk_tiles() > 0, row)]
            .into_iter()
            .filter_map(|(on, name)| on.then_some(name))
            .collect();
        let ours: Vec<&str> = launches.iter().filter(|b| b.rows == band.rows).map(|b| b.kernel).collect();
        prop_assert_eq!(&ours, &expect);
        if band.kernel == waves {
            prop_assert_eq!(u64::from(band.grid.0) * u64::from(band.grid.1), u64::from(sk.waves * sk.wave));
        }
        prop_assert_eq!(sk.waves * sk.wave + sk.sk_tiles(), sk.tiles);
    }
    prop_assert_eq!(next, m);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn general_band_indices_stay_inside(method in any_shape(), m in rows(), n in 1usize..300, k in 1usize..300,
                                        probe in any::<u64>()) {
        let shape = (m, n, k);
        let bands = plan_all(method, shape).unwrap();
        check_tiling(method, &bands, shape)?;
        for band in &bands {
            check_band(method, band, (m * k, k * n, m * n), probe)?;
        }
    }

    #[test]
    fn general_indices_are_64_bit_past_2_32(method in any_shape(), m in 1usize..=u32::MAX as usize, n in 1usize..5,
                                            k in 1usize..5, probe in any::<u64>()) {
        // Up to 4.3G rows: thousands of bands, m·n and m·k past 2^32.
        let shape = (m, n, k);
        let bands = plan_all(method, shape).unwrap();
        check_tiling(method, &bands, shape)?;
        for band in [bands.first().unwrap(), bands.last().unwrap(), &bands[(probe % bands.len() as u64) as usize]] {
            check_band(method, band, (m * k, k * n, m * n), probe)?;
        }
    }

    #[test]
    fn regblock_band_indices_stay_inside_and_aligned(
        tiles_m in prop_oneof![1usize..100, 1usize..=80_000, (65_535usize - 3)..=(65_535 + 3), 131_069usize..=131_071],
        tiles_n in 1usize..6, tiles_k in 1usize..40, probe in any::<u64>()) {
        let shape = (tiles_m * BM as usize, tiles_n * BN as usize, tiles_k * BK as usize);
        let (m, n, k) = shape;
        let bands = plan_all(Method::Regblock, shape).unwrap();
        check_tiling(Method::Regblock, &bands, shape)?;
        for band in &bands {
            prop_assert_eq!(band.rows.start % BM as usize, 0);
            check_band(Method::Regblock, band, (m * k, k * n, m * n), probe)?;
        }
    }

    #[test]
    fn stream_k_launches_stay_inside_and_cover_every_tile_once(
        tiles_m in prop_oneof![1usize..100, (65_535usize - 3)..=(65_535 + 3)], tiles_n in 1usize..6,
        tiles_k in 1usize..40, probe in any::<u64>(), method in stream_k_stages(Some(false))) {
        // Stage 8's kernels, or stage 10's over the spread ring: the same schedule.
        let cfg = method.warp_tile().unwrap();
        let shape = (tiles_m * cfg.bm as usize, tiles_n * cfg.bn as usize, tiles_k * cfg.bk as usize);
        check_stream_k_plan(method, shape, probe)?;
    }

    #[test]
    fn spread_edge_launches_stay_inside_and_cover_every_tile_once(
        tiles_m in prop_oneof![1usize..100, (65_535usize - 3)..=(65_535 + 3)], tiles_n in 1usize..9,
        tiles_k in 1usize..40, trim in (0usize..128, 0usize..256, 0usize..16), probe in any::<u64>(),
        method in stream_k_stages(Some(true))) {
        // Stage 11 takes any shape: `trim` short of whole tiles (down to one row, column or k),
        // so the schedule counts exactly `tiles_m * tiles_n` tiles, the last row, column and k
        // tile partial by `trim`, next to the row bands' boundary too.
        let cfg = WARPTILE_ASYNC;
        let (bm, bn, bk) = (cfg.bm as usize, cfg.bn as usize, cfg.bk as usize);
        let shape = (tiles_m * bm - trim.0, tiles_n * bn - trim.1, tiles_k * bk - trim.2);
        let sk = StreamK::covering(shape.0 as u32, shape.1 as u32, shape.2 as u32, 132);
        prop_assert_eq!((sk.tiles_n, sk.iters), (tiles_n as u32, tiles_k as u32));
        check_stream_k_plan(method, shape, probe)?;
    }

    #[test]
    fn warp_tile_band_indices_stay_inside_and_aligned(
        method in stages(|s| s.warp_tile.is_some() && s.bounds != Bounds::Guarded && s.waves.is_none()),
        tiles_m in prop_oneof![1usize..100, 1usize..=80_000, (65_535usize - 3)..=(65_535 + 3), 131_069usize..=131_071],
        tiles_n in 1usize..6, tiles_k in 1usize..40, probe in any::<u64>()) {
        let cfg = method.warp_tile().unwrap();
        let shape = (tiles_m * cfg.bm as usize, tiles_n * cfg.bn as usize, tiles_k * cfg.bk as usize);
        let (m, n, k) = shape;
        let bands = plan_all(method, shape).unwrap();
        check_tiling(method, &bands, shape)?;
        for band in &bands {
            prop_assert_eq!(band.rows.start % cfg.bm as usize, 0);
            check_band(method, band, (m * k, k * n, m * n), probe)?;
        }
    }

    #[test]
    fn bands_tile_c_exactly_once(method in prop_oneof![general(), whole_tiles()], m in rows(),
                                 n in 1usize..400, row in any::<u64>(), col in any::<u64>(), band in 1usize..50) {
        // The row split alone, with small bands so that it is enumerated: every row once.
        let mut hits = vec![0u8; m.min(5000)];
        for rows in bands(hits.len(), band) {
            for r in rows {
                hits[r] += 1;
            }
        }
        prop_assert!(hits.iter().all(|&h| h == 1));
        // The planned bands: a random element (r, c) of C lies in exactly one band, and there is
        // written by exactly the block and thread the kernel's coordinates say.
        let (m, n, k) = round_up(method, (m, n, 8));
        let planned = plan_all(method, (m, n, k)).unwrap();
        check_tiling(method, &planned, (m, n, k))?;
        let (r, c) = ((row % m as u64) as usize, (col % n as u64) as u32);
        let owners: Vec<&Band> = planned.iter().filter(|b| b.rows.contains(&r)).collect();
        prop_assert_eq!(owners.len(), 1);
        let local = (r - owners[0].rows.start) as u32;
        match method {
            Method::Naive => {
                let (bx, tx) = (c / NAIVE_BLOCK.0, c % NAIVE_BLOCK.0);
                let (by, ty) = (local / NAIVE_BLOCK.1, local % NAIVE_BLOCK.1);
                prop_assert!(bx < owners[0].grid.0 && by < owners[0].grid.1);
                prop_assert_eq!(naive_coords(bx, by, tx, ty), (local, c));
            }
            Method::Tiled | Method::Prefetch | Method::CpAsync => {
                let (bx, by) = (c / TILE, local / TILE);
                prop_assert!(bx < owners[0].grid.0 && by < owners[0].grid.1);
                prop_assert_eq!(tiled_coords(bx, by, c % TILE, local % TILE), (local, c));
            }
            // Two launches a band: checked by `check_stream_k_plan` and
            // `stream_k_stores_every_element_once` below.
            Method::WarptileStreamk | Method::SpreadStreamk | Method::SpreadEdge => {
                unreachable!("stream-K is not among the generated methods")
            }
            Method::Warptile
            | Method::WarptileSm90
            | Method::WarptileAsync
            | Method::WarptileSpread
            | Method::WarptileSmall
            | Method::WarptileEdge
            | Method::WarptileEdgeSm90 => {
                let band = owners[0];
                prop_assert_eq!(warp_tile_owners(method, band.grid, (band.dims.0, band.dims.1), (local, c)), 1);
            }
            Method::SplitK | Method::SplitKWide | Method::SplitKTall => {
                // The tile's last block stores it: a thread of the tile at (c / bn, local / bm).
                let band = owners[0];
                let cfg = split_k_tile(method).cfg;
                let sk = SplitK::of_grid(cfg, band.dims.1, band.grid);
                let (tx, ty) = (c / cfg.bn, local / cfg.bm);
                prop_assert!(tx < sk.tiles_x && ty < sk.tiles_y);
                let origin = cfg.block_origin(tx, ty);
                prop_assert_eq!(tile_cells(cfg, origin).filter(|&cell| cell == (local, c)).count(), 1);
            }
            Method::Thin => {
                let (bx, by) = (c / THIN_COLS, local / THIN_ROWS);
                prop_assert!(bx < owners[0].grid.0 && by < owners[0].grid.1);
                let (w, r) = ((local % THIN_ROWS) / THIN_WARP_ROWS, local % THIN_WARP_ROWS);
                prop_assert_eq!((thin_row(by, w, r), bx * THIN_COLS + c % THIN_COLS), (local, c));
            }
            Method::Skinny => {
                let width = owners[0].block.0;
                let (bx, by) = (c / width, local / SKINNY_ROWS);
                prop_assert!(bx < owners[0].grid.0 && by < owners[0].grid.1);
                // Output o of the block is row o / width, column o % width.
                let o = (local % SKINNY_ROWS) * width + c % width;
                prop_assert!(o < skinny_rows(owners[0].dims.0, by * SKINNY_ROWS) * width);
                prop_assert_eq!((by * SKINNY_ROWS + o / width, bx * width + o % width), (local, c));
            }
            Method::Regblock => {
                let (bx, by) = (c / BN, local / BM);
                prop_assert!(bx < owners[0].grid.0 && by < owners[0].grid.1);
                let (row0, col0) = rb_block_origin(bx, by);
                // Inside the block: rows ty*4 + i%4 (+ BM/2), columns tx*4 + j (+ BN/2).
                let (lr, lc) = (local - row0, c - col0);
                let (i, ty) = ((lr / (BM / 2)) * 4 + lr % 4, (lr % (BM / 2)) / 4);
                let (half, tx, j) = (lc / (BN / 2), (lc % (BN / 2)) / 4, lc % 4);
                let t = ty * (BN / TN) + tx;
                prop_assert!(t < RB_THREADS);
                prop_assert_eq!(rb_thread(t), (tx, ty));
                prop_assert_eq!((rb_out_row(row0, ty, i), rb_out_col(col0, tx, half) + j), (local, c));
            }
        }
    }

    #[test]
    fn small_launches_write_every_element_once(method in prop_oneof![general(), whole_tiles()],
                                               m in 1usize..200, n in 1usize..300) {
        let (m, n, k) = round_up(method, (m, n, 8));
        let planned = plan_all(method, (m, n, k)).unwrap();
        prop_assert_eq!(planned.len(), 1);
        let (gx, gy) = planned[0].grid;
        let (mm, nn) = (m as u32, n as u32);
        let mut hits = vec![0u8; m * n];
        for by in 0..gy {
            for bx in 0..gx {
                match method {
                    Method::Naive | Method::Tiled | Method::Prefetch | Method::CpAsync => {
                        let (bw, bh) = planned[0].block;
                        for ty in 0..bh {
                            for tx in 0..bw {
                                let (row, col) = if method == Method::Naive {
                                    naive_coords(bx, by, tx, ty)
                                } else {
                                    tiled_coords(bx, by, tx, ty)
                                };
                                if row < mm && col < nn {
                                    hits[row_major(row as u64, col as u64, n as u64) as usize] += 1;
                                }
                            }
                        }
                    }
                    Method::WarptileStreamk | Method::SpreadStreamk | Method::SpreadEdge => {
                        unreachable!("stream-K is not among the generated methods")
                    }
                    Method::Warptile
                    | Method::WarptileSm90
                    | Method::WarptileAsync
                    | Method::WarptileSpread
                    | Method::WarptileSmall
                    | Method::WarptileEdge
                    | Method::WarptileEdgeSm90 => {
                        let cfg = method.warp_tile().unwrap();
                        let (row0, col0) = warp_tile_origin(method, (gx, gy), nn, (bx, by), false);
                        for (row, col) in tile_cells(cfg, (row0, col0)) {
                            // The guarded kernel stores only inside C; the others' grids are
                            // exactly C.
                            if row < mm && col < nn {
                                hits[row_major(row as u64, col as u64, n as u64) as usize] += 1;
                            } else {
                                prop_assert!(!method.whole_tiles_only());
                            }
                        }
                    }
                    Method::SplitK | Method::SplitKWide | Method::SplitKTall => {
                        // Only a tile's last block stores, and every tile has one.
                        let cfg = split_k_tile(method).cfg;
                        let sk = SplitK::of_grid(cfg, nn, (gx, gy));
                        let (tx, z) = sk.block(bx);
                        if z + 1 == sk.splits {
                            for (row, col) in tile_cells(cfg, cfg.block_origin(tx, by)) {
                                if row < mm && col < nn {
                                    hits[row_major(row as u64, col as u64, n as u64) as usize] += 1;
                                }
                            }
                        }
                    }
                    Method::Thin => {
                        for w in 0..THIN_WARPS {
                            for r in 0..THIN_WARP_ROWS {
                                for j in 0..THIN_COLS {
                                    let (row, col) = (thin_row(by, w, r), bx * THIN_COLS + j);
                                    if row < mm && col < nn {
                                        hits[row_major(row as u64, col as u64, n as u64) as usize] += 1;
                                    }
                                }
                            }
                        }
                    }
                    Method::Skinny => {
                        let width = planned[0].block.0;
                        let row0 = by * SKINNY_ROWS;
                        for o in 0..skinny_rows(mm, row0) * width {
                            let (row, col) = (row0 + o / width, bx * width + o % width);
                            if col < nn {
                                hits[row_major(row as u64, col as u64, n as u64) as usize] += 1;
                            }
                        }
                    }
                    Method::Regblock => {
                        let (row0, col0) = rb_block_origin(bx, by);
                        for t in 0..RB_THREADS {
                            let (tx, ty) = rb_thread(t);
                            for i in 0..TM {
                                for half in 0..2 {
                                    let at = row_major(rb_out_row(row0, ty, i) as u64, rb_out_col(col0, tx, half) as u64, n as u64);
                                    for j in 0..4 {
                                        hits[at as usize + j] += 1;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        prop_assert!(hits.iter().all(|&h| h == 1));
    }

    #[test]
    fn stream_k_stores_every_element_once(method in stream_k_stages(None),
                                          m in 1usize..700, n in 1usize..1100, k in 1usize..100, sms in 1u32..40) {
        // The host's launches of one band, on few SMs so that most have whole waves: every
        // (tile, k tile) computed once, by the blocks of both launches together, and every
        // element of C stored once by the block that ends its tile's k tiles (the others'
        // stores are partial sums, added to by that block).
        let (m, n, k) = round_up(method, (m, n, k));
        let (m32, n32, k32) = (m as u32, n as u32, k as u32);
        let cfg = WARPTILE_ASYNC;
        let edge = !method.whole_tiles_only();
        let count = |len: u32, tile: u32| if edge { len.div_ceil(tile) } else { len / tile };
        let (tiles, iters) = (count(m32, cfg.bm) * count(n32, cfg.bn), count(k32, cfg.bk));
        let [waves, row] = stream_k_kernels(method).unwrap();
        let mut computed = vec![0u8; (tiles * iters) as usize];
        let mut finals = Vec::new();
        for (kernel, launch) in method.launches(m32, n32, sms) {
            if kernel.name() == waves {
                for (bx, by) in (0..launch.grid.1).flat_map(|by| (0..launch.grid.0).map(move |bx| (bx, by))) {
                    let tile = by * launch.grid.0 + bx;
                    prop_assert!(tile < tiles);
                    for kt in 0..iters {
                        computed[(tile * iters + kt) as usize] += 1;
                    }
                    finals.push(warp_tile_origin(method, launch.grid, n32, (bx, by), true));
                }
            } else {
                prop_assert_eq!(kernel.name(), row);
                prop_assert_eq!(launch.grid.1, 1);
                // The row's schedule, from its grid, as the kernel forms it.
                let sk = StreamK::of(m32, n32, k32, launch.grid.0, edge);
                for x in 0..launch.grid.0 {
                    let mut u = 0;
                    while let Some((tile, k0, k1)) = sk.segment(x, u) {
                        prop_assert!(tile < tiles && k1 <= iters);
                        for kt in k0..k1 {
                            computed[(tile * iters + kt) as usize] += 1;
                        }
                        if k1 == sk.iters {
                            finals.push(sk.origin(tile).unwrap());
                        }
                        u += 1;
                    }
                }
            }
        }
        prop_assert!(computed.iter().all(|&h| h == 1));
        let mut hits = vec![0u8; m * n];
        for (row0, col0) in finals {
            for (row, col) in tile_cells(cfg, (row0, col0)) {
                // The guarded ring stores only inside C; the others' tiles are whole.
                if row < m32 && col < n32 {
                    hits[row_major(row as u64, col as u64, n as u64) as usize] += 1;
                } else {
                    prop_assert!(edge);
                }
            }
        }
        prop_assert!(hits.iter().all(|&h| h == 1));
    }

    #[test]
    fn rejected_inputs_give_documented_errors(method in prop_oneof![6 => general(), 6 => whole_tiles(), 1 => stream_k_stages(Some(true))],
                                              m in 1usize..3000, n in 1usize..3000, k in 1usize..3000,
                                              which in 0usize..3, delta in prop_oneof![Just(-1isize), Just(1), -1000isize..1000],
                                              skew in prop_oneof![Just(4u64), Just(8), Just(12)]) {
        let mut called = false;
        let mut plan = |shape: (usize, usize, usize), lens: (usize, usize, usize), skew: u64| {
            let (a, b, mut c) = slices(lens, skew);
            plan_bands(method, &a, &b, &mut c, shape, 132, |_, _| {
                called = true;
                Ok(())
            })
        };
        let whole = |(m, n, k): (usize, usize, usize)| (m * k, k * n, m * n);
        // Zero in any dimension: Error::Empty naming it.
        let mut zero = [m, n, k];
        zero[which] = 0;
        let names = ["matmul m", "matmul n", "matmul k"];
        prop_assert_eq!(plan((zero[0], zero[1], zero[2]), whole((m, n, k)), 0), Err(Error::Empty(names[which])));
        // Past u32: OutOfRange naming it.
        let mut big = [m, n, k];
        big[which] = 1 << 32;
        let refused = matches!(plan((big[0], big[1], big[2]), whole((m, n, k)), 0),
                               Err(Error::OutOfRange { what, .. }) if what == names[which]);
        prop_assert!(refused);
        let shape = round_up(method, (m, n, k));
        // One buffer too short or too long: LengthMismatch naming it.
        let want = whole(shape);
        let mut lens = [want.0, want.1, want.2];
        lens[which] = lens[which].saturating_add_signed(if delta == 0 { 1 } else { delta });
        let buffers = ["matmul A", "matmul B", "matmul C"];
        let refused = matches!(plan(shape, (lens[0], lens[1], lens[2]), 0),
                               Err(Error::LengthMismatch { what, .. }) if what == buffers[which]);
        prop_assert!(refused);
        if method.whole_tiles_only() {
            // A is not 16-byte aligned: Misaligned (other kernels load floats and take it).
            let refused = matches!(plan(shape, whole(shape), skew), Err(Error::Misaligned { what: "matmul A", .. }));
            prop_assert!(refused);
            // Not whole tiles: Unsupported, whatever the lengths.
            let odd = (shape.0 + [1, 0, 0][which], shape.1 + [0, 1, 0][which], shape.2 + [0, 0, 1][which]);
            prop_assert!(matches!(plan(odd, whole(odd), 0), Err(Error::Unsupported(_))));
        } else {
            prop_assert!(plan(shape, whole(shape), skew).is_ok());
        }
        // A refused multiply hands out no band; the accepted ones above did.
        prop_assert_eq!(called, !method.whole_tiles_only());
    }

    #[test]
    fn matmul_chooses_the_unguarded_kernel_exactly_when_it_can(m in 1usize..3000, n in 1usize..3000,
                                                              k in prop_oneof![1usize..100, 400usize..1100],
                                                              whole_tiles in any::<bool>(), skew in prop_oneof![Just(0u64), Just(4)],
                                                              sms in prop_oneof![Just(132u32), 1u32..300],
                                                              sm90 in any::<bool>()) {
        let (m, n, k) = if whole_tiles { round_up(Method::Warptile, (m, n, k)) } else { (m, n, k) };
        let (a, b, c) = slices((m * k, k * n, m * n), skew);
        let unguarded = WARPTILE.supports(m as u32, n as u32, k as u32) && skew == 0;
        let blocks = (m / WARPTILE.bm as usize) * (n / WARPTILE.bn as usize);
        // The spread ring: sm_90, its own whole tiles, a grid of 3/4 of the SMs or more.
        let wide = sm90
            && skew == 0
            && WARPTILE_ASYNC.supports(m as u32, n as u32, k as u32)
            && 4 * (m / WARPTILE_ASYNC.bm as usize) * (n / WARPTILE_ASYNC.bn as usize) >= 3 * sms as usize;
        let shared = wide
            && m <= Method::SpreadStreamk.band_rows() as usize
            && stream_k_pays(m as u32, n as u32, k as u32, sms);
        // The guarded spread ring, on sm_90 for what no unguarded kernel takes: one launch, a
        // grid of its tiles (partial ones counted) of 3/4 of the SMs or more, 32 k tiles or more.
        let (bm, bn, bk) = (WARPTILE_ASYNC.bm as usize, WARPTILE_ASYNC.bn as usize, WARPTILE_ASYNC.bk as usize);
        let covering = sm90
            && m <= Method::SpreadEdge.band_rows() as usize
            && 4 * m.div_ceil(bm) * n.div_ceil(bn) >= 3 * sms as usize
            && k.div_ceil(bk) >= 32;
        prop_assert_eq!(covering, sm90 && spread_edge_pays(m as u32, n as u32, k as u32, sms));
        let expected = match (unguarded, blocks < sms as usize) {
            _ if m <= SKINNY_ROWS as usize => Method::Skinny,
            _ if n <= THIN_COLS as usize => Method::Thin,
            _ if sm90 && split_k_pays(m as u32, n as u32, k as u32, sms).is_some() => split_k_stage(m as u32, n as u32).0,
            _ if shared => Method::SpreadStreamk,
            _ if wide => Method::WarptileSpread,
            (false, _) if covering => Method::SpreadEdge,
            (false, _) if sm90 => Method::WarptileEdgeSm90,
            (false, _) => Method::WarptileEdge,
            (true, true) => Method::WarptileSmall,
            (true, false) if sm90 => Method::WarptileSm90,
            (true, false) => Method::Warptile,
        };
        let chosen = choose(&a, &b, &c, (m, n, k), sms, sm90);
        prop_assert_eq!(chosen, expected);
        // Whatever is chosen plans: matmul never refuses a valid multiply.
        let (a, b, mut c) = slices((m * k, k * n, m * n), skew);
        prop_assert!(plan_bands(chosen, &a, &b, &mut c, (m, n, k), 132, |_, _| Ok(())).is_ok());
    }

    #[test]
    fn stream_k_computes_every_k_tile_once_and_waits_only_backwards(tiles_m in 1u32..40, tiles_n in 1u32..40,
                                                                    iters in 1u32..80, sms in 1u32..300,
                                                                    method in stream_k_stages(None),
                                                                    trim in (0u32..128, 0u32..256, 0u32..16)) {
        // Whole tiles, or for stage 11's covering schedule a shape `trim` short of them, its
        // partial tiles (and last k tile) counted as whole ones.
        let cfg = method.warp_tile().unwrap();
        let edge = method.stage().bounds == Bounds::Guarded;
        let trim = if edge { trim } else { (0, 0, 0) };
        let (m, n, k) = (tiles_m * cfg.bm - trim.0, tiles_n * cfg.bn - trim.1, iters * cfg.bk - trim.2);
        let wave = stream_k(m, n, sms).wave;
        let sk = StreamK::of(m, n, k, wave, edge);
        prop_assert_eq!((sk.tiles_n, sk.tiles, sk.iters), (tiles_n, tiles_m * tiles_n, iters));
        prop_assert_eq!((sk.whole_grid(), sk.row_grid()), ((sms, sk.tiles / sms), (sms, 1)));
        // The host plans these grids.
        let grids: Vec<(u32, u32)> = method.launches(m, n, sms).map(|(_, launch)| launch.grid).collect();
        let expect: Vec<(u32, u32)> = [(sk.waves > 0, sk.whole_grid()), (sk.sk_tiles() > 0, sk.row_grid())]
            .into_iter()
            .filter_map(|(on, grid)| on.then_some(grid))
            .collect();
        prop_assert_eq!(grids, expect);
        prop_assert!(sk.sk_tiles() < sk.wave);
        let mut hits = vec![0u8; (sk.tiles * sk.iters) as usize];
        for tile in 0..sk.waves * sk.wave {
            for kt in 0..sk.iters {
                hits[(tile * sk.iters + kt) as usize] += 1;
            }
        }
        let shared0 = sk.waves * sk.wave;
        for x in 0..sk.wave {
            let mut u = 0;
            while let Some((tile, k0, k1)) = sk.segment(x, u) {
                prop_assert!(tile >= shared0 && tile < sk.tiles && k0 < k1 && k1 <= sk.iters);
                for kt in k0..k1 {
                    hits[(tile * sk.iters + kt) as usize] += 1;
                }
                // Only a block's top segment is published (it goes on in a later block) ...
                if k1 < sk.iters {
                    prop_assert_eq!(u, 0);
                }
                // ... and a segment that goes on from an earlier block is the bottom one, and
                // waits for that block's top segment, which ends where this one starts.
                if k0 > 0 {
                    let before = sk.owner(u64::from(tile - shared0) * u64::from(sk.iters) + u64::from(k0) - 1).unwrap();
                    prop_assert!(before < x);
                    let top = sk.segment(before, 0).unwrap();
                    prop_assert_eq!((top.0, top.2), (tile, k0));
                    prop_assert!(sk.segment(x, u + 1).is_none(), "the bottom segment waits");
                }
                u += 1;
            }
        }
        prop_assert!(hits.iter().all(|&h| h == 1));
    }
}
