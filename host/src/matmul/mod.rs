//! FP32 matrix multiply: plans, launchers and the float64 CPU reference for the kernels in
//! `kernels-gpu/src/matmul/` (naive, shared tiles, tiles with prefetch, tiles through a
//! `cp.async` pipeline, register blocking, warp tiling, and on Hopper warp tiling through a
//! `cp.async` ring and its stream-K form, split-K over the guarded small tile, and the skinny and
//! thin kernels). [`matmul`] picks one for every shape ([`choose`]).
//!
//! Any shape that fits in device memory is taken: m, n and k are `u32` kernel parameters, and
//! every kernel indexes in 64 bits. The one limit left is the grid's y dimension (65535 blocks),
//! which caps the rows of one launch at [`Method::band_rows`]; taller matrices are multiplied in
//! row bands, each a launch of its own over rows `r0..r1` of A and C (sub-slices) and all of B.
//!
//! One file a stage, named as its run id (its kernel's name less `matmul_`), in teaching order:
//! `naive`, `tiled`, `prefetch`, `cp_async`, `regblock`, `warptile` (with its sm_90 build and its
//! small-grid and guarded shapes), `warptile_async`, `warptile_streamk`, `warptile_spread`,
//! `spread_streamk`, `spread_edge`, `skinny`, `thin`, `split_k` (with its 32-row and 32-column
//! tiles) and `split_k_spread`, each with its stage's
//! descriptor ([`Stage`]: kernels, tile, [`Bounds`], launch geometry, model replay, [`lesson`]
//! shapes, [`footprint`]), its kernels' launch geometry, their replay in the transaction model
//! (`replay`, over what the replays share in `crate::model::matmul`), their footprint for the
//! index proofs (`footprint`) and the tests of their plans; this module the one table of
//! descriptors ([`Method::stage`]), the checks and plans every kernel shares, the library's
//! choice and the CPU reference. [`Method`], [`choose`], the model, the lesson harness's
//! registry, checks and benches and the property tests all read the table. The kernels'
//! constants and index math are public once, at `coalesce_kernels::matmul`; this module
//! re-exports only the kernel-crate types its own signatures use ([`WarpTile`], [`StreamK`]).
//!
//! # Adding a stage
//!
//! A new stage `<id>` (its run id: its kernel `matmul_<id>` less the prefix) touches four files:
//! its own two, and a line or a few in two more, each of which the compiler or a test asks for.
//! 1. `kernels-gpu/src/matmul/<id>.rs`, new: its kernels, declared with `kernel!` (built into
//!    `host/ptx/` by `cargo xtask build-ptx --refresh`), their device code and index math;
//! 2. `kernels-gpu/src/matmul/mod.rs`: `mod <id>; pub use <id>::*;`, which the host's imports of
//!    its kernel handles need;
//! 3. `host/src/matmul/<id>.rs`, new: its launch geometry, its replay (a `Replay` of its warps
//!    for the model), its footprint (a [`footprint::Footprint`] that walks its kernels' own index
//!    functions and guards for the index proofs) and its descriptor, a [`Stage`] with every field
//!    given: those two, its [`lesson`] shapes and its [`Bounds`] among them ([`Bounds`] has no
//!    default: an unguarded kernel is [`Bounds::WholeTiles`] of its tile, which [`validate`] then
//!    enforces); an earlier stage's launch, replay or footprint it shares is imported from that
//!    stage's file. The replay and the footprint, and their two fields of the descriptor, are
//!    compiled with the feature `model` only (`#[cfg(feature = "model")]`, as every stage has them);
//! 4. this module: `mod <id>;`, a variant of [`Method`] (the id in CamelCase) and the line
//!    `<id>::STAGE` in the table (`STAGES`), both in teaching order (`Method::ALL` does not
//!    compile while the two orders differ).
//!
//! The registry row, the checks, the benches (a [`Bench::Shapes`] list labels its own runs), the
//! model's lookup and the property tests (their strategies, and the index proofs through each
//! stage's footprint) follow from the table: nothing else names a stage. A test
//! (`every_matmul_kernel_has_a_descriptor`) fails while a `matmul_*` kernel of the PTX has no
//! descriptor, and a descriptor left out of the table is dead code, which clippy refuses.
use std::ops::Range;

use crate::buffer::{DeviceRead, DeviceWrite};
use crate::error::{Error, Result, aligned16, dim32, exactly, in_range};
use crate::gpu::Gpu;
use crate::launch::{Call, In, Kernel, Launch, Out};
// The transaction model's side of the table: `Stage::replay`, `model` and its lookup.
#[cfg(feature = "model")]
use crate::{
    buffer::DeviceViewMut,
    error::product,
    model::matmul::{Replay, Replayed, counts},
    model::{Counts, fake_slice, no_replay},
};
use coalesce_kernels::matmul::{SKINNY_ROWS, THIN_COLS, WARPTILE, WARPTILE_ASYNC, band_rows, matmul_warptile_sm90};
pub use coalesce_kernels::matmul::{StreamK, WarpTile};

// One file a stage (teaching order in the module docs), each with its descriptor.
mod cp_async;
mod warptile_async;
// What the index proofs walk: data for `host/tests/props_matmul.rs`, not the library's API.
#[cfg(feature = "model")]
#[doc(hidden)]
pub mod footprint;
// The lesson harness's shapes and summaries: data for `coalesce-benches`, not the library's API.
#[doc(hidden)]
pub mod lesson;
mod naive;
mod prefetch;
mod regblock;
mod skinny;
mod split_k;
mod split_k_spread;
mod spread_edge;
mod spread_streamk;
mod thin;
mod tiled;
mod warptile;
mod warptile_spread;
mod warptile_streamk;

#[cfg(feature = "model")]
use footprint::Footprint;
pub use lesson::{Bench, Lesson};
pub use split_k::{SPLIT_K_FROM, SPLIT_K_SHORT, split_k_pays, split_k_stage};
pub use split_k_spread::{SPREAD_SPLIT_MIN_TILES, split_k_spread_pays};
pub use warptile_streamk::{stream_k, stream_k_pays};

/// Parameter list of every matmul kernel: A, B, C, m, n, k.
pub(crate) type MatmulSig = fn(*const f32, *const f32, *mut f32, u32, u32, u32);

// m·k, k·n and m·n of `u32` dimensions are computed in `usize`: they cannot overflow 64 bits.
const _: () = assert!(usize::BITS >= 64, "matmul lengths need a 64-bit host");

/// The kernels, in teaching order: each an index into the table of stage descriptors
/// ([`Method::stage`]), in the same order, and named as its run id (`warptile_streamk`:
/// [`Method::WarptileStreamk`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// One output a thread, operands straight from global memory.
    Naive,
    /// 32 × 32 shared-memory tiles.
    Tiled,
    /// Tiles with the next one prefetched into registers.
    Prefetch,
    /// Tiles through a 4-stage `cp.async` pipeline (Hopper module).
    CpAsync,
    /// 128 × 128 block tile, 8 × 8 outputs a thread (whole tiles only, 16-byte aligned buffers).
    Regblock,
    /// Warp-tiled 128 × 128 × 16 ([`WARPTILE`]; whole tiles only, 16-byte aligned buffers).
    Warptile,
    /// [`Method::Warptile`] built for sm_90, with its later split (Hopper module).
    WarptileSm90,
    /// Warp-tiled 128 × 256 × 16 through a 3-stage `cp.async` ring, 8 × 16 outputs a thread
    /// ([`WARPTILE_ASYNC`]; Hopper module; whole tiles only, 16-byte aligned buffers).
    WarptileAsync,
    /// Stream-K ([`StreamK`]; Hopper module; whole tiles only, 16-byte aligned buffers): the
    /// whole waves of tiles through `matmul_warptile_streamk_waves` (the async kernel, by
    /// linear block id), then `matmul_warptile_streamk`
    /// shares the last wave out by k iteration. Two launches a multiply ([`Method::launches`]).
    WarptileStreamk,
    /// [`Method::WarptileAsync`] with each thread's copies spread two at a time over a tile's k
    /// steps, through a 4-stage ring (Hopper module; whole tiles only, 16-byte aligned buffers).
    WarptileSpread,
    /// Stream-K over [`Method::WarptileSpread`]'s k loop (Hopper module; whole tiles only,
    /// 16-byte aligned buffers): `matmul_spread_streamk_waves`, then `matmul_spread_streamk`.
    SpreadStreamk,
    /// [`Method::SpreadStreamk`] for any shape and any (4-byte) alignment (Hopper
    /// module): partial tiles counted in the schedule, rows of A clamped, columns of B wrapped, B
    /// copied a float at a time, a partial last k tile after the ring, stores checked.
    /// `matmul_spread_edge_waves`, then `matmul_spread_edge`.
    SpreadEdge,
    /// Warp-tiled 64 × 128 × 16 for small grids
    /// ([`WARPTILE_SMALL`](coalesce_kernels::matmul::WARPTILE_SMALL); whole tiles only, 16-byte
    /// aligned buffers).
    WarptileSmall,
    /// Warp-tiled 128 × 128 × 16 with every access guarded: any shape, any (4-byte) alignment.
    WarptileEdge,
    /// [`Method::WarptileEdge`] built for sm_90, its lanes interleaved as [`WARPTILE`]'s
    /// (Hopper module).
    WarptileEdgeSm90,
    /// m ≤ 8: a block a slab of B's columns for all of k, B read once in whole sectors, k split
    /// over the block's threads (any shape, any alignment; 8 rows of C a block).
    Skinny,
    /// n ≤ 8: a warp streams two rows of A in 512-byte loads, B's chunk of k staged column-major
    /// in shared memory (any shape, any alignment; 16 rows and 8 columns of C a block).
    Thin,
    /// Few tiles, long k: [`Method::WarptileSmall`]'s guarded tile with each tile's k cut into
    /// up to 8 ranges, a block each, added in order by a tile's last block (Hopper module; any
    /// shape, any alignment).
    SplitK,
    /// [`Method::SplitK`] on 32 × 128 tiles, 4 × 8 sums a thread, four blocks a multiprocessor
    /// and k cut up to 16 ways, for m ≤ 32 (Hopper module; any shape, any alignment).
    SplitKWide,
    /// [`Method::SplitKWide`] turned over: 128 × 32 tiles, 8 × 4 sums a thread, for n ≤ 32
    /// (Hopper module; any shape, any alignment).
    SplitKTall,
    /// [`Method::SplitK`] over [`Method::WarptileSpread`]'s 128 × 256 tiles and ring, k cut up to
    /// 8 ways (Hopper module; whole tiles only, 16-byte aligned buffers).
    SplitKSpread,
}

/// How a stage's kernel meets the edges of C. Every descriptor says which, with no default:
/// [`validate`] and the safety of [`plan`]'s launches rest on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bounds {
    /// Every global access guarded: any non-empty shape, any (4-byte) alignment.
    Guarded,
    /// No bounds checks: whole `bm × bn × bk` tiles only, from 16-byte aligned buffers.
    WholeTiles {
        /// Rows of C a tile covers.
        bm: u32,
        /// Columns of C a tile covers.
        bn: u32,
        /// Columns of A (rows of B) a k tile covers.
        bk: u32,
    },
}

impl Bounds {
    /// Whole tiles of a warp-tiled shape.
    pub const fn tiles_of(cfg: WarpTile) -> Bounds {
        Bounds::WholeTiles { bm: cfg.bm, bn: cfg.bn, bk: cfg.bk }
    }

    /// Whether a kernel of these bounds takes an `m × n × k` multiply (shape only).
    pub const fn supports(self, m: u32, n: u32, k: u32) -> bool {
        let whole = match self {
            Bounds::Guarded => true,
            Bounds::WholeTiles { bm, bn, bk } => m.is_multiple_of(bm) && n.is_multiple_of(bn) && k.is_multiple_of(bk),
        };
        m > 0 && n > 0 && k > 0 && whole
    }
}

/// Stream-K's first launch: the whole waves of tiles, by linear block id.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Waves {
    /// Its kernel, launched on [`StreamK::whole_grid`] before the stage's own.
    pub kernel: Kernel<MatmulSig>,
    /// The stage whose blocks it runs, each taking the tile of its linear id (stage 11's own,
    /// over the schedule that counts partial tiles): the model and the index proofs take it as
    /// that stage's.
    pub blocks_of: Method,
}

/// One stage of the lesson, described once beside its launch geometry (`naive.rs`, ...): what
/// [`Method`], [`choose`], the plans, the model, the lesson harness and the property tests read
/// of it. It has no default, so a stage that leaves out a field (its [`Bounds`] above all) does
/// not compile.
pub struct Stage {
    /// Its place in the table.
    pub method: Method,
    /// Its kernel (stream-K's: the shared row's, launched after [`Stage::waves`]).
    pub kernel: Kernel<MatmulSig>,
    /// Stream-K's whole waves, launched first; `None` for a one-launch stage.
    pub waves: Option<Waves>,
    /// The warp-tiled kernels' shape, `None` for the others.
    pub warp_tile: Option<WarpTile>,
    /// Guarded, or whole tiles only.
    pub bounds: Bounds,
    /// Rows of C one block computes.
    pub block_rows: u32,
    /// Grid, block and shared memory of [`Stage::kernel`]'s launch over `m` rows, `n` columns
    /// and depth `k` on a GPU of `sms` multiprocessors ([`Method::launch`]).
    launch: fn(&Stage, u32, u32, u32, u32) -> Launch,
    /// How the model replays its launches.
    #[cfg(feature = "model")]
    pub(crate) replay: Replay,
    /// What its kernels' threads touch, for the index proofs.
    #[cfg(feature = "model")]
    #[doc(hidden)]
    pub footprint: Footprint,
    /// What the lesson harness runs it at.
    #[doc(hidden)]
    pub lesson: Lesson,
}

/// The stages in teaching order, indexed by [`Method`]: the one table. Its length is
/// [`Method::ALL`]'s, so a stage is one line here.
static STAGES: &[Stage] = &[
    naive::STAGE,
    tiled::STAGE,
    prefetch::STAGE,
    cp_async::STAGE,
    regblock::STAGE,
    warptile::WARPTILE_STAGE,
    warptile::SM90_STAGE,
    warptile_async::STAGE,
    warptile_streamk::STAGE,
    warptile_spread::STAGE,
    spread_streamk::STAGE,
    spread_edge::STAGE,
    warptile::SMALL_STAGE,
    warptile::EDGE_STAGE,
    warptile::EDGE_SM90_STAGE,
    skinny::STAGE,
    thin::STAGE,
    split_k::STAGE,
    split_k::WIDE_STAGE,
    split_k::TALL_STAGE,
    split_k_spread::STAGE,
];

impl Method {
    /// Every method, in teaching order (the table's).
    pub const ALL: [Method; STAGES.len()] = {
        let mut all = [Method::Naive; STAGES.len()];
        let mut i = 0;
        while i < all.len() {
            all[i] = STAGES[i].method;
            // `stage` indexes the table by the variant.
            assert!(all[i] as usize == i, "the stage table is in Method's order");
            i += 1;
        }
        all
    };

    /// The stage's descriptor.
    pub const fn stage(self) -> &'static Stage {
        &STAGES[self as usize]
    }

    /// The kernel's typed handle (stream-K's: its shared row's, launched after its whole
    /// waves' kernel).
    pub const fn kernel(self) -> Kernel<MatmulSig> {
        self.stage().kernel
    }

    /// The warp-tiled kernels' shape, `None` for the others.
    pub const fn warp_tile(self) -> Option<WarpTile> {
        self.stage().warp_tile
    }

    /// Whether a multiply is stream-K's two launches ([`Method::launches`]): whole waves, then a
    /// shared row.
    pub const fn stream_k(self) -> bool {
        self.stage().waves.is_some()
    }

    /// Whether the kernel has no bounds checks: it takes whole tiles only, from 16-byte aligned
    /// buffers ([`Bounds::WholeTiles`], which every descriptor states or not).
    pub const fn whole_tiles_only(self) -> bool {
        matches!(self.stage().bounds, Bounds::WholeTiles { .. })
    }

    /// Rows of C one block computes.
    pub const fn block_rows(self) -> u32 {
        self.stage().block_rows
    }

    /// Most rows one launch takes (65535 blocks of [`Method::block_rows`]): a multiple of the
    /// block's rows, so the bands of a whole-tiles-only kernel keep whole tiles.
    pub const fn band_rows(self) -> u32 {
        band_rows(self.block_rows())
    }

    /// Grid, block and shared memory of [`Method::kernel`]'s launch over `m` rows (at most
    /// [`Method::band_rows`]), `n` columns and depth `k` on a GPU of `sms` multiprocessors (only
    /// the stream-K row's and split-K's grids depend on `sms`: [`stream_k`], and only
    /// split-K's on `k`, which caps its cut at two k tiles a range). A multiply may take more
    /// than this one launch: [`Method::launches`].
    pub fn launch(self, m: u32, n: u32, k: u32, sms: u32) -> Launch {
        let stage = self.stage();
        (stage.launch)(stage, m, n, k, sms)
    }

    /// The launches of one `m × n × k` multiply (at most [`Method::band_rows`] rows), in the order
    /// they are queued: [`Method::kernel`] with [`Method::launch`] for every method but
    /// stream-K, whose whole waves (if any) go through [`Stage::waves`] on
    /// [`StreamK::whole_grid`] and its shared tiles (if any) through [`Method::kernel`] on
    /// [`StreamK::row_grid`] (a guarded stage's schedule counting partial tiles).
    pub fn launches(self, m: u32, n: u32, k: u32, sms: u32) -> impl Iterator<Item = (Kernel<MatmulSig>, Launch)> {
        let stage = self.stage();
        let launch = self.launch(m, n, k, sms);
        let launches = match stage.waves {
            Some(waves) => {
                let edge = matches!(stage.bounds, Bounds::Guarded);
                warptile_streamk::launches_of((m, n, sms, edge), (waves.kernel, stage.kernel), launch)
            }
            None => [None, Some((stage.kernel, launch))],
        };
        launches.into_iter().flatten()
    }

    /// Whether the kernel takes an `m × n × k` multiply (shape only; see [`validate`]): any
    /// non-empty shape where every access is guarded, whole tiles of its own shape otherwise.
    pub const fn supports(self, m: u32, n: u32, k: u32) -> bool {
        self.stage().bounds.supports(m, n, k)
    }
}

/// The dimensions of a validated multiply, as the kernels take them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    /// Rows of A and C.
    pub m: u32,
    /// Columns of B and C.
    pub n: u32,
    /// Columns of A, rows of B.
    pub k: u32,
}

/// Checks `C (m × n) = A (m × k) · B (k × n)` for `method`, in this order: every dimension is at
/// least 1 ([`Error::Empty`]) and fits `u32` ([`Error::OutOfRange`]); a whole-tiles-only kernel
/// ([`Bounds::WholeTiles`] in its descriptor) gets whole tiles ([`Error::Unsupported`]); each buffer holds
/// exactly its matrix ([`Error::LengthMismatch`]); a whole-tiles-only kernel's buffers start on
/// 16-byte boundaries ([`Error::Misaligned`]).
pub fn validate(
    method: Method,
    a: &impl DeviceRead<f32>,
    b: &impl DeviceRead<f32>,
    c: &impl DeviceRead<f32>,
    (m, n, k): (usize, usize, usize),
) -> Result<Dims> {
    let dims = Dims { m: dim32("matmul m", m)?, n: dim32("matmul n", n)?, k: dim32("matmul k", k)? };
    if let Bounds::WholeTiles { bm, bn, bk } = method.stage().bounds
        && !method.supports(dims.m, dims.n, dims.k)
    {
        return Err(Error::Unsupported(format!(
            "{method:?} matmul needs m a multiple of {bm}, n of {bn} and k of {bk}, got {m} x {n} x {k}"
        )));
    }
    exactly("matmul A", a.len(), m * k)?;
    exactly("matmul B", b.len(), k * n)?;
    exactly("matmul C", c.len(), m * n)?;
    if method.whole_tiles_only() {
        aligned16("matmul A", a.address())?;
        aligned16("matmul B", b.address())?;
        aligned16("matmul C", c.address())?;
    }
    Ok(dims)
}

/// Validates a multiply of `method` over all of `a`, `b` and `c` on a GPU of `sms`
/// multiprocessors and hands each of its launches ([`Method::launches`]: one, two for
/// stream-K) to `each`, in order, stopping at the first error `each` returns. `m` must fit one
/// grid (at most [`Method::band_rows`] rows, else [`Error::OutOfRange`]); [`plan_bands`] takes
/// any `m`. Other errors as [`validate`], before any launch is handed out.
pub fn plan(
    method: Method,
    a: &impl DeviceRead<f32>,
    b: &impl DeviceRead<f32>,
    c: &mut impl DeviceWrite<f32>,
    shape: (usize, usize, usize),
    sms: u32,
    mut each: impl FnMut(Call<'_, MatmulSig>) -> Result<()>,
) -> Result<()> {
    let Dims { m, n, k } = validate(method, a, b, c, shape)?;
    in_range("matmul rows of one launch", m.into(), 1, method.band_rows().into())?;
    for (kernel, launch) in method.launches(m, n, k, sms) {
        // SAFETY: the buffers hold exactly m·k, k·n and m·n floats (checked above); the kernel
        // and launch are `method`'s descriptor's (`Method::launches`), whose required `bounds`
        // puts the kernel in one of the cases below (no guards: `Bounds::WholeTiles`); and every
        // kernel reads or writes only `row_major(r, col, cols)` with r < rows, col < cols of its
        // matrix:
        // - naive and tiled guard each global access (`row < m && col < n`, and `at` checks `r <
        //   rows && i < cols`), whatever the grid; their shared indices are `tile_offset(y, x)`
        //   with x, y < TILE, inside the `TILED_SHARED_FLOATS` launched, and their coordinates
        //   (`naive_coords`, `tiled_coords`) use the block size the launch has;
        // - the cp.async kernel guards each copy the same way (an element outside reads 0 bytes
        //   from the matrix's first float) and its store by `row < m && col < n`; it copies 16-byte
        //   vectors only where `mm_vectors` holds (k and n multiples of 4, both inputs 16-byte
        //   aligned: a vector starting inside a row ends inside it), else floats; its ring slots
        //   `mm_a_slot`/`mm_b_slot` stay inside the `MM_SHARED_BYTES` launched;
        // - the register-blocked and the unguarded warp-tiled kernels have no guards, and their
        //   descriptors say so (`Bounds::WholeTiles` of their tile, a field no stage can leave
        //   out): the shape is whole tiles and the buffers aligned (checked by `validate`), the grid is exactly those tiles, of the threads
        //   and shared memory the kernel assumes (`regblock_grid`/`RB_THREADS`/`RB_SHARED_FLOATS`,
        //   `WarpTile::grid`/`threads`/`shared_bytes`), so its largest vectors (the last k tile's
        //   loads, the last block's stores: `rb_*`,
        //   `WarpTile::a_load`/`b_load`/`out_row`/`out_col`) end at m·k, k·n and m·n, and every
        //   buffer starts on a 16-byte boundary (checked);
        // - the guarded warp-tiled kernel clamps rows of A to m - 1 and columns of B to n - 1,
        //   reads k columns/rows past k only after checking them against k, and stores only `r <
        //   m`, `col < n`; its shared offsets are those of the unguarded kernel on the same launch;
        // - stream-K's whole waves are the unguarded `cp.async` warp-tiled kernel, but block `i`
        //   (linear id) takes whole tile `i` (`WarpTile::tile_origin`), and its grid has `waves *
        //   wave <= tiles` blocks;
        // - the stream-K row computes the same whole tiles (`StreamK::origin` of tiles below
        //   `tiles`, k tiles below `iters`, from the shape and the row it is launched as, which is
        //   `stream_k`'s), reads back only tiles of C it or an earlier block of the row stored (its
        //   whole waves are queued before it, on the same stream), and indexes its module's flags
        //   by blocks of a wave of at most `SK_MAX_WAVE`; a grid too tall for the driver is refused
        //   at launch (`Launch::check_limits`), never cut;
        // - stage 11's two kernels are stream-K's over the schedule that counts partial tiles
        //   (`StreamK::covering`, from the same shape and row grid as `spread_edge::launches`):
        //   every tile they take starts inside C, their copies read rows of A clamped to m - 1 and
        //   columns of B below n (`b_wrap_col`) at rows and columns below whole k tiles, the partial
        //   k tile's copies only below k (`k_left`), and their loads and stores of C only `r < m`,
        //   `col < n`; 4-byte copies and stores need no more than an f32 buffer's alignment;
        // - split-K (stages 14 to 16) runs the guarded warp tile's k loop (the guarded warp-tiled
        //   case above) over one k range of a tile inside the grid (`SplitK::of(tile, m, n, k,
        //   sms).grid()` of its kernel's tile, which its blocks read back with `SplitK::of_grid`;
        //   a range past k is empty), indexes its module's workspace and tickets below
        //   `SPLIT_K_WORKSPACE_FLOATS` and `SPLIT_K_TICKETS` (`SplitK::fits`; a grid past them
        //   returns before any access), and stores C only `r < m`, `col < n`; launches of the
        //   four split-K kernels (with stage 17's) are ordered on the device's one stream, so no
        //   two share the workspace;
        // - split-K over the spread ring (stage 17) has no guards (`Bounds::WholeTiles` of
        //   `WARPTILE_ASYNC`: whole tiles, aligned buffers, checked by `validate`): its split
        //   blocks run the spread ring's k loop over one whole-tile k range of a tile of the
        //   schedule (`SplitK::of(SPLIT_K_SPREAD, ..).spread_grid()`, read back from the grid's
        //   width and m; an empty range starts on k's last tile and copies nothing), their
        //   partials in the same workspace (`SplitK::fits`); its reducer blocks, in grid rows
        //   after every split block (`SplitK::reducer`; rows past the last reducer return), each
        //   store one row of the vectors of a whole tile of C; a reducer waits only for blocks of
        //   lower linear id, which start before it, so the launch ends;
        // - m ≤ band_rows keeps grid y ≤ 65535 for the other kernels, so the grid launched is the
        //   grid reasoned about.
        each(unsafe { Call::new(kernel, launch, (In::of(a), In::of(b), Out::of(c), m, n, k)) })?;
    }
    Ok(())
}

/// `0..m` split into consecutive row bands of `band` rows (the last one shorter): each row in
/// exactly one band.
pub fn bands(m: usize, band: usize) -> impl Iterator<Item = Range<usize>> {
    let band = band.max(1);
    // Saturating: a band reaching past usize::MAX ends at m anyway.
    (0..m).step_by(band).map(move |r0| r0..m.min(r0.saturating_add(band)))
}

/// Validates the whole multiply ([`validate`]: nothing is planned if any of it is wrong), then
/// plans each row band of [`Method::band_rows`] rows — rows `r0..r1` of A (`A[r0*k..r1*k]`)
/// and of C (`C[r0*n..r1*n]`) as sub-slices, all of B — and hands each of the band's launches
/// ([`plan`]) with its rows to `each`, in order. Stops at the first error `each` returns.
pub fn plan_bands(
    method: Method,
    a: &impl DeviceRead<f32>,
    b: &impl DeviceRead<f32>,
    c: &mut impl DeviceWrite<f32>,
    shape: (usize, usize, usize),
    sms: u32,
    mut each: impl FnMut(Range<usize>, Call<'_, MatmulSig>) -> Result<()>,
) -> Result<()> {
    let Dims { m, n, k } = validate(method, a, b, c, shape)?;
    let (n, k) = (n as usize, k as usize);
    for rows in bands(m as usize, method.band_rows() as usize) {
        // In range: r1 ≤ m, and A and C hold exactly m·k and m·n floats (validated).
        let a_band = a.slice(rows.start * k..rows.end * k)?;
        let mut c_band = c.slice_mut(rows.start * n..rows.end * n)?;
        // Each band is planned (and so checked) on its own: for a whole-tiles-only kernel this
        // re-checks that the band's rows are whole tiles and its sub-slices 16-byte aligned.
        plan(method, &a_band, b, &mut c_band, (rows.len(), n, k), sms, |call| each(rows.clone(), call))?;
    }
    Ok(())
}

/// Queues `c = a · b` (row-major, `a` is m × k, `b` is k × n) with `method`, in row bands when
/// `m` passes [`Method::band_rows`]. Errors as [`validate`], before anything is queued.
pub fn run(
    gpu: &Gpu,
    method: Method,
    a: &impl DeviceRead<f32>,
    b: &impl DeviceRead<f32>,
    c: &mut impl DeviceWrite<f32>,
    shape: (usize, usize, usize),
) -> Result<()> {
    plan_bands(method, a, b, c, shape, gpu.multiprocessors(), |_, call| gpu.launch(call))
}

/// The method [`matmul`] uses on a GPU of `multiprocessors` SMs, where `sm90` says the Hopper
/// module is loaded:
/// - m at most 8 (a row of A, or a few, against all of B): the skinny kernel (stage 12), which
///   reads B once across the whole GPU, at any shape and alignment;
/// - else n at most 8 (all of A against a column of B, or a few): the thin kernel (stage 13),
///   which reads A once, at any shape and alignment;
/// - else on sm_90, whole 128 × 256 × 16 tiles and 16-byte aligned buffers where split-K pays
///   and the big tiles' ranges are long ([`split_k_spread_pays`]): split-K over the spread ring
///   (stage 17);
/// - else on sm_90, where the split-K tiles are few and k long ([`split_k_pays`]: each tile's k
///   cut at least [`SPLIT_K_FROM`] ways, two k tiles or more a range): split-K, at any shape and
///   alignment, on 32 × 128 tiles for m ≤ 32 (stage 15), 128 × 32 for n ≤ 32 (stage 16), else
///   64 × 128 (stage 14);
/// - whole 128 × 256 × 16 tiles, 16-byte aligned buffers, sm_90, and a grid of those tiles that
///   fills at least three quarters of the multiprocessors (one block each): the spread ring
///   (stage 9, the `cp.async` warp-tiled kernel with its copies spread over the k steps), with
///   its last wave shared out where that pays ([`stream_k_pays`]);
/// - else whole 128 × 128 × 16 tiles and aligned buffers: the warp-tiled kernel, its
///   small-grid shape when the 128 × 128 grid has fewer blocks than the GPU has multiprocessors,
///   its sm_90 build on sm_90;
/// - else on sm_90 the guarded spread ring over stream-K (stage 11), where
///   [`spread_edge_pays`];
/// - else the guarded warp-tiled kernel, which takes any shape (its sm_90 build on sm_90). Stage
///   11's guarded spread ring ([`Method::SpreadEdge`]) is not chosen: on the H100 it ran
///   slower than this at 4097³ and 4000 × 4100 × 4033 (BENCHMARKS.md).
pub fn choose(
    a: &impl DeviceRead<f32>,
    b: &impl DeviceRead<f32>,
    c: &impl DeviceRead<f32>,
    shape: (usize, usize, usize),
    multiprocessors: u32,
    sm90: bool,
) -> Method {
    let blocks = |cfg: WarpTile, m, n| {
        let (gx, gy) = cfg.grid(m, n);
        u64::from(gx) * u64::from(gy)
    };
    if sm90
        && let Ok(Dims { m, n, k }) = validate(Method::SplitKSpread, a, b, c, shape)
        && split_k_spread_pays(m, n, k, multiprocessors)
    {
        return Method::SplitKSpread;
    }
    if let Ok(Dims { m, n, k }) = validate(Method::Skinny, a, b, c, shape) {
        if m <= SKINNY_ROWS {
            return Method::Skinny;
        }
        if n <= THIN_COLS {
            return Method::Thin;
        }
        if sm90 && let Some(method) = split_k_pays(m, n, k, multiprocessors) {
            return method;
        }
    }
    if sm90
        && let Ok(Dims { m, n, k }) = validate(Method::WarptileSpread, a, b, c, shape)
        && 4 * blocks(WARPTILE_ASYNC, m, n) >= 3 * u64::from(multiprocessors)
    {
        // One launch only: taller multiplies go in bands of whole tiles.
        let single = m <= Method::SpreadStreamk.band_rows();
        return if single && stream_k_pays(m, n, k, multiprocessors) {
            Method::SpreadStreamk
        } else {
            Method::WarptileSpread
        };
    }
    match validate(Method::Warptile, a, b, c, shape) {
        Ok(Dims { m, n, .. }) => {
            if blocks(WARPTILE, m, n) < u64::from(multiprocessors) {
                Method::WarptileSmall
            } else if sm90 {
                Method::WarptileSm90
            } else {
                Method::Warptile
            }
        }
        Err(_) if sm90 => match validate(Method::SpreadEdge, a, b, c, shape) {
            Ok(Dims { m, n, k }) if spread_edge_pays(m, n, k, multiprocessors) => Method::SpreadEdge,
            _ => Method::WarptileEdgeSm90,
        },
        Err(_) => Method::WarptileEdge,
    }
}

/// Whether stage 11's guarded spread ring ([`Method::SpreadEdge`]) takes an `m × n × k`
/// multiply that is not whole tiles, on `sms` multiprocessors: one launch (at most
/// [`Method::band_rows`] rows), a grid of its 128 × 256 tiles (partial ones counted) that fills
/// at least three quarters of the multiprocessors, and at least 32 k tiles (the rules of the
/// spread ring and of [`stream_k_pays`]).
pub const fn spread_edge_pays(m: u32, n: u32, k: u32, sms: u32) -> bool {
    let sk = warptile_streamk::schedule(m, n, sms, true);
    m <= Method::SpreadEdge.band_rows()
        && 4 * sk.tiles as u64 >= 3 * sms as u64
        && k.div_ceil(WARPTILE_ASYNC.bk) >= 32
        && sk.waves < coalesce_kernels::launch::MAX_GRID_Y
}

/// The library's matmul: `c = a · b` for any shape that fits in device memory (`a` m × k, `b`
/// k × n, `c` m × n, row-major): warp-tiled, unguarded where the shape is whole tiles and the
/// buffers 16-byte aligned, guarded otherwise ([`choose`]). Errors as [`validate`] for
/// [`Method::WarptileEdge`].
pub fn matmul(
    gpu: &Gpu,
    a: &impl DeviceRead<f32>,
    b: &impl DeviceRead<f32>,
    c: &mut impl DeviceWrite<f32>,
    shape: (usize, usize, usize),
) -> Result<()> {
    // The Hopper module's kernels run over this device's memory only (`Gpu::launch`): with a
    // buffer on a mapped peer, the base module's kernels take the multiply.
    let here = Some(gpu.info().ordinal);
    let local = [a.view().home(), b.view().home(), c.view().home()].iter().all(|home| home.ordinal() == here);
    let sm90 = local && gpu.supports(matmul_warptile_sm90).is_ok();
    run(gpu, choose(a, b, c, shape, gpu.multiprocessors(), sm90), a, b, c, shape)
}

/// What Nsight Compute counts for the `m × n × k` multiply with `method`, one band (at most
/// [`Method::band_rows`] rows), its launches together (stream-K's two summed): the transaction
/// model ([`crate::model`]) replays each launch's kernel from its SASS, with its stage's replay.
/// Errors as [`plan`] (a whole-tiles-only method refuses other shapes).
#[cfg(feature = "model")]
pub fn model(method: Method, (m, n, k): (usize, usize, usize), sms: u32) -> Result<Counts> {
    let a: DeviceViewMut<'static, f32> = fake_slice(0, product("matmul m * k", m, k)?);
    let b: DeviceViewMut<'static, f32> = fake_slice(1, product("matmul k * n", k, n)?);
    let mut c: DeviceViewMut<'static, f32> = fake_slice(2, product("matmul m * n", m, n)?);
    let mut total = Counts::default();
    plan(method, &a, &b, &mut c, (m, n, k), sms, |call| {
        total = total.plus(&replay(&call)?)?;
        Ok(())
    })?;
    Ok(total)
}

/// Counts of a planned launch: its kernel's stage found in the table (stream-K's whole waves: the
/// blocks of the stage they run, each taking the tile of its linear id), replayed by the model.
#[cfg(feature = "model")]
fn replay(call: &Call<'_, MatmulSig>) -> Result<Counts> {
    let kernel = call.kernel();
    let (stage, linear) = Method::ALL
        .iter()
        .map(|method| method.stage())
        .find_map(|stage| match stage.waves {
            _ if stage.kernel == kernel => Some((stage, false)),
            Some(waves) if waves.kernel == kernel => Some((waves.blocks_of.stage(), true)),
            _ => None,
        })
        .ok_or_else(|| no_replay(kernel.name()))?;
    let &(a, b, ref c, m, n, k) = call.args();
    let guarded = matches!(stage.bounds, Bounds::Guarded);
    let replayed = Replayed { replay: &stage.replay, warp_tile: stage.warp_tile, guarded, linear };
    counts(kernel, call.launch(), (a.address(), b.address(), c.address()), (m, n, k), replayed)
}

/// Float64 CPU reference (row-major, i-k-j order so the inner loop streams rows of B). Errors:
/// [`Error::OutOfRange`] if `m * k`, `k * n` or `m * n` passes `usize`,
/// [`Error::LengthMismatch`] unless `a` holds exactly `m * k` floats and `b` `k * n`,
/// [`Error::HostMemory`] where the host cannot allocate C's `m * n` doubles.
pub fn matmul_cpu(a: &[f32], b: &[f32], (m, n, k): (usize, usize, usize)) -> Result<Vec<f64>> {
    use crate::error::{host_vec, product};
    exactly("matmul A", a.len(), product("matmul m * k", m, k)?)?;
    exactly("matmul B", b.len(), product("matmul k * n", k, n)?)?;
    let mut c = host_vec("matmul C", product("matmul m * n", m, n)?, 0.0f64)?;
    if n == 0 || k == 0 {
        // C is all zeros; with n = 0 nothing bounds m (A and C are empty), so the loop over
        // rows below could run up to usize::MAX times doing nothing.
        return Ok(c);
    }
    for i in 0..m {
        let row = &mut c[i * n..(i + 1) * n];
        for p in 0..k {
            let x = f64::from(a[i * k + p]);
            for (r, &y) in row.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                *r += x * f64::from(y);
            }
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::DeviceViewMut;
    use coalesce_kernels::matmul::{BK, BM, BN};

    /// Descriptors of A, B, C with `lens` elements at made-up 256-byte-aligned addresses.
    pub(super) fn slices(
        lens: (usize, usize, usize),
    ) -> (DeviceViewMut<'static, f32>, DeviceViewMut<'static, f32>, DeviceViewMut<'static, f32>) {
        // SAFETY: descriptors only; no planned call is launched.
        unsafe {
            (
                DeviceViewMut::stand_in(0x1_0000_0000, lens.0),
                DeviceViewMut::stand_in(0x80_0000_0000, lens.1),
                DeviceViewMut::stand_in(0x100_0000_0000, lens.2),
            )
        }
    }

    /// Every launch of the planned multiply: its kernel, launch and dimensions.
    pub(super) fn launches_of(
        method: Method,
        shape: (usize, usize, usize),
        lens: (usize, usize, usize),
    ) -> Result<Vec<(&'static str, Launch, Dims)>> {
        let (a, b, mut c) = slices(lens);
        let mut out = Vec::new();
        plan(method, &a, &b, &mut c, shape, 132, |call| {
            let &(_, _, _, m, n, k) = call.args();
            out.push((call.kernel().name(), call.launch(), Dims { m, n, k }));
            Ok(())
        })?;
        Ok(out)
    }

    /// The one launch of a single-launch multiply.
    pub(super) fn plan_of(
        method: Method,
        shape: (usize, usize, usize),
        lens: (usize, usize, usize),
    ) -> Result<(Launch, Dims)> {
        let mut launches = launches_of(method, shape, lens)?;
        assert_eq!(launches.len(), 1, "{method:?} plans one launch");
        let (_, launch, dims) = launches.remove(0);
        Ok((launch, dims))
    }

    #[test]
    fn plan_rejects_bad_shapes_with_their_errors() {
        assert_eq!(plan_of(Method::Naive, (0, 4, 4), (0, 16, 0)).unwrap_err(), Error::Empty("matmul m"));
        assert_eq!(plan_of(Method::Tiled, (4, 4, 0), (0, 0, 16)).unwrap_err(), Error::Empty("matmul k"));
        assert!(matches!(
            plan_of(Method::Naive, (2, 3, 4), (8, 12, 5)),
            Err(Error::LengthMismatch { what: "matmul C", expected: 6, got: 5 })
        ));
        assert!(matches!(
            plan_of(Method::Tiled, (2, 3, 4), (7, 12, 6)),
            Err(Error::LengthMismatch { what: "matmul A", .. })
        ));
        assert!(matches!(
            plan_of(Method::Prefetch, (2, 3, 4), (8, 13, 6)),
            Err(Error::LengthMismatch { what: "matmul B", .. })
        ));
        assert!(matches!(plan_of(Method::Regblock, (100, 128, 8), (800, 1024, 12800)), Err(Error::Unsupported(_))));
        assert!(matches!(
            plan_of(Method::Naive, (1 << 32, 1, 1), (1 << 32, 1, 1 << 32)),
            Err(Error::OutOfRange { what: "matmul m", .. })
        ));
        // One launch stops at 65535 row blocks; plan_bands takes more.
        let m = Method::Tiled.band_rows() as usize + 1;
        assert!(matches!(
            plan_of(Method::Tiled, (m, 1, 1), (m, 1, m)),
            Err(Error::OutOfRange { what: "matmul rows of one launch", .. })
        ));
    }

    #[test]
    fn every_matmul_kernel_has_a_descriptor() {
        // A stage's kernels are its own and its whole waves'; each kernel in one descriptor.
        let described: Vec<&str> = Method::ALL
            .iter()
            .flat_map(|m| [Some(m.kernel()), m.stage().waves.map(|w| w.kernel)])
            .flatten()
            .map(|k| k.name())
            .collect();
        for (i, name) in described.iter().enumerate() {
            assert!(!described[..i].contains(name), "{name} in two descriptors");
        }
        let entries = crate::gpu::ptx_entries(crate::PTX).chain(crate::gpu::ptx_entries(crate::PTX_SM90));
        let mut seen = 0;
        for entry in entries.filter(|e| e.starts_with("matmul_")) {
            assert!(
                described.contains(&entry),
                "{entry} has no stage descriptor: host/src/matmul/<id>.rs and its line in STAGES (host/src/matmul/mod.rs, \"Adding a stage\")"
            );
            seen += 1;
        }
        assert!(seen >= described.len(), "every described kernel is built");
        for method in Method::ALL {
            assert_eq!(method.stage().method, method);
        }
    }

    #[test]
    fn whole_tiles_are_the_kernels_own_tiles() {
        // `validate` checks a whole-tiles-only kernel's shape against its descriptor's bounds:
        // they must be the tiles its grid and index math assume.
        for method in Method::ALL {
            let stage = method.stage();
            let Bounds::WholeTiles { bm, bn, bk } = stage.bounds else { continue };
            let tile = stage.warp_tile.map_or((BM, BN, BK), |cfg| (cfg.bm, cfg.bn, cfg.bk));
            assert_eq!((bm, bn, bk), tile, "{method:?}");
            assert_eq!(stage.block_rows, bm, "{method:?}");
        }
    }

    #[test]
    fn every_method_plans_a_full_band_in_one_grid() {
        for method in Method::ALL {
            let m = method.band_rows() as usize;
            let (n, k) = if method.whole_tiles_only() { (256, 16) } else { (1, 8) };
            let launches = launches_of(method, (m, n, k), (m * k, k * n, m * n)).unwrap();
            // Stream-K's waves are 132 blocks: 65535 tiles are 496 of them and 63 shared.
            let stream_k = method.stream_k();
            let rows: &[u32] = if stream_k { &[65_535 / 132, 1] } else { &[65_535] };
            assert_eq!(launches.iter().map(|(_, l, _)| l.grid.1).collect::<Vec<_>>(), rows, "{method:?}");
            assert!(launches.iter().all(|(_, l, _)| l.check_limits().is_ok()));
        }
    }

    #[test]
    fn matmul_picks_the_warp_tiled_kernel_for_each_shape() {
        let pick_on = |(m, n, k): (usize, usize, usize), sms, sm90| {
            let (a, b, c) = slices((m * k, k * n, m * n));
            choose(&a, &b, &c, (m, n, k), sms, sm90)
        };
        let pick = |shape, sms| pick_on(shape, sms, false);
        // 4096^2 is 1024 blocks of 128 x 128, 512 of 128 x 256: the spread ring on sm_90, the
        // 128 x 128 tiles elsewhere.
        assert_eq!(pick((4096, 4096, 4096), 132), Method::Warptile);
        // On 132 SMs its last wave is 116 tiles (88% full): shared out by stream-K; on 128 SMs
        // 512 tiles are 4 whole waves.
        assert_eq!(pick_on((4096, 4096, 4096), 132, true), Method::SpreadStreamk);
        assert_eq!(pick_on((4096, 4096, 4096), 128, true), Method::WarptileSpread);
        // 3072^2: 288 tiles, a last wave of 24: stream-K; with k = 256 (16 k tiles), not.
        assert_eq!(pick_on((3072, 3072, 3072), 132, true), Method::SpreadStreamk);
        assert_eq!(pick_on((3072, 3072, 256), 132, true), Method::WarptileSpread);
        assert_eq!(pick((2048, 2048, 2048), 132), Method::Warptile);
        // 2048^2: 128 blocks of 128 x 256 on 132 SMs, at least 3/4 of them.
        assert_eq!(pick_on((2048, 2048, 2048), 132, true), Method::WarptileSpread);
        // n not a multiple of 256, or too few 128 x 256 blocks: the sm_90 build of the 128 x 128.
        assert_eq!(pick_on((4096, 4224, 4096), 132, true), Method::WarptileSm90);
        assert_eq!(pick_on((1536, 1536, 1536), 132, true), Method::WarptileSm90);
        // 1024^2 is 64 blocks, fewer than 132 SMs: the small tiles (128 blocks).
        assert_eq!(pick((1024, 1024, 1024), 132), Method::WarptileSmall);
        assert_eq!(pick_on((1024, 1024, 1024), 132, true), Method::WarptileSmall);
        // m = 128 against 4096²: 16 whole 128 × 256 tiles, k cut 8 ways of 32 k tiles, and 768³:
        // 18 tiles cut 7 ways of 7: split-K over the spread ring on sm_90. Not 512³ (ranges of 4
        // k tiles), nor where the 64 × 128 tiles fill the GPU uncut (1024³, m = 256).
        assert_eq!(pick_on((128, 4096, 4096), 132, true), Method::SplitKSpread);
        assert_eq!(pick_on((768, 768, 768), 132, true), Method::SplitKSpread);
        assert_eq!(pick_on((512, 512, 512), 132, true), Method::SplitKTall);
        assert_eq!(pick_on((256, 4096, 4096), 132, true), Method::WarptileSmall);
        assert_eq!(pick_on((128, 4096, 4096), 132, false), Method::WarptileSmall);
        assert_eq!(pick((1024, 1024, 1024), 16), Method::Warptile);
        // Anything not whole tiles: the guarded kernel; on sm_90 the guarded spread ring where
        // its grid fills the GPU and k is 32 tiles or more, else the sm_90 guarded build.
        for shape in [(4095, 4095, 4095), (4097, 4097, 4097), (4000, 4100, 4033), (4096, 4096, 4088), (9, 9, 1)] {
            assert_eq!(pick(shape, 132), Method::WarptileEdge, "{shape:?}");
        }
        for shape in [(4095, 4095, 4095), (4097, 4097, 4097), (4000, 4100, 4033), (4096, 4096, 4088), (1200, 2500, 513)]
        {
            assert_eq!(pick_on(shape, 132, true), Method::SpreadEdge, "{shape:?}");
        }
        // One tile; 32 tiles (1000²) for 132 SMs; 512 tiles but 31 k tiles.
        for shape in [(9, 9, 1), (1000, 1000, 1000), (4095, 4095, 496)] {
            assert_eq!(pick_on(shape, 132, true), Method::WarptileEdgeSm90, "{shape:?}");
        }
        // n at most 8 (and m past 8): the thin kernel, on every GPU.
        for shape in [(4096, 1, 4096), (4096, 8, 4096), (9, 1, 1), (128, 8, 16), (4097, 5, 3)] {
            assert_eq!(pick(shape, 132), Method::Thin, "{shape:?}");
            assert_eq!(pick_on(shape, 132, true), Method::Thin, "{shape:?}");
        }
        // m at most 8, whatever else: the skinny kernel, on every GPU.
        for shape in [(1, 4096, 4096), (8, 4096, 4096), (1, 1, 1), (8, 128, 16), (5, 4097, 3)] {
            assert_eq!(pick(shape, 132), Method::Skinny, "{shape:?}");
            assert_eq!(pick_on(shape, 132, true), Method::Skinny, "{shape:?}");
        }
    }

    #[test]
    fn tall_matrices_are_planned_in_bands_over_sub_slices() {
        // 2.1M rows of the tiled kernel's band and 5 more, k = 3, n = 2.
        let band = Method::Prefetch.band_rows() as usize;
        let (m, n, k) = (2 * band + 5, 2, 3);
        let (a, b, mut c) = slices((m * k, k * n, m * n));
        let (a0, b0, c0) = (a.address(), b.address(), c.address());
        let mut seen = Vec::new();
        plan_bands(Method::Prefetch, &a, &b, &mut c, (m, n, k), 132, |rows, call| {
            let (pa, pb, pc, bm, bn, bk) = call.args();
            assert_eq!(
                (pa.address(), pb.address(), pc.address()),
                (a0 + 4 * (rows.start * k) as u64, b0, c0 + 4 * (rows.start * n) as u64)
            );
            assert_eq!((*bm as usize, *bn as usize, *bk as usize), (rows.len(), n, k));
            assert!(call.launch().check_limits().is_ok());
            seen.push(rows);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, [0..band, band..2 * band, 2 * band..m]);
        // Bad input is refused before any band is handed out.
        let (a, b, mut c) = slices((m * k, k * n, m * n - 1));
        let mut called = false;
        let err = plan_bands(Method::Prefetch, &a, &b, &mut c, (m, n, k), 132, |_, _| {
            called = true;
            Ok(())
        });
        assert!(matches!(err, Err(Error::LengthMismatch { what: "matmul C", .. })) && !called);
    }

    #[test]
    fn bands_cover_every_row_once() {
        assert_eq!(bands(10, 4).collect::<Vec<_>>(), [0..4, 4..8, 8..10]);
        assert_eq!(bands(8, 4).collect::<Vec<_>>(), [0..4, 4..8]);
        assert_eq!(bands(3, 4).collect::<Vec<_>>(), vec![Range { start: 0, end: 3 }]);
        assert_eq!(bands(0, 4).count(), 0);
        // r0 + band passed usize::MAX (an overflow panic in debug builds).
        assert_eq!(
            bands(usize::MAX, usize::MAX - 1).collect::<Vec<_>>(),
            [0..usize::MAX - 1, usize::MAX - 1..usize::MAX]
        );
    }

    #[test]
    fn cpu_reference_multiplies() {
        // [1 2; 3 4] · [5 6; 7 8] = [19 22; 43 50]
        assert_eq!(
            matmul_cpu(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0], (2, 2, 2)).unwrap(),
            [19.0, 22.0, 43.0, 50.0]
        );
        // 1 x 3 times 3 x 1.
        assert_eq!(matmul_cpu(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], (1, 1, 3)).unwrap(), [32.0]);
    }

    #[test]
    fn cpu_reference_refuses_slices_that_do_not_match_the_shape() {
        let refused = matmul_cpu(&[1.0; 3], &[1.0; 4], (2, 2, 2));
        assert!(matches!(refused, Err(Error::LengthMismatch { what: "matmul A", expected: 4, got: 3 })));
        let refused = matmul_cpu(&[1.0; 4], &[1.0; 5], (2, 2, 2));
        assert!(matches!(refused, Err(Error::LengthMismatch { what: "matmul B", expected: 4, got: 5 })));
        assert!(matches!(matmul_cpu(&[], &[], (1 << 33, 1 << 33, 0)), Err(Error::OutOfRange { .. })));
        assert!(matches!(matmul_cpu(&[], &[1.0], (1 << 33, 1, 0)), Err(Error::LengthMismatch { .. })));
        assert_eq!(matmul_cpu(&[], &[], (2, 3, 0)).unwrap(), [0.0; 6]);
    }

    #[test]
    fn cpu_reference_refuses_an_output_it_cannot_allocate() {
        // 2^62 doubles fit usize but pass isize::MAX bytes: vec! panicked (capacity overflow).
        let refused = matmul_cpu(&[], &[], (1 << 31, 1 << 31, 0));
        assert_eq!(refused, Err(Error::HostMemory { what: "matmul C", bytes: 1 << 65 }));
        // 2^59 bytes: a size one allocation may have, which no host has (vec! aborted).
        let refused = matmul_cpu(&[], &[], (1 << 28, 1 << 28, 0));
        assert_eq!(refused, Err(Error::HostMemory { what: "matmul C", bytes: 1 << 59 }));
    }

    #[test]
    fn cpu_reference_of_an_empty_product_returns_at_once() {
        // n = 0: A and C are empty whatever m is; the row loop ran usize::MAX times.
        assert_eq!(matmul_cpu(&[], &[], (usize::MAX, 0, 0)), Ok(vec![]));
    }
}
