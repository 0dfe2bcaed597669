//! [`transpose()`], the library's matrix transpose, and the lessons that lead to it: plans,
//! launchers and the CPU reference for `kernels-gpu/src/transpose.rs` (tiled copy baseline, naive,
//! shared tile, padded tile, wide tile, and the wide tile's copies along rows and down columns).
//!
//! Any `rows × cols` whose dimensions fit a `u32` works, past 2^31 elements and for tall or
//! wide shapes alike: the kernels launch one block per 32 × 32 tile on a 1-D grid and index in
//! 64 bits; edge tiles are bounds-checked in the kernels.
//!
//! The Hopper module's `transpose_tma` takes its matrices through tensor maps ([`TileMaps`],
//! encoded with `cuTensorMapEncodeTiled` and passed to the kernel by value): rows and columns
//! must be multiples of 4, and edge tiles are clipped by the TMA itself.

use crate::buffer::{DeviceRead, DeviceWrite};
use crate::error::{Error, Result, aligned, aligned16, dim32, exactly, in_range};
use crate::gpu::Gpu;
use crate::launch::{Call, In, Kernel, Launch, MapIn, MapOut, Out};
use coalesce_kernels::launch::MAX_GRID_X;
pub use coalesce_kernels::transpose::TMA_ALIGN;
use coalesce_kernels::transpose::*;
use coalesce_kernels::types::TensorMap;
pub use coalesce_kernels::types::{LoadMap, StoreMap};

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

/// The library's transpose: `output (cols × rows) = inputᵀ` for a row-major `input (rows × cols)`,
/// any shape that fits in device memory. The wide tile where it applies (even `rows` and `cols`,
/// 8-byte aligned buffers), else the padded 32 × 33 tile.
pub fn transpose(
    gpu: &Gpu,
    input: &impl DeviceRead<f32>,
    output: &mut impl DeviceWrite<f32>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    run(gpu, choose(input, output, rows, cols), input, output, rows, cols)
}

/// The method [`transpose`] uses for these buffers and this shape.
pub fn choose(input: &impl DeviceRead<f32>, output: &impl DeviceRead<f32>, rows: usize, cols: usize) -> Method {
    let even = rows.is_multiple_of(2) && cols.is_multiple_of(2);
    let aligned8 = (input.address() | output.address()).is_multiple_of(8);
    if even && aligned8 { Method::Wide } else { Method::Padded }
}

/// CPU reference: `output[c][r] = input[r][c]`. Errors: [`Error::OutOfRange`] if `rows * cols`
/// passes `usize`, [`Error::LengthMismatch`] unless both slices hold exactly `rows * cols`.
pub fn transpose_cpu(input: &[f32], output: &mut [f32], rows: usize, cols: usize) -> Result<()> {
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
        assert!(matches!(transpose_cpu(&[], &mut [], 1 << 33, 1 << 33), Err(Error::OutOfRange { .. })));
        assert_eq!(out, [0.0; 6]);
        assert!(transpose_cpu(&[], &mut [], 0, 7).is_ok());
    }

    #[test]
    fn cpu_transpose_of_an_empty_matrix_returns_at_once() {
        // rows × 0 is empty for any rows: the row loop ran rows times (usize::MAX: a hang).
        assert_eq!(transpose_cpu(&[], &mut [], usize::MAX, 0), Ok(()));
    }
}
