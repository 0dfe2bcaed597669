//! The peer family's readings (every bandwidth beside the driver's peer copy of the same bytes,
//! in the same direction) and the list of runs this machine could not make, with the reason.
use std::fmt::Write;

use super::format::{gbps, pct};
use super::model::{Measurement, Report};
use super::warp::WarpPicture;
use crate::peer::Peer;

/// The readings of the `peer` family: the link against local memory, then each kernel as a share
/// of the peer copy in its direction, and what an offset or a stride costs across the link.
pub(crate) fn readings(r: &Report) -> Vec<Option<String>> {
    let get = |variant| r.of(variant);
    let at = |variant, value| r.at(variant, value);
    let sectors = |m: &Measurement| m.model.as_ref().map(|model| model.ld_sectors_per_request);
    let mut out = Vec::new();
    if let Some(read) = get(Peer::MemcpyRead) {
        out.push(Some(format!(
            "The driver's peer copy pulls {} GB/s across the link (bytes counted once), {} of this \
             GPU's own memcpy ({} GB/s): every byte a kernel fetches from the other GPU costs \
             about {:.0}× a local one.",
            gbps(read.gbps()),
            pct(read.percent_of(&r.memcpy)),
            gbps(r.memcpy.gbps()),
            r.memcpy.gbps() / read.gbps()
        )));
        out.push(get(Peer::CopyRead).map(|copy| {
            format!(
                "The library's 16-byte copy reading the other GPU's buffer runs at {} GB/s, {} of \
                 the peer copy.",
                gbps(copy.gbps()),
                pct(copy.percent_of(read))
            )
        }));
        out.push(at(Peer::OffsetRead, 0).zip(at(Peer::OffsetRead, 1)).map(|(aligned, off)| {
            let cost = aligned.gbps() / off.gbps() - 1.0;
            let counts = sectors(aligned)
                .zip(sectors(off))
                .map_or(String::new(), |(a, o)| format!(" ({a:.0} → {o:.0} sectors a request, as locally)"));
            let verdict = if cost >= 0.0 {
                format!("{} slower", pct(100.0 * cost))
            } else {
                format!("{} faster", pct(-100.0 * cost))
            };
            format!(
                "One float off a 32-byte boundary across the link, the offset copy runs {verdict} than aligned{counts}: {} of the peer copy against {}.",
                pct(off.percent_of(read)),
                pct(aligned.percent_of(read))
            )
        }));
        out.push(at(Peer::StrideRead, 1).zip(at(Peer::StrideRead, 32)).map(|(unit, wide)| {
            let counts = sectors(wide).map_or(String::new(), |s| format!(", {s:.0} sectors a request for 4 useful"));
            format!(
                "Stride 32 across the link delivers {} GB/s of useful data, {} of stride 1 ({} of the peer copy){counts}: the link carries the wasted sectors too.",
                gbps(wide.gbps()),
                pct(wide.percent_of(unit)),
                pct(unit.percent_of(read))
            )
        }));
    }
    if let Some(write) = get(Peer::MemcpyWrite) {
        out.push(get(Peer::CopyWrite).map(|copy| {
            format!(
                "Writing the other GPU's memory, the library's copy runs at {} GB/s, {} of the driver's peer copy in that direction ({} GB/s).",
                gbps(copy.gbps()),
                pct(copy.percent_of(write)),
                gbps(write.gbps())
            )
        }));
    }
    out
}

/// The heading of [`skipped_section`] as a link target.
pub(crate) const NOT_MEASURED_ANCHOR: &str = "not-measured-here";

/// `## Not measured here`: the runs this machine could not make, one line per family and reason
/// (e.g. the peer lessons on a one-GPU machine), then the pictures of those families that have no
/// run here: a picture is the model's replay, which needs no GPU. Nothing when every run was made.
pub(crate) fn skipped_section(md: &mut String, r: &Report, pictures: &[WarpPicture]) {
    if r.skipped.is_empty() {
        return;
    }
    md.push_str("\n## Not measured here\n\n");
    let mut groups: Vec<(&str, &str, usize)> = Vec::new();
    for s in &r.skipped {
        let family = s.run.split('/').next().unwrap_or(&s.run);
        match groups.iter_mut().find(|(f, reason, _)| *f == family && *reason == s.reason) {
            Some(group) => group.2 += 1,
            None => groups.push((family, &s.reason, 1)),
        }
    }
    for &(family, reason, runs) in &groups {
        let _ = writeln!(md, "- `{family}` ({runs} run{}): SKIPPED, {reason}", if runs == 1 { "" } else { "s" });
    }
    let families = r.families();
    let unmeasured = |family: &str| !families.contains(&family) && groups.iter().any(|g| g.0 == family);
    for p in pictures.iter().filter(|p| unmeasured(p.family)) {
        let _ = writeln!(
            md,
            "\nThe `{}` lesson's picture needs no run: it is the model's replay of the lesson's kernels.\n\n![{}]({})\n\n{}",
            p.family, p.title, p.file, p.caption
        );
    }
}
