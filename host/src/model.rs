//! A transaction model: what Nsight Compute counts for a launch, computed on the CPU from the
//! kernels' own index functions (no GPU).
//!
//! A replay walks the launch a plan made (its [`Call`](crate::launch::Call): grid, block, arguments)
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
//! - **DRAM** ([`Counts::dram_read_bytes`], [`Counts::dram_write_bytes`]): every sector the
//!   replay sends past L1 (loads, stores with the bytes they write, atomics) is recorded with the
//!   warp and the step it belongs to, and followed through an L2 of the device's size in the order
//!   the GPU runs it ([`l2`]: waves of resident blocks, every warp's step before the next): read
//!   misses fetch 64-byte pairs, dirty lines are written back when evicted (a sector only partly
//!   written is read first), and what is dirty at the end stays in L2. Nothing is in L2 before
//!   the launch. The matmul family streams its tiles instead of replaying every warp.
//!
//! What the model does not know: which accesses hit in L1 (every access is taken to reach L2,
//! which changes no DRAM byte), atomics in the request counters (`RED`/`ATOM` are neither loads
//! nor stores for them; they reach the L2 model), and arbitration with other traffic in the L1
//! data banks, which the hardware bank-conflict counters also include.
//!
//! The replays are in this module's children, one per family, but the matmul stages': each
//! replays its kernels in its own stage file (`host/src/matmul/<id>.rs`), over what they share
//! in `model::matmul`. Where the launch is uniform they replay a representative and multiply
//! (each says so and why the result is exact).
use crate::buffer::DeviceViewMut;
use std::collections::BTreeMap;

use std::cell::Cell;

use crate::error::{Error, Result, aligned};
use crate::launch::Launch;
pub(crate) use l2::{Op, Trace};

pub mod access_order;
pub mod bank;
pub mod coalescing;
pub mod distance;
pub mod histogram;
pub mod l2;
pub mod layouts;
pub(crate) mod matmul;
pub mod reduce;
pub mod shape;
pub mod transpose;
pub mod warp;

/// Bytes in a sector, the unit of L1/L2 tags and of `l1tex__t_sectors`.
pub const SECTOR_BYTES: u64 = 32;
/// Shared-memory banks.
pub(crate) const BANKS: u32 = 32;
/// Bytes of one shared-memory bank word.
pub(crate) const BANK_BYTES: u32 = 4;
/// Most bytes past its base that an access of a [`Model`] buffer may reach: 64 GiB, the room
/// each of the model's fake buffers is given, more than any lesson buffer spans: an offset past
/// it is [`Error::OutOfRange`].
pub const MAX_BUFFER_BYTES: u64 = FAKE_SPACING;
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
    /// DRAM bytes read: L2 misses (64-byte pairs) and partial sectors merged at write-back.
    pub dram_read_bytes: u64,
    /// DRAM bytes written: dirty sectors the L2 evicts during the launch.
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
    /// [`Error::OutOfRange`] (naming the field) where a count times `times` passes `u64`.
    pub(crate) fn repeated(&self, times: u64) -> Result<Counts> {
        let times_over = |what, count: u64| {
            count.checked_mul(times).ok_or_else(|| Error::OutOfRange {
                what,
                value: times,
                min: 0,
                max: u64::MAX / count,
            })
        };
        let mut c = self.each(self, |what, a, _| times_over(what, a))?;
        (c.dram_read_bytes, c.dram_write_bytes) = (0, 0);
        Ok(c)
    }

    /// Field-by-field sum; [`Error::OutOfRange`] (naming the field) where one passes `u64`.
    pub fn plus(&self, o: &Counts) -> Result<Counts> {
        self.each(o, |what, a, b| {
            a.checked_add(b).ok_or_else(|| Error::OutOfRange { what, value: b, min: 0, max: u64::MAX - a })
        })
    }

    /// `f(name, self's, o's)` for every field, named as in [`Counts::fields`].
    fn each(&self, o: &Counts, f: impl Fn(&'static str, u64, u64) -> Result<u64>) -> Result<Counts> {
        Ok(Counts {
            ld_requests: f("ld_requests", self.ld_requests, o.ld_requests)?,
            ld_sectors: f("ld_sectors", self.ld_sectors, o.ld_sectors)?,
            st_requests: f("st_requests", self.st_requests, o.st_requests)?,
            st_sectors: f("st_sectors", self.st_sectors, o.st_sectors)?,
            shared_ld_wavefronts: f("shared_ld_wavefronts", self.shared_ld_wavefronts, o.shared_ld_wavefronts)?,
            shared_ld_bank_conflicts: f(
                "shared_ld_bank_conflicts",
                self.shared_ld_bank_conflicts,
                o.shared_ld_bank_conflicts,
            )?,
            shared_st_wavefronts: f("shared_st_wavefronts", self.shared_st_wavefronts, o.shared_st_wavefronts)?,
            shared_st_bank_conflicts: f(
                "shared_st_bank_conflicts",
                self.shared_st_bank_conflicts,
                o.shared_st_bank_conflicts,
            )?,
            dram_read_bytes: f("dram_read_bytes", self.dram_read_bytes, o.dram_read_bytes)?,
            dram_write_bytes: f("dram_write_bytes", self.dram_write_bytes, o.dram_write_bytes)?,
        })
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
/// among the model's buffers.
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
    /// The sectors sent past L1, in the GPU's order, for the L2 and DRAM columns (`l2`). `None`
    /// when this model counts instructions only (a representative replayed to be multiplied).
    dram: Option<Trace>,
    /// Buffers by base address, so the same pointer passed twice is one buffer.
    slots: BTreeMap<u64, usize>,
    /// Base address by slot: a [`Buffer`] is this model's if its slot holds its base.
    bases: Vec<u64>,
}

impl Model {
    /// A model that also follows its accesses through L2 to DRAM.
    pub fn new() -> Self {
        Model { dram: Some(Trace::new(device().l2_bytes)), ..Model::default() }
    }

    /// A model that counts instructions only, for a part of a launch replayed once and
    /// multiplied ([`Counts::repeated`]); its DRAM bytes stay 0.
    pub(crate) fn instructions_only() -> Self {
        Model::default()
    }

    /// The buffer starting at device address `base` (the same address gives the same buffer).
    /// The access methods take this model's buffers only ([`Error::ForeignBuffer`]), at offsets
    /// below [`MAX_BUFFER_BYTES`] that do not pass `u64::MAX` ([`Error::OutOfRange`]).
    pub fn buffer(&mut self, base: u64) -> Buffer {
        let next = self.slots.len();
        let slot = *self.slots.entry(base).or_insert(next);
        if slot == self.bases.len() {
            self.bases.push(base);
        }
        Buffer { base, slot }
    }

    /// `buf`'s address `offset` bytes in: [`Error::ForeignBuffer`] unless this model made `buf`,
    /// [`Error::OutOfRange`] for an offset at or past [`MAX_BUFFER_BYTES`] or an address past
    /// `u64::MAX`.
    #[inline]
    fn address(&self, buf: Buffer, offset: u64) -> Result<u64> {
        if self.bases.get(buf.slot) != Some(&buf.base) {
            return Err(Error::ForeignBuffer { base: buf.base });
        }
        match buf.base.checked_add(offset) {
            Some(address) if offset < MAX_BUFFER_BYTES => Ok(address),
            _ => Err(Error::OutOfRange {
                what: "model buffer offset",
                value: offset,
                min: 0,
                max: (MAX_BUFFER_BYTES - 1).min(u64::MAX - buf.base),
            }),
        }
    }

    /// Adds counts made elsewhere (a repeated part, [`Counts::repeated`]); [`Error::OutOfRange`]
    /// where a total passes `u64`.
    pub(crate) fn add(&mut self, counts: &Counts) -> Result<()> {
        self.counts = self.counts.plus(counts)?;
        Ok(())
    }

    /// The counts so far, with the DRAM bytes of the accesses followed through the L2 of the
    /// device the model runs for ([`on_device`]).
    pub fn counts(&self) -> Counts {
        let mut c = self.counts;
        if let Some(trace) = &self.dram {
            (c.dram_read_bytes, c.dram_write_bytes) = trace.dram();
        }
        c
    }

    /// The trace, for replays that place their accesses themselves (whole tiles), with its wave
    /// of `per_sm` blocks a multiprocessor; `None` for an instructions-only model.
    pub(crate) fn tile_trace(&mut self, per_sm: u32) -> Option<&mut Trace> {
        let trace = self.dram.as_mut()?;
        trace.set_wave(device().sms, per_sm);
        Some(trace)
    }

    /// The trace, placed at the warp the replay is walking (`warps`, `block_warps`), its wave
    /// sized for the launch on the device the model runs for.
    #[inline]
    fn trace(&mut self) -> Option<&mut Trace> {
        let trace = self.dram.as_mut()?;
        let (block, warp, wave) = WALK.with(Cell::get);
        trace.set_wave(device().sms, wave);
        trace.at_warp(block, warp);
        Some(trace)
    }

    /// The warp the replay is walking waits for every access replayed before it (a flag other
    /// blocks set): its accesses that follow reach L2 after theirs ([`Trace::after_all`]).
    pub(crate) fn wait_for_earlier(&mut self) {
        if let Some(trace) = self.trace() {
            trace.after_all();
        }
    }

    /// A global load of `width` bytes (1, 2, 4, 8 or 16, else [`Error::Unsupported`]) by the
    /// lanes of `active` (bit `l` = lane `l`): `offset(l)` is lane `l`'s byte offset from
    /// `buf`'s start, a multiple of `width` ([`Error::Misaligned`]: every access the model
    /// counts lies in one sector). Errors as [`Model::buffer`] says for `buf` and the offsets;
    /// on an error the counters are left as they were.
    #[inline]
    pub fn load(&mut self, buf: Buffer, width: u32, active: u32, offset: impl Fn(u32) -> u64) -> Result<()> {
        self.global(Dir::Load, buf, width, active, offset)
    }

    /// A global store, as [`Model::load`].
    #[inline]
    pub fn store(&mut self, buf: Buffer, width: u32, active: u32, offset: impl Fn(u32) -> u64) -> Result<()> {
        self.global(Dir::Store, buf, width, active, offset)
    }

    /// An atomic (`RED`/`ATOM`) on one address by one lane: no load or store request in the
    /// counters above; in L2, a read (fetched on a miss) and a write of its sector. Errors as
    /// [`Model::buffer`] says.
    pub fn atomic(&mut self, buf: Buffer, offset: u64) -> Result<()> {
        let address = self.address(buf, offset)?;
        shape::saw_atomic(address);
        if let Some(trace) = self.trace() {
            trace.record([(address / SECTOR_BYTES, Op::Atomic)]);
        }
        Ok(())
    }

    /// Sends bytes `offset..offset + len` of `buf` to the L2 model as read, in address order,
    /// without counting any instruction: for a footprint worked out apart from a replay that was
    /// multiplied. Errors as [`Model::buffer`] says, for the last byte's offset.
    pub(crate) fn footprint_read(&mut self, buf: Buffer, offset: u64, len: u64) -> Result<()> {
        self.footprint(buf, offset, len, Dir::Load)
    }

    /// As [`Model::footprint_read`], for bytes written.
    pub(crate) fn footprint_write(&mut self, buf: Buffer, offset: u64, len: u64) -> Result<()> {
        self.footprint(buf, offset, len, Dir::Store)
    }

    fn footprint(&mut self, buf: Buffer, offset: u64, len: u64, dir: Dir) -> Result<()> {
        self.address(buf, 0)?;
        let Some(len_less_one) = len.checked_sub(1) else {
            return Ok(());
        };
        let first_byte = self.address(buf, offset)?;
        let last_byte = self.address(buf, offset.saturating_add(len_less_one))?;
        if let Some(trace) = &mut self.dram {
            trace.record_bytes(first_byte, last_byte + 1, dir == Dir::Store);
        }
        Ok(())
    }

    #[inline]
    fn global(&mut self, dir: Dir, buf: Buffer, width: u32, active: u32, offset: impl Fn(u32) -> u64) -> Result<()> {
        access_width("global", width)?;
        // Checked even without lanes: a buffer of another model is a mistake either way.
        self.address(buf, 0)?;
        if active == 0 {
            // A warp instruction whose lanes are all predicated off sends no request.
            return Ok(());
        }
        // Each lane's address, as its sector and the bytes it covers there.
        let mut sectors = [(0u64, 0u32); 32];
        let mut n = 0;
        let mut sorted = true;
        let mut lanes = active;
        while lanes != 0 {
            let l = lanes.trailing_zeros();
            lanes &= lanes - 1;
            let address = self.address(buf, offset(l))?;
            aligned("model global access", address, u64::from(width))?;
            let s = address / SECTOR_BYTES;
            if n > 0 && s < sectors[n - 1].0 {
                sorted = false;
            }
            sectors[n] = (s, byte_mask(address % SECTOR_BYTES, u64::from(width)));
            n += 1;
        }
        let sectors = &mut sectors[..n];
        if !sorted {
            sectors.sort_unstable_by_key(|&(s, _)| s);
        }
        // The distinct sectors with their lanes' bytes merged, in place.
        let mut distinct = 0usize;
        for i in 0..n {
            if distinct > 0 && sectors[distinct - 1].0 == sectors[i].0 {
                sectors[distinct - 1].1 |= sectors[i].1;
            } else {
                sectors[distinct] = sectors[i];
                distinct += 1;
            }
        }
        if let Some(trace) = self.trace() {
            let op = |mask| if dir == Dir::Load { Op::Read } else { Op::Write(mask) };
            trace.record(sectors[..distinct].iter().map(|&(s, mask)| (s, op(mask))));
        }
        if dir == Dir::Load {
            shape::saw_load(WALK.with(Cell::get).0, sectors[..distinct].iter().map(|&(s, _)| s));
        }
        let distinct = distinct as u64;
        // One request and at most 32 sectors an instruction: 2^59 instructions before a wrap.
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
        Ok(())
    }

    /// A shared-memory load of `width` bytes (1, 2, 4, 8 or 16, else [`Error::Unsupported`])
    /// by the lanes of `active`; `address(l)` is lane `l`'s byte address in the block's shared
    /// memory. Paired lanes (module docs) halve the phases of an 8- or 16-byte load.
    #[inline]
    pub fn shared_load(&mut self, width: u32, active: u32, address: impl Fn(u32) -> u32) -> Result<()> {
        let (wavefronts, ideal) = shared_load_wavefronts(width, active, address)?;
        self.counts.shared_ld_wavefronts += wavefronts;
        self.counts.shared_ld_bank_conflicts += wavefronts - ideal;
        Ok(())
    }

    /// A shared-memory store, as [`Model::shared_load`].
    #[inline]
    pub fn shared_store(&mut self, width: u32, active: u32, address: impl Fn(u32) -> u32) -> Result<()> {
        let (wavefronts, ideal) = shared_wavefronts(width, active, address)?;
        self.counts.shared_st_wavefronts += wavefronts;
        self.counts.shared_st_bank_conflicts += wavefronts - ideal;
        Ok(())
    }
}

/// Checks that an access moves 1, 2, 4, 8 or 16 bytes a lane: the widths of the load and store
/// instructions, and those the phase rule (module docs) is stated for. A wider one would make a
/// phase of no lanes (the phase loop never ended).
fn access_width(what: &'static str, width: u32) -> Result<()> {
    if width.is_power_of_two() && width <= 16 {
        Ok(())
    } else {
        Err(Error::Unsupported(format!("a {width}-byte {what} access: lanes move 1, 2, 4, 8 or 16 bytes")))
    }
}

/// `(wavefronts, ideal wavefronts)` of one warp-wide shared-memory access of `width` bytes (1, 2,
/// 4, 8 or 16, else [`Error::Unsupported`]) by the lanes of `active`, lane `l` at byte
/// `address(l)`: the rule in the module docs, without pairing (a store, or a load whose lanes do
/// not pair up).
pub fn shared_wavefronts(width: u32, active: u32, address: impl Fn(u32) -> u32) -> Result<(u64, u64)> {
    access_width("shared", width)?;
    let words_per_lane = (width / BANK_BYTES).max(1);
    // Lanes per phase: 32 for 4 bytes or less, 16 for 8, 8 for 16.
    Ok(wavefronts_in_phases(width, 32 / words_per_lane, active, address))
}

/// As [`shared_wavefronts`], for a load: where the active lanes pair up (module docs) an 8- or
/// 16-byte load is processed in phases of twice the lanes.
pub(crate) fn shared_load_wavefronts(width: u32, active: u32, address: impl Fn(u32) -> u32) -> Result<(u64, u64)> {
    access_width("shared", width)?;
    let words_per_lane = (width / BANK_BYTES).max(1);
    let phase_lanes = 32 / words_per_lane;
    Ok(if words_per_lane > 1 && (paired(active, 1, &address) || paired(active, 2, &address)) {
        wavefronts_in_phases(width, 2 * phase_lanes, active, address)
    } else {
        wavefronts_in_phases(width, phase_lanes, active, address)
    })
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

/// `(wavefronts, ideal)` of an access processed `phase_lanes` lanes at a time (a width
/// [`access_width`] takes: 8 to 32 lanes).
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
pub(crate) const fn lanes_below(n: u32) -> u32 {
    if n >= 32 { u32::MAX } else { (1u32 << n) - 1 }
}

/// The lanes of `candidates` for which `f` holds.
#[inline]
pub(crate) fn lanes_where(candidates: u32, f: impl Fn(u32) -> bool) -> u32 {
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
/// [`Error::OutOfRange`] where a lane's value would pass its type (and `state` is left as it
/// was): the kernel's index would wrap there, and a replay stepping a wrapped index below its
/// bound again would never end.
pub(crate) fn advance<T: LaneIndex>(state: &mut [T; 32], active: u32, step: T) -> Result<()> {
    let mut next = *state;
    for (l, v) in next.iter_mut().enumerate() {
        if active & (1 << l) != 0 {
            *v = v.checked_plus(step).ok_or_else(|| Error::OutOfRange {
                what: "lane loop index",
                value: v.widen(),
                min: 0,
                max: T::MAX.widen() - step.widen(),
            })?;
        }
    }
    *state = next;
    Ok(())
}

/// A per-lane loop index [`advance`] steps: `u32` or `u64`.
pub(crate) trait LaneIndex: Copy + sealed::Sealed {
    /// The largest value.
    const MAX: Self;
    /// `self + step`, `None` past [`LaneIndex::MAX`].
    fn checked_plus(self, step: Self) -> Option<Self>;
    /// The value as a `u64`.
    fn widen(self) -> u64;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

impl LaneIndex for u32 {
    const MAX: u32 = u32::MAX;
    fn checked_plus(self, step: u32) -> Option<u32> {
        self.checked_add(step)
    }
    fn widen(self) -> u64 {
        self.into()
    }
}

impl LaneIndex for u64 {
    const MAX: u64 = u64::MAX;
    fn checked_plus(self, step: u64) -> Option<u64> {
        self.checked_add(step)
    }
    fn widen(self) -> u64 {
        self
    }
}

/// One warp of a launch: its block, its index in the block, and which of its 32 lanes exist (a
/// block whose size is not a multiple of 32 has a partial last warp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Warp {
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
    /// x fastest, the order warps are formed in). In `u32` arithmetic that wraps, as the GPU's
    /// would: a block holds at most 1024 threads, so only a warp set by hand gets that far.
    #[inline]
    pub fn linear(&self, l: u32) -> u32 {
        self.index.wrapping_mul(32).wrapping_add(l)
    }

    /// `(threadIdx.x, threadIdx.y)` of lane `l`. A block of no columns (`block_dim.0 == 0`: no
    /// launch has one, [`block_warps`] makes no warp of it) is taken as 1-D.
    #[inline]
    pub fn thread(&self, l: u32) -> (u32, u32) {
        let t = self.linear(l);
        // 1-D blocks, the common case, without a division per lane.
        match (self.block_dim.1, t.checked_div(self.block_dim.0)) {
            (1, _) | (_, None) => (t, 0),
            (_, Some(y)) => (t % self.block_dim.0, y),
        }
    }

    /// `blockIdx.x * blockDim.x + threadIdx.x` of lane `l`: the prelude's `thread::index_1d`, in
    /// the same `u32` arithmetic, which wraps on the GPU too.
    #[inline]
    pub fn index_1d(&self, l: u32) -> u32 {
        self.block.0.wrapping_mul(self.block_dim.0).wrapping_add(self.thread(l).0)
    }
}

/// The warps of one block of `launch` (a block is at most `u32::MAX` threads here; past
/// [`coalesce_kernels::launch::MAX_BLOCK_THREADS`] the driver refuses it anyway).
pub(crate) fn block_warps(launch: &Launch, block: (u32, u32)) -> impl Iterator<Item = Warp> {
    let threads = u32::try_from(launch.block_threads()).unwrap_or(u32::MAX);
    let block_dim = launch.block;
    let linear = u64::from(block.1) * u64::from(launch.grid.0) + u64::from(block.0);
    let per_sm = blocks_per_sm(launch);
    shape::saw_launch(launch, per_sm);
    (0..threads.div_ceil(32)).map(move |index| {
        // The L2 trace places the accesses that follow at this warp (`Model::trace`).
        WALK.with(|w| w.set((linear, index, per_sm)));
        Warp { block, index, block_dim, lanes: lanes_below(threads - index * 32) }
    })
}

// The warp a replay is walking, `(linear block id, warp in the block, blocks of its launch
// resident on one multiprocessor)`, as the warp iterators last handed it out: what the L2 trace
// orders accesses by, without every replay passing it along.
thread_local! {
    static WALK: Cell<(u64, u32, u32)> = const { Cell::new((0, 0, 1)) };
}

/// Blocks of `launch` one multiprocessor holds at once, by the limits the launch shows: 32 blocks,
/// 2048 threads and 228 KiB of shared memory (Hopper; the registers a kernel takes are not known
/// here, so a kernel limited by them is taken as fuller than it is).
pub(crate) fn blocks_per_sm(launch: &Launch) -> u32 {
    let threads = launch.block_threads().max(1);
    let by_threads = (2048 / threads).max(1);
    let by_shared = if launch.shared_bytes == 0 { 32 } else { (228 * 1024 / u64::from(launch.shared_bytes)).max(1) };
    by_threads.min(by_shared).min(32) as u32
}

/// The device the model follows memory on: its multiprocessors (the waves) and its L2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Device {
    /// Streaming multiprocessors.
    pub sms: u32,
    /// L2 bytes (`CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE`).
    pub l2_bytes: u64,
}

impl Device {
    /// `gpu` as the model sees it: its multiprocessors and its L2.
    pub fn of(gpu: &crate::DeviceInfo) -> Device {
        Device { sms: gpu.multiprocessors, l2_bytes: gpu.l2_bytes }
    }
}

impl Default for Device {
    /// An H100 SXM5 (or an H200): 132 SMs, 50 MiB of L2.
    fn default() -> Self {
        Device { sms: DEFAULT_SMS, l2_bytes: l2::DEFAULT_L2_BYTES }
    }
}

thread_local! {
    static DEVICE: Cell<Device> = Cell::new(Device::default());
}

/// The device the model runs for on this thread ([`on_device`]; an H100 otherwise).
pub(crate) fn device() -> Device {
    DEVICE.with(Cell::get)
}

/// Runs `f` with the model following memory on `device` (this thread only), then restores the
/// one before.
pub fn on_device<R>(device: Device, f: impl FnOnce() -> R) -> R {
    let before = DEVICE.with(|d| d.replace(device));
    let result = f();
    DEVICE.with(|d| d.set(before));
    result
}

/// Bit `b` set for bytes `offset..offset + width` of a sector (bit 0 = its first byte).
#[inline]
pub(crate) fn byte_mask(offset: u64, width: u64) -> u32 {
    let bits = if width >= 32 { u32::MAX } else { (1u32 << width) - 1 };
    bits << (offset % SECTOR_BYTES)
}

/// Every block of `launch`, x fastest.
pub(crate) fn blocks(launch: &Launch) -> impl Iterator<Item = (u32, u32)> {
    let (gx, gy) = launch.grid;
    (0..gy).flat_map(move |y| (0..gx).map(move |x| (x, y)))
}

/// Every warp of `launch`, block by block.
pub(crate) fn warps(launch: &Launch) -> impl Iterator<Item = Warp> + '_ {
    blocks(launch).flat_map(move |b| block_warps(launch, b))
}

/// The error of a replay handed a call of a kernel it does not replay (a [`Call`](crate::launch::Call)
/// made with `Call::new` over another kernel of the same parameter list).
pub(crate) fn no_replay(kernel: &str) -> Error {
    Error::Unsupported(format!("the model has no replay of kernel {kernel} here"))
}

/// Fake device addresses for planning a launch without a GPU: buffer `i` starts at
/// `FAKE_BASE + i * FAKE_SPACING`, 2 MiB aligned (as the driver aligns allocations of 2 MiB and
/// more; the counts only depend on the alignment modulo 128 bytes, which every allocation has)
/// and 64 GiB apart, more than any lesson buffer spans.
pub(crate) const FAKE_BASE: u64 = 0x10_0000_0000;
/// See [`FAKE_BASE`].
pub(crate) const FAKE_SPACING: u64 = 64 << 30;

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
        m.load(b, width, active, offset).unwrap();
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
        // One lane's sector: its aligned pair comes from DRAM (the L2's 64-byte fetch).
        assert_eq!(global(4, 0b1, |l| 4 * u64::from(l)).dram_read_bytes, 64);
    }

    #[test]
    fn shared_phases_follow_the_access_width() {
        let wf = |width, f: &dyn Fn(u32) -> u32| shared_wavefronts(width, u32::MAX, f).unwrap();
        assert_eq!(wf(4, &|l| 4 * l), (1, 1));
        assert_eq!(wf(4, &|_| 0), (1, 1), "broadcast");
        assert_eq!(wf(4, &|l| 128 * l), (32, 1));
        assert_eq!(wf(8, &|l| 8 * l), (2, 2));
        assert_eq!(wf(16, &|l| 16 * l), (4, 4));
        assert_eq!(wf(16, &|_| 0), (4, 4));
        // Lanes 16 bytes x 32 apart: all quarter-warp lanes on banks 0-3, 8 words each.
        assert_eq!(wf(16, &|l| 512 * l), (32, 4));
        assert_eq!(shared_wavefronts(4, 0, |l| l), Ok((0, 0)));
    }

    #[test]
    fn paired_loads_take_half_the_phases() {
        let load = |width, f: &dyn Fn(u32) -> u32| shared_load_wavefronts(width, u32::MAX, f).unwrap();
        // A uniform LDS.128: 2 wavefronts (stores and unpaired loads keep 4).
        assert_eq!(load(16, &|_| 0), (2, 2));
        assert_eq!(shared_wavefronts(16, u32::MAX, |_| 0), Ok((4, 4)));
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
        assert_eq!(shared_load_wavefronts(16, 0x5555_5555, |l| 16 * l), Ok((4, 4)));
    }

    #[test]
    fn footprints_read_each_sector_once_and_writes_stay_in_l2() {
        let mut m = Model::new();
        let b = m.buffer(1 << 21);
        m.footprint_read(b, 0, 4096).unwrap();
        m.footprint_read(b, 4, 8).unwrap();
        m.footprint_write(b, 30, 4).unwrap();
        // 4 KiB read once (the second range hits), and one sector written back? No: the launch
        // ends with it dirty in L2, so no DRAM write; the two sectors of bytes 30..34 are
        // partly written and stay there too.
        assert_eq!((m.counts().dram_read_bytes, m.counts().dram_write_bytes), (4096, 0));
    }

    #[test]
    fn shared_accesses_wider_than_16_bytes_are_refused_not_a_hang() {
        // 256 bytes a lane made phases of 0 lanes: the phase loop never ended in release.
        for width in [256, 32, 0, 3, u32::MAX] {
            let refused = shared_wavefronts(width, u32::MAX, |l| 256 * l);
            assert!(matches!(&refused, Err(Error::Unsupported(why)) if why.contains("1, 2, 4, 8 or 16")), "{width}");
            assert!(matches!(shared_load_wavefronts(width, u32::MAX, |_| 0), Err(Error::Unsupported(_))));
        }
        let mut m = Model::new();
        assert!(matches!(m.shared_load(256, u32::MAX, |l| 256 * l), Err(Error::Unsupported(_))));
        assert!(matches!(m.shared_store(64, u32::MAX, |l| 64 * l), Err(Error::Unsupported(_))));
        let b = m.buffer(1 << 21);
        assert!(matches!(m.load(b, 32, u32::MAX, |l| 32 * u64::from(l)), Err(Error::Unsupported(_))));
        assert_eq!(m.counts(), Counts::default(), "nothing counted");
    }

    #[test]
    fn a_buffer_of_another_model_is_refused() {
        let (mut one, mut other) = (Model::new(), Model::new());
        let theirs = other.buffer(1 << 30);
        one.buffer(1 << 21);
        // Slot 0 holds another base here; slot 1 does not exist (an index out of bounds).
        assert_eq!(one.atomic(theirs, 0), Err(Error::ForeignBuffer { base: 1 << 30 }));
        let unknown = other.buffer(1 << 31);
        assert_eq!(one.atomic(unknown, 0), Err(Error::ForeignBuffer { base: 1 << 31 }));
        assert_eq!(one.load(theirs, 4, 1, |_| 0), Err(Error::ForeignBuffer { base: 1 << 30 }));
        assert_eq!(one.store(unknown, 4, 0, |_| 0), Err(Error::ForeignBuffer { base: 1 << 31 }));
        assert_eq!(one.footprint_write(unknown, 0, 0), Err(Error::ForeignBuffer { base: 1 << 31 }));
        let mut counting = Model::instructions_only();
        assert_eq!(counting.load(theirs, 4, 1, |_| 0), Err(Error::ForeignBuffer { base: 1 << 30 }));
        // The same base in this model is this model's buffer.
        assert_eq!(one.buffer(1 << 21), Buffer { base: 1 << 21, slot: 0 });
    }

    #[test]
    fn offsets_past_max_buffer_bytes_are_refused_not_allocated() {
        let mut m = Model::new();
        let b = m.buffer(1 << 21);
        let past = |offset| {
            Err(Error::OutOfRange { what: "model buffer offset", value: offset, min: 0, max: MAX_BUFFER_BYTES - 1 })
        };
        // A sector 2^54 bytes of bits past the base: the bitset tried to allocate that.
        assert_eq!(m.load(b, 4, 1, |_| 1 << 59), past(1 << 59));
        assert_eq!(m.store(b, 4, 1, |_| MAX_BUFFER_BYTES), past(MAX_BUFFER_BYTES));
        assert_eq!(m.atomic(b, 1 << 40), past(1 << 40));
        assert_eq!(m.counts(), Counts::default(), "nothing counted");
        // The last byte of the span is fine.
        assert_eq!(m.atomic(b, MAX_BUFFER_BYTES - 4), Ok(()));
        // An address past u64::MAX (overflowed `base + offset`).
        let top = m.buffer(u64::MAX - 31);
        let wrapped = m.load(top, 4, 1, |_| 32);
        assert_eq!(wrapped, Err(Error::OutOfRange { what: "model buffer offset", value: 32, min: 0, max: 31 }));
        assert_eq!(m.load(top, 4, 1, |_| 28), Ok(()));
    }

    #[test]
    fn footprints_past_the_span_or_u64_are_refused() {
        let mut m = Model::new();
        let b = m.buffer(1 << 21);
        // offset + len - 1 overflowed.
        assert!(matches!(m.footprint_read(b, u64::MAX, 1), Err(Error::OutOfRange { value: u64::MAX, .. })));
        assert!(matches!(m.footprint_read(b, 1, u64::MAX), Err(Error::OutOfRange { value: u64::MAX, .. })));
        assert!(matches!(m.footprint_write(b, 0, u64::MAX), Err(Error::OutOfRange { .. })));
        assert!(matches!(m.footprint_write(b, 0, MAX_BUFFER_BYTES + 1), Err(Error::OutOfRange { .. })));
        // Nothing at all is fine anywhere; the whole span is fine.
        assert_eq!(m.footprint_read(b, u64::MAX, 0), Ok(()));
        assert_eq!(m.footprint_read(b, 0, 1 << 20), Ok(()));
        assert_eq!(m.counts().dram_read_bytes, 1 << 20);
    }

    #[test]
    fn unaligned_global_accesses_are_refused() {
        let mut m = Model::new();
        let b = m.buffer(1 << 21);
        let refused = m.load(b, 4, u32::MAX, |l| 4 * u64::from(l) + 2);
        assert_eq!(refused, Err(Error::Misaligned { what: "model global access", address: (1 << 21) + 2, align: 4 }));
        assert_eq!(m.counts(), Counts::default());
    }

    #[test]
    fn counts_past_u64_are_refused_not_wrapped() {
        let one = Counts { ld_requests: 1, st_sectors: 2, ..Counts::default() };
        assert_eq!(
            one.repeated(u64::MAX).unwrap_err(),
            Error::OutOfRange { what: "st_sectors", value: u64::MAX, min: 0, max: u64::MAX / 2 }
        );
        assert_eq!(one.repeated(u64::MAX / 2).map(|c| c.st_sectors), Ok(u64::MAX - 1));
        let full = Counts { shared_st_wavefronts: u64::MAX, ..Counts::default() };
        assert!(matches!(full.plus(&full), Err(Error::OutOfRange { what: "shared_st_wavefronts", .. })));
        let mut m = Model::instructions_only();
        m.add(&full).unwrap();
        assert!(m.add(&Counts { shared_st_wavefronts: 1, ..Counts::default() }).is_err());
        assert_eq!(m.counts(), full, "the total is kept");
    }

    #[test]
    fn lane_indices_past_their_type_are_refused_not_wrapped() {
        let mut i = [u32::MAX - 1; 32];
        let refused = advance(&mut i, 0b11, 2);
        assert_eq!(
            refused,
            Err(Error::OutOfRange {
                what: "lane loop index",
                value: u32::MAX as u64 - 1,
                min: 0,
                max: u32::MAX as u64 - 2
            })
        );
        assert_eq!(i, [u32::MAX - 1; 32], "left as it was");
        assert_eq!(advance(&mut i, 0b10, 1), Ok(()));
        assert_eq!((i[0], i[1]), (u32::MAX - 1, u32::MAX));
        assert!(advance(&mut [u64::MAX; 32], 1, 1u64).is_err());
    }

    #[test]
    fn a_warp_of_a_block_with_no_columns_does_not_divide_by_zero() {
        let w = Warp { block: (3, 0), index: 0, block_dim: (0, 2), lanes: u32::MAX };
        assert_eq!((w.thread(5), w.index_1d(5)), ((5, 0), 5));
        let w = Warp { block: (u32::MAX, 0), index: u32::MAX, block_dim: (64, 2), lanes: u32::MAX };
        // u32 arithmetic wrapping as the kernels' does (it overflowed in debug builds).
        assert_eq!(w.linear(3), u32::MAX.wrapping_mul(32).wrapping_add(3));
        assert_eq!(w.index_1d(0), u32::MAX.wrapping_mul(64).wrapping_add(w.thread(0).0));
    }
}
