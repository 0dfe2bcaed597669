//! Replays of the histograms in `kernels-gpu/src/histogram.rs`.
//!
//! SASS (sm_90; `histogram_global` and `histogram_shared` from the main module, compiled for
//! sm_90 as the H100 JITs it, `histogram_cluster` from the Hopper module):
//! - every kernel: four `LDG.E.128.CONSTANT`, one per `k < VECTORS_PER_THREAD`, of vector
//!   `vector_index(b, k, t)` under `i < vectors`, all issued before the first atomic; and for
//!   the `n % 4` tail, in block 0 under `t < tail`, one load of value `tail_index(vectors, t)`:
//!   `LDG.E.U8` in `histogram_global` (ptxas narrows it to the bin's low byte, which
//!   `bin = v % 256` only needs; the same sector) and a 4-byte `LDG.E` in the other two.
//! - `histogram_global`: one `REDG.E.ADD.STRONG.GPU` per value (16 a thread, then one for the
//!   tail value) on `bins[bin(v)]`.
//! - `histogram_shared`: one `STS` of zero to word `t` by every thread, a barrier, one
//!   `ATOMS.POPC.INC.32` per value on shared word `bin(v)`, a barrier, one `LDS` of word `t` by
//!   every thread, and a `REDG.E.ADD.STRONG.GPU` of it on `bins[t]` where it is not zero.
//! - `histogram_cluster`: the same `STS`, barrier and `ATOMS`; then `barrier.cluster`
//!   (`UCGABAR_ARV`/`UCGABAR_WAIT`, with `MEMBAR.ALL.GPU` and `CCTL.IVALL`), eight 4-byte
//!   `LD.E` by the threads `t < BINS_PER_RANK` (ptxas lowers `ld.shared::cluster` of a `mapa`
//!   address to a *generic* load of the shared window, one per rank of the cluster, the own
//!   rank's included; there is no `LDS` in the kernel: the own rank's load is counted as a
//!   shared load, below), a `REDG.E.ADD.STRONG.GPU` of the sum on
//!   `bins[cluster_bin(rank, t)]` where it is not zero, and a second cluster barrier.
//!
//! What is counted: the input loads as global load requests and sectors (every warp of every
//! block, each lane's address from `vector_index` / `tail_index`), the `STS` and `LDS` of word
//! `t` as shared wavefronts (one a warp, no conflict: 32 consecutive words), and every `REDG` as
//! an atomic: its bin's sector read from and written to DRAM, no request
//! ([`Model::atomic`]).
//!
//! What is not counted, and why:
//! - the `ATOMS` on the shared bins: shared-memory atomics are neither `op_ld` nor `op_st` for
//!   the shared wavefront and bank-conflict counters the model predicts (their contention, the
//!   lesson's subject, is not one of its quantities);
//! - the cluster kernel's reads of the other ranks' bins: generic `LD.E` whose addresses fall in
//!   another block's shared window, so they travel the SM-to-SM network, neither the global
//!   pipe (no request or sector) nor this SM's shared-memory banks (no wavefront). The read of
//!   the block's own rank is a generic address in its own shared window, which the LSU executes
//!   as a shared access (the CUDA generic-addressing rule): it is counted as one 4-byte shared
//!   load of 32 consecutive words (ncu's SASS-attributed shared-load wavefronts on the H100
//!   are exactly one a block, BENCHMARKS.md);
//! - the `REDG`s as requests (they are neither `op_ld` nor `op_st`);
//! - the launcher's clearing of `bins` before the kernel: another launch (a memset), which the
//!   profiled kernel's counters do not include; the L2 model still takes `bins` as not in L2.
//!
//! Data: the requests, sectors and wavefronts do not depend on the values (every guard reads
//! only `n`, the block and the thread; the only data-dependent instructions are atomics, which
//! count no request), so only the DRAM footprint of `bins` does: which bins any `REDG` touches.
//! The replay therefore takes the values the device input holds and applies each kernel's
//! `REDG`s to them: per value in `histogram_global`, per bin with a non-zero block count in
//! `histogram_shared`, per bin with a non-zero cluster sum in `histogram_cluster` (wrapping
//! 32-bit counts, as the kernels'), the cluster of block `b` being the `CLUSTER` blocks
//! `b - b % CLUSTER ..` and its rank `b % CLUSTER` (a 1-D cluster along x).
//!
//! Uniformity: the shared-memory part (`STS` and `LDS` of word `t`) has no guard, so it is
//! replayed for one block and counted once per block; every global load and atomic is
//! replayed for every warp (2^26 values take well under a second in a release build).

use super::{Buffer, Counts, Model, Warp, block_warps, blocks, fake_slice, lanes_where, no_replay};
use crate::buffer::DeviceViewMut;
use crate::error::{Error, Result};
use crate::launch::Call;
use crate::lessons::histogram::{BINS, HistogramSig, Method, plan};
use coalesce_kernels::histogram::{
    BINS_PER_RANK, VECTORS_PER_THREAD, bin, cluster_bin, split, tail_index, vector_index,
};

/// 32-bit counts of every bin, wrapping as the kernels' counters.
type Bins = [u32; BINS as usize];

/// Counts of a planned histogram launch over `values`, the `n` values its input holds (only
/// the DRAM footprint of `bins` depends on them; see the module docs). Errors:
/// [`Error::LengthMismatch`] unless `values` holds the launch's `n` values,
/// [`Error::Unsupported`] for a call of another kernel, and the [`Model`]'s.
pub fn histogram(call: &Call<'_, HistogramSig>, values: &[u32]) -> Result<Counts> {
    let launch = call.launch();
    let &(input, ref output, n) = call.args();
    if values.len() as u64 != n {
        let expected = usize::try_from(n).unwrap_or(usize::MAX);
        return Err(Error::LengthMismatch { what: "histogram values", expected, got: values.len() });
    }
    let kernel = call.kernel();
    let method = Method::ALL.into_iter().find(|m| m.kernel() == kernel).ok_or_else(|| no_replay(kernel.name()))?;
    let mut m = Model::new();
    let (src, bins) = (m.buffer(input.address()), m.buffer(output.address()));
    let (vectors, tail) = split(n);
    // The tail load's width: the global kernel's ptxas loads only the low byte.
    let tail_width = if method == Method::Global { 1 } else { 4 };
    let cluster = u64::from(launch.cluster.max(1));
    let mut cluster_sum: Bins = [0; BINS as usize];
    let mut blocks_seen = 0u64;
    for b in blocks(&launch) {
        blocks_seen += 1;
        let mut block_counts: Bins = [0; BINS as usize];
        // The REDG of one value (global kernel) or its ATOMS into the block's bins (the others).
        let mut count = |m: &mut Model, v: u32| match method {
            Method::Global => m.atomic(bins, 4 * u64::from(bin(v))),
            Method::Shared | Method::Cluster => {
                let c = &mut block_counts[bin(v) as usize];
                *c = c.wrapping_add(1);
                Ok(())
            }
        };
        for w in block_warps(&launch, b) {
            let t = |l| w.thread(l).0;
            for k in 0..VECTORS_PER_THREAD {
                let i = |l| vector_index(b.0, k, t(l));
                let active = lanes_where(w.lanes, |l| i(l) < vectors);
                m.load(src, 16, active, |l| 16 * i(l))?;
                // In bounds: i(l) < vectors = n / 4, and values holds n (checked above).
                each_lane(active, |l| (0..4).try_for_each(|e| count(&mut m, values[(4 * i(l) + e) as usize])))?;
            }
            if b.0 == 0 {
                let active = lanes_where(w.lanes, |l| t(l) < tail);
                m.load(src, tail_width, active, |l| 4 * tail_index(vectors, t(l)))?;
                each_lane(active, |l| count(&mut m, values[tail_index(vectors, t(l)) as usize]))?;
            }
        }
        match method {
            Method::Global => {}
            Method::Shared => {
                for w in block_warps(&launch, b) {
                    flush(&mut m, bins, &w, |t| (t < BINS).then_some(t), &block_counts)?;
                }
            }
            Method::Cluster => {
                for (sum, c) in cluster_sum.iter_mut().zip(block_counts) {
                    *sum = sum.wrapping_add(c);
                }
                let rank = u64::from(b.0) % cluster;
                if rank + 1 == cluster {
                    // The cluster is complete: each of its blocks flushes its slice of the sums.
                    let first = b.0 + 1 - cluster as u32;
                    for r in 0..cluster as u32 {
                        for w in block_warps(&launch, (first + r, b.1)) {
                            let slice = |t| (t < BINS_PER_RANK).then(|| cluster_bin(r, t));
                            flush(&mut m, bins, &w, slice, &cluster_sum)?;
                        }
                    }
                    cluster_sum = [0; BINS as usize];
                }
            }
        }
    }
    // The shared part of one block (module docs): every thread zeroes word `t`, and the shared
    // kernel's threads read it back after counting.
    let mut one = Model::instructions_only();
    if method != Method::Global {
        for w in block_warps(&launch, (0, 0)) {
            one.shared_store(4, w.lanes, |l| 4 * w.thread(l).0)?;
            if method == Method::Shared {
                one.shared_load(4, w.lanes, |l| 4 * w.thread(l).0)?;
            }
            if method == Method::Cluster {
                // Of the CLUSTER generic loads, the one of the block's own rank resolves to its
                // own shared window and goes down the shared-memory pipe (the word
                // `cluster_bin(rank, t)`: 32 consecutive words, whatever the rank); the others
                // cross the SM-to-SM network and are no shared wavefront of this SM.
                let active = lanes_where(w.lanes, |l| w.thread(l).0 < BINS_PER_RANK);
                one.shared_load(4, active, |l| 4 * cluster_bin(0, w.thread(l).0))?;
            }
        }
    }
    m.add(&one.counts().repeated(blocks_seen)?)?;
    Ok(m.counts())
}

/// Calls `f(l)` for each lane `l` of `lanes`, stopping at the first error.
#[inline]
fn each_lane(mut lanes: u32, mut f: impl FnMut(u32) -> Result<()>) -> Result<()> {
    while lanes != 0 {
        let l = lanes.trailing_zeros();
        lanes &= lanes - 1;
        f(l)?;
    }
    Ok(())
}

/// The flush of one warp: thread `t` whose `bin_of(t)` is some bin with a non-zero count
/// `REDG`s it into `bins`.
fn flush(m: &mut Model, bins: Buffer, w: &Warp, bin_of: impl Fn(u32) -> Option<u32>, counts: &Bins) -> Result<()> {
    each_lane(w.lanes, |l| match bin_of(w.thread(l).0) {
        // A bin past BINS (a cluster of more ranks than bins, in a launch made by hand) has
        // no count.
        Some(b) if counts.get(b as usize).is_some_and(|&c| c != 0) => m.atomic(bins, 4 * u64::from(b)),
        _ => Ok(()),
    })
}

/// The histogram of `values` with `method`, planned as [`crate::lessons::histogram::run`] plans it (the
/// input a 16-byte-aligned buffer of exactly its values, `BINS` bins).
pub fn run(method: Method, values: &[u32]) -> Result<Counts> {
    let input: DeviceViewMut<'static, u32> = fake_slice(0, values.len());
    let mut bins: DeviceViewMut<'static, u32> = fake_slice(1, BINS as usize);
    histogram(&plan(method, &input, &mut bins)?, values)
}
