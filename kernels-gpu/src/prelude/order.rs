//! Ordering hints for the compiler, which emit no instruction.

/// Pins `values` to this point of the program: everything that computes them happens before
/// it and every use after it, even where LLVM would sink a load to its first use (across a
/// loop's back edge) or hoist arithmetic above a barrier. An empty `asm!` per value, not
/// `core::hint::black_box`, which goes through local memory (the asm is a PTX comment).
#[inline(always)]
pub fn pin<const N: usize>(values: &mut [f32; N]) {
    let mut i = 0;
    while i < N {
        // SAFETY: an empty instruction string; the value passes through unchanged.
        unsafe { core::arch::asm!("// pin {0}", inout(reg32) values[i], options(nostack, preserves_flags)) };
        i += 1;
    }
}

/// `value`, computed here and nowhere else: what is derived from it cannot be hoisted above
/// this point (out of an enclosing loop) and kept live across it. For a loop body that would
/// otherwise hold every per-thread index of its inner loop in registers for the whole kernel.
#[inline(always)]
pub fn here(mut value: u32) -> u32 {
    // SAFETY: an empty instruction string; the value passes through unchanged. Not `pure`: the
    // asm stays where it is written.
    unsafe { core::arch::asm!("// here {0}", inout(reg32) value, options(nostack, preserves_flags)) };
    value
}
