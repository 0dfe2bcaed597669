//! Arithmetic that must map to one instruction.

/// `fma.rn.f32`: `a * b + c` with one rounding (Rust never contracts `a * b + c` itself).
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    // SAFETY: a pure floating-point operation with no preconditions.
    unsafe { core::intrinsics::fmaf32(a, b, c) }
}
