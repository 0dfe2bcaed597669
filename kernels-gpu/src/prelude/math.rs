//! Arithmetic that must map to one instruction.

/// `fma.rn.f32`: `a * b + c` with one rounding (Rust never contracts `a * b + c` itself).
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    // SAFETY: a pure floating-point operation with no preconditions.
    unsafe { core::intrinsics::fmaf32(a, b, c) }
}

/// `prmt.b32` (`__byte_perm(a, b, selector)`): byte `i` of the result is byte `selector`'s
/// nibble `i` (0-7) of the eight bytes `b:a` (`a` the low four). What
/// [`crate::transpose::byte_perm`] computes, in one instruction.
#[inline(always)]
pub fn prmt(a: u32, b: u32, selector: u32) -> u32 {
    let d: u32;
    // SAFETY: a pure register operation with no preconditions.
    unsafe {
        core::arch::asm!("prmt.b32 {d}, {a}, {b}, {s};", d = out(reg32) d, a = in(reg32) a, b = in(reg32) b,
                         s = in(reg32) selector, options(pure, nomem, nostack, preserves_flags));
    }
    d
}

/// `shf.r.wrap.b32` (`__funnelshift_r(lo, hi, shift)`): the low 32 bits of `hi:lo >> (shift % 32)`.
/// What [`crate::coalescing::funnel_right`] computes, in one instruction.
#[inline(always)]
pub fn funnel_right(lo: u32, hi: u32, shift: u32) -> u32 {
    let d: u32;
    // SAFETY: a pure register operation with no preconditions.
    unsafe {
        core::arch::asm!("shf.r.wrap.b32 {d}, {lo}, {hi}, {s};", d = out(reg32) d, lo = in(reg32) lo,
                         hi = in(reg32) hi, s = in(reg32) shift, options(pure, nomem, nostack, preserves_flags));
    }
    d
}
