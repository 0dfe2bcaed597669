//! The lessons' counting claims, stated as the model's exact numbers on small launches (CPU only).
//! Each number is worked out from the hardware rules in `coalesce::model`'s docs, not from a
//! profiler: a 32-byte sector per distinct aligned chunk a warp touches; 32 banks of 4 bytes, the
//! most distinct words one bank must deliver per phase of the warp.
use coalesce::access_order::{Lanes, Order};
use coalesce::bank::{BLOCKS, ITERS, Pattern, Tile, conflict_degree};
use coalesce::coalescing::Load;
use coalesce::layouts::AosMethod;
use coalesce::model::{self, Counts};
use coalesce::reduce::Method as Reduce;
use coalesce::transpose::Method as Transpose;

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
    // DRAM: the distinct sectors of elements 1..N + 1 of each buffer.
    assert_eq!(c.dram_read_bytes, (N as u64 / 8 + 1) * 32);
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
        assert_eq!((c.dram_read_bytes, c.dram_write_bytes), (1 << 18, 1 << 18));
    }
    // A tail of 3 floats: one more 4-byte request each way, one sector.
    let c = model::coalescing::vec4_copy((1 << 16) + 3, 132, 0, true).unwrap();
    assert_eq!((c.ld_requests, c.ld_sectors), (513, 512 * 16 + 1));
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
        assert_eq!((c.dram_read_bytes, c.dram_write_bytes), (12 * N as u64, 12 * N as u64));
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
        assert_eq!((c.dram_read_bytes, c.dram_write_bytes), (4 * (rows * cols) as u64, 4 * (rows * cols) as u64));
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
    assert_eq!((wide.dram_read_bytes, wide.dram_write_bytes), (4 * n, 4 * n));
}

#[test]
fn edge_tiles_only_count_the_elements_inside() {
    // 33 x 31: two row tiles of one column tile. Every element is read and written once.
    let c = model::transpose::run(Transpose::Padded, 33, 31).unwrap();
    let bytes = (33u64 * 31 * 4).div_ceil(32) * 32;
    assert_eq!((c.dram_read_bytes, c.dram_write_bytes), (bytes, bytes));
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
        // The atomic kernels also read (and write) the sector of their one output.
        let atomic = if method.atomic() { 32 } else { 0 };
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
    assert_eq!(aos.dram_read_bytes, index_bytes + 32 * 1024);
    assert_eq!(soa.dram_read_bytes, index_bytes + 3 * 32 * 1024);
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
    let naive = model::matmul::run(coalesce::matmul::Method::Naive, (s, s, s)).unwrap();
    // A warp is 32 columns of one row: per k step one broadcast load of A (1 sector) and one
    // 128-byte load of B (4 sectors).
    let warps = (s * s / 32) as u64;
    assert_eq!((naive.ld_requests, naive.ld_sectors), (2 * warps * s as u64, 5 * warps * s as u64));
    let tiled = model::matmul::run(coalesce::matmul::Method::Tiled, (s, s, s)).unwrap();
    // One load of A and one of B per thread and tile: 128-byte rows of both.
    assert_eq!((tiled.ld_requests, tiled.ld_sectors_per_request()), (2 * warps * (s / 32) as u64, 4.0));
    // The inner product: 8 LDS.128 broadcasts (2 wavefronts each: every lane pairs up, so the
    // phases are half-warps) and 32 conflict-free LDS per warp and tile; no conflicts.
    assert_eq!(tiled.shared_ld_wavefronts, warps * (s / 32) as u64 * (8 * 2 + 32));
    assert_eq!(tiled.shared_ld_bank_conflicts, 0);
    let prefetch = model::matmul::run(coalesce::matmul::Method::Prefetch, (s, s, s)).unwrap();
    assert_eq!(prefetch, tiled);
    let rb = model::matmul::run(coalesce::matmul::Method::RegisterBlocked, (s, s, s)).unwrap();
    // 16-byte loads and stores: A 16 rows x 32 bytes, B 512 contiguous bytes, C two 256-byte runs.
    assert_eq!((rb.ld_sectors_per_request(), rb.st_sectors_per_request()), (16.0, 16.0));
    // Aᵀ's scalar stores: lanes 2i and 2i+1 share a bank 128 words apart, a 2-way conflict.
    assert!(rb.shared_st_bank_conflicts > 0 && rb.shared_ld_bank_conflicts == 0);
    for c in [&naive, &tiled, &rb] {
        assert_eq!((c.dram_read_bytes, c.dram_write_bytes), (2 * 4 * (s * s) as u64, 4 * (s * s) as u64));
    }
    // Partial tiles: the classes of edge blocks, exactly as a full replay would count them.
    let odd = model::matmul::run(coalesce::matmul::Method::Tiled, (33, 65, 7)).unwrap();
    assert_eq!(odd.st_requests, 33 * 3, "a request per row per 32 columns (3 blocks across)");
    let sectors = |floats: u64| (4 * floats).div_ceil(32) * 32;
    assert_eq!((odd.dram_read_bytes, odd.dram_write_bytes), (sectors(33 * 7) + sectors(7 * 65), sectors(33 * 65)));
}
