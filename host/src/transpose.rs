//! Matrix transpose: launchers, CPU reference and registry entries for
//! `kernels-gpu/src/transpose.rs` (tiled copy baseline, naive, shared tile, padded tile).
//! Any `rows × cols` works: edge tiles are bounds-checked in the kernels.
use cust::memory::DeviceSlice;

use crate::check::{Rng, check_f32};
use crate::error::{Result, elements, exactly, in_range};
use crate::gpu::{Gpu, Launch, kernel_args};
use crate::registry::{Param, Variant, Workload, variant};
use crate::util::random_pair;
pub use coalesce_kernels::transpose::*;

/// Shapes checked: single element, single row/column, odd sizes around a tile, non-square,
/// and large square and non-square matrices.
pub const CHECK_SHAPES: [(usize, usize); 9] =
    [(1, 1), (1, 37), (37, 1), (31, 33), (33, 31), (1000, 1003), (4096, 4096), (2048, 8192), (8191, 4097)];
/// Benchmarked shapes (256 MiB each way), selected by the `shape` parameter.
pub const BENCH_SHAPES: [(usize, usize); 2] = [(8192, 8192), (4096, 16384)];

/// The four ways of moving a matrix this family compares.
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
}

impl Method {
    const fn kernel(self) -> &'static str {
        match self {
            Method::Copy => "transpose_copy",
            Method::Naive => "transpose_naive",
            Method::Shared => "transpose_shared",
            Method::Padded => "transpose_padded",
        }
    }

    fn shared_bytes(self) -> u32 {
        match self {
            Method::Shared => TILE * PITCH * 4,
            Method::Padded => TILE * PITCH_PADDED * 4,
            _ => 0,
        }
    }
}

/// Validates a `rows × cols` transpose (or copy) and returns its launch.
pub fn plan(method: Method, rows: usize, cols: usize, input_len: usize, output_len: usize) -> Result<Launch> {
    elements("rows", rows)?;
    elements("cols", cols)?;
    elements("rows * cols", rows.saturating_mul(cols))?;
    exactly("transpose input", input_len, rows * cols)?;
    exactly("transpose output", output_len, rows * cols)?;
    let grid = grid(rows as u32, cols as u32);
    in_range("row tiles", grid.1.into(), 1, 65_535)?;
    Ok(Launch { grid, block: (TILE, BLOCK_ROWS), shared_bytes: method.shared_bytes() })
}

/// `output (cols × rows) = inputᵀ` with `method` (for [`Method::Copy`], `output = input`).
pub fn run(
    gpu: &Gpu,
    method: Method,
    input: &DeviceSlice<f32>,
    output: &mut DeviceSlice<f32>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    let launch = plan(method, rows, cols, input.len(), output.len())?;
    let (src, dst, rows, cols) = (input.as_device_ptr(), output.as_device_ptr(), rows as u32, cols as u32);
    gpu.launch(method.kernel(), launch, kernel_args![src, dst, rows, cols])
}

/// The library's transpose: the padded shared-memory tile.
pub fn transpose(
    gpu: &Gpu,
    input: &DeviceSlice<f32>,
    output: &mut DeviceSlice<f32>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    run(gpu, Method::Padded, input, output, rows, cols)
}

/// CPU reference: `output[c][r] = input[r][c]`.
pub fn transpose_cpu(input: &[f32], output: &mut [f32], rows: usize, cols: usize) {
    for r in 0..rows {
        for c in 0..cols {
            output[c * rows + r] = input[r * cols + c];
        }
    }
}

fn check(gpu: &Gpu, rng: &mut Rng, method: Method, _shape: u32) -> Result<String> {
    for (r, c) in CHECK_SHAPES {
        let reference = |i: &[f32], o: &mut [f32]| match method {
            Method::Copy => o.copy_from_slice(i),
            _ => transpose_cpu(i, o, r, c),
        };
        check_f32(gpu, rng, &format!("{r}x{c}"), (r * c, r * c), |i, o| run(gpu, method, i, o, r, c), reference)?;
    }
    Ok(format!("shapes {CHECK_SHAPES:?}"))
}

fn bench(gpu: &Gpu, method: Method, shape: u32) -> Result<Workload> {
    let (r, c) = BENCH_SHAPES[shape as usize];
    let (input, mut output) = random_pair(gpu, r * c, r * c)?;
    Ok(Workload::new(8 * (r * c) as u64, move |gpu| run(gpu, method, &input, &mut output, r, c)))
}

const SHAPE: Param = Param { name: "shape", sweep: &[0, 1], check: &[0] };

/// The transpose family, in teaching order (`shape` 0 = 8192 × 8192, 1 = 4096 × 16384).
pub const VARIANTS: &[Variant] = &[
    variant!(
        "transpose",
        "copy",
        Method::Copy.kernel(),
        Method::Copy,
        "tiled copy of the same shape: coalesced both ways, the ceiling",
        SHAPE
    ),
    variant!(
        "transpose",
        "naive",
        Method::Naive.kernel(),
        Method::Naive,
        "coalesced reads, column writes: 32 sectors per warp store",
        SHAPE
    ),
    variant!(
        "transpose",
        "shared",
        Method::Shared.kernel(),
        Method::Shared,
        "32x32 shared tile: coalesced both ways, 32-way bank conflicts",
        SHAPE
    ),
    variant!(
        "transpose",
        "padded",
        Method::Padded.kernel(),
        Method::Padded,
        "32x33 shared tile: coalesced both ways, conflict-free",
        SHAPE
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn plan_rejects_bad_shapes() {
        assert!(matches!(plan(Method::Naive, 0, 4, 0, 0), Err(Error::Empty(_))));
        assert!(matches!(plan(Method::Naive, 4, 5, 20, 19), Err(Error::LengthMismatch { .. })));
        assert!(matches!(plan(Method::Naive, 4, 5, 21, 20), Err(Error::LengthMismatch { .. })));
        assert!(matches!(plan(Method::Padded, 1 << 22, 1, 1 << 22, 1 << 22), Err(Error::OutOfRange { .. })));
        let l = plan(Method::Padded, 33, 65, 33 * 65, 33 * 65).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes), ((3, 2), (32, 8), 32 * 33 * 4));
    }

    #[test]
    fn cpu_transpose_of_a_non_square_matrix() {
        let input = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]; // 2 x 3
        let mut out = [0.0; 6];
        transpose_cpu(&input, &mut out, 2, 3);
        assert_eq!(out, [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    }
}
