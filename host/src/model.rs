//! A transaction model: what Nsight Compute counts for a launch, computed on the CPU from the
//! kernels' own index functions (no GPU).
//!
//! A replay walks the launch a plan made (its [`Call`](crate::Call): grid, block, arguments)
//! warp by warp and, for every memory instruction the kernel's SASS executes, hands the 32 lane
//! addresses to a [`Model`], which counts them the way the hardware does:
//!
//! - **Global loads and stores** ([`Model::load`], [`Model::store`]): one *request* per warp
//!   instruction with at least one active lane (`l1tex__t_requests_pipe_lsu_mem_global_op_{ld,st}`)
//!   and the distinct 32-byte *sectors* its active lanes touch
//!   (`l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}`). Source: the Nsight Compute Kernel
//!   Profiling Guide, "A simplified model for the processing in L1TEX for Volta and newer": a
//!   global instruction sends one request for the whole warp, which accesses a number of sectors
//!   (aligned 32-byte chunks). Every access here is naturally aligned, so a lane's access lies in
//!   one sector.
//! - **Shared memory** ([`Model::shared_load`], [`Model::shared_store`]): 32 banks of 4 bytes.
//!   An access is processed in phases: the whole warp for accesses of 4 bytes or less, each
//!   half-warp for 8-byte accesses and each quarter-warp for 16-byte ones (a phase moves at most
//!   128 bytes, 32 banks × 4 bytes). Within a phase, lanes reading the same 4-byte word share it
//!   (broadcast), and a phase takes as many *wavefronts* as the most distinct words any one bank
//!   must deliver. *Bank conflicts* are the wavefronts beyond the ideal one per phase with an
//!   active lane, which is how `l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}` relates
//!   to `l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}` (NVIDIA developer forum,
//!   "Clarification: bank_conflicts metric vs wavefronts for shared memory LDS.128": LDS.128 needs
//!   4 wavefronts at least, 512 bytes at 128 a wavefront, and the conflict counter holds the
//!   wavefronts past those 4; CUDA C++ Programming Guide, "Shared Memory" of compute capability
//!   5.x and later, for the 32 banks of 32 bits and the broadcast rule).
//! - **Paired shared loads** ([`Model::shared_load`] only): when every active lane reads the
//!   same address as its neighbour `l ^ 1`, or every one the same as `l ^ 2` (a uniform address
//!   is both), the L1 packs two lanes' return registers into one, so an 8- or 16-byte load is
//!   processed in phases of twice the lanes: an LDS.128 takes 2 wavefronts instead of 4
//!   (NVIDIA developer forum, "Unexpected shared memory bank conflict": the rule and its
//!   "4 requests per instruction ... reduce from 4 to 2", stated there for CC 7.0-7.5; the H100's
//!   SASS-attributed wavefronts of `matmul/tiled` and `matmul/regblock` follow it too, see
//!   BENCHMARKS.md). Stores are not paired.
//! - **DRAM** ([`Counts::dram_read_bytes`], [`Counts::dram_write_bytes`]): a lower bound, the
//!   distinct sectors each buffer has read from it and written to it (each sector crosses the DRAM
//!   interface at least once), tracked in bitsets per buffer. It assumes nothing was in L2 before
//!   the launch and counts every written sector as written back.
//!
//! What the model does not know: which accesses hit in L1 or L2 (so DRAM can exceed the bound
//! when lines are evicted and fetched again, or fall short of it when the data was already in L2
//! or written lines stay there when the kernel ends), atomics (`RED`/`ATOM` are neither loads nor
//! stores for these counters; their sector is counted in DRAM only), and arbitration with other
//! traffic in the L1 data banks, which the hardware bank-conflict counters also include.
//!
//! The replays are in this module's children, one per family. Where the launch is uniform they
//! replay a representative and multiply (each says so and why the result is exact).
use crate::buffer::DeviceViewMut;
use std::collections::BTreeMap;

use crate::launch::Launch;

pub mod access_order;
pub mod bank;
pub mod coalescing;
pub mod distance;
pub mod histogram;
pub mod layouts;
pub mod matmul;
pub mod reduce;
pub mod transpose;
pub mod warp;

/// Bytes in a sector, the unit of L1/L2 tags and of `l1tex__t_sectors`.
pub const SECTOR_BYTES: u64 = 32;
/// Shared-memory banks.
pub const BANKS: u32 = 32;
/// Bytes of one shared-memory bank word.
pub const BANK_BYTES: u32 = 4;
/// The SM count the model assumes when none is given: an H100 SXM5 (132 SMs), the GPU
/// BENCHMARKS.md is measured on. Only grid-stride launches sized to the GPU depend on it.
pub const DEFAULT_SMS: u32 = 132;

/// What Nsight Compute counts for one launch, predicted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Warp-level global load instructions with an active lane.
    pub ld_requests: u64,
    /// 32-byte sectors those loads touch.
    pub ld_sectors: u64,
    /// Warp-level global store instructions with an active lane.
    pub st_requests: u64,
    /// 32-byte sectors those stores touch.
    pub st_sectors: u64,
    /// Shared-memory load wavefronts.
    pub shared_ld_wavefronts: u64,
    /// Shared-memory load wavefronts beyond the ideal (bank conflicts).
    pub shared_ld_bank_conflicts: u64,
    /// Shared-memory store wavefronts.
    pub shared_st_wavefronts: u64,
    /// Shared-memory store wavefronts beyond the ideal.
    pub shared_st_bank_conflicts: u64,
    /// Lower bound on DRAM bytes read: distinct sectors loaded, × 32.
    pub dram_read_bytes: u64,
    /// Lower bound on DRAM bytes written: distinct sectors stored, × 32.
    pub dram_write_bytes: u64,
}

impl Counts {
    /// Sectors per global load request (0 without loads).
    pub fn ld_sectors_per_request(&self) -> f64 {
        ratio(self.ld_sectors, self.ld_requests)
    }

    /// Sectors per global store request (0 without stores).
    pub fn st_sectors_per_request(&self) -> f64 {
        ratio(self.st_sectors, self.st_requests)
    }

    /// The instruction counts (requests, sectors, wavefronts, conflicts) `times` over; DRAM bytes
    /// are a property of the whole launch's footprint, not of a repeated part, and stay 0.
    pub fn repeated(&self, times: u64) -> Counts {
        Counts {
            ld_requests: self.ld_requests * times,
            ld_sectors: self.ld_sectors * times,
            st_requests: self.st_requests * times,
            st_sectors: self.st_sectors * times,
            shared_ld_wavefronts: self.shared_ld_wavefronts * times,
            shared_ld_bank_conflicts: self.shared_ld_bank_conflicts * times,
            shared_st_wavefronts: self.shared_st_wavefronts * times,
            shared_st_bank_conflicts: self.shared_st_bank_conflicts * times,
            dram_read_bytes: 0,
            dram_write_bytes: 0,
        }
    }

    /// Field-by-field sum.
    pub fn plus(&self, o: &Counts) -> Counts {
        Counts {
            ld_requests: self.ld_requests + o.ld_requests,
            ld_sectors: self.ld_sectors + o.ld_sectors,
            st_requests: self.st_requests + o.st_requests,
            st_sectors: self.st_sectors + o.st_sectors,
            shared_ld_wavefronts: self.shared_ld_wavefronts + o.shared_ld_wavefronts,
            shared_ld_bank_conflicts: self.shared_ld_bank_conflicts + o.shared_ld_bank_conflicts,
            shared_st_wavefronts: self.shared_st_wavefronts + o.shared_st_wavefronts,
            shared_st_bank_conflicts: self.shared_st_bank_conflicts + o.shared_st_bank_conflicts,
            dram_read_bytes: self.dram_read_bytes + o.dram_read_bytes,
            dram_write_bytes: self.dram_write_bytes + o.dram_write_bytes,
        }
    }

    /// `(name, value)` of every quantity, in the order of the `--json` keys and the ncu table;
    /// the two ratios as `f64`, the rest as integers converted.
    pub fn fields(&self) -> [(&'static str, f64); 12] {
        [
            ("ld_requests", self.ld_requests as f64),
            ("ld_sectors", self.ld_sectors as f64),
            ("st_requests", self.st_requests as f64),
            ("st_sectors", self.st_sectors as f64),
            ("ld_sectors_per_request", self.ld_sectors_per_request()),
            ("st_sectors_per_request", self.st_sectors_per_request()),
            ("shared_ld_wavefronts", self.shared_ld_wavefronts as f64),
            ("shared_ld_bank_conflicts", self.shared_ld_bank_conflicts as f64),
            ("shared_st_wavefronts", self.shared_st_wavefronts as f64),
            ("shared_st_bank_conflicts", self.shared_st_bank_conflicts as f64),
            ("dram_read_bytes", self.dram_read_bytes as f64),
            ("dram_write_bytes", self.dram_write_bytes as f64),
        ]
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// A global buffer of the launch: the device address its pointer argument carries, and its slot
/// in the model's DRAM footprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buffer {
    base: u64,
    slot: usize,
}

impl Buffer {
    /// The device address of element 0.
    pub fn base(&self) -> u64 {
        self.base
    }
}

/// The distinct sectors of one buffer that were touched: one bit per sector from the buffer's
/// first sector on, grown as needed (a 2^26-float buffer takes 1 MiB of bits).
#[derive(Debug, Clone, Default)]
struct SectorSet {
    bits: Vec<u64>,
    count: u64,
}

impl SectorSet {
    /// Marks sector `s` (relative to the buffer's first sector).
    #[inline]
    fn insert(&mut self, s: u64) {
        let (word, bit) = ((s / 64) as usize, 1u64 << (s % 64));
        if word >= self.bits.len() {
            // Grow geometrically so a streaming launch reallocates O(log n) times.
            self.bits.resize((word + 1).max(self.bits.len() * 2), 0);
        }
        let w = &mut self.bits[word];
        if *w & bit == 0 {
            *w |= bit;
            self.count += 1;
        }
    }

    /// Marks sectors `first..=last`.
    fn insert_range(&mut self, first: u64, last: u64) {
        let mut s = first;
        while s <= last {
            // Whole 64-bit words at once where possible.
            if s.is_multiple_of(64) && s + 63 <= last {
                let word = (s / 64) as usize;
                if word >= self.bits.len() {
                    self.bits.resize((word + 1).max(self.bits.len() * 2), 0);
                }
                self.count += u64::from((!self.bits[word]).count_ones());
                self.bits[word] = u64::MAX;
                s += 64;
            } else {
                self.insert(s);
                s += 1;
            }
        }
    }
}

/// Which way a global access goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    Load,
    Store,
}

/// Counts the memory instructions a replay hands it (see the module docs for the rules).
#[derive(Debug, Default)]
pub struct Model {
    counts: Counts,
    /// Per buffer slot: (first sector of the buffer, sectors read, sectors written). `None` when
    /// this model counts instructions only (a representative replayed to be multiplied).
    dram: Option<Vec<(u64, SectorSet, SectorSet)>>,
    /// Buffers by base address, so the same pointer passed twice is one buffer.
    slots: BTreeMap<u64, usize>,
}

impl Model {
    /// A model that also tracks the DRAM footprint of every buffer.
    pub fn new() -> Self {
        Model { counts: Counts::default(), dram: Some(Vec::new()), slots: BTreeMap::new() }
    }

    /// A model that counts instructions only, for a part of a launch replayed once and
    /// multiplied ([`Counts::repeated`]); its DRAM bytes stay 0.
    pub fn instructions_only() -> Self {
        Model { counts: Counts::default(), dram: None, slots: BTreeMap::new() }
    }

    /// The buffer starting at device address `base` (the same address gives the same buffer).
    pub fn buffer(&mut self, base: u64) -> Buffer {
        let next = self.slots.len();
        let slot = *self.slots.entry(base).or_insert(next);
        if let Some(dram) = &mut self.dram
            && slot == dram.len()
        {
            dram.push((base / SECTOR_BYTES, SectorSet::default(), SectorSet::default()));
        }
        Buffer { base, slot }
    }

    /// Adds counts made elsewhere (a repeated part, [`Counts::repeated`]).
    pub fn add(&mut self, counts: &Counts) {
        self.counts = self.counts.plus(counts);
    }

    /// The counts so far, with the DRAM bytes of the footprint.
    pub fn counts(&self) -> Counts {
        let mut c = self.counts;
        if let Some(dram) = &self.dram {
            c.dram_read_bytes = dram.iter().map(|(_, r, _)| r.count).sum::<u64>() * SECTOR_BYTES;
            c.dram_write_bytes = dram.iter().map(|(_, _, w)| w.count).sum::<u64>() * SECTOR_BYTES;
        }
        c
    }

    /// A global load of `width` bytes by the lanes of `active` (bit `l` = lane `l`): `offset(l)`
    /// is lane `l`'s byte offset from `buf`'s start.
    #[inline]
    pub fn load(&mut self, buf: Buffer, width: u32, active: u32, offset: impl Fn(u32) -> u64) {
        self.global(Dir::Load, buf, width, active, offset);
    }

    /// A global store, as [`Model::load`].
    #[inline]
    pub fn store(&mut self, buf: Buffer, width: u32, active: u32, offset: impl Fn(u32) -> u64) {
        self.global(Dir::Store, buf, width, active, offset);
    }

    /// An atomic (`RED`/`ATOM`) on one address by one lane: no load or store request in the
    /// counters above, but the sector is read from and written back to DRAM.
    pub fn atomic(&mut self, buf: Buffer, offset: u64) {
        if let Some(dram) = &mut self.dram {
            let (first, reads, writes) = &mut dram[buf.slot];
            let s = (buf.base + offset) / SECTOR_BYTES - *first;
            reads.insert(s);
            writes.insert(s);
        }
    }

    /// Marks bytes `offset..offset + len` of `buf` as read from DRAM, without counting any
    /// instruction: for a footprint worked out apart from a replay that was multiplied.
    pub fn footprint_read(&mut self, buf: Buffer, offset: u64, len: u64) {
        self.footprint(buf, offset, len, Dir::Load);
    }

    /// As [`Model::footprint_read`], for bytes written.
    pub fn footprint_write(&mut self, buf: Buffer, offset: u64, len: u64) {
        self.footprint(buf, offset, len, Dir::Store);
    }

    fn footprint(&mut self, buf: Buffer, offset: u64, len: u64, dir: Dir) {
        if len == 0 {
            return;
        }
        if let Some(dram) = &mut self.dram {
            let (first, reads, writes) = &mut dram[buf.slot];
            let set = if dir == Dir::Load { reads } else { writes };
            let (a, b) =
                ((buf.base + offset) / SECTOR_BYTES - *first, (buf.base + offset + len - 1) / SECTOR_BYTES - *first);
            set.insert_range(a, b);
        }
    }

    #[inline]
    fn global(&mut self, dir: Dir, buf: Buffer, width: u32, active: u32, offset: impl Fn(u32) -> u64) {
        if active == 0 {
            // A warp instruction whose lanes are all predicated off sends no request.
            return;
        }
        debug_assert!(width.is_power_of_two() && width <= 16);
        let mut sectors = [0u64; 32];
        let mut n = 0;
        let mut sorted = true;
        let mut lanes = active;
        while lanes != 0 {
            let l = lanes.trailing_zeros();
            lanes &= lanes - 1;
            let address = buf.base + offset(l);
            debug_assert!(address.is_multiple_of(u64::from(width)), "unaligned {width}-byte access");
            let s = address / SECTOR_BYTES;
            if n > 0 && s < sectors[n - 1] {
                sorted = false;
            }
            sectors[n] = s;
            n += 1;
        }
        let sectors = &mut sectors[..n];
        if !sorted {
            sectors.sort_unstable();
        }
        let mut distinct = 0u64;
        let mut last = u64::MAX;
        let dram = self.dram.as_mut().map(|d| &mut d[buf.slot]);
        let mut set = dram.map(|(first, r, w)| (*first, if dir == Dir::Load { r } else { w }));
        for &s in sectors.iter() {
            if s != last {
                distinct += 1;
                last = s;
                if let Some((first, set)) = &mut set {
                    set.insert(s - *first);
                }
            }
        }
        match dir {
            Dir::Load => {
                self.counts.ld_requests += 1;
                self.counts.ld_sectors += distinct;
            }
            Dir::Store => {
                self.counts.st_requests += 1;
                self.counts.st_sectors += distinct;
            }
        }
    }

    /// A shared-memory load of `width` bytes by the lanes of `active`; `address(l)` is lane
    /// `l`'s byte address in the block's shared memory. Paired lanes (module docs) halve the
    /// phases of an 8- or 16-byte load.
    #[inline]
    pub fn shared_load(&mut self, width: u32, active: u32, address: impl Fn(u32) -> u32) {
        let (wavefronts, ideal) = shared_load_wavefronts(width, active, address);
        self.counts.shared_ld_wavefronts += wavefronts;
        self.counts.shared_ld_bank_conflicts += wavefronts - ideal;
    }

    /// A shared-memory store, as [`Model::shared_load`].
    #[inline]
    pub fn shared_store(&mut self, width: u32, active: u32, address: impl Fn(u32) -> u32) {
        let (wavefronts, ideal) = shared_wavefronts(width, active, address);
        self.counts.shared_st_wavefronts += wavefronts;
        self.counts.shared_st_bank_conflicts += wavefronts - ideal;
    }
}

/// `(wavefronts, ideal wavefronts)` of one warp-wide shared-memory access of `width` bytes (1, 2,
/// 4, 8 or 16) by the lanes of `active`, lane `l` at byte `address(l)`: the rule in the module
/// docs, without pairing (a store, or a load whose lanes do not pair up).
pub fn shared_wavefronts(width: u32, active: u32, address: impl Fn(u32) -> u32) -> (u64, u64) {
    let words_per_lane = (width / BANK_BYTES).max(1);
    // Lanes per phase: 32 for 4 bytes or less, 16 for 8, 8 for 16.
    wavefronts_in_phases(width, 32 / words_per_lane, active, address)
}

/// As [`shared_wavefronts`], for a load: where the active lanes pair up (module docs) an 8- or
/// 16-byte load is processed in phases of twice the lanes.
pub fn shared_load_wavefronts(width: u32, active: u32, address: impl Fn(u32) -> u32) -> (u64, u64) {
    let words_per_lane = (width / BANK_BYTES).max(1);
    let phase_lanes = 32 / words_per_lane;
    if words_per_lane > 1 && (paired(active, 1, &address) || paired(active, 2, &address)) {
        wavefronts_in_phases(width, 2 * phase_lanes, active, address)
    } else {
        wavefronts_in_phases(width, phase_lanes, active, address)
    }
}

/// Whether every active lane's partner `l ^ bit` is active and reads the same address (an
/// inactive partner is taken as unpaired: the forum's rule does not say, and no kernel here
/// needs it).
fn paired(active: u32, bit: u32, address: &impl Fn(u32) -> u32) -> bool {
    let mut lanes = active;
    while lanes != 0 {
        let l = lanes.trailing_zeros();
        lanes &= lanes - 1;
        if active & (1 << (l ^ bit)) == 0 || address(l) != address(l ^ bit) {
            return false;
        }
    }
    true
}

/// `(wavefronts, ideal)` of an access processed `phase_lanes` lanes at a time.
fn wavefronts_in_phases(width: u32, phase_lanes: u32, active: u32, address: impl Fn(u32) -> u32) -> (u64, u64) {
    debug_assert!(width.is_power_of_two() && width <= 16);
    let words_per_lane = (width / BANK_BYTES).max(1);
    let (mut wavefronts, mut ideal) = (0u64, 0u64);
    let mut phase = 0;
    while phase < 32 {
        let mask = if phase_lanes == 32 { u32::MAX } else { ((1u32 << phase_lanes) - 1) << phase };
        let lanes = active & mask;
        phase += phase_lanes;
        if lanes == 0 {
            continue;
        }
        ideal += 1;
        wavefronts += phase_wavefronts(lanes, words_per_lane, &address);
    }
    (wavefronts, ideal)
}

/// Wavefronts of one phase: the most distinct 4-byte words one bank must deliver.
#[inline]
fn phase_wavefronts(mut lanes: u32, words_per_lane: u32, address: &impl Fn(u32) -> u32) -> u64 {
    // Fast path: each bank asked for one word at most (the common, conflict-free case).
    let mut word_in_bank = [u32::MAX; BANKS as usize];
    // At most 64 words: a paired phase of 16 lanes × 4 words (or 32 × 2).
    let mut words = [0u32; 64];
    let mut n = 0;
    let mut conflict = false;
    while lanes != 0 {
        let l = lanes.trailing_zeros();
        lanes &= lanes - 1;
        let first = address(l) / BANK_BYTES;
        for word in first..first + words_per_lane {
            let bank = (word % BANKS) as usize;
            if word_in_bank[bank] == u32::MAX {
                word_in_bank[bank] = word;
            } else if word_in_bank[bank] != word {
                conflict = true;
            }
            words[n] = word;
            n += 1;
        }
    }
    if !conflict {
        return 1;
    }
    let words = &mut words[..n];
    words.sort_unstable();
    let mut per_bank = [0u64; BANKS as usize];
    let mut last = u32::MAX;
    for &w in words.iter() {
        if w != last {
            per_bank[(w % BANKS) as usize] += 1;
            last = w;
        }
    }
    per_bank.into_iter().max().unwrap_or(1)
}

/// Bit mask of lanes `0..n` (`n <= 32`).
pub const fn lanes_below(n: u32) -> u32 {
    if n >= 32 { u32::MAX } else { (1u32 << n) - 1 }
}

/// The lanes of `candidates` for which `f` holds.
#[inline]
pub fn lanes_where(candidates: u32, f: impl Fn(u32) -> bool) -> u32 {
    let mut out = 0;
    let mut lanes = candidates;
    while lanes != 0 {
        let l = lanes.trailing_zeros();
        lanes &= lanes - 1;
        if f(l) {
            out |= 1 << l;
        }
    }
    out
}

/// Adds `step` to the per-lane loop state `state[l]` of the lanes of `active`: one trip of a
/// loop whose trip count differs between lanes (lanes that left it keep their value).
pub fn advance<T: std::ops::AddAssign + Copy>(state: &mut [T; 32], active: u32, step: T) {
    for (l, v) in state.iter_mut().enumerate() {
        if active & (1 << l) != 0 {
            *v += step;
        }
    }
}

/// One warp of a launch: its block, its index in the block, and which of its 32 lanes exist (a
/// block whose size is not a multiple of 32 has a partial last warp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Warp {
    /// `(blockIdx.x, blockIdx.y)`.
    pub block: (u32, u32),
    /// Warp index inside the block (linear thread id / 32).
    pub index: u32,
    /// `(blockDim.x, blockDim.y)`.
    pub block_dim: (u32, u32),
    /// Lanes that are threads of the block.
    pub lanes: u32,
}

impl Warp {
    /// Linear thread id in the block of lane `l` (`threadIdx.y * blockDim.x + threadIdx.x`,
    /// x fastest, the order warps are formed in).
    #[inline]
    pub fn linear(&self, l: u32) -> u32 {
        self.index * 32 + l
    }

    /// `(threadIdx.x, threadIdx.y)` of lane `l`.
    #[inline]
    pub fn thread(&self, l: u32) -> (u32, u32) {
        let t = self.linear(l);
        // 1-D blocks, the common case, without a division per lane.
        if self.block_dim.1 == 1 { (t, 0) } else { (t % self.block_dim.0, t / self.block_dim.0) }
    }

    /// `blockIdx.x * blockDim.x + threadIdx.x` of lane `l`: the prelude's `thread::index_1d`.
    #[inline]
    pub fn index_1d(&self, l: u32) -> u32 {
        self.block.0 * self.block_dim.0 + self.thread(l).0
    }
}

/// The warps of one block of `launch` (a block is at most `u32::MAX` threads here; past
/// [`coalesce_kernels::launch::MAX_BLOCK_THREADS`] the driver refuses it anyway).
pub fn block_warps(launch: &Launch, block: (u32, u32)) -> impl Iterator<Item = Warp> {
    let threads = u32::try_from(launch.block_threads()).unwrap_or(u32::MAX);
    let block_dim = launch.block;
    (0..threads.div_ceil(32)).map(move |index| Warp {
        block,
        index,
        block_dim,
        lanes: lanes_below(threads - index * 32),
    })
}

/// Every block of `launch`, x fastest.
pub fn blocks(launch: &Launch) -> impl Iterator<Item = (u32, u32)> {
    let (gx, gy) = launch.grid;
    (0..gy).flat_map(move |y| (0..gx).map(move |x| (x, y)))
}

/// Every warp of `launch`, block by block.
pub fn warps(launch: &Launch) -> impl Iterator<Item = Warp> + '_ {
    blocks(launch).flat_map(move |b| block_warps(launch, b))
}

/// Fake device addresses for planning a launch without a GPU: buffer `i` starts at
/// `FAKE_BASE + i * FAKE_SPACING`, 2 MiB aligned (as the driver aligns allocations of 2 MiB and
/// more; the counts only depend on the alignment modulo 128 bytes, which every allocation has)
/// and 64 GiB apart, more than any lesson buffer spans.
pub const FAKE_BASE: u64 = 0x10_0000_0000;
/// See [`FAKE_BASE`].
pub const FAKE_SPACING: u64 = 64 << 30;

/// A stand-in of `len` elements at fake buffer `i`'s address, for plans the model replays and
/// never launches.
pub(crate) fn fake_slice<T: cust::memory::DeviceCopy>(i: u64, len: usize) -> DeviceViewMut<'static, T> {
    // SAFETY: the model only plans calls over these stand-ins and replays them on the CPU;
    // nothing reads or writes through them (and the launches and copies refuse them).
    unsafe { DeviceViewMut::stand_in(FAKE_BASE + i * FAKE_SPACING, len) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn global(width: u32, active: u32, offset: impl Fn(u32) -> u64) -> Counts {
        let mut m = Model::new();
        let b = m.buffer(1 << 21);
        m.load(b, width, active, offset);
        m.counts()
    }

    #[test]
    fn sectors_are_distinct_32_byte_chunks_of_active_lanes() {
        assert_eq!(global(4, u32::MAX, |l| 4 * u64::from(l)).ld_sectors, 4);
        assert_eq!(global(4, u32::MAX, |l| 4 * u64::from(l) + 4).ld_sectors, 5);
        assert_eq!(global(4, u32::MAX, |_| 64).ld_sectors, 1);
        assert_eq!(global(16, u32::MAX, |l| 16 * u64::from(l)).ld_sectors, 16);
        // Unsorted lanes: the same sectors.
        assert_eq!(global(4, u32::MAX, |l| 4 * u64::from(31 - l)).ld_sectors, 4);
        let none = global(4, 0, |l| 4 * u64::from(l));
        assert_eq!((none.ld_requests, none.ld_sectors), (0, 0));
        assert_eq!(global(4, 0b1, |l| 4 * u64::from(l)).dram_read_bytes, 32);
    }

    #[test]
    fn shared_phases_follow_the_access_width() {
        let wf = |width, f: &dyn Fn(u32) -> u32| shared_wavefronts(width, u32::MAX, f);
        assert_eq!(wf(4, &|l| 4 * l), (1, 1));
        assert_eq!(wf(4, &|_| 0), (1, 1), "broadcast");
        assert_eq!(wf(4, &|l| 128 * l), (32, 1));
        assert_eq!(wf(8, &|l| 8 * l), (2, 2));
        assert_eq!(wf(16, &|l| 16 * l), (4, 4));
        assert_eq!(wf(16, &|_| 0), (4, 4));
        // Lanes 16 bytes x 32 apart: all quarter-warp lanes on banks 0-3, 8 words each.
        assert_eq!(wf(16, &|l| 512 * l), (32, 4));
        assert_eq!(shared_wavefronts(4, 0, |l| l), (0, 0));
    }

    #[test]
    fn paired_loads_take_half_the_phases() {
        let load = |width, f: &dyn Fn(u32) -> u32| shared_load_wavefronts(width, u32::MAX, f);
        // A uniform LDS.128: 2 wavefronts (stores and unpaired loads keep 4).
        assert_eq!(load(16, &|_| 0), (2, 2));
        assert_eq!(shared_wavefronts(16, u32::MAX, |_| 0), (4, 4));
        // Half-warps on one vector each (regblock's A fragments): pairs l ^ 1 agree.
        assert_eq!(load(16, &|l| 16 * (l / 16)), (2, 2));
        // Pairs l ^ 2 agree.
        assert_eq!(load(16, &|l| 16 * ((l & 1) | ((l >> 2) << 1))), (2, 2));
        // Consecutive vectors do not pair: 4, as before.
        assert_eq!(load(16, &|l| 16 * l), (4, 4));
        // The forum thread's pattern `(l % 4) * 16` pairs neither way: 4 wavefronts.
        assert_eq!(load(16, &|l| 16 * (l % 4)), (4, 4));
        // 8-byte uniform: one phase.
        assert_eq!(load(8, &|_| 0), (1, 1));
        // 4-byte loads have one phase anyway.
        assert_eq!(load(4, &|_| 0), (1, 1));
        // An inactive partner: unpaired.
        assert_eq!(shared_load_wavefronts(16, 0x5555_5555, |l| 16 * l), (4, 4));
    }

    #[test]
    fn footprints_count_each_sector_once() {
        let mut m = Model::new();
        let b = m.buffer(1 << 21);
        m.footprint_read(b, 0, 4096);
        m.footprint_read(b, 4, 8);
        m.footprint_write(b, 30, 4);
        assert_eq!((m.counts().dram_read_bytes, m.counts().dram_write_bytes), (4096, 64));
        let mut set = SectorSet::default();
        set.insert_range(3, 200);
        set.insert_range(0, 70);
        assert_eq!(set.count, 201);
    }
}
