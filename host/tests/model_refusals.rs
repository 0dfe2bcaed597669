//! The replays refuse what they cannot count with the typed error, where they panicked: sizes
//! whose buffers pass `usize`, host data that does not match the launch, calls of kernels they
//! do not replay, launches without a warp (CPU only).
use coalesce::access_order::Lanes;
use coalesce::bank::{LAUNCH, OUTPUTS, WORDS};
use coalesce::coalescing::Load;
use coalesce::distance::IndexSlice;
use coalesce::histogram::Method as Histogram;
use coalesce::launch::{Call, In, Kernel, Launch, Out};
use coalesce::matmul::Method as Matmul;
use coalesce::model::warp::{self, Op};
use coalesce::transpose::Method as Transpose;
use coalesce::{DeviceViewMut, Error, model};
use coalesce_kernels::kernel::Module;

/// Stand-ins at made-up addresses, 2 MiB apart.
fn stand_ins<T: coalesce::DeviceCopy>(lens: [usize; 2]) -> [DeviceViewMut<'static, T>; 2] {
    // SAFETY: the calls below are replayed on the CPU and never launched.
    lens.map(|len| unsafe { DeviceViewMut::stand_in(0x10_0000_0000 + (len as u64 % 7) * (2 << 20), len) })
}

fn out_of_range<T>(r: coalesce::Result<T>) -> bool {
    matches!(r, Err(Error::OutOfRange { .. }))
}

#[test]
fn sizes_whose_buffers_pass_usize_are_refused() {
    // Each made `rows * cols`, `m * k`, `n + 3` or `offset + n` of its fake buffers first, and
    // overflowed (a panic in debug builds).
    assert!(out_of_range(model::access_order::walk_2d(Lanes::AlongX, 1 << 40, 1 << 40)));
    assert!(out_of_range(model::transpose::run(Transpose::Naive, 1 << 40, 1 << 40)));
    assert!(out_of_range(warp::transpose_naive(Op::Load, 1 << 40, 1 << 40)));
    assert!(out_of_range(coalesce::matmul::model(Matmul::Naive, (1 << 40, 1 << 40, 1 << 40), 132)));
    assert!(out_of_range(model::coalescing::any_offset_copy(usize::MAX, 0, 0)));
    assert!(out_of_range(model::coalescing::any_offset_copy(8, usize::MAX, 0)));
    assert!(out_of_range(model::reduce::shuffle_at(usize::MAX, 0, 132)));
    assert!(out_of_range(model::reduce::shuffle_at(8, usize::MAX, 132)));
    // `offset_len` / `stride_len` of their buffers overflowed; they saturate, and the plan
    // refuses the count.
    assert!(out_of_range(model::coalescing::offset_copy(Load::Cached, usize::MAX, 0, 1)));
    assert!(out_of_range(model::coalescing::stride_copy(usize::MAX, 2)));
}

#[test]
fn footprints_larger_than_a_buffer_can_be_are_refused() {
    // Nearly 2^64 bytes of input: the DRAM bitset tried to allocate 2^53 words of it.
    let side = (1 << 31) - 256;
    assert!(out_of_range(model::transpose::tma(side, side)));
}

#[test]
fn host_data_that_does_not_match_the_launch_is_refused() {
    let [input, mut bins] = stand_ins::<u32>([64, 256]);
    let call = coalesce::histogram::plan(Histogram::Global, &input, &mut bins).unwrap();
    let refused = model::histogram::histogram(&call, &[7; 63]);
    assert_eq!(refused, Err(Error::LengthMismatch { what: "histogram values", expected: 64, got: 63 }));

    let [points, _] = stand_ins::<coalesce::distance::Float3>([100, 1]);
    let [idx, _] = stand_ins::<u32>([8, 1]);
    let [mut out, _] = stand_ins::<f32>([8, 1]);
    // SAFETY: the indices are never read (the call is replayed, not launched).
    let view = unsafe { IndexSlice::assume_max(&idx, 99) };
    let call = coalesce::distance::plan_aos_gather(&points, view, &mut out).unwrap();
    let refused = model::distance::aos_gather(&call, &[1, 2, 3]);
    assert_eq!(refused, Err(Error::LengthMismatch { what: "gather indices", expected: 8, got: 3 }));
}

#[test]
fn calls_of_kernels_without_a_replay_are_refused() {
    let [table, mut out] = stand_ins::<i32>([WORDS as usize, OUTPUTS as usize]);
    let other: Kernel<fn(*const i32, *mut i32)> = Kernel::declare("not_a_bank_kernel", Module::Base);
    // SAFETY: replayed on the CPU only, never launched.
    let call = unsafe { Call::new(other, LAUNCH, (In::of(&table), Out::of(&mut out))) };
    let refused = model::bank::tile(&call);
    assert!(matches!(&refused, Err(Error::Unsupported(why)) if why.contains("not_a_bank_kernel")), "{refused:?}");
    let other: Kernel<fn(*const i32, *mut i32, u32)> = Kernel::declare("not_bank_stride", Module::Base);
    // SAFETY: as above.
    let call = unsafe { Call::new(other, LAUNCH, (In::of(&table), Out::of(&mut out), 1)) };
    assert!(matches!(model::bank::stride(&call), Err(Error::Unsupported(_))));
}

#[test]
fn a_launch_without_a_warp_is_refused() {
    let [table, mut out] = stand_ins::<i32>([WORDS as usize, OUTPUTS as usize]);
    let no_blocks = Launch::linear(0, 256);
    // SAFETY: replayed on the CPU only, never launched.
    let call =
        unsafe { Call::new(coalesce_kernels::bank::bank_stride, no_blocks, (In::of(&table), Out::of(&mut out), 1)) };
    assert_eq!(model::bank::stride(&call), Err(Error::Empty("a launch with a warp")));
}

#[test]
fn a_lane_past_the_warp_is_taken_within_it() {
    let access = warp::stride_copy(2).unwrap();
    // Lane 40 is lane 8 (it indexed past the 32 addresses).
    assert_eq!((access.sector(40), access.words(40)), (access.sector(8), access.words(8)));
}
