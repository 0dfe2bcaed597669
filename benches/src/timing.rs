//! The time model: a run's time predicted from the model's counts of it and the device's
//! parameters as the probes measured them in the same run ([`crate::calibrate`]). Nothing here
//! is fitted to a lesson: every run gets the same parameters and the same formula.
//!
//! A launch costs what an empty one does, plus the largest of the limits its counts run into,
//! each the time one resource would need on its own:
//! - **DRAM, bytes in flight**: the bytes read, at the rate DRAM answers as many bytes as the
//!   kernel keeps waiting (its resident warps, one load request each, of the size its requests
//!   have that miss L1: the read probes' curves for 128- and 512-byte requests, Little's law
//!   measured), then the bytes written at the write probe's rate: a warp waits for its loads,
//!   not for its stores, but both share the DRAM;
//! - **DRAM bandwidth**: all bytes at the device-to-device memcpy's rate;
//! - **L2**: every sector L1 sends on (load misses, and stores) at the L2 read curve's rate for
//!   the same bytes in flight;
//! - **shared memory**: wavefronts at the one-wavefront-a-clock rate the probe measured, over
//!   the multiprocessors the grid occupies;
//! - **atomics**: global atomics at the probe's rate for as many addresses, or the busiest
//!   address's at the one-address rate, whichever is slower;
//! - **FP32**: the run's FLOPs at the FMA probe's rate (the register-blocked matmuls: their
//!   time is instruction issue, which this bound only approaches).
use coalesce::model::Counts;
use coalesce::model::shape::Shape;

use crate::calibrate::DeviceParams;

/// What limits a run, as the time model sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Term {
    /// DRAM bandwidth (all bytes at the memcpy's rate, or writes at the write probe's).
    Dram,
    /// DRAM reads at the rate the bytes in flight allow: latency, not bandwidth.
    DramInFlight,
    /// L2 bandwidth for the sectors L1 sends.
    L2,
    /// Shared-memory wavefronts.
    Shared,
    /// Global atomics.
    Atomics,
    /// FP32 arithmetic.
    Fp32,
    /// Launch cost alone (nothing else comes near it).
    Launch,
}

impl Term {
    /// A short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Term::Dram => "DRAM bandwidth",
            Term::DramInFlight => "DRAM latency (bytes in flight)",
            Term::L2 => "L2 bandwidth",
            Term::Shared => "shared wavefronts",
            Term::Atomics => "atomics",
            Term::Fp32 => "FP32 issue",
            Term::Launch => "launch",
        }
    }
}

/// What the time model needs of a run: the model's counts, what its replay saw, its FLOPs.
#[derive(Debug, Clone, Copy)]
pub struct RunCounts<'a> {
    pub counts: &'a Counts,
    pub shape: &'a Shape,
    pub flops: u64,
}

/// A run's predicted time and each limit's share.
#[derive(Debug, Clone, PartialEq)]
pub struct Predicted {
    /// Seconds.
    pub seconds: f64,
    /// The limit that sets the time.
    pub limit: Term,
    /// Every limit's seconds (launch cost apart), largest first.
    pub terms: Vec<(Term, f64)>,
    /// Bytes of loads the resident warps keep in flight.
    pub in_flight: f64,
}

/// `curve` (points `(x, y)` with increasing x) at `x`, linear in log-log between points; below
/// the first point y scales with x (Little's law: rate proportional to bytes in flight), past
/// the last it stays at the last.
pub fn on_curve(curve: &[(f64, f64)], x: f64) -> f64 {
    let Some(&(x0, y0)) = curve.first() else { return 0.0 };
    if x <= x0 {
        return y0 * (x / x0).max(0.0);
    }
    for w in curve.windows(2) {
        let ((xa, ya), (xb, yb)) = (w[0], w[1]);
        if x <= xb {
            let t = (x / xa).ln() / (xb / xa).ln();
            return (ya.ln() + t * (yb.ln() - ya.ln())).exp();
        }
    }
    curve.last().map_or(0.0, |p| p.1)
}

/// The rate a curve pair gives for requests of `request` bytes at `in_flight` bytes: the
/// 128-byte curve up to 128, the 512-byte one from 512, log-linear between. Past the 128-byte
/// curve's last point (all a full GPU of single word loads keeps in flight) it follows the
/// 512-byte curve's shape, at the ratio the two had there.
fn read_rate(vectors: &[(f64, f64)], words: &[(f64, f64)], in_flight: f64, request: f64) -> f64 {
    let Some(&(last, at_last)) = words.last() else { return on_curve(vectors, in_flight) };
    if request >= 512.0 {
        return on_curve(vectors, in_flight);
    }
    let w = if in_flight <= last {
        on_curve(words, in_flight)
    } else {
        on_curve(vectors, in_flight) * at_last / on_curve(vectors, last)
    };
    let v = on_curve(vectors, in_flight);
    if request <= 128.0 {
        return w;
    }
    let t = (request / 128.0).ln() / 4f64.ln();
    (w.ln() * (1.0 - t) + v.ln() * t).exp()
}

/// The time model of one run on `sms` multiprocessors, with the device's parameters and the
/// memcpy's rate (bytes read plus written per second) measured in the same run.
pub fn predict(run: RunCounts<'_>, params: &DeviceParams, memcpy_bps: f64, sms: u32) -> Predicted {
    let c = run.counts;
    let s = run.shape;
    // The launch with the most warps carries the run (a reduction's second pass is tiny).
    let main = s.launches.iter().max_by_key(|l| l.warps());
    let resident = main.map_or(u64::from(sms) * 64, |l| l.resident_warps(sms)) as f64;
    let busy = main.map_or(1.0, |l| f64::from(l.busy_sms(sms)) / f64::from(sms));
    let misses = c.ld_sectors.saturating_sub(s.l1_hit_sectors);
    let request = if c.ld_requests > 0 { misses as f64 * 32.0 / c.ld_requests as f64 } else { 128.0 };
    let in_flight = resident * request;
    let (read, written) = (c.dram_read_bytes as f64, c.dram_write_bytes as f64);
    let dram = (read + written) / memcpy_bps;
    let dram_in_flight = read / read_rate(&params.dram_read_bps, &params.dram_read_words_bps, in_flight, request)
        + written / params.dram_write_bps;
    let l2_rate = read_rate(&params.l2_read_bps, &params.l2_read_words_bps, in_flight, request);
    let l2 = (misses + c.st_sectors) as f64 * 32.0 / l2_rate;
    let shared = (c.shared_ld_wavefronts + c.shared_st_wavefronts) as f64 / (params.shared_wavefronts_per_s * busy);
    let atomics = if s.global_atomics == 0 {
        0.0
    } else {
        let curve = params.global_atomics_per_s_curve();
        let spread = s.global_atomics as f64 / on_curve(&curve, s.atomic_addresses as f64);
        let busiest = s.atomic_max_per_address as f64 / on_curve(&curve, 1.0);
        spread.max(busiest)
    };
    let fp32 = run.flops as f64 / (params.fp32_flops_per_s * busy);
    let mut terms = vec![
        (Term::Dram, dram),
        (Term::DramInFlight, dram_in_flight),
        (Term::L2, l2),
        (Term::Shared, shared),
        (Term::Atomics, atomics),
        (Term::Fp32, fp32),
    ];
    terms.retain(|t| t.1.is_finite() && t.1 > 0.0);
    terms.sort_by(|a, b| b.1.total_cmp(&a.1));
    let launch = s.launches.len().max(1) as f64 * params.launch_s;
    let work = terms.first().map_or(0.0, |t| t.1);
    let limit = if work < launch { Term::Launch } else { terms.first().map_or(Term::Launch, |t| t.0) };
    Predicted { seconds: launch + work, limit, terms, in_flight }
}

impl DeviceParams {
    /// The global atomic rates as a curve over address counts.
    pub fn global_atomics_per_s_curve(&self) -> Vec<(f64, f64)> {
        self.global_atomics_per_s.iter().map(|&(a, r)| (f64::from(a), r)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coalesce::model::shape::LaunchShape;

    fn params() -> DeviceParams {
        DeviceParams {
            dram_read_bps: vec![(1e5, 3e11), (1e6, 2e12), (4e6, 4e12)],
            dram_read_words_bps: vec![(1e5, 2e11), (1e6, 1.5e12)],
            dram_write_bps: 4e12,
            l2_read_bps: vec![(1e5, 1e12), (4e6, 1.6e13)],
            l2_read_words_bps: vec![(1e5, 1e12), (4e6, 1.2e13)],
            shared_wavefronts_per_s: 2.6e11,
            global_atomics_per_s: vec![(1, 1e9), (256, 2e10), (1 << 20, 4e11)],
            shared_atomics_per_s: vec![],
            dram_latency_s: 6e-7,
            l2_latency_s: 2e-7,
            fp32_flops_per_s: 6e13,
            launch_s: 2e-6,
        }
    }

    #[test]
    fn curves_interpolate_in_log_log_and_scale_below_the_first_point() {
        let c = [(1.0, 10.0), (100.0, 1000.0)];
        assert!((on_curve(&c, 10.0) - 100.0).abs() < 1e-9);
        assert!((on_curve(&c, 0.5) - 5.0).abs() < 1e-12);
        assert_eq!(on_curve(&c, 1e6), 1000.0);
        assert_eq!(on_curve(&[], 3.0), 0.0);
    }

    #[test]
    fn the_largest_limit_sets_the_time_and_is_named() {
        let shape = Shape {
            launches: vec![LaunchShape { blocks: 1 << 20, threads: 256, blocks_per_sm: 8 }],
            ..Shape::default()
        };
        // A full GPU copying 256 MiB: 8448 warps of 128-byte requests keep 1.08 MB in flight.
        let counts = Counts {
            ld_requests: 1 << 21,
            ld_sectors: 1 << 23,
            st_requests: 1 << 21,
            st_sectors: 1 << 23,
            dram_read_bytes: 1 << 28,
            dram_write_bytes: 1 << 28,
            ..Counts::default()
        };
        let p = predict(RunCounts { counts: &counts, shape: &shape, flops: 0 }, &params(), 5e12, 132);
        assert!((p.in_flight - 8448.0 * 128.0).abs() < 1.0);
        // 128-byte requests, past the words curve's last point (1 MB): the 512-byte curve's shape
        // at the two curves' ratio there; then the writes at the write rate.
        let vectors = &params().dram_read_bps;
        let rate = on_curve(vectors, p.in_flight) * 1.5e12 / on_curve(vectors, 1e6);
        assert_eq!(p.limit, Term::DramInFlight);
        let expected = 2e-6 + (1u64 << 28) as f64 / rate + (1u64 << 28) as f64 / 4e12;
        assert!((p.seconds - expected).abs() < 1e-12, "{} vs {expected}", p.seconds);
        // Nothing at all: the launch.
        let none = predict(RunCounts { counts: &Counts::default(), shape: &shape, flops: 0 }, &params(), 3.5e12, 132);
        assert_eq!((none.limit, none.seconds), (Term::Launch, 2e-6));
    }
}
