//! Shared-memory bank conflicts in isolation: plans, launchers and CPU reference for
//! `kernels-gpu/src/bank.rs` (rows, columns, padded columns of a tile, and a stride sweep).

use crate::buffer::{DeviceRead, DeviceWrite};
use crate::error::{Result, exactly, in_range};
use crate::gpu::Gpu;
use crate::launch::{Call, In, Kernel, Launch, Out};
use coalesce_kernels::bank::*;
pub use coalesce_kernels::bank::{MAX_STRIDE, OUTPUTS, WORDS};

/// Parameter list of the tile kernels: table, out.
pub(crate) type TileSig = fn(*const i32, *mut i32);
/// Parameter list of the stride kernel: table, out, stride.
pub(crate) type StrideSig = fn(*const i32, *mut i32, u32);

/// How a warp reads a 32-wide tile of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tile {
    /// Along rows of a 32 x 32 tile.
    Rows,
    /// Down columns of a 32 x 32 tile.
    Cols,
    /// Down columns of a 32 x 33 (padded) tile.
    ColsPadded,
}

impl Tile {
    /// The kernel that reads it.
    pub const fn kernel(self) -> Kernel<TileSig> {
        match self {
            Tile::Rows => bank_rows,
            Tile::Cols => bank_cols,
            Tile::ColsPadded => bank_cols_padded,
        }
    }
}

/// The access patterns of this family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// A tile read.
    Tile(Tile),
    /// Lane `l` reads word `l * stride + k`, `1 <= stride <= MAX_STRIDE`.
    Stride(u32),
}

impl Pattern {
    /// The word lane `lane` reads at step `k` (the same functions the kernels call), below
    /// `WORDS` for every input: `lane` is taken within its warp (mod 32), and any stride wraps
    /// modulo `WORDS` ([`strided`]).
    pub fn index(self, lane: u32, k: u32) -> u32 {
        let lane = lane % coalesce_kernels::WARP_SIZE;
        match self {
            Pattern::Tile(Tile::Rows) => rows(lane, k),
            Pattern::Tile(Tile::Cols) => cols(lane, k),
            Pattern::Tile(Tile::ColsPadded) => cols_padded(lane, k),
            Pattern::Stride(s) => strided(lane, k, s),
        }
    }
}

/// The launch every bank kernel assumes: `BLOCKS` blocks of exactly `BLOCK` threads (the table
/// copy strides by `BLOCK`, and thread `t` of block `b` writes `output_index(b, t)`), with the
/// table in `SHARED_BYTES` of shared memory.
pub const LAUNCH: Launch = Launch::linear(BLOCKS, BLOCK).with_shared(SHARED_BYTES);

/// Checks the table and output lengths.
fn check_buffers(table: &impl DeviceRead<i32>, output: &impl DeviceRead<i32>) -> Result<()> {
    exactly("bank table", table.len(), WORDS as usize)?;
    exactly("bank output", output.len(), OUTPUTS as usize)
}

/// Validates a tile read and returns its launch.
///
/// Errors: `LengthMismatch` ("bank table" / "bank output") unless the table holds `WORDS`
/// words and the output `OUTPUTS`.
pub fn plan_tile<'a>(
    tile: Tile,
    table: &'a impl DeviceRead<i32>,
    output: &'a mut impl DeviceWrite<i32>,
) -> Result<Call<'a, TileSig>> {
    check_buffers(table, output)?;
    // SAFETY: the table holds `WORDS` words and the output `OUTPUTS` (checked above). The kernel
    // copies words `t + j * BLOCK < WORDS` into the `SHARED_BYTES` launched, reads shared word
    // `rows / cols / cols_padded(lane, k)`, below `WORDS` for every lane < 32 (asserted at
    // compile time in the kernel crate), and writes `output_index(b, t) < BLOCKS * BLOCK` for
    // the `LAUNCH` geometry it assumes, which is the one given here.
    Ok(unsafe { Call::new(tile.kernel(), LAUNCH, (In::of(table), Out::of(output))) })
}

/// Validates a stride read (`1 <= stride <= MAX_STRIDE`) and returns its launch.
///
/// Errors: `OutOfRange` ("bank stride") outside `1..=MAX_STRIDE`, then as [`plan_tile`].
pub fn plan_stride<'a>(
    table: &'a impl DeviceRead<i32>,
    output: &'a mut impl DeviceWrite<i32>,
    stride: u32,
) -> Result<Call<'a, StrideSig>> {
    in_range("bank stride", stride.into(), 1, MAX_STRIDE.into())?;
    check_buffers(table, output)?;
    // SAFETY: as `plan_tile`; `strided` wraps modulo `WORDS`, so every shared word read is
    // below `WORDS` whatever the stride.
    Ok(unsafe { Call::new(bank_stride, LAUNCH, (In::of(table), Out::of(output), stride)) })
}

/// Every thread sums `ITERS` words of `table` (staged in shared memory) read with `pattern`.
pub fn run(
    gpu: &Gpu,
    pattern: Pattern,
    table: &impl DeviceRead<i32>,
    output: &mut impl DeviceWrite<i32>,
) -> Result<()> {
    match pattern {
        Pattern::Tile(tile) => gpu.launch(plan_tile(tile, table, output)?),
        Pattern::Stride(stride) => gpu.launch(plan_stride(table, output, stride)?),
    }
}

/// CPU reference: the sum each lane computes (every warp computes the same 32 sums, wrapping
/// as the kernel's). [`crate::Error::LengthMismatch`] ("bank table") unless `table` holds `WORDS`
/// words, as the plans.
pub fn lane_sums_cpu(pattern: Pattern, table: &[i32]) -> Result<[i32; 32]> {
    exactly("bank table", table.len(), WORDS as usize)?;
    Ok(std::array::from_fn(|lane| {
        (0..ITERS).fold(0i32, |acc, k| acc.wrapping_add(table[pattern.index(lane as u32, k) as usize]))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::DeviceViewMut;
    use crate::error::Error;

    fn slices(a: usize, b: usize) -> (DeviceViewMut<'static, i32>, DeviceViewMut<'static, i32>) {
        // SAFETY: descriptors only; no planned call is launched.
        unsafe { (DeviceViewMut::stand_in(0x10_0000, a), DeviceViewMut::stand_in(0x20_0000, b)) }
    }

    #[test]
    fn plans_reject_bad_input() {
        let outputs = OUTPUTS as usize;
        let stride = |s, a, b| {
            let (t, mut o) = slices(a, b);
            plan_stride(&t, &mut o, s).map(|c| (c.launch(), c.args().2))
        };
        let tile = |a, b| {
            let (t, mut o) = slices(a, b);
            plan_tile(Tile::Cols, &t, &mut o).map(|c| c.launch())
        };
        assert!(matches!(stride(0, 2048, outputs), Err(Error::OutOfRange { .. })));
        assert!(matches!(stride(33, 2048, outputs), Err(Error::OutOfRange { .. })));
        assert!(matches!(tile(2047, outputs), Err(Error::LengthMismatch { what: "bank table", .. })));
        assert!(matches!(tile(2048, outputs - 1), Err(Error::LengthMismatch { what: "bank output", .. })));
        assert_eq!(stride(32, 2048, outputs).unwrap(), (LAUNCH, 32));
        let launch = tile(2048, outputs).unwrap();
        assert_eq!((launch.grid.0, launch.block.0, launch.shared_bytes), (1056, 256, 8192));
    }

    #[test]
    fn every_pattern_index_is_defined_and_in_the_table() {
        for pattern in
            [Pattern::Stride(u32::MAX), Pattern::Stride(0), Pattern::Stride(1 << 31), Pattern::Tile(Tile::Cols)]
        {
            for (l, k) in [(0, 0), (31, ITERS - 1), (u32::MAX, u32::MAX)] {
                assert!(pattern.index(l, k) < WORDS, "{pattern:?} lane {l} step {k}");
            }
        }
        // Lane 31 of stride 2^32 - 1 is 31 * (2^32 - 1) = -31 (mod WORDS).
        assert_eq!(Pattern::Stride(u32::MAX).index(31, 0), WORDS - 31);
        // A lane is the lane within its warp: 33 is lane 1.
        assert_eq!(Pattern::Tile(Tile::Cols).index(33, 4), Pattern::Tile(Tile::Cols).index(1, 4));
    }

    #[test]
    fn lane_sums_refuse_a_table_that_is_not_words_long() {
        let refused = lane_sums_cpu(Pattern::Tile(Tile::Cols), &[1; 100]);
        assert!(matches!(refused, Err(Error::LengthMismatch { what: "bank table", expected: 2048, got: 100 })));
        assert!(lane_sums_cpu(Pattern::Stride(u32::MAX), &[1; WORDS as usize + 1]).is_err());
        // Any stride sums ITERS words of the table (the sum wraps, as the kernel's).
        assert_eq!(lane_sums_cpu(Pattern::Stride(u32::MAX), &[1; WORDS as usize]).unwrap(), [ITERS as i32; 32]);
        let wraps = lane_sums_cpu(Pattern::Stride(1), &[i32::MAX; WORDS as usize]).unwrap();
        assert_eq!(wraps[0], i32::MAX.wrapping_mul(ITERS as i32));
    }

    #[test]
    fn lane_sums_follow_the_pattern() {
        let table: Vec<i32> = (0..WORDS as i32).collect();
        // Rows: lane l reads (k % 32) * 32 + l; summed over 4096 steps.
        let sums = lane_sums_cpu(Pattern::Tile(Tile::Rows), &table).unwrap();
        let per_cycle: i32 = (0..32).map(|r| r * 32).sum();
        assert_eq!(sums[0], per_cycle * (ITERS as i32 / 32));
        assert_eq!(sums[5] - sums[0], 5 * ITERS as i32);
    }
}
