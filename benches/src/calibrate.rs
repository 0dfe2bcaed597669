//! The time model's device parameters, measured by microbenchmarks of their own
//! (`kernels-gpu/src/probe.rs`) in the same report run as the lessons: each probe does one kind
//! of work, and its median time (CUDA events, as every run) over its count is the rate. Nothing
//! here looks at a lesson's time; the same parameters then predict every run.
use coalesce::timing::probe::{self, Read};
use coalesce::util::Fill;
use coalesce::{Gpu, Result};
use coalesce_kernels::probe::shared_word;
use serde::{Deserialize, Serialize};

use crate::measure::median_seconds;
use crate::workload::random_buffer;

/// Blocks a probe launches per multiprocessor: 8 of 256 threads, 64 warps, a full Hopper SM.
const BLOCKS_PER_SM: u32 = 8;
/// Words of the DRAM probes' buffer: 256 MiB, five times an H100's L2.
const DRAM_WORDS: usize = 1 << 26;
/// Words of the L2 read probe's buffer (8 MiB, a sixth of an H100's L2) and its passes over it.
const L2_WORDS: usize = 1 << 21;
const L2_PASSES: u32 = 32;
/// Shared loads per thread of the shared probe.
const SHARED_STEPS: u32 = 4096;
/// FMA rounds per thread of the FMA probe.
const FMA_STEPS: u32 = 4096;
/// Atomics per thread of the atomic probes.
const ATOMIC_STEPS: u32 = 16;
const SHARED_ATOMIC_STEPS: u32 = 1024;
/// Hops of each latency chase, and the spacing of its slots (256 bytes: every hop a new sector
/// pair and line).
const CHASE_STEPS: u32 = 16_384;
const CHASE_SPACING: usize = 64;
/// Words of the L2 chain: 1 MiB.
const L2_CHAIN_WORDS: usize = 1 << 18;
/// Full waves of the block-start probe's grids.
const START_WAVES: u32 = 64;

/// What the probes measured on one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceParams {
    /// `(bytes in flight, bytes per second)` reading a 256 MiB buffer once with 512-byte warp
    /// requests (16 bytes a thread; one at a time, then four), grids of a quarter of a block to
    /// 8 blocks a multiprocessor: how fast DRAM answers as much as a kernel keeps waiting on it
    /// (Little's law, measured).
    pub dram_read_bps: Vec<(f64, f64)>,
    /// The same with 128-byte warp requests (4 bytes a thread, one at a time).
    #[serde(default)]
    pub dram_read_words_bps: Vec<(f64, f64)>,
    /// Bytes per second writing it.
    pub dram_write_bps: f64,
    /// The 512-byte curve re-reading an 8 MiB buffer (L2 hits).
    pub l2_read_bps: Vec<(f64, f64)>,
    /// The 128-byte curve re-reading it.
    #[serde(default)]
    pub l2_read_words_bps: Vec<(f64, f64)>,
    /// Shared-memory wavefronts per second, the whole GPU (the most any stride reached).
    pub shared_wavefronts_per_s: f64,
    /// `(addresses, atomics per second)`: global `red.add`s of the whole grid spread over that
    /// many counters.
    pub global_atomics_per_s: Vec<(u32, f64)>,
    /// `(addresses per block, atomics per second)`: shared `red.add`s, the whole GPU.
    pub shared_atomics_per_s: Vec<(u32, f64)>,
    /// Seconds one dependent load takes from DRAM (a chain over 256 MiB).
    pub dram_latency_s: f64,
    /// Seconds one dependent load takes from the L2 (a chain over 1 MiB).
    pub l2_latency_s: f64,
    /// FP32 operations per second (an FMA is two), the whole GPU.
    #[serde(default)]
    pub fp32_flops_per_s: f64,
    /// Seconds a launch of a kernel that does nothing takes, back to back, timed as every run.
    pub launch_s: f64,
    /// `(warps a block, blocks per second)`: how fast the GPU starts (and retires) blocks that
    /// do nothing, grids of 64 full waves of 64-, 256- and 1024-thread blocks. A block that lives
    /// one load's round trip can be started no faster, so it holds fewer slots than the grid
    /// fits (the time model's dispatch limit). Empty in records from before this probe.
    #[serde(default)]
    pub block_starts_per_s: Vec<(f64, f64)>,
}

/// Runs every probe on `gpu`, after checking that the probes do what they count.
pub fn calibrate(gpu: &Gpu) -> Result<DeviceParams> {
    let sms = gpu.multiprocessors();
    let blocks = sms * BLOCKS_PER_SM;
    verify(gpu, blocks)?;
    let launch_s = median_seconds(gpu, || gpu.launch(probe::empty(1, 1)?))?;
    let mut block_starts_per_s = Vec::new();
    for threads in [64u32, 256, 1024] {
        // A Hopper SM holds 2048 threads in at most 32 blocks.
        let grid = sms * (2048 / threads).min(32) * START_WAVES;
        let t = median_seconds(gpu, || gpu.launch(probe::empty(grid, threads)?))?;
        block_starts_per_s.push((f64::from(threads / 32), f64::from(grid) / (t - launch_s).max(t * 0.5)));
    }

    let mut sink = gpu.poisoned::<u32>(1, 0)?;
    let mut big = random_buffer::<u32>(gpu, DRAM_WORDS, Fill::Bits, 11)?;
    let dram_bytes = (DRAM_WORDS * 4) as f64;
    let dram_write_bps = dram_bytes / median_seconds(gpu, || gpu.launch(probe::write(&mut big, blocks)?))?;
    let small = random_buffer::<u32>(gpu, L2_WORDS, Fill::Bits, 12)?;
    let grids = [sms.div_ceil(4), sms.div_ceil(2), sms, 2 * sms, 4 * sms, 8 * sms];
    let mut curve = |input: &coalesce::DeviceBuffer<u32>, how: Read, passes: u32| -> Result<Vec<(f64, f64)>> {
        let bytes = (input.len() * 4) as f64 * f64::from(passes);
        grids
            .iter()
            .map(|&grid| {
                let in_flight = f64::from(grid * probe::BLOCK / 32 * how.warp_bytes());
                let t = median_seconds(gpu, || gpu.launch(probe::read(input, how, passes, &mut sink, grid)?))?;
                Ok((in_flight, bytes / t))
            })
            .collect()
    };
    // One load a thread, then four past the most bytes single loads reach.
    let mut vectors = |input, passes| -> Result<Vec<(f64, f64)>> {
        let mut points = curve(input, Read::Vectors, passes)?;
        let most = points.last().map_or(0.0, |p| p.0);
        points.extend(curve(input, Read::VectorsX4, passes)?.into_iter().filter(|p| p.0 > most));
        Ok(points)
    };
    let dram_read_bps = vectors(&big, 1)?;
    let l2_read_bps = vectors(&small, L2_PASSES)?;
    let dram_read_words_bps = curve(&big, Read::Words, 1)?;
    let l2_read_words_bps = curve(&small, Read::Words, L2_PASSES)?;

    let warps = f64::from(blocks * probe::BLOCK / 32);
    let mut shared_wavefronts_per_s = 0.0f64;
    for stride in [1, 2, 32] {
        let (wavefronts, _) = coalesce::model::shared_wavefronts(4, u32::MAX, |l| 4 * shared_word(l, 0, stride))?;
        let t = median_seconds(gpu, || gpu.launch(probe::shared(SHARED_STEPS, stride, &mut sink, blocks)?))?;
        let total = warps * f64::from(SHARED_STEPS) * wavefronts as f64;
        shared_wavefronts_per_s = shared_wavefronts_per_s.max(total / (t - launch_s).max(t * 0.5));
    }

    let threads = f64::from(blocks * probe::BLOCK);
    let t = median_seconds(gpu, || gpu.launch(probe::fma(FMA_STEPS, &mut sink, blocks)?))?;
    let fp32_flops_per_s = threads * f64::from(FMA_STEPS * probe::FMA_CHAINS) * 2.0 / (t - launch_s).max(t * 0.5);
    let mut counters = gpu.poisoned::<u32>(1 << 20, 0)?;
    let mut global_atomics_per_s = Vec::new();
    for addresses in [1u32, 32, 256, 4096, 1 << 20] {
        let t = median_seconds(gpu, || gpu.launch(probe::atomic(&mut counters, addresses, ATOMIC_STEPS, blocks)?))?;
        global_atomics_per_s.push((addresses, threads * f64::from(ATOMIC_STEPS) / t));
    }
    let mut shared_atomics_per_s = Vec::new();
    for addresses in [1u32, 32, 256, probe::SHARED_WORDS] {
        let t = median_seconds(gpu, || {
            gpu.launch(probe::atomic_shared(addresses, SHARED_ATOMIC_STEPS, &mut sink, blocks)?)
        })?;
        shared_atomics_per_s.push((addresses, threads * f64::from(SHARED_ATOMIC_STEPS) / t));
    }

    // Each launch walks on from where the last stopped: over 256 MiB the hops ahead were last
    // touched a million hops ago, long evicted from the L2.
    let mut end = gpu.upload(&[0u32])?;
    let mut latency = |words: usize| -> Result<f64> {
        let chain = gpu.upload(&probe::chain(words, CHASE_SPACING, 0x5eed)?)?;
        let t = median_seconds(gpu, || gpu.launch(probe::chase(&chain, CHASE_STEPS, &mut end)?))?;
        Ok((t - launch_s).max(0.0) / f64::from(CHASE_STEPS))
    };
    let dram_latency_s = latency(DRAM_WORDS)?;
    let l2_latency_s = latency(L2_CHAIN_WORDS)?;
    Ok(DeviceParams {
        dram_read_bps,
        dram_read_words_bps,
        dram_write_bps,
        l2_read_bps,
        l2_read_words_bps,
        shared_wavefronts_per_s,
        global_atomics_per_s,
        shared_atomics_per_s,
        dram_latency_s,
        l2_latency_s,
        fp32_flops_per_s,
        launch_s,
        block_starts_per_s,
    })
}

/// The probes' own check: one atomic launch adds exactly `threads * steps` over its addresses,
/// and a chase of one lap through a chain ends where it began (a single cycle, on the device).
fn verify(gpu: &Gpu, blocks: u32) -> Result<()> {
    let wrong = |what: String| Err(coalesce::Error::Unsupported(format!("probe check failed: {what}")));
    let mut counters = gpu.poisoned::<u32>(4096, 0)?;
    gpu.launch(probe::atomic(&mut counters, 256, ATOMIC_STEPS, blocks)?)?;
    let counted: u64 = counters.to_vec()?.iter().map(|&c| u64::from(c)).sum();
    let expected = u64::from(blocks * probe::BLOCK * ATOMIC_STEPS);
    if counted != expected {
        return wrong(format!("{counted} atomics counted, {expected} made"));
    }
    let words = 1 << 14;
    let chain = gpu.upload(&probe::chain(words, CHASE_SPACING, 0x5eed)?)?;
    let mut end = gpu.upload(&[0u32])?;
    for (steps, back) in [((words / CHASE_SPACING) as u32, true), (1, false)] {
        gpu.launch(probe::chase(&chain, steps, &mut end)?)?;
        if (end.to_vec()?[0] == 0) != back {
            return wrong(format!("a chase of {steps} hops ended at {}", end.to_vec()?[0]));
        }
    }
    Ok(())
}

impl DeviceParams {
    /// Lines for a person: each parameter with its unit.
    pub fn describe(&self) -> String {
        let curve = |v: &[(f64, f64)]| {
            v.iter().map(|(b, r)| format!("{:.2} MB: {:.0}", b / 1e6, r / 1e9)).collect::<Vec<_>>().join(", ")
        };
        let mut s = format!(
            "DRAM read (GB/s by MB in flight) {}\n  128-byte requests {}\nL2 read {}\n  128-byte requests {}\nDRAM write {:.0} GB/s; shared {:.1} G wavefronts/s; \
             latency DRAM {:.0} ns, L2 {:.0} ns; FP32 {:.1} TFLOP/s; launch {:.2} µs\n",
            curve(&self.dram_read_bps),
            curve(&self.dram_read_words_bps),
            curve(&self.l2_read_bps),
            curve(&self.l2_read_words_bps),
            self.dram_write_bps / 1e9,
            self.shared_wavefronts_per_s / 1e9,
            self.dram_latency_s * 1e9,
            self.l2_latency_s * 1e9,
            self.fp32_flops_per_s / 1e12,
            self.launch_s * 1e6
        );
        let rates =
            |v: &[(u32, f64)]| v.iter().map(|(a, r)| format!("{a}: {:.2}", r / 1e9)).collect::<Vec<_>>().join(", ");
        s += &format!("global atomics (G/s by addresses) {}\n", rates(&self.global_atomics_per_s));
        s += &format!("shared atomics (G/s by addresses a block) {}\n", rates(&self.shared_atomics_per_s));
        let starts = self.block_starts_per_s.iter().map(|(w, r)| format!("{w} warps: {:.2}", r / 1e9));
        s += &format!("block starts (G/s by warps a block) {}\n", starts.collect::<Vec<_>>().join(", "));
        s
    }
}
