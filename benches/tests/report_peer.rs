//! The peer family in the report: its readings divide by the peer copy of the same direction, and
//! a machine without a second GPU lists the family as not measured, with the reason.
use coalesce_benches::report::{self, Measurement, Model, Param, Report, Skipped};

const SAMPLE: &str = include_str!("data/sample-report.json");

/// A peer run of `bytes` in `median_us`, with `sectors` loaded per request where modelled.
fn peer(variant: &str, param: Option<(&str, u32)>, median_us: f64, sectors: Option<f64>) -> Measurement {
    let run = match param {
        Some((name, value)) => format!("peer/{variant}/{name}={value}"),
        None => format!("peer/{variant}"),
    };
    Measurement {
        run,
        family: "peer".into(),
        variant: variant.into(),
        param: param.map(|(name, value)| Param { name: name.into(), value }),
        summary: format!("{variant} summary"),
        median_us,
        bytes: 1 << 28,
        flops: 0,
        on_cpu: false,
        model: sectors.map(|s| Model {
            ld_sectors_per_request: s,
            st_sectors_per_request: 4.0,
            shared_ld_bank_conflicts: 0,
            shared_st_bank_conflicts: 0,
            dram_read_bytes: 0,
            dram_write_bytes: 0,
            time_inputs: None,
        }),
        ncu: None,
    }
}

fn rendered(r: &Report, name: &str) -> String {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("report_peer-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    report::render(r, &dir).expect("render");
    std::fs::read_to_string(dir.join("report.md")).expect("report.md")
}

#[test]
fn peer_readings_divide_by_the_peer_copy_of_their_direction() {
    let mut r = Report::from_json(SAMPLE).expect("sample");
    r.runs.extend([
        peer("memcpy_read", None, 1000.0, None),
        peer("copy_read", None, 1250.0, Some(4.0)),
        peer("offset_read", Some(("offset", 0)), 1250.0, Some(4.0)),
        peer("offset_read", Some(("offset", 1)), 1500.0, Some(5.0)),
        peer("stride_read", Some(("stride", 1)), 1250.0, Some(4.0)),
        peer("stride_read", Some(("stride", 32)), 10000.0, Some(32.0)),
        peer("memcpy_write", None, 800.0, None),
        peer("copy_write", None, 1000.0, Some(4.0)),
    ]);
    let md = rendered(&r, "readings");
    // 2^28 bytes: 268 GB/s in 1000 µs; the copy at 1250 µs is 80.0% of it.
    assert!(md.contains("pulls 268 GB/s across the link"), "{md}");
    assert!(md.contains("runs at 215 GB/s, 80.0% of the peer copy"), "{md}");
    // Offset 1 takes 1500 µs against 1250: 20.0% slower, 4 -> 5 sectors.
    assert!(md.contains("runs 20.0% slower than aligned (4 → 5 sectors a request"), "{md}");
    // Stride 32: 27 GB/s, 12.5% of stride 1.
    assert!(md.contains("Stride 32 across the link delivers 27 GB/s of useful data, 12.5% of stride 1"), "{md}");
    // The write divides by the write copy (800 µs), not the read: 1000 µs is 80.0%.
    assert!(md.contains("runs at 268 GB/s, 80.0% of the driver's peer copy in that direction (336 GB/s)"), "{md}");
    assert!(!md.contains("Not measured here"), "nothing skipped");
}

#[test]
fn a_machine_without_a_second_gpu_lists_the_family_with_its_reason() {
    let mut r = Report::from_json(SAMPLE).expect("sample");
    let reason = "no peer device: the driver reports 1 device(s); the peer lessons need two";
    r.skipped = ["peer/memcpy_read", "peer/offset_read/offset=0", "peer/offset_read/offset=1"]
        .iter()
        .map(|run| Skipped { run: run.to_string(), reason: reason.into() })
        .collect();
    let md = rendered(&r, "skipped");
    assert!(md.contains(&format!("## Not measured here\n\n- `peer` (3 runs): SKIPPED, {reason}\n")), "{md}");
    // And the list survives the JSON round trip that `report --from` makes.
    assert_eq!(Report::from_json(&r.to_json()).expect("round trip").skipped, r.skipped);
}
