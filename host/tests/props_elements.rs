//! Property tests of the element types' plans: over random shapes, lengths and views at any
//! element offset, the transpose of 1-, 2-, 4- and 8-byte elements takes the kernel its docs
//! name, with the launch that kernel needs, and every word a thread of a packed launch loads,
//! stages or stores (with the kernel's own index functions and guards) lies inside the buffers
//! or the tile; the byte copy's and the 64-bit sum's plans take any start and length and refuse
//! the rest with their errors; the CPU sums wrap at their width and add small integers exactly.
use coalesce::DeviceViewMut;
use coalesce::coalescing::plan_copy_bytes;
use coalesce::reduce::{plan_sum_u64, sum_order_cpu};
use coalesce::transpose::{Method, Route, route};
use coalesce::{DeviceCopy, DeviceRead, Error};
use coalesce_kernels::coalescing::{any_blocks, byte_split};
use coalesce_kernels::launch::MAX_GRID_X;
use coalesce_kernels::reduce::elements::{SUM_BLOCK, WRAP_BOUNDARY, head_elements, sum_blocks};
use coalesce_kernels::transpose::elements::*;
use coalesce_kernels::transpose::{PITCH_PADDED, TILE, tiles};
use proptest::prelude::*;

/// Views of `n` elements of `T` at element offsets `at` and `to` from 256-byte aligned bases.
fn views<T: DeviceCopy + 'static>(
    n: usize,
    at: u64,
    to: u64,
) -> (DeviceViewMut<'static, T>, DeviceViewMut<'static, T>) {
    let size = std::mem::size_of::<T>() as u64;
    // SAFETY: descriptors only; no planned call is ever launched.
    unsafe {
        (DeviceViewMut::stand_in(0x1_0000_0000 + at * size, n), DeviceViewMut::stand_in(0x9_0000_0000 + to * size, n))
    }
}

/// A dimension: small, around the packed tiles' sides, or large.
fn dim() -> impl Strategy<Value = u32> {
    prop_oneof![1u32..300, (1u32..64).prop_map(|t| 128 * t), 1u32..200_000, (u32::MAX - 300)..=u32::MAX]
}

/// Checks `T`'s route and launch for a `rows × cols` matrix at element offsets `at`, `to`, and
/// probes a packed launch's threads.
fn route_of<T: DeviceCopy + 'static>(
    rows: u32,
    cols: u32,
    (at, to): (u64, u64),
    probe: (u32, u32, u32, u32),
) -> Result<(), TestCaseError> {
    let size = std::mem::size_of::<T>() as u32;
    let n = u64::from(rows) * u64::from(cols);
    prop_assume!(n <= 1 << 40);
    let (input, mut output) = views::<T>(n as usize, at, to);
    let routed = route(&input, &mut output, rows as usize, cols as usize);
    if tiles(rows, cols) > u64::from(MAX_GRID_X) {
        let refused = matches!(routed, Err(Error::OutOfRange { what: "transpose tiles", .. }));
        prop_assert!(refused, "{:?}", routed);
        return Ok(());
    }
    let (taken, launch) = routed.unwrap();
    let k = match size {
        1 => K_U8,
        2 => K_U16,
        _ => K_U64,
    };
    let words = (input.address() | output.address()).is_multiple_of(4);
    let packs = size == 8 || (size < 4 && words && rows.is_multiple_of(k) && cols.is_multiple_of(k));
    match taken {
        Route::Words(method) => {
            prop_assert_eq!(size, 4);
            let wide = rows.is_multiple_of(2)
                && cols.is_multiple_of(2)
                && (input.address() | output.address()).is_multiple_of(8);
            prop_assert_eq!(method, if wide { Method::Wide } else { Method::Padded });
            return Ok(());
        }
        Route::Padded => {
            prop_assert!(size < 4 && !packs);
            prop_assert_eq!(launch.block, PADDED_BLOCK);
            prop_assert_eq!(u64::from(launch.grid.0), tiles(rows, cols));
            prop_assert_eq!(launch.shared_bytes, TILE * PITCH_PADDED * size);
            return Ok(());
        }
        Route::Packed => prop_assert!(packs),
    }
    let word = if size == 8 { 8 } else { 4 };
    prop_assert_eq!(launch.block, PACKED_BLOCK);
    prop_assert_eq!(u64::from(launch.grid.0), packed_tiles(rows, cols, k));
    prop_assert_eq!(launch.shared_bytes, packed_shared_bytes(k, word));
    // The kernel's indices, for the first, the last and a random block.
    let words_n = n / u64::from(k);
    let (in_pitch, out_pitch) = (u64::from(cols / k), u64::from(rows / k));
    let (probe_b, tx, ty, j) = probe;
    let (tx, ty) = (tx % PACKED_WORDS, ty % PACKED_ROWS);
    let grid = launch.grid.0;
    for b in [0, grid - 1, probe_b % grid] {
        let origin = packed_origin(b, packed_row_tiles(rows, k), k);
        prop_assert!(origin.0 < cols && origin.1 < rows, "every block has a tile inside the matrix");
        let (r, c) = packed_load(origin, (tx, ty), j % (4 * k), k);
        prop_assert!(packed_slot(r - origin.1, tx, k) < packed_side(k) * PACKED_WORDS);
        if r < rows && c < cols {
            prop_assert!(c.is_multiple_of(k) && u64::from(r) * in_pitch + u64::from(c / k) < words_n);
        }
        let (r0, c0) = packed_store(origin, (tx, ty), j % (PACKED_WORDS / PACKED_ROWS), k);
        for i in 0..k {
            prop_assert!(packed_slot(r0 - origin.1 + i, (c0 - origin.0) / k, k) < packed_side(k) * PACKED_WORDS);
            if r0 < rows && c0 + i < cols {
                prop_assert!(r0.is_multiple_of(k) && u64::from(c0 + i) * out_pitch + u64::from(r0 / k) < words_n);
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn every_element_size_takes_its_kernel_and_stays_inside(rows in dim(), cols in dim(), at in 0u64..9, to in 0u64..9,
                                                            probe in (any::<u32>(), any::<u32>(), any::<u32>(), any::<u32>())) {
        route_of::<u8>(rows, cols, (at, to), probe)?;
        route_of::<u16>(rows, cols, (at, to), probe)?;
        route_of::<f32>(rows, cols, (at, to), probe)?;
        route_of::<[u8; 4]>(rows, cols, (at, to), probe)?;
        route_of::<f64>(rows, cols, (at, to), probe)?;
        route_of::<i16>(rows, cols, (at, to), probe)?;
    }

    #[test]
    fn other_sizes_and_wrong_lengths_are_refused(rows in 1u32..500, cols in 1u32..500, short in 1usize..5) {
        let n = (rows * cols) as usize;
        let (input, mut output) = views::<[u8; 3]>(n, 0, 0);
        let three = matches!(route(&input, &mut output, rows as usize, cols as usize), Err(Error::Unsupported(_)));
        prop_assert!(three);
        let (input, mut output) = views::<[u64; 2]>(n, 0, 0);
        let sixteen = matches!(route(&input, &mut output, rows as usize, cols as usize), Err(Error::Unsupported(_)));
        prop_assert!(sixteen);
        // A length off by a few elements is a length error in elements, whatever the kernel.
        let (input, _) = views::<u8>(n + short, 0, 0);
        let (_, mut output) = views::<u8>(n, 0, 0);
        let refused = route(&input, &mut output, rows as usize, cols as usize);
        prop_assert_eq!(refused, Err(Error::LengthMismatch { what: "transpose input", expected: n, got: n + short }));
        let (_, mut output) = views::<u16>(n.saturating_sub(short), 0, 0);
        let (input, _) = views::<u16>(n, 0, 0);
        let refused = route(&input, &mut output, rows as usize, cols as usize);
        let wrong_output = matches!(refused, Err(Error::LengthMismatch { what: "transpose output", .. }));
        prop_assert!(wrong_output);
    }

    #[test]
    fn byte_copies_take_any_start_and_length(n in prop_oneof![1usize..5000, 1usize..(1 << 40)], src in 0u64..64, dst in 0u64..64) {
        // SAFETY: descriptors only.
        let (input, mut output) = unsafe {
            (DeviceViewMut::<u8>::stand_in(0x1_0000_0000 + src, n), DeviceViewMut::<u8>::stand_in(0x9_0000_0000 + dst, n))
        };
        let launch = plan_copy_bytes(&input, &mut output).map(|c| c.launch());
        let blocks = any_blocks(byte_split(input.address(), output.address(), n as u64).vectors);
        if blocks > u64::from(MAX_GRID_X) {
            let refused = matches!(launch, Err(Error::OutOfRange { what: "copy blocks", .. }));
            prop_assert!(refused);
        } else {
            prop_assert_eq!(launch.unwrap().grid.0 as u64, blocks);
        }
        // SAFETY: descriptors only.
        let mut short = unsafe { DeviceViewMut::<u8>::stand_in(0x9_0000_0000 + dst, n - 1) };
        let refused = plan_copy_bytes(&input, &mut short).map(|c| c.launch());
        let mismatch = matches!(refused, Err(Error::LengthMismatch { what: "copy output", .. }));
        prop_assert!(mismatch);
    }

    #[test]
    fn wide_sums_take_any_start_and_length(n in prop_oneof![1u64..5000, 1u64..(1 << 40)], at in 0u64..64, sms in 1u32..512) {
        // SAFETY: descriptors only.
        let (input, mut total) = unsafe {
            (DeviceViewMut::<u64>::stand_in(0x1_0000_0000 + 8 * at, n as usize), DeviceViewMut::<u64>::stand_in(0x9_0000_0000, 1))
        };
        let call = plan_sum_u64(&input, &mut total, sms).unwrap();
        prop_assert_eq!(call.launch().grid.0, sum_blocks(n, 2, sms));
        prop_assert_eq!(call.launch().block.0, SUM_BLOCK);
        prop_assert_eq!(call.args().2, n);
        // The head ends on a 512-byte boundary (or takes all of n), so the vectors after it are
        // 16-byte aligned and inside.
        let head = head_elements(input.address(), n, 8, WRAP_BOUNDARY);
        prop_assert!(head <= n && head < 64);
        prop_assert!(head == n || (input.address() + 8 * head).is_multiple_of(WRAP_BOUNDARY));
    }

    #[test]
    fn cpu_sums_wrap_and_add_small_integers_exactly(values in prop::collection::vec(any::<u64>(), 1..3000), at in 0u64..16, sms in 1u32..300) {
        let fold = |w: u64| values.iter().fold(0u64, |a, &v| a.wrapping_add(v)) & w;
        prop_assert_eq!(sum_order_cpu(&values, 8 * at, sms), fold(u64::MAX));
        let i64s: Vec<i64> = values.iter().map(|&v| v as i64).collect();
        prop_assert_eq!(sum_order_cpu(&i64s, 8 * at, sms) as u64, fold(u64::MAX));
        let u32s: Vec<u32> = values.iter().map(|&v| v as u32).collect();
        prop_assert_eq!(u64::from(sum_order_cpu(&u32s, 4 * at, sms)), fold(u64::from(u32::MAX)));
        let i32s: Vec<i32> = values.iter().map(|&v| v as i32).collect();
        prop_assert_eq!(sum_order_cpu(&i32s, 4 * at, sms) as u32 as u64, fold(u64::from(u32::MAX)));
        // Small integers: every order adds them exactly, so the float sums are the exact sum.
        let small: Vec<i64> = values.iter().map(|&v| (v % 2001) as i64 - 1000).collect();
        let exact: i64 = small.iter().sum();
        let f32s: Vec<f32> = small.iter().map(|&v| v as f32).collect();
        let f64s: Vec<f64> = small.iter().map(|&v| v as f64).collect();
        prop_assert_eq!(sum_order_cpu(&f32s, 4 * at, sms), exact as f32);
        prop_assert_eq!(sum_order_cpu(&f64s, 8 * at, sms), exact as f64);
    }
}
