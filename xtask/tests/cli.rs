//! The built `cargo xtask` as a user meets it: help everywhere, clap's exit codes, and no panic
//! when stdout closes early. Nothing here builds kernels or the harness's release binaries.
use std::io::Read;
use std::process::{Command, Output, Stdio};

fn xtask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask")).args(args).output().expect("run xtask")
}

#[test]
fn every_command_has_help() {
    for cmd in ["build-ptx", "list", "report", "model", "ncu-table", "bundle"] {
        let out = xtask(&[cmd, "--help"]);
        assert!(out.status.success(), "{cmd} --help: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("Usage: cargo xtask {cmd}")), "{cmd} --help: {text}");
    }
    for args in [&["--help"][..], &["help"], &["help", "report"]] {
        let out = xtask(args);
        assert!(out.status.success(), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("Usage: cargo xtask"), "{args:?}");
    }
}

#[test]
fn usage_mistakes_exit_2_with_usage_or_a_pointer_to_it_on_stderr() {
    for args in [&[][..], &["bogus"], &["list", "--bogus"], &["model", "--sms", "0"], &["ncu-table"]] {
        let out = xtask(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("Usage: cargo xtask") || err.contains("try '--help'"), "{args:?}: {out:?}");
    }
}

#[test]
fn an_unknown_arch_is_one_line_before_any_build() {
    let out = xtask(&["build-ptx", "--arch", "sm_42"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: unknown --arch `sm_42`") && err.contains("sm_75"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn list_names_the_sweeps_and_stops_quietly_on_a_closed_pipe() {
    let out = xtask(&["list"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().any(|l| l.starts_with("coalescing/vec4 ") && l.contains("one-trip]")), "{text}");
    assert!(text.lines().any(|l| l.starts_with("transpose/naive ") && l.contains("8192x8192")), "{text}");
    // `cargo xtask list | head -1`: read one line, close the pipe.
    let mut child = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("list")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run xtask list");
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"), "{out:?}");
}

#[test]
fn report_without_a_gpu_says_so_before_building_and_points_at_the_record() {
    if coalesce_benches::gpu_present().is_ok() {
        // With a GPU the command measures (minutes): this test is about machines without one.
        println!("SKIPPED (a GPU is present: `cargo xtask report` would measure)");
        return;
    }
    let start = std::time::Instant::now();
    let out = xtask(&["report"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("there is none") && err.contains("cargo xtask report --from results/report.json"), "{err}");
    assert!(start.elapsed().as_secs() < 10, "answered in {:?}, not before a build", start.elapsed());
}
