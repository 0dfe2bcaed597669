//! Replays of the float3 layouts in `kernels-gpu/src/layouts.rs`.
//!
//! SASS (sm_90): `layouts_aos` loads a `Float3` as three 4-byte `LDG.E` (x, y, z at +0, +4, +8;
//! the struct is only 4-byte aligned, so nothing is merged) and stores it as three `STG.E`;
//! `layouts_aligned16` moves each element with one `LDG.E.128` and one `STG.E.128`; `layouts_soa`
//! is three 4-byte load/store pairs. `layouts_aos_staged`: three predicated `LDG.E` + `STS`, a
//! barrier, three `LDS` and three `STS` of the thread's float3 (words `3t .. 3t + 3`), a barrier,
//! three `LDS` + `STG.E`.

use super::{Counts, Model, fake_slice, lanes_where, warps};
use crate::buffer::DeviceViewMut;
use crate::error::Result;
use crate::launch::Call;
use crate::lessons::layouts::{
    AlignedSig, AosMethod, AosSig, Float3, Float3A16, Soa3, Soa3Mut, SoaSig, plan_aligned16, plan_aos, plan_soa,
};
use coalesce_kernels::layouts::{
    FLOAT3_FLOATS, floats, layouts_aos, staged_component_slot, staged_element, staged_index, staged_slot,
};

/// Byte offsets of x, y and z inside a `Float3`.
const XYZ: [u64; 3] = [
    std::mem::offset_of!(Float3, x) as u64,
    std::mem::offset_of!(Float3, y) as u64,
    std::mem::offset_of!(Float3, z) as u64,
];

/// Counts of a planned AoS update, plain or staged.
pub fn aos(call: &Call<'_, AosSig>) -> Result<Counts> {
    let launch = call.launch();
    let &(input, ref output, n) = call.args();
    let mut m = Model::new();
    let (src, dst) = (m.buffer(input.address()), m.buffer(output.address()));
    let size = std::mem::size_of::<Float3>() as u64;
    if call.kernel() == layouts_aos {
        for w in warps(&launch) {
            let active = lanes_where(w.lanes, |l| w.index_1d(l) < n);
            for field in XYZ {
                m.load(src, 4, active, |l| size * u64::from(w.index_1d(l)) + field)?;
            }
            for field in XYZ {
                m.store(dst, 4, active, |l| size * u64::from(w.index_1d(l)) + field)?;
            }
        }
        return Ok(m.counts());
    }
    let total = floats(n);
    for w in warps(&launch) {
        let (b, t) = (w.block.0, |l| w.thread(l).0);
        for k in 0..FLOAT3_FLOATS {
            let active = lanes_where(w.lanes, |l| staged_index(b, t(l), k) < total);
            m.load(src, 4, active, |l| 4 * staged_index(b, t(l), k))?;
            m.shared_store(4, active, |l| 4 * staged_slot(t(l), k))?;
        }
        let mine = lanes_where(w.lanes, |l| staged_element(b, t(l)) < n);
        for c in 0..FLOAT3_FLOATS {
            m.shared_load(4, mine, |l| 4 * staged_component_slot(t(l), c))?;
        }
        for c in 0..FLOAT3_FLOATS {
            m.shared_store(4, mine, |l| 4 * staged_component_slot(t(l), c))?;
        }
        for k in 0..FLOAT3_FLOATS {
            let active = lanes_where(w.lanes, |l| staged_index(b, t(l), k) < total);
            m.shared_load(4, active, |l| 4 * staged_slot(t(l), k))?;
            m.store(dst, 4, active, |l| 4 * staged_index(b, t(l), k))?;
        }
    }
    Ok(m.counts())
}

/// Counts of a planned SoA update.
pub fn soa(call: &Call<'_, SoaSig>) -> Result<Counts> {
    let launch = call.launch();
    let &(x, y, z, ref ox, ref oy, ref oz, n) = call.args();
    let mut m = Model::new();
    let ins = [x.address(), y.address(), z.address()].map(|a| m.buffer(a));
    let outs = [ox.address(), oy.address(), oz.address()].map(|a| m.buffer(a));
    for w in warps(&launch) {
        let active = lanes_where(w.lanes, |l| w.index_1d(l) < n);
        for (src, dst) in ins.into_iter().zip(outs) {
            m.load(src, 4, active, |l| 4 * u64::from(w.index_1d(l)))?;
            m.store(dst, 4, active, |l| 4 * u64::from(w.index_1d(l)))?;
        }
    }
    Ok(m.counts())
}

/// Counts of a planned 16-byte aligned update.
pub fn aligned16(call: &Call<'_, AlignedSig>) -> Result<Counts> {
    let launch = call.launch();
    let &(input, ref output, n) = call.args();
    let mut m = Model::new();
    let (src, dst) = (m.buffer(input.address()), m.buffer(output.address()));
    let size = std::mem::size_of::<Float3A16>() as u32;
    for w in warps(&launch) {
        let active = lanes_where(w.lanes, |l| w.index_1d(l) < n);
        let at = |l| u64::from(size) * u64::from(w.index_1d(l));
        m.load(src, size, active, at)?;
        m.store(dst, size, active, at)?;
    }
    Ok(m.counts())
}

/// The AoS update of `n` elements with `method`.
pub fn aos_update(method: AosMethod, n: usize) -> Result<Counts> {
    let (input, mut output): (DeviceViewMut<'static, Float3>, _) = (fake_slice(0, n), fake_slice(1, n));
    aos(&plan_aos(method, &input, &mut output)?)
}

/// The SoA update of `n` elements.
pub fn soa_update(n: usize) -> Result<Counts> {
    let [x, y, z]: [DeviceViewMut<'static, f32>; 3] = [0, 1, 2].map(|i| fake_slice(i, n));
    let [mut ox, mut oy, mut oz]: [DeviceViewMut<'static, f32>; 3] = [3, 4, 5].map(|i| fake_slice(i, n));
    soa(&plan_soa(Soa3::new(&x, &y, &z), Soa3Mut::new(&mut ox, &mut oy, &mut oz))?)
}

/// The aligned update of `n` elements.
pub fn aligned16_update(n: usize) -> Result<Counts> {
    let (input, mut output): (DeviceViewMut<'static, Float3A16>, _) = (fake_slice(0, n), fake_slice(1, n));
    aligned16(&plan_aligned16(&input, &mut output)?)
}
