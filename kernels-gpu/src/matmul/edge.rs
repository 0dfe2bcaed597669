//! The store every guarded warp-tiled ring shares: a block's tile of C stored (or added to
//! partial sums) only where it lies inside `m × n`. Stage 7's kernel and stage 8's stream-K row
//! take it for stage 11's guarded ring (`EdgeRing`), so it lives here, beside the stages, and no
//! stage reaches into a later one for it.

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
pub(super) use hopper_device::store_tile_edge;

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
mod hopper_device {
    use crate::matmul::index::row_major;
    use crate::matmul::warptile::WarpTile;
    use crate::prelude::{mem, thread};

    /// `warptile_async`'s `store_tile` for any shape (stage 11's guarded ring, and stream-K's row over
    /// it): stores `acc`, the block tile at `origin`, into the floats of C inside `m × n`; with
    /// `add`, adds it to what C holds there (another block's published partial sums, read from
    /// L2). A row's loads all go out before its stores.
    ///
    /// # Safety
    /// C holds m·n floats, 4-byte aligned; the block has `cfg.threads()` threads.
    #[inline(always)]
    pub(in crate::matmul) unsafe fn store_tile_edge<const TM: usize, const TN: usize>(
        cfg: WarpTile,
        c: *mut f32,
        (m, n): (u32, u32),
        (row0, col0): (u32, u32),
        acc: &[[f32; TN]; TM],
        add: bool,
    ) {
        let t = thread::thread_idx_x();
        // SAFETY: every float written or read is checked against m and n first.
        unsafe {
            unroll_tile!(@ i {
                let r = row0 + cfg.out_row(t, i);
                if (i as usize) < TM && r < m {
                    let at = |h: u32, j: u32| c.add(row_major(r as u64, (col0 + cfg.out_col(t, h) + j) as u64, n as u64) as usize);
                    let inside = |h: u32, j: u32| (h as usize) < TN / 4 && col0 + cfg.out_col(t, h) + j < n;
                    let mut sums = [0.0f32; 16];
                    unroll_16!(q => {
                        if inside(q / 4, q % 4) {
                            let sum = acc[i as usize][q as usize];
                            sums[q as usize] = if add { mem::load_cg_f32(at(q / 4, q % 4)) + sum } else { sum };
                        }
                    });
                    unroll_16!(q => {
                        if inside(q / 4, q % 4) {
                            *at(q / 4, q % 4) = sums[q as usize];
                        }
                    });
                }
            }; 0 1 2 3 4 5 6 7);
        }
    }
}
