//! The time model: a run's time predicted from the model's counts of it and the device's
//! parameters as the probes measured them in the same run ([`crate::calibrate`]). Nothing here
//! is fitted to a lesson: every run gets the same parameters and the same formula.
//!
//! A launch costs what an empty one does, plus the largest of the limits its counts run into,
//! each the time one resource would need on its own:
//! - **DRAM, bytes in flight**: the bytes read, at the rate DRAM answers as many bytes as the
//!   kernel keeps waiting (its resident warps, each with the loads its SASS issues before it uses
//!   one in flight, of the size its requests have that miss L1: the read probes' curves for 128-
//!   and 512-byte requests, Little's law measured), then the bytes written at the write probe's rate: a warp waits for its loads,
//!   not for its stores, but both share the DRAM. Resident means what the GPU can keep
//!   started: a block whose warps live for a load or two (a round trip each, at the latency
//!   those bytes in flight give) is replaced no faster than the block-start probe starts empty
//!   blocks, so such a grid holds fewer blocks than fit (Little's law again, on blocks);
//! - **DRAM bandwidth**: all bytes at the device-to-device memcpy's rate;
//! - **L2**: every sector L1 sends on (load misses, and stores) at the L2 read curve's rate for
//!   the same bytes in flight;
//! - **shared memory**: wavefronts at the one-wavefront-a-clock rate the probe measured, over
//!   the multiprocessors the grid occupies;
//! - **atomics**: global atomics at the probe's rate for as many addresses, or the busiest
//!   address's at the one-address rate, whichever is slower;
//! - **FP32**: the run's FLOPs at the FMA probe's rate;
//! - **instruction issue**: the instructions that come with the run's counted work, at four
//!   warp instructions a clock a multiprocessor (the FMA probe's rate: it issues an `FFMA` every
//!   clock on each scheduler). The instructions come from the kernel's SASS
//!   ([`coalesce_builder::sass`], committed beside the PTX as `host/ptx/coalesce-sm_90.sass.tsv`):
//!   for each kind of work the replay counts (global requests, conflict-free shared wavefronts,
//!   `FFMA`s), the instructions of the innermost loop holding it per unit of that work; the run
//!   gets the largest product. It is a floor: stalls on dependences and barriers are not issue.
use std::sync::OnceLock;

use coalesce::model::Counts;
use coalesce::model::shape::Shape;
use coalesce_builder::sass::{Anchor, Digest};

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
    /// Instruction issue (the SASS's instructions for the counted work).
    Issue,
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
            Term::Issue => "instruction issue",
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
    /// The SASS digest of the run's first kernel ([`digest`]), if known.
    pub sass: Option<&'a Digest>,
}

/// The committed SASS digest of every kernel, parsed once.
pub fn digests() -> &'static [Digest] {
    static DIGESTS: OnceLock<Vec<Digest>> = OnceLock::new();
    DIGESTS.get_or_init(|| {
        // A malformed digest is a build-time mistake the digest test catches; here it only
        // means no issue bound.
        coalesce_builder::sass::parse(include_str!("../../host/ptx/coalesce-sm_90.sass.tsv")).unwrap_or_default()
    })
}

/// The digest of `kernel`.
pub fn digest(kernel: &str) -> Option<&'static Digest> {
    digests().iter().find(|d| d.kernel == kernel)
}

/// Warp instructions a run issues, from its counts and its kernel's digest: for each kind of
/// counted work, its count times the instructions that come with each; the largest.
pub fn issued(counts: &Counts, flops: u64, sass: &Digest) -> f64 {
    let global = (counts.ld_requests + counts.st_requests) as f64;
    let shared = (counts.shared_ld_wavefronts.saturating_sub(counts.shared_ld_bank_conflicts)
        + counts.shared_st_wavefronts.saturating_sub(counts.shared_st_bank_conflicts)) as f64;
    let ffma = flops as f64 / 64.0;
    [(Anchor::Global, global), (Anchor::Shared, shared), (Anchor::Ffma, ffma)]
        .into_iter()
        .filter_map(|(class, n)| sass.ratio(class).map(|r| n * r))
        .fold(0.0, f64::max)
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

/// `curve` with each rate raised to the most any fewer bytes in flight reached: a kernel that
/// keeps more bytes waiting is read at no less than the probe got with fewer (past its peak the
/// probe's own requests outnumber what the memory can overlap, which the probe, not the lesson,
/// chose).
fn envelope(curve: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut most = 0.0f64;
    curve
        .iter()
        .map(|&(x, y)| {
            most = most.max(y);
            (x, most)
        })
        .collect()
}

/// The rate a curve pair gives for requests of `request` bytes at `in_flight` bytes: the
/// 128-byte curve up to 128, the 512-byte one from 512, log-linear between. Past the 128-byte
/// curve's last point (all a full GPU of single word loads keeps in flight) it follows the
/// 512-byte curve's shape, at the ratio the two had there.
fn read_rate(vectors: &[(f64, f64)], words: &[(f64, f64)], in_flight: f64, request: f64) -> f64 {
    let (vectors, words) = (&envelope(vectors)[..], &envelope(words)[..]);
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

/// Warps resident on average, where `fits` fit at once: a block is started at the block-start
/// probe's rate for its warps (a block's warps start together) and lives `loads` round trips
/// (its warps' loads over those they keep in flight together),
/// each `round_trip(resident warps)` seconds; Little's law gives the blocks that rate keeps
/// started, at most all that fit. Without the probe (older records), all that fit.
fn started(
    launch: &coalesce::model::shape::LaunchShape,
    fits: f64,
    loads: f64,
    round_trip: impl Fn(f64) -> f64,
    params: &DeviceParams,
) -> f64 {
    if params.block_starts_per_s.is_empty() {
        return fits;
    }
    let warps = f64::from(launch.threads.div_ceil(32));
    // Past the probe's block sizes, the nearest one's rate.
    let first = params.block_starts_per_s[0].0;
    let starts = on_curve(&params.block_starts_per_s, warps.max(first));
    let life = |resident: f64| loads.max(1.0) * round_trip(resident);
    // The fixed point of resident = min(fits, starts × life(resident) × warps); life grows with
    // the bytes in flight, so halving the step converges from `fits` without oscillating.
    let mut resident = fits;
    for _ in 0..64 {
        let next = fits.min(starts * life(resident) * warps);
        resident = 0.5 * (resident + next);
    }
    resident
}

/// The time model of one run on `sms` multiprocessors, with the device's parameters and the
/// memcpy's rate (bytes read plus written per second) measured in the same run.
pub fn predict(run: RunCounts<'_>, params: &DeviceParams, memcpy_bps: f64, sms: u32) -> Predicted {
    let c = run.counts;
    let s = run.shape;
    // The launch with the most warps carries the run (a reduction's second pass is tiny).
    let main = s.launches.iter().max_by_key(|l| l.warps());
    let fits = main.map_or(u64::from(sms) * 64, |l| l.resident_warps(sms)) as f64;
    let busy = main.map_or(1.0, |l| f64::from(l.busy_sms(sms)) / f64::from(sms));
    let misses = c.ld_sectors.saturating_sub(s.l1_hit_sectors);
    let request = if c.ld_requests > 0 { misses as f64 * 32.0 / c.ld_requests as f64 } else { 128.0 };
    let dram_rate = |in_flight: f64| read_rate(&params.dram_read_bps, &params.dram_read_words_bps, in_flight, request);
    // A warp issues the loads its SASS issues before it uses one ([`Digest::loads_in_flight`]),
    // at most all it has, then waits a round trip for them.
    let per_warp = main.map_or(1.0, |l| c.ld_requests as f64 / l.warps().max(1) as f64);
    let together = run.sass.and_then(|d| d.loads_in_flight).map_or(1.0, f64::from).min(per_warp.max(1.0));
    let resident = match main {
        Some(l) if c.ld_requests > 0 => started(
            l,
            fits,
            per_warp / together,
            |warps| {
                let in_flight = warps * request * together;
                in_flight / dram_rate(in_flight)
            },
            params,
        ),
        _ => fits,
    };
    let in_flight = resident * request * together;
    let (read, written) = (c.dram_read_bytes as f64, c.dram_write_bytes as f64);
    let dram = (read + written) / memcpy_bps;
    let dram_in_flight = read / dram_rate(in_flight) + written / params.dram_write_bps;
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
    // Four warp instructions a clock a multiprocessor: the FMA probe's FLOPs over a warp FFMA's 64.
    let issue = run.sass.map_or(0.0, |d| issued(c, run.flops, d) / (params.fp32_flops_per_s / 64.0 * busy));
    let mut terms = vec![
        (Term::Dram, dram),
        (Term::DramInFlight, dram_in_flight),
        (Term::L2, l2),
        (Term::Shared, shared),
        (Term::Atomics, atomics),
        (Term::Fp32, fp32),
        (Term::Issue, issue),
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
            block_starts_per_s: vec![],
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
        let p = predict(RunCounts { counts: &counts, shape: &shape, flops: 0, sass: None }, &params(), 5e12, 132);
        assert!((p.in_flight - 8448.0 * 128.0).abs() < 1.0);
        // 128-byte requests, past the words curve's last point (1 MB): the 512-byte curve's shape
        // at the two curves' ratio there; then the writes at the write rate.
        let vectors = &params().dram_read_bps;
        let rate = on_curve(vectors, p.in_flight) * 1.5e12 / on_curve(vectors, 1e6);
        assert_eq!(p.limit, Term::DramInFlight);
        let expected = 2e-6 + (1u64 << 28) as f64 / rate + (1u64 << 28) as f64 / 4e12;
        assert!((p.seconds - expected).abs() < 1e-12, "{} vs {expected}", p.seconds);
        // Nothing at all: the launch.
        let none = predict(
            RunCounts { counts: &Counts::default(), shape: &shape, flops: 0, sass: None },
            &params(),
            3.5e12,
            132,
        );
        assert_eq!((none.limit, none.seconds), (Term::Launch, 2e-6));
    }

    #[test]
    fn blocks_that_live_one_round_trip_hold_what_the_start_rate_keeps_started() {
        let shape = Shape {
            launches: vec![LaunchShape { blocks: 1 << 20, threads: 256, blocks_per_sm: 8 }],
            ..Shape::default()
        };
        // One 128-byte load a warp, so each block lives one round trip.
        let counts =
            Counts { ld_requests: 1 << 23, ld_sectors: 1 << 25, dram_read_bytes: 1 << 30, ..Counts::default() };
        let run = RunCounts { counts: &counts, shape: &shape, flops: 0, sass: None };
        let all = predict(run, &params(), 5e12, 132);
        assert!((all.in_flight - 8448.0 * 128.0).abs() < 1.0);
        // Blocks started at 1e9 a second, each living a round trip: Little's law on blocks.
        let slow = DeviceParams { block_starts_per_s: vec![(8.0, 1e9)], ..params() };
        let fewer = predict(run, &slow, 5e12, 132);
        let round_trip = |in_flight: f64| {
            let p = params();
            in_flight / read_rate(&p.dram_read_bps, &p.dram_read_words_bps, in_flight, 128.0)
        };
        let blocks = fewer.in_flight / 128.0 / 8.0;
        assert!(fewer.in_flight < all.in_flight * 0.99, "{} against {}", fewer.in_flight, all.in_flight);
        assert!((blocks - 1e9 * round_trip(fewer.in_flight)).abs() / blocks < 1e-6, "{blocks}");
        assert!(fewer.seconds > all.seconds);
        // A start rate that outruns the round trips changes nothing.
        let fast = DeviceParams { block_starts_per_s: vec![(2.0, 1e13), (32.0, 1e12)], ..params() };
        assert_eq!(predict(run, &fast, 5e12, 132), all);
    }

    #[test]
    fn issue_is_the_largest_count_times_its_instructions() {
        let sass = coalesce_builder::sass::parse("k\t10/1\t6/4\t5/4\t-\n").unwrap().remove(0);
        let counts =
            Counts { ld_requests: 100, shared_ld_wavefronts: 900, shared_ld_bank_conflicts: 100, ..Counts::default() };
        // global 100 × 10, shared 800 × 1.5, FFMA 32,000 / 64 × 1.25: the shared work's 1,200.
        assert_eq!(issued(&counts, 32_000, &sass), 1200.0);
        let shape = Shape {
            launches: vec![LaunchShape { blocks: 1 << 10, threads: 256, blocks_per_sm: 8 }],
            ..Shape::default()
        };
        let p = predict(
            RunCounts { counts: &counts, shape: &shape, flops: 32_000, sass: Some(&sass) },
            &params(),
            5e12,
            132,
        );
        let issue = p.terms.iter().find(|t| t.0 == Term::Issue).unwrap().1;
        assert!((issue - 1200.0 / (6e13 / 64.0)).abs() < 1e-15, "{issue}");
    }

    #[test]
    fn warps_keep_the_loads_their_sass_issues_together_in_flight() {
        let shape = Shape {
            launches: vec![LaunchShape { blocks: 1 << 10, threads: 256, blocks_per_sm: 8 }],
            ..Shape::default()
        };
        // Three 128-byte loads a warp.
        let counts =
            Counts { ld_requests: 3 << 13, ld_sectors: 3 << 15, dram_read_bytes: 3 << 20, ..Counts::default() };
        let digest = |together: &str| coalesce_builder::sass::parse(&format!("k\t9/3\t-\t-\t{together}\n")).unwrap();
        let (one, three, five) = (digest("1"), digest("3"), digest("5"));
        let at =
            |d| predict(RunCounts { counts: &counts, shape: &shape, flops: 0, sass: Some(d) }, &params(), 5e12, 132);
        assert!((at(&three[0]).in_flight - 3.0 * at(&one[0]).in_flight).abs() < 1e-6);
        // No more than the three loads a warp has.
        assert_eq!(at(&five[0]).in_flight, at(&three[0]).in_flight);
    }

    #[test]
    fn more_bytes_in_flight_never_read_slower() {
        let falling = [(1.0, 10.0), (2.0, 40.0), (4.0, 20.0)];
        assert_eq!(envelope(&falling), [(1.0, 10.0), (2.0, 40.0), (4.0, 40.0)]);
        assert_eq!(read_rate(&falling, &[], 4.0, 512.0), 40.0);
    }
}
