//! Property tests of the access-order plans: over random accepted inputs, sizes near the 32-bit
//! limit included, every index a thread of the planned launch can compute (with the kernels'
//! own `walk_threads`, index functions, `along_x` / `along_y`, `matrix_index` and guards) lies
//! inside the buffers and every element has a thread; rejected inputs return their documented
//! error.
use coalesce::Error;
use coalesce::access_order::*;
use coalesce_kernels::access_order::*;
use coalesce_kernels::launch::{MAX_ELEMENTS_32, MAX_GRID_Y};

use coalesce::DeviceViewMut;
use proptest::prelude::*;

/// Two slice descriptors at made-up addresses.
fn slices(a: usize, b: usize) -> (DeviceViewMut<'static, f32>, DeviceViewMut<'static, f32>) {
    // SAFETY: descriptors only; no planned call is ever launched.
    unsafe { (DeviceViewMut::stand_in(0x1_0000_0000, a), DeviceViewMut::stand_in(0x9_0000_0000, b)) }
}

/// `(per_thread, threads)` with `threads * per_thread <= MAX_ELEMENTS_32`, often at the limit.
fn walk() -> impl Strategy<Value = (u32, u32)> {
    (1..=MAX_PER_THREAD).prop_flat_map(|p| {
        let max = (MAX_ELEMENTS_32 / u64::from(p)) as u32;
        (Just(p), prop_oneof![1u32..5000, (max - 100)..=max, 1u32..=max])
    })
}

/// A 2-D shape with `rows * cols <= MAX_ELEMENTS_32`: small, tall, wide, or at the limit.
fn shape_2d() -> impl Strategy<Value = (u32, u32)> {
    let limit = MAX_ELEMENTS_32 as u32;
    prop_oneof![1u32..5000, 1u32..1_000_000, (limit - 1000)..=limit, 1u32..=limit].prop_flat_map(move |rows| {
        let max = limit / rows;
        (Just(rows), prop_oneof![1u32..=max.min(100), (max - max.min(40))..=max, 1u32..=max].prop_map(|c| c.max(1)))
    })
}

/// Fails the case unless `$result` matches `$pattern` (an expected refusal), printing it if not.
macro_rules! prop_assert_refused {
    ($result:expr, $pattern:pat) => {{
        let result = $result;
        prop_assert!(matches!(result, $pattern), "{:?}", result);
    }};
}

proptest! {
    #[test]
    fn walk_indices_stay_inside((per_thread, threads) in walk(), probe in any::<u64>(), interleaved in any::<bool>()) {
        let order = if interleaved { Order::Interleaved } else { Order::Chunked };
        let n = threads * per_thread;
        let (input, mut output) = slices(n as usize, n as usize);
        let call = plan_walk(order, &input, &mut output, n as usize, per_thread).unwrap();
        let launch = call.launch();
        prop_assert_eq!(call.kernel(), order.kernel());
        prop_assert_eq!((call.args().2, call.args().3), (n, per_thread));
        prop_assert_eq!(walk_threads(n, per_thread), threads);
        // Every working thread exists, and the highest global id computed in u32 does not wrap.
        let launched = u64::from(launch.grid.0) * u64::from(launch.block.0);
        prop_assert!(launched >= u64::from(threads) && launched - 1 <= u64::from(u32::MAX));
        prop_assert_eq!(launch.block.0, BLOCK);
        // Threads t < threads run steps k < per_thread; the others are guarded out.
        let index = if interleaved { interleaved_index } else { chunked_index };
        for t in [0, (probe % u64::from(threads)) as u32, threads - 1] {
            for k in [0, (probe >> 32) as u32 % per_thread, per_thread - 1] {
                prop_assert!(index(t, k, per_thread, threads) < u64::from(n));
            }
        }
        // The first and last element are reached.
        prop_assert_eq!(index(0, 0, per_thread, threads), 0);
        prop_assert_eq!(index(threads - 1, per_thread - 1, per_thread, threads), u64::from(n) - 1);
    }

    #[test]
    fn bad_walks_are_refused(n in 1usize..=MAX_ELEMENTS_32 as usize, per_thread in 2..=MAX_PER_THREAD,
                             delta in 1usize..100) {
        let (input, mut output) = slices(n, n);
        let refused = plan_walk(Order::Chunked, &input, &mut output, 0, 1).map(|c| c.launch());
        prop_assert_refused!(refused, Err(Error::Empty(_)));
        let big = MAX_ELEMENTS_32 as usize + delta;
        let refused = plan_walk(Order::Chunked, &input, &mut output, big, 1).map(|c| c.launch());
        prop_assert_refused!(refused, Err(Error::OutOfRange { what: "access order n", .. }));
        for bad in [0, MAX_PER_THREAD + delta as u32] {
            let refused = plan_walk(Order::Interleaved, &input, &mut output, n, bad).map(|c| c.launch());
            prop_assert_refused!(refused, Err(Error::OutOfRange { what: "elements per thread", .. }));
        }
        let refused = plan_walk(Order::Chunked, &input, &mut output, n, per_thread).map(|c| c.launch());
        if n % per_thread as usize == 0 {
            prop_assert!(refused.is_ok());
        } else {
            prop_assert_refused!(refused, Err(Error::Unsupported(_)));
        }
        let (short, mut long) = slices(n - delta.min(n), n + delta);
        let refused = plan_walk(Order::Chunked, &short, &mut output, n, 1).map(|c| c.launch());
        prop_assert_refused!(refused, Err(Error::LengthMismatch { what: "access order input", .. }));
        let refused = plan_walk(Order::Chunked, &input, &mut long, n, 1).map(|c| c.launch());
        prop_assert_refused!(refused, Err(Error::LengthMismatch { what: "access order output", .. }));
    }

    #[test]
    fn walk_2d_indices_stay_inside((rows, cols) in shape_2d(), probe in any::<u64>(), x in any::<bool>()) {
        let lanes = if x { Lanes::AlongX } else { Lanes::AlongY };
        let map = if x { along_x } else { along_y };
        let n = rows as usize * cols as usize;
        let (input, mut output) = slices(n, n);
        let grid = grid_2d(rows, cols, x);
        let result = plan_walk_2d(lanes, &input, &mut output, rows as usize, cols as usize);
        if grid.1 > MAX_GRID_Y {
            prop_assert_refused!(result, Err(Error::OutOfRange { what: "grid y", .. }));
            return Ok(());
        }
        let call = result.unwrap();
        prop_assert_eq!(call.launch().grid, grid);
        prop_assert_eq!(call.launch().block, BLOCK_2D);
        prop_assert_eq!(call.kernel(), lanes.kernel());
        // Extreme and random blocks and threads, through the kernel's map and guard.
        let random = ((probe % u64::from(grid.0)) as u32, ((probe >> 32) % u64::from(grid.1)) as u32);
        let blocks = [(0, 0), (grid.0 - 1, grid.1 - 1), random];
        for b in blocks {
            for t in [(0, 0), (BLOCK_2D.0 - 1, BLOCK_2D.1 - 1), (BLOCK_2D.0 - 1, 0), (0, BLOCK_2D.1 - 1)] {
                let (r, c) = map(b, t);
                if r < rows && c < cols {
                    prop_assert!(matrix_index(r, c, cols) < n as u64);
                }
            }
        }
        // Every element has a thread: invert the map for the last element and a random one.
        let random = ((probe % u64::from(rows)) as u32, ((probe >> 20) % u64::from(cols)) as u32);
        for (r, c) in [(rows - 1, cols - 1), random] {
            let (b, t) = if x {
                ((c / BLOCK_2D.0, r / BLOCK_2D.1), (c % BLOCK_2D.0, r % BLOCK_2D.1))
            } else {
                ((c / BLOCK_2D.1, r / BLOCK_2D.0), (r % BLOCK_2D.0, c % BLOCK_2D.1))
            };
            prop_assert!(b.0 < grid.0 && b.1 < grid.1);
            prop_assert_eq!(map(b, t), (r, c));
        }
    }

    #[test]
    fn bad_2d_walks_are_refused((rows, cols) in shape_2d(), delta in 1usize..100) {
        let (rows, cols) = (rows as usize, cols as usize);
        let n = rows * cols;
        let (input, mut output) = slices(n, n);
        for lanes in [Lanes::AlongX, Lanes::AlongY] {
            let refused = plan_walk_2d(lanes, &input, &mut output, 0, cols).map(|c| c.launch());
            prop_assert_refused!(refused, Err(Error::Empty("rows")));
            let refused = plan_walk_2d(lanes, &input, &mut output, rows, 0).map(|c| c.launch());
            prop_assert_refused!(refused, Err(Error::Empty("cols")));
            // Enough rows that rows * cols passes 2^31 - 1 elements.
            let over = (MAX_ELEMENTS_32 as usize / cols) + delta;
            let refused = plan_walk_2d(lanes, &input, &mut output, over, cols).map(|c| c.launch());
            prop_assert_refused!(refused, Err(Error::OutOfRange { .. }));
            let (short, mut long) = slices(n - delta.min(n), n + delta);
            let refused = plan_walk_2d(lanes, &short, &mut output, rows, cols).map(|c| c.launch());
            prop_assert_refused!(refused, Err(Error::LengthMismatch { what: "access order input", .. }));
            let refused = plan_walk_2d(lanes, &input, &mut long, rows, cols).map(|c| c.launch());
            prop_assert_refused!(refused, Err(Error::LengthMismatch { what: "access order output", .. }));
        }
    }
}
