//! CUDA 12 driver entry points that cust 0.3.2 predates: `cuLaunchKernelEx` (cluster launches),
//! `cuTensorMapEncodeTiled` (TMA tensor maps) and `cuFuncSetAttribute` (shared-memory opt-in).
//! libcuda exports all of them (Debian's libcuda1, which CI links against, is a CUDA 12
//! driver); they are declared here with the layouts `cuda.h` gives, returning the raw
//! `CUresult` as an integer (a newer driver may return codes cust's enum does not know).
use std::ffi::{CStr, c_char, c_void};

use coalesce_kernels::types::TensorMap;
use cust::sys::{CUfunction, CUstream};

use crate::error::{Error, Result};

/// `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION` of `CUlaunchAttributeID`.
pub(crate) const LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: u32 = 4;
/// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` of `CUfunction_attribute`.
pub(crate) const FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: u32 = 8;
/// `CU_TENSOR_MAP_DATA_TYPE_FLOAT32` of `CUtensorMapDataType`.
pub(crate) const TENSOR_MAP_DATA_TYPE_FLOAT32: u32 = 7;
/// `CU_TENSOR_MAP_INTERLEAVE_NONE`.
pub(crate) const TENSOR_MAP_INTERLEAVE_NONE: u32 = 0;
/// `CU_TENSOR_MAP_SWIZZLE_128B`: 16-byte chunk `j` of a 128-byte box row `r` is stored at chunk
/// `j ^ (r % 8)` (within 1024-byte aligned shared memory).
pub(crate) const TENSOR_MAP_SWIZZLE_128B: u32 = 3;
/// `CU_TENSOR_MAP_L2_PROMOTION_L2_128B`.
pub(crate) const TENSOR_MAP_L2_PROMOTION_128B: u32 = 2;
/// `CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE`: elements outside the tensor load as zero.
pub(crate) const TENSOR_MAP_OOB_FILL_NONE: u32 = 0;

/// `CUlaunchAttributeValue`: a 64-byte union; the one member used here is `clusterDim`.
#[repr(C, align(8))]
#[derive(Debug, Clone, Copy)]
pub(crate) struct LaunchAttributeValue {
    /// `clusterDim.{x, y, z}`.
    pub cluster_dim: [u32; 3],
    _rest: [u32; 13],
}

/// `CUlaunchAttribute`: `{ CUlaunchAttributeID id; char pad[8 - sizeof(id)]; value; }`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct LaunchAttribute {
    pub id: u32,
    pad: [u8; 4],
    pub value: LaunchAttributeValue,
}

/// `CUlaunchConfig`.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct LaunchConfig {
    pub grid_dim_x: u32,
    pub grid_dim_y: u32,
    pub grid_dim_z: u32,
    pub block_dim_x: u32,
    pub block_dim_y: u32,
    pub block_dim_z: u32,
    pub shared_mem_bytes: u32,
    pub stream: CUstream,
    pub attrs: *mut LaunchAttribute,
    pub num_attrs: u32,
}

const _: () = assert!(std::mem::size_of::<LaunchAttributeValue>() == 64);
const _: () = assert!(std::mem::size_of::<LaunchAttribute>() == 72);
const _: () = assert!(std::mem::offset_of!(LaunchAttribute, value) == 8);
const _: () = assert!(std::mem::offset_of!(LaunchConfig, stream) == 32);
const _: () = assert!(std::mem::offset_of!(LaunchConfig, num_attrs) == 48);
const _: () = assert!(std::mem::size_of::<TensorMap>() == 128 && std::mem::align_of::<TensorMap>() == 64);

impl LaunchAttribute {
    /// The cluster-dimension attribute `(x, 1, 1)`.
    pub(crate) fn cluster(x: u32) -> Self {
        LaunchAttribute {
            id: LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
            pad: [0; 4],
            value: LaunchAttributeValue { cluster_dim: [x, 1, 1], _rest: [0; 13] },
        }
    }
}

unsafe extern "C" {
    fn cuLaunchKernelEx(
        config: *const LaunchConfig,
        f: CUfunction,
        params: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) -> u32;
    fn cuFuncSetAttribute(f: CUfunction, attribute: u32, value: i32) -> u32;
    #[allow(clippy::too_many_arguments)]
    fn cuTensorMapEncodeTiled(
        map: *mut TensorMap,
        data_type: u32,
        rank: u32,
        address: *mut c_void,
        dims: *const u64,
        strides: *const u64,
        box_dims: *const u32,
        element_strides: *const u32,
        interleave: u32,
        swizzle: u32,
        l2_promotion: u32,
        oob_fill: u32,
    ) -> u32;
    fn cuGetErrorName(code: u32, name: *mut *const c_char) -> u32;
}

/// `Ok` for `CUDA_SUCCESS`, else [`Error::Driver`] naming the call and the error.
pub(crate) fn check(call: &'static str, code: u32) -> Result<()> {
    if code == 0 {
        return Ok(());
    }
    let mut name: *const c_char = std::ptr::null();
    // SAFETY: cuGetErrorName writes a pointer to a static NUL-terminated string, or fails and
    // leaves `name` null (checked before use).
    let named = unsafe { cuGetErrorName(code, &mut name) } == 0 && !name.is_null();
    let error = if named {
        // SAFETY: the driver returned a valid static C string.
        unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
    } else {
        format!("CUresult {code}")
    };
    Err(Error::Driver { call, error })
}

/// `cuLaunchKernelEx` with the cluster-dimension attribute `(cluster, 1, 1)`.
///
/// # Safety
/// As `cuLaunchKernel`: `function` is a live function of the current context, `params` point
/// to values of the kernel's parameter types, and every access the kernel makes for this
/// launch is in bounds.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn launch_cluster(
    function: CUfunction,
    stream: CUstream,
    grid: (u32, u32),
    block: (u32, u32),
    shared_bytes: u32,
    cluster: u32,
    params: &mut [*mut c_void],
) -> Result<()> {
    let mut attribute = LaunchAttribute::cluster(cluster);
    let config = LaunchConfig {
        grid_dim_x: grid.0,
        grid_dim_y: grid.1,
        grid_dim_z: 1,
        block_dim_x: block.0,
        block_dim_y: block.1,
        block_dim_z: 1,
        shared_mem_bytes: shared_bytes,
        stream,
        attrs: &mut attribute,
        num_attrs: 1,
    };
    // SAFETY: `config` and `attribute` live across the call (the driver copies them), and the
    // caller guarantees the rest.
    check("cuLaunchKernelEx", unsafe { cuLaunchKernelEx(&config, function, params.as_mut_ptr(), std::ptr::null_mut()) })
}

/// Lets `function` be launched with up to `bytes` of dynamic shared memory.
///
/// # Safety
/// `function` is a live function handle of the current context.
pub(crate) unsafe fn allow_shared_bytes(function: CUfunction, bytes: u32) -> Result<()> {
    let bytes = i32::try_from(bytes).map_err(|_| Error::Unsupported(format!("{bytes} bytes of shared memory")))?;
    // SAFETY: forwarded from the caller; the attribute takes an int.
    check("cuFuncSetAttribute", unsafe {
        cuFuncSetAttribute(function, FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes)
    })
}

/// A 2-D tiled tensor map over a row-major `rows × cols` f32 matrix at device address
/// `address`, moving `box_rows × box_cols` boxes with the 128-byte swizzle; elements outside
/// the matrix load as zero and are not stored.
///
/// Errors, before the driver is called, for what `cuTensorMapEncodeTiled` cannot encode:
/// [`Error::Empty`] for a dimension or box side of 0, [`Error::OutOfRange`] for `rows` or
/// `cols` past 2^32 or `box_rows` past 256, [`Error::Unsupported`] for a row pitch (`cols * 4`
/// bytes) that is not a multiple of 16 or a box row (`box_cols * 4` bytes) that is not 16 to
/// 128 bytes in steps of 16 (the swizzle's span), [`Error::Misaligned`] for an address off a
/// 16-byte boundary; [`Error::Driver`] if the driver refuses anyway.
pub(crate) fn encode_tiled_f32(address: u64, rows: u64, cols: u64, box_rows: u32, box_cols: u32) -> Result<TensorMap> {
    let (dims, strides, box_dims) = tiled_f32_layout(address, rows, cols, box_rows, box_cols)?;
    let mut map = TensorMap::default();
    let element_strides = [1u32, 1];
    // SAFETY: every pointer is to a live local of the length the rank (2) implies (rank - 1
    // strides); the driver only encodes the address, it does not access the memory.
    let code = unsafe {
        cuTensorMapEncodeTiled(
            &mut map,
            TENSOR_MAP_DATA_TYPE_FLOAT32,
            2,
            address as *mut c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            box_dims.as_ptr(),
            element_strides.as_ptr(),
            TENSOR_MAP_INTERLEAVE_NONE,
            TENSOR_MAP_SWIZZLE_128B,
            TENSOR_MAP_L2_PROMOTION_128B,
            TENSOR_MAP_OOB_FILL_NONE,
        )
    };
    check("cuTensorMapEncodeTiled", code)?;
    Ok(map)
}

/// Copies `count` elements of `T` from device address `src` to host memory at `dst`
/// (`cuMemcpyDtoH`, ordered after the work queued on the device's blocking streams).
///
/// # Safety
/// The context that owns `src` is current; `src..+count` is live device memory and `dst` is
/// valid for writing `count` elements.
pub(crate) unsafe fn copy_to_host<T>(src: u64, dst: *mut T, count: usize) -> Result<()> {
    let bytes = count * std::mem::size_of::<T>();
    // SAFETY: forwarded from the caller.
    let code = unsafe { cust::sys::cuMemcpyDtoH_v2(dst.cast::<c_void>(), src, bytes) };
    check("cuMemcpyDtoH", code as u32)
}

/// Copies `count` elements of `T` from host memory at `src` to device address `dst`
/// (`cuMemcpyHtoD`).
///
/// # Safety
/// The context that owns `dst` is current; `dst..+count` is live device memory nothing else
/// uses during the copy, and `src` is valid for reading `count` elements.
pub(crate) unsafe fn copy_to_device<T>(src: *const T, dst: u64, count: usize) -> Result<()> {
    let bytes = count * std::mem::size_of::<T>();
    // SAFETY: forwarded from the caller.
    let code = unsafe { cust::sys::cuMemcpyHtoD_v2(dst, src.cast::<c_void>(), bytes) };
    check("cuMemcpyHtoD", code as u32)
}

/// Queues a copy of `bytes` bytes from device address `src` to `dst` on `stream`
/// (`cuMemcpyDtoDAsync`).
///
/// # Safety
/// `stream`'s context is current and owns both ranges, which are live and do not overlap, and
/// nothing else writes `dst` (or frees either) before the copy has run.
pub(crate) unsafe fn copy_device_async(src: u64, dst: u64, bytes: usize, stream: CUstream) -> Result<()> {
    // SAFETY: forwarded from the caller.
    let code = unsafe { cust::sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, stream) };
    check("cuMemcpyDtoDAsync", code as u32)
}

/// Queues setting `words` 32-bit words at device address `dst` to `value` on `stream`
/// (`cuMemsetD32Async`); with no stream, at once on the legacy stream (`cuMemsetD32`).
///
/// # Safety
/// The context that owns `dst..+4 * words`, or one that maps it (`cuCtxEnablePeerAccess`), is
/// current (and is `stream`'s), the range is live and 4-byte aligned, and nothing else uses it
/// until the memset has run.
pub(crate) unsafe fn set_words(dst: u64, value: u32, words: usize, stream: Option<CUstream>) -> Result<()> {
    // SAFETY: forwarded from the caller.
    let code = unsafe {
        match stream {
            Some(stream) => cust::sys::cuMemsetD32Async(dst, value, words, stream),
            None => cust::sys::cuMemsetD32_v2(dst, value, words),
        }
    };
    check("cuMemsetD32", code as u32)
}

/// Whether device `device` can map device `peer`'s memory into its address space
/// (`cuDeviceCanAccessPeer`): NVLink or a PCIe switch that allows it, same driver.
pub(crate) fn can_access_peer(device: u32, peer: u32) -> Result<bool> {
    let handle = |ordinal| cust::device::Device::get_device(ordinal).map(|d| d.as_raw());
    let (device, peer) = (handle(device)?, handle(peer)?);
    let mut can = 0i32;
    // SAFETY: both handles came from `cuDeviceGet`; `can` is a valid place for the answer.
    let code = unsafe { cust::sys::cuDeviceCanAccessPeer(&mut can, device, peer) };
    check("cuDeviceCanAccessPeer", code as u32)?;
    Ok(can == 1)
}

/// Whether atomics of device `device`'s kernels on device `peer`'s memory are done as atomics
/// by the link (`CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED`: NVLink; over PCIe they are a
/// read and a write apart).
pub(crate) fn native_peer_atomics(device: u32, peer: u32) -> Result<bool> {
    let handle = |ordinal| cust::device::Device::get_device(ordinal).map(|d| d.as_raw());
    let (device, peer) = (handle(device)?, handle(peer)?);
    let mut native = 0i32;
    let attribute = cust::sys::CUdevice_P2PAttribute::CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED;
    // SAFETY: both handles came from `cuDeviceGet`; `native` is a valid place for the answer.
    let code = unsafe { cust::sys::cuDeviceGetP2PAttribute(&mut native, attribute, device, peer) };
    check("cuDeviceGetP2PAttribute", code as u32)?;
    Ok(native == 1)
}

/// Maps `peer`'s memory into the current context (`cuCtxEnablePeerAccess`), so kernels of this
/// context may dereference its addresses. Mapping it twice is no error.
///
/// # Safety
/// A context is current, and `peer` is another device's live context.
pub(crate) unsafe fn enable_peer_access(peer: &cust::context::Context) -> Result<()> {
    // SAFETY: forwarded from the caller; the flags must be 0.
    let code = unsafe { cust::sys::cuCtxEnablePeerAccess(peer.as_raw(), 0) };
    if code == cust::sys::cudaError_enum::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
        return Ok(());
    }
    check("cuCtxEnablePeerAccess", code as u32)
}

/// Queues a copy of `bytes` bytes from `src` in context `src_context` to `dst` in `dst_context`
/// on `stream` (`cuMemcpyPeerAsync`; without a peer mapping the driver stages it through the
/// host).
///
/// # Safety
/// Both ranges are live memory of their contexts and do not overlap; nothing writes `dst`, or
/// frees either, before the copy has run.
pub(crate) unsafe fn copy_peer_async(
    src: u64,
    src_context: &cust::context::Context,
    dst: u64,
    dst_context: &cust::context::Context,
    bytes: usize,
    stream: CUstream,
) -> Result<()> {
    // SAFETY: forwarded from the caller.
    let code =
        unsafe { cust::sys::cuMemcpyPeerAsync(dst, dst_context.as_raw(), src, src_context.as_raw(), bytes, stream) };
    check("cuMemcpyPeerAsync", code as u32)
}

/// The ordinal of the device whose memory holds `address`, as the driver records it
/// (`cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)`).
pub(crate) fn pointer_device(address: u64) -> Result<u32> {
    let mut ordinal = -1i32;
    // SAFETY: the attribute is an `int`, written into `ordinal`; an address the driver does not
    // know is reported as an error, not dereferenced.
    let code = unsafe {
        cust::sys::cuPointerGetAttribute(
            (&mut ordinal as *mut i32).cast(),
            cust::sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            address,
        )
    };
    check("cuPointerGetAttribute", code as u32)?;
    u32::try_from(ordinal).map_err(|_| Error::Unsupported(format!("the driver gave device ordinal {ordinal}")))
}

/// Largest dimension of a tensor map (2^32 elements).
const MAX_TENSOR_DIM: u64 = 1 << 32;
/// Largest box side of a tensor map.
const MAX_BOX_DIM: u32 = 256;
/// Widest box row the 128-byte swizzle takes, in bytes.
const MAX_SWIZZLED_BOX_ROW_BYTES: u32 = 128;

/// [`encode_tiled_f32`]'s checks, and the dimensions, row pitch and box it passes the driver
/// (innermost first).
fn tiled_f32_layout(
    address: u64,
    rows: u64,
    cols: u64,
    box_rows: u32,
    box_cols: u32,
) -> Result<([u64; 2], [u64; 1], [u32; 2])> {
    use crate::error::{aligned16, in_range};
    let nonzero = |what, n: u64| if n == 0 { Err(Error::Empty(what)) } else { Ok(()) };
    nonzero("tensor map rows", rows)?;
    nonzero("tensor map cols", cols)?;
    nonzero("tensor map box rows", box_rows.into())?;
    nonzero("tensor map box cols", box_cols.into())?;
    in_range("tensor map rows", rows, 1, MAX_TENSOR_DIM)?;
    in_range("tensor map cols", cols, 1, MAX_TENSOR_DIM)?;
    in_range("tensor map box rows", box_rows.into(), 1, MAX_BOX_DIM.into())?;
    // cols <= 2^32: the pitch is at most 2^34 bytes, below the driver's 2^40.
    let pitch = cols * 4;
    if !pitch.is_multiple_of(16) {
        return Err(Error::Unsupported(format!("tensor map row pitch of {pitch} bytes is not a multiple of 16")));
    }
    let box_row = u64::from(box_cols) * 4;
    if box_row > MAX_SWIZZLED_BOX_ROW_BYTES.into() || !box_row.is_multiple_of(16) {
        return Err(Error::Unsupported(format!(
            "tensor map box row of {box_row} bytes: the 128-byte swizzle takes 16 to \
             {MAX_SWIZZLED_BOX_ROW_BYTES} in steps of 16"
        )));
    }
    aligned16("tensor map address", address)?;
    Ok(([cols, rows], [pitch], [box_cols, box_rows]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiled_maps_refuse_what_the_driver_cannot_encode() {
        let refused = |address, rows, cols, box_rows, box_cols| {
            let result = encode_tiled_f32(address, rows, cols, box_rows, box_cols);
            assert!(
                matches!(
                    result,
                    Err(Error::Empty(_) | Error::OutOfRange { .. } | Error::Misaligned { .. } | Error::Unsupported(_))
                ),
                "{address:#x} {rows} x {cols}, box {box_rows} x {box_cols}: {result:?}"
            );
        };
        // The row pitch cols * 4 overflowed u64 here.
        refused(0x1000, 4, 1 << 62, 64, 32);
        refused(0x1000, 4, u64::MAX, 64, 32);
        // Dimensions: at least 1, at most 2^32.
        refused(0x1000, 0, 4, 64, 32);
        refused(0x1000, 4, 0, 64, 32);
        refused(0x1000, (1 << 32) + 1, 4, 64, 32);
        // Row pitch a multiple of 16 bytes; address on a 16-byte boundary.
        refused(0x1000, 4, 6, 64, 32);
        refused(0x1004, 4, 4, 64, 32);
        // Boxes: 1..=256 rows; a row of 16..=128 bytes (the 128-byte swizzle) in 16-byte steps.
        refused(0x1000, 4, 4, 0, 32);
        refused(0x1000, 4, 4, 257, 32);
        refused(0x1000, 4, 4, 64, 0);
        refused(0x1000, 4, 4, 64, 33);
        refused(0x1000, 4, 4, 64, 6);
        // What the TMA transpose encodes passes unchanged.
        assert_eq!(tiled_f32_layout(0x1000, 4096, 1000, 64, 32), Ok(([1000, 4096], [4000], [32, 64])));
        let largest = tiled_f32_layout(0x1000, 1 << 32, 1 << 32, 256, 32);
        assert_eq!(largest, Ok(([1 << 32, 1 << 32], [1 << 34], [32, 256])));
    }
}
