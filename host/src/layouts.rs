//! float3 layouts (AoS, AoS staged through shared memory, SoA, 16-byte aligned struct):
//! launchers, CPU references and registry entries for `kernels-gpu/src/layouts.rs`.
//! AoS buffers hold 3 floats per element (x, y, z), aligned ones 4 (x, y, z, pad).
use cust::memory::DeviceSlice;

use crate::check::{Rng, check_f32};
use crate::error::{Result, check_aligned16, elements, exactly};
use crate::gpu::{Gpu, Launch, kernel_args};
use crate::registry::{Variant, Workload, variant};
use crate::util::random_pair;
pub use coalesce_kernels::layouts::*;

/// Elements every layout is checked at: one, a warp less one, a block plus one (the staged
/// kernel's partial block), a prime, and 2^25.
pub const CHECK_SIZES: [usize; 5] = [1, 31, 257, 1_000_003, 1 << 25];
/// Elements of the benchmarks: 384 MiB of float3 each way.
pub const BENCH_N: usize = 1 << 25;

/// Validates `n` elements of `floats_per_element` floats in `input` and `output`.
pub fn plan(n: usize, floats_per_element: usize, input_len: usize, output_len: usize) -> Result<Launch> {
    let n32 = elements("float3 elements", n)?;
    exactly("float3 input", input_len, floats_per_element * n)?;
    exactly("float3 output", output_len, floats_per_element * n)?;
    Ok(Launch::linear(n32.div_ceil(BLOCK), BLOCK))
}

/// AoS: `output[i] = input[i] + 2` on each component, 12-byte elements (3n floats each).
pub fn aos(gpu: &Gpu, input: &DeviceSlice<f32>, output: &mut DeviceSlice<f32>, n: usize) -> Result<()> {
    let launch = plan(n, 3, input.len(), output.len())?;
    let (src, dst, n) = (input.as_device_ptr(), output.as_device_ptr(), n as u32);
    gpu.launch("layouts_aos", launch, kernel_args![src, dst, n])
}

/// [`aos`] staged through shared memory with coalesced 4-byte loads and stores ("3-step").
pub fn aos_staged(gpu: &Gpu, input: &DeviceSlice<f32>, output: &mut DeviceSlice<f32>, n: usize) -> Result<()> {
    let launch = plan(n, 3, input.len(), output.len())?.with_shared(3 * BLOCK * 4);
    let (src, dst, n) = (input.as_device_ptr(), output.as_device_ptr(), n as u32);
    gpu.launch("layouts_aos_staged", launch, kernel_args![src, dst, n])
}

/// SoA: `input` and `output` hold all x, then all y, then all z (3n floats each).
pub fn soa(gpu: &Gpu, input: &DeviceSlice<f32>, output: &mut DeviceSlice<f32>, n: usize) -> Result<()> {
    let launch = plan(n, 3, input.len(), output.len())?;
    let at = |s: &DeviceSlice<f32>, k: usize| s.index(k * n..(k + 1) * n).as_device_ptr();
    let (x, y, z) = (at(input, 0), at(input, 1), at(input, 2));
    let (ox, oy, oz) = (at(output, 0), at(output, 1), at(output, 2));
    let n = n as u32;
    gpu.launch("layouts_soa", launch, kernel_args![x, y, z, ox, oy, oz, n])
}

/// 16-byte aligned elements (x, y, z, pad; 4n floats each); the pad is copied through.
pub fn aligned16(gpu: &Gpu, input: &DeviceSlice<f32>, output: &mut DeviceSlice<f32>, n: usize) -> Result<()> {
    let launch = plan(n, 4, input.len(), output.len())?;
    let (src, dst, n) = (input.as_device_ptr(), output.as_device_ptr(), n as u32);
    check_aligned16("aligned float3 input", src.as_raw())?;
    check_aligned16("aligned float3 output", dst.as_raw())?;
    gpu.launch("layouts_aligned16", launch, kernel_args![src, dst, n])
}

/// CPU reference for every layout: add 2 to the first 3 of each `width` floats (the pad of
/// an aligned element is copied). SoA uses width 1 (every float is a component).
pub fn add_cpu(input: &[f32], output: &mut [f32], width: usize) {
    for (k, (o, &i)) in output.iter_mut().zip(input).enumerate() {
        *o = if width == 1 || k % width < 3 { i + ADD } else { i };
    }
}

type Launcher = fn(&Gpu, &DeviceSlice<f32>, &mut DeviceSlice<f32>, usize) -> Result<()>;

/// (launcher, floats per element, reference width) of a variant.
fn layout(name: &str) -> (Launcher, usize, usize) {
    match name {
        "aos" => (aos, 3, 3),
        "aos_staged" => (aos_staged, 3, 3),
        "soa" => (soa, 3, 1),
        _ => (aligned16, 4, 4),
    }
}

fn check(gpu: &Gpu, rng: &mut Rng, name: &str) -> Result<String> {
    let (launcher, floats, width) = layout(name);
    for n in CHECK_SIZES {
        let len = floats * n;
        check_f32(gpu, rng, &format!("n={n}"), (len, len), |i, o| launcher(gpu, i, o, n), |i, o| add_cpu(i, o, width))?;
    }
    Ok(format!("n in {CHECK_SIZES:?}"))
}

fn bench(gpu: &Gpu, name: &str) -> Result<Workload> {
    let (launcher, floats, _) = layout(name);
    let n = BENCH_N;
    let (input, mut output) = random_pair(gpu, floats * n, floats * n)?;
    // Useful bytes: 12 read + 12 written per element, whatever the padding costs.
    Ok(Workload::new(24 * n as u64, move |gpu| launcher(gpu, &input, &mut output, n)))
}

/// The float3 layouts family, in teaching order.
pub const VARIANTS: &[Variant] = &[
    variant!("layouts", "aos", "layouts_aos", "aos", "float3 AoS: three 4-byte loads per thread at a 12-byte stride"),
    variant!(
        "layouts",
        "aos_staged",
        "layouts_aos_staged",
        "aos_staged",
        "AoS staged through shared memory: 3 coalesced loads, float3 work in shared"
    ),
    variant!("layouts", "soa", "layouts_soa", "soa", "SoA: x, y, z arrays, every access 128 contiguous bytes a warp"),
    variant!(
        "layouts",
        "aligned16",
        "layouts_aligned16",
        "aligned16",
        "16-byte aligned struct: one 16-byte load per element, 33% padding moved"
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn plans_reject_bad_lengths() {
        assert!(matches!(plan(0, 3, 0, 0), Err(Error::Empty(_))));
        assert!(matches!(plan(10, 3, 29, 30), Err(Error::LengthMismatch { expected: 30, got: 29, .. })));
        assert!(matches!(plan(10, 4, 40, 30), Err(Error::LengthMismatch { .. })));
        assert_eq!(plan(257, 3, 771, 771).unwrap(), Launch::linear(2, 256));
    }

    #[test]
    fn reference_keeps_the_pad() {
        let mut out = [0.0; 8];
        add_cpu(&[1.0, 2.0, 3.0, 9.0, 4.0, 5.0, 6.0, 9.0], &mut out, 4);
        assert_eq!(out, [3.0, 4.0, 5.0, 9.0, 6.0, 7.0, 8.0, 9.0]);
        let mut out = [0.0; 2];
        add_cpu(&[1.0, 2.0], &mut out, 1);
        assert_eq!(out, [3.0, 4.0]);
    }
}
