//! Thread-block clusters (sm_90): the blocks of a cluster run at the same time on one GPC and
//! can read and write each other's shared memory (distributed shared memory).

use core::arch::asm;

/// `%cluster_ctarank`: this block's rank in its cluster.
#[inline(always)]
pub fn rank() -> u32 {
    let r: u32;
    // SAFETY: reading a special register has no preconditions.
    unsafe { asm!("mov.u32 {r}, %cluster_ctarank;", r = out(reg32) r, options(pure, nomem, nostack, preserves_flags)) }
    r
}

/// `%cluster_nctarank`: blocks in this block's cluster.
#[inline(always)]
pub fn size() -> u32 {
    let r: u32;
    // SAFETY: reading a special register has no preconditions.
    unsafe { asm!("mov.u32 {r}, %cluster_nctarank;", r = out(reg32) r, options(pure, nomem, nostack, preserves_flags)) }
    r
}

/// `barrier.cluster.arrive.release` + `barrier.cluster.wait.acquire`: every thread of every
/// block of the cluster arrives before any leaves; shared-memory writes before it (to any
/// block's shared memory) are visible to every thread of the cluster after it.
///
/// # Safety
/// Every thread of the cluster's blocks calls it the same number of times, from converged
/// code (`.aligned`), and none has exited.
#[inline(always)]
pub unsafe fn sync() {
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!(
            "barrier.cluster.arrive.release.aligned;",
            "barrier.cluster.wait.acquire.aligned;",
            options(nostack, preserves_flags)
        );
    }
}

/// `mapa.shared::cluster.u32`: the `.shared::cluster` address of the variable at `.shared`
/// address `addr` in the shared memory of the cluster's block `rank`.
///
/// # Safety
/// `addr` is a `.shared` address of this block's shared memory and `rank` < [`size`].
#[inline(always)]
pub unsafe fn map(addr: u32, rank: u32) -> u32 {
    let r: u32;
    // SAFETY: forwarded from the caller; a pure address computation.
    unsafe {
        asm!("mapa.shared::cluster.u32 {r}, {a}, {k};", r = out(reg32) r, a = in(reg32) addr, k = in(reg32) rank,
             options(pure, nomem, nostack, preserves_flags));
    }
    r
}

/// `ld.shared::cluster.u32`: a load from any block of the cluster's shared memory.
///
/// # Safety
/// `addr` comes from [`map`] for a 4-byte aligned, initialised `u32`; its block has not
/// exited and the write being read was ordered before (e.g. by [`sync`]).
#[inline(always)]
pub unsafe fn load_u32(addr: u32) -> u32 {
    let v: u32;
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!("ld.shared::cluster.u32 {v}, [{a}];", v = out(reg32) v, a = in(reg32) addr,
             options(readonly, nostack, preserves_flags));
    }
    v
}
