//! A 256-bin histogram of `u32` values (`bin = value % 256`): many threads adding into few
//! addresses, so the cost is contention, not bandwidth. The progression: every element an atomic
//! on global memory; a private histogram per block in shared memory, flushed with one global
//! atomic per bin and block; and (Hopper module) the blocks of a thread-block cluster combining
//! their shared histograms through distributed shared memory before one flush per cluster.
//!
//! All three take `(input, bins, n)` with 64-bit `n` and launch the same grid: one block per
//! `BLOCK_ELEMENTS` elements (each thread loads `VECTORS_PER_THREAD` 16-byte vectors, a warp 512
//! contiguous bytes per load), rounded up to whole clusters. `bins` must hold zeros before the
//! launch (the host's launcher clears it).

use crate::kernel;
use crate::launch::DEFAULT_SHARED_BYTES;
#[cfg(target_arch = "nvptx64")]
use crate::prelude::{atomic, mem, shared, thread};

/// Bins of the histogram.
pub const BINS: u32 = 256;
/// Threads per block (one shared bin each when flushing).
pub const BLOCK: u32 = 256;
/// 16-byte vectors each thread loads (all loads issued before any atomic).
pub const VECTORS_PER_THREAD: u32 = 4;
/// Elements one block counts.
pub const BLOCK_ELEMENTS: u32 = BLOCK * VECTORS_PER_THREAD * 4;
/// Blocks per cluster of the cluster kernel (the portable maximum).
pub const CLUSTER: u32 = 8;
/// Bins each block of a cluster combines across the cluster and flushes.
pub const BINS_PER_RANK: u32 = BINS / CLUSTER;
/// Shared memory of the shared and cluster kernels: one `u32` per bin.
pub const SHARED_BYTES: u32 = BINS * 4;

const _: () = assert!(BLOCK == BINS, "thread t clears and flushes bin t");
const _: () = assert!(BINS.is_multiple_of(CLUSTER) && BINS_PER_RANK <= BLOCK);
const _: () = assert!(CLUSTER <= crate::launch::MAX_CLUSTER_BLOCKS);
const _: () = assert!(SHARED_BYTES <= DEFAULT_SHARED_BYTES);
const _: () = assert!(BLOCK.is_multiple_of(crate::WARP_SIZE));

/// The bin of value `v`.
#[inline(always)]
pub const fn bin(v: u32) -> u32 {
    v % BINS
}

/// Blocks of every histogram launch over `n` elements: one per `BLOCK_ELEMENTS`, at least one,
/// rounded up to a multiple of `CLUSTER` (the extra blocks find no vectors and add nothing).
pub const fn blocks(n: u64) -> u64 {
    let vectors = n / 4;
    let per_block = (BLOCK * VECTORS_PER_THREAD) as u64;
    let needed = vectors.div_ceil(per_block);
    let needed = if needed == 0 { 1 } else { needed };
    needed.div_ceil(CLUSTER as u64) * CLUSTER as u64
}

/// The vector thread `t` of block `b` loads at step `k`: a warp's 32 lanes take 32 consecutive
/// vectors.
#[inline(always)]
pub const fn vector_index(b: u32, k: u32, t: u32) -> u64 {
    b as u64 * (BLOCK * VECTORS_PER_THREAD) as u64 + (k * BLOCK + t) as u64
}

/// `(vectors, tail)` of `n` values: the whole 16-byte vectors the blocks load, and the `n % 4`
/// values after them that block 0 loads one per thread.
#[inline(always)]
pub const fn split(n: u64) -> (u64, u32) {
    (n / 4, (n % 4) as u32)
}

/// The value thread `t < tail` of block 0 loads after the `vectors` whole vectors.
#[inline(always)]
pub const fn tail_index(vectors: u64, t: u32) -> u64 {
    vectors * 4 + t as u64
}

/// The bin thread `t < BINS_PER_RANK` of cluster rank `rank` combines across the cluster and
/// flushes.
#[inline(always)]
pub const fn cluster_bin(rank: u32, t: u32) -> u32 {
    rank * BINS_PER_RANK + t
}

kernel! {
    /// Global atomics: each element is one `red.global.add` on its bin. Every SM sends its
    /// atomics to the L2 slice that owns the bin's 32-byte sector, where atomics on one address
    /// are applied one at a time: on skewed data most of the grid queues on one address.
    pub unsafe fn histogram_global(input: *const u32, bins: *mut u32, n: u64) {
        // SAFETY: `bins` holds BINS counters (plan); bin(v) < BINS.
        unsafe { device::each_value(input, n, |v| atomic::red_add_u32(bins.add(bin(v) as usize), 1)) }
    }
}

kernel! {
    /// Shared histogram: each block counts into its own 256 bins in shared memory
    /// (`red.shared.add`, contention only among the block's 256 threads) and then adds each
    /// non-zero bin to global memory once: `BINS` global atomics per block instead of one per
    /// element.
    pub unsafe fn histogram_shared(input: *const u32, bins: *mut u32, n: u64) {
        // SAFETY: forwarded plan guarantees (see `count_in_shared`).
        unsafe {
            let counts = device::count_in_shared(input, n);
            let t = thread::thread_idx_x();
            let c = *counts.add(t as usize);
            if c != 0 {
                atomic::red_add_u32(bins.add(t as usize), c);
            }
        }
    }
}

crate::hopper_kernel! {
    /// Cluster histogram: counts per block as `histogram_shared`, then the `CLUSTER` blocks of a
    /// cluster combine their histograms through distributed shared memory: block rank `r` reads
    /// bins `32 r .. 32 r + 31` from every block of the cluster (`mapa` + `ld.shared::cluster`,
    /// after a `barrier.cluster`) and flushes their sums. One global atomic per bin per cluster
    /// instead of per block; the combining traffic stays on the SM-to-SM network.
    pub unsafe fn histogram_cluster(input: *const u32, bins: *mut u32, n: u64) {
        // SAFETY: forwarded plan guarantees (see `count_in_shared`, `combine_cluster`).
        unsafe { hopper_device::combine_cluster(device::count_in_shared(input, n), bins) }
    }
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;

    /// Calls `f(v)` for each value of this block's share of `input[..n]`: `VECTORS_PER_THREAD`
    /// 16-byte loads per thread, all issued first; block 0 also takes the `n % 4` tail.
    ///
    /// # Safety
    /// `input` holds `n` values and starts on a 16-byte boundary (checked by the plan).
    #[inline(always)]
    pub(super) unsafe fn each_value(input: *const u32, n: u64, mut f: impl FnMut(u32)) {
        let (vectors, tail) = split(n);
        let (b, t) = (thread::block_idx_x(), thread::thread_idx_x());
        let src = input as *const [i32; 4];
        let mut v = [[0i32; 4]; VECTORS_PER_THREAD as usize];
        let mut k = 0;
        while k < VECTORS_PER_THREAD {
            let i = vector_index(b, k, t);
            if i < vectors {
                // SAFETY: i < vectors = n / 4, 16-byte aligned, read-only for the kernel.
                v[k as usize] = unsafe { mem::load_v4_i32(src.add(i as usize)) };
            }
            k += 1;
        }
        k = 0;
        while k < VECTORS_PER_THREAD {
            if vector_index(b, k, t) < vectors {
                let mut e = 0;
                while e < 4 {
                    f(v[k as usize][e] as u32);
                    e += 1;
                }
            }
            k += 1;
        }
        if b == 0 && t < tail {
            // SAFETY: 4 * vectors + t < n.
            f(unsafe { *input.add(tail_index(vectors, t) as usize) });
        }
    }

    /// Clears the block's shared bins, counts its share of the input into them, and returns
    /// them (complete: after a block barrier).
    ///
    /// # Safety
    /// As [`each_value`], and the launch has `BLOCK` threads and `SHARED_BYTES` of shared memory.
    #[inline(always)]
    pub(super) unsafe fn count_in_shared(input: *const u32, n: u64) -> *mut u32 {
        let counts = shared::dynamic::<u32>();
        let t = thread::thread_idx_x();
        // SAFETY: t < BLOCK == BINS words of shared memory; the address is the block's own.
        unsafe {
            *counts.add(t as usize) = 0;
            thread::sync_threads();
            let base = shared::address(counts);
            each_value(input, n, |v| shared::red_add_u32(base + 4 * bin(v), 1));
        }
        thread::sync_threads();
        counts
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
mod hopper_device {
    use super::*;
    use crate::prelude::cluster;

    /// Combines the cluster's shared histograms and flushes this block's slice of the bins.
    ///
    /// # Safety
    /// `counts` is this block's complete shared histogram (from `count_in_shared`), `bins` holds
    /// `BINS` counters, and the launch is in clusters of `CLUSTER` blocks.
    #[inline(always)]
    pub(super) unsafe fn combine_cluster(counts: *mut u32, bins: *mut u32) {
        let t = thread::thread_idx_x();
        // SAFETY (whole body): every thread of every block of the cluster reaches both cluster
        // barriers; the first makes every block's histogram visible cluster-wide, the second
        // keeps every block (and its shared memory) alive until all remote reads are done.
        // Remote addresses come from `mapa` of our own bin (< BINS) and a rank < CLUSTER.
        unsafe {
            cluster::sync();
            if t < BINS_PER_RANK {
                let b = cluster_bin(cluster::rank(), t);
                let local = shared::address(counts.add(b as usize));
                let mut sum = 0u32;
                let mut r = 0;
                while r < CLUSTER {
                    sum = sum.wrapping_add(cluster::load_u32(cluster::map(local, r)));
                    r += 1;
                }
                if sum != 0 {
                    atomic::red_add_u32(bins.add(b as usize), sum);
                }
            }
            cluster::sync();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_every_vector_once_in_whole_clusters() {
        for n in [0u64, 1, 3, 4, 4095, 4096, 4097, 1 << 20, (1 << 26) + 3] {
            let blocks = blocks(n);
            assert!(blocks >= 1 && blocks.is_multiple_of(CLUSTER as u64), "{n}");
            let vectors = n / 4;
            if vectors <= 1 << 16 {
                let mut hits = vec![0u8; vectors as usize];
                for b in 0..blocks as u32 {
                    for k in 0..VECTORS_PER_THREAD {
                        for t in 0..BLOCK {
                            let i = vector_index(b, k, t);
                            if i < vectors {
                                hits[i as usize] += 1;
                            }
                        }
                    }
                }
                assert!(hits.iter().all(|&h| h == 1), "{n}");
            }
            // The last block that has work is inside the grid.
            assert!(blocks * (BLOCK * VECTORS_PER_THREAD) as u64 >= vectors);
        }
        assert_eq!(bin(257), 1);
        assert_eq!(BINS_PER_RANK * CLUSTER, BINS);
        // The tail: values 4 * vectors .. n, one per thread t < tail.
        let (vectors, tail) = split(4099);
        assert_eq!((vectors, tail), (1024, 3));
        assert_eq!((0..tail).map(|t| tail_index(vectors, t)).collect::<Vec<_>>(), [4096, 4097, 4098]);
        // The cluster's flush: every bin once, by rank and thread.
        let mut flushed = [0u8; BINS as usize];
        for rank in 0..CLUSTER {
            for t in 0..BINS_PER_RANK {
                flushed[cluster_bin(rank, t) as usize] += 1;
            }
        }
        assert!(flushed.iter().all(|&f| f == 1));
    }
}
