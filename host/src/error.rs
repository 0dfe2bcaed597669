//! Typed errors: every bad input is caught before a launch and named here.
use cust::error::CudaError;

/// Everything a coalesce call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No CUDA driver or no device: the machine cannot run kernels.
    #[error("no usable CUDA GPU: {0}")]
    NoGpu(String),
    /// The driver rejected a call (allocation, launch, copy, module load...).
    #[error("CUDA driver error: {0}")]
    Cuda(#[from] CudaError),
    /// A buffer is shorter (or longer) than the operation needs.
    #[error("{what}: expected {expected} elements, got {got}")]
    LengthMismatch { what: &'static str, expected: usize, got: usize },
    /// A size of zero (nothing to launch).
    #[error("{0}: size must be at least 1")]
    Empty(&'static str),
    /// A size or parameter past what the kernel's 32-bit indexing or the sweep supports.
    #[error("{what} = {value} is out of range (allowed {min}..={max})")]
    OutOfRange { what: &'static str, value: u64, min: u64, max: u64 },
    /// A shape the kernel does not handle (e.g. a dimension that is not a tile multiple).
    #[error("unsupported shape: {0}")]
    Unsupported(String),
    /// A GPU result differs from the CPU reference.
    #[error("{what}: mismatch at element {index}: GPU {got}, CPU {want}")]
    Mismatch { what: String, index: usize, got: String, want: String },
}

/// `Result` with coalesce's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Checks that `value` lies in `min..=max`.
pub(crate) fn in_range(what: &'static str, value: u64, min: u64, max: u64) -> Result<()> {
    if (min..=max).contains(&value) { Ok(()) } else { Err(Error::OutOfRange { what, value, min, max }) }
}

/// Checks that a buffer holds at least `expected` elements.
pub(crate) fn at_least(what: &'static str, got: usize, expected: usize) -> Result<()> {
    if got >= expected { Ok(()) } else { Err(Error::LengthMismatch { what, expected, got }) }
}

/// Checks that a buffer holds exactly `expected` elements.
pub(crate) fn exactly(what: &'static str, got: usize, expected: usize) -> Result<()> {
    if got == expected { Ok(()) } else { Err(Error::LengthMismatch { what, expected, got }) }
}

/// Checks that a size is not zero.
pub(crate) fn non_empty(what: &'static str, n: usize) -> Result<()> {
    if n == 0 { Err(Error::Empty(what)) } else { Ok(()) }
}

/// Largest element count a 1-D kernel takes: its indices are `u32` and a grid-stride step is
/// added before the bound check, so stay below 2^31.
pub const MAX_ELEMENTS: usize = (1 << 31) - 1;

/// Checks `1 <= n <= MAX_ELEMENTS`.
pub(crate) fn elements(what: &'static str, n: usize) -> Result<u32> {
    non_empty(what, n)?;
    in_range(what, n as u64, 1, MAX_ELEMENTS as u64)?;
    Ok(n as u32)
}

/// Checks that a device address is 16-byte aligned, as kernels with 16-byte loads need.
/// Whole allocations always are (256-byte aligned); sub-slices may not be.
pub(crate) fn check_aligned16(what: &'static str, address: u64) -> Result<()> {
    if address.is_multiple_of(16) {
        Ok(())
    } else {
        Err(Error::Unsupported(format!("{what} must start on a 16-byte boundary (address {address:#x})")))
    }
}

/// Checks that `T` is a 4-byte element (the fills and memsets work on 32-bit words).
pub(crate) fn four_bytes<T>(what: &'static str) -> Result<()> {
    match std::mem::size_of::<T>() {
        4 => Ok(()),
        size => Err(Error::Unsupported(format!("{what}: elements must be 4 bytes, not {size}"))),
    }
}
