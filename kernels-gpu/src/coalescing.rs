//! Global-memory coalescing: how the addresses of one warp's 32 threads map onto 32-byte sectors.
//!
//! The progression: an offset copy (alignment), a strided copy (spread), the offset copy again with
//! L2-only loads (sector granularity), and a 16-byte copy that aims at the device memcpy. Then two
//! copies in the Hopper module where the hardware moves the bytes: `cp.async` into a shared
//! staging ring (no registers on the way in), and TMA bulk copies (one thread moves 16 KiB).

use crate::kernel;
#[cfg(target_arch = "nvptx64")]
use crate::prelude::{mem, thread};

/// Threads per block for every copy here: 8 warps, a multiple of the warp so each warp starts on
/// its own 128-byte boundary when the offset is 0.
pub const BLOCK: u32 = 256;
/// Largest offset of the offset-copy sweep (32 floats = 128 bytes: aligned again).
pub const MAX_OFFSET: u32 = 32;
/// Largest stride of the stride-copy sweep (from 8 floats on, every thread needs its own sector).
pub const MAX_STRIDE: u32 = 32;
/// 16-byte vectors each thread of the vectorised copy moves per loop trip, all loads first.
/// Two, not four: on the H100 one trip per thread reached 99.6% of the memcpy with 2 vectors in
/// flight and 98.8% with 4 (a CUDA C sweep of 2/4/8/16 vectors × 128..1024 threads; BENCHMARKS.md).
pub const UNROLL: u32 = 2;
/// Vectors one block of the vectorised copy moves per trip: a contiguous 8 KiB chunk.
pub const CHUNK: u32 = UNROLL * BLOCK;
/// 16-byte vectors each thread of the library's any-offset copy moves: one, a 4 KiB chunk a block.
/// On the H100 one vector a thread read 99.9% of the driver's memcpy at 2^26 floats and 100.3%
/// at 2^28, two 99.4% and 100.0%, four 98.5% and 99.1% (a CUDA C sweep beside the memcpy; the
/// more blocks, the smaller the last wave's share of the time).
pub const ANY_UNROLL: u32 = 1;
/// Vectors one block of the any-offset copy moves.
pub const ANY_CHUNK: u32 = ANY_UNROLL * BLOCK;
/// Resident 256-thread blocks per multiprocessor a persistent launch aims for (2048 threads).
pub const BLOCKS_PER_SM: u32 = 8;

/// Threads per block of the `cp.async` copy.
pub const CP_BLOCK: u32 = 256;
/// Stages of the `cp.async` copy's ring: each thread has this many 16-byte copies in flight.
pub const CP_STAGES: u32 = 4;
/// Shared memory of the `cp.async` copy: `CP_STAGES` slots of 16 bytes per thread.
pub const CP_SHARED_BYTES: u32 = CP_STAGES * CP_BLOCK * 16;
/// Resident blocks per SM of the `cp.async` copy's persistent grid (2048 threads, 128 KiB).
pub const CP_BLOCKS_PER_SM: u32 = 8;
/// Bytes one TMA bulk copy moves: one chunk of the bulk copy.
pub const BULK_CHUNK_BYTES: u32 = 16 * 1024;
/// Chunks a block of the bulk copy has in its shared ring.
pub const BULK_STAGES: u32 = 4;
/// Threads per block of the bulk copy: one warp, lane 0 drives the TMA (the others copy the
/// `n % 4` tail floats).
pub const BULK_THREADS: u32 = 32;
/// Shared memory of the bulk copy: the ring, then one 8-byte mbarrier per stage.
pub const BULK_SHARED_BYTES: u32 = BULK_STAGES * BULK_CHUNK_BYTES + 8 * BULK_STAGES;
/// Resident blocks per SM of the bulk copy (3 × 64 KiB of ring per SM).
pub const BULK_BLOCKS_PER_SM: u32 = 3;

const _: () = assert!(BLOCK.is_multiple_of(crate::WARP_SIZE), "warps must not straddle blocks");
const _: () = assert!(CP_SHARED_BYTES <= crate::launch::DEFAULT_SHARED_BYTES, "no opt-in for the cp.async copy");
const _: () = assert!(CP_STAGES >= 2 && CP_BLOCK.is_multiple_of(crate::WARP_SIZE));
// Bulk copies move multiples of 16 bytes between 16-byte aligned addresses; the mbarrier's
// transaction count holds at most 2^20 - 1 bytes.
const _: () = assert!(BULK_CHUNK_BYTES.is_multiple_of(16) && BULK_CHUNK_BYTES < (1 << 20));
const _: () = assert!(BULK_SHARED_BYTES <= crate::launch::MAX_SHARED_BYTES);
const _: () = assert!(BULK_BLOCKS_PER_SM * (BULK_SHARED_BYTES + 1024) <= 228 * 1024, "3 blocks fit an H100 SM");
const _: () = assert!(BULK_THREADS == crate::WARP_SIZE);
const _: () = assert!(CHUNK == 512, "the vec4 copy moves 8 KiB chunks");

/// Element that thread `i` of an offset copy reads and writes.
#[inline(always)]
pub const fn offset_index(i: u32, offset: u32) -> u32 {
    i + offset
}

/// Elements each buffer of an offset copy of `n` elements must hold; past `u64::MAX`,
/// `u64::MAX` (no buffer holds that many, so a check against it still fails) instead of a
/// wrapped length a short buffer passes.
pub const fn offset_len(n: u64, offset: u32) -> u64 {
    n.saturating_add(offset as u64)
}

/// Element that thread `i` of a stride copy reads and writes (64-bit: `i * stride` passes 2^32).
#[inline(always)]
pub const fn stride_index(i: u32, stride: u32) -> u64 {
    i as u64 * stride as u64
}

/// Elements each buffer of a stride copy of `n` elements must hold, saturating as
/// [`offset_len`].
pub const fn stride_len(n: u64, stride: u32) -> u64 {
    if n == 0 { 0 } else { (n - 1).saturating_mul(stride as u64).saturating_add(1) }
}

/// How the vectorised copy splits `n` floats: `(vectors, tail)`, with `4 * vectors + tail == n`.
pub const fn vec4_split(n: u64) -> (u64, u32) {
    (n / 4, (n % 4) as u32)
}

/// Vector that thread `t` moves at unrolled step `k` of chunk `chunk` (chunk `c` is vectors
/// `c * CHUNK ..`): a warp's 32 lanes take 32 consecutive vectors, 512 contiguous bytes.
#[inline(always)]
pub const fn vec4_index(chunk: u64, k: u32, t: u32) -> u64 {
    chunk * CHUNK as u64 + (k * BLOCK + t) as u64
}

/// Destination vector that thread `t` moves at step `k` of chunk `chunk` of the any-offset copy's
/// body (chunk `c` is vectors `c * ANY_CHUNK ..`).
#[inline(always)]
pub const fn any_index(chunk: u64, k: u32, t: u32) -> u64 {
    chunk * ANY_CHUNK as u64 + (k * BLOCK + t) as u64
}

/// Blocks of the any-offset copy over a body of `vectors` vectors: one a chunk, at least one
/// (block 0 copies the head and tail).
pub const fn any_blocks(vectors: u64) -> u64 {
    let blocks = vectors.div_ceil(ANY_CHUNK as u64);
    if blocks == 0 { 1 } else { blocks }
}

/// Float that thread `t` of block `b` copies past the last whole vector (the `n % 4` tail).
#[inline(always)]
pub const fn vec4_tail_index(vectors: u64, b: u32, t: u32) -> (u64, u32) {
    (vectors * 4, b * BLOCK + t)
}

/// Blocks for one unrolled trip per thread over `vectors` 16-byte vectors (one chunk per block):
/// the whole copy in one pass, no grid-stride loop.
pub const fn one_trip_blocks(vectors: u64) -> u64 {
    let blocks = vectors.div_ceil(CHUNK as u64);
    if blocks == 0 { 1 } else { blocks }
}

/// How [`coalescing_copy_any`] splits a copy of `n` floats from byte address `src` to byte
/// address `dst` (both multiples of 4): a head copied float by float, a body of 16-byte stores,
/// and a tail of at most 7 floats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShiftedSplit {
    /// Floats before the body: up to the destination's next 32-byte boundary, and 8 more when the
    /// body's first source vector would start before the copy (at most 15); all `n` when there
    /// is no body (at most 22).
    pub head: u64,
    /// Words the source is past a 16-byte boundary where the body starts (0: both aligned).
    pub shift: u32,
    /// 16-byte destination vectors of the body.
    pub vectors: u64,
}

impl ShiftedSplit {
    /// First float of the tail, which runs to `n`.
    pub const fn tail_start(&self) -> u64 {
        self.head + 4 * self.vectors
    }
}

/// The split of an any-offset copy. With `shift == 0` the body is a plain vector copy from
/// `src + 4 * head`. Otherwise destination vector `q` of the body is made of the last
/// `4 - shift` words of source vector `q` and the first `shift` of vector `q + 1`, counting
/// 16-byte source vectors from `src + 4 * (head - shift)`; both lie inside the copy's source,
/// since the body only holds the `q` for which vector `q + 1` still does.
pub const fn shifted_split(src: u64, dst: u64, n: u64) -> ShiftedSplit {
    // The body's stores start on a 32-byte boundary: every warp store is 16 whole sectors.
    let to_boundary = (8 - (dst / 4) % 8) % 8;
    let aligned_head = if to_boundary < n { to_boundary } else { n };
    let shift = ((src / 4 + aligned_head) % 4) as u32;
    if shift == 0 {
        return ShiftedSplit { head: aligned_head, shift, vectors: (n - aligned_head) / 4 };
    }
    // The first source vector starts `shift` floats before the body: inside the copy only if
    // the head is at least that long; else the body starts one 32-byte step later.
    let head = if aligned_head >= shift as u64 { aligned_head } else { aligned_head + 8 };
    let head = if head < n { head } else { n };
    // Source vector q + 1 ends at float head - shift + 4q + 7, which must be below n.
    let reach = n + shift as u64;
    if reach < head + 8 {
        // No body: fewer than 23 floats, all copied one by one.
        return ShiftedSplit { head: n, shift: 0, vectors: 0 };
    }
    ShiftedSplit { head, shift, vectors: (reach - head - 8) / 4 + 1 }
}

/// The float thread `t` of block 0 of [`coalescing_copy_any`] copies alone, if any: the head's
/// floats by threads `0..head` (at most 22), the tail's (at most 7) by threads `32..`.
#[inline(always)]
pub const fn shifted_scalar(split: ShiftedSplit, n: u64, t: u32) -> Option<u64> {
    let t = t as u64;
    if t < split.head {
        Some(t)
    } else if t >= 32 && split.tail_start() + (t - 32) < n {
        Some(split.tail_start() + (t - 32))
    } else {
        None
    }
}

/// How [`coalescing_copy_bytes`] splits a copy of `n` bytes from byte address `src` to byte
/// address `dst` (any addresses): as [`shifted_split`], in bytes. A head copied byte by byte up
/// to the destination's next 32-byte boundary (32 bytes more when the body's first source
/// vector would start before the copy: at most 62; all `n` when there is no body, at most 93),
/// a body of 16-byte destination vectors, each made of source vectors `q` and `q + 1` (16-byte
/// aligned, from `src + head - shift`) shifted by `shift` bytes, and a tail of at most 31 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteSplit {
    /// Bytes before the body.
    pub head: u64,
    /// Bytes the source is past a 16-byte boundary where the body starts (0: both aligned).
    pub shift: u32,
    /// 16-byte destination vectors of the body.
    pub vectors: u64,
}

impl ByteSplit {
    /// First byte of the tail, which runs to `n`.
    pub const fn tail_start(&self) -> u64 {
        self.head + 16 * self.vectors
    }
}

/// The split of a byte copy (see [`ByteSplit`]).
pub const fn byte_split(src: u64, dst: u64, n: u64) -> ByteSplit {
    let to_boundary = (32 - dst % 32) % 32;
    let aligned_head = if to_boundary < n { to_boundary } else { n };
    let shift = ((src + aligned_head) % 16) as u32;
    if shift == 0 {
        return ByteSplit { head: aligned_head, shift, vectors: (n - aligned_head) / 16 };
    }
    // The first source vector starts `shift` bytes before the body: inside the copy only if the
    // head is at least that long; else the body starts one 32-byte step later.
    let head = if aligned_head >= shift as u64 { aligned_head } else { aligned_head + 32 };
    let head = if head < n { head } else { n };
    // Source vector q + 1 ends at byte head - shift + 16 q + 31, which must be below n.
    let reach = n + shift as u64;
    if reach < head + 32 {
        return ByteSplit { head: n, shift: 0, vectors: 0 };
    }
    ByteSplit { head, shift, vectors: (reach - head - 32) / 16 + 1 }
}

/// The byte thread `t` of block 0 of [`coalescing_copy_bytes`] copies alone, if any: the head's
/// by threads `0..head` (at most 93), the tail's (at most 31) by threads `128..`.
#[inline(always)]
pub const fn byte_scalar(split: ByteSplit, n: u64, t: u32) -> Option<u64> {
    let t = t as u64;
    if t < split.head {
        Some(t)
    } else if t >= 128 && split.tail_start() + (t - 128) < n {
        Some(split.tail_start() + (t - 128))
    } else {
        None
    }
}

/// Destination word `w` (0-3) of a byte copy's body vector, from the eight words `words` of
/// source vectors `q` and `q + 1` shifted by `shift` bytes (0-15): the bytes `shift + 4 w ..`
/// of the 32, little-endian. `funnel(lo, hi, bits)` is the low word of `hi:lo >> bits`
/// ([`funnel_right`] on the CPU, one `shf.r.wrap` on the GPU).
#[inline(always)]
pub fn shifted_word(words: [u32; 8], shift: u32, w: u32, funnel: impl Fn(u32, u32, u32) -> u32) -> u32 {
    let first = (shift / 4 + w) as usize;
    funnel(words[first], words[first + 1], 8 * (shift % 4))
}

/// The low 32 bits of `hi:lo >> (bits % 32)` (`__funnelshift_r`).
pub const fn funnel_right(lo: u32, hi: u32, bits: u32) -> u32 {
    ((((hi as u64) << 32) | lo as u64) >> (bits % 32)) as u32
}

/// Chunks of `CP_BLOCK` vectors the `cp.async` copy splits `vectors` into (the last may be
/// partial).
pub const fn cp_chunks(vectors: u64) -> u64 {
    vectors.div_ceil(CP_BLOCK as u64)
}

/// The chunk block `b` of a grid of `grid` blocks handles on its `j`-th trip.
#[inline(always)]
pub const fn cp_chunk(b: u32, j: u64, grid: u32) -> u64 {
    b as u64 + j * grid as u64
}

/// The vector thread `t` copies in chunk `chunk`: a warp takes 32 consecutive vectors.
#[inline(always)]
pub const fn cp_vector(chunk: u64, t: u32) -> u64 {
    chunk * CP_BLOCK as u64 + t as u64
}

/// Byte offset in the shared ring of thread `t`'s slot for trip `j` (stage `j % CP_STAGES`).
#[inline(always)]
pub const fn cp_slot(j: u64, t: u32) -> u32 {
    ((j % CP_STAGES as u64) as u32 * CP_BLOCK + t) * 16
}

/// Chunks of `BULK_CHUNK_BYTES` the bulk copy splits `vectors` 16-byte vectors into.
pub const fn bulk_chunks(vectors: u64) -> u64 {
    (vectors * 16).div_ceil(BULK_CHUNK_BYTES as u64)
}

/// Bytes chunk `chunk` of a bulk copy of `vectors` vectors holds: `BULK_CHUNK_BYTES`, less for
/// the last (a multiple of 16 either way). Only called for `chunk < bulk_chunks(vectors)`.
#[inline(always)]
pub const fn bulk_chunk_bytes(chunk: u64, vectors: u64) -> u32 {
    let start = chunk * BULK_CHUNK_BYTES as u64;
    let end = vectors * 16;
    let left = end - start;
    if left < BULK_CHUNK_BYTES as u64 { left as u32 } else { BULK_CHUNK_BYTES }
}

/// Shared byte offset of the ring slot of stage `stage` of the bulk copy.
#[inline(always)]
pub const fn bulk_slot(stage: u32) -> u32 {
    stage * BULK_CHUNK_BYTES
}

/// Shared byte offset of stage `stage`'s mbarrier (after the ring).
#[inline(always)]
pub const fn bulk_barrier(stage: u32) -> u32 {
    BULK_STAGES * BULK_CHUNK_BYTES + 8 * stage
}

kernel! {
    /// Offset copy: `out[i + offset] = in[i + offset]` for `i < n`, 4 bytes per thread.
    /// A warp touches 128 contiguous bytes: 4 sectors when `offset % 8 == 0`, else 5.
    pub unsafe fn coalescing_offset(input: *const f32, output: *mut f32, n: u32, offset: u32) {
        let i = thread::index_1d();
        if i < n {
            let j = offset_index(i, offset) as usize;
            // SAFETY: the plan checked both buffers hold `offset_len(n, offset)` elements.
            unsafe { *output.add(j) = *input.add(j) };
        }
    }
}

kernel! {
    /// Stride copy: `out[i * stride] = in[i * stride]`. Changes the spacing instead of the start:
    /// a warp spans `128 * stride` bytes, so from stride 8 on it needs 32 sectors for 128 useful bytes.
    pub unsafe fn coalescing_stride(input: *const f32, output: *mut f32, n: u32, stride: u32) {
        let i = thread::index_1d();
        if i < n {
            let j = stride_index(i, stride) as usize;
            // SAFETY: the plan checked both buffers hold `stride_len(n, stride)` elements.
            unsafe { *output.add(j) = *input.add(j) };
        }
    }
}

kernel! {
    /// Offset copy with `ld.global.cg` (L2 only). Changes the cache path of the load: a misaligned
    /// warp then fetches 5 sectors instead of two 128-byte L1 lines (8 sectors).
    pub unsafe fn coalescing_offset_cg(input: *const f32, output: *mut f32, n: u32, offset: u32) {
        let i = thread::index_1d();
        if i < n {
            let j = offset_index(i, offset) as usize;
            // SAFETY: the plan checked both buffers hold `offset_len(n, offset)` elements.
            unsafe { *output.add(j) = mem::load_cg_f32(input.add(j)) };
        }
    }
}

kernel! {
    /// 16-byte copy, `UNROLL` vectors in flight per thread, each block streaming contiguous 8 KiB
    /// chunks (grid-striding over chunks when the grid is smaller than the copy). Every warp
    /// instruction moves 512 contiguous bytes: 16 full sectors. 64-bit indices: any size.
    pub unsafe fn coalescing_vec4(input: *const f32, output: *mut f32, n: u64) {
        // SAFETY: forwarded plan guarantees (see `vec4_copy`).
        unsafe { device::vec4_copy::<false>(input, output, n) }
    }
}

kernel! {
    /// `coalescing_vec4` with read-only-path loads (`ld.global.nc`) and streaming stores
    /// (`st.global.cs`): the same sectors, less cache pollution from lines that are never reused.
    pub unsafe fn coalescing_vec4_stream(input: *const f32, output: *mut f32, n: u64) {
        // SAFETY: forwarded plan guarantees (see `vec4_copy`), and `input` is not written.
        unsafe { device::vec4_copy::<true>(input, output, n) }
    }
}

kernel! {
    /// The library's copy at any element offsets: 16-byte vectors, one a thread, with a head and
    /// tail copied float by float. Where the source and destination differ in alignment, each lane
    /// still loads one aligned 16-byte vector and stores one, taking the words it lacks from the
    /// next lane's vector by `shfl.down` (lane 31 loads one more): 16 full sectors a warp
    /// instruction each way, as the aligned copy, plus one sector a warp.
    pub unsafe fn coalescing_copy_any(input: *const f32, output: *mut f32, n: u64) {
        // SAFETY: forwarded plan guarantees (see `copy_any`).
        unsafe { device::copy_any(input, output, n) }
    }
}

kernel! {
    /// The library's copy of views whose bytes do not start and end on 4-byte boundaries (1- and
    /// 2-byte elements at any element offset): `coalescing_copy_any` in bytes. A head and tail
    /// copied byte by byte; each lane of the body loads one aligned 16-byte source vector and
    /// stores one aligned destination vector, taking the bytes it lacks from the next lane's
    /// vector by `shfl.down` and funnel shifts (lane 31 loads one more): 16 full sectors a warp
    /// instruction each way.
    pub unsafe fn coalescing_copy_bytes(input: *const u8, output: *mut u8, n: u64) {
        // SAFETY: forwarded plan guarantees (see `copy_bytes`).
        unsafe { device::copy_bytes(input, output, n) }
    }
}

crate::hopper_kernel! {
    /// `cp.async` copy: each thread copies its 16-byte vector of a 4 KiB chunk global → shared with
    /// `cp.async.cg` (L2 only, no register on the way), keeping `CP_STAGES` chunks in flight in a
    /// shared ring, then writes it back with `st.global.v4` once its group has landed. Changes
    /// from `coalescing_vec4`: the loads retire into shared memory, so a thread's in-flight bytes
    /// are bounded by the ring (64 bytes a thread) rather than registers, and the copy itself
    /// needs no register until the store. The same 16 sectors per warp instruction both ways;
    /// one more shared read per vector. Grid-strides over chunks (a persistent grid, or one
    /// ring's worth of chunks per block: on the H100 the latter, 97.9% of memcpy against at best
    /// 93.4% persistent); 64-bit indices: any size.
    pub unsafe fn coalescing_cp_async(input: *const f32, output: *mut f32, n: u64) {
        // SAFETY: forwarded plan guarantees (see `cp_async_copy`).
        unsafe { hopper_device::cp_async_copy(input, output, n) }
    }
}

crate::hopper_kernel! {
    /// TMA bulk copy: lane 0 of each one-warp block moves whole 16 KiB chunks with
    /// `cp.async.bulk` global → shared (completing on an mbarrier) and shared → global (bulk
    /// groups), `BULK_STAGES` chunks in flight per block. Changes from `coalescing_vec4`: one
    /// instruction per 16 KiB instead of 32 threads × 4 per 2 KiB; the TMA unit generates every
    /// address and the SM's threads sit idle. The same bytes move as full 128-byte lines.
    /// Grid-strides over chunks; with one ring (4 chunks) per block the hardware balances the
    /// blocks (97.6% of memcpy on the H100), a persistent grid leaves some SMs a chunk behind
    /// (at best 95.4%).
    pub unsafe fn coalescing_bulk(input: *const f32, output: *mut f32, n: u64) {
        // SAFETY: forwarded plan guarantees (see `bulk_copy`).
        unsafe { hopper_device::bulk_copy(input, output, n) }
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
mod hopper_device {
    use super::*;
    use crate::prelude::{async_copy, bulk, mbarrier, shared};

    /// The `n % 4` floats past the last whole vector, copied by the first threads of block 0.
    ///
    /// # Safety
    /// Both buffers hold `n` floats.
    #[inline(always)]
    unsafe fn tail(input: *const f32, output: *mut f32, vectors: u64, tail: u32) {
        let t = thread::thread_idx_x();
        if thread::block_idx_x() == 0 && t < tail {
            let j = (vectors * 4 + t as u64) as usize;
            // SAFETY: j < 4 * vectors + tail == n.
            unsafe { *output.add(j) = *input.add(j) };
        }
    }

    /// # Safety
    /// Both buffers hold `n` floats and start on 16-byte boundaries; the launch has `CP_BLOCK`
    /// threads a block and `CP_SHARED_BYTES` of shared memory (the plan checks all of it).
    #[inline(always)]
    pub(super) unsafe fn cp_async_copy(input: *const f32, output: *mut f32, n: u64) {
        let (vectors, tail_len) = vec4_split(n);
        let src = input as *const [f32; 4];
        let dst = output as *mut [f32; 4];
        let t = thread::thread_idx_x();
        let (b, grid) = (thread::block_idx_x(), thread::grid_dim_x());
        // SAFETY: the dynamic shared memory is this block's.
        let ring = unsafe { shared::address(shared::dynamic::<u8>()) };
        // Trip j's copy into slot `cp_slot(j, t)`; every trip commits a group (empty past the
        // end), so "all but the newest CP_STAGES - 1 groups" always means "trip j".
        let issue = |j: u64| {
            let i = cp_vector(cp_chunk(b, j, grid), t);
            if i < vectors {
                // SAFETY: i < vectors, the buffer holds them, 16-byte aligned; the slot is inside
                // the ring launched (cp_slot < CP_SHARED_BYTES) and only this thread uses it.
                unsafe { async_copy::copy_16(ring + cp_slot(j, t), src.add(i as usize)) };
            }
            async_copy::commit();
        };
        let mut j = 0u64;
        while j < CP_STAGES as u64 {
            issue(j);
            j += 1;
        }
        j = 0;
        while cp_chunk(b, j, grid) * (CP_BLOCK as u64) < vectors {
            // Trip j's group has landed (at most CP_STAGES - 1 newer ones pending).
            async_copy::wait::<{ CP_STAGES - 1 }>();
            let i = cp_vector(cp_chunk(b, j, grid), t);
            if i < vectors {
                // SAFETY: this thread's own slot, written by its retired copy; i < vectors.
                unsafe {
                    let v = shared::load_v4_f32(ring + cp_slot(j, t));
                    mem::store_v4_f32(dst.add(i as usize), v);
                }
            }
            // Refill the slot just read (same thread, after the read in program order).
            issue(j + CP_STAGES as u64);
            j += 1;
        }
        // SAFETY: both buffers hold n floats.
        unsafe { tail(input, output, vectors, tail_len) };
    }

    /// # Safety
    /// Both buffers hold `n` floats and start on 16-byte boundaries; the launch has
    /// `BULK_THREADS` threads a block and `BULK_SHARED_BYTES` of shared memory (checked by the
    /// plan).
    #[inline(always)]
    pub(super) unsafe fn bulk_copy(input: *const f32, output: *mut f32, n: u64) {
        let (vectors, tail_len) = vec4_split(n);
        let (b, grid) = (thread::block_idx_x(), thread::grid_dim_x());
        if thread::thread_idx_x() == 0 {
            let chunks = bulk_chunks(vectors);
            // SAFETY: the dynamic shared memory is this block's.
            let base = unsafe { shared::address(shared::dynamic::<u8>()) };
            let bar = |stage: u32| base + bulk_barrier(stage);
            let chunk = |j: u64| b as u64 + j * grid as u64;
            let (src, dst) = (input as *const u8, output as *mut u8);
            // SAFETY (whole block): one thread owns every barrier and slot of this block; each
            // slot is inside the launched ring (bulk_slot + BULK_CHUNK_BYTES <= ring); every
            // chunk copied is below `chunks`, so its bytes [c * CHUNK, c * CHUNK + bytes) lie
            // inside both buffers (bytes from `bulk_chunk_bytes`, a multiple of 16, starting on
            // a 16 KiB boundary of 16-byte aligned buffers).
            unsafe {
                let mut s = 0;
                while s < BULK_STAGES {
                    mbarrier::init(bar(s), 1);
                    s += 1;
                }
                mbarrier::fence_init();
                // Trip j loads into stage j % STAGES, the (j / STAGES)-th phase of its barrier.
                let load = |j: u64| {
                    let c = chunk(j);
                    if c < chunks {
                        let stage = (j % BULK_STAGES as u64) as u32;
                        let bytes = bulk_chunk_bytes(c, vectors);
                        mbarrier::arrive_expect_tx(bar(stage), bytes);
                        let at = (c * BULK_CHUNK_BYTES as u64) as usize;
                        bulk::load(base + bulk_slot(stage), src.add(at), bytes, bar(stage));
                    }
                };
                let mut j = 0u64;
                while j < BULK_STAGES as u64 {
                    load(j);
                    j += 1;
                }
                j = 0;
                while chunk(j) < chunks {
                    let stage = (j % BULK_STAGES as u64) as u32;
                    mbarrier::wait_parity(bar(stage), ((j / BULK_STAGES as u64) & 1) as u32);
                    let c = chunk(j);
                    let at = (c * BULK_CHUNK_BYTES as u64) as usize;
                    bulk::store(dst.add(at), base + bulk_slot(stage), bulk_chunk_bytes(c, vectors));
                    bulk::commit();
                    // Refill the previous trip's stage once its store has read it (all but the
                    // newest bulk group, this trip's store, are done reading).
                    if j >= 1 && chunk(j - 1 + BULK_STAGES as u64) < chunks {
                        bulk::wait_read::<1>();
                        load(j - 1 + BULK_STAGES as u64);
                    }
                    j += 1;
                }
                // The shared ring must outlive the stores' reads, and the writes are complete.
                bulk::wait::<0>();
            }
        }
        // SAFETY: both buffers hold n floats.
        unsafe { tail(input, output, vectors, tail_len) };
    }
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;
    use crate::prelude::{math, warp};

    /// # Safety
    /// Both buffers hold `n` floats at 4-byte aligned addresses and the launch has `BLOCK`
    /// threads a block (the plan checks both); any grid, as the chunks are grid-strided. Every
    /// index below stays inside the copy: see `shifted_split`.
    #[inline(always)]
    pub(super) unsafe fn copy_any(input: *const f32, output: *mut f32, n: u64) {
        let split = shifted_split(input as u64, output as u64, n);
        let t = thread::thread_idx_x();
        if thread::block_idx_x() == 0
            && let Some(j) = shifted_scalar(split, n, t)
        {
            // SAFETY: j < n.
            unsafe { *output.add(j as usize) = *input.add(j as usize) };
        }
        // SAFETY (the four arms): `head <= n` and the body's vectors lie inside both buffers
        // (`shifted_split`); the destination body starts on a 16-byte boundary, and so does the
        // source body: at `head` when `shift == 0`, else at `head - shift`.
        unsafe {
            let dst = output.add(split.head as usize) as *mut [f32; 4];
            let src = |shift: u32| input.add((split.head - shift as u64) as usize) as *const [f32; 4];
            match split.shift {
                0 => shifted_body::<0>(src(0), dst, split.vectors, t),
                1 => shifted_body::<1>(src(1), dst, split.vectors, t),
                2 => shifted_body::<2>(src(2), dst, split.vectors, t),
                _ => shifted_body::<3>(src(3), dst, split.vectors, t),
            }
        }
    }

    /// # Safety
    /// Both buffers hold `n` bytes that do not overlap, nothing else writes the input during the
    /// kernel, and the launch has `BLOCK` threads a block (the plan checks all of it); any grid.
    /// Every index below stays inside the copy: see `byte_split`.
    #[inline(always)]
    pub(super) unsafe fn copy_bytes(input: *const u8, output: *mut u8, n: u64) {
        let split = byte_split(input as u64, output as u64, n);
        let t = thread::thread_idx_x();
        if thread::block_idx_x() == 0
            && let Some(j) = byte_scalar(split, n, t)
        {
            // SAFETY: j < n.
            unsafe { *output.add(j as usize) = *input.add(j as usize) };
        }
        let bits = 8 * (split.shift % 4);
        // SAFETY (the four arms): `head <= n` and the body's vectors lie inside both buffers
        // (`byte_split`); the destination body starts on a 32-byte boundary and the source body,
        // at `head - shift`, on a 16-byte one.
        unsafe {
            let dst = output.add(split.head as usize) as *mut [f32; 4];
            let src = input.add((split.head - split.shift as u64) as usize) as *const [f32; 4];
            let shifted = split.shift > 0;
            match split.shift / 4 {
                0 => byte_body::<0>(src, dst, split.vectors, t, bits, shifted),
                1 => byte_body::<1>(src, dst, split.vectors, t, bits, shifted),
                2 => byte_body::<2>(src, dst, split.vectors, t, bits, shifted),
                _ => byte_body::<3>(src, dst, split.vectors, t, bits, shifted),
            }
        }
    }

    /// The byte copy's body: `vectors` destination vectors at `dst`, each the bytes `4 S + bits
    /// / 8 ..` of source vectors `src[q]` and `src[q + 1]` (when `shifted`), in chunks of
    /// `ANY_CHUNK` vectors (one a thread).
    ///
    /// # Safety
    /// `dst[..vectors]` and `src[..vectors + shifted as u64]` are 16-byte aligned and inside the
    /// copy; every thread of the block calls it (the shuffles need whole warps); `shifted` is the
    /// same for every thread.
    #[inline(always)]
    unsafe fn byte_body<const S: u32>(
        src: *const [f32; 4],
        dst: *mut [f32; 4],
        vectors: u64,
        t: u32,
        bits: u32,
        shifted: bool,
    ) {
        let readable = if shifted { vectors + 1 } else { vectors };
        let lane = t % crate::WARP_SIZE;
        let mut chunk = thread::block_idx_x() as u64;
        let step = thread::grid_dim_x() as u64;
        // The loop condition and `shifted` are uniform per block: every lane of a warp reaches
        // the shuffles.
        while chunk * (ANY_CHUNK as u64) < vectors {
            let q = any_index(chunk, 0, t);
            let mut lo = [0.0f32; 4];
            let mut hi = [0.0f32; 4];
            // SAFETY: q < readable (checked); lane 31's q + 1 likewise.
            unsafe {
                if q < readable {
                    lo = mem::load_v4_f32(src.add(q as usize));
                }
                if shifted && lane == crate::WARP_SIZE - 1 && q + 1 < readable {
                    hi = mem::load_v4_f32(src.add(q as usize + 1));
                }
            }
            let out = if shifted {
                let mut w = 0;
                while w < 4 {
                    // SAFETY: reached by every lane of the warp (see the loop).
                    let from_next_lane = unsafe { warp::shfl_down_f32(lo[w], 1) };
                    if lane != crate::WARP_SIZE - 1 {
                        hi[w] = from_next_lane;
                    }
                    w += 1;
                }
                let words = [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]].map(f32::to_bits);
                let word = |w: u32| f32::from_bits(shifted_word(words, 4 * S + bits / 8, w, math::funnel_right));
                [word(0), word(1), word(2), word(3)]
            } else {
                lo
            };
            if q < vectors {
                // SAFETY: q < vectors.
                unsafe { mem::store_v4_f32(dst.add(q as usize), out) };
            }
            chunk += step;
        }
    }

    /// Destination vector `q` of the body, from source vectors `q` and `q + 1` shifted by `S`
    /// words.
    #[inline(always)]
    fn shifted<const S: u32>(lo: [f32; 4], hi: [f32; 4]) -> [f32; 4] {
        match S {
            0 => lo,
            1 => [lo[1], lo[2], lo[3], hi[0]],
            2 => [lo[2], lo[3], hi[0], hi[1]],
            _ => [lo[3], hi[0], hi[1], hi[2]],
        }
    }

    /// The body: `vectors` destination vectors at `dst`, from source vectors `src[q]` (and
    /// `src[q + 1]` when `S > 0`), in chunks of `ANY_CHUNK` vectors, `ANY_UNROLL` loads in flight.
    ///
    /// # Safety
    /// `dst[..vectors]` and `src[..vectors + (S > 0) as u64]` are 16-byte aligned and inside
    /// the copy; every thread of the block calls it (the shuffles need whole warps).
    #[inline(always)]
    unsafe fn shifted_body<const S: u32>(src: *const [f32; 4], dst: *mut [f32; 4], vectors: u64, t: u32) {
        // Source vectors the body may read: one past the last destination vector when shifted.
        let readable = if S == 0 { vectors } else { vectors + 1 };
        let lane = t % crate::WARP_SIZE;
        let mut chunk = thread::block_idx_x() as u64;
        let step = thread::grid_dim_x() as u64;
        // Whole chunks, then the one partial chunk; the loop condition is uniform per block, so
        // every lane of a warp reaches the shuffles.
        while chunk * (ANY_CHUNK as u64) < vectors {
            let mut lo = [[0.0f32; 4]; ANY_UNROLL as usize];
            let mut next = [[0.0f32; 4]; ANY_UNROLL as usize];
            let mut k = 0;
            while k < ANY_UNROLL {
                let q = any_index(chunk, k, t);
                // SAFETY: q < readable (checked); lane 31's q + 1 likewise.
                unsafe {
                    if q < readable {
                        lo[k as usize] = mem::load_v4_f32(src.add(q as usize));
                    }
                    if S > 0 && lane == crate::WARP_SIZE - 1 && q + 1 < readable {
                        next[k as usize] = mem::load_v4_f32(src.add(q as usize + 1));
                    }
                }
                k += 1;
            }
            k = 0;
            while k < ANY_UNROLL {
                let q = any_index(chunk, k, t);
                let v = lo[k as usize];
                let mut hi = next[k as usize];
                if S > 0 {
                    let mut w = 0;
                    while w < 4 {
                        // SAFETY: reached by every lane of the warp (see the loop).
                        let from_next_lane = unsafe { warp::shfl_down_f32(v[w], 1) };
                        if lane != crate::WARP_SIZE - 1 {
                            hi[w] = from_next_lane;
                        }
                        w += 1;
                    }
                }
                if q < vectors {
                    // SAFETY: q < vectors.
                    unsafe { mem::store_v4_f32(dst.add(q as usize), shifted::<S>(v, hi)) };
                }
                k += 1;
            }
            chunk += step;
        }
    }

    /// # Safety
    /// Both buffers hold `n` floats and start on 16-byte boundaries; the launch has `BLOCK`
    /// threads a block (the plan checks all three). Every index below is < `vectors` or `n`.
    #[inline(always)]
    pub(super) unsafe fn vec4_copy<const STREAMING: bool>(input: *const f32, output: *mut f32, n: u64) {
        let (vectors, tail) = vec4_split(n);
        let src = input as *const [f32; 4];
        let dst = output as *mut [f32; 4];
        // SAFETY (both closures): callers pass i < vectors; see the function's contract.
        let load = |i: u64| unsafe {
            if STREAMING { mem::load_v4_f32_nc(src.add(i as usize)) } else { mem::load_v4_f32(src.add(i as usize)) }
        };
        let store = |i: u64, v| unsafe {
            if STREAMING {
                mem::store_v4_f32_cs(dst.add(i as usize), v)
            } else {
                mem::store_v4_f32(dst.add(i as usize), v)
            }
        };
        let t = thread::thread_idx_x();
        let mut chunk = thread::block_idx_x() as u64;
        let step = thread::grid_dim_x() as u64;
        while (chunk + 1) * CHUNK as u64 <= vectors {
            let mut v = [[0.0f32; 4]; UNROLL as usize];
            let mut k = 0;
            while k < UNROLL {
                v[k as usize] = load(vec4_index(chunk, k, t));
                k += 1;
            }
            k = 0;
            while k < UNROLL {
                store(vec4_index(chunk, k, t), v[k as usize]);
                k += 1;
            }
            chunk += step;
        }
        // The last, partial chunk (exactly one block reaches it).
        if chunk * (CHUNK as u64) < vectors {
            let mut k = 0;
            while k < UNROLL {
                let i = vec4_index(chunk, k, t);
                if i < vectors {
                    store(i, load(i));
                }
                k += 1;
            }
        }
        let (first, g) = vec4_tail_index(vectors, thread::block_idx_x(), t);
        if g < tail {
            let j = (first + g as u64) as usize;
            // SAFETY: j < 4 * vectors + tail == n.
            unsafe { *output.add(j) = *input.add(j) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every float of a copy of `n` from word `src_word` to word `dst_word` is copied exactly once,
    /// by the scalar threads or by the body, and every access lies inside both ranges.
    fn covers_once(src_word: u64, dst_word: u64, n: u64) {
        let split = shifted_split(4 * src_word, 4 * dst_word, n);
        let mut seen = std::vec![0u8; n as usize];
        for t in 0..BLOCK {
            if let Some(j) = shifted_scalar(split, n, t) {
                seen[j as usize] += 1;
            }
        }
        assert!(split.head <= 22 && split.tail_start() <= n && n - split.tail_start() <= 7, "{split:?}");
        let first_src = split.head - split.shift as u64;
        if split.vectors > 0 {
            assert_eq!((dst_word + split.head) % 8, 0, "{split:?}");
            assert_eq!((src_word + first_src) % 4, 0, "{split:?}");
        }
        for q in 0..split.vectors {
            // Destination floats head + 4q .. + 4, from source vectors q (and q + 1).
            for w in 0..4 {
                seen[(split.head + 4 * q + w) as usize] += 1;
            }
            let last_read = first_src + 4 * (q + if split.shift > 0 { 1 } else { 0 }) + 3;
            assert!(last_read < n, "{src_word} {dst_word} {n}: {split:?} reads {last_read}");
        }
        assert!(seen.iter().all(|&c| c == 1), "{src_word} {dst_word} {n}: {split:?} {seen:?}");
    }

    #[test]
    fn any_offset_copy_covers_every_float_once() {
        for src in 0..8 {
            for dst in 0..8 {
                for n in (1..90).chain([1021, 4096, 4099]) {
                    covers_once(src, dst, n);
                }
            }
        }
        let aligned = shifted_split(0x1000, 0x2000, 1027);
        assert_eq!(aligned, ShiftedSplit { head: 0, shift: 0, vectors: 256 });
        let shifted = shifted_split(0x1004, 0x2000, 1027);
        assert_eq!((shifted.head, shifted.shift), (8, 1));
        let shifted = shifted_split(0x1004, 0x2010, 1027);
        assert_eq!((shifted.head, shifted.shift), (4, 1));
    }

    /// Every byte of a copy of `n` from `src` to `dst` is copied exactly once, by the scalar
    /// threads or by the body, every access lies inside the copy, and the body's shifted words
    /// are the right bytes.
    fn bytes_once(src: u64, dst: u64, n: u64) {
        let split = byte_split(src, dst, n);
        let mut seen = std::vec![0u8; n as usize];
        for t in 0..BLOCK {
            if let Some(j) = byte_scalar(split, n, t) {
                seen[j as usize] += 1;
            }
        }
        assert!(split.head <= 93 && split.tail_start() <= n && n - split.tail_start() <= 31, "{split:?}");
        assert!(split.vectors == 0 || split.head <= 62, "{split:?}");
        let first_src = split.head - split.shift as u64;
        if split.vectors > 0 {
            assert_eq!((dst + split.head) % 32, 0, "{split:?}");
            assert_eq!((src + first_src) % 16, 0, "{split:?}");
        }
        // Byte i of the source holds i % 251: the body must put byte j of the copy at byte j.
        let source = |i: u64| (i % 251) as u8;
        for q in 0..split.vectors {
            let last_read = first_src + 16 * (q + if split.shift > 0 { 1 } else { 0 }) + 15;
            assert!(last_read < n, "{src} {dst} {n}: {split:?} reads {last_read}");
            let word = |v: u64, w: u64| {
                u32::from_le_bytes(core::array::from_fn(|b| source(first_src + 16 * v + 4 * w + b as u64)))
            };
            let words: [u32; 8] = core::array::from_fn(|i| word(q + i as u64 / 4, i as u64 % 4));
            for w in 0..4u32 {
                let got = shifted_word(words, split.shift, w, funnel_right).to_le_bytes();
                for (b, &byte) in got.iter().enumerate() {
                    let j = split.head + 16 * q + 4 * w as u64 + b as u64;
                    assert_eq!(byte, source(j), "{src} {dst} {n}: {split:?} byte {j}");
                    seen[j as usize] += 1;
                }
            }
        }
        assert!(seen.iter().all(|&c| c == 1), "{src} {dst} {n}: {split:?} {seen:?}");
    }

    #[test]
    fn byte_copy_covers_every_byte_once_with_the_right_bytes() {
        for src in 0..32 {
            for dst in 0..32 {
                for n in (1..130).chain([1021, 4096, 4099]) {
                    bytes_once(0x1000 + src, 0x2000 + dst, n);
                }
            }
        }
        assert_eq!(byte_split(0x1000, 0x2000, 100), ByteSplit { head: 0, shift: 0, vectors: 6 });
        assert_eq!(byte_split(0x1001, 0x2000, 100), ByteSplit { head: 32, shift: 1, vectors: 3 });
        assert_eq!(funnel_right(0x4433_2211, 0x8877_6655, 8), 0x5544_3322);
        assert_eq!(funnel_right(0x4433_2211, 0x8877_6655, 0), 0x4433_2211);
    }

    #[test]
    fn offset_index_shifts_every_thread() {
        assert_eq!(offset_index(0, 0), 0);
        assert_eq!(offset_index(31, 1), 32);
        assert_eq!(offset_len(1000, 32), 1032);
    }

    #[test]
    fn stride_index_is_64_bit() {
        assert_eq!(stride_index(3, 32), 96);
        assert_eq!(stride_index(u32::MAX, 32), u32::MAX as u64 * 32);
        assert_eq!(stride_len(0, 7), 0);
        assert_eq!(stride_len(1, 32), 1);
        assert_eq!(stride_len(33, 2), 65);
    }

    #[test]
    fn vec4_split_covers_every_element() {
        for n in [0u64, 1, 3, 4, 5, 31, 33, 1_000_003, (1 << 31) + 5] {
            let (v, t) = vec4_split(n);
            assert_eq!(4 * v + t as u64, n);
            assert!(t < 4);
        }
    }

    #[test]
    fn cp_async_trips_cover_every_vector_once_in_private_slots() {
        for (vectors, grid) in [(1u64, 1u32), (255, 1), (256, 2), (257, 2), (5000, 3), (5000, 64)] {
            let mut hits = vec![0u8; vectors as usize];
            for b in 0..grid {
                let mut j = 0;
                while cp_chunk(b, j, grid) * (CP_BLOCK as u64) < vectors {
                    for t in 0..CP_BLOCK {
                        let i = cp_vector(cp_chunk(b, j, grid), t);
                        if i < vectors {
                            hits[i as usize] += 1;
                        }
                        assert!(cp_slot(j, t) + 16 <= CP_SHARED_BYTES);
                    }
                    j += 1;
                }
            }
            assert!(hits.iter().all(|&h| h == 1), "{vectors} vectors, grid {grid}");
        }
        // Slots: each thread its own, distinct per stage, 16-byte aligned.
        let slots: std::collections::HashSet<u32> =
            (0..CP_STAGES as u64).flat_map(|j| (0..CP_BLOCK).map(move |t| cp_slot(j, t))).collect();
        assert_eq!(slots.len(), (CP_STAGES * CP_BLOCK) as usize);
        assert!(slots.iter().all(|s| s % 16 == 0));
    }

    #[test]
    fn bulk_chunks_cover_every_byte_once_in_16_byte_multiples() {
        for vectors in [1u64, 1023, 1024, 1025, 4096 * 3 + 7, 1 << 24] {
            let chunks = bulk_chunks(vectors);
            let total: u64 = (0..chunks).map(|c| bulk_chunk_bytes(c, vectors) as u64).sum();
            assert_eq!(total, vectors * 16, "{vectors}");
            for c in 0..chunks {
                let bytes = bulk_chunk_bytes(c, vectors);
                assert!(bytes > 0 && bytes.is_multiple_of(16) && bytes <= BULK_CHUNK_BYTES);
            }
        }
        assert_eq!(bulk_barrier(0) % 8, 0);
        assert_eq!(bulk_barrier(BULK_STAGES - 1) + 8, BULK_SHARED_BYTES);
        assert_eq!(bulk_slot(BULK_STAGES - 1) + BULK_CHUNK_BYTES, bulk_barrier(0));
    }

    #[test]
    fn one_trip_covers_every_vector_once() {
        for vectors in [1u64, 1023, 1024, 1025, 5000] {
            let mut hits = vec![0u8; vectors as usize];
            for chunk in 0..one_trip_blocks(vectors) {
                for k in 0..UNROLL {
                    for t in 0..BLOCK {
                        let i = vec4_index(chunk, k, t);
                        if i < vectors {
                            hits[i as usize] += 1;
                        }
                    }
                }
            }
            assert!(hits.iter().all(|&h| h == 1), "{vectors} vectors");
        }
    }
}
