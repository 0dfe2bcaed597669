//! Distances to the origin from AoS and SoA points, for all points and for a gathered few:
//! plans, launchers and CPU reference for `kernels-gpu/src/distance.rs`.
//!
//! AoS points are a slice of [`Float3`]; SoA points are three `f32` slices ([`Soa3`]). Point
//! indices for gathers are uploaded once as [`Indices`], which remembers their largest value.

use crate::buffer::{DeviceBuffer, DeviceRead, DeviceView, DeviceWrite};
use crate::error::{Error, Result, elements32, exactly, in_range};
use crate::gpu::Gpu;
use crate::launch::{Call, In, Launch, Out};
pub use crate::lessons::layouts::Soa3;
pub use coalesce_kernels::distance::Float3;
use coalesce_kernels::distance::*;

/// Parameter list of `distance_aos`: points, out, n.
pub(crate) type AosSig = fn(*const Float3, *mut f32, u32);
/// Parameter list of `distance_soa`: x, y, z, out, n.
pub(crate) type SoaSig = fn(*const f32, *const f32, *const f32, *mut f32, u32);
/// Parameter list of `distance_aos_gather`: points, idx, out, m.
pub(crate) type AosGatherSig = fn(*const Float3, *const u32, *mut f32, u32);
/// Parameter list of `distance_soa_gather`: x, y, z, idx, out, m.
pub(crate) type SoaGatherSig = fn(*const f32, *const f32, *const f32, *const u32, *mut f32, u32);

/// Points in either layout.
#[derive(Debug, Clone, Copy)]
pub enum Points<'a> {
    /// x, y, z together, one `Float3` a point.
    Aos(DeviceView<'a, Float3>),
    /// All x, all y, all z, in three arrays of equal length.
    Soa(Soa3<'a>),
}

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

    /// The indices as the plans take them.
    pub fn view(&self) -> IndexSlice<'_> {
        IndexSlice { slice: self.buffer.view(), max: self.max }
    }
}

/// A borrowed list of point indices and a bound on them: what a gather plan takes.
#[derive(Debug, Clone, Copy)]
pub struct IndexSlice<'a> {
    slice: DeviceView<'a, u32>,
    max: u32,
}

impl<'a> IndexSlice<'a> {
    /// Indices whose largest value is taken on trust (for tests of plans on slice descriptors;
    /// [`Indices::view`] is the safe way).
    ///
    /// # Safety
    /// Every element of `slice` is at most `max`. (Nothing can write it while it is borrowed.)
    pub unsafe fn assume_max(slice: &'a impl DeviceRead<u32>, max: u32) -> Self {
        IndexSlice { slice: slice.view(), max }
    }

    /// Number of indices.
    pub fn len(&self) -> usize {
        self.slice.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.slice.is_empty()
    }

    /// The bound on every index.
    pub fn max(&self) -> u32 {
        self.max
    }
}

/// One thread per distance, `BLOCK` threads a block.
fn launch_for(work: u32) -> Launch {
    Launch::linear(work.div_ceil(BLOCK), BLOCK)
}

/// The number of SoA points: the arrays' common length.
fn soa_points(points: &Soa3<'_>) -> Result<u32> {
    elements32("points", points.common_len(["SoA points y", "SoA points z"])?)
}

/// Validates a gather of `indices` from `n` points into `out` and returns the index count.
fn gathered(n: u32, indices: &IndexSlice<'_>, out_len: usize) -> Result<u32> {
    let m = elements32("indices", indices.len())?;
    in_range("point index", indices.max.into(), 0, u64::from(n) - 1)?;
    exactly("distance output", out_len, indices.len())?;
    Ok(m)
}

/// Validates `out[i] = |points[i]|` for every AoS point and returns its launch.
///
/// Errors: `Empty` / `OutOfRange` ("points") for no points or more than `MAX_ELEMENTS_32`,
/// `LengthMismatch` ("distance output") unless `out` has one element a point.
pub fn plan_aos<'a>(
    points: &'a impl DeviceRead<Float3>,
    out: &'a mut impl DeviceWrite<f32>,
) -> Result<Call<'a, AosSig>> {
    let n = elements32("points", points.len())?;
    exactly("distance output", out.len(), points.len())?;
    // SAFETY: the kernel reads point `i` and writes `out[i]` only for `i < n`; both hold
    // exactly `n` elements (checked above).
    Ok(unsafe { Call::new(distance_aos, launch_for(n), (In::of(points), Out::of(out), n)) })
}

/// Validates `out[i] = |point i|` for every SoA point and returns its launch.
///
/// Errors: as [`plan_aos`], and `LengthMismatch` ("SoA points y" / "z") when the three arrays
/// differ in length.
pub fn plan_soa<'a>(points: Soa3<'a>, out: &'a mut impl DeviceWrite<f32>) -> Result<Call<'a, SoaSig>> {
    let n = soa_points(&points)?;
    exactly("distance output", out.len(), points.x.len())?;
    let (x, y, z) = (In::from_view(points.x), In::from_view(points.y), In::from_view(points.z));
    // SAFETY: the kernel touches index `i` of each array only for `i < n`; all four hold
    // exactly `n` floats (checked above).
    Ok(unsafe { Call::new(distance_soa, launch_for(n), (x, y, z, Out::of(out), n)) })
}

/// Validates `out[j] = |points[indices[j]]|` (AoS) and returns its launch.
///
/// Errors: as [`plan_aos`] for the points; `Empty` / `OutOfRange` ("indices") for no indices or
/// more than `MAX_ELEMENTS_32`; `OutOfRange` ("point index") when the largest index is not below
/// the number of points; `LengthMismatch` ("distance output") unless `out` has one element an
/// index.
pub fn plan_aos_gather<'a>(
    points: &'a impl DeviceRead<Float3>,
    indices: IndexSlice<'a>,
    out: &'a mut impl DeviceWrite<f32>,
) -> Result<Call<'a, AosGatherSig>> {
    let n = elements32("points", points.len())?;
    let m = gathered(n, &indices, out.len())?;
    // SAFETY: the kernel reads `idx[j]` and writes `out[j]` only for `j < m`, and both hold
    // exactly `m` elements; it reads point `idx[j] <= indices.max < n` (every index is at most
    // `max`: `IndexSlice`'s invariant), and `points` holds `n` (checked above).
    Ok(unsafe {
        Call::new(distance_aos_gather, launch_for(m), (In::of(points), In::from_view(indices.slice), Out::of(out), m))
    })
}

/// Validates `out[j] = |point indices[j]|` (SoA) and returns its launch.
///
/// Errors: as [`plan_soa`] for the points and [`plan_aos_gather`] for the indices and output.
pub fn plan_soa_gather<'a>(
    points: Soa3<'a>,
    indices: IndexSlice<'a>,
    out: &'a mut impl DeviceWrite<f32>,
) -> Result<Call<'a, SoaGatherSig>> {
    let n = soa_points(&points)?;
    let m = gathered(n, &indices, out.len())?;
    let (x, y, z) = (In::from_view(points.x), In::from_view(points.y), In::from_view(points.z));
    // SAFETY: as `plan_aos_gather`: `j < m`, the length of `idx` and `out`; every index is at
    // most `indices.max < n`, and the three arrays hold `n` floats each (checked above).
    Ok(unsafe {
        Call::new(distance_soa_gather, launch_for(m), (x, y, z, In::from_view(indices.slice), Out::of(out), m))
    })
}

/// `out[i] = |point i|` for all points.
pub fn all(gpu: &Gpu, points: Points<'_>, out: &mut impl DeviceWrite<f32>) -> Result<()> {
    match points {
        Points::Aos(p) => gpu.launch(plan_aos(&p, out)?),
        Points::Soa(p) => gpu.launch(plan_soa(p, out)?),
    }
}

/// `out[j] = |point indices[j]|`.
pub fn gather(gpu: &Gpu, points: Points<'_>, indices: &Indices, out: &mut impl DeviceWrite<f32>) -> Result<()> {
    match points {
        Points::Aos(p) => gpu.launch(plan_aos_gather(&p, indices.view(), out)?),
        Points::Soa(p) => gpu.launch(plan_soa_gather(p, indices.view(), out)?),
    }
}

/// CPU reference: `|p|` in f32 with the GPU's rounding (no fused multiply-add).
pub fn distance_cpu(p: Float3) -> f32 {
    (p.x * p.x + p.y * p.y + p.z * p.z).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::DeviceViewMut;

    /// A descriptor of `len` elements at a made-up address.
    fn at<T: cust::memory::DeviceCopy>(address: u64, len: usize) -> DeviceViewMut<'static, T> {
        // SAFETY: descriptors only; no planned call is launched.
        unsafe { DeviceViewMut::stand_in(address, len) }
    }

    #[test]
    fn all_plans_reject_bad_input() {
        let plan = |n, o| plan_aos(&at(0x1000, n), &mut at(0x9000, o)).map(|c| (c.launch(), c.args().2));
        assert!(matches!(plan(0, 0), Err(Error::Empty("points"))));
        assert!(matches!(plan(4, 3), Err(Error::LengthMismatch { what: "distance output", .. })));
        assert!(matches!(plan(1 << 31, 1 << 31), Err(Error::OutOfRange { .. })));
        assert_eq!(plan(257, 257).unwrap(), (Launch::linear(2, 256), 257));
        let (x, y, z) = (at(0x1000, 4), at(0x2000, 4), at(0x3000, 5));
        assert!(matches!(plan_soa(Soa3::new(&x, &y, &z), &mut at(0x9000, 4)), Err(Error::LengthMismatch { .. })));
        let z = at(0x3000, 4);
        assert!(matches!(plan_soa(Soa3::new(&x, &y, &z), &mut at(0x9000, 5)), Err(Error::LengthMismatch { .. })));
        assert_eq!(plan_soa(Soa3::new(&x, &y, &z), &mut at(0x9000, 4)).unwrap().args().4, 4);
    }

    #[test]
    fn gather_plans_reject_indices_past_the_points() {
        let idx = at::<u32>(0x5000, 2);
        let plan = |n, max, o| {
            // SAFETY: a descriptor whose contents no one reads.
            let indices = unsafe { IndexSlice::assume_max(&idx, max) };
            plan_aos_gather(&at(0x1000, n), indices, &mut at(0x9000, o)).map(|c| (c.launch(), c.args().3))
        };
        assert!(matches!(plan(4, 4, 2), Err(Error::OutOfRange { what: "point index", value: 4, max: 3, .. })));
        assert!(matches!(plan(0, 0, 2), Err(Error::Empty("points"))));
        assert!(matches!(plan(4, 3, 3), Err(Error::LengthMismatch { .. })));
        assert_eq!(plan(4, 3, 2).unwrap(), (Launch::linear(1, 256), 2));
        let empty = at::<u32>(0x5000, 0);
        // SAFETY: as above.
        let none = unsafe { IndexSlice::assume_max(&empty, 0) };
        let (x, y, z) = (at(0x1000, 4), at(0x2000, 4), at(0x3000, 4));
        assert!(matches!(
            plan_soa_gather(Soa3::new(&x, &y, &z), none, &mut at(0x9000, 0)),
            Err(Error::Empty("indices"))
        ));
    }

    #[test]
    fn reference_is_the_euclidean_norm() {
        assert_eq!(distance_cpu(Float3::new(3.0, 4.0, 0.0)), 5.0);
        assert_eq!(distance_cpu(Float3::new(1.0, 2.0, 2.0)), 3.0);
    }
}
