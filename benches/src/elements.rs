//! The library's entry points over every element type they take, on the GPU (`library/types/...`):
//! `copy` of 1-, 2-, 4-, 8- and 16-byte elements, `sum` and `sum_to` of `i32`, `u32`, `i64`,
//! `u64`, `f32` and `f64`, `transpose` of 1-, 2-, 4- and 8-byte elements, each over random
//! sub-slice views at random element offsets and at the edge sizes, into poisoned outputs whose
//! every byte is compared, in the view and around it; the float sums bit for bit with
//! `sum_order_cpu`, their order on the CPU, and within their error bound of the exact sum of
//! 2^30 cancelling values (`library/reduce/f32 n=2^30`). And [`speeds`]: each type's copy,
//! sum and transpose at 2^28 bytes beside the device memcpy (`gpu --types`).
use coalesce::reduce::{SumElement, sum_error_bound, sum_order_cpu};
use coalesce::{DeviceCopy, DeviceRead, Gpu, coalescing, reduce, transpose};

use crate::check::{CheckError, CheckResult, Rng, room};
use crate::measure::median_seconds;

/// Calls of each type check per type: random lengths, shapes and offsets.
const TRIALS: usize = 16;
/// Lengths every copy and sum check runs besides the random ones: one element, under a warp,
/// and a vector tail past 2^20.
pub const EDGE_LENGTHS: [usize; 3] = [1, 31, (1 << 20) + 3];
/// The byte every poisoned output holds before a call.
const POISON: u8 = 0xa5;

/// An element type the checks fill with random values.
pub trait Sample: DeviceCopy + bytemuck::Pod + std::fmt::Debug {
    /// `std::any::type_name`, short.
    const NAME: &'static str;
    /// A random value: any bits for the integers, a finite float of random sign, mantissa and
    /// exponent (over 20 binades) for the floats.
    fn sample(rng: &mut Rng) -> Self;
}

macro_rules! integers {
    ($($t:ty),*) => {$(
        impl Sample for $t {
            const NAME: &'static str = stringify!($t);
            fn sample(rng: &mut Rng) -> Self {
                rng.next_u64() as $t
            }
        }
    )*};
}
integers!(u8, u16, i32, u32, i64, u64);

impl Sample for f32 {
    const NAME: &'static str = "f32";
    fn sample(rng: &mut Rng) -> Self {
        rng.f32() * 2f32.powi(rng.below(21) as i32 - 10)
    }
}

impl Sample for f64 {
    const NAME: &'static str = "f64";
    fn sample(rng: &mut Rng) -> Self {
        let unit = (rng.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0;
        unit * 2f64.powi(rng.below(21) as i32 - 10)
    }
}

impl Sample for [u32; 4] {
    const NAME: &'static str = "[u32; 4]";
    fn sample(rng: &mut Rng) -> Self {
        std::array::from_fn(|_| rng.next_u64() as u32)
    }
}

fn samples<T: Sample>(rng: &mut Rng, n: usize) -> Vec<T> {
    (0..n).map(|_| T::sample(rng)).collect()
}

/// `len` elements of poison bytes.
fn poison<T: Sample>(len: usize) -> Vec<T> {
    vec![POISON; len * std::mem::size_of::<T>()]
        .chunks_exact(std::mem::size_of::<T>())
        .map(bytemuck::pod_read_unaligned)
        .collect()
}

/// `got` and `want` byte for byte (floats with NaN bits compare as bits), the first differing
/// element reported.
fn same_bytes<T: Sample>(what: &str, got: &[T], want: &[T]) -> CheckResult<()> {
    let bytes = |v: &T| bytemuck::bytes_of(v).to_vec();
    if got.len() != want.len() {
        return Err(CheckError::Mismatch {
            what: what.into(),
            index: got.len().min(want.len()),
            got: format!("{} elements", got.len()),
            want: format!("{} elements", want.len()),
        });
    }
    match got.iter().zip(want).position(|(g, w)| bytes(g) != bytes(w)) {
        None => Ok(()),
        Some(index) => Err(CheckError::Mismatch {
            what: what.into(),
            index,
            got: format!("{:?}", got[index]),
            want: format!("{:?}", want[index]),
        }),
    }
}

/// A random length: mostly small and odd, some up to 2^20 (as the other view checks').
fn length(rng: &mut Rng) -> usize {
    match rng.below(4) {
        0 => 1 + rng.below(8) as usize,
        1 | 2 => 1 + rng.below(5000) as usize,
        _ => 1 + rng.below(1 << 20) as usize,
    }
}

/// Whether a view of `len` elements of `T` at byte address `address` is whole 4-byte words.
fn words<T>(address: u64, len: usize) -> bool {
    address.is_multiple_of(4) && (len * std::mem::size_of::<T>()).is_multiple_of(4)
}

/// `copy` of `len` random `T` from element `at` of one buffer to element `to` of a poisoned one;
/// returns whether it went through the byte kernel (a view off 4-byte words).
fn copy_of<T: Sample>(gpu: &Gpu, rng: &mut Rng, (len, at, to): (usize, usize, usize)) -> CheckResult<bool> {
    let data = samples::<T>(rng, at + len + 3);
    let input = gpu.upload(&data)?;
    let mut output = gpu.upload(&poison::<T>(to + len + 3))?;
    let (src, mut dst) = (input.slice(at..at + len)?, output.slice_mut(to..to + len)?);
    let bytes = !words::<T>(src.address(), len) || !words::<T>(dst.address(), len);
    coalescing::copy(gpu, &src, &mut dst)?;
    let mut want = poison::<T>(to + len + 3);
    want[to..to + len].copy_from_slice(&data[at..at + len]);
    same_bytes(&format!("copy of {} {}, from element {at} to {to}", len, T::NAME), &output.to_vec()?, &want)?;
    Ok(bytes)
}

/// Copies of every element size at random element offsets 0-8 and the edge lengths.
pub fn copy_types(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    let mut through_bytes = 0;
    let mut calls = 0;
    fn each<T: Sample>(gpu: &Gpu, rng: &mut Rng, calls: &mut usize, bytes: &mut usize) -> CheckResult<()> {
        let lengths: Vec<usize> = (0..TRIALS).map(|_| length(rng)).chain(EDGE_LENGTHS).collect();
        for len in lengths {
            let (at, to) = (rng.below(9) as usize, rng.below(9) as usize);
            *bytes += usize::from(copy_of::<T>(gpu, rng, (len, at, to))?);
            *calls += 1;
        }
        Ok(())
    }
    each::<u8>(gpu, rng, &mut calls, &mut through_bytes)?;
    each::<u16>(gpu, rng, &mut calls, &mut through_bytes)?;
    each::<i32>(gpu, rng, &mut calls, &mut through_bytes)?;
    each::<f64>(gpu, rng, &mut calls, &mut through_bytes)?;
    each::<u64>(gpu, rng, &mut calls, &mut through_bytes)?;
    each::<[u32; 4]>(gpu, rng, &mut calls, &mut through_bytes)?;
    // Every source offset modulo 16 against every destination offset modulo 32: each shift and
    // head of the byte kernel's split.
    for at in 0..16 {
        for to in 0..32 {
            let len = 1000 + rng.below(64) as usize;
            copy_of::<u8>(gpu, rng, (len, at, to))?;
        }
    }
    Ok(format!(
        "{calls} copies of u8, u16, i32, f64, u64, [u32; 4] at element offsets 0-8 (lengths {EDGE_LENGTHS:?} and random; \
         {through_bytes} off 4-byte words, through the byte kernel), u8 from every byte offset 0-15 to every one 0-31; every byte of \
         every output exact"
    ))
}

/// `sum` and `sum_to` of `T` over a view of `len` at element `at`, the total into element
/// `total_at` of a poisoned buffer, against `sum_order_cpu` bit for bit.
fn sum_of<T: Sample + SumElement>(
    gpu: &Gpu,
    rng: &mut Rng,
    (len, at, total_at): (usize, usize, usize),
) -> CheckResult<()> {
    let data = samples::<T>(rng, at + len + 3);
    let input = gpu.upload(&data)?;
    let view = input.slice(at..at + len)?;
    let want = sum_order_cpu(&data[at..at + len], view.address(), gpu.multiprocessors());
    let what = format!("sum of {len} {} from element {at}", T::NAME);
    let mut totals = gpu.upload(&poison::<T>(total_at + 3))?;
    reduce::sum_to(gpu, &view, &mut totals.slice_mut(total_at..)?)?;
    let mut around = poison::<T>(total_at + 3);
    around[total_at] = want;
    same_bytes(&format!("{what}, sum_to into element {total_at}"), &totals.to_vec()?, &around)?;
    same_bytes(&what, &[reduce::sum(gpu, &view)?], &[want])
}

/// The float sums' determinism: the same view summed three times, and a copy of its values at
/// the same element offset in another buffer, give the same bits.
fn same_bits_every_call<T: Sample + SumElement>(gpu: &Gpu, rng: &mut Rng, len: usize, at: usize) -> CheckResult<()> {
    let data = samples::<T>(rng, at + len);
    let (first, second) = (gpu.upload(&data)?, gpu.upload(&data)?);
    let runs = [
        reduce::sum(gpu, &first.slice(at..)?)?,
        reduce::sum(gpu, &first.slice(at..)?)?,
        reduce::sum(gpu, &first.slice(at..)?)?,
        reduce::sum(gpu, &second.slice(at..)?)?,
    ];
    same_bytes(&format!("sums of the same {len} {} (three calls, then another buffer)", T::NAME), &runs, &[runs[0]; 4])
}

/// Sums of every type at random element offsets 0-8 and the edge lengths.
pub fn sum_types(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    fn each<T: Sample + SumElement>(gpu: &Gpu, rng: &mut Rng) -> CheckResult<()> {
        let lengths: Vec<usize> = (0..TRIALS).map(|_| length(rng)).chain(EDGE_LENGTHS).collect();
        for len in lengths {
            let (at, total_at) = (rng.below(9) as usize, rng.below(4) as usize);
            sum_of::<T>(gpu, rng, (len, at, total_at))?;
        }
        let at = rng.below(9) as usize;
        same_bits_every_call::<T>(gpu, rng, (1 << 20) + 3, at)
    }
    each::<i32>(gpu, rng)?;
    each::<u32>(gpu, rng)?;
    each::<i64>(gpu, rng)?;
    each::<u64>(gpu, rng)?;
    each::<f32>(gpu, rng)?;
    each::<f64>(gpu, rng)?;
    Ok(format!(
        "sum and sum_to of i32, u32, i64, u64 (random bits: wrapping), f32, f64, {} views each at element offsets 0-8 \
         (lengths {EDGE_LENGTHS:?} and random), bit for bit with the CPU's run of the GPU's order, the poison around \
         the total intact; the float sums the same bits every call and from another buffer",
        TRIALS + EDGE_LENGTHS.len()
    ))
}

/// `transpose` of a random `rows × cols` matrix of `T` from element `at` into element `to` of a
/// poisoned buffer; returns the route it took.
fn transpose_of<T: Sample>(
    gpu: &Gpu,
    rng: &mut Rng,
    (rows, cols): (usize, usize),
    (at, to): (usize, usize),
) -> CheckResult<transpose::Route> {
    let n = rows * cols;
    let data = samples::<T>(rng, at + n + 2);
    let input = gpu.upload(&data)?;
    let mut output = gpu.upload(&poison::<T>(to + n + 3))?;
    let src = input.slice(at..at + n)?;
    let (route, _) = transpose::route(&src, &mut output.slice_mut(to..to + n)?, rows, cols)?;
    transpose::transpose(gpu, &src, &mut output.slice_mut(to..to + n)?, rows, cols)?;
    let mut want = poison::<T>(to + n + 3);
    transpose::transpose_cpu(&data[at..at + n], &mut want[to..to + n], rows, cols)?;
    let what = format!("transpose of {rows}x{cols} {} from element {at} to {to} ({route:?})", T::NAME);
    same_bytes(&what, &output.to_vec()?, &want)?;
    Ok(route)
}

/// Transposes of every element size: random shapes up to 300 × 300 at element offsets 0-4, half
/// of them with rows, columns and offsets multiples of 4 (the packed tiles' shapes), and a few
/// larger shapes of several packed tiles.
pub fn transpose_types(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    let mut routes = std::collections::BTreeMap::<String, usize>::new();
    fn each<T: Sample>(
        gpu: &Gpu,
        rng: &mut Rng,
        routes: &mut std::collections::BTreeMap<String, usize>,
    ) -> CheckResult<()> {
        let mut shapes: Vec<((usize, usize), (usize, usize))> = Vec::new();
        for trial in 0..TRIALS {
            let dim = |rng: &mut Rng| 1 + rng.below(300) as usize;
            if trial % 2 == 0 {
                shapes.push(((dim(rng), dim(rng)), (rng.below(5) as usize, rng.below(5) as usize)));
            } else {
                let whole = |rng: &mut Rng| 4 * (1 + rng.below(75) as usize);
                shapes.push(((whole(rng), whole(rng)), (4 * rng.below(2) as usize, 4 * rng.below(2) as usize)));
            }
        }
        shapes.extend([
            ((1, 1), (0, 0)),
            ((31, 31), (1, 3)),
            ((1, (1 << 20) + 3), (2, 0)),
            ((1024, 1028), (0, 0)),
            ((516, 2048), (4, 8)),
        ]);
        for (shape, at) in shapes {
            let route = transpose_of::<T>(gpu, rng, shape, at)?;
            *routes.entry(format!("{} {route:?}", T::NAME)).or_default() += 1;
        }
        Ok(())
    }
    each::<u8>(gpu, rng, &mut routes)?;
    each::<u16>(gpu, rng, &mut routes)?;
    each::<f32>(gpu, rng, &mut routes)?;
    each::<f64>(gpu, rng, &mut routes)?;
    // Each size took each of its kernels at least once.
    for (name, kinds) in [("u8", 2), ("u16", 2), ("f32", 2), ("f64", 1)] {
        let taken = routes.keys().filter(|k| k.split(' ').next() == Some(name)).count();
        if taken < kinds {
            return Err(CheckError::Unexpected {
                what: format!("the routes the {name} transposes took"),
                expected: format!("{kinds} kernels"),
                got: format!("{routes:?}"),
            });
        }
    }
    let taken: Vec<String> = routes.iter().map(|(k, v)| format!("{k} x{v}")).collect();
    Ok(format!(
        "u8, u16, f32, f64 over random and edge shapes at element offsets 0-8, every byte exact: {}",
        taken.join(", ")
    ))
}

/// Elements of the cancellation check: 2^30 `f32`, 4 GiB.
pub const CANCEL_N: usize = 1 << 30;

/// `reduce::sum::<f32>` over 2^30 cancelling values: large ones (whole, below 2^33, of random
/// sign) whose negations sit half the input further on (so every thread's run and every block's
/// total carries large values that only the last block's combine cancels), and small ones (below
/// 1, multiples of 2^-20) in between. The exact sum (an `i128` of the values scaled by 2^24,
/// exact) is about 10 orders of magnitude below the sum of their absolute values. The GPU's bits
/// must equal `sum_order_cpu`'s, and the error must be within `sum_error_bound`.
pub fn check_cancellation(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    if let Some(skip) = room(gpu, 4 * CANCEL_N as u64) {
        return Ok(skip);
    }
    let n = CANCEL_N;
    let half = n / 2;
    let mut values = vec![0.0f32; n];
    let mut smalls = 0usize;
    let small = |r: u64| ((r >> 8) % (1 << 20)) as f32 * 2f32.powi(-20) * if r & 16 == 0 { 1.0 } else { -1.0 };
    for i in 0..half {
        let r = rng.next_u64();
        if r.is_multiple_of(8) {
            values[i] = small(r);
            values[i + half] = small(r >> 21);
            smalls += 2;
        } else {
            let large = ((r >> 8) % (1 << 24)) as f32 * 2f32.powi(9) * if r & 16 == 0 { 1.0 } else { -1.0 };
            values[i] = large;
            values[i + half] = -large;
        }
    }
    let scale = 2f64.powi(24);
    let (mut exact, mut abs) = (0i128, 0i128);
    for &v in &values {
        let scaled = (f64::from(v) * scale) as i128;
        exact += scaled;
        abs += scaled.abs();
    }
    let (exact, abs) = (exact as f64 / scale, abs as f64 / scale * (1.0 + 2f64.powi(-50)));
    let input = gpu.upload(&values)?;
    let sms = gpu.multiprocessors();
    let got = reduce::sum(gpu, &input)?;
    let want = sum_order_cpu(&values, input.address(), sms);
    if got.to_bits() != want.to_bits() {
        return Err(CheckError::Mismatch {
            what: "sum of 2^30 cancelling f32".into(),
            index: 0,
            got: format!("{got:e}"),
            want: format!("{want:e} (the CPU's run of the GPU's order)"),
        });
    }
    let bound = sum_error_bound::<f32>(n as u64, sms, exact, abs) + exact.abs() * f64::EPSILON;
    let error = (f64::from(got) - exact).abs();
    if error > bound {
        return Err(CheckError::Mismatch {
            what: "error of the sum of 2^30 cancelling f32".into(),
            index: 0,
            got: format!("{error:e}"),
            want: format!("<= {bound:e}"),
        });
    }
    Ok(format!(
        "{n} f32 ({smalls} small), Σ|x| {abs:.3e}, exact sum {exact:.6e}: the GPU's bits are the CPU's order's, error {error:.2e} <= bound {bound:.2e}"
    ))
}

/// One line of [`speeds`]: an entry point on one element type at 2^28 bytes.
#[derive(Debug, Clone)]
pub struct Speed {
    /// e.g. `copy u8 at element 1`.
    pub what: String,
    /// Median time of one call, in microseconds.
    pub micros: f64,
    /// Bytes read plus written, over the time, in GB/s.
    pub gbps: f64,
    /// That over the device memcpy's GB/s (read plus written) of the same bytes.
    pub of_memcpy: f64,
    /// For the sums: that over the `i32` sum's GB/s.
    pub of_i32_sum: Option<f64>,
}

/// Bytes of every buffer [`speeds`] times: 2^28.
pub const SPEED_BYTES: usize = 1 << 28;

/// A device buffer of `SPEED_BYTES + extra` elements' worth of random `T`.
fn random_of<T: Sample>(gpu: &Gpu, rng: &mut Rng, extra: usize) -> coalesce::Result<coalesce::DeviceBuffer<T>> {
    let n = SPEED_BYTES / std::mem::size_of::<T>() + extra;
    gpu.upload(&samples::<T>(rng, n))
}

/// `copy` of 2^28 bytes of `T` between views at element `at` of two buffers.
fn copy_seconds<T: Sample>(gpu: &Gpu, rng: &mut Rng, at: usize) -> coalesce::Result<f64> {
    let input = random_of::<T>(gpu, rng, at)?;
    let mut output = random_of::<T>(gpu, rng, at)?;
    let n = SPEED_BYTES / std::mem::size_of::<T>();
    median_seconds(gpu, || coalescing::copy(gpu, &input.slice(at..at + n)?, &mut output.slice_mut(at..at + n)?))
}

/// `sum_to` of 2^28 bytes of `T` from a view at element `at`.
fn sum_seconds<T: Sample + SumElement>(gpu: &Gpu, rng: &mut Rng, at: usize) -> coalesce::Result<f64> {
    let input = random_of::<T>(gpu, rng, at)?;
    let mut total = gpu.upload(&samples::<T>(rng, 1))?;
    let n = SPEED_BYTES / std::mem::size_of::<T>();
    median_seconds(gpu, || reduce::sum_to(gpu, &input.slice(at..at + n)?, &mut total))
}

/// `transpose` of a `rows × cols` matrix of `T` (2^28 bytes).
fn transpose_seconds<T: Sample>(gpu: &Gpu, rng: &mut Rng, (rows, cols): (usize, usize)) -> coalesce::Result<f64> {
    let input = random_of::<T>(gpu, rng, 0)?;
    let mut output = random_of::<T>(gpu, rng, 0)?;
    median_seconds(gpu, || transpose::transpose(gpu, &input, &mut output, rows, cols))
}

/// Each type's copy, sum (`sum_to`: the result stays on the device) and transpose at 2^28 bytes,
/// timed as the report times its runs, beside the device memcpy of 2^28 bytes in the same call:
/// GB/s, the share of the memcpy's, and for the sums the share of the `i32` sum's.
pub fn speeds(gpu: &Gpu) -> coalesce::Result<Vec<Speed>> {
    let mut rng = Rng::new(34);
    let memcpy = {
        let input = random_of::<u32>(gpu, &mut rng, 0)?;
        let mut output = random_of::<u32>(gpu, &mut rng, 0)?;
        median_seconds(gpu, || gpu.memcpy(&input, &mut output))?
    };
    let memcpy_gbps = 2.0 * SPEED_BYTES as f64 / memcpy / 1e9;
    let line = |what: String, seconds: f64, bytes: usize| Speed {
        what,
        micros: seconds * 1e6,
        gbps: bytes as f64 / seconds / 1e9,
        of_memcpy: bytes as f64 / seconds / 1e9 / memcpy_gbps,
        of_i32_sum: None,
    };
    let mut out = vec![line("memcpy (driver, device to device)".into(), memcpy, 2 * SPEED_BYTES)];
    let copies = [
        ("u8", 0, copy_seconds::<u8>(gpu, &mut rng, 0)?),
        ("u8", 1, copy_seconds::<u8>(gpu, &mut rng, 1)?),
        ("u16", 0, copy_seconds::<u16>(gpu, &mut rng, 0)?),
        ("u16", 1, copy_seconds::<u16>(gpu, &mut rng, 1)?),
        ("f32", 0, copy_seconds::<f32>(gpu, &mut rng, 0)?),
        ("f64", 0, copy_seconds::<f64>(gpu, &mut rng, 0)?),
        ("[u32; 4]", 0, copy_seconds::<[u32; 4]>(gpu, &mut rng, 0)?),
    ];
    for (name, at, seconds) in copies {
        out.push(line(format!("copy {name} at element {at}"), seconds, 2 * SPEED_BYTES));
    }
    let sums = [
        ("i32", 0, sum_seconds::<i32>(gpu, &mut rng, 0)?),
        ("u32", 0, sum_seconds::<u32>(gpu, &mut rng, 0)?),
        ("i64", 0, sum_seconds::<i64>(gpu, &mut rng, 0)?),
        ("u64", 0, sum_seconds::<u64>(gpu, &mut rng, 0)?),
        ("f32", 0, sum_seconds::<f32>(gpu, &mut rng, 0)?),
        ("f64", 0, sum_seconds::<f64>(gpu, &mut rng, 0)?),
        ("i32", 1, sum_seconds::<i32>(gpu, &mut rng, 1)?),
        ("f32", 1, sum_seconds::<f32>(gpu, &mut rng, 1)?),
    ];
    let i32_sum = sums[0].2;
    for (name, at, seconds) in sums {
        let mut speed = line(format!("sum_to {name} at element {at}"), seconds, SPEED_BYTES);
        speed.of_i32_sum = Some(i32_sum / seconds);
        out.push(speed);
    }
    let transposes = [
        ("u8", (16384, 16384), transpose_seconds::<u8>(gpu, &mut rng, (16384, 16384))?),
        ("u16", (8192, 16384), transpose_seconds::<u16>(gpu, &mut rng, (8192, 16384))?),
        ("f32", (8192, 8192), transpose_seconds::<f32>(gpu, &mut rng, (8192, 8192))?),
        ("f64", (4096, 8192), transpose_seconds::<f64>(gpu, &mut rng, (4096, 8192))?),
    ];
    for (name, (rows, cols), seconds) in transposes {
        out.push(line(format!("transpose {name} {rows}x{cols}"), seconds, 2 * SPEED_BYTES));
    }
    Ok(out)
}

/// [`speeds`] as a markdown table.
pub fn speed_table(speeds: &[Speed]) -> String {
    let mut md =
        String::from("| call (2^28 bytes) | µs | GB/s | of memcpy | of the i32 sum |\n|---|---:|---:|---:|---:|\n");
    for s in speeds {
        let of_sum = s.of_i32_sum.map_or_else(String::new, |r| format!("{:.1}%", 100.0 * r));
        md.push_str(&format!(
            "| {} | {:.1} | {:.0} | {:.1}% | {of_sum} |\n",
            s.what,
            s.micros,
            s.gbps,
            100.0 * s.of_memcpy
        ));
    }
    md
}
