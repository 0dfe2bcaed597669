//! 256-bin histograms of `u32` values: plans, launchers and the CPU reference for
//! `kernels-gpu/src/histogram.rs` (global atomics, per-block shared histograms, and the Hopper
//! module's cluster histogram combined through distributed shared memory).

use crate::buffer::{DeviceRead, DeviceViewMut, DeviceWrite};
use crate::error::{Result, aligned16, exactly, in_range, non_empty};
use crate::gpu::Gpu;
use crate::launch::{Call, In, Kernel, Launch, Out};
pub use coalesce_kernels::histogram::BINS;
use coalesce_kernels::histogram::*;
use coalesce_kernels::launch::MAX_GRID_X;

/// Parameter list of every histogram kernel: input values, bins, n.
pub(crate) type HistogramSig = fn(*const u32, *mut u32, u64);

/// Where the counting happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// One global atomic per element.
    Global,
    /// A shared histogram per block, one global atomic per bin and block.
    Shared,
    /// Shared histograms combined across 8-block clusters through distributed shared memory,
    /// one global atomic per bin and cluster (Hopper module).
    Cluster,
}

impl Method {
    /// Every method, in teaching order.
    pub const ALL: [Method; 3] = [Method::Global, Method::Shared, Method::Cluster];

    /// The kernel's typed handle.
    pub const fn kernel(self) -> Kernel<HistogramSig> {
        match self {
            Method::Global => histogram_global,
            Method::Shared => histogram_shared,
            Method::Cluster => histogram_cluster,
        }
    }

    /// The launch over `blocks` blocks (from [`blocks`], a multiple of [`CLUSTER`]).
    pub const fn launch(self, blocks: u32) -> Launch {
        let launch = Launch::linear(blocks, BLOCK);
        match self {
            Method::Global => launch,
            Method::Shared => launch.with_shared(SHARED_BYTES),
            Method::Cluster => launch.with_shared(SHARED_BYTES).with_cluster(CLUSTER),
        }
    }
}

/// Validates a histogram of all of `input` into `bins` (exactly [`BINS`] counters, which the
/// kernel adds to: [`run`] clears them first) and returns its launch. Errors: an empty input,
/// `bins` not `BINS` long, an input not on a 16-byte boundary, more blocks than `gridDim.x`.
pub fn plan<'a>(
    method: Method,
    input: &'a impl DeviceRead<u32>,
    bins: &'a mut impl DeviceWrite<u32>,
) -> Result<Call<'a, HistogramSig>> {
    let (n, grid) = check(input, bins.len())?;
    // SAFETY: block b reads vector `vector_index(b, k, t)` only below n / 4 and the tail values
    // 4 * (n / 4) + t < n, from an input of exactly n values on a 16-byte boundary (checked);
    // it adds only to bins bin(v) < BINS of a `bins` of exactly BINS counters, and to shared
    // bins < BINS (SHARED_BYTES launched with the BLOCK threads the kernels assume). The grid is
    // a multiple of CLUSTER, the cluster size the cluster kernel combines over (and the launch
    // it gets), so every `mapa` rank is a block of the same cluster.
    Ok(unsafe { Call::new(method.kernel(), method.launch(grid as u32), (In::of(input), Out::of(bins), n)) }
        .adding_atomically())
}

/// [`plan`]'s validation of `input` and a `bins` of `bins_len` counters: the value count and
/// the grid.
fn check(input: &impl DeviceRead<u32>, bins_len: usize) -> Result<(u64, u64)> {
    non_empty("histogram input", input.len())?;
    exactly("histogram bins", bins_len, BINS as usize)?;
    aligned16("histogram input", input.address())?;
    let n = input.len() as u64;
    let grid = blocks(n);
    in_range("histogram blocks", grid, 1, (MAX_GRID_X - MAX_GRID_X % CLUSTER).into())?;
    Ok((n, grid))
}

/// `bins[b]` = how many values of `input` have `value % 256 == b`: clears `bins` and queues the
/// count with `method`. Errors as [`plan`], before anything is queued.
pub fn run(gpu: &Gpu, method: Method, input: &impl DeviceRead<u32>, bins: &mut impl DeviceWrite<u32>) -> Result<()> {
    gpu.supports(method.kernel())?;
    // Admitted (sizes, devices, module) before the bins are cleared: a refused call leaves them.
    gpu.admit(&plan(method, input, bins)?)?;
    gpu.launch(clear_then_plan(method, input, bins, |bins| gpu.zero(bins))?)
}

/// [`plan`], with `bins` cleared by `zero` once the input is validated and before the call
/// borrows them: a refused input leaves `bins` as they were.
fn clear_then_plan<'a>(
    method: Method,
    input: &'a impl DeviceRead<u32>,
    bins: &'a mut impl DeviceWrite<u32>,
    zero: impl FnOnce(&mut DeviceViewMut<'_, u32>) -> Result<()>,
) -> Result<Call<'a, HistogramSig>> {
    check(input, bins.len())?;
    zero(&mut bins.view_mut())?;
    plan(method, input, bins)
}

/// CPU reference: the 256 counts (wrapping, as the GPU's 32-bit counters).
pub fn histogram_cpu(input: &[u32]) -> Vec<u32> {
    let mut counts = vec![0u32; BINS as usize];
    for &v in input {
        let b = bin(v) as usize;
        counts[b] = counts[b].wrapping_add(1);
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::DeviceViewMut;
    use crate::error::Error;

    fn plan_for(method: Method, n: usize, bins: usize, address: u64) -> Result<Launch> {
        // SAFETY: descriptors only; nothing is launched.
        let (input, mut out) = unsafe {
            (DeviceViewMut::<u32>::stand_in(address, n), DeviceViewMut::<u32>::stand_in(0x9_0000_0000, bins))
        };
        plan(method, &input, &mut out).map(|c| c.launch())
    }

    #[test]
    fn plans_check_sizes_and_launch_whole_clusters() {
        assert!(matches!(plan_for(Method::Global, 0, 256, 0x1000), Err(Error::Empty(_))));
        assert!(matches!(plan_for(Method::Shared, 10, 255, 0x1000), Err(Error::LengthMismatch { .. })));
        assert!(matches!(plan_for(Method::Cluster, 10, 256, 0x1004), Err(Error::Misaligned { .. })));
        let l = plan_for(Method::Cluster, 1 << 26, 256, 0x1000).unwrap();
        assert_eq!((l.grid.0, l.block.0, l.shared_bytes, l.cluster), (16384, 256, 1024, 8));
        assert!(l.check_limits().is_ok());
        let l = plan_for(Method::Global, 5, 256, 0x1000).unwrap();
        assert_eq!((l.grid.0, l.shared_bytes, l.cluster), (8, 0, 1));
        assert_eq!(plan_for(Method::Shared, 5, 256, 0x1000).unwrap().shared_bytes, 1024);
    }

    #[test]
    fn refused_input_leaves_bins_uncleared() {
        // (input length, input address, bins length): misaligned, empty, wrong bins, too many
        // blocks for gridDim.x.
        let refused = [(10, 0x1004, 256), (0, 0x1000, 256), (10, 0x1000, 255), (1 << 44, 0x1000, 256)];
        for (n, address, bins) in refused {
            // SAFETY: descriptors only; nothing is launched.
            let (input, mut out) = unsafe {
                (DeviceViewMut::<u32>::stand_in(address, n), DeviceViewMut::<u32>::stand_in(0x9_0000_0000, bins))
            };
            let mut cleared = false;
            let result = clear_then_plan(Method::Shared, &input, &mut out, |_| {
                cleared = true;
                Ok(())
            });
            assert!(result.is_err() && !cleared, "n {n} at {address:#x}, {bins} bins: {result:?}, cleared {cleared}");
        }
        // SAFETY: as above.
        let (input, mut out) =
            unsafe { (DeviceViewMut::<u32>::stand_in(0x1000, 10), DeviceViewMut::<u32>::stand_in(0x9_0000_0000, 256)) };
        let mut cleared = 0;
        let call = clear_then_plan(Method::Global, &input, &mut out, |_| {
            cleared += 1;
            Ok(())
        });
        assert_eq!(call.unwrap().launch(), Method::Global.launch(8));
        assert_eq!(cleared, 1);
    }

    #[test]
    fn cpu_reference_counts_by_low_byte() {
        let counts = histogram_cpu(&[0, 256, 1, 511, 255, u32::MAX]);
        assert_eq!((counts[0], counts[1], counts[255]), (2, 1, 3));
        assert_eq!(counts.iter().sum::<u32>(), 6);
    }
}
