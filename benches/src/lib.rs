//! The lesson harness: every kernel variant described once, as a row of its family's table
//! ([`family`]), and registered once ([`registry`]); checked against its
//! CPU reference ([`check`], the `gpu` test), prepared as a benchmark [`workload`], measured with
//! CUDA events ([`measure`]) by the criterion benches and the report.
//!
//! It depends on the `coalesce` library; the library knows nothing of it. Each family has a
//! module here with the same name as its kernels (`kernels-gpu/src/F.rs`) and its launchers
//! (`host/src/F.rs`).
pub mod calibrate;
pub mod check;
pub mod cli;
pub mod elements;
pub mod family;
pub mod large;
pub mod library;
pub mod measure;
pub mod ncu;
pub mod predict;
pub mod registry;
pub mod report;
pub mod sweep;
pub mod timing;
pub mod workload;

pub mod access_order;
pub mod bank;
pub mod coalescing;
pub mod distance;
pub mod histogram;
pub mod layouts;
pub mod matmul;
pub mod peer;
pub mod reduce;
pub mod transpose;

use coalesce::{Gpu, Result};

/// `Ok` where the driver reports a device, else why not (no driver, no device): a quick question,
/// no context made, for a command that needs a GPU to say so before it builds anything.
pub fn gpu_present() -> Result<()> {
    match Gpu::device_count()? {
        0 => Err(coalesce::Error::NoGpu("the driver reports no CUDA device".into())),
        _ => Ok(()),
    }
}

/// Opens the GPU the harness runs on: device `COALESCE_DEVICE` (default 0), with the base module
/// only where `COALESCE_BASE_MODULE_ONLY=1` ([`Gpu::base_module_only`]).
pub fn open_gpu() -> Result<Gpu> {
    let ordinal = match std::env::var("COALESCE_DEVICE") {
        Ok(v) => v.trim().parse().map_err(|_| {
            coalesce::Error::NoGpu(format!("COALESCE_DEVICE={v:?} is not a device ordinal (0, 1, ...)"))
        })?,
        Err(_) => 0,
    };
    let gpu = Gpu::with_device(ordinal)?;
    // A pre-Hopper GPU's view of this one: the Hopper variants SKIPPED, every other run as usual.
    Ok(if std::env::var("COALESCE_BASE_MODULE_ONLY").is_ok_and(|v| v == "1") { gpu.base_module_only() } else { gpu })
}
