//! The lessons' counting claims, stated as the model's exact numbers on small launches (CPU only).
//! Each number is worked out from the hardware rules in `coalesce::model`'s docs, not from a
//! profiler: a 32-byte sector per distinct aligned chunk a warp touches; 32 banks of 4 bytes, the
//! most distinct words one bank must deliver per phase of the warp.
use coalesce::access_order::{Lanes, Order};
use coalesce::bank::{Pattern, Tile};
use coalesce::coalescing::Load;
use coalesce::layouts::AosMethod;
use coalesce::model::{self, Counts};
use coalesce::reduce::Method as Reduce;
use coalesce::transpose::Method as Transpose;
use coalesce_kernels::bank::{BLOCKS, ITERS, conflict_degree};

/// Elements of the 1-D launches: 32 blocks of 256 threads, whole warps.
const N: usize = 8192;
/// Warps of a one-element-per-thread launch over `N`.
const WARPS: u64 = N as u64 / 32;

fn per_request(c: &Counts) -> (f64, f64) {
    (c.ld_sectors_per_request(), c.st_sectors_per_request())
}

#[test]
fn offset_0_and_32_take_4_sectors_a_warp_every_other_offset_5() {
    for load in [Load::Cached, Load::L2Only] {
        for offset in 0..=32 {
            let c = model::coalescing::offset_copy(load, N, offset, 32).unwrap();
            let want = if offset % 8 == 0 { 4.0 } else { 5.0 };
            assert_eq!(per_request(&c), (want, want), "offset {offset} ({load:?})");
            assert_eq!((c.ld_requests, c.st_requests), (WARPS, WARPS));
        }
    }
    // Offset 1..7 shifts every warp across one more sector boundary: 5 for 4 useful.
    let c = model::coalescing::offset_copy(Load::Cached, N, 1, 32).unwrap();
    assert_eq!(c.ld_sectors, 5 * WARPS);
    // DRAM: the 64-byte pairs holding elements 1..N + 1 (the L2 fetches a sector's pair); the
    // 32 KiB written stay in the 50 MB L2 when the launch ends.
    assert_eq!((c.dram_read_bytes, c.dram_write_bytes), ((N as u64 / 16 + 1) * 64, 0));
}

#[test]
fn stride_s_takes_min_32_4s_sectors_for_4_useful_ones() {
    for stride in 1..=32u32 {
        let c = model::coalescing::stride_copy(N, stride).unwrap();
        let want = f64::from((4 * stride).min(32));
        assert_eq!(per_request(&c), (want, want), "stride {stride}");
    }
}

#[test]
fn the_16_byte_copy_moves_16_full_sectors_a_request() {
    for blocks_per_sm in [0, 1, 8] {
        let c = model::coalescing::vec4_copy(1 << 16, 132, blocks_per_sm, false).unwrap();
        assert_eq!(per_request(&c), (16.0, 16.0));
        // 2^16 floats are 2^14 vectors: 512 warp requests of 32 each way.
        assert_eq!((c.ld_requests, c.st_requests), (512, 512));
        // Read once; the 256 KiB written stay in L2 when the launch ends.
        assert_eq!((c.dram_read_bytes, c.dram_write_bytes), (1 << 18, 0));
    }
    // A tail of 3 floats: one more 4-byte request each way, one sector.
    let c = model::coalescing::vec4_copy((1 << 16) + 3, 132, 0, true).unwrap();
    assert_eq!((c.ld_requests, c.ld_sectors), (513, 512 * 16 + 1));
}

#[test]
fn the_any_offset_copy_keeps_16_byte_stores_and_pays_up_to_two_sectors_a_warp_step_to_shift() {
    let n = 1 << 16;
    let aligned = model::coalescing::vec4_copy(n, 132, 0, false).unwrap();
    for src in 0..4 {
        for dst in 0..4 {
            let c = model::coalescing::any_offset_copy(n, src, dst).unwrap();
            // Every body store is a full 16-sector request; the 4-byte head and tail add at most
            // two requests of one or two sectors each way.
            assert!(c.st_requests <= aligned.st_requests + 2, "{src} {dst}: {c:?}");
            assert!(c.st_sectors <= aligned.st_sectors + 4, "{src} {dst}: {c:?}");
            // The DRAM footprint is the copy's bytes, whichever the alignment (to a sector each end).
            // The view's bytes in whole 64-byte pairs; the output stays in L2.
            assert!(c.dram_read_bytes.abs_diff(4 * n as u64) <= 128, "{src} {dst}: {c:?}");
            assert_eq!(c.dram_write_bytes, 0, "{src} {dst}: {c:?}");
            if (4 + src - dst) % 4 == 0 {
                // The same alignment once the head is peeled: the aligned copy's loads.
                assert!(c.ld_requests <= aligned.ld_requests + 2, "{src} {dst}: {c:?}");
            } else {
                // Lane 31 loads the next warp's first vector: one more request of one sector
                // for every 32 vectors. A warp's 512 bytes starting 16 bytes into a sector
                // touch 17 sectors, not 16: at most one more a request either way.
                let warp_steps = aligned.ld_requests;
                assert!(c.ld_requests <= 2 * warp_steps + 2, "{src} {dst}: {c:?}");
                assert!(c.ld_sectors <= aligned.ld_sectors + 2 * warp_steps + 4, "{src} {dst}: {c:?}");
            }
        }
    }
}

#[test]
fn float3_aos_costs_12_sectors_a_request_staged_soa_4_aligned_16() {
    let warps = WARPS;
    let aos = model::layouts::aos_update(AosMethod::Element, N).unwrap();
    // x, y and z: three requests each way, each spanning 384 bytes = 12 sectors.
    assert_eq!((aos.ld_requests, aos.st_requests), (3 * warps, 3 * warps));
    assert_eq!(per_request(&aos), (12.0, 12.0));
    let staged = model::layouts::aos_update(AosMethod::Staged, N).unwrap();
    assert_eq!((staged.ld_requests, staged.ld_sectors), (3 * warps, 12 * warps));
    assert_eq!(per_request(&staged), (4.0, 4.0));
    // Shared: three coalesced stores and loads of the staging, three loads and stores of each
    // thread's float3 at a 3-word stride (gcd(3, 32) = 1): one wavefront each, no conflict.
    assert_eq!((staged.shared_ld_wavefronts, staged.shared_st_wavefronts), (6 * warps, 6 * warps));
    assert_eq!((staged.shared_ld_bank_conflicts, staged.shared_st_bank_conflicts), (0, 0));
    let soa = model::layouts::soa_update(N).unwrap();
    assert_eq!((soa.ld_requests, per_request(&soa)), (3 * warps, (4.0, 4.0)));
    let aligned = model::layouts::aligned16_update(N).unwrap();
    assert_eq!((aligned.ld_requests, per_request(&aligned)), (warps, (16.0, 16.0)));
    // Every variant reads the same 12 useful bytes an element; the aligned one a third more.
    for c in [&aos, &staged, &soa] {
        assert_eq!((c.dram_read_bytes, c.dram_write_bytes), (12 * N as u64, 0));
    }
    assert_eq!(aligned.dram_read_bytes, 16 * N as u64);
}

#[test]
fn chunked_order_spreads_a_warp_over_min_32_4p_sectors_interleaved_keeps_4() {
    for per_thread in [1u32, 2, 3, 4, 8, 16, 128] {
        // Whole warps of threads: `n / per_thread` a multiple of 32.
        let n = if per_thread == 3 { 3 << 14 } else { 1 << 15 };
        let chunked = model::access_order::walk_1d(Order::Chunked, n, per_thread).unwrap();
        let want = f64::from((4 * per_thread).min(32));
        assert_eq!(per_request(&chunked), (want, want), "chunked, {per_thread} per thread");
        let interleaved = model::access_order::walk_1d(Order::Interleaved, n, per_thread).unwrap();
        assert_eq!(per_request(&interleaved), (4.0, 4.0), "interleaved, {per_thread} per thread");
        // Either way every element is read and written once.
        assert_eq!(chunked.ld_requests, interleaved.ld_requests);
        assert_eq!(chunked.dram_read_bytes, 4 * n as u64);
    }
}

#[test]
fn lanes_along_x_take_4_sectors_down_a_column_32() {
    let x = model::access_order::walk_2d(Lanes::AlongX, 256, 256).unwrap();
    let y = model::access_order::walk_2d(Lanes::AlongY, 256, 256).unwrap();
    assert_eq!(per_request(&x), (4.0, 4.0));
    assert_eq!(per_request(&y), (32.0, 32.0));
    assert_eq!((x.ld_requests, y.ld_requests), (2048, 2048));
}

#[test]
fn transposes_naive_strided_stores_shared_32_way_padded_none() {
    let (rows, cols) = (256, 512);
    let requests = (rows * cols / 32) as u64;
    let copy = model::transpose::run(Transpose::Copy, rows, cols).unwrap();
    assert_eq!(per_request(&copy), (4.0, 4.0));
    let naive = model::transpose::run(Transpose::Naive, rows, cols).unwrap();
    assert_eq!(per_request(&naive), (4.0, 32.0));
    assert_eq!((naive.ld_requests, naive.st_requests), (requests, requests));
    let shared = model::transpose::run(Transpose::Shared, rows, cols).unwrap();
    assert_eq!(per_request(&shared), (4.0, 4.0));
    // The tile's row stores are conflict-free; its column reads put all 32 lanes in one bank.
    assert_eq!((shared.shared_st_wavefronts, shared.shared_st_bank_conflicts), (requests, 0));
    assert_eq!((shared.shared_ld_wavefronts, shared.shared_ld_bank_conflicts), (32 * requests, 31 * requests));
    let padded = model::transpose::run(Transpose::Padded, rows, cols).unwrap();
    assert_eq!((padded.shared_ld_wavefronts, padded.shared_ld_bank_conflicts), (requests, 0));
    assert_eq!((padded.shared_st_wavefronts, padded.shared_st_bank_conflicts), (requests, 0));
    for c in [&copy, &naive, &shared, &padded] {
        assert_eq!((c.dram_read_bytes, c.dram_write_bytes), (4 * (rows * cols) as u64, 0));
    }
}

#[test]
fn the_wide_tile_halves_the_requests_and_pays_a_2_way_conflict() {
    let (rows, cols) = (256, 512);
    let n = (rows * cols) as u64;
    let wide = model::transpose::run(Transpose::Wide, rows, cols).unwrap();
    // 8-byte accesses: a warp moves 256 contiguous bytes, 8 sectors, half as many requests.
    assert_eq!(per_request(&wide), (8.0, 8.0));
    assert_eq!((wide.ld_requests, wide.st_requests), (n / 64, n / 64));
    // Each pair goes through the tile as two 4-byte accesses; with pitch 65 lanes l and l + 16
    // meet in one bank (2l + c and 2(l + 16) + c agree mod 32): 2 wavefronts an instruction.
    let (lds, sts) = (n / 32, n / 32);
    assert_eq!((wide.shared_ld_wavefronts, wide.shared_ld_bank_conflicts), (2 * lds, lds));
    assert_eq!((wide.shared_st_wavefronts, wide.shared_st_bank_conflicts), (2 * sts, sts));
    assert_eq!((wide.dram_read_bytes, wide.dram_write_bytes), (4 * n, 0));
}

#[test]
fn the_wide_copies_make_the_same_transactions_in_either_order() {
    // The along-rows and down-columns copies differ only in which tile a block takes: every
    // count is the same, so any time between them is the DRAM's, not the transactions'.
    let (rows, cols) = (256, 512);
    let n = (rows * cols) as u64;
    let along = model::transpose::run(Transpose::WideCopy, rows, cols).unwrap();
    let down = model::transpose::run(Transpose::WideCopyDown, rows, cols).unwrap();
    assert_eq!(along, down);
    // The wide transpose's global side: 8 sectors a request, n / 64 requests each way.
    let wide = model::transpose::run(Transpose::Wide, rows, cols).unwrap();
    assert_eq!(per_request(&along), (8.0, 8.0));
    assert_eq!((along.ld_requests, along.st_requests), (wide.ld_requests, wide.st_requests));
    assert_eq!((along.dram_read_bytes, along.dram_write_bytes), (4 * n, 0));
    assert_eq!((along.shared_ld_wavefronts, along.shared_st_wavefronts), (0, 0));
}

#[test]
fn edge_tiles_only_count_the_elements_inside() {
    // 33 x 31: two row tiles of one column tile. Every element is read and written once.
    let c = model::transpose::run(Transpose::Padded, 33, 31).unwrap();
    let bytes = (33u64 * 31 * 4).div_ceil(32) * 32;
    assert_eq!((c.dram_read_bytes, c.dram_write_bytes), (bytes, 0));
    // Loads: a request per input row inside (32 in the first tile, 1 in the second).
    assert_eq!(c.ld_requests, 33);
    // Stores: each tile writes its part of all 31 output rows (the second tile, one lane each).
    assert_eq!(c.st_requests, 2 * 31);
    // Output row `c` starts at float 33c, so the first tile's 32 floats of it span 4 or 5
    // sectors depending on 33c mod 8; the second tile's one float, 1.
    let first_tile: u64 = (0..31u64).map(|c| (33 * c + 31) / 8 - 33 * c / 8 + 1).sum();
    assert_eq!(c.st_sectors, first_tile + 31);
    assert!(first_tile > 4 * 31 && first_tile < 5 * 31);
}

#[test]
fn bank_rows_1_cols_32_padded_1_and_stride_gcd_law() {
    let warps = u64::from(BLOCKS) * 8;
    let accesses = warps * u64::from(ITERS);
    let wavefronts = |p| model::bank::run(p).unwrap().shared_ld_wavefronts;
    assert_eq!(wavefronts(Pattern::Tile(Tile::Rows)), accesses);
    assert_eq!(wavefronts(Pattern::Tile(Tile::Cols)), 32 * accesses);
    assert_eq!(wavefronts(Pattern::Tile(Tile::ColsPadded)), accesses);
    for stride in 1..=32 {
        let c = model::bank::run(Pattern::Stride(stride)).unwrap();
        let degree = u64::from(conflict_degree(stride));
        assert_eq!(c.shared_ld_wavefronts, degree * accesses, "stride {stride}");
        assert_eq!(c.shared_ld_bank_conflicts, (degree - 1) * accesses, "stride {stride}");
    }
    let cols = model::bank::run(Pattern::Tile(Tile::Cols)).unwrap();
    // The table copy: 8 coalesced loads and conflict-free stores per warp, one store of the sums.
    assert_eq!((cols.ld_requests, cols.ld_sectors, cols.st_requests), (8 * warps, 32 * warps, warps));
    assert_eq!((cols.shared_st_wavefronts, cols.shared_st_bank_conflicts), (8 * warps, 0));
}

#[test]
fn reduction_trees_conflicts_per_level() {
    let blocks = 4u64;
    let n = 256 * blocks as usize;
    // Interleaved with contiguous workers (index 2dt): at level d the active lanes are 2d words
    // apart, so lanes per bank (distinct words) are 2, 4, 8, 8, 8, 4, 2, 1 for d = 1 .. 128
    // (from d = 8 on, fewer than 32 lanes are left: 16 lanes on 2 banks, 8 on 1, 4, 2, 1).
    // Warps at each level: 4, 2, 1, 1, 1, 1, 1, 1. Two loads and a store per warp a level.
    let degrees = [2u64, 4, 8, 8, 8, 4, 2, 1];
    let warps = [4u64, 2, 1, 1, 1, 1, 1, 1];
    let level_wavefronts: u64 = degrees.iter().zip(&warps).map(|(d, w)| d * w).sum();
    let level_requests: u64 = warps.iter().sum();
    let c = model::reduce::first_launch(Reduce::InterleavedConflicts, n, 132).unwrap();
    // Loads: the levels' two loads, and thread 0's read of s[0].
    assert_eq!(c.shared_ld_wavefronts, blocks * (2 * level_wavefronts + 1));
    assert_eq!(c.shared_ld_bank_conflicts, blocks * 2 * (level_wavefronts - level_requests));
    // Stores: the 8 warps' s[t] (conflict-free) and the levels' stores.
    assert_eq!(c.shared_st_wavefronts, blocks * (8 + level_wavefronts));
    assert_eq!(c.shared_st_bank_conflicts, blocks * (level_wavefronts - level_requests));
    assert_eq!((2 * level_wavefronts + 1, level_wavefronts - level_requests), (95, 35));
    // The divergent tree reads word t with lanes t % 2d == 0, each in its own bank; the
    // sequential trees read consecutive words: none conflicts.
    for method in [Reduce::InterleavedDivergent, Reduce::Sequential, Reduce::FirstAdd, Reduce::UnrollLastWarp] {
        let c = model::reduce::first_launch(method, n, 132).unwrap();
        assert_eq!((c.shared_ld_bank_conflicts, c.shared_st_bank_conflicts), (0, 0), "{method:?}");
    }
    // Sequential: levels 128 .. 1 with 4, 2, 1, 1, 1, 1, 1, 1 warps, two loads each, plus s[0].
    let c = model::reduce::first_launch(Reduce::Sequential, n, 132).unwrap();
    assert_eq!(c.shared_ld_wavefronts, blocks * (2 * 12 + 1));
    // One coalesced load a thread, one partial a block.
    assert_eq!((c.ld_requests, c.ld_sectors, c.st_requests), (blocks * 8, blocks * 32, blocks));
}

#[test]
fn reduction_loads_stay_coalesced_and_the_shuffle_kernel_reads_16_byte_vectors() {
    let n = 1 << 20;
    for method in Reduce::ALL {
        let c = model::reduce::first_launch(method, n, 132).unwrap();
        let want = if method == Reduce::ShuffleVec4 { 16.0 } else { 4.0 };
        assert_eq!(c.ld_sectors_per_request(), want, "{method:?}");
        // The atomic kernels also read the sector pair of their one output (its write stays in
        // L2).
        let atomic = if method.atomic() { 64 } else { 0 };
        assert_eq!(c.dram_read_bytes, 4 * n as u64 + atomic, "{method:?}");
    }
}

#[test]
fn gathers_aos_one_sector_a_point_soa_three() {
    // 1024 points chosen 64 apart: AoS points 768 bytes apart, 32-byte aligned, so each point's
    // 12 bytes are one sector; SoA coordinates are 3 sectors a point.
    let n = 1 << 16;
    let indices: Vec<u32> = (0..1024).map(|j| 64 * j).collect();
    let aos = model::distance::gather(false, n, &indices).unwrap();
    let soa = model::distance::gather(true, n, &indices).unwrap();
    let index_bytes = 4 * indices.len() as u64;
    // Each point's sector comes with its pair (64 bytes), no two points in one pair here.
    assert_eq!(aos.dram_read_bytes, index_bytes + 64 * 1024);
    assert_eq!(soa.dram_read_bytes, index_bytes + 3 * 64 * 1024);
    // Per warp: the index load (4 sectors) and three loads of 32 scattered sectors each.
    for c in [&aos, &soa] {
        assert_eq!((c.ld_requests, c.ld_sectors), (4 * 32, (4 + 3 * 32) * 32));
        assert_eq!(c.ld_sectors_per_request(), 25.0);
    }
    // Every point, AoS: 12 sectors a component request, the same bytes as SoA's 4 a request.
    let all_aos = model::distance::all(false, 8192).unwrap();
    let all_soa = model::distance::all(true, 8192).unwrap();
    assert_eq!((all_aos.ld_sectors_per_request(), all_soa.ld_sectors_per_request()), (12.0, 4.0));
    assert_eq!(all_aos.dram_read_bytes, all_soa.dram_read_bytes);
}

#[test]
fn matmul_global_traffic() {
    let s = 256;
    let naive = coalesce::matmul::model(coalesce::matmul::Method::Naive, (s, s, s), 132).unwrap();
    // A warp is 32 columns of one row: per k step one broadcast load of A (1 sector) and one
    // 128-byte load of B (4 sectors).
    let warps = (s * s / 32) as u64;
    assert_eq!((naive.ld_requests, naive.ld_sectors), (2 * warps * s as u64, 5 * warps * s as u64));
    let tiled = coalesce::matmul::model(coalesce::matmul::Method::Tiled, (s, s, s), 132).unwrap();
    // One load of A and one of B per thread and tile: 128-byte rows of both.
    assert_eq!((tiled.ld_requests, tiled.ld_sectors_per_request()), (2 * warps * (s / 32) as u64, 4.0));
    // The inner product: 8 LDS.128 broadcasts (2 wavefronts each: every lane pairs up, so the
    // phases are half-warps) and 32 conflict-free LDS per warp and tile; no conflicts.
    assert_eq!(tiled.shared_ld_wavefronts, warps * (s / 32) as u64 * (8 * 2 + 32));
    assert_eq!(tiled.shared_ld_bank_conflicts, 0);
    let prefetch = coalesce::matmul::model(coalesce::matmul::Method::Prefetch, (s, s, s), 132).unwrap();
    assert_eq!(prefetch, tiled);
    let rb = coalesce::matmul::model(coalesce::matmul::Method::Regblock, (s, s, s), 132).unwrap();
    // 16-byte loads and stores: A 16 rows x 32 bytes, B 512 contiguous bytes, C two 256-byte runs.
    assert_eq!((rb.ld_sectors_per_request(), rb.st_sectors_per_request()), (16.0, 16.0));
    // Aᵀ's scalar stores: lanes 2i and 2i+1 share a bank 128 words apart, a 2-way conflict.
    assert!(rb.shared_st_bank_conflicts > 0 && rb.shared_ld_bank_conflicts == 0);
    for c in [&naive, &tiled, &rb] {
        assert_eq!((c.dram_read_bytes, c.dram_write_bytes), (2 * 4 * (s * s) as u64, 0));
    }
    // Partial tiles: the classes of edge blocks, exactly as a full replay would count them.
    let odd = coalesce::matmul::model(coalesce::matmul::Method::Tiled, (33, 65, 7), 132).unwrap();
    assert_eq!(odd.st_requests, 33 * 3, "a request per row per 32 columns (3 blocks across)");
    // Whole 64-byte pairs of A and B (each starts on a 2 MiB boundary); C stays in L2.
    let pairs = |floats: u64| (4 * floats).div_ceil(64) * 64;
    assert_eq!((odd.dram_read_bytes, odd.dram_write_bytes), (pairs(33 * 7) + pairs(7 * 65), 0));
}

#[test]
fn hardware_copies_leave_the_load_store_pipe() {
    use coalesce::coalescing::AsyncCopy;
    // n = 4 · 1000 + 3: 1000 vectors and a 3-float tail, on 2 SMs.
    let n = 4003;
    let cp = model::coalescing::hardware_copy(AsyncCopy::CpAsync, n, 2, 0).unwrap();
    // cp.async: one LDGSTS.128 (a global load for ncu) and one STG.128 per 32 vectors, 16
    // sectors each but the last partial warp (1000 = 31 · 32 + 8: 4 sectors), plus the tail's
    // 4-byte pair (1 sector); its own slot read back with one conflict-free LDS.128 (4
    // wavefronts a warp, 1 for the 8-lane warp); nothing counted as a shared store.
    assert_eq!((cp.ld_requests, cp.ld_sectors), (32 + 1, 31 * 16 + 4 + 1));
    assert_eq!((cp.st_requests, cp.st_sectors), (32 + 1, 31 * 16 + 4 + 1));
    assert_eq!((cp.shared_ld_wavefronts, cp.shared_ld_bank_conflicts), (31 * 4 + 1, 0));
    assert_eq!(cp.shared_st_wavefronts, 0);
    let bulk = model::coalescing::hardware_copy(AsyncCopy::Bulk, n, 2, 0).unwrap();
    // The TMA moves the vectors: only the tail goes through the load/store pipe.
    assert_eq!((bulk.ld_requests, bulk.ld_sectors, bulk.st_requests, bulk.st_sectors), (1, 1, 1, 1));
    assert_eq!(bulk.shared_ld_wavefronts + bulk.shared_st_wavefronts, 0);
    for c in [&cp, &bulk] {
        assert_eq!((c.dram_read_bytes, c.dram_write_bytes), (4 * 4003_u64.div_ceil(16) * 16, 0));
    }
    // TMA transpose: per 64 × 64 tile, each warp's 16 steps are one conflict-free LDS and one STS
    // of the swizzled boxes (8 warps · 16 steps), nothing global through the pipe. 96 × 64: two
    // tiles, the second half past the edge (its rows read as zeros, its stores clipped).
    let tma = model::transpose::tma(96, 64).unwrap();
    let tiles = 2;
    assert_eq!((tma.shared_ld_wavefronts, tma.shared_ld_bank_conflicts), (tiles * 128, 0));
    assert_eq!((tma.shared_st_wavefronts, tma.shared_st_bank_conflicts), (tiles * 128, 0));
    assert_eq!(tma.ld_requests + tma.st_requests, 0);
    assert_eq!((tma.dram_read_bytes, tma.dram_write_bytes), (4 * 96 * 64, 0));
    assert!(model::transpose::tma(96, 62).is_err(), "columns not a multiple of 4");
}

#[test]
fn histogram_loads_16_sectors_a_request_and_only_the_bins_depend_on_the_data() {
    use coalesce::histogram::Method as Histogram;
    // n = 3 · 4096 + 5: 3073 vectors and a 1-value tail. Blocks count 1024 vectors each, so
    // blocks 0-2 are full, block 3 loads vector 3072 only, and the grid is rounded up to one
    // 8-block cluster (blocks 4-7 load nothing).
    let n = 3 * 4096 + 5;
    let one_bin: Vec<u32> = (0..n as u32).map(|i| (i << 8) | 40).collect();
    let every_bin: Vec<u32> = (0..n as u32).collect();
    let methods = [Histogram::Global, Histogram::Shared, Histogram::Cluster];
    for method in methods {
        let c = model::histogram::run(method, &one_bin).unwrap();
        // 3 full blocks: 8 warps · 4 LDG.E.128 of 512 contiguous bytes (16 sectors); block 3's
        // single-lane vector (1 sector); the tail value, one lane of block 0 (1 sector).
        assert_eq!((c.ld_requests, c.ld_sectors), (3 * 8 * 4 + 1 + 1, 3 * 8 * 4 * 16 + 1 + 1), "{method:?}");
        assert_eq!((c.st_requests, c.st_sectors), (0, 0), "{method:?}: the flush is atomics only");
        // Shared: 8 blocks · 8 warps zero 32 consecutive words (1 wavefront); the shared kernel
        // reads them back the same way; the cluster kernel reads them through distributed
        // shared memory, of which only the own rank's load (one warp a block, 32 consecutive
        // words) is this SM's shared traffic; the global kernel has no shared memory.
        let (ld, st) = match method {
            Histogram::Global => (0, 0),
            Histogram::Shared => (64, 64),
            Histogram::Cluster => (8, 64),
        };
        assert_eq!((c.shared_ld_wavefronts, c.shared_st_wavefronts), (ld, st), "{method:?}");
        assert_eq!((c.shared_ld_bank_conflicts, c.shared_st_bank_conflicts), (0, 0), "{method:?}");
        // DRAM: the input's 12293 · 4 bytes in 769 sector pairs; bin 40's pair, read by its
        // atomics (their writes stay in L2).
        assert_eq!((c.dram_read_bytes, c.dram_write_bytes), (769 * 64 + 64, 0), "{method:?}");
        // Every bin hit: the 256 bins' 16 pairs; nothing else changes.
        let all = model::histogram::run(method, &every_bin).unwrap();
        assert_eq!((all.dram_read_bytes, all.dram_write_bytes), (769 * 64 + 1024, 0), "{method:?}");
        assert_eq!(
            Counts { dram_read_bytes: 0, dram_write_bytes: 0, ..all },
            Counts { dram_read_bytes: 0, dram_write_bytes: 0, ..c }
        );
    }
    // Whole blocks, no tail: exactly 16 sectors a request.
    let whole: Vec<u32> = (0..8 * 4096).collect();
    let c = model::histogram::run(Histogram::Global, &whole).unwrap();
    assert_eq!((c.ld_requests, c.ld_sectors_per_request()), (8 * 8 * 4, 16.0));
}

#[test]
fn warp_tiled_and_cp_async_matmuls_count_what_their_sass_does() {
    use coalesce::matmul::Method;
    let s = 256u64;
    let run = |method, shape| coalesce::matmul::model(method, shape, 132).unwrap();
    let dram = |c: &Counts| (c.dram_read_bytes, c.dram_write_bytes);
    let whole = (2 * 4 * s * s, 0);
    // matmul_warptile at 256³: 2 × 2 blocks of 8 warps, 16 k tiles; matmul_warptile_small:
    // 2 × 4 blocks of 4 warps. Per warp: the first tile's loads and stores before the loop and
    // the next tile's in each of the 16 trips (17 in all; the last trip loads itself again).
    let (warps, tiles) = (32u64, s / 16);
    let wt = run(Method::Warptile, (256, 256, 256));
    let small = run(Method::WarptileSmall, (256, 256, 256));
    // LDG.E.128: 2 A vectors (16 rows × 32 bytes: 16 sectors) and 2 B (small: 4; 512 contiguous
    // bytes: 16). A warp's 512 bytes need 16 sectors at least, so 16 on average is 16 each.
    assert_eq!((wt.ld_requests, wt.ld_sectors), (warps * (tiles + 1) * 4, 16 * warps * (tiles + 1) * 4));
    assert_eq!((small.ld_requests, small.ld_sectors), (warps * (tiles + 1) * 6, 16 * warps * (tiles + 1) * 6));
    // 16 STG.E.128 a warp: ly rows × lx · 16 bytes, 16 sectors either shape.
    for c in [&wt, &small] {
        assert_eq!((c.st_requests, c.st_sectors), (16 * warps, 256 * warps));
        // Per k step 2 A and 2 B LDS.128 fragments, 64 a tile. The lane bits alternate row,
        // column, ..: lanes l ^ 2 share the lane row (A pairs up), lanes l ^ 1 the column (B
        // pairs up), so each is 2 half-warp wavefronts: 8 a step (12 with row-major lanes, B
        // then 4 quarter-warp phases), no conflict.
        assert_eq!((c.shared_ld_wavefronts, c.shared_ld_bank_conflicts), (warps * tiles * 16 * 8, 0));
        assert_eq!(dram(c), whole);
    }
    // The transposing A stores (8 STS, 1 wavefront each: the padded Aᵀ rows put a warp's 32
    // floats in 32 banks) and 2 (small: 4) STS.128 of B at 4 wavefronts, 17 times.
    assert_eq!((wt.shared_st_wavefronts, wt.shared_st_bank_conflicts), (warps * (tiles + 1) * (8 + 2 * 4), 0));
    assert_eq!((small.shared_st_wavefronts, small.shared_st_bank_conflicts), (warps * (tiles + 1) * (8 + 4 * 4), 0));

    // matmul_warptile_edge on whole tiles: the same, with every vector 4 single-float LDG.E
    // (A: 2 lanes a sector, 16 rows; B: 16 bytes apart, 512 bytes) and 4 STG.E a vector out,
    // and lanes row-major: B's fragment lanes differ in l ^ 1 and l ^ 2, 4 quarter-warp
    // wavefronts each, 12 a step.
    let edge = run(Method::WarptileEdge, (256, 256, 256));
    assert_eq!((edge.ld_requests, edge.ld_sectors), (4 * wt.ld_requests, 4 * wt.ld_sectors));
    assert_eq!((edge.st_requests, edge.st_sectors), (4 * wt.st_requests, 4 * wt.st_sectors));
    assert_eq!(
        (edge.shared_ld_wavefronts, edge.shared_ld_bank_conflicts, edge.shared_st_wavefronts),
        (warps * tiles * 16 * 12, 0, wt.shared_st_wavefronts)
    );
    assert_eq!(edge.shared_st_bank_conflicts, 0);
    // Its sm_90 build: the same global accesses and stores to shared, and warptile's paired
    // fragment loads (8 wavefronts a step instead of 12).
    let edge90 = run(Method::WarptileEdgeSm90, (256, 256, 256));
    assert_eq!(
        (edge90.ld_requests, edge90.ld_sectors, edge90.st_requests, edge90.st_sectors),
        (edge.ld_requests, edge.ld_sectors, edge.st_requests, edge.st_sectors)
    );
    assert_eq!((edge90.shared_ld_wavefronts, edge90.shared_ld_bank_conflicts), (wt.shared_ld_wavefronts, 0));
    assert_eq!((edge90.shared_st_wavefronts, edge90.shared_st_bank_conflicts), (wt.shared_st_wavefronts, 0));
    assert_eq!(dram(&edge90), whole);
    // The sm_90 build makes the same accesses as matmul_warptile, in another order.
    assert_eq!(run(Method::WarptileSm90, (256, 256, 256)), wt);
    assert_eq!(dram(&edge), whole);
    // 129 × 129 × 17: 2 × 2 blocks, two k tiles, the second holding k column 16 only. Per warp:
    // tile 0's 16 loads (2 + 2 vectors × 4 floats), then the partial tile twice (as the next
    // tile of trip 0 and again in trip 1): A floats with column < 1 (lanes with A column 0, of
    // vector 0: 1 request), B vectors of row < 1 (vector 0 of warp 0 only: 4 requests).
    let odd = run(Method::WarptileEdge, (129, 129, 17));
    assert_eq!(odd.ld_requests, 4 * (8 * (16 + 2) + 2 * 4));
    // Stores where r < 129 and col + j < 129: block (0, 0) all 8 · 64; block (1, 0) column 128,
    // j = 0 of the lanes with out_col 0 (warps 0 and 4), 8 rows each; block (0, 1) row 128,
    // i = 0 of warps 0-3, 2 × 4 columns; block (1, 1) one float.
    assert_eq!(odd.st_requests, 8 * 64 + 2 * 8 + 4 * 8 + 1);
    assert_eq!((odd.shared_ld_wavefronts, odd.shared_ld_bank_conflicts), (32 * 2 * 16 * 12, 0));
    assert_eq!((odd.shared_st_wavefronts, odd.shared_st_bank_conflicts), (32 * 3 * 16, 0));
    let pairs = |floats: u64| (4 * floats).div_ceil(64) * 64;
    assert_eq!(dram(&odd), (2 * pairs(129 * 17), 0));
    // Whole-tile kernels refuse what they cannot run.
    assert!(coalesce::matmul::model(Method::Warptile, (129, 129, 17), 132).is_err());

    // matmul_cp_async at 256³ (16-byte path): 8 × 8 blocks of 32 warps, 8 tiles. Per tile
    // warps 0-15 issue one LDGSTS.E.BYPASS.128 (4 rows × 128 bytes: 16 sectors), counted as a
    // global load; its shared write is no shared store.
    let (blocks, tiles) = (64u64, s / 32);
    let cp = run(Method::CpAsync, (256, 256, 256));
    assert_eq!((cp.ld_requests, cp.ld_sectors), (blocks * tiles * 16, blocks * tiles * 16 * 16));
    assert_eq!((cp.shared_st_wavefronts, cp.shared_st_bank_conflicts), (0, 0));
    // 8 trips of two uniform LDS.64 of A (paired: one wavefront) and four conflict-free LDS of
    // B: 48 wavefronts a warp a tile. One STG.E of 128 bytes a warp.
    assert_eq!((cp.shared_ld_wavefronts, cp.shared_ld_bank_conflicts), (blocks * 32 * tiles * 48, 0));
    assert_eq!((cp.st_requests, cp.st_sectors), (blocks * 32, blocks * 32 * 4));
    assert_eq!(dram(&cp), whole);
    // k = 255 is not a multiple of 4: two 4-byte LDGSTS.E a warp a tile, but for B in the last
    // tile's warp 31 (row 255 = k: every lane copies 0 bytes, none sends a request). A row r of
    // a tile spans floats 255r + 32t .. (its 32 or, in the last tile, 31 floats); B 128 bytes.
    let cp4 = run(Method::CpAsync, (256, 256, 255));
    assert_eq!(cp4.ld_requests, blocks * (32 * tiles * 2 - 1));
    let a_sectors: u64 = (0..256u64)
        .flat_map(|r| (0..tiles).map(move |t| (255 * r + 32 * t, (32 * t + 32).min(255) - 32 * t)))
        .map(|(first, len)| (first + len - 1) / 8 - first / 8 + 1)
        .sum();
    // Each row of A is read by the 8 column blocks.
    assert_eq!(cp4.ld_sectors, 8 * a_sectors + 4 * blocks * (32 * tiles - 1));
    assert_eq!(cp4.shared_ld_wavefronts, cp.shared_ld_wavefronts);
    assert_eq!(dram(&cp4), (pairs(256 * 255) + pairs(255 * 256), 0));
}
