//! Stage 6, warptile: regblock's tile dealt to warps (64 × 32, lanes interleaved), k steps of 16.
//! Fragment loads pair up: 8 wavefronts a warp and k step, not 12; half the barriers per FMA.
//!
//! [`WarpTile`] is the shape every warp-tiled kernel takes, `warptile_async`'s and `stream_k`'s too:
//! this stage holds the library's 128 × 128 kernel, its small-grid shape and its guarded one for
//! any shape, each with its sm_90 build where that one differs.

#[cfg(target_arch = "nvptx64")]
use super::index::row_major;
use crate::kernel;
use crate::launch::{DEFAULT_SHARED_BYTES, MAX_BLOCK_THREADS};
#[cfg(target_arch = "nvptx64")]
use crate::prelude::{math::fma, mem, shared, thread};

/// A warp-tiled kernel's shape. The block computes a `bm × bn` tile of C and walks k in steps of
/// `bk`; each warp owns a `warp_rows() × warp_cols()` part of it, its 32 lanes arranged `ly`
/// rows by `lx()` columns; each lane computes `tm × tn` outputs split into 4 × 4 sub-blocks, the
/// sub-blocks of one lane `ly * 4` rows (`lx() * 4` columns) apart, so that one `ld.shared.v4` of
/// a warp reads `ly` (`lx()`) contiguous 16-byte vectors and one `st.global.v4` writes `lx()`
/// contiguous vectors of each of `ly` rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WarpTile {
    /// Rows of C a block computes.
    pub bm: u32,
    /// Columns of C a block computes.
    pub bn: u32,
    /// k step: the depth of one shared stage.
    pub bk: u32,
    /// Rows of C a thread computes (a multiple of 4).
    pub tm: u32,
    /// Columns of C a thread computes (a multiple of 4).
    pub tn: u32,
    /// Lane rows of a warp (`32 / ly` lane columns).
    pub ly: u32,
    /// Floats of padding after each Aᵀ row in shared memory (a multiple of 4).
    pub pad: u32,
    /// Lane bits alternate between lane row and column ([`WarpTile::lane_coords`]); `false`:
    /// lanes row-major (`lane / lx`, `lane % lx`).
    pub interleave: bool,
}

impl WarpTile {
    /// Lane columns of a warp.
    pub const fn lx(self) -> u32 {
        crate::WARP_SIZE / self.ly
    }
    /// Rows of C one warp computes.
    pub const fn warp_rows(self) -> u32 {
        self.tm * self.ly
    }
    /// Columns of C one warp computes.
    pub const fn warp_cols(self) -> u32 {
        self.tn * self.lx()
    }
    /// Warps along n in a block.
    pub const fn warps_n(self) -> u32 {
        self.bn / self.warp_cols()
    }
    /// Threads per block (1-D launch; every coordinate derives from this, never from `blockDim`).
    pub const fn threads(self) -> u32 {
        crate::WARP_SIZE * (self.bm / self.warp_rows()) * self.warps_n()
    }
    /// 16-byte vectors of A each thread loads per k step.
    pub const fn a_vectors(self) -> u32 {
        self.bm * self.bk / 4 / self.threads()
    }
    /// 16-byte vectors of B each thread loads per k step.
    pub const fn b_vectors(self) -> u32 {
        self.bk * self.bn / 4 / self.threads()
    }
    /// Floats from one Aᵀ row to the next in shared memory.
    pub const fn at_stride(self) -> u32 {
        self.bm + self.pad
    }
    /// Where B starts in a stage, in floats (after Aᵀ's `bk` padded rows).
    pub const fn b_offset_in_stage(self) -> u32 {
        self.bk * self.at_stride()
    }
    /// Floats of one shared stage: Aᵀ (`bk` rows of `at_stride()`), then B (`bk` rows of `bn`).
    pub const fn stage_floats(self) -> u32 {
        self.b_offset_in_stage() + self.bk * self.bn
    }
    /// Dynamic shared memory of a block: two stages.
    pub const fn shared_bytes(self) -> u32 {
        2 * self.stage_floats() * 4
    }
    /// Grid over an `m × n` C: partial tiles included (the edge kernel's grid; for the aligned
    /// kernel m and n are multiples of the tile and it is exact).
    pub const fn grid(self, m: u32, n: u32) -> (u32, u32) {
        (n.div_ceil(self.bn), m.div_ceil(self.bm))
    }
    /// `(row0, col0)`: the corner of block `(bx, by)`'s `bm × bn` tile of C.
    #[inline(always)]
    pub const fn block_origin(self, bx: u32, by: u32) -> (u32, u32) {
        (by * self.bm, bx * self.bn)
    }
    /// k tiles a launch walks: the guarded kernel (`edge`) includes a partial last one.
    #[inline(always)]
    pub const fn k_tiles(self, k: u32, edge: bool) -> u32 {
        if edge { k.div_ceil(self.bk) } else { k / self.bk }
    }
    /// Columns of A (rows of B) left from k tile `kt`'s start (`kt * bk < k`): the guarded
    /// kernel's partial last tile reads those below it only.
    #[inline(always)]
    pub const fn k_left(self, kt: u32, k: u32) -> u32 {
        k - kt * self.bk
    }
    /// Element of A where the vector at `(_, col)` (from `a_load`) starts in k tile `kt`, given
    /// `row_start`, the element where its source row starts (`a_src_row * k`, hoisted out of the
    /// k loop by the kernel). The guarded kernel reads its 4 floats one by one from there.
    #[inline(always)]
    pub const fn a_index(self, row_start: u64, kt: u32, (_, col): (u32, u32)) -> u64 {
        row_start + kt as u64 * self.bk as u64 + col as u64
    }
    /// Element of B where row `kt * bk + row` starts, for the vector at `(row, _)` (from
    /// `b_load`) in k tile `kt`; its columns are `b_src_col`.
    #[inline(always)]
    pub const fn b_row_start(self, kt: u32, (row, _): (u32, u32), n: u64) -> u64 {
        (kt as u64 * self.bk as u64 + row as u64) * n
    }
    /// Whether the unguarded kernel takes this shape: whole tiles in m, n and k.
    pub const fn supports(self, m: u32, n: u32, k: u32) -> bool {
        m > 0 && n > 0 && k > 0 && m.is_multiple_of(self.bm) && n.is_multiple_of(self.bn) && k.is_multiple_of(self.bk)
    }
    /// Whether the shape parameters are consistent (every assumption the kernel makes). Any
    /// shape may be asked, one set by hand too: the other methods are the kernels' index math,
    /// defined for consistent shapes (on others they may divide by zero or overflow), so this
    /// one calls none of them.
    pub const fn is_consistent(self) -> bool {
        self.tiles_consistent() && self.stage_bytes_wide() * 2 <= DEFAULT_SHARED_BYTES as u128
    }

    /// [`WarpTile::is_consistent`] but for the shared memory of its two stages. In 64 and 128
    /// bits, each test only once those it divides by hold: `false` for a shape with a zero or
    /// sizes whose products pass `u32`, where `threads()` divided by zero or overflowed.
    pub(super) const fn tiles_consistent(self) -> bool {
        let (bm, bn, bk) = (self.bm as u64, self.bn as u64, self.bk as u64);
        let (tm, tn, ly) = (self.tm as u64, self.tn as u64, self.ly as u64);
        let warp = crate::WARP_SIZE as u64;
        if ly == 0 || !warp.is_multiple_of(ly) || tm == 0 || tn == 0 || bm == 0 || bn == 0 {
            return false;
        }
        // `warp_rows()` and `warp_cols()`: below 2^37.
        let (warp_rows, warp_cols) = (tm * ly, tn * (warp / ly));
        if !bm.is_multiple_of(warp_rows) || !bn.is_multiple_of(warp_cols) {
            return false;
        }
        // `threads()`, in 128 bits: the two quotients' product may pass 2^64.
        let t = warp as u128 * (bm / warp_rows) as u128 * (bn / warp_cols) as u128;
        if t > MAX_BLOCK_THREADS as u128 {
            return false;
        }
        tm.is_multiple_of(4)
            && tn.is_multiple_of(4)
            && self.pad.is_multiple_of(4)
            // Every thread loads whole vectors, and the A loads cover 2 k-chunks of every row per
            // pass (`a_load`), so bk is a multiple of 8 and a pass covers whole rows.
            && bk.is_multiple_of(8)
            && (bm as u128 * bk as u128 / 4).is_multiple_of(t)
            && (bk as u128 * bn as u128 / 4).is_multiple_of(t)
            // A warp's 32 A vectors are 16 whole rows (`a_load`).
            && bm.is_multiple_of(warp / 2)
            && t.is_multiple_of(bn as u128 / 4)
    }

    /// `stage_floats() * 4` in 128 bits, for the consistency checks (it passes `u32` for
    /// shapes set by hand).
    pub(super) const fn stage_bytes_wide(self) -> u128 {
        let (bm, bn, bk, pad) = (self.bm as u128, self.bn as u128, self.bk as u128, self.pad as u128);
        (bk * (bm + pad) + bk * bn) * 4
    }

    /// `(warp row, warp column, lane row, lane column)` of thread `t`. With `interleave` the
    /// lane's bits alternate between its row and its column, row first (bit 0 a row bit, bit 1
    /// a column bit, ..., until one runs out): lanes `l` and `l ^ 1` then share a column and `l`
    /// and `l ^ 2` a row, so every B fragment load pairs up on `l ^ 1` and every A fragment
    /// load on `l ^ 2`, and both take 2 wavefronts instead of 4 (the paired-load rule,
    /// `coalesce::model`). Without, lanes are row-major.
    #[inline(always)]
    pub const fn thread(self, t: u32) -> (u32, u32, u32, u32) {
        let (warp, lane) = (t / crate::WARP_SIZE, t % crate::WARP_SIZE);
        // Row-major written out here, not through `lane_coords`: with the call, LLVM laid out
        // the guarded kernel differently and ptxas for sm_75 and sm_80 spilled 12 bytes.
        if !self.interleave {
            return (warp / self.warps_n(), warp % self.warps_n(), lane / self.lx(), lane % self.lx());
        }
        let (ly, lx) = self.lane_coords(lane);
        (warp / self.warps_n(), warp % self.warps_n(), ly, lx)
    }

    /// `(lane row, lane column)` of `lane`: its bits dealt alternately to the row and the
    /// column, row first, the rest to whichever has bits left (see [`WarpTile::thread`]).
    #[inline(always)]
    pub const fn lane_coords(self, lane: u32) -> (u32, u32) {
        if !self.interleave {
            return (lane / self.lx(), lane % self.lx());
        }
        let (a, b) = (self.ly.trailing_zeros(), self.lx().trailing_zeros());
        let m = if a < b { a } else { b };
        let (mut y, mut x, mut i) = (0, 0, 0);
        while i < m {
            y |= ((lane >> (2 * i)) & 1) << i;
            x |= ((lane >> (2 * i + 1)) & 1) << i;
            i += 1;
        }
        let rest = lane >> (2 * m);
        if a > b { (y | rest << m, x) } else { (y, x | rest << m) }
    }

    /// Row inside the block's tile of thread `t`'s accumulator row `i` (0..tm): sub-block
    /// `i / 4` of the warp's rows, lane row `ly`, row `i % 4` of the sub-block.
    #[inline(always)]
    pub const fn out_row(self, t: u32, i: u32) -> u32 {
        let (wy, _, ly, _) = self.thread(t);
        wy * self.warp_rows() + (i / 4) * (self.ly * 4) + ly * 4 + i % 4
    }

    /// First of the 4 columns inside the block's tile of thread `t`'s accumulator columns
    /// `4h .. 4h + 4` (`h` in 0..tn/4).
    #[inline(always)]
    pub const fn out_col(self, t: u32, h: u32) -> u32 {
        let (_, wx, _, lx) = self.thread(t);
        wx * self.warp_cols() + h * (self.lx() * 4) + lx * 4
    }

    /// `(row, col)` inside the `bm × bk` tile of A of the 16-byte vector `v` of thread `t`:
    /// a warp takes 16 rows × the same 2 k-chunks (32 contiguous bytes of each row), and
    /// the passes walk the rows, then the next 2 chunks.
    #[inline(always)]
    pub const fn a_load(self, t: u32, v: u32) -> (u32, u32) {
        let threads = self.threads();
        if threads.is_multiple_of(2 * self.bm) {
            // The same form with v kept out of the row, so the compiler sees that all of a
            // thread's A vectors lie in one row (one pointer, immediate offsets).
            ((t / 2) % self.bm, ((t % 2) + 2 * (t / (2 * self.bm)) + v * (threads / self.bm)) * 4)
        } else {
            let idx = t + v * threads;
            ((idx / 2) % self.bm, ((idx % 2) + 2 * (idx / (2 * self.bm))) * 4)
        }
    }

    /// `(row, col)` inside the `bk × bn` tile of B of the 16-byte vector `v` of thread `t`:
    /// a warp reads 512 contiguous bytes of one row.
    #[inline(always)]
    pub const fn b_load(self, t: u32, v: u32) -> (u32, u32) {
        // threads is a multiple of bn / 4 (`is_consistent`): every vector of a thread is in the
        // same columns.
        (t / (self.bn / 4) + v * (self.threads() / (self.bn / 4)), (t % (self.bn / 4)) * 4)
    }

    /// Row of A the vector at `(row, _)` (from `a_load`) of the block whose rows start at `row0`
    /// is read from: for the guarded kernel (`clamp`) rows past m read row m - 1 instead (their
    /// products land in rows of C that are never stored).
    #[inline(always)]
    pub const fn a_src_row(self, row0: u32, (row, _): (u32, u32), m: u32, clamp: bool) -> u32 {
        let r = row0 + row;
        if clamp && r >= m { m - 1 } else { r }
    }

    /// Column of B element `j` of the vector at `(_, col)` (from `b_load`) of the block whose
    /// columns start at `col0` is read from, clamped to n - 1 for the guarded kernel.
    #[inline(always)]
    pub const fn b_src_col(self, col0: u32, (_, col): (u32, u32), j: u32, n: u32, clamp: bool) -> u32 {
        let c = col0 + col + j;
        if clamp && c >= n { n - 1 } else { c }
    }

    /// Float offset in a stage where element `j` of the A vector loaded at `(row, col)` goes:
    /// A's `(row, col + j)` is Aᵀ's `(col + j, row)`.
    #[inline(always)]
    pub const fn at_offset(self, (row, col): (u32, u32), j: u32) -> u32 {
        (col + j) * self.at_stride() + row
    }

    /// Float offset in a stage of the B vector loaded at `(row, col)` (stored as loaded).
    #[inline(always)]
    pub const fn b_offset(self, (row, col): (u32, u32)) -> u32 {
        self.b_offset_in_stage() + row * self.bn + col
    }

    /// Float offset in a stage of the 4 Aᵀ values thread `t` reads at k step `kk` for its row
    /// sub-block `g` (rows `out_row(t, 4g) ..`).
    #[inline(always)]
    pub const fn a_frag(self, kk: u32, t: u32, g: u32) -> u32 {
        kk * self.at_stride() + self.out_row(t, 4 * g)
    }

    /// Float offset in a stage of the 4 B values thread `t` reads at k step `kk` for its
    /// column sub-block `h` (columns `out_col(t, h) ..`).
    #[inline(always)]
    pub const fn b_frag(self, kk: u32, t: u32, h: u32) -> u32 {
        self.b_offset_in_stage() + kk * self.bn + self.out_col(t, h)
    }
}

/// The warp-tiled kernel's shape: a 128 × 128 block tile walked in k steps of 16, 8 warps of
/// 64 × 32 (lanes 8 × 4), 8 × 8 outputs a thread.
pub const WARPTILE: WarpTile = WarpTile { bm: 128, bn: 128, bk: 16, tm: 8, tn: 8, ly: 8, pad: 4, interleave: true };
/// The small-grid kernel's shape: 64 × 128 blocks of 4 warps of 32 × 64 (lanes 4 × 8), for
/// multiplies whose 128 × 128 grid cannot fill the GPU (1024³ is 64 blocks on 132 SMs).
pub const WARPTILE_SMALL: WarpTile =
    WarpTile { bm: 64, bn: 128, bk: 16, tm: 8, tn: 8, ly: 4, pad: 4, interleave: true };
/// The guarded kernel's shape: [`WARPTILE`] with lanes row-major. Interleaved, its fragment
/// loads pair up too, but ptxas for sm_75 and sm_80 spills 8 bytes (sm_90: none, so the Hopper
/// module's `matmul_warptile_edge_sm90` takes [`WARPTILE`] itself).
pub const WARPTILE_EDGE: WarpTile = WarpTile { interleave: false, ..WARPTILE };

/// Threads of a `matmul_warptile` / `matmul_warptile_edge` block (the launch bounds below).
pub const WT_THREADS: u32 = 256;
/// Threads of a `matmul_warptile_small` block.
pub const WT_SMALL_THREADS: u32 = 128;
/// The k step at which a warp-tiled kernel stores the next A tile into the other stage and
/// issues the next B tile's loads (`device::warptile`): half-way, 8 of 16, for the kernels of
/// the base module (`matmul_warptile`, `matmul_warptile_edge`).
pub const WT_SPLIT_AT: u32 = 8;
/// The split of `matmul_warptile_sm90` and `matmul_warptile_small`: 12 of 16. On the H100 it
/// ran 1.8–6% faster than 8 at 4096³ across calls (15: 0.6% slower than 12; 10 and 14 spill),
/// but under the 128-register cap ptxas for sm_75 and sm_80 spills 4–16 bytes at 12, so only
/// the sm_90 module and the uncapped small-grid kernel use it.
pub const WT_LATE_SPLIT_AT: u32 = 12;
const _: () = assert!(0 < WT_SPLIT_AT && WT_SPLIT_AT < WARPTILE.bk);
const _: () = assert!(0 < WT_LATE_SPLIT_AT && WT_LATE_SPLIT_AT < WARPTILE.bk && WT_LATE_SPLIT_AT < WARPTILE_SMALL.bk);
const _: () = assert!(WARPTILE.is_consistent() && WARPTILE_SMALL.is_consistent() && WARPTILE_EDGE.is_consistent());
const _: () = assert!(WARPTILE.threads() == WT_THREADS && WARPTILE_SMALL.threads() == WT_SMALL_THREADS);
// Two blocks of 256 threads a multiprocessor at 128 registers each: the occupancy the launch
// bounds of `matmul_warptile` ask ptxas for (65536 registers a multiprocessor).
const _: () = assert!(WT_THREADS * 2 * 128 <= 65_536);

/// The A and B values a warp-tiled thread `$t` reads at k step `$kk` of the stage at `$base`
/// (shape `$cfg`, its `tm` and `tn` being `$tm` and `$tn`): `tm / 4` 16-byte loads of Aᵀ, then
/// `tn / 4` of B (`WarpTile::a_frag`, `b_frag`). A macro, not a function, so each kernel's
/// k loop compiles exactly as written out (through a function, LLVM orders the six warp-tiled
/// kernels' address arithmetic differently). Use inside `unsafe`: `$base` is a 16-byte aligned
/// stage of `$cfg`'s layout in the block's shared memory.
#[cfg(target_arch = "nvptx64")]
macro_rules! warp_fragments {
    ($cfg:expr, $base:expr, $t:expr, $kk:expr, $tm:ident, $tn:ident) => {{
        let mut fa = [0.0f32; $tm];
        let mut fb = [0.0f32; $tn];
        let mut g = 0;
        while g < $tm / 4 {
            let x = *($base.add($cfg.a_frag($kk, $t, g as u32) as usize) as *const V4);
            fa[4 * g..4 * g + 4].copy_from_slice(&x.0);
            g += 1;
        }
        let mut h = 0;
        while h < $tn / 4 {
            let x = *($base.add($cfg.b_frag($kk, $t, h as u32) as usize) as *const V4);
            fb[4 * h..4 * h + 4].copy_from_slice(&x.0);
            h += 1;
        }
        (fa, fb)
    }};
}

/// `$acc += $cur.0 ⊗ $cur.1`: one k step's `$tm · $tn` FMAs of a warp-tiled thread, row by row,
/// unrolled by hand (a rolled loop would index the accumulators at run time, which puts them in
/// local memory).
#[cfg(target_arch = "nvptx64")]
macro_rules! outer_product {
    ($acc:ident, $cur:ident, $tm:ident, $tn:ident) => {
        unroll_tile!(@ i {
            if (i as usize) < $tm {
                unroll_tile!(@ j {
                    if (j as usize) < $tn {
                        let (i, j) = (i as usize, j as usize);
                        $acc[i][j] = fma($cur.0[i], $cur.1[j], $acc[i][j]);
                    }
                }; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
            }
        }; 0 1 2 3 4 5 6 7);
    };
}

/// The body of every warp-tiled kernel: `device::warptile` on the shape `$cfg` (its vector
/// counts as the literal array lengths it needs), guarded or not (`$edge`), splitting at k step
/// `$split`.
#[cfg(target_arch = "nvptx64")]
macro_rules! warptile_body {
    ($cfg:ident, $edge:literal, $split:ident, $a:ident, $b:ident, $c:ident, $m:ident, $n:ident, $k:ident) => {{
        const NA: usize = $cfg.a_vectors() as usize;
        const NB: usize = $cfg.b_vectors() as usize;
        // SAFETY: forwarded plan guarantees (see `warptile`).
        unsafe { device::warptile::<device::WholeTile, 8, 8, NA, NB, $edge, $split>($cfg, $a, $b, $c, $m, $n, $k) }
    }};
}
// `warptile_async`'s k loop reads and multiplies its fragments with these too.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
pub(super) use {outer_product, warp_fragments};

kernel! {
    #[launch_bounds(256, 2)]
    /// Warp tiling: what regblock does, with the block's 8 warps each owning a 64 × 32 part of
    /// the 128 × 128 tile and its 32 lanes laid out 8 × 4 over it, k steps of 16 instead of 8,
    /// and the next k step's fragments loaded while this step's FMAs run. Per k step a warp's
    /// A fragment loads read 8 contiguous 16-byte vectors and its B loads 4; the lanes' bits
    /// alternate between lane row and column (`WarpTile::thread`), so both loads pair up and
    /// take 2 wavefronts each: 8 a warp and k step (12 with lanes row-major, as in regblock's
    /// 16 × 2 lanes). Its 16 `st.global.v4` write 8 rows × 64 bytes. BK = 16 halves regblock's
    /// barriers and loop overhead per FMA (one barrier per 1024 FMAs a thread), and its one
    /// barrier a tile is enough because the next tile is stored into the other stage, last read
    /// before the previous barrier. The first fragments of the next tile are loaded right after
    /// that barrier, before the last FMAs of this one, so no warp waits on shared memory at a
    /// tile edge. A of the next tile is loaded at the start of a tile and stored half-way
    /// through (k step `WT_SPLIT_AT`), B loaded then and stored at the end, so at most 8
    /// registers a thread hold the next tile: 128 registers (the launch bounds) with no spills,
    /// two blocks, 16 warps, a multiprocessor. Aᵀ rows are padded by 16 bytes so the transposing
    /// stores of a warp (16 rows × 32 bytes of A) hit distinct banks. Assumes whole tiles and
    /// 16-byte aligned buffers (no bounds checks).
    pub unsafe fn matmul_warptile(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        warptile_body!(WARPTILE, false, WT_SPLIT_AT, a, b, c, m, n, k)
    }
}

crate::hopper_kernel! {
    #[launch_bounds(256, 2)]
    /// `matmul_warptile` built for sm_90 only, so it can hold the next A tile three quarters of
    /// the way through a tile (k step `WT_LATE_SPLIT_AT` of 16) and issue B's loads that late,
    /// which ptxas for sm_90 fits in 128 registers and ptxas for sm_75 and sm_80 does not: the
    /// same transactions, 1.8–6% faster on the H100 at 4096³ (BENCHMARKS.md). The library's
    /// kernel for whole tiles where the Hopper module is loaded.
    pub unsafe fn matmul_warptile_sm90(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        warptile_body!(WARPTILE, false, WT_LATE_SPLIT_AT, a, b, c, m, n, k)
    }
}

kernel! {
    #[launch_bounds(128, 2)]
    /// Warp tiling for small grids: `matmul_warptile` on 64 × 128 blocks of 4 warps (32 × 64 a
    /// warp, lanes 4 × 8). At 1024³ the 128 × 128 grid is 64 blocks and leaves half of the
    /// H100's 132 SMs idle; this grid is 128 blocks, about one a multiprocessor, so the
    /// registers are not capped at 128 (capped, ptxas spills): 3 blocks fit a multiprocessor.
    pub unsafe fn matmul_warptile_small(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        warptile_body!(WARPTILE_SMALL, false, WT_LATE_SPLIT_AT, a, b, c, m, n, k)
    }
}

kernel! {
    #[launch_bounds(256, 2)]
    /// Warp tiling for any shape: `matmul_warptile` with every global access guarded, for
    /// shapes that are not whole tiles or buffers that are not 16-byte aligned. Loads are single
    /// floats (a row of A or B need not start on a 16-byte boundary); rows of A past m and
    /// columns of B past n are clamped to the last one (read, never stored), so only the stores
    /// and the partial last k tile, in a branch the whole block takes, test bounds. Each thread
    /// still reads whole 16 bytes of a row, 4 loads of the same sectors.
    pub unsafe fn matmul_warptile_edge(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        warptile_body!(WARPTILE_EDGE, true, WT_SPLIT_AT, a, b, c, m, n, k)
    }
}

crate::hopper_kernel! {
    #[launch_bounds(256, 2)]
    /// `matmul_warptile_edge` built for sm_90 only, with `matmul_warptile`'s interleaved lanes
    /// ([`WARPTILE`]), which ptxas for sm_90 fits in 128 registers and ptxas for sm_75 and sm_80
    /// does not (8 bytes spilled): its A and B fragment loads pair up, 8 wavefronts a warp and
    /// k step instead of 12, the same global transactions. On the H100 1–1.5% faster at 4095³,
    /// 4097³ and 4000 × 4100 × 4033, 7% at 4096³. The library's kernel for shapes that are not
    /// whole tiles where the Hopper module is loaded.
    pub unsafe fn matmul_warptile_edge_sm90(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        warptile_body!(WARPTILE, true, WT_SPLIT_AT, a, b, c, m, n, k)
    }
}

#[cfg(target_arch = "nvptx64")]
pub(super) mod device {
    use super::*;
    use crate::matmul::index::V4;

    /// What a warp-tiled block works on and what becomes of its sums: by default
    /// ([`WholeTile`]) the tile of its block index over all of k, stored into C; split-K's
    /// blocks (stage 14) take a range of a tile's k and hand their sums on. The whole tile's
    /// store stays written out in `warptile` (`STORES`) rather than in a `finish` of its own:
    /// moved into a function, LLVM laid out `matmul_warptile` so that ptxas for sm_75 spilled.
    pub(in crate::matmul) trait TileJob {
        /// Whether the block stores its tile into C itself (else [`TileJob::finish`] takes its
        /// sums).
        const STORES: bool;
        /// `(row0, col0)`: the corner of the block's tile of C.
        fn origin(cfg: WarpTile, n: u32) -> (u32, u32);
        /// The k tiles `first..end` of the `tiles` of k a block of `cfg` walks: `first < tiles` even
        /// where the range is empty (the loop's first loads read tile `first`, and nothing is
        /// added).
        fn range(cfg: WarpTile, n: u32, k: u32, tiles: u32) -> (u32, u32);
        /// Whether the guarded kernel's loads may ever be 16-byte vectors ([`TileJob::vectors`]):
        /// a constant, so that a kernel without them compiles to the code it had before.
        const VECTORS: bool;
        /// Whether the guarded kernel may read whole k tiles as 16-byte vectors (k and n
        /// multiples of 4, both operands 16-byte aligned): `false` keeps every guarded load a
        /// float.
        fn vectors(a: *const f32, b: *const f32, n: u32, k: u32) -> bool;
        /// The block's sums, where it does not store them itself.
        ///
        /// # Safety
        /// As [`warptile`]'s; every thread of the block calls it.
        unsafe fn finish<const TM: usize, const TN: usize>(
            cfg: WarpTile,
            c: *mut f32,
            mn: (u32, u32),
            origin: (u32, u32),
            acc: &[[f32; TN]; TM],
        );
    }

    /// The tile of the block's index, all of k, stored into C.
    pub(in crate::matmul) struct WholeTile;

    impl TileJob for WholeTile {
        const STORES: bool = true;
        const VECTORS: bool = false;
        #[inline(always)]
        fn origin(cfg: WarpTile, _: u32) -> (u32, u32) {
            cfg.block_origin(thread::block_idx_x(), thread::block_idx_y())
        }
        #[inline(always)]
        fn range(_: WarpTile, _: u32, _: u32, tiles: u32) -> (u32, u32) {
            (0, tiles)
        }
        #[inline(always)]
        fn vectors(_: *const f32, _: *const f32, _: u32, _: u32) -> bool {
            false
        }
        #[inline(always)]
        unsafe fn finish<const TM: usize, const TN: usize>(
            _: WarpTile,
            _: *mut f32,
            _: (u32, u32),
            _: (u32, u32),
            _: &[[f32; TN]; TM],
        ) {
        }
    }

    /// The warp-tiled kernels for `cfg`, whose `tm`, `tn`, `a_vectors()` and `b_vectors()` are
    /// `TM`, `TN`, `NA` and `NB` (array lengths must be literal), each block doing `J`'s job.
    /// `EDGE` guards every global access. The next tile's A is loaded at the start of a tile and
    /// stored into the other stage at k step `SPLIT_AT` (`1..cfg.bk`), where B's loads go out, to
    /// be stored at the end: at most one operand's vectors are held in registers at a time.
    ///
    /// # Safety
    /// Buffers hold m·k, k·n and m·n floats; the launch is `cfg.grid(m, n)` blocks (or `J`'s
    /// grid) of `cfg.threads()` threads with `cfg.shared_bytes()` of shared memory. Without
    /// `EDGE`, additionally `cfg.supports(m, n, k)` and all three buffers start on 16-byte boundaries.
    #[inline(always)]
    pub(in crate::matmul) unsafe fn warptile<
        J: TileJob,
        const TM: usize,
        const TN: usize,
        const NA: usize,
        const NB: usize,
        const EDGE: bool,
        const SPLIT_AT: u32,
    >(
        cfg: WarpTile,
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        m: u32,
        n: u32,
        k: u32,
    ) {
        const { assert!(TM <= 8 && TN <= 16, "the FMA and store unrolls list 8 rows and 16 columns") };
        let s = shared::dynamic::<f32>();
        let t = thread::thread_idx_x();
        let (row0, col0) = J::origin(cfg, n);
        let (bk, stage) = (cfg.bk, cfg.stage_floats() as usize);
        let tiles = cfg.k_tiles(k, EDGE);
        // Only the last k tile can be partial, and only it checks k.
        let k_partial = EDGE && !k.is_multiple_of(bk);
        let (k64, n64) = (k as u64, n as u64);
        // Where this thread's A and B vectors come from. EDGE: rows of A past m and columns of
        // B past n are clamped to the last one: read (in bounds), they feed only outputs past m
        // or n, which are never stored.
        let mut a_at = [(0u32, 0u32); NA];
        let mut a_row = [0u64; NA];
        let mut v = 0;
        while v < NA {
            a_at[v] = cfg.a_load(t, v as u32);
            a_row[v] = cfg.a_src_row(row0, a_at[v], m, EDGE) as u64 * k64;
            v += 1;
        }
        let mut b_at = [(0u32, 0u32); NB];
        let mut v = 0;
        while v < NB {
            b_at[v] = cfg.b_load(t, v as u32);
            v += 1;
        }
        // The 4 columns of B this thread loads (the same for all its vectors: `b_load`).
        let mut b_col = [0u32; 4];
        let mut j = 0;
        while j < 4 {
            b_col[j] = cfg.b_src_col(col0, b_at[0], j as u32, n, EDGE);
            j += 1;
        }
        // Where `J` allows (split-K's kernel: k and n multiples of 4, A and B 16-byte aligned),
        // the guarded kernel's whole tiles of k read A as 16-byte vectors (clamped rows start
        // on 16-byte boundaries too), and B's where this thread's 4 columns are inside n.
        let a_vectors = EDGE && J::VECTORS && J::vectors(a, b, n, k);
        let b_vectors = a_vectors && b_col[3] == b_col[0] + 3;
        let mut acc = [[0.0f32; TN]; TM];
        // SAFETY (whole body): without EDGE the plan checked whole tiles, the buffer lengths,
        // 16-byte alignment and the launch, so every global vector below lies inside its matrix
        // (`WarpTile::a_load`, `b_load`, `out_row`, `out_col`); with EDGE every global index is
        // clamped or checked against m, n and k as it is formed. Shared offsets stay inside the
        // two stages launched (`WarpTile::stage_floats`); shared vectors are 16-byte aligned
        // (`at_stride`, `bn` and the offsets are multiples of 4 floats).
        unsafe {
            // Tile `kt` of A into registers. EDGE: 4 single-float loads a vector (a row of A
            // need not start on a 16-byte boundary); k is checked on the partial last tile
            // only, in a branch every thread of the block takes together.
            let load_a = |kt: u32| {
                let mut va = [[0.0f32; 4]; NA];
                let tail = k_partial && kt + 1 == tiles;
                // k columns left from this tile's start (kt * bk < k).
                let left = cfg.k_left(kt, k);
                let mut v = 0;
                while v < NA {
                    let p = a.add(cfg.a_index(a_row[v], kt, a_at[v]) as usize);
                    if !EDGE {
                        va[v] = mem::load_v4_f32(p as *const [f32; 4]);
                    } else if J::VECTORS && a_vectors && !tail {
                        va[v] = mem::load_v4_f32(p as *const [f32; 4]);
                    } else if !tail {
                        va[v] = [*p, *p.add(1), *p.add(2), *p.add(3)];
                    } else {
                        let mut j = 0;
                        while j < 4 {
                            va[v][j] = if a_at[v].1 + (j as u32) < left { *p.add(j) } else { 0.0 };
                            j += 1;
                        }
                    }
                    v += 1;
                }
                va
            };
            // Tile `kt` of B into registers (EDGE as `load_a`).
            let load_b = |kt: u32| {
                let mut vb = [[0.0f32; 4]; NB];
                let tail = k_partial && kt + 1 == tiles;
                let left = cfg.k_left(kt, k);
                let mut v = 0;
                while v < NB {
                    let row = b.add(cfg.b_row_start(kt, b_at[v], n64) as usize);
                    if !EDGE {
                        vb[v] = mem::load_v4_f32(row.add(b_col[0] as usize) as *const [f32; 4]);
                    } else if J::VECTORS && b_vectors && !tail {
                        vb[v] = mem::load_v4_f32(row.add(b_col[0] as usize) as *const [f32; 4]);
                    } else if !tail || b_at[v].0 < left {
                        let mut j = 0;
                        while j < 4 {
                            vb[v][j] = *row.add(b_col[j] as usize);
                            j += 1;
                        }
                    }
                    v += 1;
                }
                vb
            };
            // A into stage `st`, transposed (4 scalar stores a vector).
            let store_a = |st: usize, va: [[f32; 4]; NA]| {
                let base = s.add(st * stage);
                let mut v = 0;
                while v < NA {
                    let mut j = 0;
                    while j < 4 {
                        *base.add(cfg.at_offset(a_at[v], j as u32) as usize) = va[v][j];
                        j += 1;
                    }
                    v += 1;
                }
            };
            // B into stage `st`, as loaded.
            let store_b = |st: usize, vb: [[f32; 4]; NB]| {
                let base = s.add(st * stage);
                let mut v = 0;
                while v < NB {
                    *(base.add(cfg.b_offset(b_at[v]) as usize) as *mut V4) = V4(vb[v]);
                    v += 1;
                }
            };
            let frag = |st: usize, kk: u32| {
                let base = s.add(st * stage);
                warp_fragments!(cfg, base, t, kk, TM, TN)
            };
            let (first, end) = J::range(cfg, n, k, tiles);
            store_a(0, load_a(first));
            store_b(0, load_b(first));
            thread::sync_threads();
            let mut cur = frag(0, 0);
            let mut kt = first;
            while kt < end {
                let st = ((kt - first) % 2) as usize;
                // On the last tile the "next" tile is this one again (in bounds, no branch):
                // what it stores into the other stage is never read.
                let next_kt = if kt + 1 < end { kt + 1 } else { kt };
                // The next tile's global loads go out first, so their latency hides behind this
                // tile's arithmetic (ptxas may sink them, within its register budget).
                let mut va = load_a(next_kt);
                let mut vb = [[0.0f32; 4]; NB];
                // Straight-line over kk (LLVM leaves a loop this large rolled). Each step first
                // loads the next step's fragments, then does this step's TM·TN FMAs with the
                // ones loaded a step earlier, so shared-memory latency hides behind the FMAs.
                // The last step stores the next tile into the other stage (last read before the
                // previous barrier), waits at the tile's one barrier, and loads the next tile's
                // first fragments before its own FMAs.
                unroll_tile!(kk => {
                    if kk < bk {
                        if kk == SPLIT_AT {
                            store_a(1 - st, va);
                            va = [[0.0f32; 4]; NA];
                            vb = load_b(next_kt);
                        }
                        let next = if kk + 1 < bk {
                            frag(st, kk + 1)
                        } else {
                            store_b(1 - st, vb);
                            thread::sync_threads();
                            frag(1 - st, 0)
                        };
                        outer_product!(acc, cur, TM, TN);
                        cur = next;
                    }
                });
                let _ = va;
                kt += 1;
            }
            if !J::STORES {
                J::finish(cfg, c, (m, n), (row0, col0), &acc);
                return;
            }
            unroll_tile!(@ i {
                if (i as usize) < TM {
                    let r = row0 + cfg.out_row(t, i);
                    unroll_tile!(@ h {
                        if (h as usize) < TN / 4 {
                            let col = col0 + cfg.out_col(t, h);
                            let (i, h) = (i as usize, h as usize);
                            let v = [acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]];
                            if !EDGE {
                                let at = row_major(r as u64, col as u64, n64) as usize;
                                mem::store_v4_f32(c.add(at) as *mut [f32; 4], v);
                            } else if r < m {
                                unroll_tile!(@ j {
                                    if col + j < n {
                                        *c.add(row_major(r as u64, (col + j) as u64, n64) as usize) = v[j as usize];
                                    }
                                }; 0 1 2 3);
                            }
                        }
                    }; 0 1 2 3);
                }
            }; 0 1 2 3 4 5 6 7);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WARP_TILES: [WarpTile; 3] = [WARPTILE, WARPTILE_SMALL, WARPTILE_EDGE];

    #[test]
    fn warp_tile_shapes_are_consistent() {
        assert!(WARPTILE.is_consistent() && WARPTILE_SMALL.is_consistent());
        assert_eq!((WARPTILE.warp_rows(), WARPTILE.warp_cols(), WARPTILE.threads()), (64, 32, 256));
        assert_eq!((WARPTILE_SMALL.warp_rows(), WARPTILE_SMALL.warp_cols(), WARPTILE_SMALL.threads()), (32, 64, 128));
        assert_eq!((WARPTILE.a_vectors(), WARPTILE.b_vectors()), (2, 2));
        assert_eq!(WARPTILE.shared_bytes(), 2 * 16 * (132 + 128) * 4);
        assert!(WARPTILE.supports(128, 256, 16) && !WARPTILE.supports(128, 256, 8) && !WARPTILE.supports(64, 128, 16));
        assert!(WARPTILE_SMALL.supports(64, 128, 16));
        assert_eq!(WARPTILE.grid(4097, 4095), (32, 33));
        // A thread's clamped sources never leave the matrix.
        assert_eq!(WARPTILE.a_src_row(4096, (5, 0), 4097, true), 4096);
        assert_eq!(WARPTILE.a_src_row(4096, (5, 0), 4097, false), 4101);
        assert_eq!(WARPTILE.b_src_col(128, (0, 124), 3, 200, true), 199);
        let bad = WarpTile { ly: 3, ..WARPTILE };
        assert!(!bad.is_consistent());
        assert!(!WarpTile { bk: 12, ..WARPTILE }.is_consistent());
        assert!(!WarpTile { pad: 2, ..WARPTILE }.is_consistent());
    }

    #[test]
    fn any_shape_is_checked_without_dividing_by_zero_or_overflowing() {
        // Zeros: `threads()` divided by zero (ly: in `lx()`; tm, tn: by the warp's extent).
        for bad in [
            WarpTile { ly: 0, ..WARPTILE },
            WarpTile { tm: 0, ..WARPTILE },
            WarpTile { tn: 0, ..WARPTILE },
            WarpTile { bm: 0, ..WARPTILE },
            WarpTile { bn: 0, ..WARPTILE },
            WarpTile { bk: 0, bm: 0, bn: 0, ..WARPTILE },
        ] {
            assert!(!bad.is_consistent(), "{bad:?}");
        }
        // Sizes whose products pass u32: `threads()`, `bm * bk` and the stages overflowed, and
        // could wrap to a consistent-looking shape.
        let huge = WarpTile { bm: 1 << 31, bn: 1 << 31, bk: 1 << 31, pad: u32::MAX - 3, ..WARPTILE };
        assert!(!huge.is_consistent());
        let wide = WarpTile { bk: 1 << 30, ..WARPTILE };
        assert!(!wide.is_consistent());
        let async_tile = crate::matmul::WARPTILE_ASYNC;
        assert!(!async_tile.async_consistent(u32::MAX, u32::MAX));
        assert!(!WarpTile { pad: u32::MAX - 3, ..async_tile }.async_consistent(3, u32::MAX));
    }

    #[test]
    fn warp_tile_stage_is_filled_exactly_once_without_bank_conflicts() {
        for cfg in WARP_TILES {
            let mut hits = vec![0u8; cfg.stage_floats() as usize];
            for t in 0..cfg.threads() {
                for v in 0..cfg.a_vectors() {
                    let (row, col) = cfg.a_load(t, v);
                    assert!(row < cfg.bm && col + 4 <= cfg.bk && col % 4 == 0);
                    for j in 0..4 {
                        hits[cfg.at_offset((row, col), j) as usize] += 1;
                    }
                }
                for v in 0..cfg.b_vectors() {
                    let (row, col) = cfg.b_load(t, v);
                    assert!(row < cfg.bk && col + 4 <= cfg.bn && col % 4 == 0);
                    // Every vector of a thread is in the thread's columns (one clamp set).
                    assert_eq!(col, cfg.b_load(t, 0).1);
                    let at = cfg.b_offset((row, col)) as usize;
                    assert_eq!(at % 4, 0, "16-byte shared stores");
                    hits[at..at + 4].iter_mut().for_each(|h| *h += 1);
                }
            }
            // Every Aᵀ and B float once; the padding after each Aᵀ row never.
            for (i, &h) in hits.iter().enumerate() {
                let i = i as u32;
                let pad = i < cfg.b_offset_in_stage() && i % cfg.at_stride() >= cfg.bm;
                assert_eq!(h, u8::from(!pad), "{cfg:?} float {i}");
            }
            // Each transposing store of a warp (one (v, j)) hits 32 different banks.
            for w in 0..cfg.threads() / 32 {
                for v in 0..cfg.a_vectors() {
                    for j in 0..4 {
                        let mut banks: Vec<u32> =
                            (32 * w..32 * w + 32).map(|t| cfg.at_offset(cfg.a_load(t, v), j) % 32).collect();
                        banks.sort();
                        banks.dedup();
                        assert_eq!(banks.len(), 32, "{cfg:?} warp {w} v {v} j {j}");
                    }
                }
            }
        }
    }

    #[test]
    fn warp_tile_fragment_loads_are_one_wavefront_and_match_the_outputs() {
        for cfg in WARP_TILES {
            for kk in 0..cfg.bk {
                for w in 0..cfg.threads() / 32 {
                    let lanes = 32 * w..32 * w + 32;
                    for g in 0..cfg.tm / 4 {
                        // ly contiguous 16-byte vectors of one Aᵀ row: 16 * ly <= 128 bytes.
                        let mut at: Vec<u32> = lanes.clone().map(|t| cfg.a_frag(kk, t, g)).collect();
                        at.sort();
                        at.dedup();
                        assert_eq!(at.len() as u32, cfg.ly);
                        assert!(at.windows(2).all(|p| p[1] == p[0] + 4));
                        assert!(at.iter().all(|&x| x / cfg.at_stride() == kk && x % cfg.at_stride() < cfg.bm));
                    }
                    for h in 0..cfg.tn / 4 {
                        let mut at: Vec<u32> = lanes.clone().map(|t| cfg.b_frag(kk, t, h)).collect();
                        at.sort();
                        at.dedup();
                        assert_eq!(at.len() as u32, cfg.lx());
                        assert!(at.windows(2).all(|p| p[1] == p[0] + 4));
                        assert!(at.iter().all(|&x| x >= cfg.b_offset_in_stage() && x + 4 <= cfg.stage_floats()));
                    }
                }
                for t in 0..cfg.threads() {
                    // The fragment a thread multiplies is the rows and columns it stores.
                    for g in 0..cfg.tm / 4 {
                        assert_eq!(cfg.a_frag(kk, t, g) - kk * cfg.at_stride(), cfg.out_row(t, 4 * g));
                    }
                    for h in 0..cfg.tn / 4 {
                        assert_eq!(cfg.b_frag(kk, t, h) - cfg.b_offset_in_stage() - kk * cfg.bn, cfg.out_col(t, h));
                    }
                }
            }
        }
    }

    #[test]
    fn warp_tile_threads_cover_the_output_tile_once() {
        for cfg in WARP_TILES {
            let mut hits = vec![0u8; (cfg.bm * cfg.bn) as usize];
            for t in 0..cfg.threads() {
                for i in 0..cfg.tm {
                    for h in 0..cfg.tn / 4 {
                        let (r, c) = (cfg.out_row(t, i), cfg.out_col(t, h));
                        assert_eq!(c % 4, 0);
                        for j in 0..4 {
                            hits[(r * cfg.bn + c + j) as usize] += 1;
                        }
                    }
                }
            }
            assert!(hits.iter().all(|&h| h == 1), "{cfg:?}");
            // A warp's store of one (i, h) is ly rows of lx contiguous 16-byte vectors.
            for w in 0..cfg.threads() / 32 {
                let mut cols: Vec<u32> = (32 * w..32 * w + 32).map(|t| cfg.out_col(t, 0)).collect();
                let mut rows: Vec<u32> = (32 * w..32 * w + 32).map(|t| cfg.out_row(t, 0)).collect();
                cols.sort_unstable();
                cols.dedup();
                rows.sort_unstable();
                rows.dedup();
                assert_eq!((cols.len() as u32, rows.len() as u32), (cfg.lx(), cfg.ly), "{cfg:?}");
                assert!(cols.windows(2).all(|p| p[1] == p[0] + 4) && rows.windows(2).all(|p| p[1] == p[0] + 4));
            }
            // Interleaved, lanes l and l ^ 1 share a column (B fragments pair) and l and l ^ 2
            // a row (A pairs); row-major, l and l + 1 are neighbouring columns. Either way every
            // (row, column) is one lane.
            let mut seen = [false; 32];
            for lane in 0..32 {
                let (y, x) = cfg.lane_coords(lane);
                assert!(y < cfg.ly && x < cfg.lx());
                seen[(y * cfg.lx() + x) as usize] = true;
                if cfg.interleave {
                    assert_eq!(cfg.lane_coords(lane ^ 1).1, x, "{cfg:?} lane {lane}");
                    assert_eq!(cfg.lane_coords(lane ^ 2).0, y, "{cfg:?} lane {lane}");
                } else {
                    assert_eq!((y, x), (lane / cfg.lx(), lane % cfg.lx()));
                }
            }
            assert!(seen.iter().all(|&s| s));
        }
    }
}
