//! Property tests of the layouts plans: over random accepted inputs, sizes near the 32-bit limit
//! included, every index a thread of the planned launch can compute (with the kernels' own index
//! functions and guards) lies inside the buffers and the shared memory launched; rejected inputs
//! return their documented error.
use coalesce::Error;
use coalesce_kernels::launch::MAX_ELEMENTS_32;

use coalesce::DeviceViewMut;
use coalesce::layouts::*;
use coalesce_kernels::layouts::*;
use cust::memory::DeviceCopy;
use proptest::prelude::*;

/// Two slice descriptors, 16-byte aligned, at made-up addresses.
fn slices<T: DeviceCopy>(a: usize, b: usize) -> (DeviceViewMut<'static, T>, DeviceViewMut<'static, T>) {
    // SAFETY: descriptors only; no planned call is ever launched.
    unsafe { (DeviceViewMut::stand_in(0x1_0000_0000, a), DeviceViewMut::stand_in(0x9_0000_0000, b)) }
}

/// Six SoA array descriptors with the given lengths.
fn arrays(lens: [usize; 6]) -> [DeviceViewMut<'static, f32>; 6] {
    // SAFETY: as above.
    std::array::from_fn(|k| unsafe { DeviceViewMut::stand_in(0x1_0000_0000 * (k as u64 + 1), lens[k]) })
}

/// Sizes from tiny to the 32-bit limit, the limit itself more often than chance would pick it.
fn size32() -> impl Strategy<Value = usize> {
    prop_oneof![
        1usize..5000,
        (MAX_ELEMENTS_32 as usize - 5000)..=MAX_ELEMENTS_32 as usize,
        1usize..=MAX_ELEMENTS_32 as usize
    ]
}

/// Blocks to probe: the first, the last and one at random.
fn probe_blocks(grid: u32, probe: u32) -> [u32; 3] {
    [0, grid - 1, probe % grid]
}

/// Threads to probe: the first, the last and one at random.
fn probe_threads(probe: u32) -> [u32; 3] {
    [0, BLOCK - 1, probe % BLOCK]
}

proptest! {
    #[test]
    fn aos_indices_stay_inside(n in size32(), staged in any::<bool>(), pb in any::<u32>(), pt in any::<u32>()) {
        let method = if staged { AosMethod::Staged } else { AosMethod::Element };
        let (input, mut output) = slices::<Float3>(n, n);
        let call = plan_aos(method, &input, &mut output).unwrap();
        let (launch, n32) = (call.launch(), call.args().2);
        prop_assert_eq!(n32 as usize, n);
        prop_assert_eq!(launch.block, (BLOCK, 1));
        prop_assert!(launch.check_limits().is_ok());
        let grid = launch.grid.0;
        let threads = u64::from(grid) * u64::from(BLOCK);
        prop_assert!(threads >= n as u64, "every element has a thread");
        prop_assert!(threads <= 1 << 32, "the u32 thread index does not wrap");
        for b in probe_blocks(grid, pb) {
            for t in probe_threads(pt) {
                match method {
                    AosMethod::Element => {
                        // i = b * BLOCK + t, guarded by i < n: element i of both buffers.
                        let i = u64::from(b) * u64::from(BLOCK) + u64::from(t);
                        prop_assert!(i >= n as u64 || i < input.len() as u64);
                    }
                    AosMethod::Staged => {
                        prop_assert_eq!(launch.shared_bytes, STAGED_SHARED_BYTES);
                        let buffer_floats = FLOAT3_FLOATS as u64 * n as u64;
                        for k in 0..FLOAT3_FLOATS {
                            let g = staged_index(b, t, k);
                            prop_assert!(g >= floats(n32) || g < buffer_floats);
                            prop_assert!(staged_slot(t, k) < STAGED_FLOATS);
                        }
                        let e = staged_element(b, t);
                        if e < n32 {
                            for c in 0..FLOAT3_FLOATS {
                                let slot = staged_component_slot(t, c);
                                prop_assert!(slot < STAGED_FLOATS);
                                // The slot holds the element's float: this block loaded it there.
                                let g = staged_index(b, slot % BLOCK, slot / BLOCK);
                                prop_assert_eq!(g, floats(e) + u64::from(c));
                                prop_assert!(g < floats(n32));
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn aos_rejects_mismatched_and_oversized_buffers(n in size32(), delta in 1usize..40, longer in any::<bool>(),
                                                    staged in any::<bool>(), past in 1usize..1000) {
        let method = if staged { AosMethod::Staged } else { AosMethod::Element };
        let other = if longer { n + delta } else { n.saturating_sub(delta) };
        let (input, mut output) = slices::<Float3>(n, other);
        let refused = plan_aos(method, &input, &mut output);
        let ok = matches!(refused, Err(Error::LengthMismatch { what: "float3 output", expected, got })
                              if expected == n && got == other);
        prop_assert!(ok);
        let big = MAX_ELEMENTS_32 as usize + past;
        let (input, mut output) = slices::<Float3>(big, big);
        let ok = matches!(plan_aos(method, &input, &mut output), Err(Error::OutOfRange { .. }));
        prop_assert!(ok);
        let (input, mut output) = slices::<Float3>(0, 0);
        prop_assert!(matches!(plan_aos(method, &input, &mut output), Err(Error::Empty(_))));
    }

    #[test]
    fn soa_indices_stay_inside(n in size32(), pb in any::<u32>(), pt in any::<u32>()) {
        let [x, y, z, mut ox, mut oy, mut oz] = arrays([n; 6]);
        let call = plan_soa(Soa3::new(&x, &y, &z), Soa3Mut::new(&mut ox, &mut oy, &mut oz)).unwrap();
        let (launch, n32) = (call.launch(), call.args().6);
        prop_assert_eq!(n32 as usize, n);
        let grid = launch.grid.0;
        prop_assert!(u64::from(grid) * u64::from(launch.block.0) >= n as u64);
        prop_assert!(u64::from(grid) * u64::from(launch.block.0) <= 1 << 32);
        for b in probe_blocks(grid, pb) {
            for t in probe_threads(pt) {
                let i = u64::from(b) * u64::from(BLOCK) + u64::from(t);
                prop_assert!(i >= u64::from(n32) || i < n as u64);
            }
        }
    }

    #[test]
    fn soa_rejects_any_array_of_another_length(n in 1usize..100_000, which in 1usize..6, delta in 1usize..40) {
        let mut lens = [n; 6];
        lens[which] = n + delta;
        let [x, y, z, mut ox, mut oy, mut oz] = arrays(lens);
        let refused = plan_soa(Soa3::new(&x, &y, &z), Soa3Mut::new(&mut ox, &mut oy, &mut oz));
        let want = ["", "SoA input y", "SoA input z", "SoA output x", "SoA output y", "SoA output z"][which];
        let ok = matches!(refused, Err(Error::LengthMismatch { what, expected, .. }) if what == want && expected == n);
        prop_assert!(ok);
    }

    #[test]
    fn aligned_plan_needs_16_byte_boundaries(n in size32(), misalign in 1u64..16, output_side in any::<bool>()) {
        let (input, mut output) = slices::<Float3A16>(n, n);
        let call = plan_aligned16(&input, &mut output).unwrap();
        prop_assert_eq!(call.args().2 as usize, n);
        prop_assert!(u64::from(call.launch().grid.0) * u64::from(BLOCK) >= n as u64);
        let (a, b) = if output_side { (0x1_0000_0000, 0x9_0000_0000 + misalign) } else { (0x1_0000_0000 + misalign, 0x9_0000_0000) };
        // SAFETY: descriptors only.
        let (input, mut output) = unsafe { (DeviceViewMut::<Float3A16>::stand_in(a, n), DeviceViewMut::<Float3A16>::stand_in(b, n)) };
        let ok = matches!(plan_aligned16(&input, &mut output), Err(Error::Misaligned { align: 16, .. }));
        prop_assert!(ok);
    }
}
