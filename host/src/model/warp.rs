//! One warp's memory instruction, lane by lane: what the report's warp pictures draw.
//!
//! The family replays count whole launches; a picture needs one instruction: which lanes take
//! part, the byte each lane touches and what that one instruction costs. Each function here plans
//! the lesson's launch as the library does (over the fake buffers the replays use), takes warp 0
//! of block 0, and computes its lanes' addresses with the kernel's own index functions, the ones
//! its family's replay calls. The cost is counted by [`Model`], the same counter the replays (and
//! so the report's tables) use, so a picture's sector or wavefront count is the model's.
use super::{BANK_BYTES, BANKS, Counts, FAKE_BASE, Model, SECTOR_BYTES, Warp, block_warps, fake_slice, lanes_where};
use crate::buffer::DeviceViewMut;
use crate::coalescing::{AsyncCopy, Load, plan_async_copy, plan_copy_any, plan_offset, plan_stride};
use crate::error::{Error, Result, product};
use crate::launch::Launch;
use crate::lessons::access_order::{Order, plan_walk};
use crate::lessons::bank::{Pattern, Tile, plan_stride as plan_bank_stride, plan_tile};
use crate::lessons::histogram::{BINS as HISTOGRAM_BINS, Method as Histogram, plan as plan_histogram};
use crate::lessons::layouts::{AosMethod, Float3, Soa3, Soa3Mut, plan_aos, plan_soa};
use crate::reduce::{Method as Reduce, partials_needed, plan_first};
use crate::transpose::{Method as Transpose, plan as plan_transpose};
use coalesce_kernels::access_order::{access_order_chunked, chunked_index, interleaved_index, walk_threads};
use coalesce_kernels::bank::lane;
use coalesce_kernels::coalescing::{any_index, shifted_split};
use coalesce_kernels::coalescing::{coalescing_stride, offset_index, offset_len, stride_index, stride_len};
use coalesce_kernels::coalescing::{cp_chunk, cp_slot, cp_vector, vec4_split};
use coalesce_kernels::histogram::{bin, split, vector_index};
use coalesce_kernels::layouts::{floats, staged_component_slot, staged_index};
use coalesce_kernels::reduce::{conflict_pair, divergent_pair, sequential_pair};
use coalesce_kernels::transpose::{
    PITCH, PITCH_PADDED, col_tiles, load_coords, row_major_index, store_coords, tile_origin, tile_slot,
    transposed_index,
};

/// Elements of the 1-D launches planned for a picture: enough that warp 0 is whole.
const ELEMENTS: usize = 1 << 16;

/// Where an instruction goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    /// Global memory: counted in requests and 32-byte sectors.
    Global,
    /// The block's shared memory: counted in wavefronts over 32 banks.
    Shared,
}

/// Which way it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// A load.
    Load,
    /// A store.
    Store,
    /// An atomic add (`RED` in global memory, `ATOMS` in shared): read, add and write at the
    /// memory, one lane after another where lanes share an address.
    Atomic,
}

/// How a warp's atomics fall on their addresses, as the model's replay collector counts them
/// ([`super::shape`]): the addresses they spread over and the lanes on the busiest one, which
/// wait on each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contention {
    /// Distinct addresses.
    pub addresses: u64,
    /// Atomics on the busiest address.
    pub busiest: u64,
}

/// One warp-wide memory instruction and its cost.
#[derive(Debug, Clone, PartialEq)]
pub struct WarpAccess {
    /// Global or shared.
    pub space: Space,
    /// Load or store.
    pub op: Op,
    /// Bytes each lane moves.
    pub width: u32,
    /// The lanes that take part (bit `l` = lane `l`).
    pub active: u32,
    /// Lane `l`'s byte address: from the start of its buffer (global; buffers start on a sector
    /// boundary, so `address / 32` is the lane's sector) or in the block's shared memory. Only
    /// the active lanes' entries mean anything.
    pub address: [u64; 32],
    /// This one instruction as [`Model`] counts it: one request and its sectors, or its
    /// wavefronts and bank conflicts (a shared atomic's as a store's: distinct words a bank).
    pub counts: Counts,
    /// A global atomic's spread over its addresses (`None` for every other access).
    pub contention: Option<Contention>,
}

impl WarpAccess {
    /// Counts one global instruction of lanes `active`, lane `l` at byte `offset(l)` of a
    /// sector-aligned buffer.
    fn global(op: Op, width: u32, active: u32, offset: impl Fn(u32) -> u64) -> Result<WarpAccess> {
        let address: [u64; 32] = std::array::from_fn(|l| if active & (1 << l) != 0 { offset(l as u32) } else { 0 });
        let mut m = Model::instructions_only();
        let buffer = m.buffer(FAKE_BASE);
        let mut contention = None;
        match op {
            Op::Load => m.load(buffer, width, active, |l| address[l as usize])?,
            Op::Store => m.store(buffer, width, active, |l| address[l as usize])?,
            Op::Atomic => {
                let mut lanes = (0..32).filter(|l| active & (1 << l) != 0);
                let (done, seen) = super::shape::observe(|| lanes.try_for_each(|l| m.atomic(buffer, address[l])));
                done?;
                contention =
                    Some(Contention { addresses: seen.atomic_addresses, busiest: seen.atomic_max_per_address });
            }
        }
        Ok(WarpAccess { space: Space::Global, op, width, active, address, counts: m.counts(), contention })
    }

    /// Counts one shared-memory instruction, lane `l` at byte `address(l)`.
    fn shared(op: Op, width: u32, active: u32, address: impl Fn(u32) -> u32) -> Result<WarpAccess> {
        let lanes: [u32; 32] = std::array::from_fn(|l| if active & (1 << l) != 0 { address(l as u32) } else { 0 });
        let mut m = Model::instructions_only();
        match op {
            Op::Load => m.shared_load(width, active, |l| lanes[l as usize])?,
            // An `ATOMS` takes a wavefront per distinct word of a bank, as a store does; lanes on
            // one word are one update (`ATOMS.POPC.INC` adds their count).
            Op::Store | Op::Atomic => m.shared_store(width, active, |l| lanes[l as usize])?,
        }
        let address = lanes.map(u64::from);
        Ok(WarpAccess { space: Space::Shared, op, width, active, address, counts: m.counts(), contention: None })
    }

    /// The active lanes, ascending.
    pub fn lanes(&self) -> impl Iterator<Item = u32> + '_ {
        (0..32).filter(|l| self.active & (1 << l) != 0)
    }

    /// Sectors the instruction touches, as the model counts them (0 for shared memory).
    pub fn sectors(&self) -> u64 {
        self.counts.ld_sectors + self.counts.st_sectors
    }

    /// Wavefronts the instruction takes, as the model counts them (0 for global memory).
    pub fn wavefronts(&self) -> u64 {
        self.counts.shared_ld_wavefronts + self.counts.shared_st_wavefronts
    }

    /// Bytes the lanes ask for: the width times the active lanes.
    pub fn useful_bytes(&self) -> u64 {
        u64::from(self.width) * u64::from(self.active.count_ones())
    }

    /// The 32-byte sector lane `l`'s access lies in (global; every access is naturally aligned,
    /// so one sector holds it). `l` is taken within the warp (mod 32), as
    /// [`Pattern::index`] takes its lane.
    pub fn sector(&self, l: u32) -> u64 {
        self.address[(l % 32) as usize] / SECTOR_BYTES
    }

    /// The 4-byte words lane `l` (mod 32, as [`WarpAccess::sector`]) touches: `width / 4` of
    /// them, at least one.
    pub fn words(&self, l: u32) -> std::ops::Range<u64> {
        let first = self.address[(l % 32) as usize] / u64::from(BANK_BYTES);
        first..first + u64::from((self.width / BANK_BYTES).max(1))
    }

    /// The bank of 4-byte word `word` of shared memory.
    pub fn bank(word: u64) -> u32 {
        (word % u64::from(BANKS)) as u32
    }
}

/// Warp 0 of block 0 of `launch`.
fn first_warp(launch: &Launch) -> Result<Warp> {
    block_warps(launch, (0, 0)).next().ok_or(Error::Empty("a launch with a warp"))
}

/// The load of warp 0 of the offset copy (`load` selects plain or L2-only loads) at `offset`:
/// lane `l` reads element `offset_index(l, offset)`.
pub fn offset_copy(load: Load, offset: u32) -> Result<WarpAccess> {
    let len = offset_len(ELEMENTS as u64, offset) as usize;
    let (input, mut output): (DeviceViewMut<'static, f32>, _) = (fake_slice(0, len), fake_slice(1, len));
    let call = plan_offset(load, &input, &mut output, ELEMENTS, offset)?;
    let &(_, _, n, param) = call.args();
    let w = first_warp(&call.launch())?;
    let active = lanes_where(w.lanes, |l| w.index_1d(l) < n);
    WarpAccess::global(Op::Load, 4, active, |l| 4 * u64::from(offset_index(w.index_1d(l), param)))
}

/// The load of warp 0 of the stride copy at `stride`: lane `l` reads `stride_index(l, stride)`.
pub fn stride_copy(stride: u32) -> Result<WarpAccess> {
    let len = stride_len(ELEMENTS as u64, stride) as usize;
    let (input, mut output): (DeviceViewMut<'static, f32>, _) = (fake_slice(0, len), fake_slice(1, len));
    let call = plan_stride(&input, &mut output, ELEMENTS, stride)?;
    debug_assert!(call.kernel() == coalescing_stride);
    let &(_, _, n, param) = call.args();
    let w = first_warp(&call.launch())?;
    let active = lanes_where(w.lanes, |l| w.index_1d(l) < n);
    WarpAccess::global(Op::Load, 4, active, |l| 4 * stride_index(w.index_1d(l), param))
}

/// The first load of warp 0 of the library's copy (`coalescing_copy_any`, what
/// `coalescing::copy` launches) between buffers that start on a sector boundary: the body's first
/// step, one 16-byte vector a lane (the head is empty there, and no words shift between lanes).
pub fn copy_any_load() -> Result<WarpAccess> {
    let (input, mut output): (DeviceViewMut<'static, f32>, _) = (fake_slice(0, ELEMENTS), fake_slice(1, ELEMENTS));
    let call = plan_copy_any(&input, &mut output)?;
    let &(from, ref to, n) = call.args();
    let split = shifted_split(from.address(), to.address(), n);
    let shifted = u64::from(split.shift > 0);
    // As the kernel reads them: source vectors from `head - shift` floats in, one past the body's
    // when the source is off 16 bytes.
    let (first, readable) = (4 * (split.head - u64::from(split.shift)), split.vectors + shifted);
    let w = first_warp(&call.launch())?;
    let q = |l| any_index(0, 0, w.thread(l).0);
    let active = lanes_where(w.lanes, |l| q(l) < readable);
    WarpAccess::global(Op::Load, 16, active, |l| first + 16 * q(l))
}

/// The loads of warp 0 of the array-of-structs update: one per field (x, y, z), lane `l` at
/// byte `12 l` plus the field's offset in [`Float3`].
pub fn aos_loads() -> Result<[WarpAccess; 3]> {
    let (input, mut output): (DeviceViewMut<'static, Float3>, _) = (fake_slice(0, ELEMENTS), fake_slice(1, ELEMENTS));
    let call = plan_aos(AosMethod::Element, &input, &mut output)?;
    let &(_, _, n) = call.args();
    let w = first_warp(&call.launch())?;
    let active = lanes_where(w.lanes, |l| w.index_1d(l) < n);
    let size = std::mem::size_of::<Float3>() as u64;
    let fields = [
        std::mem::offset_of!(Float3, x) as u64,
        std::mem::offset_of!(Float3, y) as u64,
        std::mem::offset_of!(Float3, z) as u64,
    ];
    let [x, y, z] =
        fields.map(|field| WarpAccess::global(Op::Load, 4, active, |l| size * u64::from(w.index_1d(l)) + field));
    Ok([x?, y?, z?])
}

/// The load of `x` by warp 0 of the struct-of-arrays update (`y` and `z` are the same in their
/// own arrays): lane `l` reads `x[l]`.
pub fn soa_load() -> Result<WarpAccess> {
    let [x, y, z]: [DeviceViewMut<'static, f32>; 3] = [0, 1, 2].map(|i| fake_slice(i, ELEMENTS));
    let [mut ox, mut oy, mut oz]: [DeviceViewMut<'static, f32>; 3] = [3, 4, 5].map(|i| fake_slice(i, ELEMENTS));
    let call = plan_soa(Soa3::new(&x, &y, &z), Soa3Mut::new(&mut ox, &mut oy, &mut oz))?;
    let n = call.args().6;
    let w = first_warp(&call.launch())?;
    let active = lanes_where(w.lanes, |l| w.index_1d(l) < n);
    WarpAccess::global(Op::Load, 4, active, |l| 4 * u64::from(w.index_1d(l)))
}

/// Step `k` of warp 0 of the 1-D walk in `order` with `per_thread` elements a thread.
pub fn walk(order: Order, per_thread: u32, k: u32) -> Result<WarpAccess> {
    let (input, mut output): (DeviceViewMut<'static, f32>, _) = (fake_slice(0, ELEMENTS), fake_slice(1, ELEMENTS));
    let call = plan_walk(order, &input, &mut output, ELEMENTS, per_thread)?;
    let &(_, _, n, per_thread) = call.args();
    if k >= per_thread {
        return Err(Error::OutOfRange { what: "walk step", value: k.into(), min: 0, max: u64::from(per_thread) - 1 });
    }
    let index = if call.kernel() == access_order_chunked { chunked_index } else { interleaved_index };
    let threads = walk_threads(n, per_thread);
    let w = first_warp(&call.launch())?;
    let active = lanes_where(w.lanes, |l| w.index_1d(l) < threads);
    WarpAccess::global(Op::Load, 4, active, |l| 4 * index(w.index_1d(l), k, per_thread, threads))
}

/// Warp 0 of block 0 of transpose `method` of a `rows × cols` matrix, planned as the library
/// plans it, with its tile's origin and the dimensions as the kernel takes them.
fn transpose_warp(method: Transpose, rows: usize, cols: usize) -> Result<(Warp, (u32, u32), u32, u32)> {
    let n = product("transpose rows * cols", rows, cols)?;
    let (input, mut output): (DeviceViewMut<'static, f32>, _) = (fake_slice(0, n), fake_slice(1, n));
    let call = plan_transpose(method, &input, &mut output, rows, cols)?;
    let &(_, _, rows, cols) = call.args();
    let w = first_warp(&call.launch())?;
    let origin = tile_origin(w.block.0, col_tiles(cols));
    Ok((w, origin, rows, cols))
}

/// Warp 0's first row of the naive transpose of a `rows × cols` matrix: its load (`op` =
/// [`Op::Load`], along a row of the input) or its store (down a column of the output).
pub fn transpose_naive(op: Op, rows: usize, cols: usize) -> Result<WarpAccess> {
    if op == Op::Atomic {
        return Err(Error::Unsupported("an atomic of a transpose".into()));
    }
    let (w, origin, rows, cols) = transpose_warp(Transpose::Naive, rows, cols)?;
    let at = |l| load_coords(origin, w.thread(l), 0);
    let active = lanes_where(w.lanes, |l| {
        let (r, c) = at(l);
        r < rows && c < cols
    });
    WarpAccess::global(op, 4, active, |l| {
        let (r, c) = at(l);
        4 * match op {
            Op::Load => row_major_index(r, c, cols),
            Op::Store | Op::Atomic => transposed_index(r, c, rows),
        }
    })
}

/// One access of warp 0 of a shared-tile transpose (`method` [`Transpose::Shared`], pitch 32, or
/// [`Transpose::Padded`], pitch 33) of a `rows × cols` matrix, at the first row of its tile:
/// - global load: along a row of the input, as the naive kernel's;
/// - shared store: that row into the tile (`tile_slot(ty, tx)`);
/// - shared load: back out down a column of the tile (`tile_slot(tx, ty)`), a lane a row;
/// - global store: the column, now along a row of the output (`store_coords`).
pub fn transpose_tile(method: Transpose, space: Space, op: Op, rows: usize, cols: usize) -> Result<WarpAccess> {
    let pitch = match method {
        Transpose::Shared => PITCH,
        Transpose::Padded => PITCH_PADDED,
        other => return Err(Error::Unsupported(format!("a shared-tile access of the {other:?} transpose"))),
    };
    let (w, origin, rows, cols) = transpose_warp(method, rows, cols)?;
    let inside = |(r, c): (u32, u32)| r < rows && c < cols;
    let loaded = lanes_where(w.lanes, |l| inside(load_coords(origin, w.thread(l), 0)));
    let stored = lanes_where(w.lanes, |l| inside(store_coords(origin, w.thread(l), 0)));
    match (space, op) {
        (Space::Global, Op::Load) => WarpAccess::global(op, 4, loaded, |l| {
            let (r, c) = load_coords(origin, w.thread(l), 0);
            4 * row_major_index(r, c, cols)
        }),
        (Space::Shared, Op::Store) => WarpAccess::shared(op, 4, loaded, |l| {
            let (tx, ty) = w.thread(l);
            4 * tile_slot(ty, tx, pitch)
        }),
        (Space::Shared, Op::Load) => WarpAccess::shared(op, 4, stored, |l| {
            let (tx, ty) = w.thread(l);
            4 * tile_slot(tx, ty, pitch)
        }),
        (Space::Global, Op::Store) => WarpAccess::global(op, 4, stored, |l| {
            let (r, c) = store_coords(origin, w.thread(l), 0);
            4 * transposed_index(r, c, rows)
        }),
        (_, Op::Atomic) => Err(Error::Unsupported("an atomic of a transpose".into())),
    }
}

/// Warp 0 of the staged array-of-structs update: its global load of round `round` (`k` of
/// `staged_index`, consecutive floats whatever field they are), or, with `space` =
/// [`Space::Shared`], its read of field `round` of each lane's own `Float3` from the staged
/// block (`staged_component_slot`: three words apart).
pub fn aos_staged(space: Space, round: u32) -> Result<WarpAccess> {
    if round >= 3 {
        return Err(Error::OutOfRange { what: "float3 field or round", value: round.into(), min: 0, max: 2 });
    }
    let (input, mut output): (DeviceViewMut<'static, Float3>, _) = (fake_slice(0, ELEMENTS), fake_slice(1, ELEMENTS));
    let call = plan_aos(AosMethod::Staged, &input, &mut output)?;
    let &(_, _, n) = call.args();
    let w = first_warp(&call.launch())?;
    let t = |l| w.thread(l).0;
    match space {
        Space::Global => {
            let active = lanes_where(w.lanes, |l| staged_index(w.block.0, t(l), round) < floats(n));
            WarpAccess::global(Op::Load, 4, active, |l| 4 * staged_index(w.block.0, t(l), round))
        }
        Space::Shared => {
            let active = lanes_where(w.lanes, |l| w.index_1d(l) < n);
            WarpAccess::shared(Op::Load, 4, active, |l| 4 * staged_component_slot(t(l), round))
        }
    }
}

/// Warp 0's first atomic of histogram `method` over input `values` (at least the launch's first
/// block's: its lanes add the first value of their first vector, `4 · vector_index(0, 0, t)`):
/// the global kernel's `RED` on `bins[bin(v)]`, or the shared kernels' `ATOMS` on shared word
/// `bin(v)`.
pub fn histogram_atomic(method: Histogram, values: &[u32]) -> Result<WarpAccess> {
    let n = values.len();
    let input: DeviceViewMut<'static, u32> = fake_slice(0, n);
    let mut bins: DeviceViewMut<'static, u32> = fake_slice(1, HISTOGRAM_BINS as usize);
    let call = plan_histogram(method, &input, &mut bins)?;
    let &(_, _, n) = call.args();
    let w = first_warp(&call.launch())?;
    let (vectors, _) = split(n);
    let first = |l: u32| 4 * vector_index(w.block.0, 0, w.thread(l).0);
    let active = lanes_where(w.lanes, |l| vector_index(w.block.0, 0, w.thread(l).0) < vectors);
    // In bounds: a vector below n / 4 starts below n, and `values` holds n (the plan's n).
    let bin_of = |l: u32| bin(values[first(l) as usize]);
    match method {
        Histogram::Global => WarpAccess::global(Op::Atomic, 4, active, |l| 4 * u64::from(bin_of(l))),
        Histogram::Shared | Histogram::Cluster => WarpAccess::shared(Op::Atomic, 4, active, |l| 4 * bin_of(l)),
    }
}

/// Warp 0's first trip of the `cp.async` copy: its `cp.async.cg` of a 16-byte vector a lane
/// (`space` [`Space::Global`]: the global side, read through L2 straight into shared memory,
/// no register on the way), or its read of the landed vectors back out of the ring slots
/// (`cp_slot`) before the store ([`Space::Shared`]).
pub fn cp_async(space: Space) -> Result<WarpAccess> {
    let (input, mut output): (DeviceViewMut<'static, f32>, _) = (fake_slice(0, ELEMENTS), fake_slice(1, ELEMENTS));
    let call = plan_async_copy(AsyncCopy::CpAsync, &input, &mut output, super::DEFAULT_SMS, 0)?;
    let &(_, _, n) = call.args();
    let launch = call.launch();
    let w = first_warp(&launch)?;
    let (vectors, _) = vec4_split(n);
    let at = |l| cp_vector(cp_chunk(w.block.0, 0, launch.grid.0), w.thread(l).0);
    let active = lanes_where(w.lanes, |l| at(l) < vectors);
    match space {
        Space::Global => WarpAccess::global(Op::Load, 16, active, |l| 16 * at(l)),
        Space::Shared => WarpAccess::shared(Op::Load, 16, active, |l| cp_slot(0, w.thread(l).0)),
    }
}

/// Step `k` of warp 0's shared-memory reads in the bank kernel reading with `pattern`: lane `l`
/// reads word `pattern.index(l, k)` of the table.
pub fn bank_read(pattern: Pattern, k: u32) -> Result<WarpAccess> {
    let (table, mut out): (DeviceViewMut<'static, i32>, DeviceViewMut<'static, i32>) =
        (fake_slice(0, crate::lessons::bank::WORDS as usize), fake_slice(1, crate::lessons::bank::OUTPUTS as usize));
    let launch = match pattern {
        Pattern::Tile(t) => plan_tile(t, &table, &mut out)?.launch(),
        Pattern::Stride(s) => plan_bank_stride(&table, &mut out, s)?.launch(),
    };
    let w = first_warp(&launch)?;
    WarpAccess::shared(Op::Load, 4, w.lanes, |l| 4 * pattern.index(lane(w.thread(l).0), k))
}

/// The bank kernel's tile reads, for callers naming them by tile.
pub fn tile_read(tile: Tile) -> Result<WarpAccess> {
    bank_read(Pattern::Tile(tile), 0)
}

/// Level `d` of the shared-memory tree of reduction `method`, warp 0: the load of the word each
/// working lane adds into (`s[a]` of the level's pair `(a, c)`). Errors for methods without a
/// tree (`ShuffleVec4`) and for a level the tree does not have (`d` not a power of two below
/// the block).
pub fn reduce_level(method: Reduce, d: u32) -> Result<WarpAccess> {
    let pair: fn(u32, u32) -> Option<(u32, u32)> = match method {
        Reduce::InterleavedDivergent => divergent_pair,
        Reduce::InterleavedConflicts => conflict_pair,
        Reduce::ShuffleVec4 => return Err(Error::Unsupported("a tree level of the shuffle reduction".into())),
        _ => sequential_pair,
    };
    let block = coalesce_kernels::reduce::BLOCK;
    if !d.is_power_of_two() || d >= block {
        return Err(Error::OutOfRange { what: "tree level", value: d.into(), min: 1, max: u64::from(block / 2) });
    }
    let input: DeviceViewMut<'static, i32> = fake_slice(0, ELEMENTS);
    let sms = super::DEFAULT_SMS;
    let mut out: DeviceViewMut<'static, i32> = fake_slice(1, partials_needed(method, ELEMENTS, sms).max(1));
    let call = plan_first(method, &input, &mut out, sms)?;
    let w = first_warp(&call.launch())?;
    let t = |l| w.thread(l).0;
    let active = lanes_where(w.lanes, |l| pair(t(l), d).is_some());
    WarpAccess::shared(Op::Load, 4, active, |l| 4 * pair(t(l), d).map_or(0, |p| p.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{access_order, bank, coalescing, layouts, transpose};
    use coalesce_kernels::layouts::staged_slot;

    /// Distinct sectors of the active lanes, counted apart from the model.
    fn distinct(a: &WarpAccess) -> u64 {
        let mut s: Vec<u64> = a.lanes().map(|l| a.sector(l)).collect();
        s.sort_unstable();
        s.dedup();
        s.len() as u64
    }

    #[test]
    fn a_warps_sectors_are_its_family_replays_average() {
        for offset in [0, 1, 7, 8, 31, 32] {
            let warp = offset_copy(Load::Cached, offset).unwrap();
            let launch = coalescing::offset_copy(Load::Cached, ELEMENTS, offset, offset).unwrap();
            assert_eq!(warp.sectors() as f64, launch.ld_sectors_per_request(), "offset {offset}");
            assert_eq!(warp.sectors(), distinct(&warp));
            assert_eq!(warp.sectors(), if offset % 8 == 0 { 4 } else { 5 });
        }
        for stride in [1, 2, 3, 8, 32] {
            let warp = stride_copy(stride).unwrap();
            let launch = coalescing::stride_copy(ELEMENTS, stride).unwrap();
            assert_eq!(warp.sectors() as f64, launch.ld_sectors_per_request(), "stride {stride}");
            assert_eq!(warp.sectors(), u64::from((4 * stride).min(32)));
        }
        let aos = aos_loads().unwrap();
        let launch = layouts::aos_update(AosMethod::Element, ELEMENTS).unwrap();
        for field in &aos {
            assert_eq!(field.sectors() as f64, launch.ld_sectors_per_request());
            assert_eq!(field.sectors(), 12);
        }
        let soa = soa_load().unwrap();
        assert_eq!(soa.sectors() as f64, layouts::soa_update(ELEMENTS).unwrap().ld_sectors_per_request());
        for (order, per_thread) in [(Order::Chunked, 8), (Order::Chunked, 2), (Order::Interleaved, 8)] {
            let warp = walk(order, per_thread, 0).unwrap();
            let launch = access_order::walk_1d(order, ELEMENTS, per_thread).unwrap();
            assert_eq!(warp.sectors() as f64, launch.ld_sectors_per_request(), "{order:?} {per_thread}");
        }
        assert!(walk(Order::Chunked, 8, 8).is_err());
        let (load, store) =
            (transpose_naive(Op::Load, 256, 512).unwrap(), transpose_naive(Op::Store, 256, 512).unwrap());
        let launch = transpose::run(Transpose::Naive, 256, 512).unwrap();
        assert_eq!(load.sectors() as f64, launch.ld_sectors_per_request());
        assert_eq!(store.sectors() as f64, launch.st_sectors_per_request());
        assert_eq!((load.sectors(), store.sectors(), store.counts.st_requests), (4, 32, 1));
    }

    #[test]
    fn the_copys_warp_loads_what_its_replay_counts() {
        let warp = copy_any_load().unwrap();
        let launch = coalescing::any_offset_copy(ELEMENTS, 0, 0).unwrap();
        assert_eq!(warp.sectors() as f64, launch.ld_sectors_per_request());
        // 32 lanes of 16 consecutive bytes: 512 bytes, 16 sectors, every byte used.
        assert_eq!((warp.active, warp.sectors(), warp.useful_bytes()), (u32::MAX, 16, 512));
        assert_eq!(warp.sectors(), distinct(&warp));
        assert!((0..32).all(|l| warp.address[l] == 16 * l as u64));
    }

    #[test]
    fn the_fixes_cost_what_their_family_replays_count() {
        for (rows, cols) in [(256, 512), (64, 64)] {
            let store = transpose_tile(Transpose::Padded, Space::Global, Op::Store, rows, cols).unwrap();
            let load = transpose_tile(Transpose::Padded, Space::Global, Op::Load, rows, cols).unwrap();
            let launch = transpose::run(Transpose::Padded, rows, cols).unwrap();
            assert_eq!(store.sectors() as f64, launch.st_sectors_per_request());
            assert_eq!(load.sectors() as f64, launch.ld_sectors_per_request());
            assert_eq!((load.sectors(), store.sectors()), (4, 4));
            // Into the tile along a row: conflict-free at either pitch; out down a column: 32
            // wavefronts at pitch 32, 1 at 33.
            for (method, column) in [(Transpose::Shared, 32), (Transpose::Padded, 1)] {
                let into = transpose_tile(method, Space::Shared, Op::Store, rows, cols).unwrap();
                let out = transpose_tile(method, Space::Shared, Op::Load, rows, cols).unwrap();
                assert_eq!((into.wavefronts(), out.wavefronts()), (1, column), "{method:?}");
                let replay = transpose::run(method, rows, cols).unwrap();
                let conflicts = replay.shared_ld_bank_conflicts > 0;
                assert_eq!(conflicts, column > 1, "{method:?}");
            }
        }
        assert!(transpose_tile(Transpose::Naive, Space::Global, Op::Load, 64, 64).is_err());
        // The staged AoS update: each round a coalesced 4-sector load; each field read from
        // shared memory three words a lane apart, one wavefront.
        let replay = layouts::aos_update(AosMethod::Staged, ELEMENTS).unwrap();
        for round in 0..3 {
            let global = aos_staged(Space::Global, round).unwrap();
            assert_eq!(global.sectors() as f64, replay.ld_sectors_per_request());
            assert_eq!(global.sectors(), 4);
            for l in 0..32 {
                // Round k of lane l loads the float that shared slot k·BLOCK + l then holds.
                assert_eq!(global.address[l as usize] / 4, u64::from(staged_slot(l, round)));
            }
            let field = aos_staged(Space::Shared, round).unwrap();
            assert_eq!(field.wavefronts(), 1);
            assert_eq!(field.address[1] - field.address[0], 12);
        }
        assert_eq!(replay.shared_ld_bank_conflicts, 0);
        assert!(aos_staged(Space::Global, 3).is_err());
    }

    #[test]
    fn a_histogram_warps_atomics_land_on_its_values_bins() {
        // Lane l adds value 4l, the first of its first vector.
        let with = |bin_of: fn(u32) -> u32| {
            let mut values = vec![7u32; 4096];
            for l in 0..32 {
                values[4 * l as usize] = 256 * 9 + bin_of(l);
            }
            values
        };
        let one_bin = with(|_| 5);
        let global = histogram_atomic(Histogram::Global, &one_bin).unwrap();
        assert_eq!(global.contention, Some(Contention { addresses: 1, busiest: 32 }));
        assert_eq!((global.op, global.sectors()), (Op::Atomic, 0));
        assert!((0..32).all(|l| global.address[l] == 20));
        let shared = histogram_atomic(Histogram::Shared, &one_bin).unwrap();
        assert_eq!((shared.wavefronts(), shared.contention), (1, None));
        let spread = with(|l| l);
        let global = histogram_atomic(Histogram::Global, &spread).unwrap();
        assert_eq!(global.contention, Some(Contention { addresses: 32, busiest: 1 }));
        assert_eq!(histogram_atomic(Histogram::Cluster, &spread).unwrap().wavefronts(), 1);
        // Eight bins 32 apart: one bank, eight words, eight wavefronts; four lanes a bin.
        let one_bank = with(|l| 32 * (l % 8));
        assert_eq!(histogram_atomic(Histogram::Shared, &one_bank).unwrap().wavefronts(), 8);
        let global = histogram_atomic(Histogram::Global, &one_bank).unwrap();
        assert_eq!(global.contention, Some(Contention { addresses: 8, busiest: 4 }));
    }

    #[test]
    fn a_cp_async_warp_moves_what_its_replay_counts() {
        let global = cp_async(Space::Global).unwrap();
        let shared = cp_async(Space::Shared).unwrap();
        let replay = coalescing::hardware_copy(AsyncCopy::CpAsync, ELEMENTS, super::super::DEFAULT_SMS, 0).unwrap();
        assert_eq!(global.sectors() as f64, replay.ld_sectors_per_request());
        assert_eq!((global.sectors(), shared.wavefronts()), (16, 4));
        // One shared read a vector, conflict-free: the replay's wavefronts are four a request.
        assert_eq!(replay.shared_ld_wavefronts, 4 * replay.ld_requests);
        assert_eq!(replay.shared_ld_bank_conflicts, 0);
    }

    #[test]
    fn a_warps_wavefronts_are_its_bank_replays_per_load() {
        let loads = u64::from(coalesce_kernels::bank::ITERS) * u64::from(crate::lessons::bank::OUTPUTS / 32);
        let patterns = [Pattern::Tile(Tile::Rows), Pattern::Tile(Tile::Cols), Pattern::Tile(Tile::ColsPadded)];
        for pattern in patterns.into_iter().chain([1, 2, 3, 4, 8, 16, 32].map(Pattern::Stride)) {
            let warp = bank_read(pattern, 0).unwrap();
            // Every step of these patterns conflicts alike, so the whole run is one warp's
            // load times the loads.
            assert_eq!(warp.wavefronts() * loads, bank::run(pattern).unwrap().shared_ld_wavefronts, "{pattern:?}");
        }
        assert_eq!(tile_read(Tile::Cols).unwrap().wavefronts(), 32);
        assert_eq!(bank_read(Pattern::Stride(6), 0).unwrap().wavefronts(), 2);
    }

    #[test]
    fn tree_levels_conflict_as_their_pairs_say() {
        let interleaved = |d| reduce_level(Reduce::InterleavedConflicts, d).unwrap().wavefronts();
        let levels: Vec<u64> = (0..8).map(|k| interleaved(1 << k)).collect();
        assert_eq!(levels, [2, 4, 8, 8, 8, 4, 2, 1]);
        for k in 0..8 {
            assert_eq!(reduce_level(Reduce::Sequential, 1 << k).unwrap().wavefronts(), 1);
        }
        let level = reduce_level(Reduce::Sequential, 4).unwrap();
        assert_eq!(level.active, 0b1111);
        assert!(reduce_level(Reduce::ShuffleVec4, 1).is_err());
        assert!(reduce_level(Reduce::Sequential, 3).is_err());
        assert!(reduce_level(Reduce::Sequential, 256).is_err());
    }
}
