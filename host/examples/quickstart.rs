//! The README's library example: a copy, a transpose and a sum on the first GPU, then what the
//! typed seam refuses before anything reaches the device.
//! `cargo run --example quickstart` (prints why and exits if there is no GPU).
use coalesce::{Error, Gpu, copy, sum, transpose};

fn main() -> coalesce::Result<()> {
    let gpu = Gpu::new()?; // Error::NoGpu without a device; Gpu::with_device(n) for another one
    let (rows, cols) = (4096, 1000);
    let data: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
    let input = gpu.upload(&data)?; // a DeviceBuffer<f32>, freed when dropped
    let mut output = gpu.poisoned::<f32>(rows * cols, 0)?;
    copy(&gpu, &input, &mut output)?; // 16-byte copy, any length, ~99% of memcpy
    transpose(&gpu, &input, &mut output, rows, cols)?; // output[1] = input[cols]
    // Sub-slices are views that borrow their buffer: it cannot be freed while they live, and an
    // exclusive view cannot overlap anything else in the call.
    let row = input.slice(2 * cols..3 * cols)?;
    copy(&gpu, &row, &mut output.slice_mut(..cols)?)?; // output[1] = input[2 * cols + 1]
    let total = sum(&gpu, &gpu.upload(&[1i32, 2, 3])?)?; // 6
    println!("sum {total}, out[1] = {}", output.to_vec()?[1]);

    // Bad input is a typed error before any launch, never a fault on the GPU:
    let mut short = gpu.poisoned::<f32>(10, 0)?;
    match copy(&gpu, &input, &mut short) {
        Err(Error::LengthMismatch { what, expected, got }) => println!("refused: {what} wants {expected}, got {got}"),
        other => println!("unexpected: {other:?}"),
    }
    // ...and a launch whose arguments do not match the kernel's parameter list does not compile:
    // the plans build `Call<fn(*const f32, *mut f32, u64)>` from `In`/`Out` slices and a `u64`.
    Ok(())
}
