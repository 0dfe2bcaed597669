//! `cp.async` (sm_80): global → shared copies that do not pass through registers, issued by
//! each thread and grouped, so a thread can keep several tiles in flight and wait for the
//! oldest group only (`cuda::memcpy_async` / `__pipeline_*` in CUDA C++).
//!
//! A copy's shared writes are visible to the issuing thread after [`wait`] retires its group,
//! and to the rest of the block after a barrier that follows that wait.

use core::arch::asm;

/// `cp.async.ca.shared.global [dst], [src], 4`: copies one float (through L1). Single
/// floats can land anywhere in shared memory, so a tile can be transposed on its way in.
///
/// # Safety
/// `dst` is a 4-byte aligned `.shared` address of this block; `src` points to a readable,
/// 4-byte aligned `f32` in global memory.
#[inline(always)]
pub unsafe fn copy_4(dst: u32, src: *const f32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!("cp.async.ca.shared.global [{d}], [{s}], 4;", d = in(reg32) dst, s = in(reg64) src,
             options(nostack, preserves_flags));
    }
}

/// `cp.async.ca.shared.global.L2::128B [dst], [src], 4`: [`copy_4`], and the L2 fetches the
/// whole 128 bytes around `src` from DRAM at once, for copies that walk rows a sector at a
/// time: the next sectors of the row are in L2 when their copies come.
///
/// # Safety
/// As [`copy_4`].
#[inline(always)]
pub unsafe fn copy_4_prefetch_l2(dst: u32, src: *const f32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!("cp.async.ca.shared.global.L2::128B [{d}], [{s}], 4;", d = in(reg32) dst, s = in(reg64) src,
             options(nostack, preserves_flags));
    }
}

/// `cp.async.ca.shared.global [dst], [src], 4, src_bytes`: copies 4 bytes (through L1),
/// of which the first `src_bytes` (0 or 4) are read and the rest zero-filled: `src_bytes = 0`
/// writes a zero without reading `src` (a bounds check without a branch).
///
/// # Safety
/// `dst` is a 4-byte aligned `.shared` address of this block; `src` points to a readable,
/// 4-byte aligned `f32` in global memory (even when `src_bytes` is 0).
#[inline(always)]
pub unsafe fn copy_4_zfill(dst: u32, src: *const f32, src_bytes: u32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!("cp.async.ca.shared.global [{d}], [{s}], 4, {n};", d = in(reg32) dst, s = in(reg64) src,
             n = in(reg32) src_bytes, options(nostack, preserves_flags));
    }
}

/// `cp.async.cg.shared.global [dst], [src], 16`: copies 16 bytes, caching in L2 only.
///
/// # Safety
/// `dst` is a 16-byte aligned `.shared` address of this block; `src` points to 16 readable,
/// 16-byte aligned bytes of global memory.
#[inline(always)]
pub unsafe fn copy_16(dst: u32, src: *const [f32; 4]) {
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!("cp.async.cg.shared.global [{d}], [{s}], 16;", d = in(reg32) dst, s = in(reg64) src,
             options(nostack, preserves_flags));
    }
}

/// `cp.async.cg.shared.global [dst], [src], 16, src_bytes`: copies 16 bytes (L2 only), of
/// which the first `src_bytes` (0, 4, 8, 12 or 16) are read and the rest zero-filled.
///
/// # Safety
/// As [`copy_16`] (`src` 16-byte aligned and readable even when fewer bytes are read).
#[inline(always)]
pub unsafe fn copy_16_zfill(dst: u32, src: *const f32, src_bytes: u32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!("cp.async.cg.shared.global [{d}], [{s}], 16, {n};", d = in(reg32) dst, s = in(reg64) src,
             n = in(reg32) src_bytes, options(nostack, preserves_flags));
    }
}

/// `cp.async.commit_group`: closes the group of this thread's copies issued since the last
/// commit (an empty group is fine and keeps group counting uniform).
#[inline(always)]
pub fn commit() {
    // SAFETY: no operands, no preconditions.
    unsafe { asm!("cp.async.commit_group;", options(nostack, preserves_flags)) }
}

/// `cp.async.wait_group N`: waits until at most `N` of this thread's committed groups are
/// still pending (so every older group has landed in shared memory).
#[inline(always)]
pub fn wait<const N: u32>() {
    // SAFETY: no preconditions; it only blocks the thread.
    unsafe { asm!("cp.async.wait_group {n};", n = const N, options(nostack, preserves_flags)) }
}

/// [`wait`] for an `n` that is a constant only once inlined (from a caller's const generic
/// parameter, which `wait::<{ N - 2 }>` cannot take without generic const expressions).
/// Past 6 it waits for every group: later than asked, never earlier.
#[inline(always)]
pub fn wait_for(n: u32) {
    match n {
        0 => wait::<0>(),
        1 => wait::<1>(),
        2 => wait::<2>(),
        3 => wait::<3>(),
        4 => wait::<4>(),
        5 => wait::<5>(),
        6 => wait::<6>(),
        _ => wait::<0>(),
    }
}
