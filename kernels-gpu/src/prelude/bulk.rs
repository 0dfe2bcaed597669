//! Bulk copies through the TMA (sm_90, PTX 8.0): one thread moves
//! a whole contiguous chunk (`cp.async.bulk`) or a whole tile of a tensor described by a tensor
//! map (`cp.async.bulk.tensor`). Loads complete on an [`super::mbarrier`], stores in bulk groups.

use core::arch::asm;

use crate::types::TensorMap;

/// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes`: copies `bytes` from
/// global `src` to shared `dst`, and counts them on barrier `bar` when they land.
///
/// # Safety
/// `dst` (`.shared`, this block) and `src` (global, readable) are 16-byte aligned and hold
/// `bytes` bytes, a multiple of 16; `bar` is an initialised barrier of this block whose
/// current phase expects these bytes; nothing touches `dst` until that phase completes.
#[inline(always)]
pub unsafe fn load(dst: u32, src: *const u8, bytes: u32, bar: u32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{s}], {n}, [{b}];",
             d = in(reg32) dst, s = in(reg64) src, n = in(reg32) bytes, b = in(reg32) bar,
             options(nostack, preserves_flags));
    }
}

/// `cp.async.bulk.global.shared::cta.bulk_group`: copies `bytes` from shared `src` to global
/// `dst` as part of this thread's current bulk group.
///
/// # Safety
/// `src` (`.shared`, this block, initialised and visible to the async proxy) and `dst`
/// (global, writable) are 16-byte aligned and hold `bytes` bytes, a multiple of 16; `src`
/// is not rewritten until [`wait_read`] says the group has read it.
#[inline(always)]
pub unsafe fn store(dst: *mut u8, src: u32, bytes: u32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!("cp.async.bulk.global.shared::cta.bulk_group [{d}], [{s}], {n};",
             d = in(reg64) dst, s = in(reg32) src, n = in(reg32) bytes, options(nostack, preserves_flags));
    }
}

/// `cp.async.bulk.commit_group`: closes this thread's current bulk group.
#[inline(always)]
pub fn commit() {
    // SAFETY: no operands, no preconditions.
    unsafe { asm!("cp.async.bulk.commit_group;", options(nostack, preserves_flags)) }
}

/// `cp.async.bulk.wait_group.read N`: waits until at most `N` of this thread's bulk groups
/// still have to read their shared sources (their shared memory may then be rewritten).
#[inline(always)]
pub fn wait_read<const N: u32>() {
    // SAFETY: no preconditions; it only blocks the thread.
    unsafe { asm!("cp.async.bulk.wait_group.read {n};", n = const N, options(nostack, preserves_flags)) }
}

/// `cp.async.bulk.wait_group N`: waits until at most `N` of this thread's bulk groups are
/// incomplete (their global writes performed).
#[inline(always)]
pub fn wait<const N: u32>() {
    // SAFETY: no preconditions; it only blocks the thread.
    unsafe { asm!("cp.async.bulk.wait_group {n};", n = const N, options(nostack, preserves_flags)) }
}

/// `fence.proxy.async.shared::cta`: orders this thread's earlier shared-memory writes
/// (generic proxy) before later async-proxy accesses (a bulk store reading them).
#[inline(always)]
pub fn fence_proxy_async() {
    // SAFETY: no operands, no preconditions.
    unsafe { asm!("fence.proxy.async.shared::cta;", options(nostack, preserves_flags)) }
}

/// `cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes`: loads
/// the box at element coordinates `(x, y)` (x the innermost) of the tensor `map` describes
/// into shared `dst`, counting its bytes on `bar`. Elements outside the tensor read as zero.
///
/// # Safety
/// `map` is the generic address of a tensor map the TMA may read (a grid constant,
/// [`crate::grid_constant!`]) whose tensor is readable; `dst` is a
/// `.shared` address of this block aligned as the map's swizzle needs (1024 bytes for 128B)
/// with room for one box; `bar`'s current phase expects the box's bytes.
#[inline(always)]
pub unsafe fn load_tile_2d(dst: u32, map: *const TensorMap, x: i32, y: i32, bar: u32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}}}], [{b}];",
             d = in(reg32) dst, m = in(reg64) map, x = in(reg32) x, y = in(reg32) y, b = in(reg32) bar,
             options(nostack, preserves_flags));
    }
}

/// `cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group`: stores one box from shared
/// `src` to element coordinates `(x, y)` of the tensor `map` describes; elements outside the
/// tensor are not written.
///
/// # Safety
/// `map` is the generic address of a tensor map the TMA may read (a grid constant,
/// [`crate::grid_constant!`]) whose tensor is writable; `src` is a
/// `.shared` address of this block, aligned as the map's swizzle needs, holding one box
/// made visible to the async proxy ([`fence_proxy_async`] and a barrier); it is not
/// rewritten before [`wait_read`].
#[inline(always)]
pub unsafe fn store_tile_2d(map: *const TensorMap, x: i32, y: i32, src: u32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [{m}, {{{x}, {y}}}], [{s}];",
             m = in(reg64) map, x = in(reg32) x, y = in(reg32) y, s = in(reg32) src,
             options(nostack, preserves_flags));
    }
}
