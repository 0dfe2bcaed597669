//! The library as a program uses it, checked on the GPU: the entry points (`copy`, `sum`,
//! `transpose`, `matmul`) over sub-slice views of random lengths at random element offsets,
//! and the handle from several threads, two handles on one device, and a buffer that outlives
//! its handle. Every output buffer is poisoned around the view written, and every element of
//! it, inside the view and out, is compared with the CPU.
use std::sync::{Mutex, mpsc};

use coalesce::coalescing::{AsyncCopy, Load};
use coalesce::{DeviceBuffer, DeviceRead, Error, Gpu, coalescing, histogram, matmul, reduce, transpose};

use crate::check::{CheckError, CheckResult, POISON_BITS, Rng, close, same_bits, same_values};

/// One library check.
pub struct LibraryCheck {
    /// `library/...`, as the checks binary prints it.
    pub id: &'static str,
    /// Runs the check.
    pub run: fn(&Gpu, &mut Rng) -> CheckResult<String>,
}

/// The checks, in order.
pub const CHECKS: &[LibraryCheck] = &[
    LibraryCheck { id: "library/views/copy", run: views_copy },
    LibraryCheck { id: "library/views/copy_types", run: crate::elements::copy_types },
    LibraryCheck { id: "library/views/sum", run: views_sum },
    LibraryCheck { id: "library/views/sum_to", run: views_sum_to },
    LibraryCheck { id: "library/views/sum_types", run: crate::elements::sum_types },
    LibraryCheck { id: "library/views/transpose", run: views_transpose },
    LibraryCheck { id: "library/views/transpose_types", run: crate::elements::transpose_types },
    LibraryCheck { id: "library/views/matmul", run: views_matmul },
    LibraryCheck { id: "library/handles/threads", run: threads },
    LibraryCheck { id: "library/handles/two", run: two_handles },
    LibraryCheck { id: "library/handles/buffer_after_gpu", run: buffer_after_gpu },
    LibraryCheck { id: "library/handles/ordered", run: ordered_handles },
    LibraryCheck { id: "library/handles/ordered_threads", run: ordered_threads },
    LibraryCheck { id: "library/handles/base_module_only", run: base_module_only },
    LibraryCheck { id: "library/devices/each", run: each_device },
    LibraryCheck { id: "library/devices/cross", run: cross_device },
    LibraryCheck { id: "library/devices/refused", run: refused_entry_points },
];

/// Calls of each view check: random shapes and offsets.
const TRIALS: usize = 24;

/// A random length: mostly small and odd (every vector and block tail), some up to 2^20.
fn length(rng: &mut Rng) -> usize {
    match rng.below(4) {
        0 => 1 + rng.below(8) as usize,
        1 | 2 => 1 + rng.below(5000) as usize,
        _ => 1 + rng.below(1 << 20) as usize,
    }
}

/// The poisoned `len + offset + tail` floats an output view of `len` at `offset` lives in,
/// and what every element of it must hold afterwards: poison outside `offset..offset + len`.
fn expected_around(offset: usize, inside: &[f32], tail: usize) -> Vec<f32> {
    let poison = f32::from_bits(POISON_BITS);
    let mut want = vec![poison; offset];
    want.extend_from_slice(inside);
    want.extend(std::iter::repeat_n(poison, tail));
    want
}

fn views_copy(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    for _ in 0..TRIALS {
        let (n, src_at, dst_at) = (length(rng), rng.below(9) as usize, rng.below(9) as usize);
        let what = format!("copy of {n} from element {src_at} to element {dst_at}");
        let input = rng.f32s(src_at + n + 3);
        let d_input = gpu.upload(&input)?;
        let mut d_output = gpu.poisoned::<f32>(dst_at + n + 5, POISON_BITS)?;
        coalescing::copy(gpu, &d_input.slice(src_at..src_at + n)?, &mut d_output.slice_mut(dst_at..dst_at + n)?)?;
        gpu.synchronize()?;
        same_bits(&what, &d_output.to_vec()?, &expected_around(dst_at, &input[src_at..src_at + n], 5))?;
    }
    Ok(format!("{TRIALS} copies at element offsets 0-8, every element exact and the poison around intact"))
}

fn views_sum(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    for _ in 0..TRIALS {
        let (n, at) = (length(rng), rng.below(9) as usize);
        let input = rng.i32s(at + n + 3);
        let d_input = gpu.upload(&input)?;
        let got = reduce::sum(gpu, &d_input.slice(at..at + n)?)?;
        let want = reduce::sum_cpu(&input[at..at + n]);
        if got != want {
            let what = format!("sum of {n} from element {at}");
            return Err(CheckError::Mismatch { what, index: 0, got: got.to_string(), want: want.to_string() });
        }
    }
    Ok(format!("{TRIALS} sums at element offsets 0-8, exact"))
}

fn views_sum_to(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    for _ in 0..TRIALS {
        let (n, at, total_at) = (length(rng), rng.below(9) as usize, rng.below(5) as usize);
        let what = format!("sum_to of {n} from element {at} into element {total_at}");
        let input = rng.i32s(at + n + 3);
        let d_input = gpu.upload(&input)?;
        // The total lands in a poisoned buffer at a random element; everything around it stays.
        let mut d_total = gpu.poisoned::<i32>(total_at + 3, POISON_BITS)?;
        let src = d_input.slice(at..at + n)?;
        reduce::sum_to(gpu, &src, &mut d_total.slice_mut(total_at..)?)?;
        gpu.synchronize()?;
        let got = d_total.to_vec()?;
        let want = reduce::sum_cpu(&input[at..at + n]);
        let poison = POISON_BITS as i32;
        for (index, &g) in got.iter().enumerate() {
            let w = if index == total_at { want } else { poison };
            if g != w {
                return Err(CheckError::Mismatch { what, index, got: g.to_string(), want: w.to_string() });
            }
        }
    }
    // Refused before anything is queued: an empty total.
    let d_input = gpu.upload(&rng.i32s(100))?;
    let mut d_total = gpu.poisoned::<i32>(1, POISON_BITS)?;
    match reduce::sum_to(gpu, &d_input, &mut d_total.slice_mut(1..)?) {
        Err(coalesce::Error::LengthMismatch { .. }) => {}
        other => {
            return Err(CheckError::Unexpected {
                what: "sum_to into an empty total".into(),
                expected: "LengthMismatch".into(),
                got: format!("{other:?}"),
            });
        }
    }
    same_bits_i32("sum_to's refused call", &d_total.to_vec()?, &[POISON_BITS as i32])?;
    Ok(format!("{TRIALS} sums left on the device at element offsets 0-8, exact, the poison around intact"))
}

/// `got == want`, element for element.
fn same_bits_i32(what: &str, got: &[i32], want: &[i32]) -> CheckResult<()> {
    match got.iter().zip(want).position(|(g, w)| g != w) {
        Some(index) => Err(CheckError::Mismatch {
            what: what.into(),
            index,
            got: got[index].to_string(),
            want: want[index].to_string(),
        }),
        None => Ok(()),
    }
}

fn views_transpose(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    for _ in 0..TRIALS {
        let (rows, cols) = (1 + rng.below(300) as usize, 1 + rng.below(300) as usize);
        let (src_at, dst_at) = (rng.below(5) as usize, rng.below(5) as usize);
        let what = format!("transpose of {rows}x{cols} from element {src_at} to element {dst_at}");
        let n = rows * cols;
        let input = rng.f32s(src_at + n + 2);
        let d_input = gpu.upload(&input)?;
        let mut d_output = gpu.poisoned::<f32>(dst_at + n + 3, POISON_BITS)?;
        let src = d_input.slice(src_at..src_at + n)?;
        transpose::transpose(gpu, &src, &mut d_output.slice_mut(dst_at..dst_at + n)?, rows, cols)?;
        gpu.synchronize()?;
        let mut inside = vec![0.0; n];
        transpose::transpose_cpu(&input[src_at..src_at + n], &mut inside, rows, cols)?;
        same_bits(&what, &d_output.to_vec()?, &expected_around(dst_at, &inside, 3))?;
    }
    Ok(format!("{TRIALS} shapes up to 300x300 at offsets 0-4, every element exact"))
}

fn views_matmul(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    let mut worst = 0.0f64;
    for _ in 0..TRIALS / 2 {
        let (m, n, k) = (1 + rng.below(200) as usize, 1 + rng.below(200) as usize, 1 + rng.below(200) as usize);
        let (a_at, b_at, c_at) = (rng.below(5) as usize, rng.below(5) as usize, rng.below(5) as usize);
        let what = format!("matmul {m}x{n}x{k}, A at {a_at}, B at {b_at}, C at {c_at}");
        let (a, b) = (rng.f32s(a_at + m * k), rng.f32s(b_at + k * n));
        let (d_a, d_b) = (gpu.upload(&a)?, gpu.upload(&b)?);
        let mut d_c = gpu.poisoned::<f32>(c_at + m * n + 2, POISON_BITS)?;
        let (va, vb) = (d_a.slice(a_at..)?, d_b.slice(b_at..)?);
        matmul::matmul(gpu, &va, &vb, &mut d_c.slice_mut(c_at..c_at + m * n)?, (m, n, k))?;
        gpu.synchronize()?;
        let got = d_c.to_vec()?;
        let poison = f32::from_bits(POISON_BITS).to_bits();
        let untouched = |r: &[f32]| r.iter().all(|x| x.to_bits() == poison);
        if !untouched(&got[..c_at]) || !untouched(&got[c_at + m * n..]) {
            return Err(CheckError::Mismatch {
                what,
                index: 0,
                got: "a write outside C".into(),
                want: "poison".into(),
            });
        }
        let want = matmul::matmul_cpu(&a[a_at..], &b[b_at..], (m, n, k))?;
        worst = worst.max(close(&what, &got[c_at..c_at + m * n], &want, crate::matmul::TOLERANCE)?);
    }
    Ok(format!("{} shapes up to 200^3 at offsets 0-4, relative error <= {worst:.1e}", TRIALS / 2))
}

/// A copy of `n` random floats through `gpu`, checked: what each thread below runs.
fn copy_round_trip(gpu: &Gpu, rng: &mut Rng, n: usize) -> CheckResult<()> {
    let input = rng.f32s(n);
    let d_input = gpu.upload(&input)?;
    let mut d_output = gpu.poisoned::<f32>(n, POISON_BITS)?;
    coalescing::copy(gpu, &d_input, &mut d_output)?;
    same_bits("copy", &d_output.to_vec()?, &input)
}

fn threads(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    let seeds: Vec<u64> = (0..4).map(|_| rng.next_u64()).collect();
    // The handle is shared by reference with threads that never opened it (their first driver
    // call finds no current context), and a buffer made here is dropped on one of them.
    let moved = gpu.upload(&rng.f32s(1 << 16))?;
    std::thread::scope(|s| {
        let workers: Vec<_> = seeds
            .iter()
            .map(|&seed| s.spawn(move || copy_round_trip(gpu, &mut Rng::new(seed), 100_000 + seed as usize % 1000)))
            .collect();
        let dropper = s.spawn(move || {
            let host = moved.to_vec()?;
            drop(moved);
            Ok::<_, CheckError>(host.len())
        });
        for w in workers {
            w.join().expect("check thread")?;
        }
        dropper.join().expect("check thread")?;
        Ok::<_, CheckError>(())
    })?;
    copy_round_trip(gpu, rng, 12345)?;
    Ok("4 threads copied through one shared handle, a buffer read and freed on a fifth".into())
}

fn two_handles(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    let other = Gpu::with_device(gpu.info().ordinal)?;
    // Memory of one handle, launched over by the other: both hold the device's one context.
    let input = rng.f32s(77_777);
    let d_input = other.upload(&input)?;
    let mut d_output = gpu.poisoned::<f32>(input.len(), POISON_BITS)?;
    coalescing::copy(&other, &d_input, &mut d_output)?;
    other.synchronize()?;
    same_bits("copy on the second handle", &d_output.to_vec()?, &input)?;
    drop(other);
    // The first handle and the second's buffer still work after the second handle is gone.
    let mut again = gpu.poisoned::<f32>(input.len(), POISON_BITS)?;
    coalescing::copy(gpu, &d_input, &mut again)?;
    same_bits("copy after the second handle closed", &again.to_vec()?, &input)?;
    Ok("buffers of one handle launched over by the other; both outlive the other handle".into())
}

fn buffer_after_gpu(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    let input = rng.f32s(1 << 20);
    let (kept, mut copied) = {
        let short = Gpu::with_device(gpu.info().ordinal)?;
        let kept = short.upload(&input)?;
        let mut copied = short.poisoned::<f32>(input.len(), POISON_BITS)?;
        coalescing::copy(&short, &kept, &mut copied)?;
        short.synchronize()?;
        (kept, copied)
    };
    // The handle is gone; its buffers keep the context alive, read back, and take new work.
    same_bits("buffer read after its handle closed", &kept.to_vec()?, &input)?;
    same_bits("copy read after its handle closed", &copied.to_vec()?, &input)?;
    gpu.zero(&mut copied)?;
    coalescing::copy(gpu, &kept, &mut copied)?;
    same_bits("copy into it on another handle", &copied.to_vec()?, &input)?;
    drop(kept);
    drop(copied);
    copy_round_trip(gpu, rng, 4096)?;
    Ok("read, written and freed after the handle that allocated them closed".into())
}

/// `memory`'s device as the driver records it must be `want`.
fn resident_on(what: &str, memory: &impl DeviceRead<f32>, want: u32) -> CheckResult<()> {
    let got = memory.resident_device()?;
    if got != want {
        return Err(CheckError::Unexpected {
            what: format!("{what}: the driver's device of the buffer"),
            expected: want.to_string(),
            got: got.to_string(),
        });
    }
    Ok(())
}

/// A copy and a sum on `gpu`, from this thread: every buffer (and a sub-slice) where the driver
/// says it is, every result against the CPU.
fn copy_and_sum_on(gpu: &Gpu, rng: &mut Rng, n: usize) -> CheckResult<()> {
    let ordinal = gpu.info().ordinal;
    let input = rng.f32s(n + 3);
    let d_input = gpu.upload(&input)?;
    let mut d_output = gpu.poisoned::<f32>(n + 5, POISON_BITS)?;
    resident_on("upload", &d_input, ordinal)?;
    resident_on("poisoned", &d_output, ordinal)?;
    resident_on("sub-slice", &d_input.slice(3..)?, ordinal)?;
    coalescing::copy(gpu, &d_input.slice(3..)?, &mut d_output.slice_mut(1..n + 1)?)?;
    same_bits(&format!("copy on device {ordinal}"), &d_output.to_vec()?, &expected_around(1, &input[3..], 4))?;
    let ints = rng.i32s(n);
    let d_ints = gpu.upload(&ints)?;
    same_bits_i32(&format!("sum on device {ordinal}"), &[reduce::sum(gpu, &d_ints)?], &[reduce::sum_cpu(&ints)])
}

/// Every device the driver reports: a handle opened on it, buffers allocated there (the driver
/// asked where they are), a copy and a sum checked, from this thread and from another one that
/// shares the handle.
fn each_device(_gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    let count = Gpu::device_count()?;
    for ordinal in 0..count {
        let gpu = Gpu::with_device(ordinal)?;
        copy_and_sum_on(&gpu, rng, 1_000_003)?;
        let seed = rng.next_u64();
        std::thread::scope(|s| s.spawn(|| copy_and_sum_on(&gpu, &mut Rng::new(seed), 77_777)).join())
            .expect("check thread")?;
    }
    Ok(format!("{count} device(s): buffers where the driver says, copy and sum from two threads each"))
}

/// Two devices: a kernel on one over the other's buffer is refused (`WrongDevice`, nothing
/// written) until the first maps the second's memory, then runs and is right; the driver's peer
/// copy both ways. SKIPPED with one device.
fn cross_device(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    let count = Gpu::device_count()?;
    let here = gpu.info().ordinal;
    let Some(there) = (0..count).find(|&d| d != here) else {
        return Ok(format!("SKIPPED (the driver reports {count} device; the cross-device checks need two)"));
    };
    // Handles of their own: `gpu` may have mapped the other device already (the peer lessons).
    let (gpu, other) = (&Gpu::with_device(here)?, Gpu::with_device(there)?);
    let n = 300_007;
    let input = rng.f32s(n);
    let remote = other.upload(&input)?;
    let mut local = gpu.poisoned::<f32>(n, POISON_BITS)?;
    match coalescing::copy(gpu, &remote, &mut local) {
        Err(Error::WrongDevice { buffer, gpu: launch, .. }) if (buffer, launch) == (there, here) => {}
        other => {
            return Err(CheckError::Unexpected {
                what: format!("a launch on device {here} over device {there}'s buffer, unmapped"),
                expected: "WrongDevice".into(),
                got: format!("{other:?}"),
            });
        }
    }
    same_bits("output of the refused launch", &local.to_vec()?, &vec![f32::from_bits(POISON_BITS); n])?;
    let mut back = other.poisoned::<f32>(n, POISON_BITS)?;
    gpu.memcpy_peer(&remote, &mut local)?;
    same_bits(&format!("peer copy {there} -> {here}"), &local.to_vec()?, &input)?;
    gpu.memcpy_peer(&local, &mut back)?;
    same_bits(&format!("peer copy {here} -> {there}"), &back.to_vec()?, &input)?;
    match gpu.enable_peer_access(&other) {
        Ok(()) => {}
        Err(e @ Error::NoPeer(_)) => {
            return Ok(format!("refusal and peer copies checked; kernels across devices SKIPPED ({e})"));
        }
        Err(e) => return Err(e.into()),
    }
    let mut fresh = gpu.poisoned::<f32>(n, POISON_BITS)?;
    coalescing::copy(gpu, &remote.slice(1..)?, &mut fresh.slice_mut(..n - 1)?)?;
    same_bits(
        &format!("copy on device {here} reading device {there}"),
        &fresh.to_vec()?,
        &expected_around(0, &input[1..], 1),
    )?;
    let mut written = other.poisoned::<f32>(n, POISON_BITS)?;
    coalescing::copy(gpu, &fresh.slice(..n - 1)?, &mut written.slice_mut(1..)?)?;
    same_bits(
        &format!("copy on device {here} writing device {there}"),
        &written.to_vec()?,
        &expected_around(1, &input[1..], 0),
    )?;
    // Ordered after the other device's queued work: a large copy queued there, read from here
    // at once, must be read whole.
    let big = rng.f32s(1 << 24);
    let source = other.upload(&big)?;
    let mut staged = other.poisoned::<f32>(big.len(), POISON_BITS)?;
    coalescing::copy(&other, &source, &mut staged)?;
    let mut pulled = gpu.poisoned::<f32>(big.len(), POISON_BITS)?;
    coalescing::copy(gpu, &staged, &mut pulled)?;
    same_bits(&format!("copy on device {here} of what device {there} had just queued"), &pulled.to_vec()?, &big)?;
    // matmul::matmul over memory of both devices: a whole-tile shape (the Hopper module's pick on
    // one device) and a ragged one, both taken by a base-module kernel, both against the CPU.
    for (m, n, k) in [(256, 512, 64), (130, 77, 45)] {
        let (a, b) = (rng.f32s(m * k), rng.f32s(k * n));
        let (far_a, near_b) = (other.upload(&a)?, gpu.upload(&b)?);
        let mut far_c = other.poisoned::<f32>(m * n, POISON_BITS)?;
        matmul::matmul(gpu, &far_a, &near_b, &mut far_c, (m, n, k))?;
        let what = format!("matmul {m}x{n}x{k} on device {here}, A and C on device {there}");
        close(&what, &far_c.to_vec()?, &matmul::matmul_cpu(&a, &b, (m, n, k))?, crate::matmul::TOLERANCE)?;
    }
    // Sums and histograms into the other device's memory: right where the link does atomics
    // natively, refused with nothing written where it does not.
    let native = gpu.native_peer_atomics(&other)?;
    let ints = rng.i32s(n);
    let (near_ints, far_ints) = (gpu.upload(&ints)?, other.upload(&ints)?);
    let mut far_total = other.poisoned::<i32>(1, POISON_BITS)?;
    let into_far = reduce::sum_to(gpu, &near_ints, &mut far_total);
    let values: Vec<u32> = ints.iter().map(|&v| v as u32).collect();
    let mut far_bins = other.poisoned::<u32>(histogram::BINS as usize, POISON_BITS)?;
    let bins_far = histogram::run(gpu, histogram::Method::Shared, &gpu.upload(&values)?, &mut far_bins);
    match (native, into_far, bins_far) {
        (true, Ok(()), Ok(())) => {
            same_bits_i32("sum_to into the other device's total", &far_total.to_vec()?, &[reduce::sum_cpu(&ints)])?;
            same_values(
                "histogram into the other device's bins",
                &far_bins.to_vec()?,
                &histogram::histogram_cpu(&values),
            )?;
        }
        (false, Err(Error::Unsupported(_)), Err(Error::Unsupported(_))) => {
            still_poisoned("the refused total on the other device", &far_total)?;
            still_poisoned("the refused bins on the other device", &far_bins)?;
        }
        (native, total, bins) => {
            return Err(CheckError::Unexpected {
                what: format!("atomics into device {there}'s memory from device {here}"),
                expected: if native { "both right".into() } else { "both Unsupported".into() },
                got: format!("sum_to {total:?}, histogram {bins:?}"),
            });
        }
    }
    // Reading the other device's input into a total here needs no peer atomics.
    same_bits_i32("sum of the other device's input", &[reduce::sum(gpu, &far_ints)?], &[reduce::sum_cpu(&ints)])?;
    // The Hopper module's bulk copy over the other device's memory: refused, nothing written.
    let hopper = match gpu.supports(coalesce_kernels::coalescing::coalescing_bulk) {
        Ok(()) => {
            let mut untouched = gpu.poisoned::<f32>(n - 7, POISON_BITS)?;
            match coalescing::copy_async(gpu, AsyncCopy::Bulk, &remote.slice(..n - 7)?, &mut untouched, 1) {
                Err(Error::Unsupported(_)) => {}
                other => {
                    return Err(CheckError::Unexpected {
                        what: format!("the bulk copy on device {here} reading device {there}"),
                        expected: "Unsupported".into(),
                        got: format!("{other:?}"),
                    });
                }
            }
            same_bits(
                "output of the refused bulk copy",
                &untouched.to_vec()?,
                &vec![f32::from_bits(POISON_BITS); n - 7],
            )?;
            ", the Hopper module's bulk copy across refused"
        }
        Err(_) => "",
    };
    Ok(format!(
        "devices {here} and {there}: unmapped launch refused, peer copies both ways, kernels reading and writing across, after the other device's queued work, matmul over both, atomics into the other ({}){hopper}",
        if native { "native: right" } else { "not native: refused" }
    ))
}

/// Rounds of each ordering check.
const ORDER_ROUNDS: usize = 1000;
/// The ordering checks' multiply, `m × n × k`: long enough (about 0.2 ms on an H100) that a copy
/// not ordered after it reads its output half written.
const ORDER_SHAPE: (usize, usize, usize) = (1024, 1024, 4096);

/// The ordering checks' inputs and the bits of their product, computed once through `gpu`.
struct OrderCase {
    a: DeviceBuffer<f32>,
    b: DeviceBuffer<f32>,
    want: Vec<f32>,
}

impl OrderCase {
    fn new(gpu: &Gpu, rng: &mut Rng) -> CheckResult<Self> {
        let (m, n, k) = ORDER_SHAPE;
        let (a, b) = (gpu.upload(&rng.f32s(m * k))?, gpu.upload(&rng.f32s(k * n))?);
        let mut c = gpu.poisoned::<f32>(m * n, POISON_BITS)?;
        matmul::matmul(gpu, &a, &b, &mut c, ORDER_SHAPE)?;
        let want = c.to_vec()?;
        if want.iter().any(|x| x.is_nan()) {
            return Err(CheckError::Unexpected {
                what: "the ordering checks' reference product".into(),
                expected: "no poison left".into(),
                got: "NaN".into(),
            });
        }
        Ok(OrderCase { a, b, want })
    }

    /// Zeroes `c` and queues the multiply into it on `gpu`: a reader not ordered after both sees
    /// zeros or a half-written product.
    fn produce(&self, gpu: &Gpu, c: &mut DeviceBuffer<f32>) -> CheckResult<()> {
        gpu.zero(c)?;
        matmul::matmul(gpu, &self.a, &self.b, c, ORDER_SHAPE)?;
        Ok(())
    }

    /// Copies `c` into `copy` on `gpu` at once, then compares every element with the product.
    fn consume(&self, gpu: &Gpu, c: &DeviceBuffer<f32>, copy: &mut DeviceBuffer<f32>, round: usize) -> CheckResult<()> {
        coalescing::copy(gpu, c, copy)?;
        same_bits(&format!("round {round}: the copy on the second handle"), &copy.to_vec()?, &self.want)
    }
}

/// The probe's pattern, on one thread: a large matmul queued on one handle, its output copied on
/// a second handle of the same device at once, [`ORDER_ROUNDS`] times. Work on a buffer is ordered
/// across handles (one stream a device): every copy must be the whole product.
fn ordered_handles(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    let other = Gpu::with_device(gpu.info().ordinal)?;
    let case = OrderCase::new(gpu, rng)?;
    let (m, n, _) = ORDER_SHAPE;
    let mut c = gpu.poisoned::<f32>(m * n, POISON_BITS)?;
    let mut copy = other.poisoned::<f32>(m * n, POISON_BITS)?;
    for round in 0..ORDER_ROUNDS {
        case.produce(gpu, &mut c)?;
        case.consume(&other, &c, &mut copy, round)?;
    }
    Ok(format!(
        "{ORDER_ROUNDS}/{ORDER_ROUNDS} copies on handle B of a {m}x{n}x{} matmul queued on handle A",
        ORDER_SHAPE.2
    ))
}

/// [`ordered_handles`] across two threads: one queues the matmul on its handle and hands the
/// output over (a mutex and a channel, as a program would); the other copies it on its own
/// handle at once.
fn ordered_threads(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    let other = Gpu::with_device(gpu.info().ordinal)?;
    let case = OrderCase::new(gpu, rng)?;
    let (m, n, _) = ORDER_SHAPE;
    let c = Mutex::new(gpu.poisoned::<f32>(m * n, POISON_BITS)?);
    let mut copy = other.poisoned::<f32>(m * n, POISON_BITS)?;
    let (queued, ready) = mpsc::channel::<usize>();
    let (done, next) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        let (c, case) = (&c, &case);
        let producer = s.spawn(move || {
            for round in 0..ORDER_ROUNDS {
                case.produce(gpu, &mut c.lock().expect("output lock"))?;
                if queued.send(round).is_err() || next.recv().is_err() {
                    break; // the consumer failed: its error is the one reported
                }
            }
            drop(queued);
            Ok::<_, CheckError>(())
        });
        let (other, copy) = (&other, &mut copy);
        let consumer = s.spawn(move || {
            for round in ready {
                let result = case.consume(other, &c.lock().expect("output lock"), copy, round);
                result?;
                let _ = done.send(());
            }
            Ok::<_, CheckError>(())
        });
        consumer.join().expect("consumer thread")?;
        producer.join().expect("producer thread")
    })?;
    Ok(format!("{ORDER_ROUNDS}/{ORDER_ROUNDS} copies on another thread's handle of a matmul just queued on this one's"))
}

/// `memory` must still hold only poison (a refused call wrote nothing).
fn still_poisoned<T: cust::memory::DeviceCopy + bytemuck::Pod>(
    what: &str,
    memory: &DeviceBuffer<T>,
) -> CheckResult<()> {
    // Through bytes: a buffer of 1- or 2-byte elements is not aligned for a cast to words.
    let bytes: Vec<u8> = bytemuck::cast_slice(&memory.to_vec()?).to_vec();
    let words: Vec<u32> = bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
    match words.iter().position(|&w| w != POISON_BITS) {
        None => Ok(()),
        Some(i) => Err(CheckError::Unexpected {
            what: format!("{what}: word {i} after the refused call"),
            expected: format!("{POISON_BITS:#x} (untouched)"),
            got: format!("{:#x}", words[i]),
        }),
    }
}

/// A call that must be refused with [`Error::WrongDevice`].
fn wrong_device(what: &str, result: coalesce::Result<impl std::fmt::Debug>) -> CheckResult<()> {
    match result {
        Err(Error::WrongDevice { .. }) => Ok(()),
        other => Err(CheckError::Unexpected {
            what: format!("{what} with a buffer of another device, unmapped"),
            expected: "WrongDevice".into(),
            got: format!("{other:?}"),
        }),
    }
}

/// Every entry point, handed an input on another device (unmapped) and a poisoned output on its
/// own: refused with `WrongDevice` and the output still poison (the checks run before anything
/// is written: the zeroed totals and cleared bins included); then each with its input at home
/// and its output on the other device. SKIPPED with one device.
fn refused_entry_points(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    let count = Gpu::device_count()?;
    let here = gpu.info().ordinal;
    let Some(there) = (0..count).find(|&d| d != here) else {
        return Ok(format!("SKIPPED (the driver reports {count} device; the wrong-device checks need two)"));
    };
    // Handles of their own, with no peer mapping (`gpu` may have mapped the other device).
    let (gpu, other) = (&Gpu::with_device(here)?, &Gpu::with_device(there)?);
    // Multiples of 4 (the TMA transpose's shape rule), so every method gets past its shape checks.
    let (rows, cols) = (96, 132);
    let n = rows * cols;
    let floats = rng.f32s(n);
    let ints = rng.i32s(n);
    let values: Vec<u32> = ints.iter().map(|&v| v as u32).collect();
    let mut calls = 0;
    // Both directions: (input's device, output's device).
    for (from, to) in [(other, gpu), (gpu, other)] {
        let (f_in, i_in, u_in) = (from.upload(&floats)?, from.upload(&ints)?, from.upload(&values)?);
        let side = if std::ptr::eq(from, gpu) { "output" } else { "input" };
        let mut out = to.poisoned::<f32>(n, POISON_BITS)?;
        let mut total = to.poisoned::<i32>(1, POISON_BITS)?;
        let mut partials = to.poisoned::<i32>(1 << 16, POISON_BITS)?;
        let mut bins = to.poisoned::<u32>(histogram::BINS as usize, POISON_BITS)?;
        let mut each = |what: &str, result: coalesce::Result<()>| {
            calls += 1;
            wrong_device(&format!("{what} ({side} on device {there})"), result)
        };
        each("copy", coalescing::copy(gpu, &f_in, &mut out))?;
        each("copy_tuned", coalescing::copy_tuned(gpu, &f_in, &mut out, 4, true))?;
        each("offset_copy", coalescing::offset_copy(gpu, Load::Cached, &f_in, &mut out, n - 1, 1))?;
        each("stride_copy", coalescing::stride_copy(gpu, &f_in, &mut out, n / 2, 2))?;
        if gpu.supports(coalesce_kernels::coalescing::coalescing_bulk).is_ok() {
            for kind in [AsyncCopy::CpAsync, AsyncCopy::Bulk] {
                each(&format!("copy_async {kind:?}"), coalescing::copy_async(gpu, kind, &f_in, &mut out, 2))?;
            }
            each("tma_transpose", transpose::tma_transpose(gpu, &f_in, &mut out, rows, cols))?;
        }
        each("transpose", transpose::transpose(gpu, &f_in, &mut out, rows, cols))?;
        {
            use transpose::Method::*;
            for method in [Copy, Naive, Shared, Padded, Wide, WideCopy, WideCopyDown] {
                each(&format!("transpose::run {method:?}"), transpose::run(gpu, method, &f_in, &mut out, rows, cols))?;
            }
        }
        if side == "input" {
            each("sum", reduce::sum(gpu, &i_in).map(|_| ()))?;
        }
        each("sum_to", reduce::sum_to(gpu, &i_in, &mut total))?;
        for method in reduce::Method::ALL {
            let result = reduce::sum_into(gpu, method, &i_in, &mut partials, &mut total);
            each(&format!("sum_into {method:?}"), result)?;
        }
        // The element types past f32 and i32: their own kernels, the same checks first.
        let (wide_in, byte_in) =
            (from.upload(&values.iter().map(|&v| u64::from(v)).collect::<Vec<_>>())?, from.upload(&poison_bytes(n))?);
        let mut f_total = to.poisoned::<f32>(1, POISON_BITS)?;
        let mut wide_total = to.poisoned::<u64>(1, POISON_BITS)?;
        let mut byte_out = to.upload(&poison_bytes(n))?;
        each("sum_to f32", reduce::sum_to(gpu, &f_in, &mut f_total))?;
        each("sum_to u64", reduce::sum_to(gpu, &wide_in, &mut wide_total))?;
        each("transpose u8 (packed)", transpose::transpose(gpu, &byte_in, &mut byte_out, rows, cols))?;
        let (odd_in, mut odd_out) = (byte_in.slice(1..n - 2)?, byte_out.slice_mut(..n - 3)?);
        each("transpose u8 (padded)", transpose::transpose(gpu, &odd_in, &mut odd_out, 1, n - 3))?;
        each("copy u8 off a word", coalescing::copy(gpu, &odd_in, &mut odd_out))?;
        if side == "input" {
            each("sum f64", reduce::sum(gpu, &from.upload(&[1.5f64; 3])?).map(|_| ()))?;
        }
        still_poisoned(&format!("f32 total ({side} on device {there})"), &f_total)?;
        still_poisoned(&format!("u64 total ({side} on device {there})"), &wide_total)?;
        still_poisoned(&format!("u8 transpose/copy output ({side} on device {there})"), &byte_out)?;
        for method in histogram::Method::ALL {
            if gpu.supports(method.kernel()).is_ok() {
                each(&format!("histogram {method:?}"), histogram::run(gpu, method, &u_in, &mut bins))?;
            }
        }
        let (m, k) = (rows, cols);
        let b = from.upload(&rng.f32s(k * rows))?;
        let mut c = to.poisoned::<f32>(m * rows, POISON_BITS)?;
        each("matmul", matmul::matmul(gpu, &f_in, &b, &mut c, (m, rows, k)))?;
        each(
            "matmul::run WarptileEdge",
            matmul::run(gpu, matmul::Method::WarptileEdge, &f_in, &b, &mut c, (m, rows, k)),
        )?;
        still_poisoned(&format!("copy/transpose output ({side} on device {there})"), &out)?;
        still_poisoned(&format!("sum total ({side} on device {there})"), &total)?;
        still_poisoned(&format!("sum partials ({side} on device {there})"), &partials)?;
        still_poisoned(&format!("histogram bins ({side} on device {there})"), &bins)?;
        still_poisoned(&format!("matmul C ({side} on device {there})"), &c)?;
    }
    Ok(format!(
        "{calls} calls refused with WrongDevice (inputs, then outputs on device {there}), every output still poison"
    ))
}

/// `n` bytes of [`POISON_BITS`] words (`n` a multiple of 4): what [`still_poisoned`] expects.
fn poison_bytes(n: usize) -> Vec<u8> {
    POISON_BITS.to_le_bytes().into_iter().cycle().take(n).collect()
}

/// A handle that loads the base module only: every Hopper kernel refused as on an older GPU
/// (`ModuleUnavailable`), and `matmul::matmul` still right, through a base-module kernel.
fn base_module_only(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    let base = Gpu::with_device(gpu.info().ordinal)?.base_module_only();
    for (what, refused) in [
        ("the sm_90 warp-tiled matmul", base.supports(coalesce_kernels::matmul::matmul_warptile_sm90)),
        ("the bulk copy", base.supports(coalesce_kernels::coalescing::coalescing_bulk)),
        ("the cluster histogram", base.supports(coalesce_kernels::histogram::histogram_cluster)),
    ] {
        if !matches!(refused, Err(Error::ModuleUnavailable { .. })) {
            return Err(CheckError::Unexpected {
                what: format!("{what} on a base-module-only handle"),
                expected: "ModuleUnavailable".into(),
                got: format!("{refused:?}"),
            });
        }
    }
    let (m, n, k) = (256, 512, 64);
    let (a, b) = (rng.f32s(m * k), rng.f32s(k * n));
    let mut c = base.poisoned::<f32>(m * n, POISON_BITS)?;
    matmul::matmul(&base, &base.upload(&a)?, &base.upload(&b)?, &mut c, (m, n, k))?;
    let err = close(
        "matmul on the base module",
        &c.to_vec()?,
        &matmul::matmul_cpu(&a, &b, (m, n, k))?,
        crate::matmul::TOLERANCE,
    )?;
    Ok(format!(
        "Hopper kernels refused as on an older GPU; matmul {m}x{n}x{k} through the base module, relative error {err:.1e}"
    ))
}
