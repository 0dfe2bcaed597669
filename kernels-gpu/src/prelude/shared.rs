//! Dynamic shared memory: the bytes the host asked for at launch (`extern __shared__`).

/// Base of the block's dynamic shared memory, typed as `T`. The launcher sizes it.
#[inline(always)]
pub fn dynamic<T>() -> *mut T {
    core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<T>()
}

/// The `.shared` address (the 32-bit offset in the block's shared window) of a generic
/// pointer into shared memory: what `cp.async`, `mbarrier`, the bulk copies and `mapa` take.
///
/// # Safety
/// `p` must point into this block's shared memory (else the result names nothing).
#[inline(always)]
pub unsafe fn address<T>(p: *const T) -> u32 {
    let a: u64;
    // SAFETY: a pure address conversion; the caller guarantees `p` is a shared address.
    unsafe {
        core::arch::asm!("cvta.to.shared.u64 {a}, {p};", a = out(reg64) a, p = in(reg64) p,
                         options(pure, nomem, nostack, preserves_flags));
    }
    a as u32
}

/// `ld.shared.v4.f32` at a `.shared` address.
///
/// # Safety
/// `addr` is a 16-byte aligned `.shared` address of 4 initialised floats of this block.
#[inline(always)]
pub unsafe fn load_v4_f32(addr: u32) -> [f32; 4] {
    let (a, b, c, d): (f32, f32, f32, f32);
    // SAFETY: forwarded from the caller.
    unsafe {
        core::arch::asm!("ld.shared.v4.f32 {{{a}, {b}, {c}, {d}}}, [{p}];",
             a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
             p = in(reg32) addr, options(readonly, nostack, preserves_flags));
    }
    [a, b, c, d]
}

/// `red.shared.add.u32`: an atomic add on this block's shared memory, no result.
///
/// # Safety
/// `addr` is a 4-byte aligned `.shared` address of this block.
#[inline(always)]
pub unsafe fn red_add_u32(addr: u32, value: u32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        core::arch::asm!("red.shared.add.u32 [{p}], {v};", p = in(reg32) addr, v = in(reg32) value,
                         options(nostack, preserves_flags));
    }
}
