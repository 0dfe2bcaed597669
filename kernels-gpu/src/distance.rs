//! Euclidean distance to the origin of 3-D points stored as AoS (`Float3`, x, y, z together) or
//! SoA (three arrays): for all points, and for a few selected ones (a gather through indices).

use crate::kernel;
#[cfg(target_arch = "nvptx64")]
use crate::prelude::thread;
pub use crate::types::Float3;

/// Threads per block (the kernels work with any block size; this is the one the plans launch).
pub const BLOCK: u32 = 256;

const _: () = assert!(BLOCK.is_multiple_of(crate::WARP_SIZE), "warps must not straddle blocks");

kernel! {
    /// All points, AoS: each thread reads its point's 12 bytes (three 4-byte loads at a 12-byte
    /// stride across the warp: 12 sectors per warp instruction, the later two served from the
    /// same lines) and writes one coalesced float.
    pub unsafe fn distance_aos(points: *const Float3, out: *mut f32, n: u32) {
        let i = thread::index_1d() as usize;
        if i < n as usize {
            // SAFETY: the plan checked `points` and `out` both hold exactly `n` elements.
            unsafe {
                let p = *points.add(i);
                *out.add(i) = device::norm3(p.x, p.y, p.z);
            }
        }
    }
}

kernel! {
    /// All points, SoA: changes the layout, so x, y and z are three fully coalesced 4-byte loads
    /// per thread (4 sectors each, every byte used).
    pub unsafe fn distance_soa(x: *const f32, y: *const f32, z: *const f32, out: *mut f32, n: u32) {
        let i = thread::index_1d() as usize;
        if i < n as usize {
            // SAFETY: the plan checked all four arrays hold exactly `n` floats.
            unsafe { *out.add(i) = device::norm3(*x.add(i), *y.add(i), *z.add(i)) };
        }
    }
}

kernel! {
    /// Selected points, AoS: changes the work, not the layout: `m` points chosen by index
    /// instead of all of them. Thread `j` reads index `idx[j]` (coalesced) and then point
    /// `idx[j]`'s 12 bytes, which sit together: one sector a point (two when they straddle a
    /// sector boundary). Unlike the full pass, no neighbour shares those sectors.
    pub unsafe fn distance_aos_gather(points: *const Float3, idx: *const u32, out: *mut f32, m: u32) {
        let j = thread::index_1d() as usize;
        if j < m as usize {
            // SAFETY: the plan checked `idx` and `out` hold exactly `m` elements and every index
            // is below the number of points `points` holds (`Indices` keeps the largest).
            unsafe {
                let p = *points.add(*idx.add(j) as usize);
                *out.add(j) = device::norm3(p.x, p.y, p.z);
            }
        }
    }
}

kernel! {
    /// Selected points, SoA: the gather on the SoA layout. x, y and z of one point live in three
    /// arrays, so each selected point costs three sectors (after the coalesced index load) of
    /// which 4 bytes each are used.
    pub unsafe fn distance_soa_gather(
        x: *const f32,
        y: *const f32,
        z: *const f32,
        idx: *const u32,
        out: *mut f32,
        m: u32,
    ) {
        let j = thread::index_1d() as usize;
        if j < m as usize {
            // SAFETY: the plan checked `idx` and `out` hold exactly `m` elements, the arrays the
            // same number of points, and every index is below it.
            unsafe {
                let i = *idx.add(j) as usize;
                *out.add(j) = device::norm3(*x.add(i), *y.add(i), *z.add(i));
            }
        }
    }
}

#[cfg(target_arch = "nvptx64")]
mod device {
    /// `sqrt(x² + y² + z²)`: `mul.rn`/`add.rn` (Rust never contracts to FMA) and `sqrt.rn`,
    /// so the CPU's f32 arithmetic gives the same bits.
    #[inline(always)]
    pub(super) fn norm3(x: f32, y: f32, z: f32) -> f32 {
        // SAFETY: an IEEE square root has no preconditions.
        unsafe { core::intrinsics::sqrtf32(x * x + y * y + z * z) }
    }
}
