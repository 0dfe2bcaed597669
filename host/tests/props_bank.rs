//! Property tests of the bank plans: every launch is the geometry the kernels assume, every
//! shared word a lane reads (the kernels' own index functions) lies in the table, every word the
//! copy writes lies in the table, and every output index lies in the output; rejected inputs
//! return their documented error.
use coalesce::Error;
use coalesce::bank::*;
use coalesce_kernels::bank::*;

use coalesce::DeviceViewMut;
use proptest::prelude::*;

/// A table and an output descriptor at made-up addresses.
fn slices(table: usize, output: usize) -> (DeviceViewMut<'static, i32>, DeviceViewMut<'static, i32>) {
    // SAFETY: descriptors only; no planned call is ever launched.
    unsafe { (DeviceViewMut::stand_in(0x1_0000_0000, table), DeviceViewMut::stand_in(0x9_0000_0000, output)) }
}

fn tile() -> impl Strategy<Value = Tile> {
    prop_oneof![Just(Tile::Rows), Just(Tile::Cols), Just(Tile::ColsPadded)]
}

proptest! {
    #[test]
    fn every_read_copy_and_write_stays_inside(tile in tile(), stride in 1..=MAX_STRIDE, use_stride in any::<bool>(),
                                             pb in any::<u32>(), pt in any::<u32>(), k in any::<u32>()) {
        let (table, mut output) = slices(WORDS as usize, OUTPUTS as usize);
        let (launch, pattern) = if use_stride {
            let call = plan_stride(&table, &mut output, stride).unwrap();
            prop_assert_eq!(call.args().2, stride);
            (call.launch(), Pattern::Stride(stride))
        } else {
            (plan_tile(tile, &table, &mut output).unwrap().launch(), Pattern::Tile(tile))
        };
        // The geometry the kernels assume: BLOCKS blocks of BLOCK threads, the table in shared.
        prop_assert_eq!(launch, LAUNCH);
        prop_assert_eq!((launch.grid, launch.block, launch.shared_bytes), ((BLOCKS, 1), (BLOCK, 1), WORDS * 4));
        prop_assert!(launch.check_limits().is_ok());
        for b in [0, BLOCKS - 1, pb % BLOCKS] {
            for t in [0, BLOCK - 1, pt % BLOCK] {
                prop_assert!(output_index(b, t) < OUTPUTS);
                // The copy: words t, t + BLOCK, ... while below WORDS, the same word of the table
                // and of shared memory; the last one this thread copies:
                prop_assert!(t < WORDS);
                let last = t + (WORDS - 1 - t) / BLOCK * BLOCK;
                prop_assert!((last as usize) < table.len() && last < launch.shared_bytes / 4);
                let lane = lane(t);
                prop_assert!(lane < 32);
                // The reads: the first, the last and a random step of the loop.
                for step in [0, ITERS - 1, k % ITERS] {
                    prop_assert!(pattern.index(lane, step) < WORDS, "{:?} lane {} step {}", pattern, lane, step);
                }
            }
        }
    }

    #[test]
    fn bad_strides_and_lengths_are_refused(stride in prop_oneof![Just(0u32), (MAX_STRIDE + 1)..=u32::MAX],
                                           tile in tile(), table_delta in 1usize..3000, out_delta in 1usize..3000,
                                           longer in any::<bool>()) {
        let (table, mut output) = slices(WORDS as usize, OUTPUTS as usize);
        let refused = plan_stride(&table, &mut output, stride).map(|c| c.launch());
        let ok = matches!(refused, Err(Error::OutOfRange { what: "bank stride", min: 1, max, .. }) if max == u64::from(MAX_STRIDE));
        prop_assert!(ok);
        let off = |len: usize, d: usize| if longer { len + d } else { len.saturating_sub(d) };
        let (table, mut output) = slices(off(WORDS as usize, table_delta), OUTPUTS as usize);
        let refused = plan_tile(tile, &table, &mut output).map(|c| c.launch());
        let ok = matches!(refused, Err(Error::LengthMismatch { what: "bank table", .. }));
        prop_assert!(ok);
        let (table, mut output) = slices(WORDS as usize, off(OUTPUTS as usize, out_delta));
        let refused = plan_stride(&table, &mut output, 1).map(|c| c.launch());
        let ok = matches!(refused, Err(Error::LengthMismatch { what: "bank output", .. }));
        prop_assert!(ok);
    }
}
