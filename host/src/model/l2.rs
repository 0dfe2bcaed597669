//! L2 and DRAM: the sectors a replay sends past L1, followed through an L2 of the device's size
//! in the order the GPU runs them, to the bytes that cross the DRAM interface.
//!
//! A replay walks a launch warp by warp; the GPU runs every resident warp at once. So each access
//! is recorded with its warp and its place in that warp's instruction stream (`Trace`), and the
//! trace is replayed through the cache (`Trace::dram`) in the order *wave, step, warp*: the blocks
//! that fit on the GPU at once form a wave (dispatched in block order, one wave after another;
//! for a multiply whose blocks each keep their SM busy, the one block an SM that progresses at a
//! time: `matmul::blocks_at_once`), and inside a wave every warp issues its first access, then
//! every warp its second, and so on.
//! Warps do not run in lockstep on the hardware, but what the L2 sees of reuse is the amount of
//! other traffic between two accesses to one line, and that is what this order keeps: a warp's
//! next access to a line comes after one step of every other resident warp.
//!
//! The cache (`L2`):
//! - **Lines of 128 bytes in four 32-byte sectors**, set-associative with LRU replacement and a
//!   hashed set index (the hardware spreads lines over its slices with an undisclosed hash; a
//!   plain modulo would put a power-of-two stride in one set). Capacity counts lines, not
//!   sectors: a line holding one sector takes a whole way, which is why a warp whose 32 lanes
//!   each touch their own line fills the cache 4× faster than its bytes suggest.
//! - **Reads fetch 64 bytes** (the aligned sector pair) on a miss: `coalescing/stride` on the
//!   H200 reads 2.0× its sectors' bytes from DRAM at strides of 16 floats and more, 1.0× at 8
//!   and below, and 1.5× at 12 (`results/ncu/h200-11b44ad.csv`), which is a 64-byte fetch and
//!   nothing else.
//! - **Writes allocate without reading**, keeping a byte mask per sector. A sector written back
//!   whole costs 32 bytes of DRAM writes; one written back with only some of its bytes written
//!   and never fetched is read first (32 bytes) to merge: HBM takes whole sectors.
//!   `coalescing/stride` (4 bytes stored a sector) reads one more sector per element than its
//!   loads fetch.
//! - **Write-back**: dirty lines are written when evicted. What is dirty when the launch ends
//!   stays in L2 and is not counted (Nsight Compute counts the launch's own traffic).
//! - **Atomics** (`RED`, `ATOM`) are done in L2: a read of the sector (fetched on a miss) and a
//!   write of it.
//!
//! **Set sampling.** A trace keeps every access until it holds `MAX_EVENTS` (2^22); past that it keeps
//! only the sets whose index is a multiple of its sample (4, then 16, ...), drops the rest, and
//! multiplies their DRAM bytes by the sample: the hash spreads lines over sets evenly, so a sample
//! of sets sees a sample of the lines with the reuse distances of all of them (the set sampling
//! of cache simulators). Small launches are followed exactly; a 4096³ multiply's 2 × 10^9
//! sectors in a few million.
//!
//! What this does not follow: the L1 (every access is taken to reach L2, as for `.cg` loads and
//! for stores; cached loads that would hit in L1 are counted as L2 hits, which changes no DRAM
//! byte), the two L2 partitions of Hopper, and any prefetching beyond the 64-byte pair.

/// Bytes in an L2 line.
pub(crate) const LINE_BYTES: u64 = 128;
/// Bytes an L2 read miss fetches from DRAM: the aligned sector pair.
pub const FETCH_BYTES: u64 = 64;
/// Ways of each set.
pub(crate) const WAYS: usize = 16;
/// Warps whose place a trace keeps for a replay that comes back to them (`block * 32 + warp`
/// below this): 128 MiB of steps at most.
const MAX_WARP_SLOTS: usize = 1 << 25;
/// Accesses a trace holds before it samples sets (module docs).
pub(crate) const MAX_EVENTS: usize = 1 << 22;
/// The L2 of an H100 SXM5 or an H200 (`CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE`: 52,428,800 bytes).
pub const DEFAULT_L2_BYTES: u64 = 50 << 20;

use super::{SECTOR_BYTES, byte_mask};

/// What an access does to its sector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// A load: the sector must be valid.
    Read,
    /// A store of the bytes in the mask (bit `b` = byte `b` of the sector).
    Write(u32),
    /// An atomic or reduction: read and write of the sector, done in L2.
    Atomic,
}

/// One recorded access of a sampled set.
#[derive(Debug, Clone, Copy)]
struct Event {
    /// Launch-order key: (wave, step, slot in the wave, warp in the block), packed high to low.
    key: u128,
    sector: u64,
    op: Op,
}

/// The sector accesses of one launch, with where each falls in the GPU's order.
#[derive(Debug)]
pub(crate) struct Trace {
    events: Vec<Event>,
    /// Bytes of the L2 the trace is followed through, and its sets.
    l2_bytes: u64,
    sets: u64,
    /// One set in `sample` is simulated.
    sample: u64,
    /// Blocks resident at once (the wave), from [`Trace::set_wave`]; 0 until set.
    wave: u64,
    /// The warp whose accesses are being recorded, and its next step.
    warp: (u64, u32),
    step: u32,
    /// One past the latest step any warp has recorded: where a warp that waits for every
    /// access before it starts ([`Trace::after_all`]).
    latest: u32,
    /// Steps of the warps left earlier, for a replay that comes back to one, by
    /// `block * 32 + warp` (a block has at most 32 warps); 0 for a warp not seen yet.
    left: Vec<u32>,
}

/// Mixes a line address (splitmix64's finalizer).
#[inline]
fn hash(line: u64) -> u64 {
    let mut z = line.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The set of `line` in an L2 of `sets` sets: the hash scaled to `0..sets` by a multiply (no
/// division on the model's hottest path).
#[inline]
fn set_of(line: u64, sets: u64) -> u64 {
    ((u128::from(hash(line)) * u128::from(sets)) >> 64) as u64
}

/// The order of an access: wave (`block / wave`), then the warp's step, then the block's slot in
/// the wave and the warp in the block.
#[inline]
fn key(wave: u64, block: u64, step: u32, warp: u32) -> u128 {
    let wave = wave.max(1);
    (u128::from(block / wave) << 96)
        | (u128::from(step) << 64)
        | (u128::from(block % wave) << 16)
        | u128::from(warp & 0xffff)
}

/// Whether `line` falls in a simulated set of an L2 of `sets` sets, one in `sample` (a power of
/// two) simulated.
#[inline]
fn sampled(line: u64, sets: u64, sample: u64) -> bool {
    set_of(line, sets) & (sample - 1) == 0
}

/// Sets of an L2 of `bytes`.
fn sets_of(bytes: u64) -> u64 {
    (bytes / LINE_BYTES / WAYS as u64).max(1)
}

impl Trace {
    /// An empty trace, to be followed through an L2 of `l2_bytes`.
    pub fn new(l2_bytes: u64) -> Self {
        Trace {
            events: Vec::new(),
            l2_bytes,
            sets: sets_of(l2_bytes),
            sample: 1,
            wave: 0,
            warp: (0, 0),
            step: 0,
            latest: 0,
            left: Vec::new(),
        }
    }

    /// Keeps an access to `sector` if its set is sampled, then samples more sparsely if the
    /// trace is full.
    #[inline]
    fn keep(&mut self, event: Event) {
        let sets = self.sets;
        if sampled(event.sector * SECTOR_BYTES / LINE_BYTES, sets, self.sample) {
            self.events.push(event);
            if self.events.len() > MAX_EVENTS {
                self.sample *= 4;
                let sample = self.sample;
                self.events.retain(|e| sampled(e.sector * SECTOR_BYTES / LINE_BYTES, sets, sample));
            }
        }
    }

    /// The blocks resident at once: `blocks_per_sm` on each of `sms` multiprocessors.
    pub fn set_wave(&mut self, sms: u32, blocks_per_sm: u32) {
        self.wave = u64::from(sms.max(1)) * u64::from(blocks_per_sm.max(1));
    }

    /// The accesses that follow are warp `warp` of block `block` (linear block id).
    #[inline]
    pub fn at_warp(&mut self, block: u64, warp: u32) {
        if self.warp != (block, warp) {
            let slot =
                |(block, warp): (u64, u32)| usize::try_from(block * 32 + u64::from(warp % 32)).unwrap_or(usize::MAX);
            let old = slot(self.warp);
            // A launch of more warps than this keeps no revisit's place (its steps restart:
            // the order is rougher, nothing else) rather than a table no host can hold.
            if self.step > 0 && old < MAX_WARP_SLOTS {
                if old >= self.left.len() {
                    self.left.resize(old + 1, 0);
                }
                self.left[old] = self.step;
            }
            self.warp = (block, warp);
            self.step = self.left.get(slot((block, warp))).copied().unwrap_or(0);
        }
    }

    /// Records one warp instruction's accesses to `sectors` (with their ops), one step of the
    /// current warp.
    #[inline]
    pub fn record(&mut self, accesses: impl IntoIterator<Item = (u64, Op)>) {
        let (block, warp) = self.warp;
        let key = key(self.wave, block, self.step, warp);
        for (sector, op) in accesses {
            self.keep(Event { key, sector, op });
        }
        self.step = self.step.saturating_add(1);
        self.latest = self.latest.max(self.step);
    }

    /// The current warp's accesses from here on come after every access recorded so far: a
    /// warp that waits (on a flag in global memory) for the blocks replayed before it to be
    /// done, as split-K's reducers wait for a tile's split blocks. Without this its first loads
    /// would be ordered beside theirs, before the stores they wait for.
    pub fn after_all(&mut self) {
        self.step = self.step.max(self.latest);
    }

    /// The sectors of bytes `start..end` in sets this trace records now, in address order, each
    /// with its line and the mask of its bytes inside the range: what a generator that places
    /// accesses itself ([`Trace::push`], [`Trace::record_bytes`]) records, without working out
    /// the sectors of lines it would drop (a sector pushed that is no longer sampled is dropped).
    pub fn sectors_of(&self, start: u64, end: u64) -> impl Iterator<Item = (u64, u64, u32)> + use<> {
        let (sets, sample) = (self.sets, self.sample);
        let per_line = LINE_BYTES / SECTOR_BYTES;
        (start / LINE_BYTES..end.div_ceil(LINE_BYTES)).filter(move |&line| sampled(line, sets, sample)).flat_map(
            move |line| {
                let sectors = (line * per_line).max(start / SECTOR_BYTES)
                    ..(line * per_line + per_line).min(end.div_ceil(SECTOR_BYTES));
                sectors.map(move |s| {
                    let (lo, hi) = ((s * SECTOR_BYTES).max(start), ((s + 1) * SECTOR_BYTES).min(end));
                    (s, line, byte_mask(lo % SECTOR_BYTES, hi - lo))
                })
            },
        )
    }

    /// Records `op` on `sector` (one [`Trace::sectors_of`] gives) at step `step` of warp
    /// `warp` of block `block`, for generators that place accesses themselves.
    #[inline]
    pub fn push(&mut self, (block, step, warp): (u64, u32, u32), sector: u64, op: Op) {
        let key = key(self.wave, block, step, warp);
        self.keep(Event { key, sector, op });
        self.latest = self.latest.max(step.saturating_add(1));
    }

    /// Records accesses outside any warp's order (a footprint worked out apart from a replay):
    /// bytes `start..end` read, or written (each sector with the mask of its bytes inside), in
    /// address order, one line a step of warp 0 of block 0.
    pub fn record_bytes(&mut self, start: u64, end: u64, write: bool) {
        let first_line = start / LINE_BYTES;
        let sectors: Vec<_> = self.sectors_of(start, end).collect();
        for (sector, line, mask) in sectors {
            let op = if write { Op::Write(mask) } else { Op::Read };
            self.keep(Event { key: u128::from(line - first_line) << 64, sector, op });
        }
    }

    /// The DRAM bytes `(read, written)` of the trace through its L2.
    pub fn dram(&self) -> (u64, u64) {
        // By key, ties in recording order (the order a stable sort by key gives), so a warp's
        // accesses of one step stay in program order; the pairs sort in place, without a lookup
        // into the events per comparison.
        let mut order: Vec<(u128, u32)> = self.events.iter().enumerate().map(|(i, e)| (e.key, i as u32)).collect();
        order.sort_unstable();
        let mut l2 = L2::new(self.l2_bytes, self.sample);
        for &(_, i) in &order {
            let e = &self.events[i as usize];
            l2.access(e.sector, e.op);
        }
        (l2.read_bytes * self.sample, l2.write_bytes * self.sample)
    }
}

/// Hashes a set index (already a hash of its lines, [`hash`]) by one multiply: the simulated
/// sets' map needs no protection from chosen keys, only speed.
#[derive(Default, Clone, Copy)]
struct SetHash(u64);

impl std::hash::Hasher for SetHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0 ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type SetHasher = std::hash::BuildHasherDefault<SetHash>;

/// One line of a set.
#[derive(Debug, Clone, Copy, Default)]
struct Line {
    tag: u64,
    /// Last use, for LRU (0: empty).
    used: u64,
    /// Sectors holding DRAM's data (fetched), one bit each.
    valid: u8,
    /// Bytes written, per sector.
    dirty: [u32; 4],
}

/// The simulated sets of an L2 (see the module docs).
#[derive(Debug)]
pub(crate) struct L2 {
    sets: u64,
    sample: u64,
    /// The simulated sets that have been touched (a launch of a few sectors touches a few of the
    /// thousands).
    lines: std::collections::HashMap<u64, [Line; WAYS], SetHasher>,
    clock: u64,
    /// DRAM bytes read and written by the simulated sets.
    pub read_bytes: u64,
    pub write_bytes: u64,
}

impl L2 {
    /// An empty L2 of `bytes`, one set in `sample` simulated.
    pub fn new(bytes: u64, sample: u64) -> Self {
        L2 { sets: sets_of(bytes), sample, lines: Default::default(), clock: 0, read_bytes: 0, write_bytes: 0 }
    }

    /// Writes back a line's dirty sectors (reading first the ones only partly written and never
    /// fetched).
    fn evict(&mut self, line: &Line) {
        for (s, &mask) in line.dirty.iter().enumerate() {
            if mask == 0 {
                continue;
            }
            if mask != u32::MAX && line.valid & (1 << s) == 0 {
                self.read_bytes += SECTOR_BYTES;
            }
            self.write_bytes += SECTOR_BYTES;
        }
    }

    /// One access to `sector` (a sampled set's: see [`Trace::record`]).
    pub fn access(&mut self, sector: u64, op: Op) {
        let per_line = LINE_BYTES / SECTOR_BYTES;
        let tag = sector / per_line;
        let s = (sector % per_line) as usize;
        debug_assert!(sampled(tag, self.sets, self.sample));
        let set = set_of(tag, self.sets);
        self.clock += 1;
        let ways = self.lines.entry(set).or_insert([Line::default(); WAYS]);
        let found = ways.iter().position(|l| l.used != 0 && l.tag == tag);
        let i = match found {
            Some(i) => i,
            None => {
                // The empty way, else a pseudo-random one (module docs: why not LRU).
                let victim = (0..WAYS).min_by_key(|&i| ways[i].used).unwrap_or(0);
                let old = ways[victim];
                ways[victim] = Line { tag, used: self.clock, valid: 0, dirty: [0; 4] };
                if old.used != 0 {
                    self.evict(&old);
                }
                victim
            }
        };
        let line = &mut self.lines.get_mut(&set).expect("the set was just touched")[i];
        line.used = self.clock;
        let fetch = |line: &mut Line, read_bytes: &mut u64| {
            // The aligned pair of sectors, whichever are not valid yet (a written byte is newer
            // than DRAM's: the merge keeps it).
            let pair = 0b11u8 << (s & !1);
            let missing = pair & !line.valid;
            *read_bytes += u64::from(missing.count_ones()) * SECTOR_BYTES;
            line.valid |= pair;
        };
        match op {
            Op::Read | Op::Atomic if line.valid & (1 << s) == 0 && line.dirty[s] != u32::MAX => {
                fetch(line, &mut self.read_bytes);
            }
            _ => {}
        }
        match op {
            Op::Read => {}
            Op::Write(mask) => line.dirty[s] |= mask,
            Op::Atomic => line.dirty[s] = u32::MAX,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sectors `0..n` of a buffer at `base`, each read then written whole, in one warp-step each.
    fn stream(l2: u64, n: u64, base: u64, op: Op) -> Trace {
        let mut t = Trace::new(l2);
        t.set_wave(1, 1);
        t.at_warp(0, 0);
        for s in 0..n {
            t.record([(base + s, op)]);
        }
        t
    }

    #[test]
    fn a_stream_larger_than_l2_reads_its_bytes_once() {
        let l2 = 1 << 20;
        let n = 64 << 10; // 2 MiB of sectors
        let (read, written) = stream(l2, n, 0, Op::Read).dram();
        let want = n * SECTOR_BYTES;
        assert!((read as f64 / want as f64 - 1.0).abs() < 0.1, "{read} vs {want}");
        assert_eq!(written, 0);
    }

    #[test]
    fn whole_writes_stay_in_l2_until_evicted() {
        let l2 = 1 << 20;
        // A quarter of the L2 written: nothing reaches DRAM by the end (at half, the hashed sets
        // already overflow here and there, as a set-associative cache's do).
        let (read, written) = stream(l2, (l2 / 4) / SECTOR_BYTES, 0, Op::Write(u32::MAX)).dram();
        assert_eq!((read, written), (0, 0));
        // Eight times the L2: all but about an L2 of it written back, nothing read.
        let n = 8 * l2 / SECTOR_BYTES;
        let (read, written) = stream(l2, n, 0, Op::Write(u32::MAX)).dram();
        assert_eq!(read, 0);
        let bytes = n * SECTOR_BYTES;
        assert!(written <= bytes && written as f64 > 0.8 * bytes as f64, "{written} of {bytes}");
    }

    #[test]
    fn a_partial_sector_is_read_before_it_is_written_back() {
        let l2 = 1 << 20;
        let n = 8 * l2 / SECTOR_BYTES;
        // 4 bytes of each sector: every sector evicted costs a 32-byte read and a 32-byte write.
        let (read, written) = stream(l2, n, 0, Op::Write(0xf)).dram();
        assert_eq!(read, written);
    }

    #[test]
    fn one_sector_of_every_pair_fetches_both() {
        let l2 = 1 << 20;
        let mut t = Trace::new(l2);
        t.set_wave(1, 1);
        t.at_warp(0, 0);
        let pairs = 8 * l2 / FETCH_BYTES;
        for p in 0..pairs {
            t.record([(2 * p, Op::Read)]);
        }
        let (read, _) = t.dram();
        let want = pairs * FETCH_BYTES;
        assert!((read as f64 / want as f64 - 1.0).abs() < 0.1, "{read} vs {want}");
    }

    #[test]
    fn reuse_within_the_l2_hits_and_beyond_it_misses() {
        let l2 = 1 << 20;
        let lines = |bytes: u64| bytes / LINE_BYTES;
        for (span, hits) in [(l2 / 2, true), (4 * l2, false)] {
            let mut t = Trace::new(l2);
            t.set_wave(1, 1);
            t.at_warp(0, 0);
            for _ in 0..4 {
                for line in 0..lines(span) {
                    t.record([(4 * line, Op::Read)]);
                }
            }
            let (read, _) = t.dram();
            let once = lines(span) * FETCH_BYTES;
            let ratio = read as f64 / once as f64;
            if hits {
                assert!(ratio < 1.2, "span {span}: {ratio}");
            } else {
                assert!(ratio > 3.5, "span {span}: {ratio}");
            }
        }
    }

    #[test]
    fn the_order_is_wave_then_step_then_warp() {
        // Two blocks a wave: block 2 (wave 1) after everything of blocks 0 and 1; inside a wave,
        // every warp's step 0 before any step 1.
        let order = |(block, step, warp)| key(2, block, step, warp);
        let mut accesses = [(2, 0, 0), (1, 1, 0), (0, 1, 1), (1, 0, 1), (0, 0, 0), (0, 1, 0)];
        accesses.sort_by_key(|&a| order(a));
        assert_eq!(accesses, [(0, 0, 0), (1, 0, 1), (0, 1, 0), (0, 1, 1), (1, 1, 0), (2, 0, 0)]);
    }

    #[test]
    fn a_warp_that_waits_reads_what_the_warps_before_it_wrote() {
        // Block 0 writes a sector at its third step; block 1 (same wave) reads it back at its
        // first. In step order the read comes first and misses; after `after_all` it hits.
        let run = |wait: bool| {
            let mut trace = Trace::new(1 << 20);
            trace.set_wave(132, 1);
            trace.at_warp(0, 0);
            trace.record([(100, Op::Read)]);
            trace.record([(200, Op::Read)]);
            trace.record([(7, Op::Write(u32::MAX))]);
            trace.at_warp(1, 0);
            if wait {
                trace.after_all();
            }
            trace.record([(7, Op::Read)]);
            trace.dram().0
        };
        assert_eq!((run(false), run(true)), (3 * FETCH_BYTES, 2 * FETCH_BYTES));
    }
}
