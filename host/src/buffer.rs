//! Device memory the borrow checker guards: an owned [`DeviceBuffer`] and the views borrowed
//! from it, [`DeviceView`] (shared, `Copy`) and [`DeviceViewMut`] (exclusive).
//!
//! cust's `DeviceSlice` is `Copy` and its `index` returns a descriptor with no lifetime, so a
//! safe program could keep one past the buffer's free or hold an input and an output over the
//! same bytes. Here a view borrows its buffer: a buffer cannot be dropped while a view of it
//! lives, `slice_mut` and `split_at_mut` hand out exclusive views of disjoint ranges, and no
//! safe function makes a view from an address. Every plan takes views through the sealed
//! [`DeviceRead`] and [`DeviceWrite`] traits, so only memory allocated here reaches a launch.
//!
//! Each buffer keeps its device's (primary) context alive and makes it current on the calling
//! thread before every driver call, so a buffer may be used, and dropped, from any thread and
//! after the [`crate::Gpu`] that allocated it is gone.
//!
//! # What does not compile
//!
//! Each pattern that reached freed, aliased or made-up memory through cust's slices is refused
//! by the compiler (these examples are tests: `cargo test` fails if one compiles, or fails for
//! another reason than the error code named).
//!
//! A view cannot outlive its buffer (E0505: the buffer is moved while borrowed):
//! ```compile_fail,E0505
//! # fn main() -> coalesce::Result<()> {
//! # use coalesce::{DeviceRead, Gpu, coalescing};
//! let gpu = Gpu::new()?;
//! let buf = gpu.upload(&[1.0f32; 1024])?;
//! let mut out = gpu.poisoned::<f32>(1024, 0)?;
//! let v = buf.view();
//! drop(buf);
//! coalescing::copy(&gpu, &v, &mut out)?;
//! # Ok(()) }
//! ```
//! nor be copied out of it (E0614: a buffer is not a pointer to a descriptor):
//! ```compile_fail,E0614
//! # fn main() -> coalesce::Result<()> {
//! # use coalesce::{Gpu, coalescing};
//! let gpu = Gpu::new()?;
//! let buf = gpu.upload(&[1.0f32; 1024])?;
//! let mut out = gpu.poisoned::<f32>(1024, 0)?;
//! let v = *buf;
//! drop(buf);
//! coalescing::copy(&gpu, &v, &mut out)?;
//! # Ok(()) }
//! ```
//! An output cannot alias an input (E0502: borrowed as mutable while borrowed as immutable),
//! whether the histogram's bins are part of its values:
//! ```compile_fail,E0502
//! # fn main() -> coalesce::Result<()> {
//! # use coalesce::{Gpu, histogram};
//! let gpu = Gpu::new()?;
//! let mut values = gpu.upload(&[7u32; 4096])?;
//! let mut bins = values.slice_mut(0..256)?;
//! histogram::run(&gpu, histogram::Method::Global, &values, &mut bins)?;
//! # Ok(()) }
//! ```
//! or a transpose writes the matrix it reads:
//! ```compile_fail,E0502
//! # fn main() -> coalesce::Result<()> {
//! # use coalesce::{Gpu, transpose};
//! let gpu = Gpu::new()?;
//! let mut m = gpu.upload(&[1.0f32; 15])?;
//! let mut o = m.slice_mut(..)?;
//! transpose::transpose(&gpu, &m, &mut o, 3, 5)?;
//! # Ok(()) }
//! ```
//! The same holds across devices: a peer copy cannot write the buffer it reads (E0502):
//! ```compile_fail,E0502
//! # fn main() -> coalesce::Result<()> {
//! # use coalesce::Gpu;
//! let (gpu, other) = (Gpu::with_device(0)?, Gpu::with_device(1)?);
//! let mut far = other.upload(&[1.0f32; 1024])?;
//! let mut back = far.slice_mut(..)?;
//! gpu.memcpy_peer(&far, &mut back)?;
//! # Ok(()) }
//! ```
//! Two exclusive views of one buffer must be disjoint (E0499: borrowed as mutable twice):
//! ```compile_fail,E0499
//! # fn main() -> coalesce::Result<()> {
//! # use coalesce::{Gpu, coalescing};
//! let gpu = Gpu::new()?;
//! let mut buf = gpu.upload(&[1.0f32; 1024])?;
//! let mut a = buf.slice_mut(..512)?;
//! let b = buf.slice_mut(256..)?;
//! coalescing::copy(&gpu, &b, &mut a)?;
//! # Ok(()) }
//! ```
//! while [`DeviceWrite::split_at_mut`] hands out two that are, and every call above compiles
//! with memory that does not alias:
//! ```no_run
//! # fn main() -> coalesce::Result<()> {
//! use coalesce::{DeviceWrite, Gpu, coalescing, histogram, transpose};
//! let gpu = Gpu::new()?;
//! let mut buf = gpu.upload(&[1.0f32; 1024])?;
//! let (mut a, b) = buf.split_at_mut(512)?;
//! coalescing::copy(&gpu, &b, &mut a)?;
//! let values = gpu.upload(&[7u32; 4096])?;
//! let mut bins = gpu.poisoned::<u32>(256, 0)?;
//! histogram::run(&gpu, histogram::Method::Global, &values.slice(1..)?, &mut bins)?;
//! let m = gpu.upload(&[1.0f32; 15])?;
//! let mut o = gpu.poisoned::<f32>(16, 0)?;
//! transpose::transpose(&gpu, &m, &mut o.slice_mut(1..)?, 3, 5)?;
//! let other = Gpu::with_device(1)?;
//! let mut far = other.poisoned::<f32>(1024, 0)?;
//! gpu.memcpy_peer(&buf, &mut far)?;
//! # Ok(()) }
//! ```
//!
//! No safe function makes a view from an address: [`DeviceViewMut::stand_in`] is `unsafe`
//! (E0133), as is opening a handle on PTX that is not this crate's kernels,
//! ```compile_fail,E0133
//! let fake = coalesce::DeviceViewMut::<f32>::stand_in(0x7000_0000, 1 << 20);
//! ```
//! ```compile_fail,E0133
//! let gpu = coalesce::Gpu::open(0, ".version 8.0\n.target sm_75\n.address_size 64\n");
//! ```
// The model's stand-ins exist with its feature only (E0433 without it).
#![cfg_attr(
    feature = "model",
    doc = "and the transaction model's stand-ins are private (E0603):
```compile_fail,E0603
let fake = coalesce::model::fake_slice::<f32>(0, 1 << 20);
```"
)]
//! Views have no public fields or constructor (rustc: "cannot construct with struct literal
//! syntax due to private fields", which has no error code), and the traits plans take are sealed
//! (E0277: a type outside the crate cannot implement the private supertrait):
//! ```compile_fail
//! let fake = coalesce::DeviceView::<f32> { address: 0x7000_0000 };
//! ```
//! ```compile_fail,E0277
//! struct Forged;
//! impl coalesce::DeviceRead<f32> for Forged {
//!     fn view(&self) -> coalesce::DeviceView<'_, f32> { unimplemented!() }
//! }
//! ```

use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

use cust::context::{Context, CurrentContext};
use cust::memory::{DeviceCopy, DevicePointer};

use crate::error::{Error, Result};

/// Makes `context` current on this thread (a cheap driver call: every driver-facing method
/// calls it first, since a thread starts with no current context).
pub(crate) fn bind(context: &Context) -> Result<()> {
    CurrentContext::set_current(context)?;
    Ok(())
}

/// Where a view's memory lives: the device's context, or nowhere (a view the transaction model
/// plans over, which must never reach the driver).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Home<'a> {
    Device { context: &'a Context, ordinal: u32 },
    Model,
}

impl<'a> Home<'a> {
    /// The context, or why there is none.
    pub(crate) fn context(self) -> Result<&'a Context> {
        match self {
            Home::Device { context, .. } => Ok(context),
            Home::Model => Err(Error::Unsupported("a modelled buffer has no device memory".into())),
        }
    }

    /// The device ordinal (`None` for a modelled view).
    pub(crate) fn ordinal(self) -> Option<u32> {
        match self {
            Home::Device { ordinal, .. } => Some(ordinal),
            Home::Model => None,
        }
    }
}

/// `len` elements of `T` in device memory, owned: freed when dropped (on any thread, after the
/// queued work that uses it, as `cuMemFree` waits for it).
pub struct DeviceBuffer<T: DeviceCopy> {
    address: u64,
    len: usize,
    context: Context,
    ordinal: u32,
    _owns: PhantomData<T>,
}

/// A shared view of elements of a [`DeviceBuffer`], valid while the buffer is borrowed.
pub struct DeviceView<'a, T: DeviceCopy> {
    address: u64,
    len: usize,
    home: Home<'a>,
    _borrow: PhantomData<&'a T>,
}

/// An exclusive view of elements of a [`DeviceBuffer`]: nothing else reads or writes them while
/// it lives.
pub struct DeviceViewMut<'a, T: DeviceCopy> {
    address: u64,
    len: usize,
    home: Home<'a>,
    _borrow: PhantomData<&'a mut T>,
}

impl<T: DeviceCopy> Clone for DeviceView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: DeviceCopy> Copy for DeviceView<'_, T> {}

mod sealed {
    pub trait Sealed {}
}

/// Device memory a kernel may read: a [`DeviceBuffer`], a [`DeviceView`] or a
/// [`DeviceViewMut`]. Sealed: only this crate's types, whose addresses come from the driver's
/// allocator, implement it.
pub trait DeviceRead<T: DeviceCopy>: sealed::Sealed {
    /// The whole of it as a shared view.
    fn view(&self) -> DeviceView<'_, T>;

    /// Elements.
    fn len(&self) -> usize {
        self.view().len
    }

    /// Whether it holds no element.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The device address of its first element.
    fn address(&self) -> u64 {
        self.view().address
    }

    /// The ordinal of the device its memory is on (`None` only for the model's stand-ins).
    fn device(&self) -> Option<u32> {
        self.view().home.ordinal()
    }

    /// The ordinal of the device the driver says holds its memory
    /// (`cuPointerGetAttribute`): [`DeviceRead::device`] asked of the driver instead of the
    /// handle that allocated it, for checks that buffers land where they should.
    fn resident_device(&self) -> Result<u32> {
        let view = self.view();
        bind(view.home.context()?)?;
        crate::driver::pointer_device(view.address)
    }

    /// Elements `range`, or [`Error::BadRange`] past the end (or with start > end).
    fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'_, T>> {
        self.view().sub(range)
    }

    /// Its elements copied to a new host vector (waits for the work queued before it on every
    /// blocking stream of the device, as all of coalesce's streams are). [`Error::HostMemory`]
    /// where the host cannot hold them (an allocation failure aborted the process before).
    fn to_vec(&self) -> Result<Vec<T>> {
        let view = self.view();
        let mut host = Vec::new();
        if view.len > 0 {
            // First: a stand-in has no memory to copy, whatever length it claims.
            bind(view.home.context()?)?;
            crate::error::reserve("copy to the host", &mut host, view.len)?;
            // SAFETY: the view covers live memory of the context just made current (it borrows
            // its buffer); `host` has capacity for `len` elements (reserved above), which the
            // copy writes in full before `set_len` exposes them, and `T: DeviceCopy` holds any
            // bytes the device does.
            unsafe {
                crate::driver::copy_to_host(view.address, host.as_mut_ptr(), view.len)?;
                host.set_len(view.len);
            }
        }
        Ok(host)
    }
}

/// Device memory a kernel may write: a [`DeviceBuffer`] (borrowed `&mut`) or a
/// [`DeviceViewMut`].
pub trait DeviceWrite<T: DeviceCopy>: DeviceRead<T> {
    /// The whole of it as an exclusive view.
    fn view_mut(&mut self) -> DeviceViewMut<'_, T>;

    /// Elements `range`, exclusively, or [`Error::BadRange`].
    fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceViewMut<'_, T>> {
        let len = self.len();
        let (start, end) = bounds(&range, len)?;
        let whole = self.view_mut();
        Ok(DeviceViewMut { address: offset::<T>(whole.address, start), len: end - start, ..whole })
    }

    /// Two exclusive views, of elements `..mid` and `mid..`; [`Error::BadRange`] if
    /// `mid > len`.
    fn split_at_mut(&mut self, mid: usize) -> Result<(DeviceViewMut<'_, T>, DeviceViewMut<'_, T>)> {
        let len = self.len();
        bounds(&(mid..len), len)?;
        let whole = self.view_mut();
        let head = DeviceViewMut { address: whole.address, len: mid, home: whole.home, _borrow: PhantomData };
        let tail = DeviceViewMut { address: offset::<T>(whole.address, mid), len: len - mid, ..whole };
        Ok((head, tail))
    }

    /// Overwrites every element with `data` (equal lengths, else [`Error::LengthMismatch`]).
    fn copy_from_host(&mut self, data: &[T]) -> Result<()> {
        let view = self.view_mut();
        crate::error::exactly("host data", data.len(), view.len)?;
        if view.len > 0 {
            bind(view.home.context()?)?;
            // SAFETY: the view covers live memory of the context just made current, borrowed
            // exclusively; `data` has exactly as many elements.
            unsafe { crate::driver::copy_to_device(data.as_ptr(), view.address, view.len)? };
        }
        Ok(())
    }
}

/// `start..end` of `range` over `len` elements, checked.
fn bounds(range: &impl RangeBounds<usize>, len: usize) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => Some(s),
        Bound::Excluded(&s) => s.checked_add(1),
        Bound::Unbounded => Some(0),
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1),
        Bound::Excluded(&e) => Some(e),
        Bound::Unbounded => Some(len),
    };
    match (start, end) {
        (Some(start), Some(end)) if start <= end && end <= len => Ok((start, end)),
        (start, end) => Err(Error::BadRange { start, end, len }),
    }
}

/// The address `elements` elements past `address`. Inside an allocation this never wraps (its
/// bytes fit the address space); a stand-in's made-up range may, and then wraps rather than
/// panics, as nothing dereferences it.
fn offset<T>(address: u64, elements: usize) -> u64 {
    address.wrapping_add((elements as u64).wrapping_mul(std::mem::size_of::<T>() as u64))
}

impl<'a, T: DeviceCopy> DeviceView<'a, T> {
    /// Elements `range` of this view, borrowing the same buffer for as long.
    pub(crate) fn sub(self, range: impl RangeBounds<usize>) -> Result<DeviceView<'a, T>> {
        let (start, end) = bounds(&range, self.len)?;
        Ok(DeviceView { address: offset::<T>(self.address, start), len: end - start, ..self })
    }

    /// Where its memory lives.
    pub(crate) fn home(&self) -> Home<'a> {
        self.home
    }
}

/// The elements of `U` that `len` elements of `T` at `address` are: `Some(count)` where their
/// bytes start on a boundary of `U`'s alignment and are a whole number of `U`.
fn whole_units<T, U>(address: u64, len: usize) -> Option<usize> {
    let bytes = len.checked_mul(std::mem::size_of::<T>())?;
    let unit = std::mem::size_of::<U>();
    let aligned = address.is_multiple_of(std::mem::align_of::<U>() as u64);
    (unit > 0 && aligned && bytes.is_multiple_of(unit)).then(|| bytes / unit)
}

impl<'a, T: DeviceCopy> DeviceView<'a, T> {
    /// The same bytes as elements of `U`, for kernels that only move or add bits of one width
    /// (the copy, the transposes, the wrapping sums): `None` unless they start on a boundary of
    /// `U`'s alignment and are a whole number of `U`. Every bit pattern of the bytes must be a
    /// value of `U` for the kernel's reads (the callers take plain integers and floats).
    pub(crate) fn reinterpret<U: DeviceCopy>(self) -> Option<DeviceView<'a, U>> {
        let len = whole_units::<T, U>(self.address, self.len)?;
        Some(DeviceView { address: self.address, len, home: self.home, _borrow: PhantomData })
    }

    /// The same bytes as 4-byte words, for kernels that only move bits (the copy): `None` unless
    /// they start and end on a 4-byte boundary (any view of 4-, 8- or 16-byte elements does).
    pub(crate) fn into_words(self) -> Option<DeviceView<'a, f32>> {
        self.reinterpret::<f32>()
    }
}

impl<'a, T: DeviceCopy> DeviceViewMut<'a, T> {
    /// Where its memory lives.
    pub(crate) fn home(&self) -> Home<'a> {
        self.home
    }

    /// [`DeviceView::reinterpret`], exclusively: the kernel's writes must be values of `T` too,
    /// which holds for the plain integers and floats the callers take.
    pub(crate) fn reinterpret<U: DeviceCopy>(self) -> Option<DeviceViewMut<'a, U>> {
        let len = whole_units::<T, U>(self.address, self.len)?;
        Some(DeviceViewMut { address: self.address, len, home: self.home, _borrow: PhantomData })
    }

    /// [`DeviceView::into_words`], exclusively.
    pub(crate) fn into_words(self) -> Option<DeviceViewMut<'a, f32>> {
        self.reinterpret::<f32>()
    }

    /// A stand-in for `len` elements at the made-up device address `address`, for planning
    /// launches without a GPU: the transaction model replays plans over such views, and tests
    /// check plans' bounds with them. It belongs to no device, so [`crate::Gpu::launch`],
    /// [`crate::Gpu::memcpy`], [`DeviceRead::to_vec`] and the other driver-facing calls refuse
    /// it with [`Error::Unsupported`].
    ///
    /// # Safety
    /// The address is made up: nothing may read or write through it. Never pass
    /// [`DeviceRead::address`] of a stand-in to code that dereferences device addresses.
    pub unsafe fn stand_in(address: u64, len: usize) -> DeviceViewMut<'static, T> {
        DeviceViewMut { address, len, home: Home::Model, _borrow: PhantomData }
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// A buffer of `len` elements whose contents are unspecified, allocated in `context`
    /// (current on this thread) on device `ordinal`.
    ///
    /// # Safety
    /// Every element must be written before a kernel or a copy reads it, and `context` must be
    /// current on this thread.
    pub(crate) unsafe fn uninitialized(context: &Context, ordinal: u32, len: usize) -> Result<Self> {
        let address = if len == 0 || std::mem::size_of::<T>() == 0 {
            0
        } else {
            // SAFETY: the caller made `context` current; the allocation is owned by the buffer
            // returned and freed by its `Drop` exactly once.
            unsafe { cust::memory::cuda_malloc::<T>(len)?.as_raw() }
        };
        Ok(DeviceBuffer { address, len, context: context.clone(), ordinal, _owns: PhantomData })
    }

    /// Elements `range`, exclusively, for as long as the buffer is borrowed (the inherent form
    /// of [`DeviceWrite::slice_mut`], so it is found without importing the trait).
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceViewMut<'_, T>> {
        DeviceWrite::slice_mut(self, range)
    }

    /// Elements `range`, shared (the inherent form of [`DeviceRead::slice`]).
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'_, T>> {
        DeviceRead::slice(self, range)
    }
}

impl<T: DeviceCopy> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        if self.address == 0 {
            return;
        }
        // A failed free leaks the allocation rather than panicking in a destructor; the context
        // (which this buffer still retains) is made current first, so the free works from any
        // thread and after every `Gpu` is gone.
        if bind(&self.context).is_ok() {
            // SAFETY: `address` came from `cuda_malloc` in this context and is freed once, here;
            // no view outlives the buffer (they borrow it), and cuMemFree waits for queued work.
            let _ = unsafe { cust::memory::cuda_free(DevicePointer::<T>::from_raw(self.address)) };
        }
    }
}

/// The reading methods every program calls, found without importing [`DeviceRead`].
macro_rules! inherent_reads {
    ($($ty:ty),*) => {$(
        impl<T: DeviceCopy> $ty {
            /// Elements.
            pub fn len(&self) -> usize {
                self.len
            }

            /// Whether it holds no element.
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            /// Its elements copied to a new host vector (see [`DeviceRead::to_vec`]).
            pub fn to_vec(&self) -> Result<Vec<T>> {
                DeviceRead::to_vec(self)
            }
        }
    )*};
}
inherent_reads!(DeviceBuffer<T>, DeviceView<'_, T>, DeviceViewMut<'_, T>);

impl<T: DeviceCopy> sealed::Sealed for DeviceBuffer<T> {}
impl<T: DeviceCopy> sealed::Sealed for DeviceView<'_, T> {}
impl<T: DeviceCopy> sealed::Sealed for DeviceViewMut<'_, T> {}

impl<T: DeviceCopy> DeviceRead<T> for DeviceBuffer<T> {
    fn view(&self) -> DeviceView<'_, T> {
        let home = Home::Device { context: &self.context, ordinal: self.ordinal };
        DeviceView { address: self.address, len: self.len, home, _borrow: PhantomData }
    }
}

impl<T: DeviceCopy> DeviceWrite<T> for DeviceBuffer<T> {
    fn view_mut(&mut self) -> DeviceViewMut<'_, T> {
        let home = Home::Device { context: &self.context, ordinal: self.ordinal };
        DeviceViewMut { address: self.address, len: self.len, home, _borrow: PhantomData }
    }
}

impl<T: DeviceCopy> DeviceRead<T> for DeviceView<'_, T> {
    fn view(&self) -> DeviceView<'_, T> {
        *self
    }
}

impl<T: DeviceCopy> DeviceRead<T> for DeviceViewMut<'_, T> {
    fn view(&self) -> DeviceView<'_, T> {
        DeviceView { address: self.address, len: self.len, home: self.home, _borrow: PhantomData }
    }
}

impl<T: DeviceCopy> DeviceWrite<T> for DeviceViewMut<'_, T> {
    fn view_mut(&mut self) -> DeviceViewMut<'_, T> {
        DeviceViewMut { address: self.address, len: self.len, home: self.home, _borrow: PhantomData }
    }
}

macro_rules! debug_as {
    ($($ty:ident),*) => {$(
        impl<T: DeviceCopy> std::fmt::Debug for $ty<'_, T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}<{}>({} at {:#x}", stringify!($ty), std::any::type_name::<T>(), self.len, self.address)?;
                match self.home.ordinal() {
                    Some(d) => write!(f, " on device {d})"),
                    None => f.write_str(", modelled)"),
                }
            }
        }
    )*};
}
debug_as!(DeviceView, DeviceViewMut);

impl<T: DeviceCopy> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = std::any::type_name::<T>();
        write!(f, "DeviceBuffer<{name}>({} at {:#x} on device {})", self.len, self.address, self.ordinal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(len: usize) -> DeviceViewMut<'static, f32> {
        // SAFETY: planned over and checked only; never dereferenced.
        unsafe { DeviceViewMut::stand_in(0x1000, len) }
    }

    #[test]
    fn views_are_words_where_their_bytes_start_and_end_on_4_byte_boundaries() {
        // SAFETY: stand-ins: nothing is dereferenced.
        let (d, b, h) = unsafe {
            (
                DeviceViewMut::<f64>::stand_in(0x1000, 10),
                DeviceViewMut::<u8>::stand_in(0x1000, 12),
                DeviceViewMut::<u16>::stand_in(0x1000, 3),
            )
        };
        // 8-byte elements: any element offset is whole words.
        let (d, b) = (d.view(), b.view());
        assert_eq!(d.into_words().map(|w| (w.address, w.len)), Some((0x1000, 20)));
        assert_eq!(d.sub(1..4).unwrap().into_words().map(|w| (w.address, w.len)), Some((0x1008, 6)));
        // 1-byte elements: only from a 4-byte boundary, in multiples of 4.
        assert_eq!(b.sub(4..12).unwrap().into_words().map(|w| w.len), Some(2));
        assert!(b.sub(1..5).unwrap().into_words().is_none(), "starts mid-word");
        assert!(b.sub(0..6).unwrap().into_words().is_none(), "ends mid-word");
        // 2-byte elements: 3 of them are 6 bytes.
        assert!(h.into_words().is_none());
    }

    #[test]
    fn sub_slices_stay_inside() {
        let mut m = model(12);
        let part = m.slice(4..8).unwrap();
        assert_eq!((part.address(), part.len()), (0x1010, 4));
        assert_eq!(m.slice(..).unwrap().len(), 12);
        assert_eq!(m.slice(12..).unwrap().len(), 0);
        assert_eq!(m.slice(3..=3).unwrap().address(), 0x100c);
        assert!(m.slice(8..13).is_err());
        assert!(m.slice_mut(0..=12).is_err());
        let (a, b) = m.split_at_mut(5).unwrap();
        assert_eq!((a.address(), a.len(), b.address(), b.len()), (0x1000, 5, 0x1014, 7));
        assert!(m.split_at_mut(13).is_err());
        let sub = m.view().sub(2..6).unwrap().sub(1..).unwrap();
        assert_eq!((sub.address(), sub.len()), (0x100c, 3));
    }

    #[test]
    fn a_reversed_range_is_a_bad_range_not_a_length_mismatch() {
        let m = model(12);
        #[allow(clippy::reversed_empty_ranges)]
        let err = m.slice(5..3).unwrap_err();
        assert_eq!(err, Error::BadRange { start: Some(5), end: Some(3), len: 12 });
        assert_eq!(err.to_string(), "range 5..3 does not lie inside 0..12");
        let err = m.slice((Bound::Excluded(usize::MAX), Bound::Unbounded)).unwrap_err();
        assert_eq!(err.to_string(), "range (past usize::MAX)..12 does not lie inside 0..12");
    }

    #[test]
    fn modelled_views_never_reach_the_driver() {
        let mut m = model(4);
        assert_eq!(m.device(), None);
        assert!(matches!(m.to_vec(), Err(Error::Unsupported(_))));
        assert!(matches!(m.copy_from_host(&[0.0; 4]), Err(Error::Unsupported(_))));
        assert!(matches!(m.copy_from_host(&[0.0; 3]), Err(Error::LengthMismatch { .. })));
    }

    #[test]
    fn a_stand_in_of_any_length_is_refused_before_allocating() {
        // 2^62 floats: Vec::with_capacity panicked (capacity overflow) before the home check.
        let huge = model(usize::MAX / 4);
        assert!(matches!(huge.to_vec(), Err(Error::Unsupported(_))));
    }

    #[test]
    fn handles_and_views_cross_threads() {
        fn send_sync<X: Send + Sync>() {}
        send_sync::<DeviceBuffer<f32>>();
        send_sync::<DeviceView<'static, f32>>();
        send_sync::<DeviceViewMut<'static, f32>>();
    }
}
