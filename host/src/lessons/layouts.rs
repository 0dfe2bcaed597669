//! float3 layouts: plans, launchers and CPU references for `kernels-gpu/src/layouts.rs` (AoS,
//! AoS staged through shared memory, SoA, and the 16-byte aligned struct).
//!
//! Buffers are typed: AoS ones hold [`Float3`], aligned ones [`Float3A16`], and a structure of
//! arrays is three `f32` slices ([`Soa3`]); a length is always a count of elements.

use crate::buffer::{DeviceRead, DeviceView, DeviceViewMut, DeviceWrite};
use crate::error::{self, Result, elements32, exactly};
use crate::gpu::Gpu;
use crate::launch::{Call, In, Kernel, Launch, Out};
use coalesce_kernels::layouts::*;
pub use coalesce_kernels::layouts::{Float3, Float3A16};

/// Parameter list of the AoS kernels (plain and staged): input, output, n.
pub(crate) type AosSig = fn(*const Float3, *mut Float3, u32);
/// Parameter list of the SoA kernel: x, y, z in, x, y, z out, n.
pub(crate) type SoaSig = fn(*const f32, *const f32, *const f32, *mut f32, *mut f32, *mut f32, u32);
/// Parameter list of the aligned-struct kernel: input, output, n.
pub(crate) type AlignedSig = fn(*const Float3A16, *mut Float3A16, u32);

/// How the AoS kernel moves its 12-byte elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AosMethod {
    /// One `Float3` per thread, loaded and stored as three 4-byte accesses at a 12-byte stride.
    Element,
    /// Staged through shared memory with three coalesced 4-byte loads and stores per thread.
    Staged,
}

impl AosMethod {
    /// The kernel that runs it.
    pub const fn kernel(self) -> Kernel<AosSig> {
        match self {
            AosMethod::Element => layouts_aos,
            AosMethod::Staged => layouts_aos_staged,
        }
    }
}

/// Three device arrays of equal length, the x, y and z of a structure of arrays (read).
#[derive(Debug, Clone, Copy)]
pub struct Soa3<'a> {
    pub x: DeviceView<'a, f32>,
    pub y: DeviceView<'a, f32>,
    pub z: DeviceView<'a, f32>,
}

impl<'a> Soa3<'a> {
    /// The three arrays of one structure of arrays.
    pub fn new(x: &'a impl DeviceRead<f32>, y: &'a impl DeviceRead<f32>, z: &'a impl DeviceRead<f32>) -> Self {
        Soa3 { x: x.view(), y: y.view(), z: z.view() }
    }

    /// Their common length: `LengthMismatch` (naming `what`) unless y and z have x's length.
    pub(crate) fn common_len(&self, what: [&'static str; 2]) -> Result<usize> {
        exactly(what[0], self.y.len(), self.x.len())?;
        exactly(what[1], self.z.len(), self.x.len())?;
        Ok(self.x.len())
    }
}

/// Three device arrays of equal length, the x, y and z of a structure of arrays (written).
#[derive(Debug)]
pub struct Soa3Mut<'a> {
    pub x: DeviceViewMut<'a, f32>,
    pub y: DeviceViewMut<'a, f32>,
    pub z: DeviceViewMut<'a, f32>,
}

impl<'a> Soa3Mut<'a> {
    /// The three arrays of one structure of arrays.
    pub fn new(
        x: &'a mut impl DeviceWrite<f32>,
        y: &'a mut impl DeviceWrite<f32>,
        z: &'a mut impl DeviceWrite<f32>,
    ) -> Self {
        Soa3Mut { x: x.view_mut(), y: y.view_mut(), z: z.view_mut() }
    }
}

/// One thread per element, `BLOCK` threads a block.
fn launch_for(n: u32) -> Launch {
    Launch::linear(n.div_ceil(BLOCK), BLOCK)
}

/// Validates an AoS update of all of `input` into `output` (equal lengths) and returns its
/// launch; the staged method also gets the shared memory it stages in.
///
/// Errors: `Empty` for no elements, `OutOfRange` past `MAX_ELEMENTS_32`, `LengthMismatch`
/// ("float3 output") when the lengths differ.
pub fn plan_aos<'a>(
    method: AosMethod,
    input: &'a impl DeviceRead<Float3>,
    output: &'a mut impl DeviceWrite<Float3>,
) -> Result<Call<'a, AosSig>> {
    let n = elements32("float3 elements", input.len())?;
    exactly("float3 output", output.len(), input.len())?;
    let launch = match method {
        AosMethod::Element => launch_for(n),
        AosMethod::Staged => launch_for(n).with_shared(STAGED_SHARED_BYTES),
    };
    // SAFETY: both buffers hold exactly `n` Float3 (checked above), `floats(n)` floats. The
    // element kernel touches element `i` only for `i < n`. The staged kernel touches float
    // `staged_index(b, t, k)` only when it is `< floats(n)`, and shared slots `staged_slot(t, k)`
    // and `staged_component_slot(t, c)`, both `< STAGED_FLOATS` for `t < BLOCK`: the launch has
    // `BLOCK` threads a block and `STAGED_SHARED_BYTES` of shared memory.
    Ok(unsafe { Call::new(method.kernel(), launch, (In::of(input), Out::of(output), n)) })
}

/// Validates an SoA update of `input`'s three arrays into `output`'s (all six of one length)
/// and returns its launch.
///
/// Errors: `LengthMismatch` naming the first array whose length differs from `input.x`'s
/// ("SoA input y", ..., "SoA output z"), `Empty` for no elements, `OutOfRange` past
/// `MAX_ELEMENTS_32`.
pub fn plan_soa<'a>(input: Soa3<'a>, output: Soa3Mut<'a>) -> Result<Call<'a, SoaSig>> {
    let len = input.common_len(["SoA input y", "SoA input z"])?;
    let n = elements32("float3 elements", len)?;
    exactly("SoA output x", output.x.len(), len)?;
    exactly("SoA output y", output.y.len(), len)?;
    exactly("SoA output z", output.z.len(), len)?;
    let (x, y, z) = (In::from_view(input.x), In::from_view(input.y), In::from_view(input.z));
    let (ox, oy, oz) = (Out::from_view(output.x), Out::from_view(output.y), Out::from_view(output.z));
    // SAFETY: the kernel touches index `i` of each array only for `i < n`, and all six hold
    // exactly `n` floats (checked above).
    Ok(unsafe { Call::new(layouts_soa, launch_for(n), (x, y, z, ox, oy, oz, n)) })
}

/// Validates an update of all of `input` into `output` (equal lengths, 16-byte aligned
/// elements) and returns its launch.
///
/// Errors: as [`plan_aos`], and `Misaligned` for a slice not on a 16-byte boundary.
pub fn plan_aligned16<'a>(
    input: &'a impl DeviceRead<Float3A16>,
    output: &'a mut impl DeviceWrite<Float3A16>,
) -> Result<Call<'a, AlignedSig>> {
    let n = elements32("aligned float3 elements", input.len())?;
    exactly("aligned float3 output", output.len(), input.len())?;
    // A safely made slice of `Float3A16` is always aligned; one made from raw parts may not be,
    // and the kernel's 16-byte accesses would fault.
    error::aligned16("aligned float3 input", input.address())?;
    error::aligned16("aligned float3 output", output.address())?;
    // SAFETY: the kernel touches element `i` only for `i < n`; both buffers hold exactly `n`
    // elements and start on 16-byte boundaries (checked above).
    Ok(unsafe { Call::new(layouts_aligned16, launch_for(n), (In::of(input), Out::of(output), n)) })
}

/// `output[i] = input[i] + 2` on each component, 12-byte elements, with `method`.
pub fn aos(
    gpu: &Gpu,
    method: AosMethod,
    input: &impl DeviceRead<Float3>,
    output: &mut impl DeviceWrite<Float3>,
) -> Result<()> {
    gpu.launch(plan_aos(method, input, output)?)
}

/// The same update on a structure of arrays.
pub fn soa(gpu: &Gpu, input: Soa3<'_>, output: Soa3Mut<'_>) -> Result<()> {
    gpu.launch(plan_soa(input, output)?)
}

/// The same update on 16-byte aligned elements; the pad is copied through.
pub fn aligned16(
    gpu: &Gpu,
    input: &impl DeviceRead<Float3A16>,
    output: &mut impl DeviceWrite<Float3A16>,
) -> Result<()> {
    gpu.launch(plan_aligned16(input, output)?)
}

/// CPU reference of one element of every layout: 2 added to each component.
pub fn add_cpu(p: Float3) -> Float3 {
    Float3::new(p.x + ADD, p.y + ADD, p.z + ADD)
}

/// CPU reference of one aligned element: 2 added to each component, the pad unchanged.
pub fn add_cpu_aligned(p: Float3A16) -> Float3A16 {
    Float3A16::new(p.x + ADD, p.y + ADD, p.z + ADD, p.pad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::DeviceViewMut;
    use crate::error::Error;

    /// Slice descriptors at made-up addresses: plans are checked without a GPU.
    fn slices<T: cust::memory::DeviceCopy>(
        a: usize,
        b: usize,
    ) -> (DeviceViewMut<'static, T>, DeviceViewMut<'static, T>) {
        // SAFETY: descriptors only; no planned call is launched.
        unsafe { (DeviceViewMut::stand_in(0x10_0000, a), DeviceViewMut::stand_in(0x20_0000, b)) }
    }

    #[test]
    fn aos_plans_reject_bad_lengths_and_size_the_staging() {
        for method in [AosMethod::Element, AosMethod::Staged] {
            let plan = |a, b| {
                let (i, mut o) = slices::<Float3>(a, b);
                plan_aos(method, &i, &mut o).map(|c| (c.launch(), c.args().2))
            };
            assert!(matches!(plan(0, 0), Err(Error::Empty(_))));
            assert!(matches!(plan(10, 9), Err(Error::LengthMismatch { expected: 10, got: 9, .. })));
            assert!(matches!(plan(1 << 31, 1 << 31), Err(Error::OutOfRange { .. })));
            let (launch, n) = plan(257, 257).unwrap();
            assert_eq!((launch.grid, launch.block, n), ((2, 1), (256, 1), 257));
            let shared = if method == AosMethod::Staged { STAGED_SHARED_BYTES } else { 0 };
            assert_eq!(launch.shared_bytes, shared);
        }
        assert_eq!(STAGED_SHARED_BYTES, 3 * 256 * 4);
    }

    #[test]
    fn soa_plan_needs_six_equal_arrays() {
        let plan = |lens: [usize; 6]| {
            // SAFETY: descriptors only.
            let [x, y, z] =
                [0, 1, 2].map(|k| unsafe { DeviceViewMut::<f32>::stand_in(0x10_0000 * (k + 1), lens[k as usize]) });
            // SAFETY: as above.
            let [mut ox, mut oy, mut oz] =
                [3, 4, 5].map(|k| unsafe { DeviceViewMut::<f32>::stand_in(0x10_0000 * (k + 1), lens[k as usize]) });
            plan_soa(Soa3::new(&x, &y, &z), Soa3Mut::new(&mut ox, &mut oy, &mut oz)).map(|c| (c.launch(), c.args().6))
        };
        assert!(matches!(plan([0; 6]), Err(Error::Empty(_))));
        assert!(matches!(plan([5, 4, 5, 5, 5, 5]), Err(Error::LengthMismatch { what: "SoA input y", .. })));
        assert!(matches!(plan([5, 5, 6, 5, 5, 5]), Err(Error::LengthMismatch { what: "SoA input z", .. })));
        assert!(matches!(plan([5, 5, 5, 5, 5, 4]), Err(Error::LengthMismatch { what: "SoA output z", .. })));
        assert_eq!(plan([300; 6]).unwrap(), (Launch::linear(2, 256), 300));
    }

    #[test]
    fn aligned_plan_checks_lengths_and_alignment() {
        let (i, mut o) = slices::<Float3A16>(10, 11);
        assert!(matches!(plan_aligned16(&i, &mut o), Err(Error::LengthMismatch { .. })));
        // SAFETY: descriptors only.
        let (i, mut o) = unsafe {
            (DeviceViewMut::<Float3A16>::stand_in(0x10_0004, 8), DeviceViewMut::<Float3A16>::stand_in(0x20_0000, 8))
        };
        assert!(matches!(plan_aligned16(&i, &mut o), Err(Error::Misaligned { what: "aligned float3 input", .. })));
        let (i, mut o) = slices::<Float3A16>(8, 8);
        assert_eq!(plan_aligned16(&i, &mut o).unwrap().launch(), Launch::linear(1, 256));
    }

    #[test]
    fn references_add_two_and_keep_the_pad() {
        assert_eq!(add_cpu(Float3::new(1.0, -2.0, 0.5)), Float3::new(3.0, 0.0, 2.5));
        assert_eq!(add_cpu_aligned(Float3A16::new(1.0, 2.0, 3.0, 9.0)), Float3A16::new(3.0, 4.0, 5.0, 9.0));
    }
}
