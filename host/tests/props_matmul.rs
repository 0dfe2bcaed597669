//! Property tests of the matmul plans (every kernel: the general ones, the whole-tiles-only
//! register-blocked and warp-tiled ones, the guarded warp-tiled ones `matmul` uses for any
//! other shape, and stream-K's launches, stage 11's over any shape included): over random
//! accepted shapes, m up to 10M rows and past (several row bands) included, every A, B and C
//! index a thread of each planned band can compute (with the kernels' own index functions and
//! guards, as each stage's footprint walks them: `Stage::footprint`, so that every stage of the
//! table is proved and none is named here) lies inside the band's sub-slices and those inside
//! the buffers; the bands tile C exactly once; stream-K's segments compute each (tile, k tile) once; rejected inputs return
//! their documented error, before any band is planned.
use std::ops::Range;

use coalesce::Error;

use coalesce::DeviceViewMut;
use coalesce::matmul::footprint::{Matrix, Probe};
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
fn inside(what: &str, index: u64, width: u64, offset: u64, part: u64, whole: u64) -> Result<(), String> {
    if index + width > part {
        return Err(format!("{what}: index {index} + {width} past the band's {part}"));
    }
    if offset + part > whole {
        return Err(format!("{what}: band part {offset} + {part} past the buffer's {whole}"));
    }
    Ok(())
}

/// `band`, a launch of `stage`'s kernels, as the stage's footprint walks it (`linear`:
/// stream-K's whole waves).
fn probe_of(stage: &Stage, band: &Band, linear: bool) -> Probe {
    Probe {
        grid: band.grid,
        block: band.block,
        shared_bytes: band.shared,
        dims: band.dims,
        addresses: band.addresses,
        sms: 132,
        linear,
        warp_tile: stage.warp_tile,
        guarded: stage.bounds == Bounds::Guarded,
    }
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
/// following each kernel's guards: its stage's footprint ([`Stage::footprint`]), which walks the
/// kernel's own index functions, held against the band's sub-slices and the buffers.
fn check_band(method: Method, band: &Band, whole: (usize, usize, usize), probe: u64) -> Result<(), TestCaseError> {
    let (m, n, k) = band.dims;
    let (m64, n64, k64) = (m as u64, n as u64, k as u64);
    let (oa, ob, oc) = band.offsets;
    let (wa, wb, wc) = (whole.0 as u64, whole.1 as u64, whole.2 as u64);
    prop_assert_eq!(m as usize, band.rows.len());
    prop_assert_eq!(band.block, method.launch(m, n, k, 132).block);
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
    let stage = kernel.stage();
    let walked = probe_of(stage, band, stream_k_waves);
    let mut touch = |matrix: Matrix, index: u64, width: u64| match matrix {
        Matrix::A => inside("A", index, width, oa, m64 * k64, wa),
        Matrix::B => inside("B", index, width, ob, k64 * n64, wb),
        Matrix::C => inside("C", index, width, oc, m64 * n64, wc),
    };
    let failed = |why: String| TestCaseError::fail(format!("{kernel:?} over {:?}: {why}", band.dims));
    (stage.footprint.launch)(&walked, &mut touch).map_err(failed)?;
    for block in blocks(band.grid, probe) {
        (stage.footprint.block)(&walked, block, probe, &mut touch).map_err(failed)?;
    }
    Ok(())
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
        // stored exactly once by the blocks of its row of the grid (`Stage::block_rows` rows a
        // block), as the kernel's own coordinates and guards say (its stage's footprint).
        let (m, n, k) = round_up(method, (m, n, 8));
        let planned = plan_all(method, (m, n, k)).unwrap();
        check_tiling(method, &planned, (m, n, k))?;
        let (r, c) = ((row % m as u64) as usize, (col % n as u64) as u32);
        let owners: Vec<&Band> = planned.iter().filter(|b| b.rows.contains(&r)).collect();
        prop_assert_eq!(owners.len(), 1);
        let band = owners[0];
        let local = (r - band.rows.start) as u32;
        let stage = method.stage();
        let by = local / stage.block_rows;
        prop_assert!(by < band.grid.1);
        let walked = probe_of(stage, band, false);
        let mut stores = 0;
        for bx in 0..band.grid.0 {
            (stage.footprint.stores)(&walked, (bx, by), &mut |row, col| stores += usize::from((row, col) == (local, c)));
        }
        prop_assert_eq!(stores, 1, "element ({}, {}) of the band", local, c);
    }

    #[test]
    fn small_launches_write_every_element_once(method in prop_oneof![general(), whole_tiles()],
                                               m in 1usize..200, n in 1usize..300, k in 1usize..130) {
        // k up to 8 k tiles of 16: the split-K stages cut it (stage 17's reducers in grid rows
        // of their own store C).
        let (m, n, k) = round_up(method, (m, n, k));
        let planned = plan_all(method, (m, n, k)).unwrap();
        prop_assert_eq!(planned.len(), 1);
        let (gx, gy) = planned[0].grid;
        let (mm, nn) = (m as u32, n as u32);
        let stage = method.stage();
        let walked = probe_of(stage, &planned[0], false);
        let (mut hits, mut outside) = (vec![0u8; m * n], Vec::new());
        for by in 0..gy {
            for bx in 0..gx {
                // The guarded kernels store only inside C; the others' grids are exactly C.
                (stage.footprint.stores)(&walked, (bx, by), &mut |row, col| {
                    if row < mm && col < nn {
                        hits[row_major(row as u64, col as u64, n as u64) as usize] += 1;
                    } else {
                        outside.push((row, col));
                    }
                });
            }
        }
        prop_assert!(outside.is_empty(), "stores outside C: {:?}", &outside[..outside.len().min(4)]);
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
        let (mut hits, mut outside) = (vec![0u8; m * n], Vec::new());
        for (kernel, launch) in method.launches(m32, n32, k32, sms) {
            let linear = kernel.name() == waves;
            if linear {
                for (bx, by) in (0..launch.grid.1).flat_map(|by| (0..launch.grid.0).map(move |bx| (bx, by))) {
                    let tile = by * launch.grid.0 + bx;
                    prop_assert!(tile < tiles);
                    for kt in 0..iters {
                        computed[(tile * iters + kt) as usize] += 1;
                    }
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
                        u += 1;
                    }
                }
            }
            // What each block stores as final sums (its stage's footprint; the whole waves' are
            // their `Waves::blocks_of`'s): the guarded ring only inside C, the others whole tiles.
            let stage = if linear { method.stage().waves.unwrap().blocks_of.stage() } else { method.stage() };
            let walked = Probe {
                grid: launch.grid,
                block: launch.block,
                shared_bytes: launch.shared_bytes,
                dims: (m32, n32, k32),
                addresses: BASE,
                sms,
                linear,
                warp_tile: stage.warp_tile,
                guarded: stage.bounds == Bounds::Guarded,
            };
            for (bx, by) in (0..launch.grid.1).flat_map(|by| (0..launch.grid.0).map(move |bx| (bx, by))) {
                (stage.footprint.stores)(&walked, (bx, by), &mut |row, col| {
                    if row < m32 && col < n32 {
                        hits[row_major(row as u64, col as u64, n as u64) as usize] += 1;
                    } else {
                        outside.push((row, col));
                    }
                });
            }
        }
        prop_assert!(computed.iter().all(|&h| h == 1));
        prop_assert!(outside.is_empty(), "stores outside C: {:?}", &outside[..outside.len().min(4)]);
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
        // Split-K over the spread ring: sm_90, its own whole tiles, long ranges.
        let spread_split = sm90
            && skew == 0
            && WARPTILE_ASYNC.supports(m as u32, n as u32, k as u32)
            && split_k_spread_pays(m as u32, n as u32, k as u32, sms);
        let expected = match (unguarded, blocks < sms as usize) {
            _ if spread_split => Method::SplitKSpread,
            _ if m <= SKINNY_ROWS as usize => Method::Skinny,
            _ if n <= THIN_COLS as usize => Method::Thin,
            _ if sm90 && split_k_pays(m as u32, n as u32, k as u32, sms).is_some() => split_k_stage(m as u32, n as u32, k as u32, sms).0,
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
        let grids: Vec<(u32, u32)> = method.launches(m, n, k, sms).map(|(_, launch)| launch.grid).collect();
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
