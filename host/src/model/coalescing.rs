//! Replays of the copies in `kernels-gpu/src/coalescing.rs`.
//!
//! SASS (sm_90): `coalescing_offset`, `_cg` and `_stride` are one `LDG.E` (`.STRONG.GPU` for the
//! L2-only load) and one `STG.E` of 4 bytes under `i < n`; the vec4 copies are `LDG.E.128` /
//! `STG.E.128`, the `UNROLL` loads of a trip before its stores, the partial chunk one predicated
//! pair per step, the tail one 4-byte pair.
//!
//! The Hopper copies (SASS, sm_90):
//! - `coalescing_cp_async`: per trip one `LDGSTS.E.BYPASS.128` under `i < vectors` (global →
//!   shared; Nsight Compute counts its request and sectors with the global loads,
//!   `l1tex__t_{requests,sectors}_pipe_lsu_mem_global_op_ld`, and its shared-memory write under
//!   `..._op_ldgsts`, not with the shared stores: both measured on the H100), then one `LDS.128`
//!   of the thread's own slot and one `STG.E.128`, under the same guard.
//! - `coalescing_bulk`: lane 0 issues `UBLKCP` bulk copies, which the TMA unit carries out: no
//!   load/store-pipe request and no shared wavefront at all (measured: every such counter 0), so
//!   the model counts only their DRAM footprint, the whole input read and the whole output
//!   written.
//!
//! Both copy the `n % 4` tail floats with one 4-byte `LDG.E` / `STG.E` pair by the first lanes
//! of block 0.
//!
//! `coalescing_copy_any`: block 0's head lanes (warp 0) and tail lanes (warp 1) copy their
//! floats with one 4-byte pair each; the body is the vec4 copy's chunk loop, each step one
//! `LDG.E.128` per lane below the readable vectors, lane 31 one more for the next lane's
//! words, then the shuffles and one `STG.E.128` per lane below the body's vectors.

use super::{Counts, Model, fake_slice, lanes_below, lanes_where, warps};
use crate::buffer::DeviceViewMut;
use crate::buffer::{DeviceRead, DeviceWrite};
use crate::coalescing::{
    AsyncCopy, CopySig, Load, OffsetSig, plan_async_copy, plan_copy, plan_copy_any, plan_offset, plan_stride,
};
use crate::error::{Result, sum};
use crate::launch::Call;
use coalesce_kernels::WARP_SIZE;
use coalesce_kernels::coalescing::{
    ANY_CHUNK, ANY_UNROLL, CHUNK, CP_BLOCK, UNROLL, any_index, coalescing_bulk, coalescing_stride, cp_chunk, cp_slot,
    cp_vector, offset_index, offset_len, shifted_scalar, shifted_split, stride_index, stride_len, vec4_index,
    vec4_split, vec4_tail_index,
};

/// Counts of a planned offset, L2-only offset or stride copy.
pub fn offset_or_stride(call: &Call<'_, OffsetSig>) -> Result<Counts> {
    let launch = call.launch();
    let &(input, ref output, n, param) = call.args();
    let mut m = Model::new();
    let (src, dst) = (m.buffer(input.address()), m.buffer(output.address()));
    let stride = call.kernel() == coalescing_stride;
    let element = |i: u32| if stride { stride_index(i, param) } else { u64::from(offset_index(i, param)) };
    for w in warps(&launch) {
        let active = lanes_where(w.lanes, |l| w.index_1d(l) < n);
        let at = |l| 4 * element(w.index_1d(l));
        m.load(src, 4, active, at)?;
        m.store(dst, 4, active, at)?;
    }
    Ok(m.counts())
}

/// Counts of a planned 16-byte copy (plain or streaming: the same addresses).
pub fn copy(call: &Call<'_, CopySig>) -> Result<Counts> {
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
                m.load(src, 16, w.lanes, |l| 16 * vec4_index(chunk, k, t(l)))?;
            }
            for k in 0..UNROLL {
                m.store(dst, 16, w.lanes, |l| 16 * vec4_index(chunk, k, t(l)))?;
            }
            chunk += step;
        }
        if chunk * u64::from(CHUNK) < vectors {
            for k in 0..UNROLL {
                let active = lanes_where(w.lanes, |l| vec4_index(chunk, k, t(l)) < vectors);
                m.load(src, 16, active, |l| 16 * vec4_index(chunk, k, t(l)))?;
                m.store(dst, 16, active, |l| 16 * vec4_index(chunk, k, t(l)))?;
            }
        }
        let active = lanes_where(w.lanes, |l| vec4_tail_index(vectors, b, t(l)).1 < tail);
        let at = |l| {
            let (first, g) = vec4_tail_index(vectors, b, t(l));
            4 * (first + u64::from(g))
        };
        m.load(src, 4, active, at)?;
        m.store(dst, 4, active, at)?;
    }
    Ok(m.counts())
}

/// Counts of a planned any-offset copy.
pub fn copy_any(call: &Call<'_, CopySig>) -> Result<Counts> {
    let launch = call.launch();
    let &(input, ref output, n) = call.args();
    let mut m = Model::new();
    let (src, dst) = (m.buffer(input.address()), m.buffer(output.address()));
    let split = shifted_split(input.address(), output.address(), n);
    let shifted = split.shift > 0;
    let readable = split.vectors + u64::from(shifted);
    let (lo, body) = (4 * (split.head - u64::from(split.shift)), 4 * split.head);
    let step = u64::from(launch.grid.0);
    for w in warps(&launch) {
        let b = w.block.0;
        let t = |l| w.thread(l).0;
        if b == 0 {
            let scalar = |l| shifted_scalar(split, n, t(l));
            let active = lanes_where(w.lanes, |l| scalar(l).is_some());
            let at = |l| 4 * scalar(l).unwrap_or(0);
            m.load(src, 4, active, at)?;
            m.store(dst, 4, active, at)?;
        }
        let mut chunk = u64::from(b);
        while chunk * u64::from(ANY_CHUNK) < split.vectors {
            let q = |k, l| any_index(chunk, k, t(l));
            for k in 0..ANY_UNROLL {
                m.load(src, 16, lanes_where(w.lanes, |l| q(k, l) < readable), |l| lo + 16 * q(k, l))?;
                if shifted {
                    let last = lanes_where(w.lanes, |l| l == WARP_SIZE - 1 && q(k, l) + 1 < readable);
                    m.load(src, 16, last, |l| lo + 16 * (q(k, l) + 1))?;
                }
            }
            for k in 0..ANY_UNROLL {
                m.store(dst, 16, lanes_where(w.lanes, |l| q(k, l) < split.vectors), |l| body + 16 * q(k, l))?;
            }
            chunk += step;
        }
    }
    Ok(m.counts())
}

/// The any-offset copy of `n` floats from element `src` of one buffer of `n + 3` to element
/// `dst` of another, as the library plans it.
pub fn any_offset_copy(n: usize, src: usize, dst: usize) -> Result<Counts> {
    let len = sum("copy buffer", n, 3)?;
    let (input, mut output): (DeviceViewMut<'static, f32>, DeviceViewMut<'static, f32>) =
        (fake_slice(0, len), fake_slice(1, len));
    let input = input.slice(src..sum("copy source end", src, n)?)?;
    let mut output = output.slice_mut(dst..sum("copy destination end", dst, n)?)?;
    copy_any(&plan_copy_any(&input, &mut output)?)
}

/// The offset copy of `n` elements at `offset` over buffers of `offset_len(n, buffer_offset)`
/// floats, as the library plans it.
pub fn offset_copy(load: Load, n: usize, offset: u32, buffer_offset: u32) -> Result<Counts> {
    let len = offset_len(n as u64, buffer_offset) as usize;
    let (input, mut output): (DeviceViewMut<'static, f32>, _) = (fake_slice(0, len), fake_slice(1, len));
    offset_or_stride(&plan_offset(load, &input, &mut output, n, offset)?)
}

/// The stride copy of `n` elements at `stride`.
pub fn stride_copy(n: usize, stride: u32) -> Result<Counts> {
    let len = stride_len(n as u64, stride) as usize;
    let (input, mut output): (DeviceViewMut<'static, f32>, _) = (fake_slice(0, len), fake_slice(1, len));
    offset_or_stride(&plan_stride(&input, &mut output, n, stride)?)
}

/// The 16-byte copy of `n` floats with `blocks_per_sm` on `sms` SMs (0: one trip per thread).
pub fn vec4_copy(n: usize, sms: u32, blocks_per_sm: u32, streaming: bool) -> Result<Counts> {
    let (input, mut output): (DeviceViewMut<'static, f32>, _) = (fake_slice(0, n), fake_slice(1, n));
    copy(&plan_copy(&input, &mut output, sms, blocks_per_sm, streaming)?)
}

/// Counts of a planned hardware copy (`cp.async` or TMA bulk; see the module docs).
pub fn async_copy(call: &Call<'_, CopySig>) -> Result<Counts> {
    let launch = call.launch();
    let &(input, ref output, n) = call.args();
    let mut m = Model::new();
    let (src, dst) = (m.buffer(input.address()), m.buffer(output.address()));
    let (vectors, tail) = vec4_split(n);
    if call.kernel() == coalescing_bulk {
        // Every chunk below `bulk_chunks(vectors)` is copied once, whole: the first
        // 16 * vectors bytes both ways.
        m.footprint_read(src, 0, 16 * vectors)?;
        m.footprint_write(dst, 0, 16 * vectors)?;
    } else {
        let grid = launch.grid.0;
        for w in warps(&launch) {
            let b = w.block.0;
            let t = |l| w.thread(l).0;
            let mut j = 0u64;
            // The kernel's trip loop: every lane runs it while its block's chunk starts below
            // `vectors`; the LDGSTS of trip j is issued CP_STAGES trips earlier, with the same
            // guard, so every trip that stores also copied (and none past the end does).
            while cp_chunk(b, j, grid) * u64::from(CP_BLOCK) < vectors {
                let at = |l| cp_vector(cp_chunk(b, j, grid), t(l));
                let active = lanes_where(w.lanes, |l| at(l) < vectors);
                m.load(src, 16, active, |l| 16 * at(l))?;
                m.shared_load(16, active, |l| cp_slot(j, t(l)))?;
                m.store(dst, 16, active, |l| 16 * at(l))?;
                j += 1;
            }
        }
    }
    // The tail: lanes t < tail of block 0's first warp (tail < 4).
    let active = lanes_below(tail);
    let at = |l: u32| 4 * (4 * vectors + u64::from(l));
    m.load(src, 4, active, at)?;
    m.store(dst, 4, active, at)?;
    Ok(m.counts())
}

/// The hardware copy `kind` of `n` floats with `blocks_per_sm` on `sms` SMs (0: one ring's
/// worth of chunks per block).
pub fn hardware_copy(kind: AsyncCopy, n: usize, sms: u32, blocks_per_sm: u32) -> Result<Counts> {
    let (input, mut output): (DeviceViewMut<'static, f32>, _) = (fake_slice(0, n), fake_slice(1, n));
    async_copy(&plan_async_copy(kind, &input, &mut output, sms, blocks_per_sm)?)
}
