//! Replays of the walks in `kernels-gpu/src/access_order.rs`.
//!
//! SASS (sm_90): each step of a walk is one 4-byte `LDG.E` and one `STG.E` (the 1-D loop is
//! unrolled, never widened: the compiler cannot prove a chunk 16-byte aligned), under
//! `t < threads` (1-D) or `r < rows && c < cols` (2-D).

use super::{Counts, Model, fake_slice, lanes_where, warps};
use crate::buffer::DeviceViewMut;
use crate::error::{Result, product};
use crate::launch::Call;
use crate::lessons::access_order::{Lanes, Order, WalkSig, plan_walk, plan_walk_2d};
use coalesce_kernels::access_order::{
    access_order_block_x, access_order_block_y, access_order_chunked, along_x, along_y, chunked_index,
    interleaved_index, matrix_index, walk_threads,
};

/// Counts of a planned walk, 1-D or 2-D (told apart by the kernel).
pub fn walk(call: &Call<'_, WalkSig>) -> Result<Counts> {
    let launch = call.launch();
    let &(input, ref output, p, q) = call.args();
    let mut m = Model::new();
    let (src, dst) = (m.buffer(input.address()), m.buffer(output.address()));
    let kernel = call.kernel();
    if kernel == access_order_block_x || kernel == access_order_block_y {
        let (rows, cols) = (p, q);
        let map = if kernel == access_order_block_x { along_x } else { along_y };
        for w in warps(&launch) {
            let rc = |l| map(w.block, w.thread(l));
            let active = lanes_where(w.lanes, |l| {
                let (r, c) = rc(l);
                r < rows && c < cols
            });
            let at = |l| {
                let (r, c) = rc(l);
                4 * matrix_index(r, c, cols)
            };
            m.load(src, 4, active, at)?;
            m.store(dst, 4, active, at)?;
        }
        return Ok(m.counts());
    }
    let (n, per_thread) = (p, q);
    let index = if kernel == access_order_chunked { chunked_index } else { interleaved_index };
    let threads = walk_threads(n, per_thread);
    for w in warps(&launch) {
        let active = lanes_where(w.lanes, |l| w.index_1d(l) < threads);
        for k in 0..per_thread {
            let at = |l| 4 * index(w.index_1d(l), k, per_thread, threads);
            m.load(src, 4, active, at)?;
            m.store(dst, 4, active, at)?;
        }
    }
    Ok(m.counts())
}

/// The 1-D walk of `n` elements, `per_thread` each, in `order`.
pub fn walk_1d(order: Order, n: usize, per_thread: u32) -> Result<Counts> {
    let (input, mut output): (DeviceViewMut<'static, f32>, _) = (fake_slice(0, n), fake_slice(1, n));
    walk(&plan_walk(order, &input, &mut output, n, per_thread)?)
}

/// The 2-D walk of a `rows × cols` matrix with `lanes`.
pub fn walk_2d(lanes: Lanes, rows: usize, cols: usize) -> Result<Counts> {
    let n = product("rows * cols", rows, cols)?;
    let (input, mut output): (DeviceViewMut<'static, f32>, _) = (fake_slice(0, n), fake_slice(1, n));
    walk(&plan_walk_2d(lanes, &input, &mut output, rows, cols)?)
}
