//! Element types both sides share, declared once: the kernels index buffers of them and the
//! host holds typed device buffers of them (`DeviceBuffer<Float3>`), so a float3 buffer is never
//! passed as "3n floats" and a length is always a count of elements.
//!
//! On the host they derive cust's `DeviceCopy` (they may cross to the device) and bytemuck's
//! `Pod`/`Zeroable` (any bit pattern is a value: buffers of them can be poisoned, filled with
//! random words and compared bit for bit). The nvptx build derives neither and has no
//! dependencies.

/// A 12-byte float3, as CUDA's `float3`: three `f32`, 4-byte aligned, no padding, so element
/// `i`'s component `c` is float `3 * i + c` of the buffer (the staged layouts kernel reads it so).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[cfg_attr(not(target_arch = "nvptx64"), derive(cust_core::DeviceCopy, bytemuck::Pod, bytemuck::Zeroable))]
pub struct Float3 {
    pub x: f32,
    pub y: f32,
    pub z: f32,
}

impl Float3 {
    /// `(x, y, z)`.
    pub const fn new(x: f32, y: f32, z: f32) -> Self {
        Float3 { x, y, z }
    }
}

/// A float3 padded and aligned to 16 bytes, as `struct __align__(16) { float x, y, z; }`. The
/// explicit `pad` makes the padding a field, so the struct has no padding bytes (what `Pod`
/// requires) and the kernels copy it through unchanged.
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[cfg_attr(not(target_arch = "nvptx64"), derive(cust_core::DeviceCopy, bytemuck::Pod, bytemuck::Zeroable))]
pub struct Float3A16 {
    pub x: f32,
    pub y: f32,
    pub z: f32,
    pub pad: f32,
}

impl Float3A16 {
    /// `(x, y, z)` with padding `pad`.
    pub const fn new(x: f32, y: f32, z: f32, pad: f32) -> Self {
        Float3A16 { x, y, z, pad }
    }
}

/// `f32`s in one [`Float3`].
pub const FLOAT3_FLOATS: u32 = 3;

// The layouts the kernels (and the lessons' sector counts) are written for.
const _: () = assert!(core::mem::size_of::<Float3>() == 12 && core::mem::align_of::<Float3>() == 4);
const _: () = assert!(core::mem::size_of::<Float3>() == FLOAT3_FLOATS as usize * 4);
const _: () = assert!(
    core::mem::offset_of!(Float3, x) == 0
        && core::mem::offset_of!(Float3, y) == 4
        && core::mem::offset_of!(Float3, z) == 8
);
const _: () = assert!(core::mem::size_of::<Float3A16>() == 16 && core::mem::align_of::<Float3A16>() == 16);
const _: () = assert!(core::mem::offset_of!(Float3A16, pad) == 12);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float3_is_three_consecutive_floats() {
        let points = [Float3::new(1.0, 2.0, 3.0), Float3::new(4.0, 5.0, 6.0)];
        let floats: &[f32] = bytemuck::cast_slice(&points);
        assert_eq!(floats, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let aligned = [Float3A16::new(1.0, 2.0, 3.0, 9.0)];
        assert_eq!(bytemuck::cast_slice::<Float3A16, f32>(&aligned), [1.0, 2.0, 3.0, 9.0]);
    }
}

/// A CUDA tensor map (`CUtensorMap`): 128 opaque bytes, 64-byte aligned, encoded on the host by
/// `cuTensorMapEncodeTiled` and read by the TMA unit. It describes a tensor in global memory
/// (address, sizes, strides) and the box one `cp.async.bulk.tensor` moves (size, swizzle).
#[repr(C, align(64))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(not(target_arch = "nvptx64"), derive(cust_core::DeviceCopy, bytemuck::Pod, bytemuck::Zeroable))]
pub struct TensorMap {
    pub opaque: [u64; 16],
}

/// Kernel parameter: a [`TensorMap`] passed by value, a grid constant (CUDA C's
/// `__grid_constant__ const CUtensorMap`), whose tensor the kernel only reads through TMA loads.
/// The kernel takes its address with [`crate::grid_constant!`]; the TMA reads it from the
/// constant bank, so no block fences it. rustc's nvptx backend cannot pass a by-value
/// parameter aligned past 16 bytes (it ICEs), so the Rust type is 8-byte aligned and the
/// builder declares the PTX parameter `.align 64`, which the TMA needs (the marker
/// `grid_constant!` exports). The host's value borrows the tensor behind the map.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LoadMap {
    pub opaque: [u64; 16],
}

/// Kernel parameter: as [`LoadMap`], for a tensor the kernel writes through TMA stores (the
/// host's value borrows the tensor exclusively).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct StoreMap {
    pub opaque: [u64; 16],
}

const _: () = assert!(core::mem::size_of::<LoadMap>() == core::mem::size_of::<TensorMap>());
const _: () = assert!(core::mem::size_of::<StoreMap>() == core::mem::size_of::<TensorMap>());

/// A by-value tensor-map parameter: what [`crate::grid_constant!`] takes the address of.
pub trait GridConstant {}
impl GridConstant for LoadMap {}
impl GridConstant for StoreMap {}
