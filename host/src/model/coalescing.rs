//! Replays of the copies in `kernels-gpu/src/coalescing.rs`.
//!
//! SASS (sm_90): `coalescing_offset`, `_cg` and `_stride` are one `LDG.E` (`.STRONG.GPU` for the
//! L2-only load) and one `STG.E` of 4 bytes under `i < n`; the vec4 copies are `LDG.E.128` /
//! `STG.E.128`, the `UNROLL` loads of a trip before its stores, the partial chunk one predicated
//! pair per step, the tail one 4-byte pair.
use cust::memory::DeviceSlice;

use super::{Counts, Model, fake_slice, lanes_where, warps};
use crate::coalescing::{
    CHUNK, CopySig, Load, OffsetSig, UNROLL, coalescing_stride, offset_index, offset_len, plan_copy, plan_offset,
    plan_stride, stride_index, stride_len, vec4_index, vec4_split, vec4_tail_index,
};
use crate::error::Result;
use crate::launch::Call;

/// Counts of a planned offset, L2-only offset or stride copy.
pub fn offset_or_stride(call: &Call<'_, OffsetSig>) -> Counts {
    let launch = call.launch();
    let &(input, ref output, n, param) = call.args();
    let mut m = Model::new();
    let (src, dst) = (m.buffer(input.address()), m.buffer(output.address()));
    let stride = call.kernel() == coalescing_stride;
    let element = |i: u32| if stride { stride_index(i, param) } else { u64::from(offset_index(i, param)) };
    for w in warps(&launch) {
        let active = lanes_where(w.lanes, |l| w.index_1d(l) < n);
        let at = |l| 4 * element(w.index_1d(l));
        m.load(src, 4, active, at);
        m.store(dst, 4, active, at);
    }
    m.counts()
}

/// Counts of a planned 16-byte copy (plain or streaming: the same addresses).
pub fn copy(call: &Call<'_, CopySig>) -> Counts {
    let launch = call.launch();
    let &(input, ref output, n) = call.args();
    let mut m = Model::new();
    let (src, dst) = (m.buffer(input.address()), m.buffer(output.address()));
    let (vectors, tail) = vec4_split(n);
    let step = u64::from(launch.grid.0);
    for w in warps(&launch) {
        let b = w.block.0;
        let t = |l| w.thread(l).0;
        let mut chunk = u64::from(b);
        // The chunk loop's trip count depends on the block only: every lane runs it.
        while (chunk + 1) * u64::from(CHUNK) <= vectors {
            for k in 0..UNROLL {
                m.load(src, 16, w.lanes, |l| 16 * vec4_index(chunk, k, t(l)));
            }
            for k in 0..UNROLL {
                m.store(dst, 16, w.lanes, |l| 16 * vec4_index(chunk, k, t(l)));
            }
            chunk += step;
        }
        if chunk * u64::from(CHUNK) < vectors {
            for k in 0..UNROLL {
                let active = lanes_where(w.lanes, |l| vec4_index(chunk, k, t(l)) < vectors);
                m.load(src, 16, active, |l| 16 * vec4_index(chunk, k, t(l)));
                m.store(dst, 16, active, |l| 16 * vec4_index(chunk, k, t(l)));
            }
        }
        let active = lanes_where(w.lanes, |l| vec4_tail_index(vectors, b, t(l)).1 < tail);
        let at = |l| {
            let (first, g) = vec4_tail_index(vectors, b, t(l));
            4 * (first + u64::from(g))
        };
        m.load(src, 4, active, at);
        m.store(dst, 4, active, at);
    }
    m.counts()
}

/// The offset copy of `n` elements at `offset` over buffers of `offset_len(n, buffer_offset)`
/// floats, as the library plans it.
pub fn offset_copy(load: Load, n: usize, offset: u32, buffer_offset: u32) -> Result<Counts> {
    let len = offset_len(n as u64, buffer_offset) as usize;
    let (input, mut output): (DeviceSlice<f32>, _) = (fake_slice(0, len), fake_slice(1, len));
    Ok(offset_or_stride(&plan_offset(load, &input, &mut output, n, offset)?))
}

/// The stride copy of `n` elements at `stride`.
pub fn stride_copy(n: usize, stride: u32) -> Result<Counts> {
    let len = stride_len(n as u64, stride) as usize;
    let (input, mut output): (DeviceSlice<f32>, _) = (fake_slice(0, len), fake_slice(1, len));
    Ok(offset_or_stride(&plan_stride(&input, &mut output, n, stride)?))
}

/// The 16-byte copy of `n` floats with `blocks_per_sm` on `sms` SMs (0: one trip per thread).
pub fn vec4_copy(n: usize, sms: u32, blocks_per_sm: u32, streaming: bool) -> Result<Counts> {
    let (input, mut output): (DeviceSlice<f32>, _) = (fake_slice(0, n), fake_slice(1, n));
    Ok(copy(&plan_copy(&input, &mut output, sms, blocks_per_sm, streaming)?))
}
