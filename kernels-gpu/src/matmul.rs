//! FP32 matrix multiply `C (m × n) = A (m × k) · B (k × n)`, all row-major. The progression:
//! naive (one output a thread, operands from global memory), shared-memory tiles, tiles with
//! the next one prefetched into registers (double buffering), a register-blocked kernel
//! where each thread computes an 8 × 8 block from 16-byte shared-memory loads, and warp-tiled
//! kernels (the library's: [`WarpTile`]) that lay each warp's lanes out for one-wavefront
//! shared loads, walk k 16 at a time and load the next fragments during the FMAs, with a
//! small-grid shape and a guarded one for any shape. On Hopper, two more: a 128 × 256 tile of
//! 8 × 16 outputs a thread fed by a `cp.async` ring (`matmul_warptile_async`), and stream-K:
//! that kernel over the whole waves of tiles (`matmul_warptile_streamk_waves`), then a row of
//! blocks sharing the last, partly empty wave out by k iteration (`matmul_warptile_streamk`,
//! [`StreamK`]).
//!
//! Every kernel takes `(a, b, c, m, n, k)` and indexes global memory in 64 bits
//! ([`row_major`]): m·k, k·n and m·n may pass 2^32. Per-thread coordinates (rows, columns,
//! k positions) stay `u32`, which cannot wrap: a column is below `ceil(n / 32) * 32 <= 2^32`, a
//! row below the rows of one launch, which the host keeps to [`MAX_GRID_Y`] blocks by splitting
//! C and A into row bands ([`band_rows`]).

use crate::kernel;
use crate::launch::{DEFAULT_SHARED_BYTES, MAX_BLOCK_THREADS, MAX_GRID_Y, MAX_SHARED_BYTES};
#[cfg(target_arch = "nvptx64")]
use crate::prelude::{math::fma, mem, shared, thread};

// The tile loops are unrolled by the prelude's `unroll_tile!` (32 steps) and `unroll_16!`.
const _: () = assert!(TILE == 32, "unroll_tile! lists 32 steps");
/// k steps the naive kernel loads ahead of its FMAs.
pub const NAIVE_UNROLL: u32 = 16;

/// Tile side of the tiled kernels (and their 32 × 32 thread blocks).
pub const TILE: u32 = 32;
/// Shared memory of the tiled kernels: one tile of A, then one of B.
pub const TILED_SHARED_FLOATS: u32 = 2 * TILE * TILE;
/// Stages of the `cp.async` tiled kernel's shared ring (tiles in flight: `MM_STAGES - 1`).
pub const MM_STAGES: u32 = 4;
/// Floats of one stage of the `cp.async` kernel: a tile of A, then one of B.
pub const MM_STAGE_FLOATS: u32 = 2 * TILE * TILE;
/// Shared memory of the `cp.async` kernel (32 KiB: no opt-in, two 1024-thread blocks per SM).
pub const MM_SHARED_BYTES: u32 = MM_STAGES * MM_STAGE_FLOATS * 4;
/// Thread block of the naive kernel. (A 16 × 16 block, as in the CUDA C twin, measured within
/// 1.3% of this one on the H100: the block shape is not why naive trails its twin.)
pub const NAIVE_BLOCK: (u32, u32) = (32, 8);
/// Register-blocked kernel: the block's output tile is BM × BN, it walks k in steps of BK,
/// and each of its 256 threads computes TM × TN outputs.
pub const BM: u32 = 128;
/// Columns of the register-blocked kernel's output tile.
pub const BN: u32 = 128;
/// k step of the register-blocked kernel (its k loop is unrolled by hand for BK = 8).
pub const BK: u32 = 8;
/// Output rows per thread of the register-blocked kernel.
pub const TM: u32 = 8;
/// Output columns per thread of the register-blocked kernel.
pub const TN: u32 = 8;
/// Threads per block of the register-blocked kernel (a 16 × 16 grid of 8 × 8 blocks), laid out
/// 1-D; the kernel derives every coordinate from this constant, never from `blockDim`.
pub const RB_THREADS: u32 = (BM / TM) * (BN / TN);
/// Shared memory of the register-blocked kernel: two stages of Aᵀ (BK × BM) and B (BK × BN).
pub const RB_SHARED_FLOATS: u32 = 2 * BK * (BM + BN);
/// One stage of the register-blocked kernel's shared memory, in 16-byte vectors: Aᵀ then B.
pub const RB_STAGE_V4: u32 = BK * (BM + BN) / 4;
/// Where B starts inside a stage, in 16-byte vectors (after Aᵀ's BK × BM floats).
pub const RB_B_OFFSET_V4: u32 = BK * BM / 4;

const _: () = assert!(NAIVE_BLOCK.0 * NAIVE_BLOCK.1 <= MAX_BLOCK_THREADS, "naive block too large");
const _: () = assert!(NAIVE_BLOCK.0 == crate::WARP_SIZE, "a naive warp is one row of 32 columns");
const _: () = assert!(TILE * TILE <= MAX_BLOCK_THREADS, "one thread per tile element");
const _: () = assert!(TILED_SHARED_FLOATS * 4 <= DEFAULT_SHARED_BYTES, "tiled shared memory must not need opt-in");
const _: () = assert!(RB_THREADS == 256, "the register-blocked kernel is written for 256 threads");
// One 16-byte vector of A and one of B per thread fill a stage.
const _: () = assert!(BM * BK / 4 == RB_THREADS, "one A vector per thread per stage");
const _: () = assert!(BK * BN / 4 == RB_THREADS, "one B vector per thread per stage");
const _: () = assert!(BK == 8, "matmul_regblock's k loop is unrolled by hand for BK = 8");
const _: () = assert!(TM == 8 && TN == 8, "the 8 x 8 block is two 4-float vectors a row and a column");
// The 4 + 4 split: the 16 thread rows (columns) at 4 floats each span exactly half the tile, so
// the second 4 start BM / 2 (BN / 2) further, and a fragment load is 2 vectors BM / 8 apart.
const _: () = assert!((BM / TM) * 4 == BM / 2 && (BN / TN) * 4 == BN / 2, "the 4 + 4 split covers the tile");
const _: () = assert!(RB_SHARED_FLOATS * 4 <= DEFAULT_SHARED_BYTES, "regblock shared memory must not need opt-in");
const _: () = assert!(RB_SHARED_FLOATS == 2 * RB_STAGE_V4 * 4, "two stages");
const _: () = assert!(MM_STAGES >= 2, "the cp.async pipeline waits for all but MM_STAGES - 2 groups");
const _: () = assert!(MM_SHARED_BYTES <= DEFAULT_SHARED_BYTES, "cp.async tiles must not need opt-in");

/// Element `(r, c)` of a row-major matrix of `cols` columns: 64-bit, for every matrix of every
/// kernel here.
#[inline(always)]
pub const fn row_major(r: u64, c: u64, cols: u64) -> u64 {
    r * cols + c
}

/// Rows of C (and A) one launch of a kernel whose blocks cover `block_rows` rows may take: the
/// grid's y dimension is at most [`MAX_GRID_Y`]. The host splits taller matrices into bands.
pub const fn band_rows(block_rows: u32) -> u32 {
    MAX_GRID_Y * block_rows
}

/// Grid of the naive kernel.
pub const fn naive_grid(m: u32, n: u32) -> (u32, u32) {
    (n.div_ceil(NAIVE_BLOCK.0), m.div_ceil(NAIVE_BLOCK.1))
}

/// Grid of the tiled kernels.
pub const fn tiled_grid(m: u32, n: u32) -> (u32, u32) {
    (n.div_ceil(TILE), m.div_ceil(TILE))
}

/// Grid of the register-blocked kernel (the shape must be supported: no partial tiles).
pub const fn regblock_grid(m: u32, n: u32) -> (u32, u32) {
    (n / BN, m / BM)
}

/// Whether the register-blocked kernel handles this shape (it has no bounds checks).
pub const fn regblock_supports(m: u32, n: u32, k: u32) -> bool {
    m > 0 && n > 0 && k > 0 && m.is_multiple_of(BM) && n.is_multiple_of(BN) && k.is_multiple_of(BK)
}

/// `(row, col)` of the output thread `(tx, ty)` of block `(bx, by)` of the naive kernel computes.
#[inline(always)]
pub const fn naive_coords(bx: u32, by: u32, tx: u32, ty: u32) -> (u32, u32) {
    let col = bx * NAIVE_BLOCK.0 + tx;
    let row = by * NAIVE_BLOCK.1 + ty;
    (row, col)
}

/// `(row, col)` of the output thread `(tx, ty)` of block `(bx, by)` of a tiled kernel computes.
#[inline(always)]
pub const fn tiled_coords(bx: u32, by: u32, tx: u32, ty: u32) -> (u32, u32) {
    (by * TILE + ty, bx * TILE + tx)
}

/// Column of A that thread column `tx` stages for tile `t` (its row is the thread's output row).
#[inline(always)]
pub const fn tile_a_col(t: u32, tx: u32) -> u32 {
    t * TILE + tx
}

/// Row of B that thread row `ty` stages for tile `t` (its column is the thread's output column).
#[inline(always)]
pub const fn tile_b_row(t: u32, ty: u32) -> u32 {
    t * TILE + ty
}

/// Float offset of `(r, c)` inside one `TILE × TILE` shared tile.
#[inline(always)]
pub const fn tile_offset(r: u32, c: u32) -> u32 {
    r * TILE + c
}

/// Float offset in the `cp.async` kernel's ring of tile element `here` (a `tile_offset`) of A
/// for k tile `t` (stage `t % MM_STAGES`).
#[inline(always)]
pub const fn mm_a_slot(t: u32, here: u32) -> u32 {
    (t % MM_STAGES) * MM_STAGE_FLOATS + here
}

/// The same for B (the second half of the stage).
#[inline(always)]
pub const fn mm_b_slot(t: u32, here: u32) -> u32 {
    (t % MM_STAGES) * MM_STAGE_FLOATS + TILE * TILE + here
}

/// Whether the `cp.async` kernel copies 16-byte vectors (one `cp.async.cg` per 4 floats) for
/// this shape and these buffer addresses: rows of A and B start on 16-byte boundaries (k and n
/// multiples of 4, both buffers 16-byte aligned). Otherwise it copies 4 bytes per thread.
#[inline(always)]
pub const fn mm_vectors(n: u32, k: u32, a: u64, b: u64) -> bool {
    n.is_multiple_of(4) && k.is_multiple_of(4) && a.is_multiple_of(16) && b.is_multiple_of(16)
}

/// The 16-byte vector thread `t` (0..1024, `ty * TILE + tx`) of the `cp.async` kernel copies in
/// the vector path: threads 0..256 one of A's tile, 256..512 one of B's, the rest none. Returns
/// `(is_b, row in the tile, first column in the tile)`; a warp copies 4 rows of 128 bytes.
#[inline(always)]
pub const fn mm_vector_of(t: u32) -> Option<(bool, u32, u32)> {
    const PER_TILE: u32 = TILE * TILE / 4;
    const PER_ROW: u32 = TILE / 4;
    if t < 2 * PER_TILE {
        let u = t % PER_TILE;
        Some((t >= PER_TILE, u / PER_ROW, (u % PER_ROW) * 4))
    } else {
        None
    }
}

/// Bytes of a 16-byte vector starting at column `c0` (a multiple of 4) of row `r` of a
/// `rows × cols` matrix whose `cols` is a multiple of 4: 16 inside, 0 outside.
#[inline(always)]
pub const fn mm_vector_bytes(r: u32, c0: u32, rows: u32, cols: u32) -> u32 {
    if r < rows && c0 < cols { 16 } else { 0 }
}

/// `(tx, ty)` of thread `t` of the register-blocked kernel in its 16 × 16 grid of 8 × 8 blocks.
#[inline(always)]
pub const fn rb_thread(t: u32) -> (u32, u32) {
    (t % (BN / TN), t / (BN / TN))
}

/// `(row0, col0)`: the corner of block `(bx, by)`'s BM × BN output tile.
#[inline(always)]
pub const fn rb_block_origin(bx: u32, by: u32) -> (u32, u32) {
    (by * BM, bx * BN)
}

/// `(row, col)` inside the BM × BK tile of A of the 16-byte vector thread `t` loads: 2 vectors a
/// row, so a warp reads 16 rows of 32 contiguous bytes.
#[inline(always)]
pub const fn rb_a_load(t: u32) -> (u32, u32) {
    (t / (BK / 4), (t % (BK / 4)) * 4)
}

/// `(row, col)` inside the BK × BN tile of B of the 16-byte vector thread `t` loads: 32 vectors
/// a row, so a warp reads one 512-byte row segment.
#[inline(always)]
pub const fn rb_b_load(t: u32) -> (u32, u32) {
    (t / (BN / 4), (t % (BN / 4)) * 4)
}

/// Element of A where the vector loaded at `(a_row, a_col)` (from [`rb_a_load`]) starts, for the
/// k tile `kt` of the block whose rows start at `row0`.
#[inline(always)]
pub const fn rb_a_index(row0: u32, (a_row, a_col): (u32, u32), kt: u32, k: u32) -> u64 {
    row_major((row0 + a_row) as u64, (kt * BK + a_col) as u64, k as u64)
}

/// Element of B where the vector loaded at `(b_row, b_col)` (from [`rb_b_load`]) starts, for the
/// k tile `kt` of the block whose columns start at `col0`.
#[inline(always)]
pub const fn rb_b_index(col0: u32, (b_row, b_col): (u32, u32), kt: u32, n: u32) -> u64 {
    row_major((kt * BK + b_row) as u64, (col0 + b_col) as u64, n as u64)
}

/// Float offset inside a stage's Aᵀ (BK rows of BM) where element `i` of the A vector loaded at
/// `(a_row, a_col)` goes: A's element `(a_row, a_col + i)` is Aᵀ's `(a_col + i, a_row)`.
#[inline(always)]
pub const fn rb_at_offset((a_row, a_col): (u32, u32), i: u32) -> u32 {
    (a_col + i) * BM + a_row
}

/// 16-byte-vector offset inside a stage's B part (BK rows of BN / 4 vectors) of the B vector
/// loaded at `(b_row, b_col)`: B is stored as loaded.
#[inline(always)]
pub const fn rb_b_offset((b_row, b_col): (u32, u32)) -> u32 {
    b_row * BN / 4 + b_col / 4
}

/// Vector offsets inside a stage's Aᵀ of the two A vectors thread row `ty` reads at k step `kk`:
/// rows `ty * 4 ..` and `BM / 2 + ty * 4 ..` (the 4 + 4 split).
#[inline(always)]
pub const fn rb_a_frag(kk: u32, ty: u32) -> (u32, u32) {
    (kk * BM / 4 + ty, kk * BM / 4 + BM / 8 + ty)
}

/// Vector offsets inside a stage's B part of the two B vectors thread column `tx` reads at k step
/// `kk`: columns `tx * 4 ..` and `BN / 2 + tx * 4 ..`.
#[inline(always)]
pub const fn rb_b_frag(kk: u32, tx: u32) -> (u32, u32) {
    (kk * BN / 4 + tx, kk * BN / 4 + BN / 8 + tx)
}

/// Row of C that accumulator row `i` (0..TM) of thread row `ty` holds: `ty * 4 + i` for the first
/// 4, then the same 64 rows further.
#[inline(always)]
pub const fn rb_out_row(row0: u32, ty: u32, i: u32) -> u32 {
    row0 + (i / 4) * (BM / 2) + ty * 4 + i % 4
}

/// First column of C of the 4 accumulators `half * 4 ..` of thread column `tx` (one 16-byte
/// store): `tx * 4`, then the same 64 columns further.
#[inline(always)]
pub const fn rb_out_col(col0: u32, tx: u32, half: u32) -> u32 {
    col0 + half * (BN / 2) + tx * 4
}

// ---------------------------------------------------------------------------------------------
// Warp tiling (`matmul_warptile*`).

/// A warp-tiled kernel's shape. The block computes a `bm × bn` tile of C and walks k in steps of
/// `bk`; each warp owns a `warp_rows() × warp_cols()` part of it, its 32 lanes arranged `ly`
/// rows by `lx()` columns; each lane computes `tm × tn` outputs split into 4 × 4 sub-blocks, the
/// sub-blocks of one lane `ly * 4` rows (`lx() * 4` columns) apart, so that one `ld.shared.v4` of
/// a warp reads `ly` (`lx()`) contiguous 16-byte vectors and one `st.global.v4` writes `lx()`
/// contiguous vectors of each of `ly` rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// `(row0, col0)` of output tile `tile`, the tiles of C counted row by row, `tiles_n` a row
    /// (0 taken as 1: no tile then exists). `matmul_warptile_streamk_waves` takes tile `by *
    /// grid_x + bx`: on a grid of `(wave, waves)` the first `waves * wave` tiles in order
    /// ([`StreamK`]). The stream-K row finds its tiles' corners here too.
    #[inline(always)]
    pub const fn tile_origin(self, tile: u32, tiles_n: u32) -> (u32, u32) {
        let tiles_n = if tiles_n == 0 { 1 } else { tiles_n };
        ((tile / tiles_n) * self.bm, (tile % tiles_n) * self.bn)
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
    /// Whether the shape parameters are consistent (every assumption the kernel makes).
    pub const fn is_consistent(self) -> bool {
        self.tiles_consistent() && self.shared_bytes() <= DEFAULT_SHARED_BYTES
    }

    /// [`WarpTile::is_consistent`] but for the shared memory of its two stages.
    const fn tiles_consistent(self) -> bool {
        let t = self.threads();
        self.tm.is_multiple_of(4)
            && self.tn.is_multiple_of(4)
            && self.pad.is_multiple_of(4)
            && crate::WARP_SIZE.is_multiple_of(self.ly)
            && self.bm.is_multiple_of(self.warp_rows())
            && self.bn.is_multiple_of(self.warp_cols())
            && t <= MAX_BLOCK_THREADS
            // Every thread loads whole vectors, and the A loads cover 2 k-chunks of every row per
            // pass (`a_load`), so bk is a multiple of 8 and a pass covers whole rows.
            && self.bk.is_multiple_of(8)
            && (self.bm * self.bk / 4).is_multiple_of(t)
            && (self.bk * self.bn / 4).is_multiple_of(t)
            // A warp's 32 A vectors are 16 whole rows (`a_load`).
            && self.bm.is_multiple_of(crate::WARP_SIZE / 2)
            && t.is_multiple_of(self.bn / 4)
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

    /// Floats of A each thread copies per k step in the `cp.async` kernels (one `cp.async` each).
    pub const fn a_floats(self) -> u32 {
        self.bm * self.bk / self.threads()
    }
    /// Dynamic shared memory of a `cp.async` kernel's ring of `stages` stages.
    pub const fn ring_bytes(self, stages: u32) -> u32 {
        stages * self.stage_floats() * 4
    }
    /// `(row, col)` inside the `bm × bk` tile of A of float `e` a `cp.async` kernel's thread `t`
    /// copies: a warp takes 4 rows × the same 8 k (32 bytes, one sector, of each row), the
    /// passes walk the rows, then the next 8 k. Transposed into Aᵀ rows `at_stride()` apart,
    /// a warp's 32 floats land in 32 distinct banks when `at_stride() % 32 == 4`.
    #[inline(always)]
    pub const fn a_copy(self, t: u32, e: u32) -> (u32, u32) {
        let idx = t + e * self.threads();
        ((idx / 8) % self.bm, idx % 8 + 8 * (idx / (8 * self.bm)))
    }
    /// Whether the shape suits the `cp.async` kernels with `stages` stages: consistent, a
    /// whole number of A floats and B vectors a thread, conflict-free transposing copies, and
    /// a ring that fits the opt-in shared memory of a block (`max_shared`).
    pub const fn async_consistent(self, stages: u32, max_shared: u32) -> bool {
        self.tiles_consistent()
            && (self.bm * self.bk).is_multiple_of(self.threads())
            && self.at_stride() % 32 == 4
            && stages >= 2
            && self.ring_bytes(stages) <= max_shared
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

/// Experimental configurations (timed against each other; the losers are removed).
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
/// The `cp.async` warp-tiled kernel's shape: 128 × 256 blocks walked in k steps of 16, 8
/// warps of 64 × 64 (lanes 8 × 4), 8 × 16 outputs a thread, so a k step is 6 shared vector
/// loads for 128 FMAs (4 for 64 in [`WARPTILE`]); 245 registers, one block a multiprocessor.
pub const WARPTILE_ASYNC: WarpTile =
    WarpTile { bm: 128, bn: 256, bk: 16, tm: 8, tn: 16, ly: 8, pad: 4, interleave: true };
/// Stages of `matmul_warptile_async`'s ring (74.5 KiB: past the 48 KiB default, opted in).
pub const WTA_STAGES: u32 = 3;
/// Threads of a `matmul_warptile_async` block.
pub const WTA_THREADS: u32 = 256;
/// Floats of A and 16-byte vectors of B each thread copies a k tile in `matmul_warptile_async`
/// and the stream-K kernels (the const parameters of their shared k loop).
pub const WTA_NA: usize = WARPTILE_ASYNC.a_floats() as usize;
pub const WTA_NB: usize = WARPTILE_ASYNC.b_vectors() as usize;
const _: () = assert!(WARPTILE_ASYNC.async_consistent(WTA_STAGES, MAX_SHARED_BYTES));
const _: () = assert!(WARPTILE_ASYNC.threads() == WTA_THREADS);
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
        let wave = if wave == 0 { 1 } else { wave };
        let tiles_n = n / WARPTILE_ASYNC.bn;
        let tiles = (m / WARPTILE_ASYNC.bm) as u64 * tiles_n as u64;
        let tiles = if tiles > u32::MAX as u64 { u32::MAX } else { tiles as u32 };
        StreamK { tiles_n, tiles, iters: k / WARPTILE_ASYNC.bk, wave, waves: tiles / wave }
    }
    /// The grid of the whole tiles (`matmul_warptile_streamk_waves`): `(wave, waves)`.
    pub const fn whole_grid(self) -> (u32, u32) {
        (self.wave, self.waves)
    }
    /// The grid of the shared row (`matmul_warptile_streamk`): `(wave, 1)`.
    pub const fn row_grid(self) -> (u32, u32) {
        (self.wave, 1)
    }
    /// Tiles shared by the row (the first `waves * wave` are whole tiles, in order).
    pub const fn sk_tiles(self) -> u32 {
        self.tiles - self.waves * self.wave
    }
    /// `(row0, col0)` of output tile `tile` (row-major over the tiles).
    #[inline(always)]
    pub const fn origin(self, tile: u32) -> (u32, u32) {
        WARPTILE_ASYNC.tile_origin(tile, self.tiles_n)
    }
    /// The k iterations `lo..hi` block `x` of the row computes, counted over the shared tiles
    /// (iteration `i` is k tile `i % iters` of tile `waves * wave + i / iters`): an even share,
    /// shorter than a tile (`sk_tiles < wave`), so a block cuts at most two tiles.
    #[inline(always)]
    pub const fn range(self, x: u32) -> (u64, u64) {
        let work = self.sk_tiles() as u64 * self.iters as u64;
        (x as u64 * work / self.wave as u64, (x as u64 + 1) * work / self.wave as u64)
    }
    /// The block of the row whose range holds iteration `i`.
    #[inline(always)]
    pub const fn owner(self, i: u64) -> u32 {
        let work = self.sk_tiles() as u64 * self.iters as u64;
        (((i + 1) * self.wave as u64 - 1) / work) as u32
    }
    /// Block `x`'s `u`-th segment, `(tile, k0, k1)`: k tiles `k0..k1` of `tile`, from the top of
    /// its range down, or `None` past the last. The top one is the start of the tile it shares
    /// with the next block (its sums are published for that block first), the bottom one the
    /// end of the tile it shares with the previous one (which published long before).
    #[inline(always)]
    pub const fn segment(self, x: u32, u: u32) -> Option<(u32, u32, u32)> {
        let (lo, hi) = self.range(x);
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

kernel! {
    /// Naive: thread (row, col) walks row `row` of A and column `col` of B in global memory.
    /// A warp is 32 consecutive columns of one row: its B loads and C stores are 128 contiguous
    /// bytes (4 sectors), its A load is one broadcast address (1 sector). Every operand is
    /// re-read from L2 by every thread that needs it (2k loads per 2k flops).
    pub unsafe fn matmul_naive(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        let (row, col) =
            naive_coords(thread::block_idx_x(), thread::block_idx_y(), thread::thread_idx_x(), thread::thread_idx_y());
        if row < m && col < n {
            let (row, col, n, k) = (row as u64, col as u64, n as u64, k as u64);
            let mut acc = 0.0f32;
            // SAFETY: row < m, col < n, i < k, so each index is below m·k, k·n or m·n: the plan
            // checked the buffers hold exactly that many floats.
            unsafe {
                // 16 steps at a time, all 32 loads issued before the 16 FMAs (in the same order as
                // one step at a time, so the sum is bit-identical): nvcc compiles the CUDA C twin's
                // loop this way, and a latency-bound kernel runs as fast as the loads it keeps in
                // flight. Rolled, LLVM unrolls 8 steps and interleaves loads with the FMA chain.
                let mut i = 0;
                while i + NAIVE_UNROLL as u64 <= k {
                    let (mut av, mut bv) = ([0.0f32; NAIVE_UNROLL as usize], [0.0f32; NAIVE_UNROLL as usize]);
                    unroll_16!(j => {
                        av[j as usize] = *a.add(row_major(row, i + j as u64, k) as usize);
                        bv[j as usize] = *b.add(row_major(i + j as u64, col, n) as usize);
                    });
                    unroll_16!(j => {
                        acc = fma(av[j as usize], bv[j as usize], acc);
                    });
                    i += NAIVE_UNROLL as u64;
                }
                while i < k {
                    acc = fma(*a.add(row_major(row, i, k) as usize), *b.add(row_major(i, col, n) as usize), acc);
                    i += 1;
                }
                *c.add(row_major(row, col, n) as usize) = acc;
            }
        }
    }
}

kernel! {
    /// Shared-memory tiles: each block stages 32 × 32 tiles of A and B, a warp loading 128
    /// contiguous bytes of one row of each (4 sectors, 5 when the row is not 32-byte aligned),
    /// so each operand is read from global memory once per block instead of once per thread.
    /// Changes from naive: the inner loop reads shared memory (A a broadcast, B one bank per
    /// lane: no conflicts). Barriers after the store and after the use.
    pub unsafe fn matmul_tiled(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded plan guarantees (see `tiled`).
        unsafe { device::tiled::<false>(a, b, c, m, n, k) }
    }
}

kernel! {
    /// Tiles with prefetch: the same transactions as `matmul_tiled`, but the next tile's global
    /// loads are issued into registers before the current tile is computed, so their latency
    /// overlaps the arithmetic (two more registers).
    pub unsafe fn matmul_prefetch(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded plan guarantees (see `tiled`).
        unsafe { device::tiled::<true>(a, b, c, m, n, k) }
    }
}

kernel! {
    /// Register blocking: a 128 × 128 tile per block, 8 × 8 outputs per thread held in
    /// registers. Per k step a thread loads 2 + 2 16-byte vectors from shared memory and does
    /// 64 FMAs (a 16:1 flop-to-shared-load ratio instead of 2:1). Aᵀ and B are staged with
    /// 16-byte global loads (a warp: 16 rows × 32 bytes of A, 512 contiguous bytes of B), two
    /// shared stages deep, the next stage prefetched into registers. The 8 × 8 block is split
    /// 4 + 4 rows/cols 64 apart so a warp's vector loads and stores touch contiguous 256-byte
    /// runs. Assumes `RB_THREADS` threads a block and a supported shape (no bounds checks).
    pub unsafe fn matmul_regblock(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded plan guarantees (see `regblock`).
        unsafe { device::regblock(a, b, c, m, n, k) }
    }
}

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
        unsafe { device::warptile::<8, 8, NA, NB, $edge, $split>($cfg, $a, $b, $c, $m, $n, $k) }
    }};
}

crate::hopper_kernel! {
    /// Tiles through a `cp.async` pipeline: the same 32 × 32 tiles and global bytes as
    /// `matmul_prefetch`, but the tiles go global → shared with `cp.async` into a 4-stage ring,
    /// so three tiles are in flight while one is computed, no register holds them on the way and
    /// the store to shared leaves the instruction stream. Where rows start on 16-byte boundaries
    /// (k, n multiples of 4, aligned buffers) 512 threads each copy one 16-byte vector with
    /// `cp.async.cg` (L2 only; a warp: 4 rows of 128 bytes); else every thread copies its two
    /// floats with 4-byte `cp.async.ca`. Edges are zero-filled by the copy itself. One barrier
    /// per tile instead of two (refilling the stage read in the previous trip, after this trip's
    /// barrier). Costs 32 KiB of shared memory per block instead of 8.
    pub unsafe fn matmul_cp_async(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded plan guarantees (see `cp_async_tiled`).
        unsafe { hopper_device::cp_async_tiled(a, b, c, m, n, k) }
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
mod hopper_device {
    use super::device::V4;
    use super::*;
    use crate::prelude::{async_copy, atomic, order};

    /// The `cp.async` warp-tiled kernel for `cfg`, whose `tm`, `tn`, `a_floats()` and
    /// `b_vectors()` are `TM`, `TN`, `NA` and `NB`, with a ring of `STAGES` stages: block
    /// `(x, y)` computes its whole tile, or with `LINEAR` the block of linear id `i` whole tile
    /// `i` ([`WarpTile::tile_origin`]); then [`async_k_loop`], [`store_tile`].
    ///
    /// # Safety
    /// `cfg.supports(m, n, k)`; buffers hold m·k, k·n and m·n floats and start on 16-byte
    /// boundaries; the launch is blocks of `cfg.threads()` threads with `cfg.ring_bytes(STAGES)`
    /// of shared memory: `cfg.grid(m, n)` of them, or with `LINEAR` at most `(m / bm) · (n /
    /// bn)` (stream-K's whole waves).
    #[inline(always)]
    pub(super) unsafe fn warptile_async<
        const TM: usize,
        const TN: usize,
        const NA: usize,
        const NB: usize,
        const STAGES: u32,
        const LINEAR: bool,
    >(
        cfg: WarpTile,
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        m: u32,
        n: u32,
        k: u32,
    ) {
        let _ = m;
        let origin = if LINEAR {
            cfg.tile_origin(thread::block_linear(), n / cfg.bn)
        } else {
            cfg.block_origin(thread::block_idx_x(), thread::block_idx_y())
        };
        let mut acc = [[0.0f32; TN]; TM];
        // SAFETY: forwarded (the tile is one of C's, all of k).
        unsafe {
            async_k_loop::<TM, TN, NA, NB, STAGES>(cfg, a, b, n, k, origin, (0, k / cfg.bk), &mut acc);
            store_tile::<TM, TN>(cfg, c, n, origin, &acc, false);
        }
    }

    /// Block `x` of a stream-K row sets `SK_FLAGS[x]` once its partial sums for the next block
    /// are in C; that block waits for it and clears it, so all are zero between launches (a
    /// module's launches are queued on one stream: never two at once).
    static mut SK_FLAGS: [u32; SK_MAX_WAVE as usize] = [0; SK_MAX_WAVE as usize];

    /// `matmul_warptile_streamk`: block `x` of the one-row grid computes its share of the tiles
    /// the whole waves left ([`StreamK::segment`]), adding to and publishing partial sums.
    ///
    /// # Safety
    /// As [`warptile_async`] for `WARPTILE_ASYNC`, but the launch is `StreamK::row_grid` of this
    /// shape's schedule (the host's `matmul::stream_k`: a wave of at most `SK_MAX_WAVE`), queued
    /// after its whole waves, and no other launch of this kernel of the same module runs at the
    /// same time. A block may wait for an earlier one of the row (never a later one), which was
    /// dispatched first.
    #[inline(always)]
    pub(super) unsafe fn warptile_streamk<const TM: usize, const TN: usize, const NA: usize, const NB: usize>(
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        m: u32,
        n: u32,
        k: u32,
    ) {
        let cfg = WARPTILE_ASYNC;
        let x = thread::block_idx_x();
        let sk = StreamK::new(m, n, k, thread::grid_dim_x());
        let flags = (&raw mut SK_FLAGS).cast::<u32>();
        // SAFETY (whole body): tiles are below `sk.tiles` (whole tiles of C: `origin`), k tiles
        // below `iters`; flags are indexed by blocks of the row, below `wave <= SK_MAX_WAVE`.
        // The rest is `async_k_loop`'s and `store_tile`'s contract.
        unsafe {
            let mut u = 0;
            while let Some((tile, k0, k1)) = sk.segment(x, u) {
                let origin = sk.origin(tile);
                let mut acc = [[0.0f32; TN]; TM];
                async_k_loop::<TM, TN, NA, NB, WTA_STAGES>(cfg, a, b, n, k, origin, (k0, k1), &mut acc);
                // Everyone is done with the ring (the next segment refills it) and C.
                thread::sync_threads();
                if k0 > 0 {
                    // The tile's earlier k tiles are another block's: wait for its sums.
                    let first = (tile - sk.waves * sk.wave) as u64 * sk.iters as u64 + k0 as u64;
                    let before = flags.add(sk.owner(first - 1) as usize);
                    if thread::thread_idx_x() == 0 {
                        while atomic::load_acquire_u32(before) == 0 {}
                        *before = 0;
                    }
                    thread::sync_threads();
                }
                store_tile::<TM, TN>(cfg, c, n, origin, &acc, k0 > 0);
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

    /// k tiles `kt0..kt1` of the block tile at `origin` through a ring of `STAGES` stages,
    /// added into `acc`. Tile `j` of the range goes into stage `j % STAGES`; the first
    /// `STAGES` tiles are issued up front, and tile `j + STAGES` right after the barrier at tile
    /// `j`'s last k step, when every warp has read stage `j % STAGES` into registers. Each
    /// thread commits one group a tile (empty past the last), so "at most STAGES - 2 pending"
    /// at that barrier is "tile j + 1 has landed".
    ///
    /// # Safety
    /// `cfg` is `WARPTILE_ASYNC`-like (`async_consistent`); the tile at `origin` and k tiles
    /// `kt0..kt1` lie inside A (m·k floats) and B (k·n), both 16-byte aligned with k and n
    /// multiples of the tile; the block has `cfg.threads()` threads and `cfg.ring_bytes(STAGES)`
    /// of shared memory, no copy of its own in flight and no warp still reading the ring.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn async_k_loop<const TM: usize, const TN: usize, const NA: usize, const NB: usize, const STAGES: u32>(
        cfg: WarpTile,
        a: *const f32,
        b: *const f32,
        n: u32,
        k: u32,
        (row0, col0): (u32, u32),
        (kt0, kt1): (u32, u32),
        acc: &mut [[f32; TN]; TM],
    ) {
        const { assert!(TM <= 8 && TN <= 16, "the FMA unrolls list 8 rows and 16 columns") };
        let s = shared::dynamic::<f32>();
        // SAFETY: the dynamic shared memory is this block's.
        let ring = unsafe { shared::address(s) };
        let t = thread::thread_idx_x();
        let (bk, stage) = (cfg.bk, cfg.stage_floats());
        let tiles = kt1 - kt0;
        let (k64, n64) = (k as u64, n as u64);
        // SAFETY (whole body): every global float and vector below lies inside its matrix
        // (`WarpTile::a_copy`, `b_load` within the tile and k tiles below kt1); shared offsets
        // stay inside the `STAGES` stages launched (`WarpTile::ring_bytes`); shared vectors are
        // 16-byte aligned (`at_stride`, `bn` and the vector offsets are multiples of 4 floats).
        unsafe {
            let mut a_src = [a; NA];
            let mut a_dst = [0u32; NA];
            let mut v = 0;
            while v < NA {
                let (row, col) = cfg.a_copy(t, v as u32);
                a_src[v] = a.add(row_major((row0 + row) as u64, (kt0 * bk + col) as u64, k64) as usize);
                a_dst[v] = ring + 4 * cfg.at_offset((row, col), 0);
                v += 1;
            }
            let mut b_src = [b; NB];
            let mut b_dst = [0u32; NB];
            let mut v = 0;
            while v < NB {
                let at = cfg.b_load(t, v as u32);
                b_src[v] = b.add(row_major((kt0 * bk + at.0) as u64, (col0 + at.1) as u64, n64) as usize);
                b_dst[v] = ring + 4 * cfg.b_offset(at);
                v += 1;
            }
            let issue = |kt: u32| {
                if kt < tiles {
                    let st = 4 * (kt % STAGES) * stage;
                    let mut v = 0;
                    while v < NA {
                        // A row's 16 floats of a tile are 2 of the sectors of a 128-byte line
                        // the next 3 tiles read: fetched into L2 together (+0.6% at 4096³,
                        // +1.2% at 2048³ on the H100).
                        async_copy::copy_4_prefetch_l2(a_dst[v] + st, a_src[v].add((kt * bk) as usize));
                        v += 1;
                    }
                    let mut v = 0;
                    while v < NB {
                        let p = b_src[v].add(kt as usize * bk as usize * n as usize);
                        async_copy::copy_16(b_dst[v] + st, p as *const [f32; 4]);
                        v += 1;
                    }
                }
                async_copy::commit();
            };
            let frag = |st: u32, kk: u32| {
                let base = s.add((st * stage) as usize);
                warp_fragments!(cfg, base, t, kk, TM, TN)
            };
            let mut j = 0;
            while j < STAGES {
                issue(j);
                j += 1;
            }
            async_copy::wait_for(STAGES - 1);
            thread::sync_threads();
            let mut cur = frag(0, 0);
            let mut kt = 0;
            while kt < tiles {
                let st = kt % STAGES;
                unroll_tile!(kk => {
                    if kk < bk {
                        let next = if kk + 1 < bk {
                            frag(st, kk + 1)
                        } else {
                            // Tile kt + 1 has landed for everyone, and everyone has read stage
                            // st: refill it with tile kt + STAGES.
                            async_copy::wait_for(STAGES - 2);
                            thread::sync_threads();
                            issue(kt + STAGES);
                            let (mut fa, mut fb) = frag((kt + 1) % STAGES, 0);
                            // The next tile's first loads stay here, ahead of this step's FMAs,
                            // and the FMAs after the barrier (else LLVM sinks the loads to the
                            // loop's top and hoists the FMAs above the barrier: nothing hides
                            // either wait).
                            order::pin(&mut fa);
                            order::pin(&mut fb);
                            order::pin(&mut cur.0);
                            order::pin(&mut cur.1);
                            (fa, fb)
                        };
                        outer_product!(acc, cur, TM, TN);
                        cur = next;
                    }
                });
                kt += 1;
            }
        }
    }

    /// Stores `acc`, the block tile at `origin`, into C; with `add`, adds it to what C holds
    /// there (another block's partial sums, published to this block).
    ///
    /// # Safety
    /// The tile lies inside C (m·n floats, 16-byte aligned, n a multiple of 4); the block has
    /// `cfg.threads()` threads.
    #[inline(always)]
    unsafe fn store_tile<const TM: usize, const TN: usize>(
        cfg: WarpTile,
        c: *mut f32,
        n: u32,
        (row0, col0): (u32, u32),
        acc: &[[f32; TN]; TM],
        add: bool,
    ) {
        let t = thread::thread_idx_x();
        let at = |i: u32, h: u32| {
            let (r, col) = (row0 + cfg.out_row(t, i), col0 + cfg.out_col(t, h));
            // SAFETY: `out_row`/`out_col` stay inside the tile (caller's contract), so the
            // offset is inside C.
            unsafe { c.add(row_major(r as u64, col as u64, n as u64) as usize) as *mut [f32; 4] }
        };
        let sums = |i: u32, h: u32| {
            let (i, h) = (i as usize, h as usize);
            [acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]]
        };
        // SAFETY: every vector is inside the tile, 16-byte aligned (caller's contract).
        unsafe {
            if add {
                // Another block's partial sums: a pair of rows' loads all go out before their
                // first store (the asm keeps program order), so 2·TN/4 round trips to L2
                // overlap; one load, add and store at a time waited out 32 of them a tile.
                unroll_tile!(@ p {
                    if (2 * p as usize) < TM {
                        let mut before = [[0.0f32; 4]; 8];
                        unroll_tile!(@ j {
                            if ((2 * p + j / 4) as usize) < TM && ((j % 4) as usize) < TN / 4 {
                                before[j as usize] = mem::load_v4_f32_cg(at(2 * p + j / 4, j % 4));
                            }
                        }; 0 1 2 3 4 5 6 7);
                        unroll_tile!(@ j {
                            if ((2 * p + j / 4) as usize) < TM && ((j % 4) as usize) < TN / 4 {
                                let (b, v) = (before[j as usize], sums(2 * p + j / 4, j % 4));
                                mem::store_v4_f32(at(2 * p + j / 4, j % 4), [b[0] + v[0], b[1] + v[1], b[2] + v[2], b[3] + v[3]]);
                            }
                        }; 0 1 2 3 4 5 6 7);
                    }
                }; 0 1 2 3);
            } else {
                // The address spelled out again rather than through `at`: through the closure
                // LLVM moved C's address arithmetic into `matmul_warptile_async`'s k loop, and
                // sharing it the other way changed `matmul_warptile_streamk`'s PTX (measured
                // kernels are kept byte-identical).
                unroll_tile!(@ i {
                    if (i as usize) < TM {
                        let r = row0 + cfg.out_row(t, i);
                        unroll_tile!(@ h {
                            if (h as usize) < TN / 4 {
                                let col = col0 + cfg.out_col(t, h);
                                let at = c.add(row_major(r as u64, col as u64, n as u64) as usize) as *mut [f32; 4];
                                mem::store_v4_f32(at, sums(i, h));
                            }
                        }; 0 1 2 3);
                    }
                }; 0 1 2 3 4 5 6 7);
            }
        }
    }

    /// # Safety
    /// Buffers hold m·k, k·n and m·n floats; the launch is (TILE, TILE) threads with
    /// `MM_SHARED_BYTES` of shared memory (checked by the plan).
    #[inline(always)]
    pub(super) unsafe fn cp_async_tiled(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        let s = shared::dynamic::<f32>();
        // SAFETY: the dynamic shared memory is this block's.
        let ring = unsafe { shared::address(s) };
        let (tx, ty) = (thread::thread_idx_x(), thread::thread_idx_y());
        let (row, col) = tiled_coords(thread::block_idx_x(), thread::block_idx_y(), tx, ty);
        let here = tile_offset(ty, tx);
        let tiles = k.div_ceil(TILE);
        let vectors = mm_vectors(n, k, a as u64, b as u64);
        let vector = mm_vector_of(ty * TILE + tx);
        let (row0, col0) = tiled_coords(thread::block_idx_x(), thread::block_idx_y(), 0, 0);
        // Tile t's copies into stage t % MM_STAGES; every trip commits a group, empty past the
        // last tile, so "all but the newest MM_STAGES - 2 groups" is always "tile t".
        let issue = |t: u32| {
            if t < tiles && vectors {
                if let Some((is_b, r, c0)) = vector {
                    // A: row row0 + r, columns t*TILE + c0 ..+4; B: row t*TILE + r, columns
                    // col0 + c0 ..+4. k and n are multiples of 4, so a vector is all in or all out.
                    let (src, rows, cols, gr, gc) =
                        if is_b { (b, k, n, t * TILE + r, col0 + c0) } else { (a, m, k, row0 + r, t * TILE + c0) };
                    let bytes = mm_vector_bytes(gr, gc, rows, cols);
                    let slot = if is_b { mm_b_slot(t, tile_offset(r, c0)) } else { mm_a_slot(t, tile_offset(r, c0)) };
                    // SAFETY: an inside vector is below rows·cols, 16-byte aligned (mm_vectors);
                    // an outside one reads 0 bytes from the aligned buffer start. The slot is a
                    // 16-byte aligned part of stage t's half (c0 % 4 == 0), this thread's own.
                    unsafe {
                        let at = if bytes > 0 { row_major(gr as u64, gc as u64, cols as u64) as usize } else { 0 };
                        async_copy::copy_16_zfill(ring + 4 * slot, src.add(at), bytes);
                    }
                }
            } else if t < tiles {
                let (ac, br) = (tile_a_col(t, tx), tile_b_row(t, ty));
                let (a_in, b_in) = (row < m && ac < k, br < k && col < n);
                // SAFETY: an element outside the matrix reads 0 bytes (zero fill) from the
                // buffer's first float, which exists (m·k, k·n >= 1); one inside is below m·k
                // or k·n. The slots are inside the ring launched (mm_*_slot < MM_STAGES *
                // MM_STAGE_FLOATS) and this thread's own.
                unsafe {
                    let a_src = if a_in { a.add(row_major(row as u64, ac as u64, k as u64) as usize) } else { a };
                    let b_src = if b_in { b.add(row_major(br as u64, col as u64, n as u64) as usize) } else { b };
                    async_copy::copy_4_zfill(ring + 4 * mm_a_slot(t, here), a_src, if a_in { 4 } else { 0 });
                    async_copy::copy_4_zfill(ring + 4 * mm_b_slot(t, here), b_src, if b_in { 4 } else { 0 });
                }
            }
            async_copy::commit();
        };
        let mut t = 0;
        while t < MM_STAGES - 1 {
            issue(t);
            t += 1;
        }
        let mut acc = 0.0f32;
        t = 0;
        while t < tiles {
            // My copies of tile t have landed; after the barrier everyone's have, and everyone
            // has finished tile t - 1, whose stage the next issue overwrites.
            async_copy::wait::<{ MM_STAGES - 2 }>();
            thread::sync_threads();
            issue(t + MM_STAGES - 1);
            // SAFETY: shared indices stay inside stage t % MM_STAGES (ty, tx, i < TILE).
            unsafe {
                let sa = s.add(mm_a_slot(t, 0) as usize);
                let sb = s.add(mm_b_slot(t, 0) as usize);
                let mut i = 0;
                while i < TILE {
                    acc = fma(*sa.add(tile_offset(ty, i) as usize), *sb.add(tile_offset(i, tx) as usize), acc);
                    i += 1;
                }
            }
            t += 1;
        }
        if row < m && col < n {
            // SAFETY: row < m, col < n: below m·n, which C holds.
            unsafe { *c.add(row_major(row as u64, col as u64, n as u64) as usize) = acc };
        }
    }
}

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

crate::hopper_kernel! {
    #[launch_bounds(256, 1)]
    /// Warp tiling through a `cp.async` ring: 128 × 256 blocks of 8 warps of 64 × 64, 8 × 16
    /// outputs a thread, k steps of 16, both tiles copied global → shared by `cp.async` three
    /// stages ahead, so no register holds a tile in flight and 128 accumulators fit. Per k step
    /// a warp makes 6 `ld.shared.v4` (2 of A: 8 contiguous vectors; 4 of B: 4 contiguous
    /// vectors) for 128 FMAs a thread. Per k tile a warp copies A one float at a time, 4 rows ×
    /// 32 bytes a copy (4 sectors, each row's 128-byte line prefetched into L2; transposed into
    /// Aᵀ, 32 distinct banks), 8 copies a thread, and B 16 bytes at a time, 512 contiguous bytes
    /// a copy (16 sectors), 4 a thread. Changes
    /// from `matmul_warptile_sm90`: twice the outputs a thread (a third fewer shared loads per
    /// FMA), no loads through registers, and one block a multiprocessor instead of two.
    /// Assumes whole tiles and 16-byte aligned buffers (no bounds checks).
    pub unsafe fn matmul_warptile_async(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded plan guarantees (see `warptile_async`).
        unsafe { hopper_device::warptile_async::<8, 16, WTA_NA, WTA_NB, WTA_STAGES, false>(WARPTILE_ASYNC, a, b, c, m, n, k) }
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
        unsafe { hopper_device::warptile_async::<8, 16, WTA_NA, WTA_NB, WTA_STAGES, true>(WARPTILE_ASYNC, a, b, c, m, n, k) }
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
        unsafe { hopper_device::warptile_streamk::<8, 16, WTA_NA, WTA_NB>(a, b, c, m, n, k) }
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
mod device {
    use super::*;

    /// Element (r, i) of a `rows × cols` row-major matrix, 0 outside it.
    ///
    /// # Safety
    /// `p` holds `rows * cols` floats.
    #[inline(always)]
    unsafe fn at(p: *const f32, r: u32, i: u32, rows: u32, cols: u32) -> f32 {
        // SAFETY: r < rows and i < cols, so the index is below rows * cols.
        if r < rows && i < cols { unsafe { *p.add(row_major(r as u64, i as u64, cols as u64) as usize) } } else { 0.0 }
    }

    /// # Safety
    /// Buffers hold m·k, k·n and m·n floats; the launch is (TILE, TILE) threads with
    /// `TILED_SHARED_FLOATS` floats of shared memory (checked by the plan).
    #[inline(always)]
    pub(super) unsafe fn tiled<const PREFETCH: bool>(
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        m: u32,
        n: u32,
        k: u32,
    ) {
        let s = shared::dynamic::<f32>();
        // SAFETY: the launch has 2 * TILE * TILE floats of shared memory; B's tile is the second half.
        let (sa, sb) = (s, unsafe { s.add((TILE * TILE) as usize) });
        let (tx, ty) = (thread::thread_idx_x(), thread::thread_idx_y());
        let (row, col) = tiled_coords(thread::block_idx_x(), thread::block_idx_y(), tx, ty);
        let here = tile_offset(ty, tx) as usize;
        let tiles = k.div_ceil(TILE);
        let mut acc = 0.0f32;
        // SAFETY (whole body): `at` checks global bounds; shared indices < TILE * TILE because
        // tx, ty, i < TILE.
        unsafe {
            // With PREFETCH the registers always hold the tile to be stored next.
            let mut next_a = if PREFETCH { at(a, row, tile_a_col(0, tx), m, k) } else { 0.0 };
            let mut next_b = if PREFETCH { at(b, tile_b_row(0, ty), col, k, n) } else { 0.0 };
            let mut t = 0;
            while t < tiles {
                if PREFETCH {
                    *sa.add(here) = next_a;
                    *sb.add(here) = next_b;
                } else {
                    *sa.add(here) = at(a, row, tile_a_col(t, tx), m, k);
                    *sb.add(here) = at(b, tile_b_row(t, ty), col, k, n);
                }
                // The tile is complete before anyone reads it.
                thread::sync_threads();
                if PREFETCH && t + 1 < tiles {
                    // Issued before the arithmetic, so the loads' latency hides behind it.
                    next_a = at(a, row, tile_a_col(t + 1, tx), m, k);
                    next_b = at(b, tile_b_row(t + 1, ty), col, k, n);
                }
                // Straight-line, as nvcc compiles the CUDA C twin's constant 32-trip loop: rolled,
                // LLVM unrolls it only 4 times and pays 5 loop-control instructions per 4 FMAs.
                unroll_tile!(i => {
                    acc = fma(*sa.add(tile_offset(ty, i) as usize), *sb.add(tile_offset(i, tx) as usize), acc);
                });
                // Everyone is done reading the tile before it is overwritten.
                thread::sync_threads();
                t += 1;
            }
            if row < m && col < n {
                *c.add(row_major(row as u64, col as u64, n as u64) as usize) = acc;
            }
        }
    }

    /// 16 bytes of shared memory, so shared loads of it are `ld.shared.v4`.
    #[repr(C, align(16))]
    #[derive(Clone, Copy)]
    pub(super) struct V4(pub(super) [f32; 4]);

    /// # Safety
    /// `regblock_supports(m, n, k)`; buffers hold m·k, k·n and m·n floats and start on 16-byte
    /// boundaries; the launch is `regblock_grid(m, n)` blocks of `RB_THREADS` threads with
    /// `RB_SHARED_FLOATS` floats of shared memory (all checked by the plan).
    #[inline(always)]
    pub(super) unsafe fn regblock(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        let _ = m;
        let s = shared::dynamic::<V4>();
        let t = thread::thread_idx_x();
        let (tx, ty) = rb_thread(t);
        let (row0, col0) = rb_block_origin(thread::block_idx_x(), thread::block_idx_y());
        // Global load assignment: one vector of the A tile and one of the B tile per thread.
        let a_at = rb_a_load(t);
        let b_at = rb_b_load(t);
        // Shared layout in V4 units: stage s holds Aᵀ (BK × BM/4) then B (BK × BN/4).
        const STAGE: usize = RB_STAGE_V4 as usize;
        const B_OFF: usize = RB_B_OFFSET_V4 as usize;
        let sf = s as *mut f32;
        let mut acc = [[0.0f32; TN as usize]; TM as usize];
        // SAFETY (whole body): the plan checked m % BM == 0, n % BN == 0, k % BK == 0, the
        // buffer lengths and the launch, so every global index below (from the shared index
        // functions, for t < RB_THREADS and the grid's blocks) is in bounds; shared indices stay
        // inside the 2 stages launched (RB_SHARED_FLOATS floats); all vectors are 16-byte aligned.
        unsafe {
            let load_a = |kt: u32| mem::load_v4_f32(a.add(rb_a_index(row0, a_at, kt, k) as usize) as *const [f32; 4]);
            let load_b = |kt: u32| mem::load_v4_f32(b.add(rb_b_index(col0, b_at, kt, n) as usize) as *const [f32; 4]);
            let store = |stage: usize, va: [f32; 4], vb: [f32; 4]| {
                let base = sf.add(stage * STAGE * 4);
                let mut i = 0;
                while i < 4 {
                    *base.add(rb_at_offset(a_at, i) as usize) = va[i as usize];
                    i += 1;
                }
                *s.add(stage * STAGE + B_OFF + rb_b_offset(b_at) as usize) = V4(vb);
            };
            let tiles = k / BK;
            store(0, load_a(0), load_b(0));
            thread::sync_threads();
            let mut kt = 0;
            while kt < tiles {
                let stage = (kt % 2) as usize;
                let more = kt + 1 < tiles;
                let (mut va, mut vb) = ([0.0f32; 4], [0.0f32; 4]);
                if more {
                    va = load_a(kt + 1);
                    vb = load_b(kt + 1);
                }
                let sa = s.add(stage * STAGE);
                let sb = s.add(stage * STAGE + B_OFF);
                // One k step: 4 vector loads from shared memory, 64 FMAs. Called with literal
                // k so the whole BK loop unrolls (LLVM leaves a loop this large rolled).
                let mut step = |kk: u32| {
                    let (a_lo, a_hi) = rb_a_frag(kk, ty);
                    let (b_lo, b_hi) = rb_b_frag(kk, tx);
                    let (a_lo, a_hi) = (*sa.add(a_lo as usize), *sa.add(a_hi as usize));
                    let (b_lo, b_hi) = (*sb.add(b_lo as usize), *sb.add(b_hi as usize));
                    let fa = [a_lo.0[0], a_lo.0[1], a_lo.0[2], a_lo.0[3], a_hi.0[0], a_hi.0[1], a_hi.0[2], a_hi.0[3]];
                    let fb = [b_lo.0[0], b_lo.0[1], b_lo.0[2], b_lo.0[3], b_hi.0[0], b_hi.0[1], b_hi.0[2], b_hi.0[3]];
                    let mut i = 0;
                    while i < TM as usize {
                        let mut j = 0;
                        while j < TN as usize {
                            acc[i][j] = fma(fa[i], fb[j], acc[i][j]);
                            j += 1;
                        }
                        i += 1;
                    }
                };
                step(0);
                step(1);
                step(2);
                step(3);
                step(4);
                step(5);
                step(6);
                step(7);
                if more {
                    // The other stage was last read in the previous trip, before its barrier.
                    store(1 - stage, va, vb);
                }
                thread::sync_threads();
                kt += 1;
            }
            let mut i = 0;
            while i < TM {
                let r = rb_out_row(row0, ty, i);
                let mut half = 0;
                while half < 2 {
                    let col = rb_out_col(col0, tx, half);
                    let j = (half * 4) as usize;
                    let v =
                        [acc[i as usize][j], acc[i as usize][j + 1], acc[i as usize][j + 2], acc[i as usize][j + 3]];
                    let at = row_major(r as u64, col as u64, n as u64) as usize;
                    mem::store_v4_f32(c.add(at) as *mut [f32; 4], v);
                    half += 1;
                }
                i += 1;
            }
        }
    }
    /// The warp-tiled kernels for `cfg`, whose `tm`, `tn`, `a_vectors()` and `b_vectors()` are
    /// `TM`, `TN`, `NA` and `NB` (array lengths must be literal). `EDGE` guards every global
    /// access. The next tile's A is loaded at the start of a tile and stored into the other
    /// stage at k step `SPLIT_AT` (`1..cfg.bk`), where B's loads go out, to be stored at the end:
    /// at most one operand's vectors are held in registers at a time.
    ///
    /// # Safety
    /// Buffers hold m·k, k·n and m·n floats; the launch is `cfg.grid(m, n)` blocks of
    /// `cfg.threads()` threads with `cfg.shared_bytes()` of shared memory. Without `EDGE`,
    /// additionally `cfg.supports(m, n, k)` and all three buffers start on 16-byte boundaries.
    #[inline(always)]
    pub(super) unsafe fn warptile<
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
        let (row0, col0) = cfg.block_origin(thread::block_idx_x(), thread::block_idx_y());
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
            store_a(0, load_a(0));
            store_b(0, load_b(0));
            thread::sync_threads();
            let mut cur = frag(0, 0);
            let mut kt = 0;
            while kt < tiles {
                let st = (kt % 2) as usize;
                // On the last tile the "next" tile is this one again (in bounds, no branch):
                // what it stores into the other stage is never read.
                let next_kt = if kt + 1 < tiles { kt + 1 } else { kt };
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
    fn register_blocking_shape_is_consistent() {
        assert_eq!(RB_SHARED_FLOATS * 4, 16 * 1024);
        assert!(regblock_supports(128, 256, 8));
        assert!(!regblock_supports(128, 200, 8));
        assert!(!regblock_supports(0, 128, 8));
        assert!(!regblock_supports(128, 128, 12));
        assert_eq!(tiled_grid(33, 65), (3, 2));
        assert_eq!(naive_grid(9, 33), (2, 2));
        assert_eq!(regblock_grid(256, 384), (3, 2));
        assert_eq!(band_rows(TILE), 2_097_120);
    }

    #[test]
    fn cp_async_stages_are_disjoint_and_fit() {
        let mut seen = std::collections::HashSet::new();
        for t in 0..MM_STAGES {
            for here in 0..TILE * TILE {
                assert!(seen.insert(mm_a_slot(t, here)) && seen.insert(mm_b_slot(t, here)));
            }
        }
        assert_eq!(seen.len() as u32 * 4, MM_SHARED_BYTES);
        assert_eq!(mm_a_slot(MM_STAGES, 5), mm_a_slot(0, 5), "the ring wraps");
    }

    #[test]
    fn cp_async_vectors_cover_both_tiles_once() {
        let (mut a, mut b) = (vec![0u8; (TILE * TILE) as usize], vec![0u8; (TILE * TILE) as usize]);
        for t in 0..TILE * TILE {
            if let Some((is_b, r, c0)) = mm_vector_of(t) {
                assert!(r < TILE && c0 % 4 == 0 && c0 + 4 <= TILE);
                let hits = if is_b { &mut b } else { &mut a };
                for c in c0..c0 + 4 {
                    hits[tile_offset(r, c) as usize] += 1;
                }
            }
        }
        assert!(a.iter().chain(&b).all(|&h| h == 1));
        // A warp's 32 vectors are 4 rows of 8 consecutive vectors (128 bytes each).
        let warp: Vec<_> = (32..64).map(|t| mm_vector_of(t).unwrap()).collect();
        assert_eq!((warp[0].1, warp[31].1, warp[7].2), (4, 7, 28));
        assert!(mm_vectors(64, 8, 256, 512) && !mm_vectors(64, 6, 256, 512) && !mm_vectors(64, 8, 260, 512));
        assert_eq!((mm_vector_bytes(3, 4, 4, 8), mm_vector_bytes(4, 4, 4, 8), mm_vector_bytes(0, 8, 4, 8)), (16, 0, 0));
    }

    #[test]
    fn row_major_is_64_bit() {
        assert_eq!(row_major(2, 3, 10), 23);
        assert_eq!(row_major(u32::MAX as u64, 5, u32::MAX as u64), u32::MAX as u64 * u32::MAX as u64 + 5);
    }

    #[test]
    fn naive_and_tiled_threads_cover_every_output_once() {
        let (m, n) = (19u32, 45u32);
        let mut hits = vec![0u8; (m * n) as usize];
        let (gx, gy) = naive_grid(m, n);
        for (bx, by, tx, ty) in grid(gx, gy, NAIVE_BLOCK) {
            let (r, c) = naive_coords(bx, by, tx, ty);
            if r < m && c < n {
                hits[row_major(r as u64, c as u64, n as u64) as usize] += 1;
            }
        }
        assert!(hits.iter().all(|&h| h == 1));
        let mut hits = vec![0u8; (m * n) as usize];
        let (gx, gy) = tiled_grid(m, n);
        for (bx, by, tx, ty) in grid(gx, gy, (TILE, TILE)) {
            let (r, c) = tiled_coords(bx, by, tx, ty);
            if r < m && c < n {
                hits[row_major(r as u64, c as u64, n as u64) as usize] += 1;
            }
            // Shared offsets stay inside one tile; each thread owns its own slot.
            assert!(tile_offset(ty, tx) < TILE * TILE);
        }
        assert!(hits.iter().all(|&h| h == 1));
        // The tiles a block stages walk k in order: A column t * TILE + tx, B row t * TILE + ty.
        assert_eq!((tile_a_col(2, 5), tile_b_row(2, 7)), (69, 71));
    }

    /// Every `(bx, by, tx, ty)` of a grid of `block`-sized blocks.
    fn grid(gx: u32, gy: u32, block: (u32, u32)) -> impl Iterator<Item = (u32, u32, u32, u32)> {
        (0..gy).flat_map(move |by| {
            (0..gx).flat_map(move |bx| (0..block.1).flat_map(move |ty| (0..block.0).map(move |tx| (bx, by, tx, ty))))
        })
    }

    #[test]
    fn regblock_stage_is_filled_exactly_once() {
        let mut at = vec![0u8; (BK * BM) as usize];
        let mut bt = vec![0u8; (BK * BN / 4) as usize];
        for t in 0..RB_THREADS {
            let (a_row, a_col) = rb_a_load(t);
            assert!(a_row < BM && a_col + 4 <= BK);
            for i in 0..4 {
                at[rb_at_offset((a_row, a_col), i) as usize] += 1;
            }
            let (b_row, b_col) = rb_b_load(t);
            assert!(b_row < BK && b_col + 4 <= BN && b_col % 4 == 0);
            bt[rb_b_offset((b_row, b_col)) as usize] += 1;
        }
        assert!(at.iter().all(|&h| h == 1), "Aᵀ");
        assert!(bt.iter().all(|&h| h == 1), "B");
        assert_eq!(RB_B_OFFSET_V4 * 4, BK * BM);
    }

    #[test]
    fn regblock_fragments_stay_in_their_part_of_the_stage() {
        for kk in 0..BK {
            for t in 0..RB_THREADS {
                let (tx, ty) = rb_thread(t);
                let (lo, hi) = rb_a_frag(kk, ty);
                assert!(lo < RB_B_OFFSET_V4 && hi < RB_B_OFFSET_V4);
                // The A vectors hold rows ty*4.. and BM/2 + ty*4.. of Aᵀ's row kk.
                assert_eq!((lo * 4 % BM, hi * 4 % BM, lo * 4 / BM), (ty * 4, BM / 2 + ty * 4, kk));
                let (lo, hi) = rb_b_frag(kk, tx);
                assert!(lo < BK * BN / 4 && hi < BK * BN / 4);
                assert_eq!((lo * 4 % BN, hi * 4 % BN, lo * 4 / BN), (tx * 4, BN / 2 + tx * 4, kk));
                // What the fragment reads is what rb_out_row / rb_out_col say the thread owns.
                assert_eq!(rb_out_row(0, ty, 0), ty * 4);
                assert_eq!(rb_out_row(0, ty, 4), BM / 2 + ty * 4);
                assert_eq!(rb_out_col(0, tx, 1), BN / 2 + tx * 4);
            }
        }
    }

    #[test]
    fn regblock_threads_cover_the_output_tile_once_in_256_byte_runs() {
        let mut hits = vec![0u8; (BM * BN) as usize];
        for t in 0..RB_THREADS {
            let (tx, ty) = rb_thread(t);
            for i in 0..TM {
                for half in 0..2 {
                    let (r, c) = (rb_out_row(0, ty, i), rb_out_col(0, tx, half));
                    for j in 0..4 {
                        hits[(r * BN + c + j) as usize] += 1;
                    }
                }
            }
        }
        assert!(hits.iter().all(|&h| h == 1));
        // A warp (threads 32w .. 32w + 31) stores, for each (i, half), two rows of 16
        // consecutive 16-byte vectors: contiguous 256-byte runs.
        for w in 0..RB_THREADS / 32 {
            let cols: Vec<u32> = (32 * w..32 * w + 16).map(|t| rb_out_col(0, rb_thread(t).0, 0)).collect();
            assert!(cols.windows(2).all(|p| p[1] == p[0] + 4));
        }
    }

    #[test]
    fn regblock_global_loads_stay_inside_a_supported_shape() {
        let (m, n, k) = (256u32, 384u32, 24u32);
        let (gx, gy) = regblock_grid(m, n);
        for (bx, by) in [(0, 0), (gx - 1, gy - 1)] {
            let (row0, col0) = rb_block_origin(bx, by);
            for t in [0, 1, 31, 32, RB_THREADS - 1] {
                for kt in [0, k / BK - 1] {
                    assert!(rb_a_index(row0, rb_a_load(t), kt, k) + 4 <= (m * k) as u64);
                    assert!(rb_b_index(col0, rb_b_load(t), kt, n) + 4 <= (k * n) as u64);
                }
                let (tx, ty) = rb_thread(t);
                let last = row_major(rb_out_row(row0, ty, TM - 1) as u64, rb_out_col(col0, tx, 1) as u64, n as u64);
                assert!(last + 4 <= (m * n) as u64);
            }
        }
    }

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
