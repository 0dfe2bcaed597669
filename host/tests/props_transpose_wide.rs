//! Property tests of the wide tile's plans (the wide transpose and its two copies): over random
//! even shapes, tall and wide ones past 65 535 tiles included, every float pair a thread of the
//! planned launch loads or stores (with the kernel's own index functions and guards) lies inside
//! the buffers and is 8-byte aligned; odd shapes and misaligned buffers are refused with their
//! documented errors.
use coalesce::Error;

use coalesce::DeviceViewMut;
use coalesce::transpose::*;
use coalesce_kernels::transpose::*;
use proptest::prelude::*;

fn slices(n: usize, offset: u64) -> (DeviceViewMut<'static, f32>, DeviceViewMut<'static, f32>) {
    // SAFETY: descriptors only; no planned call is ever launched.
    unsafe { (DeviceViewMut::stand_in(0x1_0000_0000 + offset, n), DeviceViewMut::stand_in(0x9_0000_0000, n)) }
}

/// The methods that move float pairs with the wide tile.
const PAIRS: [Method; 3] = [Method::Wide, Method::WideCopy, Method::WideCopyDown];

fn even_dim() -> impl Strategy<Value = u32> {
    prop_oneof![(1u32..200).prop_map(|h| 2 * h), (1u32..3_000_000).prop_map(|h| 2 * h)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn wide_pairs_stay_inside_and_aligned(rows in even_dim(), cols in even_dim(), probe in any::<u32>(),
                                          method in prop::sample::select(PAIRS.to_vec()),
                                          tx in 0u32..32, ty in 0..WIDE_ROWS, j in 0..WIDE_TILE / WIDE_ROWS) {
        let n = rows as usize * cols as usize;
        prop_assume!(n <= 1 << 34);
        let (input, mut output) = slices(n, 0);
        let call = plan(method, &input, &mut output, rows as usize, cols as usize).unwrap();
        let launch = call.launch();
        prop_assert_eq!(launch.block, (32, WIDE_ROWS));
        prop_assert_eq!(u64::from(launch.grid.0), wide_tiles(rows, cols));
        prop_assert_eq!(launch.shared_bytes, if method == Method::Wide { WIDE_SHARED_BYTES } else { 0 });
        for b in [0, launch.grid.0 - 1, probe % launch.grid.0] {
            let origin = if method == Method::WideCopy {
                wide_tile_origin_along(b, wide_col_tiles(cols))
            } else {
                wide_tile_origin(b, wide_row_tiles(rows))
            };
            prop_assert!(origin.0 < cols && origin.1 < rows, "every block has a tile inside the matrix");
            let (r, c) = wide_load_coords(origin, (tx, ty), j);
            if r < rows && c < cols {
                let i = row_major_index(r, c, cols);
                prop_assert!(i.is_multiple_of(2) && i + 1 < n as u64);
            }
            // The copies store where they loaded (checked above).
            let (r, c) = wide_store_coords(origin, (tx, ty), j);
            if method == Method::Wide && r < rows && c < cols {
                let o = transposed_index(r, c, rows);
                prop_assert!(o.is_multiple_of(2) && o + 1 < n as u64);
            }
        }
    }

    #[test]
    fn odd_shapes_and_misaligned_buffers_are_refused(rows in 1u32..5000, cols in 1u32..5000, shift in 1u64..8,
                                                     method in prop::sample::select(PAIRS.to_vec())) {
        let n = rows as usize * cols as usize;
        let (input, mut output) = slices(n, 0);
        let refused = plan(method, &input, &mut output, rows as usize, cols as usize);
        if rows % 2 == 1 || cols % 2 == 1 {
            let refused_odd = matches!(refused, Err(Error::Unsupported(_)));
            prop_assert!(refused_odd);
            prop_assert_eq!(choose(&input, &output, rows as usize, cols as usize), Method::Padded);
        } else {
            prop_assert!(refused.is_ok());
            prop_assert_eq!(choose(&input, &output, rows as usize, cols as usize), Method::Wide);
            let (input, mut output) = slices(n, shift * 4 % 8);
            let misaligned = plan(method, &input, &mut output, rows as usize, cols as usize);
            if shift * 4 % 8 == 0 {
                prop_assert!(misaligned.is_ok());
            } else {
                let refused_misaligned = matches!(misaligned, Err(Error::Misaligned { align: 8, .. }));
                prop_assert!(refused_misaligned);
                prop_assert_eq!(choose(&input, &output, rows as usize, cols as usize), Method::Padded);
            }
        }
    }
}
