//! Atomics on global memory (core's atomics lower to `atom.global.*`).

/// `fence.acq_rel.gpu` (`__threadfence()`): this thread's writes before it are seen by the
/// whole GPU before its writes after it.
#[inline(always)]
pub fn fence_gpu() {
    // SAFETY: no operands, no preconditions.
    unsafe { core::arch::asm!("fence.acq_rel.gpu;", options(nostack, preserves_flags)) }
}

/// `st.release.gpu.u32`: stores `value` after every write this thread (and, through a
/// barrier before it, its block) made is visible to the GPU: a flag that publishes them.
///
/// # Safety
/// `ptr` must point to a 4-byte aligned `u32` in global memory.
#[inline(always)]
pub unsafe fn store_release_u32(ptr: *mut u32, value: u32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        core::arch::asm!("st.release.gpu.global.u32 [{p}], {v};", p = in(reg64) ptr, v = in(reg32) value,
                         options(nostack, preserves_flags));
    }
}

/// `ld.acquire.gpu.u32`: reads a flag; what was published before it was set is visible to
/// this thread's (and, through a barrier after it, its block's) later reads.
///
/// # Safety
/// `ptr` must point to a 4-byte aligned `u32` in global memory.
#[inline(always)]
pub unsafe fn load_acquire_u32(ptr: *const u32) -> u32 {
    let value: u32;
    // SAFETY: forwarded from the caller.
    unsafe {
        core::arch::asm!("ld.acquire.gpu.global.u32 {v}, [{p}];", v = out(reg32) value, p = in(reg64) ptr,
                         options(nostack, preserves_flags));
    }
    value
}

/// `red.global.add.u32`: an atomic add on global memory whose old value is not needed.
///
/// # Safety
/// `ptr` must point to a 4-byte aligned `u32` in global memory that is only accessed
/// atomically during the kernel.
#[inline(always)]
pub unsafe fn red_add_u32(ptr: *mut u32, value: u32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        core::arch::asm!("red.global.add.u32 [{p}], {v};", p = in(reg64) ptr, v = in(reg32) value,
                         options(nostack, preserves_flags));
    }
}

use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

/// `atomicAdd(ptr, value)` on an `i32` (wrapping), relaxed like CUDA's.
///
/// # Safety
/// `ptr` must point to a 4-byte aligned `i32` in global memory.
#[inline(always)]
pub unsafe fn add_i32(ptr: *mut i32, value: i32) -> i32 {
    // SAFETY: the caller guarantees `ptr` is valid and aligned; all access to it is atomic.
    unsafe { AtomicI32::from_ptr(ptr) }.fetch_add(value, Ordering::Relaxed)
}

/// `atomicAdd(ptr, value)` on a `u32` (wrapping), relaxed like CUDA's: the old value.
///
/// # Safety
/// `ptr` must point to a 4-byte aligned `u32` in global memory that is only accessed
/// atomically during the kernel.
#[inline(always)]
pub unsafe fn add_u32(ptr: *mut u32, value: u32) -> u32 {
    // SAFETY: the caller guarantees `ptr` is valid and aligned; all access to it is atomic.
    unsafe { AtomicU32::from_ptr(ptr) }.fetch_add(value, Ordering::Relaxed)
}

/// `atomicAdd(ptr, value)` on a `u64` (wrapping), relaxed like CUDA's.
///
/// # Safety
/// `ptr` must point to an 8-byte aligned `u64` in global memory that is only accessed
/// atomically during the kernel.
#[inline(always)]
pub unsafe fn add_u64(ptr: *mut u64, value: u64) -> u64 {
    // SAFETY: the caller guarantees `ptr` is valid and aligned; all access to it is atomic.
    unsafe { AtomicU64::from_ptr(ptr) }.fetch_add(value, Ordering::Relaxed)
}

/// An atomic (relaxed) store of a `u64`.
///
/// # Safety
/// As [`add_u64`].
#[inline(always)]
pub unsafe fn store_u64(ptr: *mut u64, value: u64) {
    // SAFETY: the caller guarantees `ptr` is valid and aligned; all access to it is atomic.
    unsafe { AtomicU64::from_ptr(ptr) }.store(value, Ordering::Relaxed)
}
