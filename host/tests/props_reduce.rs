//! Property tests of the reduce plans: over random accepted inputs, sizes near the 32-bit limit
//! (lesson kernels) and far past it (the shuffle kernel) included, every index a thread of the
//! planned launch can compute, with the kernels' own index functions and guards, lies inside its
//! buffer and no 32-bit index wraps; every rejected input returns its documented error.
use coalesce::Error;
use coalesce_kernels::launch::MAX_ELEMENTS_32;

use coalesce::DeviceViewMut;
use coalesce::reduce::*;
use coalesce_kernels::reduce::*;
use proptest::prelude::*;

/// The methods whose first pass is a 32-bit lesson kernel (all but the shuffle kernel).
fn lessons() -> Vec<Method> {
    Method::ALL.into_iter().filter(|m| m.lesson_kernel().is_some()).collect()
}

/// Descriptors at made-up addresses: the input and output 16-byte aligned, the partials
/// `partials_offset` bytes past a 16-byte boundary.
fn slices(n: usize, partials: usize, partials_offset: u64, output: usize) -> [DeviceViewMut<'static, i32>; 3] {
    // SAFETY: descriptors only; no planned call is ever launched.
    unsafe {
        [
            DeviceViewMut::stand_in(0x1_0000_0000, n),
            DeviceViewMut::stand_in(0x9_0000_0000 + partials_offset, partials),
            DeviceViewMut::stand_in(0xa_0000_0000, output),
        ]
    }
}

/// Sizes from tiny to the 32-bit limit, the limit itself more often than chance would pick it.
fn size32() -> impl Strategy<Value = usize> {
    prop_oneof![
        1usize..5000,
        (MAX_ELEMENTS_32 as usize - 5000)..=MAX_ELEMENTS_32 as usize,
        1usize..=MAX_ELEMENTS_32 as usize
    ]
}

fn lesson() -> impl Strategy<Value = Method> {
    proptest::sample::select(lessons())
}

/// The last index of a 32-bit grid-stride run from `first` by `step` below `n`, after checking
/// the kernel's `i + step` (and `i + extra`, the partner of a pair) does not wrap there.
fn last_of_run(first: u32, step: u32, extra: u32, n: u32) -> Result<u32, TestCaseError> {
    prop_assert!(step > 0);
    let last = first + (n - 1 - first) / step * step;
    prop_assert!(last < n);
    prop_assert!(last.checked_add(step).is_some(), "i + step wraps: {last} + {step}");
    prop_assert!(last.checked_add(extra).is_some());
    Ok(last)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn lesson_indices_stay_inside(method in lesson(), n in size32(), sms in prop_oneof![1u32..=4096, 1u32..=u32::MAX], extra in 0usize..40,
                                  probe_b in any::<u32>(), probe_t in 0..BLOCK, probe_d in 0..BLOCK.trailing_zeros()) {
        let [input, mut out, _] = slices(n, partials_needed(method, n, sms).max(1) + extra, 0, 0);
        let out_len = out.len();
        let call = plan_first(method, &input, &mut out, sms).unwrap();
        let (launch, n32) = (call.launch(), call.args().2);
        prop_assert_eq!(n32 as usize, n);
        prop_assert_eq!(launch.block, (BLOCK, 1));
        prop_assert_eq!(launch.shared_bytes, SHARED_BYTES);
        let grid = launch.grid.0;
        prop_assert!(grid >= 1 && launch.grid.1 == 1);
        // Partial b (or output[0]) for every block.
        let written = if method.atomic() { 1 } else { grid as usize };
        prop_assert!(written <= out_len);
        let last_block = u64::from(grid - 1);
        for (b, t) in [(0, 0), (grid - 1, BLOCK - 1), (probe_b % grid, probe_t)] {
            match method {
                Method::Seed | Method::SeedFilled => {
                    let first = thread_index(b, t);
                    if first < n32 {
                        last_of_run(first, grid_threads(grid), 0, n32)?;
                    }
                }
                Method::InterleavedDivergent | Method::InterleavedConflicts | Method::Sequential => {
                    // Guarded by `< n`; the highest index must not wrap, and every element has a thread.
                    prop_assert!(u64::from(grid) * u64::from(BLOCK) <= 1 << 31);
                    prop_assert!((last_block * u64::from(BLOCK) + u64::from(BLOCK - 1)) as usize >= n - 1);
                    prop_assert_eq!(u64::from(thread_index(b, t)), u64::from(b) * u64::from(BLOCK) + u64::from(t));
                }
                Method::FirstAdd | Method::UnrollLastWarp => {
                    prop_assert_eq!(u64::from(pair_index(b, t)), u64::from(b) * 2 * u64::from(BLOCK) + u64::from(t));
                    prop_assert!(pair_index(b, t).checked_add(BLOCK).is_some());
                    prop_assert!((last_block * 2 * u64::from(BLOCK) + 2 * u64::from(BLOCK) - 1) as usize >= n - 1);
                }
                Method::ManyPerThread => {
                    let first = pair_index(b, t);
                    if first < n32 {
                        last_of_run(first, pair_step(grid), BLOCK, n32)?;
                    }
                }
                Method::ShuffleVec4 => unreachable!(),
            }
        }
        // Shared memory: every level of every tree stays inside the BLOCK words the launch has.
        let d = 1 << probe_d;
        for pair in [divergent_pair(probe_t, d), conflict_pair(probe_t, d), sequential_pair(probe_t, d)].into_iter().flatten() {
            prop_assert!(pair.0 < BLOCK && pair.1 < BLOCK);
        }
        let (a, c) = last_warp_pair(probe_t % 32);
        prop_assert!(a < BLOCK && c < BLOCK);
    }

    #[test]
    fn shuffle_indices_stay_inside_at_any_size(n in prop_oneof![1usize..100_000, 1usize..(1 << 36)], sms in prop_oneof![1u32..=4096, 1u32..=u32::MAX],
                                               second in any::<bool>(), extra in 0usize..40, probe in any::<u64>()) {
        let [input, partials, mut out] = slices(n, n + extra, 0, 1 + extra);
        let call = if second {
            plan_second(&partials, n, &mut out, sms).unwrap()
        } else {
            plan_shuffle(&input, &mut out, sms).unwrap()
        };
        let (launch, n64) = (call.launch(), call.args().2);
        prop_assert_eq!(n64, n as u64);
        prop_assert_eq!(launch.block, (SHUFFLE_BLOCK, 1));
        prop_assert!(launch.shared_bytes >= SHUFFLE_WARPS * 4);
        let grid = launch.grid.0;
        let (vectors, tail) = vec4_split(n64);
        let step = grid_threads64(grid);
        let threads = step;
        for g in [0, threads - 1, probe % threads] {
            prop_assert_eq!(g, thread_index64((g / u64::from(SHUFFLE_BLOCK)) as u32, (g % u64::from(SHUFFLE_BLOCK)) as u32));
            // Whole trips: the last one that starts, and its highest load.
            let mut i = g;
            if whole_trip(g, step, vectors) {
                let trips = (vectors - 1 - unrolled_vector(g, UNROLL - 1, step)) / (u64::from(UNROLL) * step);
                let last = g + trips * u64::from(UNROLL) * step;
                prop_assert!(whole_trip(last, step, vectors));
                prop_assert!(unrolled_vector(last, UNROLL - 1, step) < vectors);
                i = last + u64::from(UNROLL) * step;
                prop_assert!(!whole_trip(i, step, vectors));
            }
            // Single vectors: guarded by `i < vectors`, each 16 bytes inside the n elements.
            if i < vectors {
                let last = i + (vectors - 1 - i) / step * step;
                prop_assert!(4 * last + 3 < n64);
            }
            if g < u64::from(tail) {
                prop_assert!(tail_index(vectors, g) < n64);
            }
        }
        // Every tail element has a thread.
        prop_assert!(threads >= u64::from(tail));
    }

    #[test]
    fn rejected_inputs_return_their_error(method in lesson(), n in size32(), sms in prop_oneof![1u32..=4096, 1u32..=u32::MAX], short in 1usize..40,
                                          offset in 1u64..4) {
        let need = partials_needed(method, n, sms);
        // Partials 4, 8 or 12 bytes past a 16-byte boundary: planned (the second pass adds the
        // ones before its first boundary one by one).
        let [input, mut partials, mut out] = slices(n, need.max(1), 4 * offset, 1);
        prop_assert_eq!(validate(method, &input, &mut partials, &mut out, sms), Ok(()));
        if !method.atomic() {
            // Too few partials.
            let [input, mut partials, mut out] = slices(n, need.saturating_sub(short), 0, 1);
            let short = matches!(validate(method, &input, &mut partials, &mut out, sms),
                                 Err(Error::LengthMismatch { what: "reduce partials", .. }));
            prop_assert!(short);
        }
        // No output.
        let [input, mut partials, mut out] = slices(n, need.max(1), 0, 0);
        let empty = matches!(validate(method, &input, &mut partials, &mut out, sms),
                             Err(Error::LengthMismatch { what: "reduce output", .. }));
        prop_assert!(empty);
        // Past the 32-bit limit: the lesson kernels refuse, the shuffle kernel takes it.
        let big = MAX_ELEMENTS_32 as usize + n;
        let [input, mut partials, mut out] = slices(big, need.max(1), 0, 1);
        let refused = matches!(plan_first(method, &input, &mut partials, sms), Err(Error::OutOfRange { .. }));
        prop_assert!(refused);
        prop_assert!(plan_shuffle(&input, &mut out, sms).is_ok());
        // An input 4-12 bytes off a 16-byte boundary: planned too.
        // SAFETY: stand-ins; nothing is launched.
        let (input, mut out) = unsafe { (DeviceViewMut::<i32>::stand_in(0x1_0000_0000 + 4 * offset, n), DeviceViewMut::<i32>::stand_in(0xa_0000_0000, 1)) };
        prop_assert!(plan_shuffle(&input, &mut out, sms).is_ok());
    }
}
