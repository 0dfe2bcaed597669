//! Replays of the distance kernels in `kernels-gpu/src/distance.rs`.
//!
//! SASS (sm_90): a `Float3` point is three 4-byte `LDG.E` (x, y, z at +0, +4, +8), an SoA point
//! one `LDG.E` per array; the gathers first load the index with one `LDG.E`; one `STG.E` of the
//! distance. The square root's slow path branches but touches no memory.
//!
//! A gather's addresses are the index values, which its `Call` does not carry (only the device
//! address of the index buffer): the replay takes the host copy of those indices.

use super::{Counts, Model, fake_slice, lanes_where, warps};
use crate::buffer::DeviceViewMut;
use crate::error::{Error, Result, exactly};
use crate::launch::Call;
use crate::lessons::distance::{
    AosGatherSig, AosSig, Float3, IndexSlice, SoaGatherSig, SoaSig, plan_aos, plan_aos_gather, plan_soa,
    plan_soa_gather,
};
use crate::lessons::layouts::Soa3;

/// Byte offsets of x, y and z inside a `Float3`.
const XYZ: [u64; 3] = [
    std::mem::offset_of!(Float3, x) as u64,
    std::mem::offset_of!(Float3, y) as u64,
    std::mem::offset_of!(Float3, z) as u64,
];
const POINT: u64 = std::mem::size_of::<Float3>() as u64;

/// Counts of a planned AoS pass over all points.
pub fn aos(call: &Call<'_, AosSig>) -> Result<Counts> {
    let launch = call.launch();
    let &(points, ref out, n) = call.args();
    let mut m = Model::new();
    let (p, o) = (m.buffer(points.address()), m.buffer(out.address()));
    for w in warps(&launch) {
        let active = lanes_where(w.lanes, |l| w.index_1d(l) < n);
        for field in XYZ {
            m.load(p, 4, active, |l| POINT * u64::from(w.index_1d(l)) + field)?;
        }
        m.store(o, 4, active, |l| 4 * u64::from(w.index_1d(l)))?;
    }
    Ok(m.counts())
}

/// Counts of a planned SoA pass over all points.
pub fn soa(call: &Call<'_, SoaSig>) -> Result<Counts> {
    let launch = call.launch();
    let &(x, y, z, ref out, n) = call.args();
    let mut m = Model::new();
    let arrays = [x.address(), y.address(), z.address()].map(|a| m.buffer(a));
    let o = m.buffer(out.address());
    for w in warps(&launch) {
        let active = lanes_where(w.lanes, |l| w.index_1d(l) < n);
        for array in arrays {
            m.load(array, 4, active, |l| 4 * u64::from(w.index_1d(l)))?;
        }
        m.store(o, 4, active, |l| 4 * u64::from(w.index_1d(l)))?;
    }
    Ok(m.counts())
}

/// Counts of a planned AoS gather whose index buffer holds `indices` ([`Error::LengthMismatch`]
/// unless it holds the launch's count).
pub fn aos_gather(call: &Call<'_, AosGatherSig>, indices: &[u32]) -> Result<Counts> {
    let launch = call.launch();
    let &(points, idx, ref out, count) = call.args();
    exactly("gather indices", indices.len(), count as usize)?;
    let mut m = Model::new();
    let (p, ix, o) = (m.buffer(points.address()), m.buffer(idx.address()), m.buffer(out.address()));
    for w in warps(&launch) {
        let active = lanes_where(w.lanes, |l| w.index_1d(l) < count);
        let j = |l| w.index_1d(l);
        m.load(ix, 4, active, |l| 4 * u64::from(j(l)))?;
        for field in XYZ {
            m.load(p, 4, active, |l| POINT * u64::from(indices[j(l) as usize]) + field)?;
        }
        m.store(o, 4, active, |l| 4 * u64::from(j(l)))?;
    }
    Ok(m.counts())
}

/// Counts of a planned SoA gather whose index buffer holds `indices` (as [`aos_gather`]).
pub fn soa_gather(call: &Call<'_, SoaGatherSig>, indices: &[u32]) -> Result<Counts> {
    let launch = call.launch();
    let &(x, y, z, idx, ref out, count) = call.args();
    exactly("gather indices", indices.len(), count as usize)?;
    let mut m = Model::new();
    let arrays = [x.address(), y.address(), z.address()].map(|a| m.buffer(a));
    let (ix, o) = (m.buffer(idx.address()), m.buffer(out.address()));
    for w in warps(&launch) {
        let active = lanes_where(w.lanes, |l| w.index_1d(l) < count);
        let j = |l| w.index_1d(l);
        m.load(ix, 4, active, |l| 4 * u64::from(j(l)))?;
        for array in arrays {
            m.load(array, 4, active, |l| 4 * u64::from(indices[j(l) as usize]))?;
        }
        m.store(o, 4, active, |l| 4 * u64::from(j(l)))?;
    }
    Ok(m.counts())
}

/// All `n` points, AoS or SoA.
pub fn all(soa_layout: bool, n: usize) -> Result<Counts> {
    let mut out: DeviceViewMut<'static, f32> = fake_slice(3, n);
    if soa_layout {
        let [x, y, z]: [DeviceViewMut<'static, f32>; 3] = [0, 1, 2].map(|i| fake_slice(i, n));
        return soa(&plan_soa(Soa3::new(&x, &y, &z), &mut out)?);
    }
    let points: DeviceViewMut<'static, Float3> = fake_slice(0, n);
    aos(&plan_aos(&points, &mut out)?)
}

/// The gather of `indices` from `n` points, AoS or SoA.
pub fn gather(soa_layout: bool, n: usize, indices: &[u32]) -> Result<Counts> {
    let max = *indices.iter().max().ok_or(Error::Empty("indices"))?;
    let idx: DeviceViewMut<'static, u32> = fake_slice(4, indices.len());
    // SAFETY: `max` is the largest of `indices`, the values the replay reads in place of the
    // buffer's (nothing is launched over the fake buffer).
    let view = unsafe { IndexSlice::assume_max(&idx, max) };
    let mut out: DeviceViewMut<'static, f32> = fake_slice(3, indices.len());
    if soa_layout {
        let [x, y, z]: [DeviceViewMut<'static, f32>; 3] = [0, 1, 2].map(|i| fake_slice(i, n));
        return soa_gather(&plan_soa_gather(Soa3::new(&x, &y, &z), view, &mut out)?, indices);
    }
    let points: DeviceViewMut<'static, Float3> = fake_slice(0, n);
    aos_gather(&plan_aos_gather(&points, view, &mut out)?, indices)
}
