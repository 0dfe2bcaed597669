//! The PTX itself: every registered kernel is an entry, every entry is registered, no kernel
//! name is spelled as a string outside kernels-gpu, and ptxas (where installed) assembles the
//! module with no spills and no stack frame.
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use coalesce_benches::registry;
use coalesce_builder::{EMBEDDED, EMBEDDED_DIR, PtxBuilder, REFRESH_COMMAND, find_ptxas, ptx_entries, ptxas_report};

/// Kernels that are helpers, the time model's probes or the library's element-type kernels, not
/// lessons, and so are not in the registry.
fn helpers() -> Vec<&'static str> {
    std::iter::once(coalesce_kernels::util::util_fill.name())
        .chain(coalesce::timing::probe::KERNELS)
        .chain(coalesce::coalescing::ELEMENT_KERNELS)
        .chain(coalesce::reduce::ELEMENT_KERNELS)
        .chain(coalesce::transpose::ELEMENT_KERNELS)
        .collect()
}

fn skipped(test: &str, why: &str) {
    // Straight to stderr, past libtest's capture, so the skip is seen even when the test passes.
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}

fn registered() -> BTreeSet<String> {
    registry::all().flat_map(|v| v.kernels().iter().map(|k| k.to_string())).collect()
}

fn assert_entries_match_registry(ptx: &str) {
    let entries: BTreeSet<String> = ptx_entries(ptx).into_iter().collect();
    let registered = registered();
    let missing: Vec<_> = registered.difference(&entries).collect();
    assert!(missing.is_empty(), "registered kernels missing from the PTX: {missing:?}");
    let unregistered: Vec<_> =
        entries.iter().filter(|e| !registered.contains(*e) && !helpers().contains(&e.as_str())).collect();
    assert!(unregistered.is_empty(), "PTX entries no variant registers: {unregistered:?}");
}

/// Assembles for `gpu` and checks every function has no stack frame and no spills, and every
/// entry got a report.
fn assemble(ptxas: &Path, ptx: &Path, gpu: &str) {
    let report = ptxas_report(ptxas, ptx, gpu).unwrap_or_else(|e| panic!("ptxas {gpu} rejected the PTX:\n{e}"));
    let lines: Vec<&str> = report.lines().collect();
    let mut reported = BTreeSet::new();
    for (i, line) in lines.iter().enumerate() {
        if let Some(name) = line.split("Function properties for ").nth(1) {
            let frame = lines.get(i + 1).map_or("", |l| l.trim());
            assert_eq!(frame, "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads", "{gpu}: {name}");
            reported.insert(name.trim().trim_matches('\'').to_string());
        }
    }
    for entry in ptx_entries(&std::fs::read_to_string(ptx).unwrap()) {
        assert!(reported.contains(&entry), "{gpu}: no ptxas report for {entry}\n{report}");
    }
}

/// Entries of the Hopper module that the base module lacks: the kernels only it holds.
fn hopper_only() -> BTreeSet<String> {
    let base: BTreeSet<String> = ptx_entries(coalesce::PTX).into_iter().collect();
    ptx_entries(coalesce::PTX_SM90).into_iter().filter(|e| !base.contains(e)).collect()
}

#[test]
fn embedded_ptx_holds_exactly_the_registered_kernels() {
    assert!(coalesce::PTX.contains(&format!(".target {}", coalesce::PTX_ARCH)));
    // The base module holds every registered kernel but the Hopper module's own, and nothing
    // unregistered; the Hopper module adds exactly those.
    let entries: BTreeSet<String> = ptx_entries(coalesce::PTX).into_iter().collect();
    let hopper = hopper_only();
    let registered = registered();
    let missing: Vec<_> = registered.iter().filter(|k| !entries.contains(*k) && !hopper.contains(*k)).collect();
    assert!(missing.is_empty(), "registered kernels in neither module: {missing:?}");
    let unregistered: Vec<_> = entries
        .iter()
        .chain(&hopper)
        .filter(|e| !registered.contains(*e) && !helpers().contains(&e.as_str()))
        .collect();
    assert!(unregistered.is_empty(), "PTX entries no variant registers: {unregistered:?}");
    if coalesce::PTX_ARCH == coalesce_builder::DEFAULT_ARCH {
        assert!(!hopper.is_empty(), "the sm_75 module must not hold the Hopper kernels");
    }
}

#[test]
fn hopper_module_holds_the_hopper_kernels_and_their_instructions() {
    let ptx = coalesce::PTX_SM90;
    assert!(ptx.contains(".target sm_90") && ptx.contains(".version 8.3"));
    assert_entries_match_registry(ptx);
    let hopper = hopper_only();
    for kernel in [
        coalesce_kernels::coalescing::coalescing_cp_async.name(),
        coalesce_kernels::coalescing::coalescing_bulk.name(),
        coalesce_kernels::matmul::matmul_cp_async.name(),
        coalesce_kernels::transpose::transpose_tma.name(),
        coalesce_kernels::histogram::histogram_cluster.name(),
    ] {
        assert!(hopper.contains(kernel), "{kernel} should be in the Hopper module only");
    }
    // What the module is for: cp.async, bulk and tensor copies, mbarriers, cluster memory.
    for instruction in [
        "cp.async.cg.shared.global",
        "cp.async.ca.shared.global",
        "cp.async.wait_group",
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
        "cp.async.bulk.global.shared::cta.bulk_group",
        "cp.async.bulk.tensor.2d.shared::cluster.global",
        "cp.async.bulk.tensor.2d.global.shared::cta",
        "cvta.param.u64",
        "mbarrier.try_wait.parity",
        "mbarrier.arrive.expect_tx",
        "mapa.shared::cluster",
        "ld.shared::cluster",
        "barrier.cluster.arrive",
        "%cluster_ctarank",
    ] {
        assert!(ptx.contains(instruction), "no {instruction} in the Hopper module");
    }
    // The TMA transpose's maps are grid constants, declared with the alignment the TMA needs.
    let tma = coalesce_kernels::transpose::transpose_tma.name();
    for i in 0..2 {
        let param = format!(".param .align 64 .b8 {tma}_param_{i}[128]");
        assert!(ptx.contains(&param), "no `{param}` in the Hopper module");
    }
    // None of it leaks into the sm_75 module.
    if coalesce::PTX_ARCH == coalesce_builder::DEFAULT_ARCH {
        for instruction in ["cp.async", "mbarrier", "mapa", "cluster"] {
            assert!(!coalesce::PTX.contains(instruction), "{instruction} in the sm_75 module");
        }
    }
    let Some(ptxas) = find_ptxas() else {
        return skipped(
            "hopper_module_holds_the_hopper_kernels_and_their_instructions (ptxas part)",
            "ptxas is not on PATH",
        );
    };
    let dir = std::env::temp_dir().join(format!("coalesce-ptx90-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("kernels-sm_90.ptx");
    std::fs::write(&path, ptx).unwrap();
    assemble(&ptxas, &path, "sm_90");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn embedded_ptx_assembles_for_turing_ampere_and_hopper() {
    let Some(ptxas) = find_ptxas() else {
        return skipped("embedded_ptx_assembles_for_turing_ampere_and_hopper", "ptxas is not on PATH");
    };
    let dir = std::env::temp_dir().join(format!("coalesce-ptx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("kernels.ptx");
    std::fs::write(&path, coalesce::PTX).unwrap();
    // CUDA 13's ptxas starts at sm_75; sm_70 needs a CUDA 12 ptxas.
    for gpu in ["sm_75", "sm_80", "sm_90"] {
        assemble(&ptxas, &path, gpu);
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn builder_builds_sm90_ptx_with_every_kernel() {
    let kernels = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../kernels-gpu");
    let ptx_path = PtxBuilder::new(&kernels).arch("sm_90").build().expect("PTX build for sm_90");
    let ptx = std::fs::read_to_string(&ptx_path).unwrap();
    // `--arch sm_90` is the Hopper module (that the embedded one is this very build is
    // `committed_ptx_is_what_the_kernels_build_to`'s check).
    assert!(ptx.contains(".target sm_90") && ptx.contains(".version 8.3"));
    assert_entries_match_registry(&ptx);
    match find_ptxas() {
        Some(ptxas) => assemble(&ptxas, &ptx_path, "sm_90"),
        None => skipped("builder_builds_sm90_ptx_with_every_kernel (ptxas part)", "ptxas is not on PATH"),
    }
}

/// The library embeds the PTX committed in `host/ptx/` (so that it builds on stable Rust, without
/// the builder): each module must be exactly what the kernels build to now.
#[test]
fn committed_ptx_is_what_the_kernels_build_to() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    for ((arch, file), embedded) in EMBEDDED.into_iter().zip([coalesce::PTX, coalesce::PTX_SM90]) {
        let committed_path = root.join(EMBEDDED_DIR).join(file);
        let committed = std::fs::read_to_string(&committed_path).unwrap();
        assert!(committed == embedded, "{}: not the module the library embeds", committed_path.display());
        let built_path = PtxBuilder::new(root.join("kernels-gpu")).arch(arch).build().expect("PTX build");
        let built = std::fs::read_to_string(&built_path).unwrap();
        if built != committed {
            let line = built.lines().zip(committed.lines()).position(|(b, c)| b != c);
            let line = line.unwrap_or(built.lines().count().min(committed.lines().count())) + 1;
            panic!(
                "{EMBEDDED_DIR}/{file} is stale: the kernels build to different PTX for {arch} (first \
                 difference at line {line}; freshly built: {}).\nRefresh it on the pinned nightly with \
                 `{REFRESH_COMMAND}` and commit {EMBEDDED_DIR}/.",
                built_path.display()
            );
        }
    }
}

#[test]
fn every_variant_is_named_once_and_documented() {
    let mut ids = BTreeSet::new();
    for v in registry::all() {
        assert!(ids.insert(v.id()), "{} registered twice", v.id());
        assert!(!v.summary().is_empty(), "{}", v.id());
        // Only the CPU references and driver copies a family is compared with run no kernel.
        let reference = v.name().starts_with("cpu_") || v.name().starts_with("memcpy");
        assert_eq!(v.kernels().is_empty(), reference, "{}", v.id());
        if let Some(p) = v.param() {
            assert!(!p.sweep.is_empty() && !p.check.is_empty(), "{}: empty parameter lists", v.id());
        }
    }
}

/// Every `.rs` and `.sh` file under `dir`, recursively, skipping build output.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !["target", ".git", "bundle"].contains(&name.as_str()) {
                sources(&path, out);
            }
        } else if name.ends_with(".rs") || name.ends_with(".sh") {
            out.push(path);
        }
    }
}

#[test]
fn no_kernel_name_is_a_string_literal_outside_kernels_gpu() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap();
    let names: Vec<String> = ptx_entries(coalesce::PTX_SM90);
    assert!(!names.is_empty());
    let mut files = Vec::new();
    for dir in ["host", "benches", "xtask", "builder"] {
        sources(&root.join(dir), &mut files);
    }
    let mut offenders = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for name in &names {
            if text.contains(&format!("\"{name}\"")) || text.contains(&format!("'{name}'")) {
                offenders.push(format!("{}: {name}", file.display()));
            }
        }
    }
    assert!(offenders.is_empty(), "kernel names spelled as strings: {offenders:?}");
}

/// The SASS digest the time model reads (`host/ptx/coalesce-sm_90.sass.tsv`) names every
/// entry of the Hopper module, and, where a ptxas of the version that made it is installed,
/// is exactly what that ptxas and cuobjdump make of the committed PTX now.
#[test]
fn committed_sass_digest_covers_every_kernel_and_is_fresh() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let path = root.join(EMBEDDED_DIR).join(coalesce_builder::SASS_DIGEST);
    let committed = std::fs::read_to_string(&path).unwrap();
    let digests = coalesce_builder::sass::parse(&committed).expect("the digest parses");
    let named: BTreeSet<String> = digests.iter().map(|d| d.kernel.clone()).collect();
    let entries: BTreeSet<String> = ptx_entries(coalesce::PTX_SM90).into_iter().collect();
    assert_eq!(named, entries, "{}: refresh it with `{REFRESH_COMMAND}`", path.display());
    // The time model reads the same file.
    assert_eq!(coalesce_benches::timing::digests().len(), digests.len());
    let Some(ptxas) = find_ptxas() else {
        return skipped("committed_sass_digest_covers_every_kernel_and_is_fresh (freshness)", "ptxas is not on PATH");
    };
    let ptx = root.join(EMBEDDED_DIR).join(EMBEDDED[1].1);
    let (fresh, version) = coalesce_builder::sass::digest_ptx(&ptxas, &ptx, "sm_90").expect("ptxas and cuobjdump");
    if !committed.lines().nth(1).is_some_and(|l| l.trim_start_matches("# ") == version) {
        return skipped(
            "committed_sass_digest_covers_every_kernel_and_is_fresh (freshness)",
            &format!("ptxas here is {version:?}, not the one that made the digest"),
        );
    }
    assert!(
        coalesce_builder::sass::render(&fresh, &version) == committed,
        "{} is stale: refresh it with `{REFRESH_COMMAND}`",
        path.display()
    );
}
