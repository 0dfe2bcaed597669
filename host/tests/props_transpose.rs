//! Property tests of the transpose plan: over random accepted shapes (tiny, tall, wide, huge,
//! and right at the tile limit of the 1-D grid), every index a thread of the planned launch can
//! compute (with the kernels' own `tile_origin`, `load_coords`, `store_coords`, index functions
//! and guards) lies inside the buffers or the shared tile, every element has a thread; rejected
//! shapes return their documented error.
use coalesce::Error;
use coalesce_kernels::launch::MAX_GRID_X;

use coalesce::DeviceViewMut;
use coalesce::transpose::*;
use coalesce_kernels::transpose::*;
use proptest::prelude::*;

const METHODS: [Method; 4] = [Method::Copy, Method::Naive, Method::Shared, Method::Padded];

/// Two slice descriptors at made-up addresses.
fn slices(a: usize, b: usize) -> (DeviceViewMut<'static, f32>, DeviceViewMut<'static, f32>) {
    // SAFETY: descriptors only; no planned call is ever launched.
    unsafe { (DeviceViewMut::stand_in(0x1_0000_0000, a), DeviceViewMut::stand_in(0x9_0000_0000, b)) }
}

/// A dimension: small, around a tile, or anywhere in `u32`, the extremes more often than chance.
fn dim() -> impl Strategy<Value = u32> {
    prop_oneof![1u32..100, 1u32..5000, Just(u32::MAX), (u32::MAX - 100)..=u32::MAX, 1u32..=u32::MAX]
}

/// Shapes the plan accepts: `rows` from [`dim`], then `cols` up to the most the 1-D grid takes
/// (`tiles <= MAX_GRID_X`), often right at that limit.
fn shape() -> impl Strategy<Value = (u32, u32)> {
    let pick = |rows: u32| {
        let max_col_tiles = (u64::from(MAX_GRID_X) / u64::from(rows.div_ceil(TILE))).min(u64::from(u32::MAX));
        let max_cols = (max_col_tiles * u64::from(TILE)).min(u64::from(u32::MAX)) as u32;
        (
            Just(rows),
            prop_oneof![
                1u32..=max_cols.min(64),
                Just(max_cols),
                max_cols.saturating_sub(40).max(1)..=max_cols,
                1u32..=max_cols
            ],
        )
    };
    prop_oneof![dim().prop_flat_map(pick), dim().prop_flat_map(pick).prop_map(|(r, c)| (c, r))]
}

/// Where the kernels' threads land: for block `b`, thread `(tx, ty)` and step `j`, the element
/// the load phase reads and the one the store phase writes, each only if it passes the
/// kernel's guard `r < rows && c < cols`.
fn check_thread(rows: u32, cols: u32, pitch: u32, b: u32, t: (u32, u32), j: u32) -> Result<(), TestCaseError> {
    let n = u64::from(rows) * u64::from(cols);
    let origin = tile_origin(b, col_tiles(cols));
    // Debug arithmetic: a u32 overflow in these functions panics and fails the test.
    let (r, c) = load_coords(origin, t, j);
    if r < rows && c < cols {
        prop_assert!(row_major_index(r, c, cols) < n);
        prop_assert!(transposed_index(r, c, rows) < n);
        prop_assert!(pitch == 0 || tile_slot(t.1 + j, t.0, pitch) < TILE * pitch);
    }
    let (r, c) = store_coords(origin, t, j);
    if r < rows && c < cols {
        prop_assert!(transposed_index(r, c, rows) < n);
        prop_assert!(pitch == 0 || tile_slot(t.0, t.1 + j, pitch) < TILE * pitch);
    }
    Ok(())
}

/// The block, thread and step that must reach element `(r, c)`: its tile's block, and the
/// thread whose `load_coords` and `store_coords` give `(r, c)`.
fn owner(r: u32, c: u32, cols: u32) -> (u32, (u32, u32), u32, (u32, u32), u32) {
    let (tr, tc) = (r % TILE, c % TILE);
    let block = (r / TILE) * col_tiles(cols) + c / TILE;
    (block, (tc, tr % BLOCK_ROWS), tr - tr % BLOCK_ROWS, (tr, tc % BLOCK_ROWS), tc - tc % BLOCK_ROWS)
}

/// Fails the case unless `$result` matches `$pattern` (an expected refusal), printing it if not.
macro_rules! prop_assert_refused {
    ($result:expr, $pattern:pat) => {{
        let result = $result;
        prop_assert!(matches!(result, $pattern), "{:?}", result);
    }};
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_index_of_the_launch_stays_inside((rows, cols) in shape(), probe in any::<u64>(), m in 0usize..4) {
        let method = METHODS[m];
        let n = rows as usize * cols as usize;
        let (input, mut output) = slices(n, n);
        let call = plan(method, &input, &mut output, rows as usize, cols as usize).unwrap();
        let launch = call.launch();
        let blocks = tiles(rows, cols);
        prop_assert_eq!(launch.grid, (blocks as u32, 1));
        prop_assert_eq!(launch.block, (TILE, BLOCK_ROWS));
        prop_assert_eq!(launch.shared_bytes, TILE * method.pitch() * 4);
        prop_assert_eq!((call.args().2, call.args().3), (rows, cols));
        prop_assert!(launch.check_limits().is_ok());
        let ct = col_tiles(cols);
        let last = blocks as u32 - 1;
        let picks = [0, last, (probe % blocks) as u32, ct - 1, ct.min(last), last.saturating_sub(ct)];
        let lanes = [0, TILE - 1, (probe >> 40) as u32 % TILE];
        for b in picks {
            for tx in lanes {
                for ty in [0, BLOCK_ROWS - 1] {
                    for j in (0..TILE).step_by(BLOCK_ROWS as usize) {
                        check_thread(rows, cols, method.pitch(), b, (tx, ty), j)?;
                    }
                }
            }
        }
        // Every element has a thread in the grid: the last one, the first, and a random one.
        let (pr, pc) = ((probe % u64::from(rows)) as u32, ((probe >> 32) % u64::from(cols)) as u32);
        for (r, c) in [(rows - 1, cols - 1), (0, 0), (pr, pc)] {
            let (b, load_t, load_j, store_t, store_j) = owner(r, c, cols);
            prop_assert!(u64::from(b) < blocks);
            prop_assert!(load_t.0 < TILE && load_t.1 < BLOCK_ROWS && store_t.0 < TILE && store_t.1 < BLOCK_ROWS);
            let origin = tile_origin(b, ct);
            prop_assert_eq!(load_coords(origin, load_t, load_j), (r, c));
            prop_assert_eq!(store_coords(origin, store_t, store_j), (r, c));
        }
    }

    #[test]
    fn bad_shapes_are_refused_with_their_error(rows in 1usize..=u32::MAX as usize, cols in 1usize..=u32::MAX as usize,
                                               delta in 1usize..1000, m in 0usize..4, which in 0u8..4) {
        let method = METHODS[m];
        let tiles_ok = tiles(rows as u32, cols as u32) <= u64::from(MAX_GRID_X);
        let n = rows * cols;
        let (input, mut output) = slices(n, n);
        match which {
            0 => {
                let zero = plan(method, &input, &mut output, 0, cols);
                prop_assert_refused!(zero, Err(Error::Empty("transpose rows")));
                let zero = plan(method, &input, &mut output, rows, 0);
                prop_assert_refused!(zero, Err(Error::Empty("transpose cols")));
            }
            1 => {
                let wide = plan(method, &input, &mut output, rows, u32::MAX as usize + delta);
                prop_assert_refused!(wide, Err(Error::OutOfRange { what: "transpose cols", .. }));
                let tall = plan(method, &input, &mut output, u32::MAX as usize + delta, cols);
                prop_assert_refused!(tall, Err(Error::OutOfRange { what: "transpose rows", .. }));
            }
            2 => {
                let result = plan(method, &input, &mut output, rows, cols);
                if tiles_ok {
                    prop_assert!(result.is_ok());
                } else {
                    prop_assert_refused!(result, Err(Error::OutOfRange { what: "transpose tiles", .. }));
                }
            }
            _ => {
                prop_assume!(tiles_ok);
                let (short, mut long) = slices(n - delta.min(n), n + delta);
                let result = plan(method, &short, &mut output, rows, cols).map(|c| c.launch());
                prop_assert_refused!(result, Err(Error::LengthMismatch { what: "transpose input", .. }));
                let result = plan(method, &input, &mut long, rows, cols).map(|c| c.launch());
                prop_assert_refused!(result, Err(Error::LengthMismatch { what: "transpose output", .. }));
            }
        }
    }
}
