//! Property tests of the coalescing plans: over random accepted inputs, sizes near the limits
//! included, every index a thread of the planned launch can compute (with the kernels' own index
//! functions and guards) lies inside the buffers; rejected inputs return their documented error.
use coalesce::Error;
use coalesce::coalescing::*;
use coalesce_kernels::coalescing::*;
use coalesce_kernels::launch::MAX_ELEMENTS_32;

use coalesce::DeviceViewMut;
use proptest::prelude::*;

/// Two slice descriptors 16-byte aligned at made-up addresses.
fn slices(a: usize, b: usize) -> (DeviceViewMut<'static, f32>, DeviceViewMut<'static, f32>) {
    // SAFETY: descriptors only; no planned call is ever launched.
    unsafe { (DeviceViewMut::stand_in(0x1_0000_0000, a), DeviceViewMut::stand_in(0x9_0000_0000, b)) }
}

/// Sizes from tiny to the 32-bit limit, the limit itself more often than chance would pick it.
fn size32() -> impl Strategy<Value = usize> {
    prop_oneof![
        1usize..5000,
        (MAX_ELEMENTS_32 as usize - 5000)..=MAX_ELEMENTS_32 as usize,
        1usize..=MAX_ELEMENTS_32 as usize
    ]
}

proptest! {
    #[test]
    fn offset_and_stride_indices_stay_inside(n in size32(), offset in 0..=MAX_OFFSET, stride in 1..=MAX_STRIDE,
                                             extra in 0usize..40, cached in any::<bool>(), probe in any::<u32>()) {
        let load = if cached { Load::Cached } else { Load::L2Only };
        let len = offset_len(n as u64, offset) as usize + extra;
        let (input, mut output) = slices(len, len);
        let call = plan_offset(load, &input, &mut output, n, offset).unwrap();
        let launch = call.launch();
        let threads = u64::from(launch.grid.0) * u64::from(launch.block.0);
        prop_assert!(threads >= n as u64, "every element has a thread");
        prop_assert_eq!(call.args().2 as usize, n);
        // Threads past n are guarded out; of the others the last reads the highest index.
        for i in [0, (probe as usize) % n, n - 1] {
            prop_assert!((offset_index(i as u32, offset) as usize) < len);
        }
        // Stride: same argument with the 64-bit index.
        let n = n.min((u32::MAX as usize) / stride as usize);
        let len = stride_len(n as u64, stride) as usize + extra;
        let (input, mut output) = slices(len, len);
        let call = plan_stride(&input, &mut output, n, stride).unwrap();
        prop_assert!(u64::from(call.launch().grid.0) * 256 >= n as u64);
        prop_assert!((stride_index(n as u32 - 1, stride) as usize) < len);
    }

    #[test]
    fn short_buffers_are_refused(n in size32(), offset in 0..=MAX_OFFSET, short in 1usize..40) {
        let need = offset_len(n as u64, offset) as usize;
        let (input, mut output) = slices(need.saturating_sub(short), need);
        let refused = matches!(plan_offset(Load::Cached, &input, &mut output, n, offset), Err(Error::LengthMismatch { .. }));
        prop_assert!(refused);
    }

    #[test]
    fn copy_indices_stay_inside_at_any_size(n in prop_oneof![1usize..100_000, 1usize..(1 << 36)],
                                            blocks_per_sm in prop_oneof![Just(0u32), 1u32..=64], sms in 1u32..200,
                                            streaming in any::<bool>()) {
        let (input, mut output) = slices(n, n);
        let call = plan_copy(&input, &mut output, sms, blocks_per_sm, streaming).unwrap();
        let (launch, n64) = (call.launch(), call.args().2);
        prop_assert_eq!(n64, n as u64);
        prop_assert_eq!(launch.block.0, BLOCK);
        let (vectors, tail) = vec4_split(n64);
        let grid = u64::from(launch.grid.0);
        // The kernel's loop: block b takes chunks b, b + grid, ...; whole chunks while
        // (chunk + 1) * CHUNK <= vectors, then one guarded partial chunk. The highest vector a
        // whole chunk touches is vec4_index(chunk, UNROLL - 1, BLOCK - 1).
        let whole = vectors / u64::from(CHUNK);
        for b in [0, grid - 1] {
            if b < whole {
                let last_whole = b + (whole - 1 - b) / grid * grid;
                prop_assert!(vec4_index(last_whole, UNROLL - 1, BLOCK - 1) < vectors);
            }
        }
        // Every chunk is reached: the grid strides over all of them (the partial one included).
        let chunks = vectors.div_ceil(u64::from(CHUNK));
        prop_assert!(grid >= chunks.min(grid) && (blocks_per_sm > 0 || grid >= chunks));
        // Tail: thread g of block 0 copies float 4 * vectors + g for g < tail.
        let (first, g) = vec4_tail_index(vectors, 0, tail.saturating_sub(1));
        prop_assert!(tail == 0 || first + u64::from(g) < n64);
    }
}
