//! `mbarrier` (sm_90 for the transaction counts): a barrier object in shared memory whose phase
//! completes when the expected arrivals have arrived and the expected bytes have landed, which
//! is how TMA copies report completion.

use core::arch::asm;

/// `mbarrier.init.shared::cta.b64 [bar], count`: a fresh barrier expecting `count` arrivals
/// per phase, in phase 0.
///
/// # Safety
/// `bar` is an 8-byte aligned `.shared` address of this block that no one else uses as
/// anything but this barrier, and nobody waits on it during the init.
#[inline(always)]
pub unsafe fn init(bar: u32, count: u32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!("mbarrier.init.shared::cta.b64 [{b}], {c};", b = in(reg32) bar, c = in(reg32) count,
             options(nostack, preserves_flags));
    }
}

/// `fence.mbarrier_init.release.cluster`: makes this thread's barrier inits visible to the
/// async proxy (the TMA unit) and the cluster before the barriers are used.
#[inline(always)]
pub fn fence_init() {
    // SAFETY: no operands, no preconditions.
    unsafe { asm!("fence.mbarrier_init.release.cluster;", options(nostack, preserves_flags)) }
}

/// `mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], bytes`: this thread's arrival, and
/// `bytes` more expected by the current phase (the TMA copies that complete on it).
///
/// # Safety
/// `bar` is an initialised barrier of this block (`.shared` address).
#[inline(always)]
pub unsafe fn arrive_expect_tx(bar: u32, bytes: u32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!("mbarrier.arrive.expect_tx.shared::cta.b64 _, [{b}], {n};", b = in(reg32) bar,
             n = in(reg32) bytes, options(nostack, preserves_flags));
    }
}

/// `mbarrier.try_wait.parity`: whether the phase of parity `parity` has completed (waits a
/// bounded, hardware-chosen time before answering no).
///
/// # Safety
/// `bar` is an initialised barrier of this block (`.shared` address).
#[inline(always)]
pub unsafe fn try_wait_parity(bar: u32, parity: u32) -> bool {
    let done: u32;
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!("{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [{b}], {q}; selp.u32 {d}, 1, 0, p; }}",
             d = out(reg32) done, b = in(reg32) bar, q = in(reg32) parity, options(nostack, preserves_flags));
    }
    done != 0
}

/// Spins until the phase of parity `parity` of `bar` has completed; then the bytes the
/// phase expected are visible to this thread.
///
/// # Safety
/// As [`try_wait_parity`], and the phase must be able to complete (its arrivals and bytes
/// are on their way), else the thread spins forever.
#[inline(always)]
pub unsafe fn wait_parity(bar: u32, parity: u32) {
    // SAFETY: forwarded from the caller.
    while !unsafe { try_wait_parity(bar, parity) } {}
}
