//! Stage 8, warptile_streamk (Hopper): warptile_async's whole waves, then a row of blocks shares
//! the last. 4096² on 132 SMs: the last wave takes 0.88 of a tile time, not 1; a C tile read +
//! write a cut.
//!
//! The file keeps the module name `stream_k`: the symbol of its flags (`hopper_device::SK_FLAGS`)
//! in the PTX is named after their module path, so a rename would change the committed PTX.

use super::warptile::WarpTile;
use super::warptile_async::WARPTILE_ASYNC;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
use super::warptile_async::hopper_device::{AsyncRing, warptile_async};
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
use super::warptile_async::{WTA_NA, WTA_NB};

/// Where stream-K's tiles are ([`WarpTile`]'s tiles counted row by row).
impl WarpTile {
    /// `(row0, col0)` of output tile `tile`, the tiles of C counted row by row, `tiles_n` a row
    /// (0 taken as 1: no tile then exists). `matmul_warptile_streamk_waves` takes tile `by *
    /// grid_x + bx`: on a grid of `(wave, waves)` the first `waves * wave` tiles in order
    /// ([`StreamK`]). The stream-K row finds its tiles' corners here too.
    #[inline(always)]
    pub const fn tile_origin(self, tile: u32, tiles_n: u32) -> (u32, u32) {
        let tiles_n = if tiles_n == 0 { 1 } else { tiles_n };
        ((tile / tiles_n) * self.bm, (tile % tiles_n) * self.bn)
    }
}

/// Most blocks a wave of `matmul_warptile_streamk` may have (one flag each, [`StreamK`]).
pub const SK_MAX_WAVE: u32 = 1024;

/// How a stream-K multiply deals the `tiles` output tiles of [`WARPTILE_ASYNC`] (each `iters`
/// k tiles deep) to `wave` blocks at a time, `wave` being the blocks the GPU runs at once (one a
/// multiprocessor). A grid of whole tiles rarely fills its last wave (4096²: 512 tiles on 132
/// SMs, 3.88 waves, the 4th 88% full, so the multiply takes 4 tile times). Stream-K runs the
/// first `waves * wave` tiles whole, through `matmul_warptile_streamk_waves` over a grid of
/// `(wave, waves)` (its tile is the block's linear id, [`WarpTile::tile_origin`]); then
/// `matmul_warptile_streamk`, a grid of one row of `wave` blocks, shares the `sk_tiles()` left
/// over k iteration by k iteration ([`StreamK::range`]), so the multiply ends after 0.88 of a
/// tile time instead of 1. A tile cut between blocks is finished by the later ones, each adding
/// the partial sums the one before left in C. Two launches rather than one kernel with both
/// paths: inlined twice, the k loop ran 2.4% (whole tiles) and 5.5% (shared) slower than the
/// async kernel's own (BENCHMARKS.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamK {
    /// Output tiles along n.
    pub tiles_n: u32,
    /// Output tiles.
    pub tiles: u32,
    /// k tiles of an output tile.
    pub iters: u32,
    /// Blocks a wave: the grid's x in both launches.
    pub wave: u32,
    /// Waves of whole tiles (`tiles / wave`): the first launch's grid y.
    pub waves: u32,
}

impl StreamK {
    /// The schedule of an `m × n × k` multiply that `WARPTILE_ASYNC.supports`, `wave` blocks at
    /// a time (the host's `matmul::stream_k` picks `wave` for a GPU; the row kernel reads it
    /// from its grid). Defined for any input: a `wave` of 0 is taken as 1 (a grid has at least
    /// one block), and a tile count past `u32::MAX` (m and n near 2^32, which no plan takes)
    /// saturates at `u32::MAX`. Its divisions are plain (the divisor `wave` is at least 1), with
    /// `checked_div` (no panic path) ptxas made the row kernel 6% slower (4096³: 691 against
    /// 650 µs).
    #[inline(always)]
    pub const fn new(m: u32, n: u32, k: u32, wave: u32) -> StreamK {
        StreamK::of(m, n, k, wave, false)
    }
    /// The schedule of any `m × n × k` multiply for stage 11's guarded kernels: as [`StreamK::new`],
    /// but partial tiles of C and a partial last k tile count as whole ones.
    #[inline(always)]
    pub const fn covering(m: u32, n: u32, k: u32, wave: u32) -> StreamK {
        StreamK::of(m, n, k, wave, true)
    }
    /// [`StreamK::new`], or with `edge` [`StreamK::covering`]: whole tiles (and k tiles)
    /// counted rounding down, or up.
    #[inline(always)]
    pub const fn of(m: u32, n: u32, k: u32, wave: u32, edge: bool) -> StreamK {
        let wave = if wave == 0 { 1 } else { wave };
        let cfg = WARPTILE_ASYNC;
        let tiles_n = if edge { n.div_ceil(cfg.bn) } else { n / cfg.bn };
        let tiles_m = if edge { m.div_ceil(cfg.bm) } else { m / cfg.bm };
        let tiles = tiles_m as u64 * tiles_n as u64;
        let tiles = if tiles > u32::MAX as u64 { u32::MAX } else { tiles as u32 };
        StreamK { tiles_n, tiles, iters: cfg.k_tiles(k, edge), wave, waves: tiles / wave }
    }
    /// The grid of the whole tiles (`matmul_warptile_streamk_waves`): `(wave, waves)`.
    pub const fn whole_grid(self) -> (u32, u32) {
        (self.wave, self.waves)
    }
    /// The grid of the shared row (`matmul_warptile_streamk`): `(wave, 1)`.
    pub const fn row_grid(self) -> (u32, u32) {
        (self.wave, 1)
    }
    /// Tiles shared by the row (the first `waves * wave` are whole tiles, in order): 0 where
    /// the whole waves take every tile, and for fields set by hand whose whole waves claim more
    /// tiles than `tiles` (no underflow).
    pub const fn sk_tiles(self) -> u32 {
        let whole = self.waves as u64 * self.wave as u64;
        if whole < self.tiles as u64 { self.tiles - whole as u32 } else { 0 }
    }
    /// The k iterations the row shares out: `sk_tiles() * iters` (below 2^64).
    const fn work(self) -> u64 {
        self.sk_tiles() as u64 * self.iters as u64
    }
    /// `(row0, col0)` of output tile `tile` (row-major over the tiles), or `None` for a tile
    /// past `tiles` (and, for fields set by hand, a corner past `u32::MAX`).
    pub const fn origin(self, tile: u32) -> Option<(u32, u32)> {
        if tile >= self.tiles {
            return None;
        }
        let tiles_n = if self.tiles_n == 0 { 1 } else { self.tiles_n };
        let row0 = (tile / tiles_n) as u64 * WARPTILE_ASYNC.bm as u64;
        let col0 = (tile % tiles_n) as u64 * WARPTILE_ASYNC.bn as u64;
        if row0 > u32::MAX as u64 || col0 > u32::MAX as u64 {
            return None;
        }
        Some((row0 as u32, col0 as u32))
    }
    /// The k iterations `lo..hi` block `x` of the row computes, counted over the shared tiles
    /// (iteration `i` is k tile `i % iters` of tile `waves * wave + i / iters`): an even share,
    /// shorter than a tile (`sk_tiles < wave`), so a block cuts at most two tiles. Empty for a
    /// block past the row (`x >= wave`: at the end, `(work, work)`) and for a row of no blocks
    /// (fields set by hand: `(0, 0)`). Computed in 128 bits: `x * work` passes 64 for waves past
    /// 2^18 blocks.
    pub const fn range(self, x: u32) -> (u64, u64) {
        let work = self.work();
        if self.wave == 0 {
            return (0, 0);
        }
        if x >= self.wave {
            return (work, work);
        }
        let (work, wave) = (work as u128, self.wave as u128);
        ((x as u128 * work / wave) as u64, ((x as u128 + 1) * work / wave) as u64)
    }
    /// The block of the row whose range holds iteration `i`, or `None` where no block's does:
    /// `i` at or past the `sk_tiles() * iters` iterations shared (none at all when every tile
    /// is a whole wave's), or a row of no blocks (fields set by hand).
    pub const fn owner(self, i: u64) -> Option<u32> {
        let work = self.work();
        if i >= work || self.wave == 0 {
            return None;
        }
        // Below `wave`: (i + 1) <= work. In 128 bits, as `range`.
        Some((((i as u128 + 1) * self.wave as u128 - 1) / work as u128) as u32)
    }
    /// Block `x`'s `u`-th segment, `(tile, k0, k1)`: k tiles `k0..k1` of `tile`, from the top of
    /// its range down, or `None` past the last. The top one is the start of the tile it shares
    /// with the next block (its sums are published for that block first), the bottom one the
    /// end of the tile it shares with the previous one (which published long before).
    pub const fn segment(self, x: u32, u: u32) -> Option<(u32, u32, u32)> {
        self.segment_in(self.range(x), u)
    }

    /// The `u`-th segment of the range `lo..hi` ([`StreamK::segment`]; the row kernel's own form
    /// passes its own range). A range below `work` keeps `t < sk_tiles()`, so the tile is below
    /// `tiles`: no overflow.
    #[inline(always)]
    const fn segment_in(self, (lo, hi): (u64, u64), u: u32) -> Option<(u32, u32, u32)> {
        let iters = self.iters as u64;
        if hi <= lo || iters == 0 || u as u64 > (hi - 1) / iters - lo / iters {
            return None;
        }
        let t = (hi - 1) / iters - u as u64;
        let first = t * iters;
        let k0 = lo.saturating_sub(first);
        let k1 = if hi < first + iters { hi - first } else { iters };
        Some(((self.waves * self.wave) + t as u32, k0 as u32, k1 as u32))
    }
}

/// The row kernel's own forms of [`StreamK::origin`], [`StreamK::range`], [`StreamK::owner`] and
/// [`StreamK::segment`]: plain 32- and 64-bit arithmetic, with a division by zero where no
/// iteration is shared. ptxas schedules these faster than the checked forms (with `checked_div`
/// the row kernel ran 6% slower, 4096³: 691 against 650 µs), and they give the same values
/// wherever the kernel runs them: a schedule of [`StreamK::of`] with a wave of at most
/// [`SK_MAX_WAVE`] blocks (the host launches no more), block `x` below the wave, tiles below
/// `tiles`, and `owner` only of an iteration a block's range holds (`tile`'s first k tile,
/// `k0 > 0`, minus one). Private to the kernel and the test that compares them with the public
/// forms, so no caller reaches their panics.
#[cfg(any(test, target_arch = "nvptx64"))]
impl StreamK {
    #[inline(always)]
    const fn kernel_origin(self, tile: u32) -> (u32, u32) {
        WARPTILE_ASYNC.tile_origin(tile, self.tiles_n)
    }
    #[inline(always)]
    const fn kernel_range(self, x: u32) -> (u64, u64) {
        let work = (self.tiles - self.waves * self.wave) as u64 * self.iters as u64;
        (x as u64 * work / self.wave as u64, (x as u64 + 1) * work / self.wave as u64)
    }
    #[inline(always)]
    const fn kernel_owner(self, i: u64) -> u32 {
        let work = (self.tiles - self.waves * self.wave) as u64 * self.iters as u64;
        (((i + 1) * self.wave as u64 - 1) / work) as u32
    }
    #[inline(always)]
    const fn kernel_segment(self, x: u32, u: u32) -> Option<(u32, u32, u32)> {
        self.segment_in(self.kernel_range(x), u)
    }
}

crate::hopper_kernel! {
    #[launch_bounds(256, 1)]
    /// Stream-K's whole waves ([`StreamK`]): `matmul_warptile_async`, but block `i` (linear id,
    /// `blockIdx.y * gridDim.x + blockIdx.x`) computes tile `i`, so a grid of SMs × waves runs
    /// the first `waves * wave` tiles in order, a whole tile each. The same transactions a tile
    /// as `matmul_warptile_async`. A kernel of its own: the division that finds the tile moved
    /// ptxas's registers, and the async kernel ran 0.7% slower at 2048³ and 8192³ with it.
    pub unsafe fn matmul_warptile_streamk_waves(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded plan guarantees (see `warptile_async`).
        unsafe { warptile_async::<AsyncRing, 8, 16, WTA_NA, WTA_NB, true>(WARPTILE_ASYNC, a, b, c, m, n, k) }
    }
}

crate::hopper_kernel! {
    #[launch_bounds(256, 1)]
    /// Stream-K's shared row ([`StreamK`]): after `matmul_warptile_streamk_waves` has run the
    /// whole waves, one row of `wave` blocks (one a multiprocessor) splits the leftover tiles' k
    /// iterations evenly, so the multiply ends when the GPU has done its work instead of a wave
    /// later. Each cut tile's partial sums go through C: the block with its first k tiles stores
    /// them and sets a flag (`st.release.gpu`); the next waits for it (`ld.acquire.gpu`), adds
    /// its own and stores, and so on. The async kernel's transactions for the k tiles it
    /// computes, plus, per cut, one read and one write of a 128 × 256 tile of C.
    pub unsafe fn matmul_warptile_streamk(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded plan guarantees (see `warptile_streamk`).
        unsafe { hopper_device::warptile_streamk::<AsyncRing, 8, 16, WTA_NA, WTA_NB>(a, b, c, m, n, k) }
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
pub(super) mod hopper_device {
    use super::*;
    use crate::matmul::edge::store_tile_edge;
    use crate::matmul::warptile_async::hopper_device::{KLoop, store_tile};
    use crate::prelude::{async_copy, atomic, thread};

    /// Block `x` of a stream-K row sets `SK_FLAGS[x]` once its partial sums for the next block
    /// are in C; that block waits for it and clears it, so all are zero between launches (a
    /// module's launches are queued on one stream: never two at once).
    static mut SK_FLAGS: [u32; SK_MAX_WAVE as usize] = [0; SK_MAX_WAVE as usize];

    /// `matmul_warptile_streamk` (the k loop `L`): block `x` of the one-row grid computes its
    /// share of the tiles the whole waves left ([`StreamK::segment`]), adding to and publishing
    /// partial sums.
    ///
    /// # Safety
    /// As [`warptile_async`] for `WARPTILE_ASYNC` and `L`, but the launch is `StreamK::row_grid`
    /// of this shape's schedule (`StreamK::covering`'s with an `L::EDGE` loop, which takes any
    /// shape as `edge_k_loop` does; the host's `matmul::stream_k`: a wave of at most
    /// `SK_MAX_WAVE`), queued after its whole waves, and no other launch of this kernel of the
    /// same module runs at the same time. A block may wait for an earlier one of the row (never a later one), which was
    /// dispatched first.
    #[inline(always)]
    pub(in crate::matmul) unsafe fn warptile_streamk<
        L: KLoop,
        const TM: usize,
        const TN: usize,
        const NA: usize,
        const NB: usize,
    >(
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        m: u32,
        n: u32,
        k: u32,
    ) {
        let cfg = WARPTILE_ASYNC;
        let x = thread::block_idx_x();
        let sk = StreamK::of(m, n, k, thread::grid_dim_x(), L::EDGE);
        let flags = (&raw mut SK_FLAGS).cast::<u32>();
        // SAFETY (whole body): tiles are below `sk.tiles` (whole tiles of C: `origin`), k tiles
        // below `iters`; flags are indexed by blocks of the row, below `wave <= SK_MAX_WAVE`.
        // The rest is `KLoop::run`'s and `store_tile`'s contract.
        unsafe {
            let mut u = 0;
            while let Some((tile, k0, k1)) = sk.kernel_segment(x, u) {
                let origin = sk.kernel_origin(tile);
                let mut acc = [[0.0f32; TN]; TM];
                L::run::<TM, TN, NA, NB>(cfg, a, b, m, n, k, origin, (k0, k1), &mut acc);
                if L::EDGE {
                    // Stage 11's ring copies its last tile again past the range's end, into
                    // stages nothing reads; those copies may still be in flight, and the next
                    // segment's first copies go to the same addresses: two asynchronous writes
                    // in no defined order (racecheck's write-write hazards). Drain them first.
                    async_copy::wait_for(0);
                }
                // Everyone is done with the ring (the next segment refills it) and C.
                thread::sync_threads();
                if k0 > 0 {
                    // The tile's earlier k tiles are another block's: wait for its sums.
                    let first = (tile - sk.waves * sk.wave) as u64 * sk.iters as u64 + k0 as u64;
                    let before = flags.add(sk.kernel_owner(first - 1) as usize);
                    if thread::thread_idx_x() == 0 {
                        while atomic::load_acquire_u32(before) == 0 {}
                        *before = 0;
                    }
                    thread::sync_threads();
                }
                if L::EDGE {
                    store_tile_edge::<TM, TN>(cfg, c, (m, n), origin, &acc, k0 > 0);
                } else {
                    store_tile::<TM, TN>(cfg, c, n, origin, &acc, k0 > 0);
                }
                if k1 < sk.iters {
                    // The tile goes on in the next block: publish these sums to it.
                    atomic::fence_gpu();
                    thread::sync_threads();
                    if thread::thread_idx_x() == 0 {
                        atomic::store_release_u32(flags.add(x as usize), 1);
                    }
                }
                u += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_k_schedule_is_defined_for_any_input() {
        // A wave of 0 blocks is one block (no division by zero): every tile a whole wave.
        let sk = StreamK::new(4096, 4096, 4096, 0);
        assert_eq!((sk.wave, sk.tiles, sk.waves, sk.sk_tiles()), (1, 512, 512, 0));
        assert_eq!(sk.range(0), (0, 0));
        assert_eq!(sk.segment(0, 0), None);
        // A tile count past u32 (m and n near 2^32) saturates instead of overflowing.
        let huge = StreamK::new(u32::MAX, u32::MAX, 16, 132);
        assert_eq!((huge.tiles_n, huge.tiles), (u32::MAX / WARPTILE_ASYNC.bn, u32::MAX));
        assert_eq!(huge.waves, u32::MAX / 132);
        // Valid shapes are unchanged: 4096² on 132 blocks, 3 whole waves and 116 shared tiles.
        let sk = StreamK::new(4096, 4096, 4096, 132);
        assert_eq!((sk.tiles_n, sk.tiles, sk.iters, sk.waves, sk.sk_tiles()), (16, 512, 256, 3, 116));
    }

    #[test]
    fn owner_is_none_where_no_block_holds_the_iteration() {
        // One tile on a wave of one: a whole wave, nothing shared (this divided by zero).
        let sk = StreamK::new(128, 256, 16, 1);
        assert_eq!((sk.sk_tiles(), sk.owner(0)), (0, None));
        // 116 tiles of 256 k tiles shared by 132 blocks: the last iteration is the last
        // block's, the one after it nobody's (u64::MAX overflowed `i + 1`).
        let sk = StreamK::new(4096, 4096, 4096, 132);
        assert_eq!(sk.owner(116 * 256 - 1), Some(131));
        assert_eq!((sk.owner(116 * 256), sk.owner(u64::MAX)), (None, None));
    }

    #[test]
    fn hand_set_fields_give_empty_schedules_not_panics() {
        let sk = StreamK::new(4096, 4096, 4096, 132);
        // Whole waves claiming more tiles than there are (underflowed `tiles - waves * wave`).
        let over = StreamK { waves: 5, ..sk };
        assert_eq!((over.sk_tiles(), over.range(0), over.owner(0), over.segment(0, 0)), (0, (0, 0), None, None));
        // A row of no blocks (divided `range` by zero).
        let none = StreamK { wave: 0, waves: 0, ..sk };
        assert_eq!((none.range(0), none.owner(0), none.segment(0, 0)), ((0, 0), None, None));
        // Blocks past the row and tiles past the grid have nothing.
        assert_eq!((sk.range(132), sk.segment(132, 0)), ((116 * 256, 116 * 256), None));
        assert_eq!((sk.origin(511), sk.origin(512)), (Some((31 * 128, 15 * 256)), None));
        // A corner past u32 (tile 2^25 of one-tile rows is row 2^32).
        assert_eq!(StreamK { tiles_n: 1, tiles: u32::MAX, ..sk }.origin(1 << 25), None);
    }

    #[test]
    fn a_wave_of_billions_shares_its_iterations_without_overflow() {
        // 2^31 tiles and 2^28 - 1 k tiles on a wave of u32::MAX blocks: x * work passes 2^64.
        let sk = StreamK::new(128 << 16, 256 << 15, u32::MAX, u32::MAX);
        let work = (1u64 << 31) * ((1 << 28) - 1);
        assert_eq!((sk.waves, sk.sk_tiles(), sk.iters), (0, 1 << 31, (1 << 28) - 1));
        assert_eq!(sk.range(u32::MAX - 1).1, work);
        assert_eq!(sk.owner(work - 1), Some(u32::MAX - 1));
        assert_eq!(sk.range(0).0, 0);
    }

    #[test]
    fn public_forms_agree_with_the_kernels_where_the_kernel_runs() {
        // Schedules of `of` with waves up to SK_MAX_WAVE, whole and partial tiles.
        let shapes = [(4096, 4096, 4096), (1280, 2304, 16), (4095, 4097, 1000), (384, 1280, 112), (129, 257, 17)];
        for (m, n, k) in shapes {
            for wave in [1, 3, 100, 132, SK_MAX_WAVE] {
                for edge in [false, true] {
                    let sk = StreamK::of(m, n, k, wave, edge);
                    for tile in 0..sk.tiles {
                        assert_eq!(sk.origin(tile), Some(sk.kernel_origin(tile)));
                    }
                    for x in 0..sk.wave {
                        assert_eq!(sk.range(x), sk.kernel_range(x), "{sk:?} {x}");
                        for u in 0..3 {
                            assert_eq!(sk.segment(x, u), sk.kernel_segment(x, u), "{sk:?} {x} {u}");
                        }
                    }
                    for i in 0..sk.sk_tiles() as u64 * sk.iters as u64 {
                        assert_eq!(sk.owner(i), Some(sk.kernel_owner(i)), "{sk:?} {i}");
                    }
                }
            }
        }
    }
}
