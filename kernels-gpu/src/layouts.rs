//! float3 layouts: array of structures (12-byte elements), AoS staged through shared memory
//! ("3-step"), structure of arrays, and a 16-byte aligned struct. Every variant adds 2.0 to
//! each component of every element (the aligned struct's pad is copied through).

use crate::kernel;
#[cfg(target_arch = "nvptx64")]
use crate::prelude::{shared, thread};
pub use crate::types::{FLOAT3_FLOATS, Float3, Float3A16};

/// Threads per block of every variant. The staged variant depends on it: each block stages the
/// `STAGED_FLOATS` floats of its `BLOCK` elements, so its plan must launch exactly `BLOCK`.
pub const BLOCK: u32 = 256;
/// What each variant adds to every component.
pub const ADD: f32 = 2.0;
/// Floats one block of the staged variant holds in shared memory: its `BLOCK` float3s.
pub const STAGED_FLOATS: u32 = FLOAT3_FLOATS * BLOCK;
/// Dynamic shared memory the staged variant indexes (3 KiB).
pub const STAGED_SHARED_BYTES: u32 = STAGED_FLOATS * 4;

const _: () = assert!(BLOCK.is_multiple_of(crate::WARP_SIZE), "warps must not straddle blocks");
const _: () = assert!(STAGED_SHARED_BYTES <= crate::launch::DEFAULT_SHARED_BYTES, "no opt-in for more shared memory");
// The staged kernel makes exactly three rounds of loads: one per float of a float3.
const _: () = assert!(FLOAT3_FLOATS == 3);

/// Floats of `n` float3s (64-bit: 3n passes 2^32 for n near the 32-bit element limit).
pub const fn floats(n: u32) -> u64 {
    FLOAT3_FLOATS as u64 * n as u64
}

/// Float (of the whole buffer) that thread `t` of block `block` of the staged variant loads and
/// stores at round `k < 3`: consecutive threads take consecutive floats, three rounds of
/// `BLOCK`, so every round is one fully coalesced 4-byte access a thread.
#[inline(always)]
pub const fn staged_index(block: u32, t: u32, k: u32) -> u64 {
    (block as u64 * FLOAT3_FLOATS as u64 + k as u64) * BLOCK as u64 + t as u64
}

/// Shared-memory slot of the float thread `t` moves at round `k` (the same float as
/// [`staged_index`], counted from the block's first float): always `< STAGED_FLOATS`.
#[inline(always)]
pub const fn staged_slot(t: u32, k: u32) -> u32 {
    k * BLOCK + t
}

/// The float3 thread `t` of block `block` of the staged variant updates in shared memory: the
/// block's `t`-th, element `block * BLOCK + t` of the buffer. It fits `u32`: the grid has
/// `ceil(n / BLOCK)` blocks and `n < 2^31`.
#[inline(always)]
pub const fn staged_element(block: u32, t: u32) -> u32 {
    block * BLOCK + t
}

/// Shared-memory slot of component `c` of the float3 thread `t` updates: its floats are
/// consecutive, `3t .. 3t + 3` (a stride of 3 words across the warp, so no bank conflict).
#[inline(always)]
pub const fn staged_component_slot(t: u32, c: u32) -> u32 {
    FLOAT3_FLOATS * t + c
}

kernel! {
    /// AoS: each thread loads and stores one 12-byte `Float3` (three 4-byte loads, three
    /// stores). A warp's x, y and z loads each span 384 bytes at a 12-byte stride: 12 sectors per
    /// instruction, 3 instructions, the same sectors served again from L1.
    pub unsafe fn layouts_aos(input: *const Float3, output: *mut Float3, n: u32) {
        // SAFETY: the plan checked both buffers hold exactly `n` Float3.
        unsafe { device::add_each(input, output, n) }
    }
}

kernel! {
    /// 3-step: changes AoS's loads, not its layout. The block reads its `3 * BLOCK` floats with
    /// three fully coalesced 4-byte loads per thread (4 sectors a warp instruction, every byte
    /// used) into shared memory, each thread updates its float3 there, and three coalesced
    /// stores write them back. Costs two barriers and 3 KiB of shared memory per block; assumes
    /// `BLOCK` threads a block (the plan launches exactly that).
    pub unsafe fn layouts_aos_staged(input: *const Float3, output: *mut Float3, n: u32) {
        // The buffers are read as floats: a `Float3` is three consecutive `f32` with no padding
        // (asserted in `types`), so the float view of `n` Float3 is `floats(n)` floats.
        let (input, output) = (input as *const f32, output as *mut f32);
        let s = shared::dynamic::<f32>();
        let (b, t) = (thread::block_idx_x(), thread::thread_idx_x());
        let floats = floats(n);
        // SAFETY (whole body): global indices are checked against `floats(n)`, the buffers'
        // length in floats (the plan checked they hold `n` Float3); shared slots are below
        // `STAGED_FLOATS` because `t < BLOCK` (the plan launches `BLOCK` threads and
        // `STAGED_SHARED_BYTES`).
        unsafe {
            let mut k = 0;
            while k < FLOAT3_FLOATS {
                let g = staged_index(b, t, k);
                if g < floats {
                    *s.add(staged_slot(t, k) as usize) = *input.add(g as usize);
                }
                k += 1;
            }
            thread::sync_threads();
            if staged_element(b, t) < n {
                let p = s.add(staged_component_slot(t, 0) as usize);
                *p += ADD;
                *p.add(1) += ADD;
                *p.add(2) += ADD;
            }
            thread::sync_threads();
            k = 0;
            while k < FLOAT3_FLOATS {
                let g = staged_index(b, t, k);
                if g < floats {
                    *output.add(g as usize) = *s.add(staged_slot(t, k) as usize);
                }
                k += 1;
            }
        }
    }
}

kernel! {
    /// SoA: changes the layout instead: three arrays, one per component. Each of the warp's six
    /// 4-byte accesses covers 128 contiguous bytes: 4 sectors, nothing wasted, no shared memory.
    pub unsafe fn layouts_soa(
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
            // SAFETY: the plan checked all six arrays hold exactly `n` floats.
            unsafe {
                *ox.add(i) = *x.add(i) + ADD;
                *oy.add(i) = *y.add(i) + ADD;
                *oz.add(i) = *z.add(i) + ADD;
            }
        }
    }
}

kernel! {
    /// 16-byte aligned struct: keeps AoS but pads each element to 16 bytes, so each is one
    /// aligned 16-byte load and store (a warp moves 512 contiguous bytes, 16 full sectors),
    /// paid for with a third more bytes moved.
    pub unsafe fn layouts_aligned16(input: *const Float3A16, output: *mut Float3A16, n: u32) {
        // SAFETY: the plan checked both buffers hold exactly `n` Float3A16 and start on 16-byte
        // boundaries.
        unsafe { device::add_each(input, output, n) }
    }
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;

    /// An element with x, y and z to update.
    pub(super) trait Xyz: Copy {
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
    pub(super) unsafe fn add_each<T: Xyz>(input: *const T, output: *mut T, n: u32) {
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
    }

    #[test]
    fn each_element_is_updated_where_its_block_staged_it() {
        for b in [0u32, 1, 7] {
            for t in 0..BLOCK {
                let e = staged_element(b, t);
                for c in 0..FLOAT3_FLOATS {
                    // The float the element's component is, and who loaded it into which slot.
                    let g = floats(e) + c as u64;
                    let slot = staged_component_slot(t, c);
                    assert!(slot < STAGED_FLOATS);
                    assert_eq!(staged_index(b, slot % BLOCK, slot / BLOCK), g);
                    assert_eq!(staged_slot(slot % BLOCK, slot / BLOCK), slot);
                }
            }
        }
        assert_eq!(floats(u32::MAX), 3 * u32::MAX as u64);
    }
}
