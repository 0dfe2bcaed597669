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
pub const LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: u32 = 4;
/// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` of `CUfunction_attribute`.
pub const FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: u32 = 8;
/// `CU_TENSOR_MAP_DATA_TYPE_FLOAT32` of `CUtensorMapDataType`.
pub const TENSOR_MAP_DATA_TYPE_FLOAT32: u32 = 7;
/// `CU_TENSOR_MAP_INTERLEAVE_NONE`.
pub const TENSOR_MAP_INTERLEAVE_NONE: u32 = 0;
/// `CU_TENSOR_MAP_SWIZZLE_128B`: 16-byte chunk `j` of a 128-byte box row `r` is stored at chunk
/// `j ^ (r % 8)` (within 1024-byte aligned shared memory).
pub const TENSOR_MAP_SWIZZLE_128B: u32 = 3;
/// `CU_TENSOR_MAP_L2_PROMOTION_L2_128B`.
pub const TENSOR_MAP_L2_PROMOTION_128B: u32 = 2;
/// `CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE`: elements outside the tensor load as zero.
pub const TENSOR_MAP_OOB_FILL_NONE: u32 = 0;

/// `CUlaunchAttributeValue`: a 64-byte union; the one member used here is `clusterDim`.
#[repr(C, align(8))]
#[derive(Debug, Clone, Copy)]
pub struct LaunchAttributeValue {
    /// `clusterDim.{x, y, z}`.
    pub cluster_dim: [u32; 3],
    _rest: [u32; 13],
}

/// `CUlaunchAttribute`: `{ CUlaunchAttributeID id; char pad[8 - sizeof(id)]; value; }`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LaunchAttribute {
    pub id: u32,
    pad: [u8; 4],
    pub value: LaunchAttributeValue,
}

/// `CUlaunchConfig`.
#[repr(C)]
#[derive(Debug)]
pub struct LaunchConfig {
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
    pub fn cluster(x: u32) -> Self {
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
pub fn check(call: &'static str, code: u32) -> Result<()> {
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
pub unsafe fn launch_cluster(
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
pub unsafe fn allow_shared_bytes(function: CUfunction, bytes: u32) -> Result<()> {
    let bytes = i32::try_from(bytes).map_err(|_| Error::Unsupported(format!("{bytes} bytes of shared memory")))?;
    // SAFETY: forwarded from the caller; the attribute takes an int.
    check("cuFuncSetAttribute", unsafe {
        cuFuncSetAttribute(function, FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes)
    })
}

/// A 2-D tiled tensor map over a row-major `rows × cols` f32 matrix at device address
/// `address`, moving `box_rows × box_cols` boxes with the 128-byte swizzle; elements outside
/// the matrix load as zero and are not stored. The driver checks the rest (16-byte aligned
/// address and row pitch, box sizes) and refuses with `CUDA_ERROR_INVALID_VALUE`.
pub fn encode_tiled_f32(address: u64, rows: u64, cols: u64, box_rows: u32, box_cols: u32) -> Result<TensorMap> {
    let mut map = TensorMap::default();
    let dims = [cols, rows];
    let strides = [cols * 4];
    let box_dims = [box_cols, box_rows];
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
/// The context that owns `dst..+4 * words` is current (and is `stream`'s), the range is live
/// and 4-byte aligned, and nothing else uses it until the memset has run.
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
