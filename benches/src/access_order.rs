//! Access-order lessons: the registry entries, checks and workloads for
//! `coalesce::access_order`.
use coalesce::access_order::{self as lib, Lanes, Order, plus_one_cpu};
use coalesce::model::Counts;
use coalesce::{Gpu, Result};

use crate::check::{CheckResult, Rng, check_f32};
use crate::family::{Family, Param, Row};
use crate::workload::{Workload, random_pair};

/// Elements of the 1-D benchmarks (256 MiB each way).
pub const BENCH_N: usize = 1 << 26;
/// Matrix of the 2-D benchmarks (256 MiB each way).
pub const BENCH_SHAPE: (usize, usize) = (8192, 8192);
/// Thread counts the 1-D walks are checked at (`n = threads * per_thread`, capped at 2^26):
/// one thread, a warp and one, a few blocks, and a large odd count.
pub const CHECK_THREADS: [usize; 4] = [1, 33, 1000, 1_000_003];
/// Largest 1-D check size (256 MiB).
pub const CHECK_MAX_N: usize = 1 << 26;
/// Shapes the 2-D variants are checked at: single element, odd, non-multiples of the block.
pub const CHECK_SHAPES: [(usize, usize); 5] = [(1, 1), (31, 33), (33, 31), (1000, 1003), (4096, 4100)];

/// The access-order variants: the library's 1-D orders and 2-D lane layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessOrder {
    /// A 1-D walk, swept over the elements a thread handles.
    OneD(Order),
    /// A 2-D walk of a matrix.
    TwoD(Lanes),
}

const PER_THREAD: Param =
    Param { name: "per_thread", sweep: &[1, 2, 4, 8, 16, 32, 64, 128], check: &[1, 3, 8, 128], labels: None };

impl Family for AccessOrder {
    const NAME: &'static str = "access_order";
    const ROWS: &'static [Row<Self>] = VARIANTS;

    fn check(self, gpu: &Gpu, rng: &mut Rng, per_thread: u32) -> CheckResult<String> {
        match self {
            AccessOrder::OneD(order) => {
                let mut sizes = Vec::new();
                for threads in CHECK_THREADS {
                    let n = (threads * per_thread as usize).min(CHECK_MAX_N);
                    let n = n - n % per_thread as usize;
                    sizes.push(n);
                    check_f32(
                        gpu,
                        rng,
                        &format!("n={n}"),
                        (n, n),
                        |i, o| lib::walk_1d(gpu, order, i, o, n, per_thread),
                        plus_one_cpu,
                    )?;
                }
                Ok(format!("n in {sizes:?}"))
            }
            AccessOrder::TwoD(lanes) => {
                for (r, c) in CHECK_SHAPES {
                    check_f32(
                        gpu,
                        rng,
                        &format!("{r}x{c}"),
                        (r * c, r * c),
                        |i, o| lib::walk_2d(gpu, lanes, i, o, r, c),
                        plus_one_cpu,
                    )?;
                }
                Ok(format!("shapes {CHECK_SHAPES:?}"))
            }
        }
    }

    fn bench(self, gpu: &Gpu, per_thread: u32) -> Result<Workload> {
        match self {
            AccessOrder::OneD(order) => {
                let n = BENCH_N;
                let (input, mut output) = random_pair(gpu, n, n)?;
                Ok(Workload::new(8 * n as u64, move |gpu| lib::walk_1d(gpu, order, &input, &mut output, n, per_thread)))
            }
            AccessOrder::TwoD(lanes) => {
                let (r, c) = BENCH_SHAPE;
                let (input, mut output) = random_pair(gpu, r * c, r * c)?;
                Ok(Workload::new(8 * (r * c) as u64, move |gpu| lib::walk_2d(gpu, lanes, &input, &mut output, r, c)))
            }
        }
    }

    fn model(self, per_thread: u32, _sms: u32) -> Result<Option<Counts>> {
        use coalesce::model::access_order as model;
        match self {
            AccessOrder::OneD(order) => model::walk_1d(order, BENCH_N, per_thread),
            AccessOrder::TwoD(lanes) => model::walk_2d(lanes, BENCH_SHAPE.0, BENCH_SHAPE.1),
        }
        .map(Some)
    }
}

/// The access-order variants, one row each, in teaching order.
#[rustfmt::skip]
const VARIANTS: &[Row<AccessOrder>] = &[
    one_d(Order::Chunked, "each thread walks its own contiguous chunk: lanes 4*per_thread bytes apart").swept(PER_THREAD),
    one_d(Order::Interleaved, "threads interleave: each step the warp reads 128 contiguous bytes").swept(PER_THREAD),
    two_d(Lanes::AlongX, "2-D block, lanes along a row: 4 sectors a warp"),
    two_d(Lanes::AlongY, "2-D block, lanes down a column: 32 sectors a warp"),
];

/// A library 1-D order's row: it launches the order's kernel, and is named after it.
const fn one_d(order: Order, summary: &'static str) -> Row<AccessOrder> {
    Row::by_kernel(AccessOrder::OneD(order), summary, order.kernel())
}

/// A library 2-D lane layout's row: it launches the layout's kernel, and is named after it.
const fn two_d(lanes: Lanes, summary: &'static str) -> Row<AccessOrder> {
    Row::by_kernel(AccessOrder::TwoD(lanes), summary, lanes.kernel())
}
