//! Euclidean distance to the origin of 3-D points stored as AoS (x, y, z interleaved) or SoA
//! (three arrays): for all points, and for a few selected ones (a gather through indices).

/// Threads per block.
pub const BLOCK: u32 = 256;

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;
    use crate::prelude::thread;

    /// `sqrt(x² + y² + z²)`: `mul.rn`/`add.rn` (Rust never contracts to FMA) and `sqrt.rn`,
    /// so the CPU's f32 arithmetic gives the same bits.
    #[inline(always)]
    fn norm3(x: f32, y: f32, z: f32) -> f32 {
        // SAFETY: an IEEE square root has no preconditions.
        unsafe { core::intrinsics::sqrtf32(x * x + y * y + z * z) }
    }

    /// All points, AoS: each thread reads 12 bytes at a 12-byte stride (three 4-byte loads per
    /// thread, 12 sectors per warp instruction, served from the same lines).
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn distance_aos(points: *const f32, out: *mut f32, n: u32) {
        let i = thread::index_1d() as usize;
        if i < n as usize {
            // SAFETY: the launcher checked `points` holds 3n floats and `out` n.
            unsafe {
                let p = points.add(3 * i);
                *out.add(i) = norm3(*p, *p.add(1), *p.add(2));
            }
        }
    }

    /// All points, SoA: three fully coalesced 4-byte loads per thread (4 sectors each).
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn distance_soa(x: *const f32, y: *const f32, z: *const f32, out: *mut f32, n: u32) {
        let i = thread::index_1d() as usize;
        if i < n as usize {
            // SAFETY: the launcher checked all four arrays hold n floats.
            unsafe { *out.add(i) = norm3(*x.add(i), *y.add(i), *z.add(i)) };
        }
    }

    /// Selected points, AoS: point `idx[j]`'s 12 bytes sit together, one or two sectors a point.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn distance_aos_gather(points: *const f32, idx: *const u32, out: *mut f32, m: u32) {
        let j = thread::index_1d() as usize;
        if j < m as usize {
            // SAFETY: the launcher checked every index < n, `points` holds 3n floats, idx and
            // out hold m.
            unsafe {
                let p = points.add(3 * *idx.add(j) as usize);
                *out.add(j) = norm3(*p, *p.add(1), *p.add(2));
            }
        }
    }

    /// Selected points, SoA: x, y and z of one point live in three arrays, three sectors a point.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn distance_soa_gather(
        x: *const f32,
        y: *const f32,
        z: *const f32,
        idx: *const u32,
        out: *mut f32,
        m: u32,
    ) {
        let j = thread::index_1d() as usize;
        if j < m as usize {
            // SAFETY: the launcher checked every index < n, the arrays hold n, idx and out m.
            unsafe {
                let i = *idx.add(j) as usize;
                *out.add(j) = norm3(*x.add(i), *y.add(i), *z.add(i));
            }
        }
    }
}
