//! Global-memory loads and stores whose width or cache policy is the point of a lesson,
//! written as inline PTX so the compiler cannot split or merge them.

use core::arch::asm;

/// `ld.global.cg.f32`: cache in L2 only, so every miss moves 32-byte sectors, not L1 lines.
///
/// # Safety
/// `ptr` must point to a readable `f32` in global memory.
#[inline(always)]
pub unsafe fn load_cg_f32(ptr: *const f32) -> f32 {
    let value: f32;
    // SAFETY: the caller guarantees `ptr` is a valid global address.
    unsafe {
        asm!("ld.global.cg.f32 {v}, [{p}];", v = out(reg32) value, p = in(reg64) ptr,
             options(pure, readonly, nostack, preserves_flags));
    }
    value
}

/// `ld.global.cg.v4.f32`: a 16-byte load from L2 (not L1, which other multiprocessors'
/// writes do not update), ordered after the memory operations before it: for data another
/// block wrote and published (see [`crate::prelude::atomic::load_acquire_u32`]).
///
/// # Safety
/// `ptr` must be 16-byte aligned and point to 4 readable `f32`s in global memory.
#[inline(always)]
pub unsafe fn load_v4_f32_cg(ptr: *const [f32; 4]) -> [f32; 4] {
    let (a, b, c, d): (f32, f32, f32, f32);
    // SAFETY: the caller guarantees alignment and validity.
    unsafe {
        asm!("ld.global.cg.v4.f32 {{{a}, {b}, {c}, {d}}}, [{p}];",
             a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
             p = in(reg64) ptr, options(nostack, preserves_flags));
    }
    [a, b, c, d]
}

/// `ld.global.v4.f32`: one 16-byte load per thread (a warp reads 512 contiguous bytes).
///
/// # Safety
/// `ptr` must be 16-byte aligned and point to 4 readable `f32`s in global memory.
#[inline(always)]
pub unsafe fn load_v4_f32(ptr: *const [f32; 4]) -> [f32; 4] {
    let (a, b, c, d): (f32, f32, f32, f32);
    // SAFETY: the caller guarantees alignment and validity.
    unsafe {
        asm!("ld.global.v4.f32 {{{a}, {b}, {c}, {d}}}, [{p}];",
             a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
             p = in(reg64) ptr, options(pure, readonly, nostack, preserves_flags));
    }
    [a, b, c, d]
}

/// `ld.global.nc.v4.f32`: a 16-byte load through the read-only (non-coherent) path.
///
/// # Safety
/// As [`load_v4_f32`], and the memory must not be written during the kernel.
#[inline(always)]
pub unsafe fn load_v4_f32_nc(ptr: *const [f32; 4]) -> [f32; 4] {
    let (a, b, c, d): (f32, f32, f32, f32);
    // SAFETY: the caller guarantees alignment, validity and that nothing writes it.
    unsafe {
        asm!("ld.global.nc.v4.f32 {{{a}, {b}, {c}, {d}}}, [{p}];",
             a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
             p = in(reg64) ptr, options(pure, readonly, nostack, preserves_flags));
    }
    [a, b, c, d]
}

/// `st.global.cs.v4.f32`: a 16-byte streaming store (evict-first: the line is not reused).
///
/// # Safety
/// `ptr` must be 16-byte aligned and point to 4 writable `f32`s in global memory.
#[inline(always)]
pub unsafe fn store_v4_f32_cs(ptr: *mut [f32; 4], v: [f32; 4]) {
    // SAFETY: the caller guarantees alignment and validity.
    unsafe {
        asm!("st.global.cs.v4.f32 [{p}], {{{a}, {b}, {c}, {d}}};",
             p = in(reg64) ptr, a = in(reg32) v[0], b = in(reg32) v[1],
             c = in(reg32) v[2], d = in(reg32) v[3], options(nostack, preserves_flags));
    }
}

/// `ld.global.nc.v4.s32`: a 16-byte read-only load of four `i32`s.
///
/// # Safety
/// `ptr` must be 16-byte aligned, point to 4 readable `i32`s in global memory, and that
/// memory must not be written during the kernel.
#[inline(always)]
pub unsafe fn load_v4_i32(ptr: *const [i32; 4]) -> [i32; 4] {
    let (a, b, c, d): (i32, i32, i32, i32);
    // SAFETY: the caller guarantees alignment, validity and that nothing writes it.
    unsafe {
        asm!("ld.global.nc.v4.s32 {{{a}, {b}, {c}, {d}}}, [{p}];",
             a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
             p = in(reg64) ptr, options(pure, readonly, nostack, preserves_flags));
    }
    [a, b, c, d]
}

/// `st.global.v4.f32`: one 16-byte store per thread.
///
/// # Safety
/// `ptr` must be 16-byte aligned and point to 4 writable `f32`s in global memory.
#[inline(always)]
pub unsafe fn store_v4_f32(ptr: *mut [f32; 4], v: [f32; 4]) {
    // SAFETY: the caller guarantees alignment and validity.
    unsafe {
        asm!("st.global.v4.f32 [{p}], {{{a}, {b}, {c}, {d}}};",
             p = in(reg64) ptr, a = in(reg32) v[0], b = in(reg32) v[1],
             c = in(reg32) v[2], d = in(reg32) v[3], options(nostack, preserves_flags));
    }
}

/// `ld.global.nc.v2.u64`: a 16-byte read-only load of two `u64`s.
///
/// # Safety
/// `ptr` must be 16-byte aligned, point to 2 readable `u64`s in global memory, and that
/// memory must not be written during the kernel.
#[inline(always)]
pub unsafe fn load_v2_u64(ptr: *const [u64; 2]) -> [u64; 2] {
    let (a, b): (u64, u64);
    // SAFETY: the caller guarantees alignment, validity and that nothing writes it.
    unsafe {
        asm!("ld.global.nc.v2.u64 {{{a}, {b}}}, [{p}];",
             a = out(reg64) a, b = out(reg64) b,
             p = in(reg64) ptr, options(pure, readonly, nostack, preserves_flags));
    }
    [a, b]
}

/// `ld.global.nc.v2.f64`: a 16-byte read-only load of two `f64`s.
///
/// # Safety
/// As [`load_v2_u64`], for `f64`s.
#[inline(always)]
pub unsafe fn load_v2_f64(ptr: *const [f64; 2]) -> [f64; 2] {
    let (a, b): (f64, f64);
    // SAFETY: the caller guarantees alignment, validity and that nothing writes it.
    unsafe {
        asm!("ld.global.nc.v2.f64 {{{a}, {b}}}, [{p}];",
             a = out(reg64) a, b = out(reg64) b,
             p = in(reg64) ptr, options(pure, readonly, nostack, preserves_flags));
    }
    [a, b]
}

/// `ld.relaxed.gpu.global.u64`: a load that sees the latest value another block made visible at
/// GPU scope (not a stale L1 line): for data published through a fence and an atomic.
///
/// # Safety
/// `ptr` must be 8-byte aligned and point to a readable `u64` in global memory.
#[inline(always)]
pub unsafe fn load_relaxed_u64(ptr: *const u64) -> u64 {
    let value: u64;
    // SAFETY: the caller guarantees alignment and validity.
    unsafe {
        asm!("ld.relaxed.gpu.global.u64 {v}, [{p}];", v = out(reg64) value, p = in(reg64) ptr,
             options(nostack, preserves_flags));
    }
    value
}

/// `prefetch.global.L1`: start moving the line holding `ptr` into this multiprocessor's L1,
/// without a register to wait on (CUDA C's `prefetch.global.L1` in inline PTX).
///
/// # Safety
/// `ptr` must point into a global allocation (a prefetch of an address outside one may fault).
#[inline(always)]
pub unsafe fn prefetch_l1<T>(ptr: *const T) {
    // SAFETY: the caller guarantees `ptr` is inside a global allocation.
    unsafe { asm!("prefetch.global.L1 [{p}];", p = in(reg64) ptr, options(nostack, preserves_flags)) };
}
