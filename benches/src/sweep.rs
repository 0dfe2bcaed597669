//! The cost curve: the library's entry points timed over a range of sizes, beside the device
//! memcpy of the same run, so the report can show where a call costs its launch and where it
//! costs its bytes (or flops).
//!
//! Each point is timed as every other run is ([`coalesce::timing::median_time`]): back-to-back
//! calls between CUDA events, so at small sizes the time is the host's cost of one call (launch,
//! and for [`coalesce::reduce::sum`] an allocation and a wait for the result), not the kernel's.
//! The same sizes are what `peers.py` times PyTorch and CuPy over.
use std::io::Write;

use coalesce::util::Fill;
use coalesce::{DeviceBuffer, Gpu, Result, coalescing, matmul, reduce, transpose};

use crate::workload::random_buffer;
use serde::{Deserialize, Serialize};

/// log2 of the element counts of the memory-bound entries: 2^10, 2^12, ..., 2^30 (even powers,
/// so the square transpose's side and the 1:4 transpose's rows are whole powers of two).
pub const ELEMENT_LOG2: [u32; 11] = [10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30];
/// The sides of the square matmuls.
pub const MATMUL_SIDES: [u64; 8] = [64, 128, 256, 512, 1024, 2048, 4096, 8192];
/// The curves, in the report's order.
pub const ENTRIES: [&str; 6] =
    [entry::COPY, entry::SUM, entry::TRANSPOSE, entry::TRANSPOSE_1X4, entry::MATMUL, entry::MATMUL_SHAPES];

/// `(m, n, k)` of the matmul shapes programs use besides squares (issue 37), point `i` of the
/// `matmul_shapes` entry: small squares, skinny products (m or n from 1 to 128, the other two
/// 4096, as in inference), and thin k. `peers.py` times cuBLAS over the same list.
pub const MATMUL_SHAPES: [(u64, u64, u64); 15] = [
    (256, 256, 256),
    (384, 384, 384),
    (512, 512, 512),
    (768, 768, 768),
    (1024, 1024, 1024),
    (1, 4096, 4096),
    (8, 4096, 4096),
    (32, 4096, 4096),
    (128, 4096, 4096),
    (4096, 1, 4096),
    (4096, 8, 4096),
    (4096, 32, 4096),
    (4096, 128, 4096),
    (4096, 4096, 64),
    (4096, 4096, 128),
];

/// The library's sum that hands its result back to the host (against the peers' `.item()`s).
pub const SUM_READ_BACK: &str = "reduce::sum";

/// The entry points' names, as the cost curve's rows and `peers.py` spell them.
pub mod entry {
    pub const COPY: &str = "copy";
    pub const SUM: &str = "sum";
    pub const TRANSPOSE: &str = "transpose";
    pub const TRANSPOSE_1X4: &str = "transpose_1x4";
    pub const MATMUL: &str = "matmul";
    /// [`super::MATMUL_SHAPES`]: its sizes are indices into that list.
    pub const MATMUL_SHAPES: &str = "matmul_shapes";
}

/// Samples per point; points of more than [`BIG`] bytes (or flops) take [`REPS_BIG`].
pub const REPS: u32 = 21;
pub const REPS_BIG: u32 = 9;
const BIG: u64 = 1 << 33;
/// Device memory left free beside a point's buffers.
const HEADROOM: u64 = 512 << 20;

/// `(rows, cols)` of a transpose curve's point of `n` elements: square (side √n, rounded to a
/// power of two), or 1:4 (rows √(n/4)); `None` for other entries.
pub fn transpose_shape(entry: &str, n: u64) -> Option<(u64, u64)> {
    // log2 of √x, rounded down to a whole power of two.
    let half_log2 = |x: u64| x.max(1).ilog2() / 2;
    match entry {
        "transpose" => {
            let side = 1u64 << half_log2(n);
            Some((side, n / side))
        }
        "transpose_1x4" => {
            let rows = 1u64 << half_log2(n / 4);
            Some((rows, n / rows))
        }
        _ => None,
    }
}

/// `(m, n, k)` of a matmul curve's point `n`: the square of side `n`, or [`MATMUL_SHAPES`]`[n]`;
/// `None` for other entries (and past the list).
pub fn matmul_shape(entry: &str, n: u64) -> Option<(u64, u64, u64)> {
    match entry {
        entry::MATMUL => Some((n, n, n)),
        entry::MATMUL_SHAPES => MATMUL_SHAPES.get(usize::try_from(n).ok()?).copied(),
        _ => None,
    }
}

/// The sizes of `entry`'s curve (elements, matmul sides, or indices into [`MATMUL_SHAPES`]).
pub fn sizes(entry: &str) -> Vec<u64> {
    match entry {
        entry::MATMUL => MATMUL_SIDES.to_vec(),
        entry::MATMUL_SHAPES => (0..MATMUL_SHAPES.len() as u64).collect(),
        _ => ELEMENT_LOG2.iter().map(|&k| 1u64 << k).collect(),
    }
}

/// The shape label of `entry` at size `n`: elements, `ROWSxCOLS`, or `MxNxK`.
pub fn shape(entry: &str, n: u64) -> String {
    match (entry, transpose_shape(entry, n), matmul_shape(entry, n)) {
        (_, Some((r, c)), _) => format!("{r}x{c}"),
        (_, _, Some((m, n, k))) => format!("{m}x{n}x{k}"),
        _ => n.to_string(),
    }
}

/// `(bytes, flops)` one call of `entry` at size `n` must do, counted once: copy 8n, sum 4n,
/// transpose 8n, matmul 2n³ flops.
pub fn work(entry: &str, n: u64) -> (u64, u64) {
    match entry {
        "copy" | "transpose" | "transpose_1x4" => (8 * n, 0),
        "sum" => (4 * n, 0),
        _ => matmul_shape(entry, n).map_or((0, 0), |(m, n, k)| (0, 2 * m * n * k)),
    }
}

/// Device bytes a point's buffers take.
fn footprint(entry: &str, n: u64) -> u64 {
    match (entry, matmul_shape(entry, n)) {
        (_, Some((m, n, k))) => 4 * (m * k + k * n + m * n),
        ("sum", _) => 4 * n + 4,
        _ => 8 * n,
    }
}

/// Free device memory, or the whole of it where the driver will not say.
fn free_bytes(gpu: &Gpu) -> u64 {
    // `synchronize` makes the handle's context current on this thread, which the query needs.
    match gpu.synchronize().ok().and_then(|()| cust::memory::mem_get_info().ok()) {
        Some((free, _)) => free as u64,
        None => gpu.info().memory_bytes,
    }
}

/// One point's median time of `f`, in microseconds.
fn time(gpu: &Gpu, reps: u32, f: impl FnMut() -> Result<()>) -> Result<f64> {
    Ok(coalesce::timing::median_time(gpu, crate::measure::WARMUP, reps, f)?.as_secs_f64() * 1e6)
}

/// Every curve whose id `sweep/ENTRY` contains `filter`, timed on `gpu`, in [`ENTRIES`] order
/// and size order. Points that do not fit in the free device memory are skipped, with a line on
/// stderr saying so; a progress line goes to stderr while it runs.
pub fn run(gpu: &Gpu, filter: &str) -> Result<Vec<SweepRow>> {
    let mut rows = Vec::new();
    for entry in ENTRIES.into_iter().filter(|e| format!("sweep/{e}").contains(filter)) {
        for n in sizes(entry) {
            let (bytes, flops) = work(entry, n);
            let need = footprint(entry, n);
            let free = free_bytes(gpu);
            if need + HEADROOM > free {
                eprintln!(
                    "\r\x1b[Ksweep: skipped {entry} at {} ({:.1} GiB needed, {:.1} GiB free)",
                    shape(entry, n),
                    need as f64 / (1u64 << 30) as f64,
                    free as f64 / (1u64 << 30) as f64
                );
                continue;
            }
            eprint!("\r\x1b[Ksweep/{entry} {}", shape(entry, n));
            let _ = std::io::stderr().flush();
            let reps = if bytes.max(flops) > BIG { REPS_BIG } else { REPS };
            match point(gpu, entry, n, reps) {
                Ok(times) => {
                    for (implementation, median_us) in times {
                        rows.push(SweepRow {
                            entry: entry.into(),
                            implementation: implementation.into(),
                            shape: shape(entry, n),
                            n,
                            median_us,
                            bytes,
                            flops,
                        });
                    }
                }
                Err(e) if e.is_unavailable() => {
                    eprintln!("\r\x1b[Ksweep: skipped {entry} at {}: {e}", shape(entry, n));
                }
                Err(e) => return Err(e),
            }
        }
    }
    eprint!("\r\x1b[K");
    Ok(rows)
}

/// The implementations of `entry` at size `n`, each with its median time in µs.
fn point(gpu: &Gpu, entry: &str, n: u64, reps: u32) -> Result<Vec<(&'static str, f64)>> {
    let len = n as usize;
    let f32s = |len: usize, seed| random_buffer::<f32>(gpu, len, Fill::Unit, seed);
    Ok(match entry {
        "copy" => {
            let (input, mut output) = (f32s(len, 1)?, f32s(len, 2)?);
            let lib = time(gpu, reps, || coalescing::copy(gpu, &input, &mut output))?;
            let memcpy = time(gpu, reps, || gpu.memcpy(&input, &mut output))?;
            vec![("coalescing::copy", lib), ("gpu.memcpy", memcpy)]
        }
        "sum" => {
            let input = random_buffer::<i32>(gpu, len, Fill::Bits, 5)?;
            let mut total: DeviceBuffer<i32> = random_buffer(gpu, 1, Fill::Bits, 7)?;
            let sum = time(gpu, reps, || reduce::sum(gpu, &input).map(drop))?;
            let sum_to = time(gpu, reps, || reduce::sum_to(gpu, &input, &mut total))?;
            vec![(SUM_READ_BACK, sum), ("reduce::sum_to", sum_to)]
        }
        "transpose" | "transpose_1x4" => {
            let (rows, cols) = transpose_shape(entry, n).expect("a transpose curve");
            let (input, mut output) = (f32s(len, 1)?, f32s(len, 2)?);
            let (rows, cols) = (rows as usize, cols as usize);
            vec![(
                "transpose::transpose",
                time(gpu, reps, || transpose::transpose(gpu, &input, &mut output, rows, cols))?,
            )]
        }
        entry::MATMUL | entry::MATMUL_SHAPES => {
            let (m, n, k) = matmul_shape(entry, n).expect("a matmul curve");
            let (m, n, k) = (m as usize, n as usize, k as usize);
            let (a, b, mut c) = (f32s(m * k, 3)?, f32s(k * n, 4)?, f32s(m * n, 5)?);
            vec![("matmul::matmul", time(gpu, reps, || matmul::matmul(gpu, &a, &b, &mut c, (m, n, k)))?)]
        }
        _ => Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_whole_powers_of_two() {
        for k in ELEMENT_LOG2 {
            let n = 1u64 << k;
            let (r, c) = transpose_shape("transpose", n).unwrap();
            assert_eq!((r, c), (1 << (k / 2), 1 << (k / 2)));
            let (r, c) = transpose_shape("transpose_1x4", n).unwrap();
            assert_eq!((r * 4, r * c), (c, n), "1:4 at 2^{k}");
        }
        assert_eq!(shape("transpose_1x4", 1 << 10), "16x64");
        assert_eq!(shape("transpose", 1 << 30), "32768x32768");
        assert_eq!(shape("matmul", 64), "64x64x64");
        assert_eq!(shape("copy", 1024), "1024");
        assert_eq!(transpose_shape("copy", 1024), None);
    }

    #[test]
    fn work_is_counted_once() {
        assert_eq!(work("copy", 1 << 20), (8 << 20, 0));
        assert_eq!(work("sum", 1 << 20), (4 << 20, 0));
        assert_eq!(work("transpose_1x4", 1 << 20), (8 << 20, 0));
        assert_eq!(work("matmul", 8192), (0, 2 * 8192u64.pow(3)));
        assert_eq!(sizes("matmul").len(), 8);
        assert_eq!(sizes("sum").first().copied(), Some(1 << 10));
        assert_eq!(sizes("sum").last().copied(), Some(1 << 30));
    }

    #[test]
    fn peers_py_times_the_same_matmul_shapes() {
        let script = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../xtask/peers.py")).unwrap();
        let list = script.split("MATMUL_SHAPES = [").nth(1).and_then(|rest| rest.split(']').next()).unwrap();
        let shapes: Vec<(u64, u64, u64)> = list
            .split(')')
            .filter_map(|t| {
                let nums: Vec<u64> = t
                    .trim_start_matches([',', ' ', '\n', '('])
                    .split(',')
                    .filter_map(|x| x.trim().parse().ok())
                    .collect();
                (nums.len() == 3).then(|| (nums[0], nums[1], nums[2]))
            })
            .collect();
        assert_eq!(shapes, MATMUL_SHAPES);
        assert_eq!(shape(entry::MATMUL_SHAPES, 5), "1x4096x4096");
        assert_eq!(work(entry::MATMUL_SHAPES, 13), (0, 2 * 4096 * 4096 * 64));
        assert_eq!(matmul_shape(entry::MATMUL_SHAPES, 15), None);
        assert_eq!(sizes(entry::MATMUL_SHAPES).len(), MATMUL_SHAPES.len());
    }
}

/// One entry point at one size in the cost curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    /// The curve: `copy`, `sum`, `transpose` (square), `transpose_1x4` (rows:cols = 1:4),
    /// `matmul` (square) or `matmul_shapes` ([`MATMUL_SHAPES`]).
    pub entry: String,
    /// What was timed, e.g. `coalescing::copy`, `gpu.memcpy`, `reduce::sum`, `reduce::sum_to`.
    pub implementation: String,
    /// The shape: elements (`1048576`), `ROWSxCOLS` for the transposes, `MxNxK` for matmul.
    pub shape: String,
    /// The size on the curve's x axis: elements of the input, the side of the matmul, or the
    /// index of a `matmul_shapes` point in [`MATMUL_SHAPES`].
    pub n: u64,
    /// Median time of one call, microseconds (host launch cost included: back-to-back calls).
    pub median_us: f64,
    /// Bytes the call must move, counted once (copy 8n, sum 4n, transpose 8n; matmul 0).
    pub bytes: u64,
    /// Floating-point operations (matmul 2mnk, else 0).
    pub flops: u64,
}

impl SweepRow {
    /// Effective bandwidth in GB/s of the bytes counted once.
    pub fn gbps(&self) -> f64 {
        self.bytes as f64 / (self.median_us * 1e-6) / 1e9
    }

    /// TFLOP/s; 0 for memory-bound entries.
    pub fn tflops(&self) -> f64 {
        self.flops as f64 / (self.median_us * 1e-6) / 1e12
    }
}
