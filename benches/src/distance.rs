//! Distance lessons (all points and a gathered few, from AoS and SoA points): the registry
//! entries, checks and workloads for `coalesce::distance`.
use coalesce::distance::{self as lib, Float3, Indices, Points, Soa3};
use coalesce::model::Counts;
use coalesce::util::Fill;
use coalesce::{DeviceBuffer, DeviceRead, Error, Gpu, Result};
use coalesce_kernels::distance::{distance_aos, distance_aos_gather, distance_soa, distance_soa_gather};

use crate::check::{CheckError, CheckResult, POISON_BITS, Rng, same_bits};
use crate::family::{Family, Row};
use crate::layouts::split;
use crate::workload::{Workload, random_buffer};

/// Point counts checked.
pub const CHECK_SIZES: [usize; 4] = [1, 31, 1_000_003, 1 << 24];
/// Points of the benchmarks (768 MiB of coordinates).
pub const BENCH_N: usize = 1 << 26;
/// Points gathered in the gather benchmarks (1 in 64).
pub const BENCH_M: usize = 1 << 20;

/// A distance variant: how the points are laid out, and whether all of them are measured or a
/// few gathered by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Distance {
    /// The points as x, y and z arrays (SoA) rather than an array of float3 (AoS).
    pub soa: bool,
    /// [`BENCH_M`] points selected by index rather than every point.
    pub gather: bool,
}

impl Family for Distance {
    const NAME: &'static str = "distance";
    const ROWS: &'static [Row<Self>] = VARIANTS;

    fn check(self, gpu: &Gpu, rng: &mut Rng, _: u32) -> CheckResult<String> {
        let Distance { soa, gather } = self;
        for n in CHECK_SIZES {
            let points: Vec<Float3> = rng.f32s(3 * n).chunks_exact(3).map(|c| Float3::new(c[0], c[1], c[2])).collect();
            let d_points = DevicePoints::upload(gpu, &points, soa)?;
            let selected: Vec<usize> = if gather {
                (0..(n / 7).max(1)).map(|_| rng.below(n as u64) as usize).collect()
            } else {
                (0..n).collect()
            };
            let mut d_out = gpu.poisoned::<f32>(selected.len(), POISON_BITS)?;
            if gather {
                let idx: Vec<u32> = selected.iter().map(|&i| i as u32).collect();
                lib::gather(gpu, d_points.points(), &Indices::upload(gpu, &idx)?, &mut d_out)?;
                refuses_index_past_the_points(gpu, d_points.points(), n)?;
            } else {
                lib::all(gpu, d_points.points(), &mut d_out)?;
            }
            gpu.synchronize()?;
            let want: Vec<f32> = selected.iter().map(|&i| lib::distance_cpu(points[i])).collect();
            same_bits(&format!("n={n}"), &d_out.to_vec()?, &want)?;
        }
        let refusal = if gather { ", n/7 random indices; index n refused" } else { "" };
        Ok(format!("n in {CHECK_SIZES:?}{refusal}"))
    }

    fn bench(self, gpu: &Gpu, _: u32) -> Result<Workload> {
        let n = BENCH_N;
        let points = if self.soa {
            let array = |seed| random_buffer(gpu, n, Fill::Unit, seed);
            DevicePoints::Soa([array(12)?, array(16)?, array(17)?])
        } else {
            DevicePoints::Aos(random_buffer(gpu, n, Fill::Unit, 12)?)
        };
        if !self.gather {
            let mut out = random_buffer::<f32>(gpu, n, Fill::Unit, 13)?;
            return Ok(Workload::new(16 * n as u64, move |gpu| lib::all(gpu, points.points(), &mut out)));
        }
        let idx = Indices::upload(gpu, &bench_indices())?;
        let mut out = random_buffer::<f32>(gpu, BENCH_M, Fill::Unit, 15)?;
        // Useful bytes: an index, 12 bytes of point and a result per selected point.
        Ok(Workload::new(20 * BENCH_M as u64, move |gpu| lib::gather(gpu, points.points(), &idx, &mut out)))
    }

    fn model(self, _: u32, _sms: u32) -> Result<Option<Counts>> {
        use coalesce::model::distance as model;
        let counts = if self.gather {
            model::gather(self.soa, BENCH_N, &bench_indices())
        } else {
            model::all(self.soa, BENCH_N)
        };
        counts.map(Some)
    }
}

/// The distance variants, one row each, in teaching order.
#[rustfmt::skip]
const VARIANTS: &[Row<Distance>] = &[
    Row::new(Distance { soa: false, gather: false }, "aos_all", "every point, AoS: 12-byte stride, lines shared by neighbours").launches(distance_aos),
    Row::new(Distance { soa: true, gather: false }, "soa_all", "every point, SoA: three coalesced streams").launches(distance_soa),
    Row::new(Distance { soa: false, gather: true }, "aos_gather", "1 in 64 points by index, AoS: one sector a point").launches(distance_aos_gather),
    Row::new(Distance { soa: true, gather: true }, "soa_gather", "1 in 64 points by index, SoA: three sectors a point").launches(distance_soa_gather),
];

/// The `BENCH_M` point indices the gather benchmarks select (fixed seed, so the model replays the
/// very indices the benchmark uploads).
pub fn bench_indices() -> Vec<u32> {
    let mut rng = Rng::new(14);
    (0..BENCH_M).map(|_| rng.below(BENCH_N as u64) as u32).collect()
}

/// Points on the device in one layout, owned.
enum DevicePoints {
    Aos(DeviceBuffer<Float3>),
    Soa([DeviceBuffer<f32>; 3]),
}

impl DevicePoints {
    /// `points` uploaded as AoS, or as SoA when `soa`.
    fn upload(gpu: &Gpu, points: &[Float3], soa: bool) -> Result<Self> {
        if !soa {
            return Ok(DevicePoints::Aos(gpu.upload(points)?));
        }
        let [x, y, z] = split(points);
        Ok(DevicePoints::Soa([gpu.upload(&x)?, gpu.upload(&y)?, gpu.upload(&z)?]))
    }

    /// The points as the library takes them.
    fn points(&self) -> Points<'_> {
        match self {
            DevicePoints::Aos(p) => Points::Aos(p.view()),
            DevicePoints::Soa([x, y, z]) => Points::Soa(Soa3::new(x, y, z)),
        }
    }
}

/// A gather that names point `n` of `n` must be refused before launch.
fn refuses_index_past_the_points(gpu: &Gpu, points: Points<'_>, n: usize) -> CheckResult<()> {
    let idx = Indices::upload(gpu, &[0, n as u32])?;
    let mut out = gpu.poisoned::<f32>(idx.len(), POISON_BITS)?;
    match lib::gather(gpu, points, &idx, &mut out) {
        Err(Error::OutOfRange { what: "point index", .. }) => Ok(()),
        other => Err(CheckError::Unexpected {
            what: format!("gather of index {n} from {n} points"),
            expected: "OutOfRange on the point index".to_string(),
            got: format!("{other:?}"),
        }),
    }
}
