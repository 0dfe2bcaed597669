//! Distances to the origin from AoS and SoA points, for all points and for a gathered few:
//! launchers, CPU reference and registry entries for `kernels-gpu/src/distance.rs`.
//! AoS buffers hold x, y, z per point; SoA buffers hold all x, then all y, then all z.
use cust::memory::{DeviceBuffer, DeviceSlice};

use crate::check::{POISON_BITS, Rng, same_bits};
use crate::error::{Error, Result, elements, exactly};
use crate::gpu::{Gpu, Launch, kernel_args};
use crate::registry::{Variant, Workload, variant};
use crate::util::{Fill, random_buffer};
pub use coalesce_kernels::distance::*;

/// Point counts checked.
pub const CHECK_SIZES: [usize; 4] = [1, 31, 1_000_003, 1 << 24];
/// Points of the benchmarks (768 MiB of coordinates).
pub const BENCH_N: usize = 1 << 26;
/// Points gathered in the gather benchmarks (1 in 64).
pub const BENCH_M: usize = 1 << 20;

/// Point indices on the device, validated once: `max` is the largest, so a gather only has to
/// compare it with the point count.
pub struct Indices {
    buffer: DeviceBuffer<u32>,
    max: u32,
}

impl Indices {
    /// Uploads `indices` (at least one).
    pub fn upload(gpu: &Gpu, indices: &[u32]) -> Result<Self> {
        let max = *indices.iter().max().ok_or(Error::Empty("indices"))?;
        Ok(Indices { buffer: gpu.upload(indices)?, max })
    }

    /// Number of indices.
    pub fn len(&self) -> usize {
        self.buffer.len()
    }

    /// Never true: [`Indices::upload`] refuses an empty list.
    pub fn is_empty(&self) -> bool {
        self.buffer.is_empty()
    }

    /// The largest index.
    pub fn max(&self) -> u32 {
        self.max
    }
}

/// Where the coordinates are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Aos,
    Soa,
}

/// Validates `n` points in `points` (3n floats either layout) and `out_len` outputs; for a
/// gather, `indices` gives their count and largest value, which must be < n.
pub fn plan(n: usize, points_len: usize, out_len: usize, indices: Option<(usize, u32)>) -> Result<Launch> {
    elements("points", n)?;
    exactly("points (3 floats each)", points_len, 3 * n)?;
    let work = match indices {
        None => n,
        Some((count, max)) => {
            if max as usize >= n {
                return Err(Error::Unsupported(format!("index {max} is past the {n} points")));
            }
            count
        }
    };
    let work32 = elements("distances", work)?;
    exactly("distance output", out_len, work)?;
    Ok(Launch::linear(work32.div_ceil(BLOCK), BLOCK))
}

fn soa_parts(points: &DeviceSlice<f32>, n: usize) -> [cust::memory::DevicePointer<f32>; 3] {
    std::array::from_fn(|k| points.index(k * n..(k + 1) * n).as_device_ptr())
}

/// `out[i] = |point i|` for all `n` points.
pub fn all(gpu: &Gpu, layout: Layout, points: &DeviceSlice<f32>, out: &mut DeviceSlice<f32>, n: usize) -> Result<()> {
    let launch = plan(n, points.len(), out.len(), None)?;
    let (o, n32) = (out.as_device_ptr(), n as u32);
    match layout {
        Layout::Aos => {
            let p = points.as_device_ptr();
            gpu.launch("distance_aos", launch, kernel_args![p, o, n32])
        }
        Layout::Soa => {
            let [x, y, z] = soa_parts(points, n);
            gpu.launch("distance_soa", launch, kernel_args![x, y, z, o, n32])
        }
    }
}

/// `out[j] = |point indices[j]|`.
pub fn gather(
    gpu: &Gpu,
    layout: Layout,
    points: &DeviceSlice<f32>,
    indices: &Indices,
    out: &mut DeviceSlice<f32>,
    n: usize,
) -> Result<()> {
    let launch = plan(n, points.len(), out.len(), Some((indices.len(), indices.max)))?;
    let (idx, o, m) = (indices.buffer.as_device_ptr(), out.as_device_ptr(), indices.len() as u32);
    match layout {
        Layout::Aos => {
            let p = points.as_device_ptr();
            gpu.launch("distance_aos_gather", launch, kernel_args![p, idx, o, m])
        }
        Layout::Soa => {
            let [x, y, z] = soa_parts(points, n);
            gpu.launch("distance_soa_gather", launch, kernel_args![x, y, z, idx, o, m])
        }
    }
}

/// CPU reference: `|point i|` in f32 with the GPU's rounding (no fused multiply-add).
pub fn distance_cpu(layout: Layout, points: &[f32], n: usize, i: usize) -> f32 {
    let (x, y, z) = match layout {
        Layout::Aos => (points[3 * i], points[3 * i + 1], points[3 * i + 2]),
        Layout::Soa => (points[i], points[n + i], points[2 * n + i]),
    };
    (x * x + y * y + z * z).sqrt()
}

fn check(gpu: &Gpu, rng: &mut Rng, (layout, gathered): (Layout, bool)) -> Result<String> {
    for n in CHECK_SIZES {
        let points = rng.f32s(3 * n);
        let d_points = gpu.upload(&points)?;
        let selected: Vec<usize> = if gathered {
            (0..(n / 7).max(1)).map(|_| rng.below(n as u64) as usize).collect()
        } else {
            (0..n).collect()
        };
        let mut d_out = gpu.poisoned::<f32>(selected.len(), POISON_BITS)?;
        if gathered {
            let idx: Vec<u32> = selected.iter().map(|&i| i as u32).collect();
            gather(gpu, layout, &d_points, &Indices::upload(gpu, &idx)?, &mut d_out, n)?;
        } else {
            all(gpu, layout, &d_points, &mut d_out, n)?;
        }
        gpu.synchronize()?;
        let want: Vec<f32> = selected.iter().map(|&i| distance_cpu(layout, &points, n, i)).collect();
        same_bits(&format!("n={n}"), &d_out.as_host_vec()?, &want)?;
    }
    Ok(format!("n in {CHECK_SIZES:?}{}", if gathered { ", n/7 random indices" } else { "" }))
}

fn bench(gpu: &Gpu, (layout, gathered): (Layout, bool)) -> Result<Workload> {
    let n = BENCH_N;
    let points = random_buffer::<f32>(gpu, 3 * n, Fill::Unit, 12)?;
    if !gathered {
        let mut out = random_buffer::<f32>(gpu, n, Fill::Unit, 13)?;
        return Ok(Workload::new(16 * n as u64, move |gpu| all(gpu, layout, &points, &mut out, n)));
    }
    let mut rng = Rng::new(14);
    let idx: Vec<u32> = (0..BENCH_M).map(|_| rng.below(n as u64) as u32).collect();
    let idx = Indices::upload(gpu, &idx)?;
    let mut out = random_buffer::<f32>(gpu, BENCH_M, Fill::Unit, 15)?;
    // Useful bytes: an index, 12 bytes of point and a result per selected point.
    Ok(Workload::new(20 * BENCH_M as u64, move |gpu| gather(gpu, layout, &points, &idx, &mut out, n)))
}

/// The distance family: all points and a gathered 1-in-64, from each layout.
pub const VARIANTS: &[Variant] = &[
    variant!(
        "distance",
        "aos_all",
        "distance_aos",
        (Layout::Aos, false),
        "every point, AoS: 12-byte stride, lines shared by neighbours"
    ),
    variant!("distance", "soa_all", "distance_soa", (Layout::Soa, false), "every point, SoA: three coalesced streams"),
    variant!(
        "distance",
        "aos_gather",
        "distance_aos_gather",
        (Layout::Aos, true),
        "1 in 64 points by index, AoS: one sector a point"
    ),
    variant!(
        "distance",
        "soa_gather",
        "distance_soa_gather",
        (Layout::Soa, true),
        "1 in 64 points by index, SoA: three sectors a point"
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_rejects_bad_input() {
        assert!(matches!(plan(0, 0, 0, None), Err(Error::Empty(_))));
        assert!(matches!(plan(4, 11, 4, None), Err(Error::LengthMismatch { .. })));
        assert!(matches!(plan(4, 12, 3, None), Err(Error::LengthMismatch { .. })));
        assert!(matches!(plan(4, 12, 2, Some((2, 4))), Err(Error::Unsupported(_))));
        assert!(matches!(plan(4, 12, 0, Some((0, 0))), Err(Error::Empty(_))));
        assert_eq!(plan(4, 12, 2, Some((2, 3))).unwrap(), Launch::linear(1, 256));
    }

    #[test]
    fn reference_reads_both_layouts() {
        let aos = [1.0, 2.0, 2.0, 0.0, 3.0, 4.0];
        let soa = [1.0, 0.0, 2.0, 3.0, 2.0, 4.0];
        for i in 0..2 {
            assert_eq!(distance_cpu(Layout::Aos, &aos, 2, i), distance_cpu(Layout::Soa, &soa, 2, i));
        }
        assert_eq!(distance_cpu(Layout::Aos, &aos, 2, 1), 5.0);
    }
}
