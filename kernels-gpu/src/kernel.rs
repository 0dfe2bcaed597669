//! One declaration per kernel: its PTX name and parameter list are written once, in [`kernel!`],
//! and both sides are generated from that declaration.
//!
//! - Built for `nvptx64` the macro yields the `extern "gpu-kernel"` entry point, exported under
//!   the function's own name.
//! - Built for the host it yields a constant of the same name, a [`Kernel`] handle: the PTX name
//!   (from `stringify!`, so no name is ever typed twice) and the parameter list as a function
//!   type. The host library's launch takes a `Kernel<fn(P1, .., Pn)>` together with arguments
//!   that must match `P1 .. Pn` in type, count and order, or the launch does not compile.

//!
//! Kernels that need Hopper hardware (cp.async pipelines, TMA, mbarriers, clusters) are declared
//! with [`hopper_kernel!`] instead: their entry points exist only in PTX built for sm_90 with PTX
//! ISA 8.3 (the builder's Hopper module), their handles exist on every host build and say which
//! module to look them up in ([`Kernel::module`]).

use core::marker::PhantomData;

/// The PTX module a kernel's entry point lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Module {
    /// The module embedded for every GPU (sm_75 by default): every lesson kernel.
    Base,
    /// The module built for sm_90 with PTX ISA 8.3, loaded only on devices of compute
    /// capability 9.0 or newer: the kernels of `hopper`.
    Hopper,
}

impl Module {
    /// The compute capability a device needs to load the module.
    pub const fn min_compute_capability(self) -> (u32, u32) {
        match self {
            Module::Base => (7, 5),
            Module::Hopper => (9, 0),
        }
    }
}

/// A kernel as the host sees it: its PTX entry name, the module that holds it, and its
/// parameter list `Sig`, written as a function type such as `fn(*const f32, *mut f32, u32)`.
pub struct Kernel<Sig> {
    name: &'static str,
    module: Module,
    launch_bounds: Option<(u32, u32)>,
    _sig: PhantomData<fn() -> Sig>,
}

impl<Sig> Kernel<Sig> {
    /// Used by [`kernel!`] only: a handle is never made up by hand.
    #[doc(hidden)]
    pub const fn declare(name: &'static str, module: Module) -> Self {
        Kernel { name, module, launch_bounds: None, _sig: PhantomData }
    }

    /// Used by [`kernel!`] only: the launch bounds the kernel was declared with.
    #[doc(hidden)]
    pub const fn bounded(self, max_threads: u32, min_blocks: u32) -> Self {
        Kernel { launch_bounds: Some((max_threads, min_blocks)), ..self }
    }

    /// The entry point's name in the PTX module.
    pub const fn name(self) -> &'static str {
        self.name
    }

    /// The module the entry point is in.
    pub const fn module(self) -> Module {
        self.module
    }

    /// `(max threads per block, min blocks per multiprocessor)` if the kernel was declared with
    /// `launch_bounds` (see [`kernel!`]): a launch of more threads a block fails.
    pub const fn launch_bounds(self) -> Option<(u32, u32)> {
        self.launch_bounds
    }
}

impl<Sig> Clone for Kernel<Sig> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<Sig> Copy for Kernel<Sig> {}

impl<Sig> core::fmt::Debug for Kernel<Sig> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Kernel({})", self.name)
    }
}

impl<Sig> PartialEq for Kernel<Sig> {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

/// Declares a kernel once for both sides (see the module docs).
///
/// ```ignore
/// kernel! {
///     /// What the kernel does and the transactions a warp makes.
///     pub unsafe fn coalescing_offset(input: *const f32, output: *mut f32, n: u32, offset: u32) {
///         /* device code */
///     }
/// }
/// ```
/// Parameters follow one order in every family: inputs, outputs, sizes, parameters.
///
/// A kernel may start with `#[launch_bounds(MAX_THREADS, MIN_BLOCKS)]` (integer literals), CUDA
/// C's `__launch_bounds__`: the builder writes `.maxntid MAX_THREADS, 1, 1` and
/// `.minnctapersm MIN_BLOCKS` into the entry's PTX, so ptxas keeps registers low enough for
/// MIN_BLOCKS blocks of MAX_THREADS threads per multiprocessor. rustc has no attribute for this,
/// so the declaration travels as an exported marker symbol,
/// `__coalesce_launch_bounds__NAME__MAX_THREADS__MIN_BLOCKS`, that `coalesce_builder` reads.
#[macro_export]
macro_rules! kernel {
    (@in $module:ident [$gate:meta] #[launch_bounds($threads:literal, $blocks:literal)]
     $(#[$attr:meta])* pub unsafe fn $name:ident($($arg:ident : $ty:ty),* $(,)?) $body:block) => {
        $(#[$attr])*
        #[cfg(all(target_arch = "nvptx64", $gate))]
        #[unsafe(no_mangle)]
        pub unsafe extern "gpu-kernel" fn $name($($arg: $ty),*) $body

        #[cfg(all(target_arch = "nvptx64", $gate))]
        const _: () = {
            #[used]
            #[unsafe(export_name = concat!("__coalesce_launch_bounds__", stringify!($name), "__", $threads, "__", $blocks))]
            static LAUNCH_BOUNDS: u8 = 0;
        };

        $(#[$attr])*
        #[cfg(not(target_arch = "nvptx64"))]
        #[allow(non_upper_case_globals)]
        pub const $name: $crate::kernel::Kernel<fn($($ty),*)> =
            $crate::kernel::Kernel::declare(stringify!($name), $crate::kernel::Module::$module)
                .bounded($threads, $blocks);
    };
    (@in $module:ident [$gate:meta]
     $(#[$attr:meta])* pub unsafe fn $name:ident($($arg:ident : $ty:ty),* $(,)?) $body:block) => {
        $(#[$attr])*
        #[cfg(all(target_arch = "nvptx64", $gate))]
        #[unsafe(no_mangle)]
        pub unsafe extern "gpu-kernel" fn $name($($arg: $ty),*) $body

        $(#[$attr])*
        #[cfg(not(target_arch = "nvptx64"))]
        #[allow(non_upper_case_globals)]
        pub const $name: $crate::kernel::Kernel<fn($($ty),*)> =
            $crate::kernel::Kernel::declare(stringify!($name), $crate::kernel::Module::$module);
    };
    ($($decl:tt)*) => {
        $crate::kernel!(@in Base [all()] $($decl)*);
    };
}

/// [`kernel!`] for the Hopper module: the entry point is compiled only where the target has
/// sm_90 and PTX ISA 8.3 (`target_feature`s rustc's nvptx target sets from `-C target-cpu` and
/// `-C target-feature`), so the sm_75 module never holds it; the host handle exists everywhere
/// and reports [`Module::Hopper`].
#[macro_export]
macro_rules! hopper_kernel {
    ($($decl:tt)*) => {
        $crate::kernel!(@in Hopper [all(target_feature = "sm_90", target_feature = "ptx83")] $($decl)*);
    };
}

/// The generic address of a tensor map passed by value: parameter `INDEX` (0-based, an integer
/// literal) of kernel `KERNEL`, named `PARAM` in its signature ([`crate::types::LoadMap`] or
/// [`crate::types::StoreMap`]). It is CUDA C's `&map` on a `__grid_constant__` parameter:
/// `mov.b64` of the parameter's PTX symbol (`KERNEL_param_INDEX`, as rustc names it), then
/// `cvta.param`. Taking `&PARAM` in Rust would make LLVM copy the 128 bytes to local memory,
/// where the TMA cannot read a map.
///
/// The macro also exports the marker `__coalesce_grid_constant__KERNEL__INDEX`, from which the
/// builder declares that parameter `.align 64` in the PTX (the TMA's alignment, which rustc
/// cannot give a by-value parameter). The builder fails if the parameter is not a 128-byte one,
/// and ptxas if `KERNEL` is not the enclosing kernel, so a wrong name or index cannot build.
///
/// ```ignore
/// let input = grid_constant!(transpose_tma, 0, input); // *const TensorMap
/// ```
#[macro_export]
macro_rules! grid_constant {
    ($kernel:ident, $index:literal, $param:ident) => {{
        $crate::kernel::grid_constant_param(&$param);
        #[cfg(target_arch = "nvptx64")]
        const _: () = {
            #[used]
            #[unsafe(export_name = concat!("__coalesce_grid_constant__", stringify!($kernel), "__", $index))]
            static GRID_CONSTANT: u8 = 0;
        };
        let address: u64;
        // SAFETY: `mov` of a parameter's address and `cvta.param` read and write no memory.
        unsafe {
            core::arch::asm!(
                concat!("mov.b64 {a}, ", stringify!($kernel), "_param_", $index, ";\n\tcvta.param.u64 {a}, {a};"),
                a = out(reg64) address,
                options(pure, nomem, nostack, preserves_flags),
            );
        }
        address as *const $crate::types::TensorMap
    }};
}

/// [`grid_constant!`]'s type check: only a by-value tensor-map parameter may be named.
#[doc(hidden)]
#[inline(always)]
pub fn grid_constant_param<T: crate::types::GridConstant>(_: &T) {}
