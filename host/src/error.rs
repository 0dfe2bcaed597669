//! Typed errors: every bad input is caught before a launch and named here.
use cust::error::CudaError;

use coalesce_kernels::launch::MAX_ELEMENTS_32;

/// Everything a coalesce call can fail with. More variants may come: match with a wildcard arm.
/// `Debug` prints the same sentence as `Display` (what `main` returning the error shows).
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No CUDA driver, no device, or no device with that ordinal.
    #[error("no usable CUDA GPU: {0}")]
    NoGpu(String),
    /// The driver rejected a call (allocation, launch, copy, module load...).
    #[error("CUDA driver error: {}", cuda_message(.0))]
    Cuda(#[from] CudaError),
    /// A buffer is shorter (or longer) than the operation needs.
    #[error("{what}: expected {expected} elements, got {got}")]
    LengthMismatch { what: &'static str, expected: usize, got: usize },
    /// A sub-slice range that does not lie inside the buffer (or whose start passes its end);
    /// `None` stands for a bound past `usize::MAX`.
    #[error("range {} does not lie inside 0..{len}", show_range(*start, *end))]
    BadRange { start: Option<usize>, end: Option<usize>, len: usize },
    /// A buffer on another device than the handle launching over it.
    #[error("{what} lives on device {buffer}, but the launch is on device {gpu}")]
    WrongDevice { what: &'static str, buffer: u32, gpu: u32 },
    /// No second device, or one whose memory this device cannot map: the peer lessons need two
    /// GPUs that `cuDeviceCanAccessPeer` pairs.
    #[error("no peer device: {0}")]
    NoPeer(String),
    /// A size of zero (nothing to launch).
    #[error("{0}: size must be at least 1")]
    Empty(&'static str),
    /// A size or parameter past what the kernel supports.
    #[error("{what} = {value} is out of range (allowed {min}..={max})")]
    OutOfRange { what: &'static str, value: u64, min: u64, max: u64 },
    /// A buffer that does not start on the boundary the kernel's vector accesses need. Whole
    /// allocations always do (256 bytes); sub-slices may not.
    #[error("{what} must start on a {align}-byte boundary (address {address:#x})")]
    Misaligned { what: &'static str, address: u64, align: u64 },
    /// A shape or device the kernel does not handle.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A driver call cust does not wrap failed (`error` is the driver's name for the code).
    #[error("{call} failed: {error}")]
    Driver { call: &'static str, error: String },
    /// The kernel's PTX module is not loaded on this device: it needs a newer GPU, or the driver
    /// refused the module (e.g. a driver older than the module's PTX ISA).
    #[error("kernel {kernel} needs {needs}; {why}")]
    ModuleUnavailable { kernel: &'static str, needs: String, why: String },
    /// Host memory the call needs (a CPU reference's output, a copy of device memory, the
    /// model's footprint) that the allocator refused, or more than one allocation may hold
    /// (`isize::MAX` bytes): an error instead of `vec!`'s capacity-overflow panic or the abort
    /// of a failed allocation.
    #[error("{what}: cannot allocate {bytes} bytes of host memory")]
    HostMemory { what: &'static str, bytes: u128 },
    /// A [`model::Buffer`](crate::model::Buffer) passed to a
    /// [`Model`](crate::model::Model) other than the one that made it.
    #[cfg(feature = "model")]
    #[error("the model buffer at {base:#x} was made by another model")]
    ForeignBuffer { base: u64 },
}

impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// The driver's message for `error`. cust's `Display` writes the driver's C string in its debug
/// form (`"\"no CUDA-capable device is detected\""`); this is the text itself, or the variant's
/// name where the driver gives no message.
pub(crate) fn cuda_message(error: &CudaError) -> String {
    use std::fmt::Write;
    let mut shown = String::new();
    if write!(shown, "{error}").is_err() {
        return format!("{error:?}");
    }
    unquote(&shown)
}

/// `text` without the quotes and escapes of a string's debug form (`"a \"b\""` is `a "b"`);
/// any other text as it is.
fn unquote(text: &str) -> String {
    let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
        return text.to_owned();
    };
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match (c, chars.clone().next()) {
            ('\\', Some(next @ ('"' | '\\' | '\''))) => {
                out.push(next);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

impl Error {
    /// Whether the error says the device (or its driver) cannot run the kernel at all, or has
    /// too little memory for the buffers asked of it, so the harness reports SKIPPED instead of
    /// a failure.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Error::ModuleUnavailable { .. } | Error::NoPeer(_) | Error::Cuda(CudaError::OutOfMemory))
    }
}

/// `start..end` as written, a bound past `usize::MAX` as such.
fn show_range(start: Option<usize>, end: Option<usize>) -> String {
    let show = |b: Option<usize>| b.map_or_else(|| "(past usize::MAX)".to_string(), |b| b.to_string());
    format!("{}..{}", show(start), show(end))
}

/// `Result` with coalesce's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Checks that `value` lies in `min..=max`.
pub(crate) fn in_range(what: &'static str, value: u64, min: u64, max: u64) -> Result<()> {
    if (min..=max).contains(&value) { Ok(()) } else { Err(Error::OutOfRange { what, value, min, max }) }
}

/// Checks that a buffer holds at least `expected` elements.
pub(crate) fn at_least(what: &'static str, got: usize, expected: u64) -> Result<()> {
    if got as u64 >= expected {
        Ok(())
    } else {
        Err(Error::LengthMismatch { what, expected: usize::try_from(expected).unwrap_or(usize::MAX), got })
    }
}

/// Checks that a buffer holds exactly `expected` elements.
pub(crate) fn exactly(what: &'static str, got: usize, expected: usize) -> Result<()> {
    if got == expected { Ok(()) } else { Err(Error::LengthMismatch { what, expected, got }) }
}

/// `a * b`, or [`Error::OutOfRange`] naming `what` where the product passes `usize`.
pub(crate) fn product(what: &'static str, a: usize, b: usize) -> Result<usize> {
    a.checked_mul(b).ok_or_else(|| past_usize(what, a as u128 * b as u128))
}

/// `a + b`, or [`Error::OutOfRange`] naming `what` where the sum passes `usize`.
pub(crate) fn sum(what: &'static str, a: usize, b: usize) -> Result<usize> {
    a.checked_add(b).ok_or_else(|| past_usize(what, a as u128 + b as u128))
}

fn past_usize(what: &'static str, value: u128) -> Error {
    Error::OutOfRange { what, value: u64::try_from(value).unwrap_or(u64::MAX), min: 0, max: usize::MAX as u64 }
}

/// A `Vec` of `len` copies of `value`, or [`Error::HostMemory`] naming `what` where the host
/// cannot allocate it.
pub(crate) fn host_vec<T: Clone>(what: &'static str, len: usize, value: T) -> Result<Vec<T>> {
    let mut v = Vec::new();
    reserve(what, &mut v, len)?;
    v.resize(len, value);
    Ok(v)
}

/// Reserves room for `additional` more elements of `v`, or [`Error::HostMemory`] naming `what`.
pub(crate) fn reserve<T>(what: &'static str, v: &mut Vec<T>, additional: usize) -> Result<()> {
    v.try_reserve_exact(additional)
        .map_err(|_| Error::HostMemory { what, bytes: additional as u128 * std::mem::size_of::<T>() as u128 })
}

/// Checks that `len` elements of `T` fit one allocation (`isize::MAX` bytes): no buffer holds
/// more, and the kernels' 64-bit byte and vector counts are sized for that.
pub(crate) fn allocatable<T>(what: &'static str, len: usize) -> Result<()> {
    in_range(what, len as u64, 0, isize::MAX as u64 / std::mem::size_of::<T>().max(1) as u64)
}

/// Checks that a size is not zero.
pub(crate) fn non_empty(what: &'static str, n: usize) -> Result<()> {
    if n == 0 { Err(Error::Empty(what)) } else { Ok(()) }
}

/// Checks `1 <= n <= MAX_ELEMENTS_32` for a lesson kernel with 32-bit indices.
pub(crate) fn elements32(what: &'static str, n: usize) -> Result<u32> {
    non_empty(what, n)?;
    in_range(what, n as u64, 1, MAX_ELEMENTS_32)?;
    Ok(n as u32)
}

/// Checks that a dimension is at least 1 and fits a `u32` kernel parameter.
pub(crate) fn dim32(what: &'static str, n: usize) -> Result<u32> {
    non_empty(what, n)?;
    u32::try_from(n).map_err(|_| Error::OutOfRange { what, value: n as u64, min: 1, max: u32::MAX.into() })
}

/// Checks that a device address is 16-byte aligned, as kernels with 16-byte accesses need.
pub(crate) fn aligned16(what: &'static str, address: u64) -> Result<()> {
    aligned(what, address, 16)
}

/// Checks that a device address is a multiple of `align` bytes.
pub(crate) fn aligned(what: &'static str, address: u64, align: u64) -> Result<()> {
    if address.is_multiple_of(align) { Ok(()) } else { Err(Error::Misaligned { what, address, align }) }
}

/// Checks that `T` is made of whole 4-byte words (the fills and memsets write 32-bit words).
pub(crate) fn words<T>(what: &'static str) -> Result<()> {
    match std::mem::size_of::<T>() {
        size if size > 0 && size.is_multiple_of(4) => Ok(()),
        size => Err(Error::Unsupported(format!("{what}: elements must be a multiple of 4 bytes, not {size}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_little_memory_is_a_skip_not_a_failure() {
        assert!(Error::Cuda(CudaError::OutOfMemory).is_unavailable());
        let module = Error::ModuleUnavailable { kernel: "k", needs: "sm_90".into(), why: "old GPU".into() };
        assert!(module.is_unavailable());
        assert!(Error::NoPeer("one device".into()).is_unavailable());
        assert!(!Error::Cuda(CudaError::LaunchFailed).is_unavailable());
        assert!(!Error::Empty("n").is_unavailable());
    }

    #[test]
    fn checks_name_what_is_wrong() {
        assert_eq!(elements32("n", 0), Err(Error::Empty("n")));
        assert!(matches!(elements32("n", 1 << 31), Err(Error::OutOfRange { max, .. }) if max == (1 << 31) - 1));
        assert_eq!(elements32("n", 5), Ok(5));
        assert!(dim32("rows", 1 << 32).is_err());
        assert_eq!(aligned16("x", 0x1004), Err(Error::Misaligned { what: "x", address: 0x1004, align: 16 }));
        assert!(words::<[f32; 3]>("x").is_ok() && words::<u16>("x").is_err());
        assert!(at_least("x", 3, 4).is_err() && at_least("x", 4, 4).is_ok());
        assert_eq!(host_vec("x", 3, 7u8), Ok(vec![7, 7, 7]));
        // Past isize::MAX bytes: refused, not vec!'s capacity-overflow panic.
        let huge = host_vec("x", usize::MAX / 2, 0u64);
        assert_eq!(huge, Err(Error::HostMemory { what: "x", bytes: (usize::MAX / 2) as u128 * 8 }));
        let msg = Error::Misaligned { what: "reduce partials", address: 0x1004, align: 16 }.to_string();
        assert_eq!(msg, "reduce partials must start on a 16-byte boundary (address 0x1004)");
    }

    #[test]
    fn no_gpu_reads_cleanly_in_display_and_debug() {
        let clean = "no usable CUDA GPU: no CUDA-capable device is detected";
        let e = Error::NoGpu("no CUDA-capable device is detected".into());
        assert_eq!(e.to_string(), clean);
        assert_eq!(format!("{e:?}"), clean);
        assert_eq!(unquote(r#""no CUDA-capable device is detected""#), "no CUDA-capable device is detected");
        assert_eq!(unquote(r#""a \"b\" \\ c""#), r#"a "b" \ c"#);
        assert_eq!(unquote("plain"), "plain");
        // What `Gpu::new` reports without a device: the driver's message, not its debug form.
        if let Err(e) = crate::Gpu::new() {
            for shown in [e.to_string(), format!("{e:?}")] {
                assert!(!shown.contains('"') && !shown.contains('\\'), "{shown}");
            }
        }
    }
}
