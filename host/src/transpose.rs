//! [`transpose()`], the library's matrix transpose, and the lessons that lead to it: plans,
//! launchers and the CPU reference for `kernels-gpu/src/transpose.rs` (tiled copy baseline, naive,
//! shared tile, padded tile, wide tile, and the wide tile's copies along rows and down columns)
//! and `kernels-gpu/src/transpose/elements.rs` (the packed and padded tiles of 1-, 2- and 8-byte
//! elements that [`transpose()`] takes besides the `f32` ones).
//!
//! Any `rows × cols` whose dimensions fit a `u32` works, past 2^31 elements and for tall or
//! wide shapes alike: the kernels launch one block per 32 × 32 tile on a 1-D grid and index in
//! 64 bits; edge tiles are bounds-checked in the kernels.
//!
//! The Hopper module's `transpose_tma` takes its matrices through tensor maps ([`TileMaps`],
//! encoded with `cuTensorMapEncodeTiled` and passed to the kernel by value): rows and columns
//! must be multiples of 4, and edge tiles are clipped by the TMA itself.

use crate::buffer::{DeviceRead, DeviceView, DeviceViewMut, DeviceWrite};
use crate::error::{Error, Result, aligned, aligned16, dim32, exactly, in_range};
use crate::gpu::Gpu;
use crate::launch::{Call, In, Kernel, Launch, MapIn, MapOut, Out, Signature};
use coalesce_kernels::launch::MAX_GRID_X;
pub use coalesce_kernels::transpose::TMA_ALIGN;
use coalesce_kernels::transpose::elements::*;
use coalesce_kernels::transpose::*;
use coalesce_kernels::types::TensorMap;
pub use coalesce_kernels::types::{LoadMap, StoreMap};
use cust::memory::DeviceCopy;

/// Parameter list of the TMA transpose: the input's map, the output's map, rows (the maps hold
/// the shape).
pub(crate) type TmaSig = fn(LoadMap, StoreMap, u32);

/// Parameter list of every transpose kernel: input, output, rows, cols.
pub(crate) type TransposeSig = fn(*const f32, *mut f32, u32, u32);

/// The ways of moving a matrix this family compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Tiled copy of the same shape (not a transpose: the bandwidth ceiling).
    Copy,
    /// Coalesced reads, strided writes.
    Naive,
    /// 32 × 32 shared tile (32-way bank conflicts on the column read).
    Shared,
    /// 32 × 33 shared tile (conflict-free).
    Padded,
    /// 64 × 65 shared tile, 8-byte accesses, tiles down columns; even `rows` and `cols` only.
    Wide,
    /// The wide tile's accesses as a copy (not a transpose), tiles along rows: its ceiling.
    WideCopy,
    /// The same copy with tiles down columns, the order [`Method::Wide`] reads in.
    WideCopyDown,
}

impl Method {
    /// The kernel that implements it.
    pub const fn kernel(self) -> Kernel<TransposeSig> {
        match self {
            Method::Copy => transpose_copy,
            Method::Naive => transpose_naive,
            Method::Shared => transpose_shared,
            Method::Padded => transpose_padded,
            Method::Wide => transpose_wide,
            Method::WideCopy => transpose_wide_copy,
            Method::WideCopyDown => transpose_wide_copy_down,
        }
    }

    /// Whether it moves float pairs with the wide tile's (32, WIDE_ROWS) blocks: even `rows` and
    /// `cols` and 8-byte aligned buffers only.
    pub const fn pairs(self) -> bool {
        matches!(self, Method::Wide | Method::WideCopy | Method::WideCopyDown)
    }

    /// Whether it copies (`output = input`) rather than transposes.
    pub const fn copies(self) -> bool {
        matches!(self, Method::Copy | Method::WideCopy | Method::WideCopyDown)
    }

    /// Row pitch of its shared tile in floats (0: no tile).
    pub const fn pitch(self) -> u32 {
        match self {
            Method::Shared => PITCH,
            Method::Padded => PITCH_PADDED,
            Method::Wide => WIDE_PITCH,
            Method::Copy | Method::Naive | Method::WideCopy | Method::WideCopyDown => 0,
        }
    }

    /// Dynamic shared memory a block of it needs: one `TILE × pitch` tile of floats.
    pub const fn shared_bytes(self) -> u32 {
        match self {
            Method::Wide => WIDE_SHARED_BYTES,
            _ => TILE * self.pitch() * 4,
        }
    }
}

/// Validates a `rows × cols` transpose (or, for the [`Method::copies`], a copy) of `input` into
/// `output` and returns its launch: one `(TILE, BLOCK_ROWS)` block per tile on a 1-D grid (the
/// [`Method::pairs`]: one `(32, WIDE_ROWS)` block per 64 × 64 tile).
///
/// Errors: [`Error::Empty`] for a zero dimension, [`Error::OutOfRange`] for a dimension past
/// `u32::MAX` or more tiles than `gridDim.x` takes (2^31 - 1), [`Error::LengthMismatch`] unless
/// both buffers hold exactly `rows * cols` floats; for the [`Method::pairs`] also
/// [`Error::Unsupported`] for an odd dimension and [`Error::Misaligned`] for a buffer that does
/// not start on an 8-byte boundary.
pub fn plan<'a>(
    method: Method,
    input: &'a impl DeviceRead<f32>,
    output: &'a mut impl DeviceWrite<f32>,
    rows: usize,
    cols: usize,
) -> Result<Call<'a, TransposeSig>> {
    // Both factors are below 2^32, so the product fits a u64; it fits a usize on 64-bit hosts.
    let (rows32, cols32, blocks, n) = shape(rows, cols)?;
    exactly("transpose input", input.len(), n)?;
    exactly("transpose output", output.len(), n)?;
    if method.pairs() {
        if !rows.is_multiple_of(2) || !cols.is_multiple_of(2) {
            return Err(Error::Unsupported(format!(
                "the wide tile moves float pairs: rows and cols must be even, got {rows} x {cols}"
            )));
        }
        aligned("transpose input", input.address(), 8)?;
        aligned("transpose output", output.address(), 8)?;
        // One block per 64 × 64 tile: fewer than the 32 × 32 tiles `shape` checked against the grid.
        let blocks = wide_tiles(rows32, cols32);
        let launch = Launch {
            grid: (blocks as u32, 1),
            block: (32, WIDE_ROWS),
            shared_bytes: method.shared_bytes(),
            cluster: 1,
        };
        // SAFETY: block `b < blocks` handles the 64 × 64 tile at `wide_tile_origin(b, ..)` (or
        // `wide_tile_origin_along`), whose coordinates plus 63 stay in u32. Each global access
        // is a float pair at an even column (load, and the copies' store) or even row (the
        // transpose's store) guarded by `< cols` / `< rows`; both are even (checked above), so
        // the pair's second float is inside too, the indices are < n, the exact length of both
        // buffers, and even: with 8-byte aligned bases (checked above) each pair is 8-byte
        // aligned. The wide transpose's tile slots are < 64 * WIDE_PITCH floats =
        // WIDE_SHARED_BYTES (the copies use none), launched with the (32, WIDE_ROWS) block the
        // kernels assume.
        return Ok(unsafe { Call::new(method.kernel(), launch, (In::of(input), Out::of(output), rows32, cols32)) });
    }
    let launch =
        Launch { grid: (blocks as u32, 1), block: (TILE, BLOCK_ROWS), shared_bytes: method.shared_bytes(), cluster: 1 };
    // SAFETY: block `b < blocks` handles the tile at `tile_origin(b, col_tiles(cols))`, whose
    // coordinates plus at most TILE - 1 stay in u32 (the tiles round rows and cols, both
    // <= u32::MAX, up to a multiple of TILE). Every global access is guarded by `r < rows` and
    // `c < cols`, so `row_major_index` and `transposed_index` are < rows * cols = n, the exact
    // length of both buffers (checked above). Tile slots are `tile_slot(a, b, pitch)` with
    // a, b < TILE, so < TILE * pitch floats = `shared_bytes`, launched with the
    // `(TILE, BLOCK_ROWS)` block the kernels assume.
    Ok(unsafe { Call::new(method.kernel(), launch, (In::of(input), Out::of(output), rows32, cols32)) })
}

/// Checks a `rows × cols` shape and returns `(rows, cols, tiles, rows * cols)`: errors as
/// [`plan`].
fn shape(rows: usize, cols: usize) -> Result<(u32, u32, u64, usize)> {
    let rows32 = dim32("transpose rows", rows)?;
    let cols32 = dim32("transpose cols", cols)?;
    let blocks = tiles(rows32, cols32);
    in_range("transpose tiles", blocks, 1, MAX_GRID_X.into())?;
    let product = u64::from(rows32) * u64::from(cols32);
    let n = usize::try_from(product).map_err(|_| Error::OutOfRange {
        what: "transpose rows * cols",
        value: product,
        min: 1,
        max: usize::MAX as u64,
    })?;
    Ok((rows32, cols32, blocks, n))
}

/// The two tensor maps of a TMA transpose, encoded on the host and passed to the kernel by
/// value (grid constants): the input's (`rows × cols`) and the output's (`cols × rows`), both
/// f32, row-major, moved in boxes of 64 rows × 32 columns ([`TMA_BOX_ROWS`] × 128 bytes) with
/// the 128-byte swizzle. A map holds its tensor's address, so the maps remember which buffers
/// they were encoded for and [`plan_tma`] refuses any other.
#[derive(Debug)]
pub struct TileMaps {
    input_map: TensorMap,
    output_map: TensorMap,
    input: (u64, usize),
    output: (u64, usize),
    rows: u32,
    cols: u32,
}

impl TileMaps {
    /// Encodes the maps for transposing `input` (`rows × cols`) into `output`. Errors as
    /// [`plan`], and [`Error::Unsupported`] unless rows and cols are multiples of [`TMA_ALIGN`]
    /// (a map's row pitch must be a multiple of 16 bytes),
    /// [`Error::Misaligned`] unless both buffers start on 16-byte boundaries, and
    /// [`Error::Driver`] if the driver refuses the encoding.
    pub fn new(
        gpu: &Gpu,
        input: &impl DeviceRead<f32>,
        output: &impl DeviceRead<f32>,
        rows: usize,
        cols: usize,
    ) -> Result<Self> {
        let _ = gpu; // the driver must be loaded to encode
        let (rows32, cols32, _, n) = shape(rows, cols)?;
        if !tma_supports(rows32, cols32) {
            return Err(Error::Unsupported(format!(
                "the TMA transpose needs rows and cols multiples of {TMA_ALIGN}, got {rows} x {cols}"
            )));
        }
        exactly("transpose input", input.len(), n)?;
        exactly("transpose output", output.len(), n)?;
        let (a, b) = (input.address(), output.address());
        aligned16("transpose input", a)?;
        aligned16("transpose output", b)?;
        let (r, c) = (u64::from(rows32), u64::from(cols32));
        Ok(TileMaps {
            input_map: crate::driver::encode_tiled_f32(a, r, c, TMA_BOX_ROWS, TILE)?,
            output_map: crate::driver::encode_tiled_f32(b, c, r, TMA_BOX_ROWS, TILE)?,
            input: (a, n),
            output: (b, n),
            rows: rows32,
            cols: cols32,
        })
    }

    /// `(rows, cols)` of the input the maps describe.
    pub fn shape(&self) -> (u32, u32) {
        (self.rows, self.cols)
    }
}

/// Validates a TMA transpose of `input` into `output` through `maps` and returns its launch:
/// one block of [`TMA_THREADS`] per 64 × 64 tile ([`wide_tiles`]) on a 1-D grid,
/// [`TMA_SHARED_BYTES`] of shared memory each. [`Error::Unsupported`] if the maps were encoded
/// for other buffers.
pub fn plan_tma<'a>(
    maps: &'a TileMaps,
    input: &'a impl DeviceRead<f32>,
    output: &'a mut impl DeviceWrite<f32>,
) -> Result<Call<'a, TmaSig>> {
    let given = ((input.address(), input.len()), (output.address(), output.len()));
    if given != (maps.input, maps.output) {
        return Err(Error::Unsupported("the tensor maps were encoded for other buffers".into()));
    }
    let blocks = wide_tiles(maps.rows, maps.cols);
    in_range("transpose tiles", blocks, 1, MAX_GRID_X.into())?;
    let launch = Launch::linear(blocks as u32, TMA_THREADS).with_shared(TMA_SHARED_BYTES);
    // SAFETY: the input map describes exactly `input` (rows × cols floats at its address) and
    // the output map exactly `output` (cols × rows), checked above against the buffers borrowed
    // here (shared and exclusive) and encoded by `TileMaps::new`, which checked shape, lengths
    // and alignment.
    // The TMA reads and writes nothing outside the tensors a map describes: boxes past the edge
    // read zeros and store nothing there. Block b < wide_tiles(rows, cols) (<= MAX_GRID_X,
    // checked above) transposes the 64 × 64 tile at `wide_tile_origin(b, ..)`, whose box
    // coordinates stay below rows + 64 and cols + 64, which fit i32 (`tma_supports`); its four
    // boxes and barrier fit the TMA_SHARED_BYTES launched, with the TMA_THREADS threads the lane
    // mapping assumes.
    let args = unsafe { (MapIn::new(maps.input_map, input), MapOut::new(maps.output_map, output), maps.rows) };
    // SAFETY: as above.
    Ok(unsafe { Call::new(transpose_tma, launch, args) })
}

/// `output (cols × rows) = inputᵀ` through the TMA (Hopper module: [`Error::ModuleUnavailable`]
/// on older devices). Encodes the tensor maps each call; keep a [`TileMaps`] and use
/// [`plan_tma`] to launch repeatedly.
pub fn tma_transpose(
    gpu: &Gpu,
    input: &impl DeviceRead<f32>,
    output: &mut impl DeviceWrite<f32>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    gpu.supports(transpose_tma)?;
    let maps = TileMaps::new(gpu, input, output, rows, cols)?;
    gpu.launch(plan_tma(&maps, input, output)?)
    // `maps` lives on the host only: the launch passed its two maps by value (grid constants,
    // copied into the kernel's parameters when the launch was queued), so dropping it here
    // frees nothing on the device and cannot race the queued kernel.
}

/// `output (cols × rows) = inputᵀ` with `method` (for the [`Method::copies`], `output = input`).
pub fn run(
    gpu: &Gpu,
    method: Method,
    input: &impl DeviceRead<f32>,
    output: &mut impl DeviceWrite<f32>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    gpu.launch(plan(method, input, output, rows, cols)?)
}

/// The library's transpose: `output (cols × rows) = inputᵀ` for a row-major `input (rows × cols)`
/// of elements of 1, 2, 4 or 8 bytes (any `T`: the kernels move bits), any shape that fits in
/// device memory, any views. Which kernel runs is [`route`]'s choice:
///
/// | element | kernel | when |
/// |---|---|---|
/// | 4 bytes | the wide 64 × 64 `f32` tile | even `rows` and `cols`, 8-byte aligned views |
/// | 4 bytes | the padded 32 × 33 `f32` tile | otherwise |
/// | 8 bytes | `transpose_packed_u64`, 32 × 32, 8-byte accesses | always |
/// | 1 byte | `transpose_packed_u8`, 128 × 128, 4-byte accesses | `rows`, `cols` multiples of 4, 4-byte aligned views |
/// | 2 bytes | `transpose_packed_u16`, 64 × 64, 4-byte accesses | `rows`, `cols` even, 4-byte aligned views |
/// | 1, 2 bytes | `transpose_padded_u8`/`_u16`, the padded tile an element a lane | otherwise |
///
/// Errors: [`Error::Unsupported`] for elements of another size; else as [`plan`] (a zero
/// dimension, a dimension past `u32::MAX`, too many tiles, lengths other than `rows * cols`),
/// all before anything is queued.
pub fn transpose<T: DeviceCopy>(
    gpu: &Gpu,
    input: &impl DeviceRead<T>,
    output: &mut impl DeviceWrite<T>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    dispatch(input.view(), output.view_mut(), rows, cols, Launcher(gpu))
}

/// The kernel [`transpose`] takes for elements of `T` in these views and this shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// 4-byte elements: one of the `f32` kernels ([`Method::Wide`] or [`Method::Padded`]).
    Words(Method),
    /// 1-, 2- or 8-byte elements: the packed tile of their size.
    Packed,
    /// 1- or 2-byte elements the packed tile does not take: the padded tile of their size.
    Padded,
}

/// [`transpose`]'s kernel and launch for these views and this shape, without a GPU (nothing is
/// queued): the same checks and errors.
pub fn route<T: DeviceCopy>(
    input: &impl DeviceRead<T>,
    output: &mut impl DeviceWrite<T>,
    rows: usize,
    cols: usize,
) -> Result<(Route, Launch)> {
    dispatch(input.view(), output.view_mut(), rows, cols, Planner)
}

/// What [`dispatch`] does with the call it plans: launch it or describe it.
trait Sink {
    type Out;
    fn take<'a, Sig: Signature<'a>>(self, route: Route, call: Call<'a, Sig>) -> Result<Self::Out>;
}

struct Launcher<'g>(&'g Gpu);
struct Planner;

impl Sink for Launcher<'_> {
    type Out = ();
    fn take<'a, Sig: Signature<'a>>(self, _: Route, call: Call<'a, Sig>) -> Result<()> {
        self.0.launch(call)
    }
}

impl Sink for Planner {
    type Out = (Route, Launch);
    fn take<'a, Sig: Signature<'a>>(self, route: Route, call: Call<'a, Sig>) -> Result<(Route, Launch)> {
        Ok((route, call.launch()))
    }
}

/// Plans [`transpose`]'s call for `T` and hands it to `sink`.
fn dispatch<T: DeviceCopy, S: Sink>(
    input: DeviceView<'_, T>,
    output: DeviceViewMut<'_, T>,
    rows: usize,
    cols: usize,
    sink: S,
) -> Result<S::Out> {
    let size = std::mem::size_of::<T>();
    let unsupported =
        || Error::Unsupported(format!("transpose of {size}-byte elements: it takes elements of 1, 2, 4 or 8 bytes"));
    if ![1, 2, 4, 8].contains(&size) {
        return Err(unsupported());
    }
    // Lengths in elements first, so a wrong one is named as such whatever the words.
    let (_, _, _, n) = shape(rows, cols)?;
    exactly("transpose input", input.len(), n)?;
    exactly("transpose output", output.len(), n)?;
    // The element size's word kernels see the views as words of their own type; views of `T` are
    // aligned to `size` (allocations are 256-byte aligned, views start at whole elements), so
    // this fails only for a stand-in at a made-up address.
    let misaligned = |what, address| Error::Misaligned { what, address, align: size as u64 };
    let (input_at, output_at) = (input.address(), output.address());
    macro_rules! as_words {
        ($w:ty) => {
            (
                input.reinterpret::<$w>().ok_or_else(|| misaligned("transpose input", input_at))?,
                output.reinterpret::<$w>().ok_or_else(|| misaligned("transpose output", output_at))?,
            )
        };
    }
    match size {
        4 => {
            let (input, mut output) = as_words!(f32);
            let method = choose(&input, &output, rows, cols);
            sink.take(Route::Words(method), plan(method, &input, &mut output, rows, cols)?)
        }
        8 => {
            let (input, mut output) = as_words!(u64);
            sink.take(Route::Packed, plan_packed(transpose_packed_u64, K_U64, &input, &mut output, rows, cols)?)
        }
        1 | 2 => {
            let k = if size == 1 { K_U8 } else { K_U16 };
            let words = (input_at | output_at).is_multiple_of(4);
            if words && rows.is_multiple_of(k as usize) && cols.is_multiple_of(k as usize) {
                // Whole words: the views' bytes are `rows * cols / k` words from 4-byte boundaries.
                let (input, mut output) = as_words!(u32);
                let kernel = if size == 1 { transpose_packed_u8 } else { transpose_packed_u16 };
                return sink.take(Route::Packed, plan_packed(kernel, k, &input, &mut output, rows, cols)?);
            }
            if size == 1 {
                let (input, mut output) = as_words!(u8);
                sink.take(Route::Padded, plan_padded(transpose_padded_u8, &input, &mut output, rows, cols)?)
            } else {
                let (input, mut output) = as_words!(u16);
                sink.take(Route::Padded, plan_padded(transpose_padded_u16, &input, &mut output, rows, cols)?)
            }
        }
        _ => Err(unsupported()),
    }
}

/// The kernels of the transposes of 1-, 2- and 8-byte elements (no lesson: the registry holds
/// none of them; the `library/` checks and `gpu --types` run them).
pub const ELEMENT_KERNELS: [&str; 5] = [
    transpose_packed_u8.name(),
    transpose_packed_u16.name(),
    transpose_packed_u64.name(),
    transpose_padded_u8.name(),
    transpose_padded_u16.name(),
];

/// Parameter list of a packed transpose: input and output words, rows, cols (in elements).
pub type PackedSig<W> = fn(*const W, *mut W, u32, u32);

/// A packed tile's kernel for words of `W`, with `k` elements a word: only the pairs
/// [`dispatch`] names (`transpose_packed_u8` with 4, `_u16` with 2, `_u64` with 1), which is why
/// this is not public (a kernel with another `k` would index past the buffers).
fn plan_packed<'a, W: DeviceCopy + 'static>(
    kernel: Kernel<PackedSig<W>>,
    k: u32,
    input: &'a impl DeviceRead<W>,
    output: &'a mut impl DeviceWrite<W>,
    rows: usize,
    cols: usize,
) -> Result<Call<'a, PackedSig<W>>> {
    let (rows32, cols32, _, n) = shape(rows, cols)?;
    if !rows32.is_multiple_of(k) || !cols32.is_multiple_of(k) {
        return Err(Error::Unsupported(format!(
            "the packed tile moves {k} elements a word: rows and cols must be multiples of {k}, got {rows} x {cols}"
        )));
    }
    let words = n / k as usize;
    exactly("transpose input", input.len(), words)?;
    exactly("transpose output", output.len(), words)?;
    // No more tiles than the 32 × 32 ones `shape` checked against the grid.
    let blocks = packed_tiles(rows32, cols32, k);
    let launch = Launch {
        grid: (blocks as u32, 1),
        block: PACKED_BLOCK,
        shared_bytes: packed_shared_bytes(k, std::mem::size_of::<W>() as u32),
        cluster: 1,
    };
    // SAFETY: rows and cols are multiples of k (checked), so every input row starts on a word
    // (`cols / k` words a row) and every output row too (`rows / k`), and both views hold exactly
    // `rows * cols / k` words (checked) of their word type, aligned to it (views of `W`). Block
    // `b < blocks` handles the tile at `packed_origin(b, ..)`, whose coordinates plus `32 k - 1`
    // stay in u32 (a power of two that divides 2^32). The kernel reads the word at element `(r, c)`
    // only for `r < rows`, `c < cols` (c a multiple of k, so the word is whole) and writes the
    // output word at `(c + i, r)` only for `c + i < cols`, `r < rows`: every index is below
    // `rows * cols / k`. Tile slots are below `32 k * 32` words, the shared memory launched, with
    // the PACKED_BLOCK threads the kernel assumes. `k` is the kernel's own (see above).
    Ok(unsafe { Call::new(kernel, launch, (In::of(input), Out::of(output), rows32, cols32)) })
}

/// A padded tile's kernel for elements of `E` (`transpose_padded_u8` or `_u16`).
fn plan_padded<'a, E: DeviceCopy + 'static>(
    kernel: Kernel<PackedSig<E>>,
    input: &'a impl DeviceRead<E>,
    output: &'a mut impl DeviceWrite<E>,
    rows: usize,
    cols: usize,
) -> Result<Call<'a, PackedSig<E>>> {
    let (rows32, cols32, blocks, n) = shape(rows, cols)?;
    exactly("transpose input", input.len(), n)?;
    exactly("transpose output", output.len(), n)?;
    let launch = Launch {
        grid: (blocks as u32, 1),
        block: PADDED_BLOCK,
        shared_bytes: TILE * PITCH_PADDED * std::mem::size_of::<E>() as u32,
        cluster: 1,
    };
    // SAFETY: as `plan`'s padded tile, in elements of E: every global access is guarded by
    // `r < rows`, `c < cols`, so its index is below `rows * cols`, the exact length of both
    // views (checked); tile slots are below `TILE * PITCH_PADDED` elements of E, launched, with
    // the `(TILE, BLOCK_ROWS)` block the kernel assumes.
    Ok(unsafe { Call::new(kernel, launch, (In::of(input), Out::of(output), rows32, cols32)) })
}

/// The `f32` method [`transpose`] uses for these buffers and this shape (4-byte elements).
pub fn choose(input: &impl DeviceRead<f32>, output: &impl DeviceRead<f32>, rows: usize, cols: usize) -> Method {
    let even = rows.is_multiple_of(2) && cols.is_multiple_of(2);
    let aligned8 = (input.address() | output.address()).is_multiple_of(8);
    if even && aligned8 { Method::Wide } else { Method::Padded }
}

/// CPU reference: `output[c][r] = input[r][c]`. Errors: [`Error::OutOfRange`] if `rows * cols`
/// passes `usize`, [`Error::LengthMismatch`] unless both slices hold exactly `rows * cols`.
pub fn transpose_cpu<T: Copy>(input: &[T], output: &mut [T], rows: usize, cols: usize) -> Result<()> {
    let n = crate::error::product("transpose rows * cols", rows, cols)?;
    exactly("transpose input", input.len(), n)?;
    exactly("transpose output", output.len(), n)?;
    if n == 0 {
        // With cols = 0 nothing bounds rows: the loop below could run up to usize::MAX times.
        return Ok(());
    }
    for r in 0..rows {
        for c in 0..cols {
            output[c * rows + r] = input[r * cols + c];
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::DeviceViewMut;

    /// Plans `method` over descriptors of `a` and `b` floats (nothing is launched).
    fn plan_for(method: Method, rows: usize, cols: usize, a: usize, b: usize) -> Result<(Launch, u32, u32)> {
        // SAFETY: descriptors only; the planned call is dropped unlaunched.
        let (input, mut output) = unsafe {
            (DeviceViewMut::<f32>::stand_in(0x1_0000_0000, a), DeviceViewMut::<f32>::stand_in(0x9_0000_0000, b))
        };
        plan(method, &input, &mut output, rows, cols).map(|c| (c.launch(), c.args().2, c.args().3))
    }

    #[test]
    fn plan_rejects_bad_shapes_with_their_errors() {
        assert!(matches!(plan_for(Method::Naive, 0, 4, 0, 0), Err(Error::Empty("transpose rows"))));
        assert!(matches!(plan_for(Method::Naive, 4, 0, 0, 0), Err(Error::Empty("transpose cols"))));
        assert!(matches!(
            plan_for(Method::Copy, 1 << 32, 1, 1 << 32, 1 << 32),
            Err(Error::OutOfRange { what: "transpose rows", .. })
        ));
        // u32::MAX × u32::MAX: 2^54 tiles, more than gridDim.x takes.
        let max = u32::MAX as usize;
        assert!(matches!(
            plan_for(Method::Padded, max, max, usize::MAX, usize::MAX),
            Err(Error::OutOfRange { what: "transpose tiles", .. })
        ));
        assert!(matches!(
            plan_for(Method::Naive, 4, 5, 20, 19),
            Err(Error::LengthMismatch { what: "transpose output", expected: 20, got: 19 })
        ));
        assert!(matches!(plan_for(Method::Naive, 4, 5, 21, 20), Err(Error::LengthMismatch { .. })));
    }

    #[test]
    fn plan_launches_one_block_per_tile_on_a_1d_grid() {
        let (l, rows, cols) = plan_for(Method::Padded, 33, 65, 33 * 65, 33 * 65).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes, rows, cols), ((6, 1), (32, 8), 32 * 33 * 4, 33, 65));
        assert_eq!(plan_for(Method::Shared, 1, 1, 1, 1).unwrap().0.shared_bytes, 32 * 32 * 4);
        assert_eq!(plan_for(Method::Copy, 1, 1, 1, 1).unwrap().0.shared_bytes, 0);
        // Tall and wide shapes past the old gridDim.y cap of 65 535 row tiles, and past 2^31
        // elements: accepted, one block per tile.
        for (r, c, blocks) in
            [(4_194_304, 8, 131_072), (8, 4_194_304, 131_072), (2_100_000, 3, 65_625), (32_768, 65_537, 2049 * 1024)]
        {
            let (l, rows, cols) = plan_for(Method::Padded, r, c, r * c, r * c).unwrap();
            assert_eq!((l.grid, rows as usize, cols as usize), ((blocks, 1), r, c), "{r}x{c}");
            assert!(l.check_limits().is_ok());
        }
    }

    #[test]
    fn cpu_transpose_of_a_non_square_matrix() {
        let input = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]; // 2 x 3
        let mut out = [0.0; 6];
        transpose_cpu(&input, &mut out, 2, 3).unwrap();
        assert_eq!(out, [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    }

    #[test]
    fn cpu_transpose_refuses_slices_that_do_not_match_the_shape() {
        let mut out = [0.0; 6];
        let refused = transpose_cpu(&[1.0; 5], &mut out, 2, 3);
        assert!(matches!(refused, Err(Error::LengthMismatch { what: "transpose input", expected: 6, got: 5 })));
        let refused = transpose_cpu(&[1.0; 6], &mut out[..4], 2, 3);
        assert!(matches!(refused, Err(Error::LengthMismatch { what: "transpose output", expected: 6, got: 4 })));
        assert!(matches!(transpose_cpu::<f32>(&[], &mut [], 1 << 33, 1 << 33), Err(Error::OutOfRange { .. })));
        assert_eq!(out, [0.0; 6]);
        assert!(transpose_cpu::<f32>(&[], &mut [], 0, 7).is_ok());
    }

    #[test]
    fn cpu_transpose_of_an_empty_matrix_returns_at_once() {
        // rows × 0 is empty for any rows: the row loop ran rows times (usize::MAX: a hang).
        assert_eq!(transpose_cpu::<f32>(&[], &mut [], usize::MAX, 0), Ok(()));
    }
}
