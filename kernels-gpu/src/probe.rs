//! Microbenchmarks of the device itself, not lessons: the kernels whose times give the time
//! model its parameters (DRAM and L2 bandwidth, the shared-memory wavefront rate, atomic
//! throughput by how many addresses share the atomics, memory latency, the cost of a launch).
//! Each does one kind of work and as little else as it can, so its time divided by its count is
//! the rate of that one thing. The host side is `host/src/timing/probe.rs`.

use crate::kernel;
#[cfg(target_arch = "nvptx64")]
use crate::prelude::{atomic, math, mem, shared, thread};

/// Threads per block of every probe but the latency chase (one thread).
pub const BLOCK: u32 = 256;
/// Words of shared memory the shared-memory probes index into (power of two).
pub const SHARED_WORDS: u32 = 1024;
/// Shared bytes of the shared-memory probes.
pub const SHARED_BYTES: u32 = SHARED_WORDS * 4;
/// What the read probe's running XOR is compared with before it writes anything: a value random
/// data almost never folds to, so the loads cannot be dropped and nothing is stored.
pub const UNLIKELY: u32 = 0x9e37_79b9;

const _: () = assert!(SHARED_WORDS.is_power_of_two() && BLOCK <= SHARED_WORDS);

/// The shared word lane `lane` reads at step `k` of the shared probe: `stride` words between
/// lanes, 32 words between steps (so step `k` and `k + 1` hit the same banks).
#[inline(always)]
pub const fn shared_word(lane: u32, k: u32, stride: u32) -> u32 {
    (lane.wrapping_mul(stride).wrapping_add(k.wrapping_mul(32))) & (SHARED_WORDS - 1)
}

/// The counter thread `t` adds to at step `k` of the atomic probes: `(t + k) & mask`, so a warp
/// covers `min(32, mask + 1)` addresses and the grid `mask + 1` (a power of two).
#[inline(always)]
pub const fn atomic_slot(t: u32, k: u32, mask: u32) -> u32 {
    t.wrapping_add(k) & mask
}

kernel! {
    /// Reads `items` 16-byte vectors `passes` times over (grid-striding, one vector a thread a
    /// step) with `ld.global.cg` (L2, not L1), folding them into a XOR that is stored only if it
    /// equals [`UNLIKELY`]: DRAM read bandwidth over a buffer larger than the L2, L2 read
    /// bandwidth over one that fits. Each step's address also adds `acc & zero` (`zero` is 0,
    /// which the compiler cannot know), so a thread has one load in flight at a time and the
    /// grid's size sets the bytes in flight: 512 a warp.
    pub unsafe fn probe_read(input: *const u32, items: u64, passes: u32, zero: u32, sink: *mut u32) {
        // SAFETY: forwarded plan guarantees (see `device::read`).
        unsafe { device::sink_if_unlikely(device::read::<true, 1>(input, items, passes, zero), sink) }
    }
}

kernel! {
    /// `probe_read` with four vectors in flight a thread: 2048 bytes a warp, for the bytes in
    /// flight past what 64 warps of single loads reach.
    pub unsafe fn probe_read_x4(input: *const u32, items: u64, passes: u32, zero: u32, sink: *mut u32) {
        // SAFETY: forwarded plan guarantees (see `device::read`).
        unsafe { device::sink_if_unlikely(device::read::<true, 4>(input, items, passes, zero), sink) }
    }
}

kernel! {
    /// `probe_read` with 4-byte loads: `items` words, 128 bytes a warp request, the request size
    /// of most lessons.
    pub unsafe fn probe_read_words(input: *const u32, items: u64, passes: u32, zero: u32, sink: *mut u32) {
        // SAFETY: forwarded plan guarantees (see `device::read`).
        unsafe { device::sink_if_unlikely(device::read::<false, 1>(input, items, passes, zero), sink) }
    }
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;

    /// The read probes' loop: `MLP` loads a thread issued before any is used, 16 bytes each
    /// (`WIDE`) or 4, over `items` of them, `passes` times; returns the XOR of everything read.
    ///
    /// # Safety
    /// `input` holds `items` items of the width (16-byte aligned when `WIDE`).
    #[inline(always)]
    pub(super) unsafe fn read<const WIDE: bool, const MLP: usize>(
        input: *const u32,
        items: u64,
        passes: u32,
        zero: u32,
    ) -> u32 {
        let first = thread::index_1d() as u64;
        let step = thread::grid_size_1d() as u64;
        let mut acc = 0u32;
        let mut p = 0;
        while p < passes {
            let mut i = first;
            while i < items {
                let mut v = [0u32; MLP];
                let mut j = 0;
                while j < MLP {
                    let k = i + j as u64 * step;
                    if k < items {
                        // SAFETY: k < items, the items the caller says `input` holds.
                        v[j] = unsafe {
                            if WIDE {
                                let x = mem::load_v4_f32_cg((input as *const [f32; 4]).add(k as usize));
                                x[0].to_bits() ^ x[1].to_bits() ^ x[2].to_bits() ^ x[3].to_bits()
                            } else {
                                mem::load_cg_f32((input as *const f32).add(k as usize)).to_bits()
                            }
                        };
                    }
                    j += 1;
                }
                for x in v {
                    acc ^= x;
                }
                i += MLP as u64 * step + (acc & zero) as u64;
            }
            p += 1;
        }
        acc
    }

    /// Adds 1 to `sink[0]` if `acc` is [`UNLIKELY`] (an atomic: threads that meet here agree).
    ///
    /// # Safety
    /// `sink` holds one counter.
    #[inline(always)]
    pub(super) unsafe fn sink_if_unlikely(acc: u32, sink: *mut u32) {
        if acc == UNLIKELY {
            // SAFETY: forwarded from the caller.
            unsafe { atomic::red_add_u32(sink, 1) };
        }
    }
}

kernel! {
    /// Writes `vectors` 16-byte vectors (grid-striding, one a thread a step): DRAM write
    /// bandwidth.
    pub unsafe fn probe_write(output: *mut u32, vectors: u64) {
        let output = output as *mut [f32; 4];
        let first = thread::index_1d() as u64;
        let step = thread::grid_size_1d() as u64;
        let mut i = first;
        while i < vectors {
            let w = i as u32;
            // SAFETY: i < vectors, the vectors the plan checked `output` holds.
            unsafe { mem::store_v4_f32(output.add(i as usize), [f32::from_bits(w); 4]) };
            i += step;
        }
    }
}

kernel! {
    /// `steps` 4-byte shared loads per thread at [`shared_word`]`(lane, k, stride)`, summed and
    /// stored only if the sum is [`UNLIKELY`]: stride 1 is one wavefront a load, stride 32 puts
    /// all 32 lanes in one bank (32 wavefronts). Time over wavefronts is the wavefront rate.
    pub unsafe fn probe_shared(steps: u32, stride: u32, sink: *mut u32) {
        let words = shared::dynamic::<u32>();
        let t = thread::thread_idx_x();
        let lane = t % crate::WARP_SIZE;
        // SAFETY (whole body): the launch has SHARED_BYTES of shared memory and BLOCK <=
        // SHARED_WORDS threads, so every word index below SHARED_WORDS is the block's own.
        unsafe {
            let mut w = t;
            while w < SHARED_WORDS {
                *words.add(w as usize) = w.wrapping_mul(0x9e37_79b9);
                w += thread::block_dim_x();
            }
            thread::sync_threads();
            let mut acc = 0u32;
            let mut k = 0;
            while k < steps {
                acc = acc.wrapping_add(core::ptr::read_volatile(words.add(shared_word(lane, k, stride) as usize)));
                k += 1;
            }
            if acc == UNLIKELY {
                atomic::red_add_u32(sink, 1);
            }
        }
    }
}

kernel! {
    /// `steps` global atomic adds per thread on `counters[(t + k) & mask]`: with `mask == 0`
    /// every atomic of the grid queues on one address; with a large mask they spread over the
    /// L2. Ops over time is atomic throughput at `mask + 1` addresses.
    pub unsafe fn probe_atomic(counters: *mut u32, mask: u32, steps: u32) {
        let t = thread::index_1d();
        let mut k = 0;
        while k < steps {
            // SAFETY: atomic_slot(..) <= mask < the counters the plan checked `counters` holds.
            unsafe { atomic::red_add_u32(counters.add(atomic_slot(t, k, mask) as usize), 1) };
            k += 1;
        }
    }
}

kernel! {
    /// `steps` shared atomic adds per thread on word `(t + k) & mask` of the block's shared
    /// memory, then one global add of word `t`: shared atomic throughput at `mask + 1`
    /// addresses per block.
    pub unsafe fn probe_atomic_shared(mask: u32, steps: u32, sink: *mut u32) {
        let words = shared::dynamic::<u32>();
        let t = thread::thread_idx_x();
        // SAFETY (whole body): SHARED_BYTES of shared memory, t < BLOCK <= SHARED_WORDS, and
        // the plan checked mask < SHARED_WORDS; `sink` holds one counter.
        unsafe {
            *words.add(t as usize) = 0;
            thread::sync_threads();
            let base = shared::address(words);
            let mut k = 0;
            while k < steps {
                shared::red_add_u32(base + 4 * atomic_slot(t, k, mask), 1);
                k += 1;
            }
            thread::sync_threads();
            if *words.add(t as usize) == UNLIKELY {
                atomic::red_add_u32(sink, 1);
            }
        }
    }
}

kernel! {
    /// One thread follows `next` for `steps` hops (`i = next[i & mask]`) from where the last
    /// launch left off (`*end`) and stores where it ended: every load waits for the one before,
    /// so time over steps is the latency of the memory the chain lives in (DRAM over a chain far
    /// larger than the L2, whose next hops were evicted long ago; L2 over one that fits). The
    /// mask keeps any contents in bounds; the host fills `next` with one long cycle.
    pub unsafe fn probe_chase(next: *const u32, mask: u32, steps: u32, end: *mut u32) {
        // SAFETY: `end` holds one word (plan).
        let mut i = unsafe { *end };
        let mut k = 0;
        while k < steps {
            // SAFETY: i & mask <= mask < the words the plan checked `next` holds.
            i = unsafe { core::ptr::read_volatile(next.add((i & mask) as usize)) };
            k += 1;
        }
        // SAFETY: `end` holds one word (plan).
        unsafe { *end = i };
    }
}

/// Independent FMA chains per thread of the FMA probe (enough to hide the FMA's latency).
pub const FMA_CHAINS: u32 = 8;

kernel! {
    /// `steps` rounds of [`FMA_CHAINS`] independent `fma(a, x, y)` per thread (`x`, `y` given at
    /// launch, so nothing folds), the sum stored only if it is [`UNLIKELY`]'s bits: FP32
    /// throughput, the ceiling of kernels limited by issuing arithmetic, not by memory.
    pub unsafe fn probe_fma(steps: u32, x: f32, y: f32, sink: *mut u32) {
        let mut a = [0.0f32; FMA_CHAINS as usize];
        let mut c = 0;
        while c < FMA_CHAINS {
            a[c as usize] = (thread::index_1d() + c) as f32;
            c += 1;
        }
        let mut k = 0;
        while k < steps {
            let mut c = 0;
            while c < FMA_CHAINS {
                a[c as usize] = math::fma(a[c as usize], x, y);
                c += 1;
            }
            k += 1;
        }
        let mut sum = 0.0f32;
        for v in a {
            sum += v;
        }
        if sum.to_bits() == UNLIKELY {
            // SAFETY: `sink` holds one counter (plan).
            unsafe { atomic::red_add_u32(sink, 1) };
        }
    }
}

kernel! {
    /// Does nothing: back-to-back launches of it time what every launch costs before its first
    /// instruction and after its last.
    pub unsafe fn probe_empty() {}
}
