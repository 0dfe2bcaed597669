//! The float sums' order and error bound, on the CPU: `sum_order_cpu` (the GPU's order, step by
//! step; the GPU checks compare the kernels with it bit for bit) against the exact sum on
//! adversarial inputs. The inputs are multiples of a power of two small enough that their
//! exact sum, scaled to an integer, fits an `i128`: the reference is exact, not another float
//! sum.
use coalesce::reduce::{SumElement, sum_error_bound, sum_order_cpu};
use proptest::prelude::*;

/// SplitMix64, for inputs a test can name by seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// An element type of the tests: its values as multiples of `2^-SCALE`.
trait Exact: SumElement {
    /// The inputs are multiples of 2^-SCALE.
    const SCALE: i32;
    fn of(x: f64) -> Self;
    fn value(self) -> f64;
}

impl Exact for f32 {
    const SCALE: i32 = 24;
    fn of(x: f64) -> Self {
        x as f32
    }
    fn value(self) -> f64 {
        f64::from(self)
    }
}

impl Exact for f64 {
    const SCALE: i32 = 40;
    fn of(x: f64) -> Self {
        x
    }
    fn value(self) -> f64 {
        self
    }
}

/// The exact sum, rounded once to f64, and the sum of the absolute values (an upper bound:
/// rounded up by a relative 2^-50, more than its own rounding error).
fn exact<T: Exact>(values: &[T]) -> (f64, f64) {
    let scale = 2f64.powi(T::SCALE);
    let mut sum = 0i128;
    let mut abs = 0i128;
    for &v in values {
        let scaled = v.value() * scale;
        assert_eq!(scaled.fract(), 0.0, "{} is not a multiple of 2^-{}", v.value(), T::SCALE);
        sum += scaled as i128;
        abs += (scaled as i128).abs();
    }
    (sum as f64 / scale, abs as f64 / scale * (1.0 + 2f64.powi(-50)))
}

/// Cancellation: `n` values, most of them large (up to 2^`big` in magnitude, multiples of 1)
/// in pairs of opposite sign at random places, the rest small (below 1, multiples of
/// 2^-(SCALE - 16)). The exact sum is the small values' (about √n), the sum of absolute values
/// about n 2^(big - 1): cancellation of 10 to 20 orders of magnitude.
fn cancelling<T: Exact>(n: usize, big: u32, seed: u64) -> Vec<T> {
    let mut rng = Rng(seed);
    let fine = 2f64.powi(-(T::SCALE - 16));
    let mut values: Vec<f64> = Vec::with_capacity(n);
    while values.len() + 2 <= n {
        if rng.next().is_multiple_of(8) {
            let small = (rng.next() % (1 << 16)) as f64 * fine;
            values.push(if rng.next().is_multiple_of(2) { small } else { -small });
        } else {
            let large = (rng.next() % (1u64 << big)) as f64;
            values.push(large);
            values.push(-large);
        }
    }
    values.resize(n, 0.5);
    // Fisher-Yates: the pairs land anywhere, in any thread's run.
    for i in (1..n).rev() {
        values.swap(i, (rng.next() % (i as u64 + 1)) as usize);
    }
    values.into_iter().map(T::of).collect()
}

/// `|sum_order_cpu - exact| <= bound` (plus the exact sum's own rounding to f64), at every
/// start a view can have modulo 16 bytes.
fn within_bound<T: Exact>(values: &[T], sms: u32) -> Result<(), TestCaseError> {
    let (exact, abs) = exact(values);
    let bound = sum_error_bound::<T>(values.len() as u64, sms, exact, abs) + exact.abs() * f64::EPSILON;
    for start in (0..16).step_by(std::mem::size_of::<T>()) {
        let got = sum_order_cpu(values, 0x1000 + start as u64, sms).value();
        prop_assert!(
            (got - exact).abs() <= bound,
            "n={} start={start}: got {got:e}, exact {exact:e}, error {:e} > bound {bound:e} (Σ|x| {abs:e})",
            values.len(),
            (got - exact).abs()
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn f32_sums_stay_within_the_bound_under_cancellation(n in 1usize..300_000, big in 8u32..34, sms in 1u32..200, seed in any::<u64>()) {
        within_bound(&cancelling::<f32>(n, big, seed), sms)?;
    }

    #[test]
    fn f64_sums_stay_within_the_bound_under_cancellation(n in 1usize..300_000, big in 8u32..60, sms in 1u32..200, seed in any::<u64>()) {
        within_bound(&cancelling::<f64>(n, big, seed), sms)?;
    }
}

/// Past 2^20 elements (a thread's run of several trips, many blocks), on an H100's 132 SMs.
#[test]
fn large_cancelling_sums_stay_within_the_bound() {
    for seed in 0..2 {
        within_bound(&cancelling::<f32>((1 << 20) + 3, 30, seed), 132).unwrap();
        within_bound(&cancelling::<f64>((1 << 20) + 3, 50, seed), 132).unwrap();
    }
}

/// Where a sequential `f32` sum loses everything, the `f64` accumulator loses nothing: 2^25 ones
/// between +2^30 and -2^30 (a running f32 sum stops growing at 2^24 past the large value).
#[test]
fn ones_between_large_values_are_all_counted() {
    let n = 1 << 25;
    let mut values = vec![1.0f32; n];
    values[0] = 2f32.powi(30);
    values[n - 1] = -(2f32.powi(30));
    let sequential = values.iter().fold(0.0f32, |a, &b| a + b);
    assert_ne!(sequential, (n - 2) as f32);
    assert_eq!(sum_order_cpu(&values, 0, 132), (n - 2) as f32);
}

/// The order depends on the start modulo 16 bytes (which elements are the head), not on where
/// the buffer is: the same values 256 bytes further give the same bits.
#[test]
fn the_order_depends_on_the_start_modulo_16_only() {
    let values = cancelling::<f64>(100_003, 52, 7);
    for start in [0u64, 8] {
        let here = sum_order_cpu(&values, 0x1000 + start, 132);
        assert_eq!(here.to_bits(), sum_order_cpu(&values, 0x1100 + start, 132).to_bits());
    }
}

/// The kernel's loops, simulated thread by thread with its own index functions (the unrolled
/// trips, then single vectors, the head and tail elements, the warp and block trees, the last
/// block's run and trees): `sum_order_cpu`, which sweeps the input once instead, gives the same
/// bits.
fn kernel_order(values: &[f64], per_vector: u64, head: u64, sms: u32) -> f64 {
    use coalesce_kernels::reduce::elements::{SUM_BLOCK, sum_blocks, vector_split, warp_tree};
    use coalesce_kernels::reduce::{UNROLL, grid_threads64, thread_index64, unrolled_vector, whole_trip};
    let n = values.len() as u64;
    let (vectors, tail) = vector_split(n - head, per_vector);
    let blocks = sum_blocks(n, per_vector, sms);
    let step = grid_threads64(blocks);
    let add_vector =
        |acc: f64, v: u64| (0..per_vector).fold(acc, |a, e| a + values[(head + v * per_vector + e) as usize]);
    let block_tree = |threads: &[f64]| {
        let warp = |w: &[f64]| warp_tree(std::array::from_fn(|l| w[l]), |a, b| a + b);
        warp(&threads.chunks(32).map(warp).collect::<Vec<_>>())
    };
    let mut totals = Vec::new();
    for b in 0..blocks {
        let partials: Vec<f64> = (0..SUM_BLOCK)
            .map(|t| {
                let g = thread_index64(b, t);
                let (mut i, mut acc) = (g, 0.0);
                while whole_trip(i, step, vectors) {
                    for k in 0..UNROLL {
                        acc = add_vector(acc, unrolled_vector(i, k, step));
                    }
                    i += UNROLL as u64 * step;
                }
                while i < vectors {
                    acc = add_vector(acc, i);
                    i += step;
                }
                if g < head {
                    acc += values[g as usize];
                }
                if g < tail {
                    acc += values[(head + vectors * per_vector + g) as usize];
                }
                acc
            })
            .collect();
        totals.push(block_tree(&partials));
    }
    let last: Vec<f64> = (0..SUM_BLOCK as usize)
        .map(|t| totals.iter().skip(t).step_by(SUM_BLOCK as usize).fold(0.0, |a, b| a + b))
        .collect();
    block_tree(&last)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn the_cpu_order_is_the_kernels_loops(n in 1usize..40_000, start in 0u64..2, sms in 1u32..4, seed in any::<u64>()) {
        let values = cancelling::<f64>(n, 50, seed);
        let head = coalesce_kernels::reduce::elements::head_elements(8 * start, n as u64, 8, 16);
        let want = kernel_order(&values, 2, head, sms);
        prop_assert_eq!(sum_order_cpu(&values, 8 * start, sms).to_bits(), want.to_bits());
    }
}
