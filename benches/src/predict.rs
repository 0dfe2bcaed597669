//! The model's predictions for registered runs: every run's [`Counts`] from
//! [`Family::model`](crate::family::Family::model), computed in parallel, printed as a table
//! or as JSON lines (`cargo xtask model`).
use std::fmt::Write;

use coalesce::model::shape::{Shape, observe};
use coalesce::model::{Counts, Device};

use crate::family::Variant;
use crate::registry;

/// A run's prediction: `Ok(None)` for a CPU-only variant, `Err` when the library refused the
/// launch (a bug in the registry's sizes).
pub type Prediction = coalesce::Result<Option<Counts>>;

/// Every registered run whose id contains `filter`, in registry order.
pub fn runs(filter: &str) -> Vec<(&'static dyn Variant, u32)> {
    registry::all()
        .flat_map(|v| v.sweep_values().iter().map(move |&p| (v, p)))
        .filter(|(v, p)| v.run_id(*p).contains(filter))
        .collect()
}

/// The predictions of `runs` on `device` (its SM count sizes GPU-sized grids, its L2 the DRAM
/// traffic), in the same order, on every core.
pub fn predict(runs: &[(&'static dyn Variant, u32)], device: Device) -> Vec<(String, Prediction)> {
    predict_with_progress(runs, device, |_, _| {}).into_iter().map(|(run, p, _)| (run, p)).collect()
}

/// [`predict`], each prediction with the [`Shape`] its replay saw (launches, atomics): what the
/// time model needs besides the counts.
pub fn predict_shaped(runs: &[(&'static dyn Variant, u32)], device: Device) -> Vec<(String, Prediction, Shape)> {
    predict_with_progress(runs, device, |_, _| {})
}

/// [`predict_shaped`], calling `done(finished, run id)` as each run's prediction is made (from
/// the worker threads, in the order they finish).
pub fn predict_with_progress(
    runs: &[(&'static dyn Variant, u32)],
    device: Device,
    done: impl Fn(usize, &str) + Sync,
) -> Vec<(String, Prediction, Shape)> {
    let finished = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(runs.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut out: Vec<Option<(String, Prediction, Shape)>> = (0..runs.len()).map(|_| None).collect();
    let results = std::sync::Mutex::new(&mut out);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&(v, p)) = runs.get(i) else { break };
                    let (prediction, shape) = observe(|| coalesce::model::on_device(device, || v.model(p, device.sms)));
                    let row = (v.run_id(p), prediction, shape);
                    done(finished.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1, &row.0);
                    // A poisoned lock means another worker panicked: that panic is reported by
                    // the scope, so this one just stops.
                    let Ok(mut results) = results.lock() else { break };
                    results[i] = Some(row);
                }
            });
        }
    });
    out.into_iter().flatten().collect()
}

/// One JSON object with the run id, every quantity of `counts`, and what the replay saw of its
/// launches and atomics (`shape`), on one line.
pub fn json_line(run: &str, counts: &Counts, shape: &Shape) -> String {
    let mut line = format!("{{\"run\":{}", serde_json::Value::String(run.to_string()));
    for (name, value) in counts.fields() {
        if name.ends_with("_per_request") {
            let _ = write!(line, ",\"{name}\":{}", serde_json::Value::from(value));
        } else {
            let _ = write!(line, ",\"{name}\":{}", value as u64);
        }
    }
    let launches: Vec<String> = shape
        .launches
        .iter()
        .map(|l| format!("{{\"blocks\":{},\"threads\":{},\"blocks_per_sm\":{}}}", l.blocks, l.threads, l.blocks_per_sm))
        .collect();
    let _ = write!(
        line,
        ",\"launches\":[{}],\"global_atomics\":{},\"atomic_addresses\":{},\"atomic_max_per_address\":{},\"l1_hit_sectors\":{}}}",
        launches.join(","),
        shape.global_atomics,
        shape.atomic_addresses,
        shape.atomic_max_per_address,
        shape.l1_hit_sectors
    );
    line
}

/// `1234567` as `1,234,567`.
pub fn thousands(v: u64) -> String {
    let digits = v.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// The predictions as a plain-text table, one row per run.
pub fn table(rows: &[(String, Prediction)]) -> String {
    let header = [
        "run",
        "ld req",
        "ld sectors",
        "sect/req",
        "st req",
        "st sectors",
        "sect/req",
        "shared ld wf",
        "ld conflicts",
        "shared st wf",
        "st conflicts",
        "DRAM rd MB",
        "DRAM wr MB",
    ];
    let mut cells: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    for (run, prediction) in rows {
        let row = match prediction {
            Ok(Some(c)) => vec![
                run.clone(),
                thousands(c.ld_requests),
                thousands(c.ld_sectors),
                format!("{:.2}", c.ld_sectors_per_request()),
                thousands(c.st_requests),
                thousands(c.st_sectors),
                format!("{:.2}", c.st_sectors_per_request()),
                thousands(c.shared_ld_wavefronts),
                thousands(c.shared_ld_bank_conflicts),
                thousands(c.shared_st_wavefronts),
                thousands(c.shared_st_bank_conflicts),
                format!("{:.1}", c.dram_read_bytes as f64 / 1e6),
                format!("{:.1}", c.dram_write_bytes as f64 / 1e6),
            ],
            Ok(None) => vec![run.clone(), "(CPU)".into()],
            Err(e) => vec![run.clone(), format!("error: {e}")],
        };
        cells.push(row);
    }
    let columns = header.len();
    let widths: Vec<usize> = (0..columns)
        .map(|i| cells.iter().filter(|r| r.len() == columns).map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &cells {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i == 0 {
                let _ = write!(line, "{cell:<w$}", w = widths[0]);
            } else if row.len() == columns {
                let _ = write!(line, "  {cell:>w$}", w = widths[i]);
            } else {
                let _ = write!(line, "  {cell}");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_carry_every_key_once() {
        let c = Counts { ld_requests: 2, ld_sectors: 9, dram_read_bytes: 288, ..Counts::default() };
        let shape = Shape {
            launches: vec![coalesce::model::shape::LaunchShape { blocks: 3, threads: 64, blocks_per_sm: 32 }],
            global_atomics: 5,
            atomic_addresses: 2,
            atomic_max_per_address: 4,
            l1_hit_sectors: 6,
        };
        let line = json_line("coalescing/offset/offset=1", &c, &shape);
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["run"], "coalescing/offset/offset=1");
        assert_eq!(v["ld_sectors_per_request"], 4.5);
        assert_eq!(v["st_sectors_per_request"], 0.0);
        assert_eq!(v["dram_read_bytes"], 288);
        assert_eq!(v["launches"][0]["blocks"], 3);
        assert_eq!((v["global_atomics"].as_u64(), v["atomic_max_per_address"].as_u64()), (Some(5), Some(4)));
        assert_eq!(v.as_object().unwrap().len(), 18);
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(8_388_608), "8,388,608");
    }
}
