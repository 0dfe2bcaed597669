//! Plans for the device microbenchmarks of `kernels-gpu/src/probe.rs`: the kernels whose times
//! give the time model its device parameters (the report measures them in the same run as the
//! lessons; `coalesce-benches`' `calibrate` turns the times into rates). Not lessons and not
//! library entry points: each plan checks its sizes like any other, so a probe launches in
//! bounds whatever it is handed.

use crate::buffer::{DeviceRead, DeviceWrite};
use crate::error::{Error, Result, aligned16, exactly, in_range, non_empty};
use crate::launch::{Call, In, Launch, Out};
use coalesce_kernels::launch::MAX_GRID_X;
use coalesce_kernels::probe::*;
pub use coalesce_kernels::probe::{BLOCK, FMA_CHAINS, SHARED_BYTES, SHARED_WORDS};

/// (input, items, passes, zero, sink): the read probes' parameter list.
pub(crate) type ReadSig = fn(*const u32, u64, u32, u32, *mut u32);
/// (output, vectors).
pub(crate) type WriteSig = fn(*mut u32, u64);
/// (steps, stride or mask, sink): the shared-load and shared-atomic probes.
pub(crate) type SharedSig = fn(u32, u32, *mut u32);
/// (counters, mask, steps).
pub(crate) type AtomicSig = fn(*mut u32, u32, u32);
/// (steps, x, y, sink).
pub(crate) type FmaSig = fn(u32, f32, f32, *mut u32);
/// (next, mask, steps, end).
pub(crate) type ChaseSig = fn(*const u32, u32, u32, *mut u32);

/// Every probe kernel's PTX name (the probes are no lessons: no registry row holds them).
pub const KERNELS: [&str; 10] = [
    probe_read.name(),
    probe_read_x4.name(),
    probe_read_words.name(),
    probe_fma.name(),
    probe_write.name(),
    probe_shared.name(),
    probe_atomic.name(),
    probe_atomic_shared.name(),
    probe_chase.name(),
    probe_empty.name(),
];

/// The launch of `blocks` blocks of [`BLOCK`] threads, `blocks` checked against `gridDim.x`.
fn blocks_of(blocks: u32) -> Result<Launch> {
    in_range("probe blocks", blocks.into(), 1, MAX_GRID_X.into())?;
    Ok(Launch::linear(blocks, BLOCK))
}

/// How a read probe loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// One 16-byte load a thread in flight (512 bytes a warp).
    Vectors,
    /// Four 16-byte loads a thread in flight (2048 bytes a warp).
    VectorsX4,
    /// One 4-byte load a thread in flight (128 bytes a warp).
    Words,
}

impl Read {
    /// Bytes a warp keeps in flight.
    pub const fn warp_bytes(self) -> u32 {
        match self {
            Read::Vectors => 512,
            Read::VectorsX4 => 2048,
            Read::Words => 128,
        }
    }
}

/// Reads all of `input` `passes` times over with `blocks` blocks, loading as `how` says (the
/// vector probes need a length that is a multiple of 4 `u32`s, on a 16-byte boundary); `sink`
/// is one counter that is almost never touched.
pub fn read<'a>(
    input: &'a impl DeviceRead<u32>,
    how: Read,
    passes: u32,
    sink: &'a mut impl DeviceWrite<u32>,
    blocks: u32,
) -> Result<Call<'a, ReadSig>> {
    non_empty("probe input", input.len())?;
    exactly("probe sink", sink.len(), 1)?;
    let launch = blocks_of(blocks)?;
    let (kernel, items) = match how {
        Read::Words => (probe_read_words, input.len() as u64),
        Read::Vectors | Read::VectorsX4 => {
            aligned16("probe input", input.address())?;
            whole_vectors(input.len())?;
            (if how == Read::Vectors { probe_read } else { probe_read_x4 }, input.len() as u64 / 4)
        }
    };
    // SAFETY: every thread loads item k only for k < items (the loop's test, whatever `zero`):
    // words of `input`, or its len / 4 whole vectors on a 16-byte boundary (checked); it adds
    // only to sink[0] of a one-counter sink (checked).
    Ok(unsafe { Call::new(kernel, launch, (In::of(input), items, passes, 0, Out::of(sink))) })
}

/// Writes all of `output` (whole 16-byte vectors, as [`read`]) with `blocks` blocks.
pub fn write<'a>(output: &'a mut impl DeviceWrite<u32>, blocks: u32) -> Result<Call<'a, WriteSig>> {
    non_empty("probe output", output.len())?;
    aligned16("probe output", output.address())?;
    whole_vectors(output.len())?;
    let launch = blocks_of(blocks)?;
    let vectors = output.len() as u64 / 4;
    // SAFETY: every thread stores vector i only for i < vectors = len / 4 of a 16-byte-aligned
    // output (checked).
    Ok(unsafe { Call::new(probe_write, launch, (Out::of(output), vectors)) })
}

/// `steps` shared loads per thread, lanes `stride` words apart, over `blocks` blocks.
pub fn shared<'a>(
    steps: u32,
    stride: u32,
    sink: &'a mut impl DeviceWrite<u32>,
    blocks: u32,
) -> Result<Call<'a, SharedSig>> {
    exactly("probe sink", sink.len(), 1)?;
    let launch = blocks_of(blocks)?.with_shared(SHARED_BYTES);
    // SAFETY: shared indices are masked below SHARED_WORDS, the words the launch gives the
    // BLOCK (<= SHARED_WORDS) threads; only sink[0] of a one-counter sink is added to.
    Ok(unsafe { Call::new(probe_shared, launch, (steps, stride, Out::of(sink))) })
}

/// `steps` global atomic adds per thread over `blocks` blocks on the first `addresses` counters
/// (a power of two, no more than `counters` holds).
pub fn atomic<'a>(
    counters: &'a mut impl DeviceWrite<u32>,
    addresses: u32,
    steps: u32,
    blocks: u32,
) -> Result<Call<'a, AtomicSig>> {
    power_of_two("probe atomic addresses", addresses, counters.len())?;
    let launch = blocks_of(blocks)?;
    // SAFETY: every add goes to counter (t + k) & (addresses - 1) < addresses <= len (checked).
    Ok(unsafe { Call::new(probe_atomic, launch, (Out::of(counters), addresses - 1, steps)) }.adding_atomically())
}

/// `steps` shared atomic adds per thread over `blocks` blocks on `addresses` words of each
/// block's shared memory (a power of two up to [`SHARED_WORDS`]).
pub fn atomic_shared<'a>(
    addresses: u32,
    steps: u32,
    sink: &'a mut impl DeviceWrite<u32>,
    blocks: u32,
) -> Result<Call<'a, SharedSig>> {
    power_of_two("probe shared atomic addresses", addresses, SHARED_WORDS as usize)?;
    exactly("probe sink", sink.len(), 1)?;
    let launch = blocks_of(blocks)?.with_shared(SHARED_BYTES);
    // SAFETY: shared adds go to word (t + k) & (addresses - 1) < SHARED_WORDS of the launch's
    // SHARED_BYTES, thread t < BLOCK <= SHARED_WORDS clears and reads word t, and only sink[0]
    // of a one-counter sink is added to.
    Ok(unsafe { Call::new(probe_atomic_shared, launch, (addresses - 1, steps, Out::of(sink))) }.adding_atomically())
}

/// One thread following `next` (a power-of-two number of words) for `steps` hops from word
/// `end[0]` (masked), writing where it ended back to `end` (one word), so back-to-back launches
/// walk on along the chain. Fill `next` with [`chain`] for a single cycle.
pub fn chase<'a>(
    next: &'a impl DeviceRead<u32>,
    steps: u32,
    end: &'a mut impl DeviceWrite<u32>,
) -> Result<Call<'a, ChaseSig>> {
    let words = u32::try_from(next.len()).map_err(|_| Error::OutOfRange {
        what: "probe chain words",
        value: next.len() as u64,
        min: 1,
        max: 1 << 31,
    })?;
    power_of_two("probe chain words", words, next.len())?;
    exactly("probe end", end.len(), 1)?;
    // SAFETY: the one thread loads next[i & (words - 1)] < words = len (checked) and loads and
    // stores end[0] of a one-word `end` (checked).
    Ok(unsafe { Call::new(probe_chase, Launch::linear(1, 1), (In::of(next), words - 1, steps, Out::of(end))) })
}

/// `steps` rounds of `FMA_CHAINS` FMAs per thread over `blocks` blocks.
pub fn fma<'a>(steps: u32, sink: &'a mut impl DeviceWrite<u32>, blocks: u32) -> Result<Call<'a, FmaSig>> {
    exactly("probe sink", sink.len(), 1)?;
    let launch = blocks_of(blocks)?;
    // SAFETY: the kernel touches only sink[0] of a one-counter sink (checked).
    Ok(unsafe { Call::new(probe_fma, launch, (steps, 1.0001, -0.5, Out::of(sink))) })
}

/// A launch of `blocks` blocks of `threads` threads that do nothing (one block of one thread:
/// the cost of a launch; a grid of many waves: also what each block costs to start and retire).
pub fn empty<'a>(blocks: u32, threads: u32) -> Result<Call<'a, fn()>> {
    in_range("probe blocks", blocks.into(), 1, MAX_GRID_X.into())?;
    in_range("probe threads", threads.into(), 1, coalesce_kernels::launch::MAX_BLOCK_THREADS.into())?;
    // SAFETY: the kernel touches no memory.
    Ok(unsafe { Call::new(probe_empty, Launch::linear(blocks, threads), ()) })
}

/// A single cycle through `words` slots `spacing` words apart, in a pseudo-random order from
/// `seed`: `next[slot k] = slot k + 1` of the shuffled order, every other word 0. Each hop of
/// [`chase`] lands `spacing * 4` bytes or more from the last, in no order a prefetcher follows.
pub fn chain(words: usize, spacing: usize, seed: u64) -> Result<Vec<u32>> {
    let slots = words / spacing.max(1);
    if slots < 2 || u32::try_from(words).is_err() {
        return Err(Error::OutOfRange { what: "probe chain slots", value: slots as u64, min: 2, max: u32::MAX.into() });
    }
    let mut order: Vec<u32> = (0..slots as u32).collect();
    let mut state = seed | 1;
    for i in (1..slots).rev() {
        // xorshift64: a fixed, seedable shuffle with no dependency.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        order.swap(i, (state % (i as u64 + 1)) as usize);
    }
    let mut next = crate::error::host_vec("probe chain", words, 0u32)?;
    for k in 0..slots {
        let (from, to) = (order[k] as usize, order[(k + 1) % slots] as usize);
        next[from * spacing] = (to * spacing) as u32;
    }
    Ok(next)
}

fn whole_vectors(len: usize) -> Result<()> {
    match len % 4 {
        0 => Ok(()),
        _ => Err(Error::Unsupported(format!("a probe buffer of {len} words: whole 16-byte vectors only"))),
    }
}

fn power_of_two(what: &'static str, n: u32, at_most: usize) -> Result<()> {
    if !n.is_power_of_two() || n as usize > at_most {
        return Err(Error::OutOfRange { what, value: n.into(), min: 1, max: at_most as u64 });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::DeviceViewMut;

    #[test]
    fn chain_is_one_cycle_through_every_slot() {
        let (words, spacing) = (1 << 12, 8);
        let next = chain(words, spacing, 7).unwrap();
        let mut i = 0usize;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..words / spacing {
            assert!(i.is_multiple_of(spacing) && seen.insert(i), "slot {i} visited twice");
            i = next[i] as usize;
        }
        assert_eq!((i, seen.len()), (0, words / spacing));
        assert!(chain(8, 8, 1).is_err());
    }

    #[test]
    fn plans_refuse_what_would_launch_out_of_bounds() {
        // SAFETY: descriptors only; nothing is launched.
        let (mut a, mut one, mut odd) = unsafe {
            (
                DeviceViewMut::<u32>::stand_in(0x1000, 1024),
                DeviceViewMut::<u32>::stand_in(0x9000, 1),
                DeviceViewMut::<u32>::stand_in(0x1004, 1022),
            )
        };
        assert!(read(&odd, Read::Vectors, 1, &mut one, 1).is_err());
        assert_eq!(read(&odd, Read::Words, 1, &mut one, 1).unwrap().args().1, 1022);
        assert!(write(&mut odd, 1).is_err());
        assert!(read(&a, Read::Vectors, 1, &mut one, 0).is_err());
        assert_eq!(read(&a, Read::VectorsX4, 1, &mut one, 2).unwrap().args().1, 256);
        assert!(atomic(&mut a, 2048, 1, 1).is_err());
        assert!(atomic(&mut a, 48, 1, 1).is_err());
        assert_eq!(atomic(&mut a, 1024, 1, 1).unwrap().args().1, 1023);
        assert!(atomic_shared(2 * SHARED_WORDS, 1, &mut one, 1).is_err());
        assert!(chase(&odd, 1, &mut one).is_err());
        assert_eq!(chase(&a, 5, &mut one).unwrap().args().1, 1023);
        assert!(shared(1, 1, &mut a, 1).is_err());
    }
}
