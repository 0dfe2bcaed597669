//! Replays of the first (profiled) launch of each reduction in `kernels-gpu/src/reduce.rs`: the
//! second pass over the partials is another launch, which the ncu step does not catch.
//!
//! SASS (sm_90), all 4-byte accesses unless said otherwise:
//! - loads into shared memory: one `LDG.E` per element (`load_one`, or two for `load_two`, or
//!   one or two per grid-stride trip), then one `STS` of `s[t]` by every thread;
//! - each tree level: two `LDS` (`s[a]`, `s[c]`) and one `STS` (`s[a]`) by the lanes the level's
//!   pair function selects (the seed's level puts a barrier between its loads and its store:
//!   the same accesses);
//! - the block's result: one `LDS` of `s[0]` by thread 0 (the compiler sinks the read of
//!   `*s` into `if t == 0` in every tree kernel) and one `STG.E` of its partial; the seed's
//!   `LDS` only in blocks whose first element exists, then a `RED` (an atomic, no request);
//! - the warp-finishing kernels: the last warp's `LDS` of `s[t]` and `s[t + 32]`, shuffles;
//! - `reduce_shuffle_vec4`: `LDG.E.128.CONSTANT` per vector (`UNROLL` a whole trip, then one a
//!   trip), one `LDG.E` for the tail, an `STS` of each warp's sum by its lane 0, an `LDS` of
//!   the warp sums by lanes `< WARPS` of warp 0, a `RED` by one lane.
//!
//! Uniformity: the shared-memory part of a block (from the `STS` of `s[t]` on) depends only on
//! the thread index (no guard in it reads `n` or the block index), so it is replayed for one
//! block and counted once per block, while every global access is replayed for every warp.

use super::{Counts, Model, Warp, advance, block_warps, blocks, fake_slice, lanes_where, no_replay, warps};
use crate::buffer::{DeviceRead, DeviceViewMut};
use crate::error::{Error, Result, sum};
use crate::launch::{Call, Launch};
use crate::reduce::{LessonSig, Method, ShuffleSig, plan_first, plan_shuffle};
use coalesce_kernels::WARP_SIZE;
use coalesce_kernels::reduce::{
    BLOCK, UNROLL, WARPS, conflict_pair, divergent_pair, grid_threads, grid_threads64, last_warp_pair, pair_index,
    pair_partner, pair_step, sequential_pair, shuffle_head, tail_index, thread_index, thread_index64, unrolled_vector,
    vec4_split, warp_lane, whole_trip,
};

type Pair = fn(u32, u32) -> Option<(u32, u32)>;

/// How a tree kernel's block ends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Finish {
    /// Thread 0 reads `s[0]`.
    ReadWordZero,
    /// The tree stops at 64 words and warp 0 reads `s[t]` and `s[t + 32]`.
    LastWarp,
    /// Nothing block-independent (the seed's read of `s[0]` depends on the block).
    Nothing,
}

/// Levels `1, 2, .. BLOCK / 2` (the interleaved trees).
fn up() -> Vec<u32> {
    (0..BLOCK.trailing_zeros()).map(|k| 1 << k).collect()
}

/// Levels `BLOCK / 2, .. ` down to (and excluding) `down_to` (the sequential trees).
fn down(down_to: u32) -> Vec<u32> {
    let mut d = BLOCK / 2;
    let mut out = Vec::new();
    while d > down_to {
        out.push(d);
        d /= 2;
    }
    out
}

/// The shared-memory part of one block of a tree kernel.
fn tree_block(launch: &Launch, pair: Pair, levels: &[u32], finish: Finish) -> Result<Counts> {
    let mut m = Model::instructions_only();
    let block = block_warps(launch, (0, 0)).collect::<Vec<_>>();
    for w in &block {
        m.shared_store(4, w.lanes, |l| 4 * w.thread(l).0)?;
    }
    for &d in levels {
        for w in &block {
            let t = |l| w.thread(l).0;
            let active = lanes_where(w.lanes, |l| pair(t(l), d).is_some());
            let (a, c) = (|l| pair(t(l), d).map_or(0, |p| p.0), |l| pair(t(l), d).map_or(0, |p| p.1));
            m.shared_load(4, active, |l| 4 * a(l))?;
            m.shared_load(4, active, |l| 4 * c(l))?;
            m.shared_store(4, active, |l| 4 * a(l))?;
        }
    }
    let first = block.first().ok_or(Error::Empty("a launch with a warp"))?;
    match finish {
        Finish::ReadWordZero => m.shared_load(4, lanes_where(first.lanes, |l| first.thread(l).0 == 0), |_| 0)?,
        Finish::LastWarp => {
            let warp0 = lanes_where(first.lanes, |l| first.thread(l).0 < WARP_SIZE);
            m.shared_load(4, warp0, |l| 4 * last_warp_pair(first.thread(l).0).0)?;
            m.shared_load(4, warp0, |l| 4 * last_warp_pair(first.thread(l).0).1)?;
        }
        Finish::Nothing => {}
    }
    Ok(m.counts())
}

/// Thread 0 of each block stores the block's partial sum.
fn store_partial(m: &mut Model, partials: super::Buffer, w: &Warp) -> Result<()> {
    let zero = lanes_where(w.lanes, |l| w.thread(l).0 == 0);
    m.store(partials, 4, zero, |_| 4 * u64::from(w.block.0))
}

/// Counts of a planned first pass of a lesson tree (every method but `ShuffleVec4`).
pub fn first_pass(call: &Call<'_, LessonSig>) -> Result<Counts> {
    let launch = call.launch();
    let &(input, ref output, n) = call.args();
    let kernel = call.kernel();
    let method =
        Method::ALL.into_iter().find(|m| m.lesson_kernel() == Some(kernel)).ok_or_else(|| no_replay(kernel.name()))?;
    let mut m = Model::new();
    let (src, out) = (m.buffer(input.address()), m.buffer(output.address()));
    let t_of = |w: &Warp, l| w.thread(l).0;
    let mut blocks_seen = 0u64;
    for b in blocks(&launch) {
        blocks_seen += 1;
        for w in block_warps(&launch, b) {
            let w = &w;
            match method {
                Method::InterleavedDivergent | Method::InterleavedConflicts | Method::Sequential => {
                    let i = |l| thread_index(b.0, t_of(w, l));
                    m.load(src, 4, lanes_where(w.lanes, |l| i(l) < n), |l| 4 * u64::from(i(l)))?;
                }
                Method::FirstAdd | Method::UnrollLastWarp => {
                    let i = |l| pair_index(b.0, t_of(w, l));
                    m.load(src, 4, lanes_where(w.lanes, |l| i(l) < n), |l| 4 * u64::from(i(l)))?;
                    let j = |l| pair_partner(i(l));
                    m.load(src, 4, lanes_where(w.lanes, |l| j(l) < n), |l| 4 * u64::from(j(l)))?;
                }
                Method::ManyPerThread => {
                    let step = pair_step(launch.grid.0);
                    let mut i: [u32; 32] = std::array::from_fn(|l| pair_index(b.0, t_of(w, l as u32)));
                    loop {
                        let active = lanes_where(w.lanes, |l| i[l as usize] < n);
                        if active == 0 {
                            break;
                        }
                        m.load(src, 4, active, |l| 4 * u64::from(i[l as usize]))?;
                        let second = lanes_where(active, |l| pair_partner(i[l as usize]) < n);
                        m.load(src, 4, second, |l| 4 * u64::from(pair_partner(i[l as usize])))?;
                        advance(&mut i, active, step)?;
                    }
                }
                Method::Seed | Method::SeedFilled => {
                    let step = grid_threads(launch.grid.0);
                    let mut i: [u32; 32] = std::array::from_fn(|l| thread_index(b.0, t_of(w, l as u32)));
                    loop {
                        let active = lanes_where(w.lanes, |l| i[l as usize] < n);
                        if active == 0 {
                            break;
                        }
                        m.load(src, 4, active, |l| 4 * u64::from(i[l as usize]))?;
                        advance(&mut i, active, step)?;
                    }
                    // The block's result goes to `output[0]` by atomic, from blocks whose first
                    // element exists; thread 0 reads `s[0]` for it (block-dependent, so here).
                    if thread_index(b.0, 0) < n && w.index == 0 {
                        m.shared_load(4, 1, |_| 0)?;
                        m.atomic(out, 0)?;
                    }
                }
                Method::ShuffleVec4 => unreachable!("planned by plan_shuffle"),
            }
            if !method.atomic() {
                store_partial(&mut m, out, w)?;
            }
        }
    }
    let shared = match method {
        Method::InterleavedDivergent => tree_block(&launch, divergent_pair, &up(), Finish::ReadWordZero),
        Method::InterleavedConflicts => tree_block(&launch, conflict_pair, &up(), Finish::ReadWordZero),
        Method::Sequential | Method::FirstAdd => tree_block(&launch, sequential_pair, &down(0), Finish::ReadWordZero),
        Method::UnrollLastWarp | Method::ManyPerThread => {
            tree_block(&launch, sequential_pair, &down(WARP_SIZE), Finish::LastWarp)
        }
        Method::Seed | Method::SeedFilled => tree_block(&launch, sequential_pair, &down(0), Finish::Nothing),
        Method::ShuffleVec4 => unreachable!(),
    }?;
    m.add(&shared.repeated(blocks_seen)?)?;
    Ok(m.counts())
}

/// Counts of a planned `reduce_shuffle_vec4` launch.
pub fn shuffle(call: &Call<'_, ShuffleSig>) -> Result<Counts> {
    let launch = call.launch();
    let &(input, ref output, n) = call.args();
    let mut m = Model::new();
    let (src, out) = (m.buffer(input.address()), m.buffer(output.address()));
    let head = shuffle_head(input.address(), n);
    let (vectors, tail) = vec4_split(n - head);
    let step = grid_threads64(launch.grid.0);
    let mut blocks_seen = 0u64;
    for w in warps(&launch) {
        if w.index == 0 {
            blocks_seen += 1;
        }
        let g: [u64; 32] = std::array::from_fn(|l| thread_index64(w.block.0, w.thread(l as u32).0));
        let mut i = g;
        // Lanes run the loops in step: an iteration issues for the lanes still in the loop.
        loop {
            let active = lanes_where(w.lanes, |l| whole_trip(i[l as usize], step, vectors));
            if active == 0 {
                break;
            }
            for k in 0..UNROLL {
                m.load(src, 16, active, |l| 4 * head + 16 * unrolled_vector(i[l as usize], k, step))?;
            }
            advance(&mut i, active, u64::from(UNROLL) * step)?;
        }
        loop {
            let active = lanes_where(w.lanes, |l| i[l as usize] < vectors);
            if active == 0 {
                break;
            }
            m.load(src, 16, active, |l| 4 * head + 16 * i[l as usize])?;
            advance(&mut i, active, step)?;
        }
        let head_lanes = lanes_where(w.lanes, |l| g[l as usize] < head);
        m.load(src, 4, head_lanes, |l| 4 * g[l as usize])?;
        let tail_lanes = lanes_where(w.lanes, |l| g[l as usize] < u64::from(tail));
        m.load(src, 4, tail_lanes, |l| 4 * (head + tail_index(vectors, g[l as usize])))?;
        if w.index == 0 {
            m.atomic(out, 0)?;
        }
    }
    // The block's shared part (see the module docs): lane 0 of each warp parks its sum, warp 0
    // reads the `WARPS` sums.
    let mut one = Model::instructions_only();
    for w in block_warps(&launch, (0, 0)) {
        let lane0 = lanes_where(w.lanes, |l| warp_lane(w.thread(l).0).1 == 0);
        one.shared_store(4, lane0, |l| 4 * warp_lane(w.thread(l).0).0)?;
        if w.index == 0 {
            let readers = lanes_where(w.lanes, |l| warp_lane(w.thread(l).0).1 < WARPS);
            one.shared_load(4, readers, |l| 4 * warp_lane(w.thread(l).0).1)?;
        }
    }
    m.add(&one.counts().repeated(blocks_seen)?)?;
    Ok(m.counts())
}

/// Counts of the library's sum (the shuffle kernel) over `n` elements starting `offset`
/// elements into a buffer of `n + 3`.
pub fn shuffle_at(n: usize, offset: usize, sms: u32) -> Result<Counts> {
    let input: DeviceViewMut<'static, i32> = fake_slice(0, sum("sum input", n, 3)?);
    let mut out: DeviceViewMut<'static, i32> = fake_slice(1, 1);
    shuffle(&plan_shuffle(&input.slice(offset..sum("sum input end", offset, n)?)?, &mut out, sms)?)
}

/// The first pass of `method` over `n` elements on a GPU of `sms` SMs, as `sum_into` plans it.
pub fn first_launch(method: Method, n: usize, sms: u32) -> Result<Counts> {
    let input: DeviceViewMut<'static, i32> = fake_slice(0, n);
    if method == Method::ShuffleVec4 {
        let mut out: DeviceViewMut<'static, i32> = fake_slice(1, 1);
        return shuffle(&plan_shuffle(&input, &mut out, sms)?);
    }
    let len = crate::reduce::partials_needed(method, n, sms).max(1);
    let mut out: DeviceViewMut<'static, i32> = fake_slice(1, len);
    first_pass(&plan_first(method, &input, &mut out, sms)?)
}
