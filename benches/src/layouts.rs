//! float3 layout lessons: the registry entries, checks and workloads for `coalesce::layouts`.
use coalesce::layouts::{self as lib, AosMethod, Float3, Float3A16, Soa3, Soa3Mut};
use coalesce::model::Counts;
use coalesce::util::Fill;
use coalesce::{DeviceBuffer, Gpu, Result};
use coalesce_kernels::layouts::{layouts_aligned16, layouts_soa};
use cust::memory::DeviceCopy;

use crate::check::{CheckResult, POISON_BITS, Rng, same_bits};
use crate::family::{Family, Row};
use crate::workload::{Workload, random_buffer};

/// Elements every layout is checked at: one, a warp less one, a block plus one (the staged
/// kernel's partial block), a prime, and 2^25.
pub const CHECK_SIZES: [usize; 5] = [1, 31, 257, 1_000_003, 1 << 25];
/// Elements of the benchmarks: 384 MiB of float3 each way.
pub const BENCH_N: usize = 1 << 25;

/// The layout variants: the library's two AoS kernels, SoA, and the 16-byte aligned struct.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layouts {
    /// Array of 12-byte structures, loaded as the method says.
    Aos(AosMethod),
    /// Structure of arrays.
    Soa,
    /// Array of 16-byte aligned structures.
    Aligned16,
}

impl Family for Layouts {
    const NAME: &'static str = "layouts";
    const ROWS: &'static [Row<Self>] = VARIANTS;

    fn check(self, gpu: &Gpu, rng: &mut Rng, _: u32) -> CheckResult<String> {
        for n in CHECK_SIZES {
            let what = format!("n={n}");
            let points: Vec<Float3> = rng.f32s(3 * n).chunks_exact(3).map(|c| Float3::new(c[0], c[1], c[2])).collect();
            match self {
                Layouts::Aos(method) => {
                    check_elements(gpu, &what, &points, lib::add_cpu, |i, o| lib::aos(gpu, method, i, o))?;
                }
                Layouts::Soa => check_soa(gpu, &what, &points)?,
                Layouts::Aligned16 => {
                    // The pad gets random bits of its own: the kernel must copy it through.
                    let padded: Vec<Float3A16> =
                        points.iter().map(|p| Float3A16::new(p.x, p.y, p.z, rng.f32())).collect();
                    check_elements(gpu, &what, &padded, lib::add_cpu_aligned, |i, o| lib::aligned16(gpu, i, o))?;
                }
            }
        }
        Ok(format!("n in {CHECK_SIZES:?}"))
    }

    fn bench(self, gpu: &Gpu, _: u32) -> Result<Workload> {
        let n = BENCH_N;
        // Useful bytes: 12 read + 12 written per element, whatever the padding costs.
        let bytes = 24 * n as u64;
        Ok(match self {
            Layouts::Aos(method) => {
                let (input, mut output) = random_elements::<Float3>(gpu, n)?;
                Workload::new(bytes, move |gpu| lib::aos(gpu, method, &input, &mut output))
            }
            Layouts::Soa => {
                let [x, y, z] = random_arrays(gpu, n, 1)?;
                let [mut ox, mut oy, mut oz] = random_arrays(gpu, n, 4)?;
                Workload::new(bytes, move |gpu| {
                    lib::soa(gpu, Soa3::new(&x, &y, &z), Soa3Mut::new(&mut ox, &mut oy, &mut oz))
                })
            }
            Layouts::Aligned16 => {
                let (input, mut output) = random_elements::<Float3A16>(gpu, n)?;
                Workload::new(bytes, move |gpu| lib::aligned16(gpu, &input, &mut output))
            }
        })
    }

    fn model(self, _: u32, _sms: u32) -> Result<Option<Counts>> {
        use coalesce::model::layouts as model;
        match self {
            Layouts::Aos(method) => model::aos_update(method, BENCH_N),
            Layouts::Soa => model::soa_update(BENCH_N),
            Layouts::Aligned16 => model::aligned16_update(BENCH_N),
        }
        .map(Some)
    }
}

/// The layout variants, one row each, in teaching order.
#[rustfmt::skip]
const VARIANTS: &[Row<Layouts>] = &[
    aos(AosMethod::Element, "float3 AoS: three 4-byte loads per thread at a 12-byte stride"),
    aos(AosMethod::Staged, "AoS staged through shared memory: 3 coalesced loads, float3 work in shared"),
    Row::new(Layouts::Soa, "soa", "SoA: x, y, z arrays, every access 128 contiguous bytes a warp").launches(layouts_soa),
    Row::new(Layouts::Aligned16, "aligned16", "16-byte aligned struct: one 16-byte load per element, 33% padding moved").launches(layouts_aligned16),
];

/// A library AoS method's row: it launches the method's kernel, and is named after it.
const fn aos(method: AosMethod, summary: &'static str) -> Row<Layouts> {
    Row::by_kernel(Layouts::Aos(method), summary, method.kernel())
}

/// Uploads `input`, runs `launch` into a poisoned output of the same length, and compares the
/// result bit for bit (every 4-byte word, pads included) with `reference` of each element.
fn check_elements<T: DeviceCopy + bytemuck::Pod + Default>(
    gpu: &Gpu,
    what: &str,
    input: &[T],
    reference: impl Fn(T) -> T,
    launch: impl FnOnce(&DeviceBuffer<T>, &mut DeviceBuffer<T>) -> Result<()>,
) -> CheckResult<()> {
    let d_input = gpu.upload(input)?;
    let mut d_output = gpu.poisoned::<T>(input.len(), POISON_BITS)?;
    launch(&d_input, &mut d_output)?;
    gpu.synchronize()?;
    let want: Vec<T> = input.iter().map(|&p| reference(p)).collect();
    same_bits(what, bytemuck::cast_slice(&d_output.to_vec()?), bytemuck::cast_slice(&want))
}

/// x, y and z of `points` as three arrays (the SoA form of AoS data).
pub(crate) fn split(points: &[Float3]) -> [Vec<f32>; 3] {
    [points.iter().map(|p| p.x).collect(), points.iter().map(|p| p.y).collect(), points.iter().map(|p| p.z).collect()]
}

/// The SoA check: the points' x, y and z uploaded as three arrays, three poisoned outputs, each
/// compared bit for bit with its component of the reference.
fn check_soa(gpu: &Gpu, what: &str, points: &[Float3]) -> CheckResult<()> {
    let n = points.len();
    let [x, y, z] = split(points);
    let (x, y, z) = (gpu.upload(&x)?, gpu.upload(&y)?, gpu.upload(&z)?);
    let (mut ox, mut oy, mut oz) =
        (gpu.poisoned(n, POISON_BITS)?, gpu.poisoned(n, POISON_BITS)?, gpu.poisoned(n, POISON_BITS)?);
    lib::soa(gpu, Soa3::new(&x, &y, &z), Soa3Mut::new(&mut ox, &mut oy, &mut oz))?;
    gpu.synchronize()?;
    let want = split(&points.iter().map(|&p| lib::add_cpu(p)).collect::<Vec<_>>());
    for ((name, out), want) in [("x", &ox), ("y", &oy), ("z", &oz)].into_iter().zip(&want) {
        same_bits(&format!("{what} {name}"), &out.to_vec()?, want)?;
    }
    Ok(())
}

/// A random input and a random (never all-zero) output of `n` elements each.
fn random_elements<T: DeviceCopy + bytemuck::Pod>(gpu: &Gpu, n: usize) -> Result<(DeviceBuffer<T>, DeviceBuffer<T>)> {
    Ok((random_buffer(gpu, n, Fill::Unit, 1)?, random_buffer(gpu, n, Fill::Unit, 2)?))
}

/// Three random arrays of `n` floats (seeds `seed`, `seed + 1`, `seed + 2`).
fn random_arrays(gpu: &Gpu, n: usize, seed: u32) -> Result<[DeviceBuffer<f32>; 3]> {
    let array = |k| random_buffer(gpu, n, Fill::Unit, seed + k);
    Ok([array(0)?, array(1)?, array(2)?])
}
