//! The typed seam between host and device: [`Kernel`] handles, the [`Signature`] that maps a
//! kernel's parameter list to host arguments, and the [`Call`] a plan returns (the crate docs,
//! "How a launch is typed", tell the whole story).
use std::ffi::c_void;
use std::marker::PhantomData;

use cust::memory::DeviceCopy;

pub use coalesce_kernels::kernel::Kernel;

use crate::buffer::{DeviceRead, DeviceView, DeviceViewMut, DeviceWrite, Home};
use crate::error::{Error, Result};
use coalesce_kernels::launch::{MAX_BLOCK_THREADS, MAX_CLUSTER_BLOCKS, MAX_GRID_X, MAX_GRID_Y, MAX_SHARED_BYTES};
use coalesce_kernels::types::{LoadMap, StoreMap, TensorMap};

/// Grid, block, dynamic shared memory and cluster size of one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch {
    /// Blocks in x and y.
    pub grid: (u32, u32),
    /// Threads per block in x and y.
    pub block: (u32, u32),
    /// Dynamic shared memory per block, in bytes. Past [`coalesce_kernels::launch::DEFAULT_SHARED_BYTES`] the launch opts
    /// the function in (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
    pub shared_bytes: u32,
    /// Blocks per thread-block cluster along x (1: no clusters; more needs sm_90 and is
    /// launched with `cuLaunchKernelEx`). The grid's x dimension must be a multiple of it.
    pub cluster: u32,
}

impl Launch {
    /// A 1-D launch of `blocks` blocks of `threads` threads, no shared memory.
    pub const fn linear(blocks: u32, threads: u32) -> Self {
        Launch { grid: (blocks, 1), block: (threads, 1), shared_bytes: 0, cluster: 1 }
    }

    /// The same launch in clusters of `blocks` blocks along x.
    pub const fn with_cluster(mut self, blocks: u32) -> Self {
        self.cluster = blocks;
        self
    }

    /// The same launch with `bytes` of dynamic shared memory per block.
    pub const fn with_shared(mut self, bytes: u32) -> Self {
        self.shared_bytes = bytes;
        self
    }

    /// Threads in one block (in 64 bits: any `block` a caller writes, not only the at most
    /// [`MAX_BLOCK_THREADS`] that [`Launch::check_limits`] lets through).
    pub const fn block_threads(&self) -> u64 {
        self.block.0 as u64 * self.block.1 as u64
    }

    /// Blocks in the grid.
    pub const fn blocks(&self) -> u64 {
        self.grid.0 as u64 * self.grid.1 as u64
    }

    /// Checks the launch against the driver's limits (grid and block sizes; a zero anywhere).
    pub fn check_limits(&self) -> Result<()> {
        let (gx, gy) = self.grid;
        let (bx, by) = self.block;
        let bad = |what, value: u64, max: u64| Err(Error::OutOfRange { what, value, min: 1, max });
        if gx == 0 || gx > MAX_GRID_X {
            return bad("grid x", gx.into(), MAX_GRID_X.into());
        }
        if gy == 0 || gy > MAX_GRID_Y {
            return bad("grid y", gy.into(), MAX_GRID_Y.into());
        }
        let threads = self.block_threads();
        if bx == 0 || by == 0 || threads > MAX_BLOCK_THREADS.into() {
            return bad("threads per block", threads, MAX_BLOCK_THREADS.into());
        }
        if self.cluster == 0 || self.cluster > MAX_CLUSTER_BLOCKS {
            return bad("blocks per cluster", self.cluster.into(), MAX_CLUSTER_BLOCKS.into());
        }
        if !gx.is_multiple_of(self.cluster) {
            return Err(Error::Unsupported(format!(
                "grid x = {gx} is not a multiple of the cluster size {}",
                self.cluster
            )));
        }
        if self.shared_bytes > MAX_SHARED_BYTES {
            return bad("dynamic shared memory bytes", self.shared_bytes.into(), MAX_SHARED_BYTES.into());
        }
        Ok(())
    }
}

/// A `*const T` kernel argument: the address of device memory borrowed for reading for `'a`.
pub struct In<'a, T: DeviceCopy> {
    address: u64,
    device: ArgDevice,
    _borrow: PhantomData<DeviceView<'a, T>>,
}

impl<'a, T: DeviceCopy> In<'a, T> {
    /// The start of `memory`.
    pub fn of(memory: &'a impl DeviceRead<T>) -> Self {
        Self::from_view(memory.view())
    }

    /// Elements `range` of `memory` (e.g. one array of an SoA buffer), or
    /// [`Error::BadRange`].
    pub fn part(memory: &'a impl DeviceRead<T>, range: std::ops::Range<usize>) -> Result<Self> {
        Ok(Self::from_view(memory.view().sub(range)?))
    }

    /// The start of `view` (for views held in a struct, e.g. one array of a
    /// [`crate::lessons::layouts::Soa3`]).
    pub fn from_view(view: DeviceView<'a, T>) -> Self {
        In { address: view.address(), device: ArgDevice::of(view.home()), _borrow: PhantomData }
    }

    /// The device address.
    pub fn address(&self) -> u64 {
        self.address
    }
}

impl<T: DeviceCopy> Clone for In<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: DeviceCopy> Copy for In<'_, T> {}

impl<T: DeviceCopy> std::fmt::Debug for In<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "In({:#x})", self.address())
    }
}

/// A `*mut T` kernel argument: the address of device memory borrowed exclusively for `'a`.
pub struct Out<'a, T: DeviceCopy> {
    address: u64,
    device: ArgDevice,
    _borrow: PhantomData<DeviceViewMut<'a, T>>,
}

impl<'a, T: DeviceCopy> Out<'a, T> {
    /// The start of `memory`.
    pub fn of(memory: &'a mut impl DeviceWrite<T>) -> Self {
        Self::from_view(memory.view_mut())
    }

    /// The start of `view` (for views held in a struct, e.g. one array of a
    /// [`crate::lessons::layouts::Soa3Mut`]).
    pub fn from_view(view: DeviceViewMut<'a, T>) -> Self {
        Out { address: view.address(), device: ArgDevice::of(view.home()), _borrow: PhantomData }
    }

    /// The same memory seen as elements of `U` (the fill writes any 4-byte-multiple type as
    /// words).
    ///
    /// # Safety
    /// `U` must be valid for every bit pattern the kernel writes, and the memory must be
    /// aligned for `U`; the caller converts lengths itself.
    pub(crate) unsafe fn cast<U: DeviceCopy>(self) -> Out<'a, U> {
        Out { address: self.address, device: self.device, _borrow: PhantomData }
    }

    /// The device address.
    pub fn address(&self) -> u64 {
        self.address
    }
}

impl<T: DeviceCopy> std::fmt::Debug for Out<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Out({:#x})", self.address())
    }
}

/// Where a kernel argument's memory lives, which [`crate::Gpu::launch`] checks against its own
/// device before launching. Hidden, as are the [`DeviceParam`] and [`Signature`] methods that
/// return it: how an argument reaches the driver is [`crate::Gpu::launch`]'s business.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgDevice {
    /// A scalar: no memory.
    None,
    /// Memory on the device of this ordinal.
    Device(u32),
    /// One of the transaction model's stand-ins: no memory at all, never launched.
    Modelled,
}

impl ArgDevice {
    pub(crate) fn of(home: Home<'_>) -> Self {
        home.ordinal().map_or(ArgDevice::Modelled, ArgDevice::Device)
    }
}

/// A [`LoadMap`] kernel argument: a tensor map passed by value (a grid constant: the driver
/// copies its 128 bytes into the launch's parameters) whose tensor the kernel reads through the
/// TMA, borrowing the tensor (shared) for `'a`. Made only by
/// [`crate::transpose::plan_tma`], which checks the map describes that tensor; hidden, since
/// nothing outside this crate can make or take one.
#[doc(hidden)]
pub struct MapIn<'a> {
    map: TensorMap,
    device: ArgDevice,
    _borrow: PhantomData<DeviceView<'a, f32>>,
}

/// A [`StoreMap`] kernel argument: as [`MapIn`], but the tensor is borrowed exclusively (the
/// kernel writes it through the TMA). Made only by [`crate::transpose::plan_tma`].
#[doc(hidden)]
pub struct MapOut<'a> {
    map: TensorMap,
    device: ArgDevice,
    _borrow: PhantomData<DeviceViewMut<'a, f32>>,
}

impl<'a> MapIn<'a> {
    /// `map`, borrowing `tensor`.
    ///
    /// # Safety
    /// `map` is a tensor map whose tensor lies inside `tensor`.
    pub(crate) unsafe fn new(map: TensorMap, tensor: &'a impl DeviceRead<f32>) -> Self {
        MapIn { map, device: ArgDevice::of(tensor.view().home()), _borrow: PhantomData }
    }
}

impl<'a> MapOut<'a> {
    /// `map`, borrowing `tensor` exclusively.
    ///
    /// # Safety
    /// `map` is a tensor map whose tensor lies inside `tensor`.
    pub(crate) unsafe fn new(map: TensorMap, tensor: &'a mut impl DeviceWrite<f32>) -> Self {
        MapOut { map, device: ArgDevice::of(tensor.view_mut().home()), _borrow: PhantomData }
    }
}

impl std::fmt::Debug for MapIn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MapIn(..)")
    }
}

impl std::fmt::Debug for MapOut<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MapOut(..)")
    }
}

/// A kernel parameter type and the host value passed for it: `*const T` takes an [`In<T>`], `*mut T`
/// an [`Out<T>`], a scalar (`u32`, `u64`, `i32`, `f32`) itself, and a tensor map the borrow its
/// plan made (the TMA transpose's). Its methods, which hand the value to the driver, are hidden.
pub trait DeviceParam<'a> {
    /// What the host passes for a parameter of this type.
    type Host;
    /// The address of the bytes the driver copies into the parameter: a pointer's 64-bit device
    /// address, a tensor map's 128 bytes, a scalar itself.
    #[doc(hidden)]
    fn value(host: &Self::Host) -> *const c_void;
    /// Where the argument's memory lives.
    #[doc(hidden)]
    fn device(host: &Self::Host) -> ArgDevice;
    /// Whether the kernel may write through it (an output pointer or a store map).
    #[doc(hidden)]
    const WRITTEN: bool = false;
}

impl<'a, T: DeviceCopy + 'a> DeviceParam<'a> for *const T {
    type Host = In<'a, T>;
    fn value(host: &In<'a, T>) -> *const c_void {
        (&raw const host.address).cast()
    }
    fn device(host: &In<'a, T>) -> ArgDevice {
        host.device
    }
}

impl<'a, T: DeviceCopy + 'a> DeviceParam<'a> for *mut T {
    type Host = Out<'a, T>;
    const WRITTEN: bool = true;
    fn value(host: &Out<'a, T>) -> *const c_void {
        (&raw const host.address).cast()
    }
    fn device(host: &Out<'a, T>) -> ArgDevice {
        host.device
    }
}

impl<'a> DeviceParam<'a> for LoadMap {
    type Host = MapIn<'a>;
    fn value(host: &MapIn<'a>) -> *const c_void {
        (&raw const host.map).cast()
    }
    fn device(host: &MapIn<'a>) -> ArgDevice {
        host.device
    }
}

impl<'a> DeviceParam<'a> for StoreMap {
    type Host = MapOut<'a>;
    const WRITTEN: bool = true;
    fn value(host: &MapOut<'a>) -> *const c_void {
        (&raw const host.map).cast()
    }
    fn device(host: &MapOut<'a>) -> ArgDevice {
        host.device
    }
}

macro_rules! scalar_params {
    ($($t:ty),*) => {$(
        impl DeviceParam<'_> for $t {
            type Host = $t;
            fn value(host: &$t) -> *const c_void {
                (host as *const $t).cast()
            }
            fn device(_: &$t) -> ArgDevice {
                ArgDevice::None
            }
        }
    )*};
}
scalar_params!(u32, u64, i32, f32);

/// Most parameters a kernel may take.
pub(crate) const MAX_PARAMS: usize = 8;

/// Pointers to each argument value, in order: what `cuLaunchKernel` reads. Hidden with the
/// [`Signature`] method that makes it.
#[doc(hidden)]
pub struct ArgPointers {
    pointers: [*mut c_void; MAX_PARAMS],
    count: usize,
}

impl ArgPointers {
    /// The pointers, one per parameter.
    pub fn as_mut_slice(&mut self) -> &mut [*mut c_void] {
        &mut self.pointers[..self.count]
    }
}

/// A kernel's parameter list (`fn(P1, .., Pn)`, up to 8 parameters, each a [`DeviceParam`]) and
/// the host argument tuple it takes.
pub trait Signature<'a> {
    /// `(P1::Host, .., Pn::Host)`.
    type Args;
    /// Pointers to each of `args`' values, valid while `args` is.
    #[doc(hidden)]
    fn arg_pointers(args: &Self::Args) -> ArgPointers;
    /// Where each argument's memory lives, in order.
    #[doc(hidden)]
    fn devices(args: &Self::Args) -> impl Iterator<Item = ArgDevice>;
    /// Where each argument the kernel may write lives, in order.
    #[doc(hidden)]
    fn outputs(args: &Self::Args) -> impl Iterator<Item = ArgDevice>;
}

macro_rules! signatures {
    ($($n:literal: ($($p:ident $i:tt),*);)*) => {$(
        impl<'a, $($p: DeviceParam<'a>),*> Signature<'a> for fn($($p),*) {
            type Args = ($($p::Host,)*);
            #[allow(unused_mut)]
            fn arg_pointers(args: &Self::Args) -> ArgPointers {
                let mut pointers = [std::ptr::null_mut(); MAX_PARAMS];
                $(pointers[$i] = $p::value(&args.$i).cast_mut();)*
                let _ = args;
                ArgPointers { pointers, count: $n }
            }
            fn devices(args: &Self::Args) -> impl Iterator<Item = ArgDevice> {
                let _ = args;
                [$($p::device(&args.$i)),*].into_iter()
            }
            fn outputs(args: &Self::Args) -> impl Iterator<Item = ArgDevice> {
                let _ = args;
                let all: [(bool, ArgDevice); $n] = [$(($p::WRITTEN, $p::device(&args.$i))),*];
                all.into_iter().filter(|w| w.0).map(|w| w.1)
            }
        }
    )*};
}
signatures! {
    0: ();
    1: (A 0);
    2: (A 0, B 1);
    3: (A 0, B 1, C 2);
    4: (A 0, B 1, C 2, D 3);
    5: (A 0, B 1, C 2, D 3, E 4);
    6: (A 0, B 1, C 2, D 3, E 4, F 5);
    7: (A 0, B 1, C 2, D 3, E 4, F 5, G 6);
    8: (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
}

/// A launch a plan has proved in bounds: the kernel, its grid and its typed arguments, which
/// borrow the buffers for `'a`. Run it with [`crate::Gpu::launch`].
#[must_use = "a Call does nothing until it is launched"]
pub struct Call<'a, Sig: Signature<'a>> {
    kernel: Kernel<Sig>,
    launch: Launch,
    args: Sig::Args,
    /// Whether the kernel adds into its outputs with atomics ([`Call::adding_atomically`]).
    atomic: bool,
}

impl<'a, Sig: Signature<'a>> Call<'a, Sig> {
    /// Couples `kernel`, `launch` and `args`.
    ///
    /// # Safety
    /// For every thread of `launch`, every address the kernel computes from `args` lies inside
    /// the slice its pointer argument was taken from, and the kernel's other preconditions hold
    /// for `launch` (16-byte alignment where it loads vectors, the block size it assumes, the
    /// shared memory it indexes). Plans establish this after validating the sizes.
    pub unsafe fn new(kernel: Kernel<Sig>, launch: Launch, args: Sig::Args) -> Self {
        Call { kernel, launch, args, atomic: false }
    }

    /// The same call, marked as one whose kernel adds into its outputs with atomics (`RED`,
    /// `ATOM`): [`crate::Gpu::launch`] takes it over another device's memory only where the link
    /// does atomics natively (over PCIe a peer atomic is a read and a write apart, and
    /// concurrent ones lose counts).
    pub(crate) fn adding_atomically(mut self) -> Self {
        self.atomic = true;
        self
    }

    /// Whether the kernel adds into its outputs with atomics.
    pub fn atomic(&self) -> bool {
        self.atomic
    }

    /// The kernel.
    pub fn kernel(&self) -> Kernel<Sig> {
        self.kernel
    }

    /// Its grid, block and shared memory.
    pub fn launch(&self) -> Launch {
        self.launch
    }

    /// Its arguments, in the kernel's parameter order.
    pub fn args(&self) -> &Sig::Args {
        &self.args
    }

    /// Pointers to the arguments for the driver.
    pub(crate) fn arg_pointers(&self) -> ArgPointers {
        Sig::arg_pointers(&self.args)
    }
}

impl<'a, Sig: Signature<'a>> std::fmt::Debug for Call<'a, Sig> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call").field("kernel", &self.kernel).field("launch", &self.launch).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_threads_do_not_overflow() {
        let huge = Launch { grid: (1, 1), block: (65_536, 65_536), shared_bytes: 0, cluster: 1 };
        assert_eq!(huge.block_threads(), 1 << 32);
        let max = Launch { block: (u32::MAX, u32::MAX), ..huge };
        assert_eq!(max.block_threads(), u64::from(u32::MAX) * u64::from(u32::MAX));
        for launch in [huge, max] {
            let refused = launch.check_limits();
            assert!(
                matches!(refused, Err(Error::OutOfRange { what: "threads per block", value, .. }) if value == launch.block_threads()),
                "{refused:?}"
            );
        }
        assert_eq!(Launch { block: (32, 8), ..huge }.block_threads(), 256);
    }

    #[test]
    fn limits_are_checked() {
        assert!(Launch::linear(1, 256).check_limits().is_ok());
        assert!(Launch::linear(0, 256).check_limits().is_err());
        assert!(Launch::linear(1, 1025).check_limits().is_err());
        assert!(Launch { grid: (1, 65_536), block: (32, 8), shared_bytes: 0, cluster: 1 }.check_limits().is_err());
        assert!(Launch::linear(MAX_GRID_X, 1024).check_limits().is_ok());
        assert!(Launch::linear(16, 256).with_cluster(8).check_limits().is_ok());
        assert!(Launch::linear(12, 256).with_cluster(8).check_limits().is_err());
        assert!(Launch::linear(16, 256).with_cluster(0).check_limits().is_err());
        assert!(Launch::linear(32, 256).with_cluster(MAX_CLUSTER_BLOCKS + 1).check_limits().is_err());
        assert!(Launch::linear(1, 32).with_shared(MAX_SHARED_BYTES).check_limits().is_ok());
        assert!(Launch::linear(1, 32).with_shared(MAX_SHARED_BYTES + 1).check_limits().is_err());
        const { assert!(coalesce_kernels::launch::DEFAULT_SHARED_BYTES < MAX_SHARED_BYTES) };
    }

    #[test]
    fn arguments_are_passed_by_address_in_order() {
        // SAFETY: stand-ins; nothing is launched.
        let (a, mut b) =
            unsafe { (DeviceViewMut::<f32>::stand_in(0x1000, 4), DeviceViewMut::<f32>::stand_in(0x2000, 4)) };
        let args = (In::of(&a), Out::of(&mut b), 7u32);
        let mut p = <fn(*const f32, *mut f32, u32) as Signature>::arg_pointers(&args);
        let p = p.as_mut_slice();
        assert_eq!(p.len(), 3);
        // SAFETY: each pointer points at the value of the matching parameter type.
        unsafe {
            assert_eq!(*(p[0] as *const u64), 0x1000);
            assert_eq!(*(p[1] as *const u64), 0x2000);
            assert_eq!(*(p[2] as *const u32), 7);
        }
        let devices: Vec<_> = <fn(*const f32, *mut f32, u32) as Signature>::devices(&args).collect();
        assert_eq!(devices, [ArgDevice::Modelled, ArgDevice::Modelled, ArgDevice::None]);
        // Only the output pointer is written: what a peer-atomics check looks at.
        let outputs: Vec<_> = <fn(*const f32, *mut f32, u32) as Signature>::outputs(&args).collect();
        assert_eq!(outputs, [ArgDevice::Modelled]);
        // The tensor-map arguments are the maps' 128 bytes, passed by value.
        assert_eq!(std::mem::size_of::<LoadMap>(), 128);
        assert_eq!(std::mem::size_of::<StoreMap>(), 128);
    }

    #[test]
    fn sub_slices_stay_inside() {
        // SAFETY: a stand-in; nothing is launched.
        let a = unsafe { DeviceViewMut::<f32>::stand_in(0x1000, 12) };
        assert_eq!(In::part(&a, 4..8).unwrap().address(), 0x1010);
        assert!(matches!(In::part(&a, 8..13), Err(Error::BadRange { .. })));
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = In::part(&a, 5..3);
        assert_eq!(reversed.unwrap_err(), Error::BadRange { start: Some(5), end: Some(3), len: 12 });
    }
}
