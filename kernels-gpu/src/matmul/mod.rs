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
//! row below the rows of one launch, which the host keeps to [`MAX_GRID_Y`](crate::launch::MAX_GRID_Y) blocks by splitting
//! C and A into row bands ([`band_rows`]).
//!
//! One file a stage, named as its run id (the kernel's name less `matmul_`), in teaching order
//! (as siboehm's SGEMM_CUDA numbers its kernels): `naive`, `tiled`, `prefetch`, `cp_async`
//! (Hopper), `regblock`, `warptile` (with its small-grid and guarded shapes and their sm_90
//! builds), `warptile_async`, `stream_k` (stage `warptile_streamk`: the one file not named as
//! its id, since its flags' symbol in the PTX is named after the module), `warptile_spread` (the
//! library's kernel on Hopper: warptile_async's copies spread over the k steps), `spread_streamk`
//! and `spread_edge` (that schedule for any shape; all Hopper), `skinny`, `thin`, `split_k`
//! (Hopper: the guarded small-grid tile with each tile's k cut into ranges, and its 32-row and
//! 32-column tiles, stages 15 and 16) and `split_k_spread` (stage 17: the spread ring's tile cut
//! the same way, its partials added by reducer blocks). Each
//! holds its stage's kernels, their device code, its index math and its tests; `index` the index
//! math every stage shares, `edge` the guarded tile store of the guarded rings. Every public item
//! is re-exported here, at `matmul::`.

mod edge;
mod index;
pub use index::{band_rows, row_major};

mod naive;
pub use naive::*;
mod tiled;
pub use tiled::*;
mod prefetch;
pub use prefetch::*;
mod cp_async;
pub use cp_async::*;
mod regblock;
pub use regblock::*;
mod warptile;
pub use warptile::*;
mod warptile_async;
pub use warptile_async::*;
mod stream_k;
pub use stream_k::*;
mod warptile_spread;
pub use warptile_spread::*;
mod spread_streamk;
pub use spread_streamk::*;
mod spread_edge;
pub use spread_edge::*;
mod skinny;
pub use skinny::*;
mod thin;
pub use thin::*;
mod split_k;
pub use split_k::*;
mod split_k_spread;
pub use split_k_spread::*;
