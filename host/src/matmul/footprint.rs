//! What the threads of a planned launch touch ([`super::Stage::footprint`]): each stage walks its
//! kernels' own index functions and guards, for the blocks, threads and k steps a proof probes,
//! and names every element of A, B and C they read or write. The index proofs
//! (`host/tests/props_matmul.rs`) hold those elements against the band's sub-slices and the
//! buffers, and count the stores of C, for every stage of the table: a new stage is proved with
//! no edit there. Data for those proofs, not the library's API.

use coalesce_kernels::matmul::WarpTile;

/// One planned launch, as a footprint walks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// Its grid.
    pub grid: (u32, u32),
    /// Its block's threads.
    pub block: (u32, u32),
    /// Its dynamic shared memory.
    pub shared_bytes: u32,
    /// `(m, n, k)` as the kernel takes them (the band's rows).
    pub dims: (u32, u32, u32),
    /// Where the launch's A, B and C start (the band's sub-slices): what the vectors' alignment
    /// rests on.
    pub addresses: (u64, u64, u64),
    /// Multiprocessors the plan was made for.
    pub sms: u32,
    /// Stream-K's whole waves ([`super::Waves`]): each block takes the tile of its linear id.
    pub linear: bool,
    /// The stage's warp tile, if it is warp-tiled ([`super::Stage::warp_tile`]).
    pub warp_tile: Option<WarpTile>,
    /// Whether the stage's kernels guard every access ([`super::Bounds::Guarded`]).
    pub guarded: bool,
}

/// An operand of the multiply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matrix {
    /// The left operand, `m × k`.
    A,
    /// The right operand, `k × n`.
    B,
    /// The product, `m × n`.
    C,
}

/// What a walk ends in: `Err` names the invariant of the kernel's indexing that broke.
pub type Walked = Result<(), String>;

/// Where a footprint reports what it touches: `width` elements of a matrix from element `index`
/// (row-major, from the launch's pointer). An error stops the walk.
pub type Touch<'a> = &'a mut dyn FnMut(Matrix, u64, u64) -> Walked;

/// Where a footprint reports an element `(row, col)` of C a block stores.
pub type Store<'a> = &'a mut dyn FnMut(u32, u32);

/// A stage's kernels walked: the descriptor's [`super::Stage::footprint`]. Each function checks
/// its kernel's own invariants on the way (an `Err` names the one broken) and hands every element
/// its threads reach to the proof.
#[derive(Clone, Copy)]
pub struct Footprint {
    /// The launch as a whole: its grid, shared memory and alignment against its band, and for a
    /// launch whose blocks share a schedule (stream-K's row) what the schedule hands out.
    pub launch: fn(&Probe, Touch<'_>) -> Walked,
    /// The work of block `(bx, by)` at its first and last threads and k tiles and at some that
    /// the proof's random `u64` picks ([`salt`]).
    pub block: fn(&Probe, (u32, u32), u64, Touch<'_>) -> Walked,
    /// The elements `(row, col)` of C block `(bx, by)` stores its final sums in, as its guards
    /// let it: every element of its tile for an unguarded kernel, those inside C for a guarded
    /// one.
    pub stores: fn(&Probe, (u32, u32), Store<'_>),
}

/// `Err` naming `cond` (or the message given) unless it holds.
macro_rules! ensure {
    ($cond:expr $(,)?) => {
        if !$cond {
            return Err(concat!("failed: ", stringify!($cond)).to_string());
        }
    };
    ($cond:expr, $($what:tt)+) => {
        if !$cond {
            return Err(format!($($what)+));
        }
    };
}

/// `Err` with both sides unless they are equal.
macro_rules! ensure_eq {
    ($left:expr, $right:expr $(,)?) => {
        let (left, right) = (&$left, &$right);
        if left != right {
            return Err(format!("{} == {}: {:?} != {:?}", stringify!($left), stringify!($right), left, right));
        }
    };
}

pub(super) use {ensure, ensure_eq};

/// The random numbers block `(bx, by)` picks its threads and k tiles with, from the proof's
/// `probe`.
pub const fn salt(probe: u64, (bx, by): (u32, u32)) -> u64 {
    let block = bx as u64 ^ (by as u64) << 20;
    (probe ^ block).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 7
}

/// Stores of a launch whose thread `(tx, ty)` of block `(bx, by)` computes the one element
/// `coords(bx, by, tx, ty)` of C, where that lies inside `m × n` (the naive and tiled kernels).
pub fn one_a_thread(p: &Probe, (bx, by): (u32, u32), coords: fn(u32, u32, u32, u32) -> (u32, u32), store: Store<'_>) {
    let (m, n, _) = p.dims;
    for ty in 0..p.block.1 {
        for tx in 0..p.block.0 {
            let (row, col) = coords(bx, by, tx, ty);
            if row < m && col < n {
                store(row, col);
            }
        }
    }
}

/// The elements of C thread `t` of a warp-tiled block at `(row0, col0)` stores, inside C or not:
/// row `i`, then vector `h`, then float `j` of it (`WarpTile::out_row`, `out_col`).
pub fn thread_cells(cfg: WarpTile, t: u32, (row0, col0): (u32, u32)) -> impl Iterator<Item = (u32, u32)> {
    (0..cfg.tm)
        .flat_map(move |i| (0..cfg.tn).map(move |q| (row0 + cfg.out_row(t, i), col0 + cfg.out_col(t, q / 4) + q % 4)))
}

/// [`thread_cells`] of every thread of the block.
pub fn tile_cells(cfg: WarpTile, origin: (u32, u32)) -> impl Iterator<Item = (u32, u32)> {
    (0..cfg.threads()).flat_map(move |t| thread_cells(cfg, t, origin))
}

/// The tile of block `(bx, by)` of a warp-tiled stage's launch, as its kernel computes it:
/// stream-K's whole waves ([`Probe::linear`]) from the block's linear id (a guarded stage
/// counting partial tiles), the others from its coordinates.
pub fn warp_tile_origin(probe: &Probe, (bx, by): (u32, u32)) -> (u32, u32) {
    let cfg = probe.warp_tile.expect("a warp-tiled stage");
    let n = probe.dims.1;
    let tiles_n = if probe.guarded { n.div_ceil(cfg.bn) } else { n / cfg.bn };
    if probe.linear { cfg.tile_origin(by * probe.grid.0 + bx, tiles_n) } else { cfg.block_origin(bx, by) }
}
