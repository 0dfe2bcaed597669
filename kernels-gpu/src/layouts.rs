//! float3 layouts: array of structures (12-byte elements), AoS staged through shared memory
//! ("3-step"), structure of arrays, and a 16-byte aligned struct. Every variant adds 2.0 to
//! each component of every element.

/// Threads per block of the AoS, SoA and aligned variants, and the staging block of the
/// 3-step variant (it stages 3 × 256 floats).
pub const BLOCK: u32 = 256;
/// What each variant adds to every component.
pub const ADD: f32 = 2.0;

/// A 12-byte float3, as CUDA's `float3` (4-byte aligned).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Float3 {
    pub x: f32,
    pub y: f32,
    pub z: f32,
}

/// A float3 padded and aligned to 16 bytes, as `struct __align__(16) { float x, y, z; }`.
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Float3A16 {
    pub x: f32,
    pub y: f32,
    pub z: f32,
    pub pad: f32,
}

/// Index (in floats) of the `k`th of the three coalesced loads thread `t` of block `b` makes
/// in the 3-step variant: consecutive threads read consecutive floats, three rounds of 256.
#[inline(always)]
pub const fn staged_index(block: u32, t: u32, k: u32) -> u64 {
    (block as u64 * 3 + k as u64) * BLOCK as u64 + t as u64
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;
    use crate::prelude::{shared, thread};

    /// An element with x, y and z to update.
    trait Xyz: Copy {
        fn add_to_xyz(&mut self, v: f32);
    }

    impl Xyz for Float3 {
        #[inline(always)]
        fn add_to_xyz(&mut self, v: f32) {
            self.x += v;
            self.y += v;
            self.z += v;
        }
    }

    impl Xyz for Float3A16 {
        #[inline(always)]
        fn add_to_xyz(&mut self, v: f32) {
            self.x += v;
            self.y += v;
            self.z += v;
        }
    }

    /// One element per thread, loaded and stored whole: the load width is the element's.
    ///
    /// # Safety
    /// Both buffers hold `n` elements, aligned for `T`.
    #[inline(always)]
    unsafe fn add_each<T: Xyz>(input: *const T, output: *mut T, n: u32) {
        let i = thread::index_1d() as usize;
        if i < n as usize {
            // SAFETY: i < n.
            unsafe {
                let mut a = *input.add(i);
                a.add_to_xyz(ADD);
                *output.add(i) = a;
            }
        }
    }

    /// AoS: each thread loads and stores one 12-byte `Float3`. A warp's x, y and z loads each
    /// span 384 bytes with a 12-byte stride (12 sectors per instruction, 3 instructions, the
    /// same sectors re-read from L1).
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn layouts_aos(input: *const Float3, output: *mut Float3, n: u32) {
        // SAFETY: the launcher checked both buffers hold `n` Float3 (3n floats).
        unsafe { add_each(input, output, n) }
    }

    /// 3-step: the block loads its 768 floats with three fully coalesced 4-byte loads per thread
    /// into shared memory, each thread updates its float3 there, and three coalesced stores
    /// write them back. Costs two barriers and 3 KiB of shared memory per block.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn layouts_aos_staged(input: *const f32, output: *mut f32, n: u32) {
        let s = shared::dynamic::<f32>();
        let (b, t) = (thread::block_idx_x(), thread::thread_idx_x());
        let floats = 3 * n as u64;
        // SAFETY (whole body): global indices are checked against 3n, the buffers' length
        // (checked by the launcher); shared indices are < 3 * BLOCK, the bytes launched.
        unsafe {
            let mut k = 0;
            while k < 3 {
                let g = staged_index(b, t, k);
                if g < floats {
                    *s.add((k * BLOCK + t) as usize) = *input.add(g as usize);
                }
                k += 1;
            }
            thread::sync_threads();
            if thread::index_1d() < n {
                let p = s.add(3 * t as usize);
                *p += ADD;
                *p.add(1) += ADD;
                *p.add(2) += ADD;
            }
            thread::sync_threads();
            k = 0;
            while k < 3 {
                let g = staged_index(b, t, k);
                if g < floats {
                    *output.add(g as usize) = *s.add((k * BLOCK + t) as usize);
                }
                k += 1;
            }
        }
    }

    /// SoA: three arrays, one per component. Each of the warp's six accesses covers 128
    /// contiguous bytes: 4 sectors, nothing wasted.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn layouts_soa(
        x: *const f32,
        y: *const f32,
        z: *const f32,
        ox: *mut f32,
        oy: *mut f32,
        oz: *mut f32,
        n: u32,
    ) {
        let i = thread::index_1d() as usize;
        if i < n as usize {
            // SAFETY: the launcher checked all six arrays hold `n` floats.
            unsafe {
                *ox.add(i) = *x.add(i) + ADD;
                *oy.add(i) = *y.add(i) + ADD;
                *oz.add(i) = *z.add(i) + ADD;
            }
        }
    }

    /// 16-byte aligned struct: the padding lets each element be one aligned 16-byte access
    /// (512 contiguous bytes a warp), paid for with a third more bytes moved.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn layouts_aligned16(input: *const Float3A16, output: *mut Float3A16, n: u32) {
        // SAFETY: the launcher checked both buffers hold `n` Float3A16 (4n floats) and start
        // on 16-byte boundaries.
        unsafe { add_each(input, output, n) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staged_rounds_cover_the_block_contiguously() {
        let mut seen: Vec<u64> = (0..3).flat_map(|k| (0..BLOCK).map(move |t| staged_index(1, t, k))).collect();
        seen.sort();
        let want: Vec<u64> = (768..1536).collect();
        assert_eq!(seen, want);
        assert_eq!(core::mem::size_of::<Float3>(), 12);
        assert_eq!(core::mem::size_of::<Float3A16>(), 16);
    }
}
