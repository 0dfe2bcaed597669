//! The measurements of one report run, as written to and read from `report.json`.
//!
//! The JSON is the record; `report.md` and the plots are views of it, so everything a view shows
//! is computed from these fields (never typed in by hand) and a report can be re-rendered later.
use serde::{Deserialize, Serialize};

use crate::family::Family;

pub use crate::sweep::SweepRow;

/// One run of the report binary on one GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The GPU measured.
    pub device: Device,
    /// When the run started, RFC 3339 UTC, e.g. `2026-11-22T14:51:11Z`.
    pub date: String,
    /// `git describe` of the measured tree, e.g. `8b4bbbe44da5`.
    pub commit: String,
    /// The architecture the embedded PTX targets, e.g. `sm_75`.
    pub ptx_arch: String,
    /// Device-to-device memcpy, measured first in the same run: the ceiling every
    /// "% of memcpy" is relative to.
    pub memcpy: Measurement,
    /// The time model's device parameters, measured by the probes ([`crate::calibrate`]) in the
    /// same run. Absent in records made before the time model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<crate::calibrate::DeviceParams>,
    /// Every variant at every swept parameter value, in registry order.
    pub runs: Vec<Measurement>,
    /// The cost curve: the library's entry points (and the device memcpy) timed over a range of
    /// sizes ([`crate::sweep`]). Empty in records made before it existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sweep: Vec<SweepRow>,
    /// Other libraries timed on the same GPU over the same sizes (`peers.py`: PyTorch, CuPy,
    /// cuBLAS through PyTorch), attached with `report --peers peers.json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peers: Option<Peers>,
    /// Runs this machine could not make, with the reason (a kernel its GPU cannot run, the peer
    /// lessons without a second GPU).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
}

/// A run left out of the measurements, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    /// The run id, e.g. `peer/copy_read`.
    pub run: String,
    /// The library's error, e.g. `no peer device: the driver reports 1 device(s); ...`.
    pub reason: String,
}

/// `peers.json`, as `peers.py` writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Peers {
    /// Where and with what the peers were timed.
    pub info: PeersInfo,
    /// One row per peer, entry and size.
    pub rows: Vec<PeerRow>,
}

/// The machine and libraries of a `peers.py` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeersInfo {
    /// The GPU, as PyTorch names it.
    pub device: String,
    /// PyTorch's version, e.g. `2.9.0+cu130`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch: Option<String>,
    /// CuPy's version, absent where CuPy could not be imported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cupy: Option<String>,
    /// The CUDA version PyTorch was built with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda: Option<String>,
    /// When the peers were timed, RFC 3339 UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
}

/// One peer at one size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerRow {
    /// The curve, as [`SweepRow::entry`].
    pub entry: String,
    /// The shape, as [`SweepRow::shape`].
    pub shape: String,
    /// The size, as [`SweepRow::n`].
    pub n: u64,
    /// `torch`, `cupy` or `cublas` (SGEMM through `torch.matmul`, TF32 off).
    pub peer: String,
    /// Median time of one call, microseconds, timed as the harness times its own.
    pub median_us: f64,
}

/// The GPU a report was measured on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Device {
    /// Marketing name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
    /// (major, minor), e.g. (9, 0).
    pub compute_capability: (u32, u32),
    /// Driver (CUDA API) version, e.g. `13.0`.
    pub driver: String,
    /// Global memory in bytes.
    pub memory_bytes: u64,
}

/// The median time of one variant at one parameter value, and what that run moves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// `family/variant` or `family/variant/param=value`, e.g. `coalescing/offset/offset=1`.
    pub run: String,
    /// The family (module), e.g. `coalescing`.
    pub family: String,
    /// The variant inside the family, e.g. `offset`.
    pub variant: String,
    /// The swept parameter, if the variant has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param: Option<Param>,
    /// One line: the access pattern and what it costs.
    pub summary: String,
    /// Median time of one run, microseconds.
    pub median_us: f64,
    /// Bytes the run must move: each input read once plus each output written once.
    pub bytes: u64,
    /// Floating-point operations (0 unless the variant is compute-bound).
    pub flops: u64,
    /// A CPU reference timed by the host clock rather than CUDA events.
    pub on_cpu: bool,
    /// Predicted memory transactions, when the run carries them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Model>,
    /// What Nsight Compute counted for the run's profiled launch, when the report was given an
    /// `ncu.csv` (`report --ncu`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ncu: Option<Counted>,
}

/// Nsight Compute's counters of one run, the ones the model predicts past L1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Counted {
    /// `dram__bytes_read.sum`.
    pub dram_read_bytes: u64,
    /// `dram__bytes_write.sum`.
    pub dram_write_bytes: u64,
    /// `lts__t_sectors_srcunit_tex_op_read.sum` × 32: bytes L1 asked L2 for, where collected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_read_bytes: Option<u64>,
    /// `lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum` × 32: of those, bytes L2 held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_read_hit_bytes: Option<u64>,
}

impl Counted {
    /// The counters of an ncu.csv run (`crate::ncu::parse`), if it has the DRAM ones.
    pub fn from_metrics(metrics: &std::collections::BTreeMap<String, f64>) -> Option<Counted> {
        let get = |name: &str| metrics.get(name).map(|&v| v as u64);
        let sectors = |name: &str| get(name).map(|s| s * coalesce::model::SECTOR_BYTES);
        Some(Counted {
            dram_read_bytes: get("dram__bytes_read.sum")?,
            dram_write_bytes: get("dram__bytes_write.sum")?,
            l2_read_bytes: sectors("lts__t_sectors_srcunit_tex_op_read.sum"),
            l2_read_hit_bytes: sectors("lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum"),
        })
    }
}

/// Puts each profiled run's counters beside the measurement of the same run id; returns how many
/// found their run.
pub fn attach_counters(measured: &mut [Measurement], profiled: &[crate::ncu::Profiled]) -> usize {
    let mut found = 0;
    for p in profiled {
        if let Some(m) = measured.iter_mut().find(|m| m.run == p.run) {
            m.ncu = Counted::from_metrics(&p.metrics);
            found += usize::from(m.ncu.is_some());
        }
    }
    found
}

/// The value of a variant's swept parameter in one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Param {
    /// e.g. `offset`, `stride`, `per_thread`.
    pub name: String,
    /// The value of this run.
    pub value: u32,
}

/// Predicted transactions for one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// 32-byte sectors per warp-wide global load request (4 is perfectly coalesced 4-byte loads).
    pub ld_sectors_per_request: f64,
    /// 32-byte sectors per warp-wide global store request.
    pub st_sectors_per_request: f64,
    /// Shared-memory load bank conflicts.
    pub shared_ld_bank_conflicts: u64,
    /// Shared-memory store bank conflicts.
    pub shared_st_bank_conflicts: u64,
    /// Bytes read from DRAM.
    pub dram_read_bytes: u64,
    /// Bytes written to DRAM.
    pub dram_write_bytes: u64,
    /// Everything the time model takes from the run's replay (absent in records made before
    /// it; `report --from FILE --remodel` adds it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_inputs: Option<TimeInputs>,
}

/// The counts and launch shape the time model ([`crate::timing`]) reads, as the model gave them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeInputs {
    pub ld_requests: u64,
    pub ld_sectors: u64,
    pub st_requests: u64,
    pub st_sectors: u64,
    pub shared_ld_wavefronts: u64,
    pub shared_st_wavefronts: u64,
    /// `(blocks, threads a block, blocks a multiprocessor holds)` of each launch walked.
    pub launches: Vec<(u64, u32, u32)>,
    pub global_atomics: u64,
    pub atomic_addresses: u64,
    pub atomic_max_per_address: u64,
    pub l1_hit_sectors: u64,
}

impl Model {
    /// The report's view of the model's counts for a run (`coalesce::model`), with what the
    /// replay saw of its launches for the time model.
    pub fn from_counts(c: &coalesce::model::Counts, shape: Option<&coalesce::model::shape::Shape>) -> Model {
        Model {
            ld_sectors_per_request: c.ld_sectors_per_request(),
            st_sectors_per_request: c.st_sectors_per_request(),
            shared_ld_bank_conflicts: c.shared_ld_bank_conflicts,
            shared_st_bank_conflicts: c.shared_st_bank_conflicts,
            dram_read_bytes: c.dram_read_bytes,
            dram_write_bytes: c.dram_write_bytes,
            time_inputs: shape.map(|s| TimeInputs {
                ld_requests: c.ld_requests,
                ld_sectors: c.ld_sectors,
                st_requests: c.st_requests,
                st_sectors: c.st_sectors,
                shared_ld_wavefronts: c.shared_ld_wavefronts,
                shared_st_wavefronts: c.shared_st_wavefronts,
                launches: s.launches.iter().map(|l| (l.blocks, l.threads, l.blocks_per_sm)).collect(),
                global_atomics: s.global_atomics,
                atomic_addresses: s.atomic_addresses,
                atomic_max_per_address: s.atomic_max_per_address,
                l1_hit_sectors: s.l1_hit_sectors,
            }),
        }
    }

    /// The counts and shape [`crate::timing::predict`] takes, where the record has them.
    pub fn time_counts(&self) -> Option<(coalesce::model::Counts, coalesce::model::shape::Shape)> {
        let t = self.time_inputs.as_ref()?;
        let counts = coalesce::model::Counts {
            ld_requests: t.ld_requests,
            ld_sectors: t.ld_sectors,
            st_requests: t.st_requests,
            st_sectors: t.st_sectors,
            shared_ld_wavefronts: t.shared_ld_wavefronts,
            shared_ld_bank_conflicts: self.shared_ld_bank_conflicts,
            shared_st_wavefronts: t.shared_st_wavefronts,
            shared_st_bank_conflicts: self.shared_st_bank_conflicts,
            dram_read_bytes: self.dram_read_bytes,
            dram_write_bytes: self.dram_write_bytes,
        };
        let shape = coalesce::model::shape::Shape {
            launches: t
                .launches
                .iter()
                .map(|&(blocks, threads, blocks_per_sm)| coalesce::model::shape::LaunchShape {
                    blocks,
                    threads,
                    blocks_per_sm,
                })
                .collect(),
            global_atomics: t.global_atomics,
            atomic_addresses: t.atomic_addresses,
            atomic_max_per_address: t.atomic_max_per_address,
            l1_hit_sectors: t.l1_hit_sectors,
        };
        Some((counts, shape))
    }
}

/// Puts each prediction beside the measurement of the same run id; runs with no measurement (a
/// variant this GPU skipped) and measurements with no prediction are left as they are. Returns
/// the runs whose prediction the model refused, with why.
pub fn attach_models(
    measured: &mut [Measurement],
    predictions: impl IntoIterator<
        Item = (String, coalesce::Result<Option<coalesce::model::Counts>>, coalesce::model::shape::Shape),
    >,
) -> Vec<(String, coalesce::Error)> {
    let mut refused = Vec::new();
    let mut by_run: std::collections::HashMap<String, _> =
        predictions.into_iter().map(|(run, p, shape)| (run, (p, shape))).collect();
    for m in measured.iter_mut() {
        match by_run.remove(&m.run) {
            Some((Ok(counts), shape)) => m.model = counts.as_ref().map(|c| Model::from_counts(c, Some(&shape))),
            Some((Err(e), _)) => refused.push((m.run.clone(), e)),
            None => {}
        }
    }
    refused
}

impl Measurement {
    /// Effective bandwidth in GB/s (10^9 bytes per second) of the bytes the run must move.
    pub fn gbps(&self) -> f64 {
        self.bytes as f64 / (self.median_us * 1e-6) / 1e9
    }

    /// TFLOP/s (10^12 floating-point operations per second); 0 for memory-bound runs.
    pub fn tflops(&self) -> f64 {
        self.flops as f64 / (self.median_us * 1e-6) / 1e12
    }

    /// This run's bandwidth as a percentage of `memcpy`'s.
    pub fn percent_of(&self, memcpy: &Measurement) -> f64 {
        100.0 * self.gbps() / memcpy.gbps()
    }

    /// What the swept parameter's value means (`one-trip`, `8192x8192`), where the registry
    /// labels it.
    pub fn param_label(&self) -> Option<String> {
        crate::registry::param_label(&self.family, &self.variant, self.param_value()?)
    }

    /// The swept parameter's value, if any.
    pub fn param_value(&self) -> Option<u32> {
        self.param.as_ref().map(|p| p.value)
    }

    /// Whether this is a run of `variant`.
    pub fn is<F: Family + PartialEq>(&self, variant: F) -> bool {
        self.variant_in::<F>() == Some(variant)
    }

    /// Whether this is a run of family `F`.
    pub fn in_family<F: Family>(&self) -> bool {
        self.family == F::NAME
    }

    /// The variant of family `F` this is a run of (`None` for another family's run, or a name
    /// the registry no longer has).
    pub fn variant_in<F: Family>(&self) -> Option<F> {
        F::ROWS.iter().find(|row| self.family == F::NAME && row.name == self.variant).map(|row| row.variant)
    }
}

impl Report {
    /// Parses a report written by [`Report::to_json`].
    pub fn from_json(json: &str) -> Result<Report, serde_json::Error> {
        serde_json::from_str(json)
    }

    /// The report as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        // Strings, integers, floats and booleans into a String: serde_json has no error to report
        // (a non-finite float is written as `null`, not rejected).
        serde_json::to_string_pretty(self).expect("a Report serializes to JSON infallibly")
    }

    /// The families present, in the order they first appear in `runs`.
    pub fn families(&self) -> Vec<&str> {
        let mut seen: Vec<&str> = Vec::new();
        for m in &self.runs {
            if !seen.contains(&m.family.as_str()) {
                seen.push(&m.family);
            }
        }
        seen
    }

    /// Every run of `family`, in registry order.
    pub fn family<'a, 'f>(&'a self, family: &'f str) -> impl Iterator<Item = &'a Measurement> + use<'a, 'f> {
        self.runs.iter().filter(move |m| m.family == family)
    }

    /// The variants of `family`, in the order they first appear.
    pub fn variants(&self, family: &str) -> Vec<&str> {
        let mut seen: Vec<&str> = Vec::new();
        for m in self.family(family) {
            if !seen.contains(&m.variant.as_str()) {
                seen.push(&m.variant);
            }
        }
        seen
    }

    /// The run of `family/variant` without a parameter, or its first swept run.
    pub fn get(&self, family: &str, variant: &str) -> Option<&Measurement> {
        self.family(family).find(|m| m.variant == variant)
    }

    /// The swept runs of `family/variant` as (parameter value, run), in registry order.
    pub fn sweep(&self, family: &str, variant: &str) -> Vec<(u32, &Measurement)> {
        self.family(family).filter(|m| m.variant == variant).filter_map(|m| Some((m.param_value()?, m))).collect()
    }

    // The views look runs up by the registry's own types, so a renamed variant or family is a
    // compile error or a failing test, never a silently missing sentence.

    /// The runs of family `F`.
    pub fn runs_of<F: Family>(&self) -> impl Iterator<Item = &Measurement> {
        self.family(F::NAME)
    }

    /// The first run of `variant` (its only one where it has no parameter).
    pub fn of<F: Family + PartialEq>(&self, variant: F) -> Option<&Measurement> {
        self.get(F::NAME, name_of(variant)?)
    }

    /// The swept runs of `variant` as (parameter value, run), in registry order.
    pub fn sweep_of<F: Family + PartialEq>(&self, variant: F) -> Vec<(u32, &Measurement)> {
        name_of(variant).map_or_else(Vec::new, |name| self.sweep(F::NAME, name))
    }

    /// Whether the record lists a run of `variant` (at any parameter) as not measured here.
    pub fn was_skipped<F: Family + PartialEq>(&self, variant: F) -> bool {
        let Some(name) = name_of(variant) else { return false };
        let id = format!("{}/{name}", F::NAME);
        self.skipped
            .iter()
            .any(|s| s.run.strip_prefix(&id).is_some_and(|rest| rest.is_empty() || rest.starts_with('/')))
    }

    /// The run of `variant` at parameter `value`.
    pub fn at<F: Family + PartialEq>(&self, variant: F, value: u32) -> Option<&Measurement> {
        self.sweep_of(variant).into_iter().find(|(v, _)| *v == value).map(|(_, m)| m)
    }
}

/// The registry's name of `variant` (its row in `F::ROWS`), `None` for a value no row registers.
pub fn name_of<F: Family + PartialEq>(variant: F) -> Option<&'static str> {
    F::ROWS.iter().find(|row| row.variant == variant).map(|row| row.name)
}

/// One rendered plot: what the markdown embeds and the page inlines (drawn by `plots`).
#[derive(Debug, Clone)]
pub struct Plot {
    /// File name, written next to `report.md` and embedded by it.
    pub file: &'static str,
    /// The family whose section embeds it.
    pub family: &'static str,
    /// Title, drawn as the caption and used as the markdown image's alt text.
    pub title: String,
    /// The SVG document.
    pub svg: String,
}

#[cfg(test)]
mod join_tests {
    use super::*;
    use coalesce::model::Counts;
    use coalesce::model::shape::Shape;

    fn measured(run: &str) -> Measurement {
        Measurement {
            run: run.into(),
            family: "f".into(),
            variant: "v".into(),
            param: None,
            summary: String::new(),
            median_us: 1.0,
            bytes: 0,
            flops: 0,
            on_cpu: false,
            model: None,
            ncu: None,
        }
    }

    #[test]
    fn predictions_join_measurements_by_run_id_across_skipped_runs() {
        // Runs a, b, c, d predicted; b was skipped on this GPU, so three were measured. By
        // position, c would get b's counts and d c's.
        let counts = |sectors| Some(Counts { ld_sectors: sectors, ld_requests: 1, ..Counts::default() });
        let predictions =
            [("a", 4), ("b", 8), ("c", 16), ("d", 32)].map(|(r, s)| (r.to_string(), Ok(counts(s)), Shape::default()));
        let mut runs = vec![measured("a"), measured("c"), measured("d")];
        let refused = attach_models(&mut runs, predictions);
        assert!(refused.is_empty());
        let got: Vec<f64> = runs.iter().map(|m| m.model.as_ref().unwrap().ld_sectors_per_request).collect();
        assert_eq!(got, [4.0, 16.0, 32.0]);
        // A measurement the model has nothing for keeps no model; a refused one is reported.
        let mut runs = vec![measured("x"), measured("a")];
        let refused = attach_models(&mut runs, [("a".to_string(), Err(coalesce::Error::Empty("n")), Shape::default())]);
        assert!(runs[0].model.is_none() && runs[1].model.is_none());
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].0, "a");
    }

    #[test]
    fn counters_join_by_run_id_and_need_the_dram_ones() {
        let csv = "# b\n\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Value\"\n\
                   \"0\",\"k\",\"dram__bytes_read.sum\",\"1,024\"\n\
                   \"0\",\"k\",\"dram__bytes_write.sum\",\"64\"\n\
                   \"0\",\"k\",\"lts__t_sectors_srcunit_tex_op_read.sum\",\"40\"\n\
                   # a\n\"0\",\"k\",\"gpu__time_duration.sum\",\"5\"\n";
        let profiled = crate::ncu::parse(csv);
        let mut runs = vec![measured("a"), measured("b"), measured("c")];
        assert_eq!(attach_counters(&mut runs, &profiled), 1);
        assert_eq!(runs[0].ncu, None, "no DRAM counters for a");
        let b = runs[1].ncu.as_ref().unwrap();
        assert_eq!(
            (b.dram_read_bytes, b.dram_write_bytes, b.l2_read_bytes, b.l2_read_hit_bytes),
            (1024, 64, Some(1280), None)
        );
        assert_eq!(runs[2].ncu, None);
    }
}
