//! The device prelude: a small cuda_std-like surface so kernels read like the CUDA C they teach.
//! Every function here is `#[inline(always)]` and compiles to one or two PTX instructions.

use core::arch::asm;
use core::arch::nvptx;

/// `$body` for `$i` = 0, 1, .., 31 as straight-line code (`$i` a `u32` constant in each copy):
/// a tile loop unrolled by hand where LLVM would keep it rolled.
macro_rules! unroll_tile {
    ($i:ident => $body:block) => {
        unroll_tile!(@ $i $body; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31)
    };
    (@ $i:ident $body:block; $($n:literal)*) => {
        $({
            let $i: u32 = $n;
            $body
        })*
    };
}

/// `$body` for `$i` = 0, 1, .., 15 as straight-line code.
macro_rules! unroll_16 {
    ($i:ident => $body:block) => {
        unroll_tile!(@ $i $body; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
}

/// Stops the grid with an error (`trap`): the host sees a failed launch.
#[inline(always)]
pub fn trap() -> ! {
    // SAFETY: `trap` has no preconditions; it aborts the kernel.
    unsafe { nvptx::trap() }
}

/// Thread and block coordinates (`threadIdx`, `blockIdx`, `blockDim`, `gridDim`).
pub mod thread {
    use core::arch::nvptx;

    macro_rules! special_register {
        ($($name:ident => $intrinsic:ident),* $(,)?) => {$(
            #[inline(always)]
            pub fn $name() -> u32 {
                // SAFETY: reading a special register has no preconditions.
                unsafe { nvptx::$intrinsic() as u32 }
            }
        )*};
    }
    special_register! {
        thread_idx_x => _thread_idx_x, thread_idx_y => _thread_idx_y,
        block_idx_x => _block_idx_x, block_idx_y => _block_idx_y,
        block_dim_x => _block_dim_x, block_dim_y => _block_dim_y,
        grid_dim_x => _grid_dim_x, grid_dim_y => _grid_dim_y,
    }

    /// `blockIdx.x * blockDim.x + threadIdx.x`: the global index of a 1-D launch.
    #[inline(always)]
    pub fn index_1d() -> u32 {
        block_idx_x() * block_dim_x() + thread_idx_x()
    }

    /// Threads in the whole 1-D grid: the step of a grid-stride loop.
    #[inline(always)]
    pub fn grid_size_1d() -> u32 {
        block_dim_x() * grid_dim_x()
    }

    /// Linear id of the block in its (2-D) grid: `blockIdx.y * gridDim.x + blockIdx.x`.
    #[inline(always)]
    pub fn block_linear() -> u32 {
        block_idx_y() * grid_dim_x() + block_idx_x()
    }

    /// Linear id of the thread inside its (2-D) block: x runs fastest, as warps are formed.
    #[inline(always)]
    pub fn linear_in_block() -> u32 {
        thread_idx_y() * block_dim_x() + thread_idx_x()
    }

    /// `__syncthreads()`: a block-wide barrier that also orders shared-memory accesses.
    #[inline(always)]
    pub fn sync_threads() {
        // SAFETY: every caller reaches the barrier from uniform control flow (kernels keep
        // their barriers outside divergent branches).
        unsafe { nvptx::_syncthreads() }
    }
}

/// Dynamic shared memory: the bytes the host asked for at launch (`extern __shared__`).
pub mod shared {
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
}

/// `cp.async` (sm_80): global → shared copies that do not pass through registers, issued by
/// each thread and grouped, so a thread can keep several tiles in flight and wait for the
/// oldest group only (`cuda::memcpy_async` / `__pipeline_*` in CUDA C++).
///
/// A copy's shared writes are visible to the issuing thread after [`wait`] retires its group,
/// and to the rest of the block after a barrier that follows that wait.
#[cfg(target_feature = "sm_80")]
pub mod async_copy {
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
}

/// `mbarrier` (sm_90 for the transaction counts): a barrier object in shared memory whose phase
/// completes when the expected arrivals have arrived and the expected bytes have landed, which
/// is how TMA copies report completion.
#[cfg(all(target_feature = "sm_90", target_feature = "ptx83"))]
pub mod mbarrier {
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
}

/// Bulk copies through the TMA (sm_90, PTX 8.0): one thread moves
/// a whole contiguous chunk (`cp.async.bulk`) or a whole tile of a tensor described by a tensor
/// map (`cp.async.bulk.tensor`). Loads complete on an [`super::mbarrier`], stores in bulk groups.
#[cfg(all(target_feature = "sm_90", target_feature = "ptx83"))]
pub mod bulk {
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
}

/// Thread-block clusters (sm_90): the blocks of a cluster run at the same time on one GPC and
/// can read and write each other's shared memory (distributed shared memory).
#[cfg(all(target_feature = "sm_90", target_feature = "ptx83"))]
pub mod cluster {
    use core::arch::asm;

    /// `%cluster_ctarank`: this block's rank in its cluster.
    #[inline(always)]
    pub fn rank() -> u32 {
        let r: u32;
        // SAFETY: reading a special register has no preconditions.
        unsafe {
            asm!("mov.u32 {r}, %cluster_ctarank;", r = out(reg32) r, options(pure, nomem, nostack, preserves_flags))
        }
        r
    }

    /// `%cluster_nctarank`: blocks in this block's cluster.
    #[inline(always)]
    pub fn size() -> u32 {
        let r: u32;
        // SAFETY: reading a special register has no preconditions.
        unsafe {
            asm!("mov.u32 {r}, %cluster_nctarank;", r = out(reg32) r, options(pure, nomem, nostack, preserves_flags))
        }
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
}

/// Warp-level primitives.
pub mod warp {
    pub use crate::WARP_SIZE as SIZE;

    /// Every lane of a full warp takes part.
    pub const FULL_MASK: u32 = 0xffff_ffff;

    unsafe extern "C" {
        #[link_name = "llvm.nvvm.shfl.sync.down.i32"]
        fn shfl_sync_down_i32(mask: u32, value: i32, delta: u32, clamp: u32) -> i32;
    }

    /// `__shfl_down_sync(FULL_MASK, value, delta)`: the value of lane `lane + delta`.
    ///
    /// # Safety
    /// All 32 lanes of the warp must execute this call together (converged, none exited):
    /// with the full mask, a shuffle from divergent code is undefined behaviour.
    #[inline(always)]
    pub unsafe fn shfl_down_i32(value: i32, delta: u32) -> i32 {
        // SAFETY: the caller guarantees the whole warp is converged here.
        unsafe { shfl_sync_down_i32(FULL_MASK, value, delta, 0x1f) }
    }

    /// `__shfl_down_sync` for `f32` (the same 32 bits moved).
    ///
    /// # Safety
    /// As [`shfl_down_i32`]: the whole warp calls it together.
    #[inline(always)]
    pub unsafe fn shfl_down_f32(value: f32, delta: u32) -> f32 {
        // SAFETY: forwarded from the caller.
        f32::from_bits(unsafe { shfl_down_i32(value.to_bits() as i32, delta) } as u32)
    }

    /// Sum over the warp; lane 0 holds the total (wrapping for integers).
    ///
    /// # Safety
    /// As [`shfl_down_i32`]: the whole warp calls it together.
    #[inline(always)]
    pub unsafe fn reduce_sum_i32(mut value: i32) -> i32 {
        let mut delta = SIZE / 2;
        while delta > 0 {
            // SAFETY: forwarded from the caller.
            value = value.wrapping_add(unsafe { shfl_down_i32(value, delta) });
            delta /= 2;
        }
        value
    }
}

/// Global-memory loads and stores whose width or cache policy is the point of a lesson,
/// written as inline PTX so the compiler cannot split or merge them.
pub mod mem {
    use super::asm;

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
}

/// Atomics on global memory (core's atomics lower to `atom.global.*`).
pub mod atomic {
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

    use core::sync::atomic::{AtomicI32, Ordering};

    /// `atomicAdd(ptr, value)` on an `i32` (wrapping), relaxed like CUDA's.
    ///
    /// # Safety
    /// `ptr` must point to a 4-byte aligned `i32` in global memory.
    #[inline(always)]
    pub unsafe fn add_i32(ptr: *mut i32, value: i32) -> i32 {
        // SAFETY: the caller guarantees `ptr` is valid and aligned; all access to it is atomic.
        unsafe { AtomicI32::from_ptr(ptr) }.fetch_add(value, Ordering::Relaxed)
    }
}

/// Arithmetic that must map to one instruction.
pub mod math {
    /// `fma.rn.f32`: `a * b + c` with one rounding (Rust never contracts `a * b + c` itself).
    #[inline(always)]
    pub fn fma(a: f32, b: f32, c: f32) -> f32 {
        // SAFETY: a pure floating-point operation with no preconditions.
        unsafe { core::intrinsics::fmaf32(a, b, c) }
    }
}

/// Ordering hints for the compiler, which emit no instruction.
pub mod order {
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
}
