//! Property tests of the distance plans: over random accepted inputs, sizes near the 32-bit limit
//! included, every index a thread of the planned launch can compute (following the kernels'
//! guards) lies inside the buffers, and a gather reads only points below the count; rejected
//! inputs return their documented error.
use coalesce::Error;
use coalesce::distance::*;
use coalesce_kernels::distance::*;
use coalesce_kernels::launch::MAX_ELEMENTS_32;

use coalesce::DeviceViewMut;
use cust::memory::DeviceCopy;
use proptest::prelude::*;

/// A descriptor of `len` elements at made-up address `address`.
fn at<T: DeviceCopy>(address: u64, len: usize) -> DeviceViewMut<'static, T> {
    // SAFETY: descriptors only; no planned call is ever launched.
    unsafe { DeviceViewMut::stand_in(address, len) }
}

/// Sizes from tiny to the 32-bit limit, the limit itself more often than chance would pick it.
fn size32() -> impl Strategy<Value = usize> {
    prop_oneof![
        1usize..5000,
        (MAX_ELEMENTS_32 as usize - 5000)..=MAX_ELEMENTS_32 as usize,
        1usize..=MAX_ELEMENTS_32 as usize
    ]
}

/// The thread indices `b * BLOCK + t` of the first, last and a random thread of the grid.
fn probe_threads(grid: u32, block: u32, probe: u64) -> [u64; 3] {
    let threads = u64::from(grid) * u64::from(block);
    [0, threads - 1, probe % threads]
}

proptest! {
    #[test]
    fn all_indices_stay_inside(n in size32(), soa in any::<bool>(), probe in any::<u64>()) {
        let mut out = at::<f32>(0x9_0000_0000, n);
        let (launch, n32) = if soa {
            let (x, y, z) = (at(0x1_0000_0000, n), at(0x2_0000_0000, n), at(0x3_0000_0000, n));
            let call = plan_soa(Soa3::new(&x, &y, &z), &mut out).unwrap();
            (call.launch(), call.args().4)
        } else {
            let points = at::<Float3>(0x1_0000_0000, n);
            let call = plan_aos(&points, &mut out).unwrap();
            (call.launch(), call.args().2)
        };
        prop_assert_eq!(n32 as usize, n);
        prop_assert_eq!(launch.block.0, BLOCK);
        prop_assert!(launch.check_limits().is_ok());
        let threads = u64::from(launch.grid.0) * u64::from(BLOCK);
        prop_assert!(threads >= n as u64 && threads <= 1 << 32);
        // Thread i reads point i and writes out[i] only when i < n: all buffers hold n.
        for i in probe_threads(launch.grid.0, BLOCK, probe) {
            prop_assert!(i >= u64::from(n32) || i < n as u64);
        }
    }

    #[test]
    fn gathers_read_only_points_below_the_count(n in size32(), m in prop_oneof![1usize..5000, size32()],
                                                edge in any::<bool>(), raw in any::<u32>(), soa in any::<bool>(),
                                                probe in any::<u64>()) {
        // Largest index: the last point, or any point.
        let max = if edge { n as u32 - 1 } else { raw % n as u32 };
        let idx = at::<u32>(0x5_0000_0000, m);
        // SAFETY: a descriptor whose contents no one reads; `max` bounds them by assumption.
        let indices = unsafe { IndexSlice::assume_max(&idx, max) };
        let mut out = at::<f32>(0x9_0000_0000, m);
        let (x, y, z) = (at(0x1_0000_0000, n), at(0x2_0000_0000, n), at(0x3_0000_0000, n));
        let points = at::<Float3>(0x1_0000_0000, n);
        let (launch, m32) = if soa {
            let call = plan_soa_gather(Soa3::new(&x, &y, &z), indices, &mut out).unwrap();
            (call.launch(), call.args().5)
        } else {
            let call = plan_aos_gather(&points, indices, &mut out).unwrap();
            (call.launch(), call.args().3)
        };
        prop_assert_eq!(m32 as usize, m);
        let threads = u64::from(launch.grid.0) * u64::from(BLOCK);
        prop_assert!(threads >= m as u64 && threads <= 1 << 32);
        // Thread j reads idx[j] and writes out[j] only when j < m (both hold m), then reads
        // point idx[j] <= max of every point array.
        for j in probe_threads(launch.grid.0, BLOCK, probe) {
            prop_assert!(j >= u64::from(m32) || (j < idx.len() as u64 && j < out.len() as u64));
        }
        for len in [points.len(), x.len(), y.len(), z.len()] {
            prop_assert!((max as usize) < len);
        }
    }

    #[test]
    fn gathers_refuse_indices_past_the_points(n in size32(), over in 0u32..1000, soa in any::<bool>()) {
        let max = u32::try_from(n).unwrap().saturating_add(over);
        let idx = at::<u32>(0x5_0000_0000, 7);
        // SAFETY: as above.
        let indices = unsafe { IndexSlice::assume_max(&idx, max) };
        let mut out = at::<f32>(0x9_0000_0000, 7);
        let (x, y, z) = (at(0x1_0000_0000, n), at(0x2_0000_0000, n), at(0x3_0000_0000, n));
        let points = at::<Float3>(0x1_0000_0000, n);
        let refused = if soa {
            plan_soa_gather(Soa3::new(&x, &y, &z), indices, &mut out).map(|c| c.launch())
        } else {
            plan_aos_gather(&points, indices, &mut out).map(|c| c.launch())
        };
        let ok = matches!(refused, Err(Error::OutOfRange { what: "point index", value, max: top, .. })
                              if value == u64::from(max) && top == n as u64 - 1);
        prop_assert!(ok);
    }

    #[test]
    fn mismatched_lengths_are_refused(n in 1usize..1_000_000, delta in 1usize..40, which in 0usize..4) {
        // which: 0 = y, 1 = z, 2 = output of all, 3 = output of a gather.
        let len = |k| if k == which { n + delta } else { n };
        let (x, y, z) = (at(0x1_0000_0000, n), at(0x2_0000_0000, len(0)), at(0x3_0000_0000, len(1)));
        let mut out = at::<f32>(0x9_0000_0000, len(2));
        let refused = plan_soa(Soa3::new(&x, &y, &z), &mut out).map(|c| c.launch());
        prop_assert_eq!(which == 3, refused.is_ok());
        let ok = which == 3 || matches!(refused, Err(Error::LengthMismatch { expected, .. }) if expected == n);
        prop_assert!(ok);
        let idx = at::<u32>(0x5_0000_0000, 3);
        // SAFETY: as above.
        let indices = unsafe { IndexSlice::assume_max(&idx, 0) };
        let mut out = at::<f32>(0x9_0000_0000, if which == 3 { 3 + delta } else { 3 });
        let points = at::<Float3>(0x1_0000_0000, n);
        let refused = plan_aos_gather(&points, indices, &mut out).map(|c| c.launch());
        prop_assert_eq!(which != 3, refused.is_ok());
        let ok = which != 3 || matches!(refused, Err(Error::LengthMismatch { what: "distance output", .. }));
        prop_assert!(ok);
    }

    #[test]
    fn empty_and_oversized_inputs_are_refused(past in 1usize..1000) {
        let big = MAX_ELEMENTS_32 as usize + past;
        let ok = matches!(plan_aos(&at(0x1000, big), &mut at(0x9000, big)), Err(Error::OutOfRange { what: "points", .. }));
        prop_assert!(ok);
        prop_assert!(matches!(plan_aos(&at(0x1000, 0), &mut at(0x9000, 0)), Err(Error::Empty("points"))));
        let idx = at::<u32>(0x5000, big);
        // SAFETY: as above.
        let indices = unsafe { IndexSlice::assume_max(&idx, 0) };
        let refused = plan_aos_gather(&at(0x1000, 10), indices, &mut at(0x9000, big)).map(|c| c.launch());
        let ok = matches!(refused, Err(Error::OutOfRange { what: "indices", .. }));
        prop_assert!(ok);
    }
}
