//! The README's library example: a copy, a transpose and a sum on the first GPU.
//! `cargo run --example quickstart` (prints why and exits if there is no GPU).
use coalesce::{Gpu, coalescing, reduce, transpose};

fn main() -> coalesce::Result<()> {
    let gpu = Gpu::new()?; // Error::NoGpu without a device
    let (rows, cols) = (4096, 1000);
    let input = gpu.upload(&vec![1.0f32; rows * cols])?;
    let mut output = gpu.poisoned::<f32>(rows * cols, 0)?;
    coalescing::copy(&gpu, &input, &mut output)?; // 16-byte grid copy, ~98% of memcpy
    transpose::transpose(&gpu, &input, &mut output, rows, cols)?; // padded shared-memory tile
    let small = gpu.upload(&[1i32, 2, 3])?;
    let total = reduce::sum(&gpu, &small)?; // 6
    println!("{total}, {}", output.as_host_vec()?[1]);
    Ok(())
}
