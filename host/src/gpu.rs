//! The GPU handle: one context, the device's one stream, the PTX modules with every function
//! loaded once.
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use cust::context::Context;
use cust::device::{Device, DeviceAttribute};
use cust::function::Function;
use cust::memory::DeviceCopy;
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};

use crate::buffer::{DeviceBuffer, DeviceRead, DeviceWrite, Home, bind};
use crate::error::{Error, Result, exactly, in_range, words};
use crate::launch::{ArgDevice, Call, Kernel, Signature};
use coalesce_kernels::kernel::Module as PtxModule;
use coalesce_kernels::launch::DEFAULT_SHARED_BYTES;

/// A CUDA device ready to run coalesce's kernels.
///
/// A handle holds the device's primary context (the one the CUDA runtime uses too), the
/// device's stream and the loaded PTX modules. It is `Send + Sync`: every method makes the
/// context current on the calling thread first, so one handle may be shared by threads, and
/// several handles on one device share the context and each other's buffers. Buffers keep the
/// context alive, so they may outlive the handle that allocated them.
///
/// Kernels, memsets and device-to-device copies are queued on **one stream per device**, shared
/// by every handle of that device in the process, and run in the order they were queued,
/// whichever handle or thread queued them. A borrow of a buffer ends when its work is queued, so
/// the next call that gets the buffer (through any handle, on any thread) queues behind it: a
/// matmul queued through one handle is finished before a copy of its output queued through
/// another starts. (Per-buffer events, cudarc's design, would let independent work of two
/// handles overlap, at an event record and a stream wait a buffer a call; one stream costs
/// nothing a call and leaves no path unordered.) The stream is a blocking one, so the
/// synchronous copies ([`crate::DeviceRead::to_vec`], [`crate::DeviceWrite::copy_from_host`])
/// wait for every kernel queued before them.
///
/// Two PTX modules: the base one ([`crate::PTX`], sm_75 PTX the driver compiles for any GPU)
/// holds every lesson kernel and is loaded when the handle opens; the Hopper one
/// ([`crate::PTX_SM90`], sm_90 with PTX ISA 8.3) is loaded on first use of one of its kernels,
/// and only on a device of compute capability 9.0 or newer. Kernels present in both are always
/// taken from the base module, so their timings do not depend on which module is loaded.
pub struct Gpu {
    /// Every entry point of the base module, looked up once when it was loaded. `'static` stands
    /// for "as long as `_module`": see `load`.
    functions: HashMap<String, Function<'static>>,
    /// The Hopper module's own entry points, once loaded (a failed load is tried again on the
    /// next use).
    hopper: OnceLock<Loaded>,
    /// Whether the Hopper module is never loaded ([`Gpu::base_module_only`]).
    base_only: bool,
    /// Device memory the sums reuse instead of allocating some a call, held by one call at a
    /// time: the result `reduce::sum` reads back, and the float sums' block totals and counter
    /// (see `reduce::scratch_words`).
    result_slot: Mutex<Option<DeviceBuffer<u64>>>,
    /// The devices whose memory this context maps ([`Gpu::enable_peer_access`]), each with a
    /// retained handle to its context: the mapping lasts as long as that context, which cannot be
    /// destroyed (and a new one made without the mapping) while this handle holds it.
    peers: Mutex<Vec<Peer>>,
    /// The device's one stream ([`DeviceStream::of`]), shared with every other handle on it.
    stream: Arc<DeviceStream>,
    info: DeviceInfo,
    // Dropped after the functions' users: the functions belong to the module, the module and
    // the stream to the context (fields drop in declaration order).
    _module: Module,
    context: Context,
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // The stream and modules are destroyed in the current context: make it this one (the
        // handle may be dropped on a thread that never used it). If that fails the driver
        // reports errors to the destructors, which ignore them.
        let _ = bind(&self.context);
    }
}

/// A device whose memory a handle maps ([`Gpu::enable_peer_access`]).
struct Peer {
    ordinal: u32,
    /// A retained handle to its context: the mapping lasts as long as that context.
    context: Context,
    /// Whether the link does this device's atomics on its memory as atomics (NVLink).
    native_atomics: bool,
}

/// The stream every handle on one device queues on: made by the first handle opened on the
/// device, destroyed with the last one (its context current, as the driver wants).
struct DeviceStream {
    stream: Stream,
    context: Context,
}

/// The live stream of each device ordinal (a dead `Weak` is replaced by the next handle).
static DEVICE_STREAMS: Mutex<Vec<(u32, Weak<DeviceStream>)>> = Mutex::new(Vec::new());

impl DeviceStream {
    /// Device `ordinal`'s stream, made in `context` (its primary context, current) if no live
    /// handle holds one.
    fn of(ordinal: u32, context: &Context) -> Result<Arc<DeviceStream>> {
        // Nothing half-done is left behind a panic inside the lock: each entry is whole.
        let mut streams = DEVICE_STREAMS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        streams.retain(|(_, weak)| weak.strong_count() > 0);
        if let Some(stream) = streams.iter().find(|(o, _)| *o == ordinal).and_then(|(_, weak)| weak.upgrade()) {
            return Ok(stream);
        }
        let stream =
            Arc::new(DeviceStream { stream: Stream::new(StreamFlags::DEFAULT, None)?, context: context.clone() });
        streams.push((ordinal, Arc::downgrade(&stream)));
        Ok(stream)
    }
}

impl Drop for DeviceStream {
    fn drop(&mut self) {
        // The last handle may be dropped on a thread that never used the device: the stream is
        // destroyed in its own context. If binding fails the destructor's error is ignored.
        let _ = bind(&self.context);
    }
}

impl std::ops::Deref for DeviceStream {
    type Target = Stream;
    fn deref(&self) -> &Stream {
        &self.stream
    }
}

/// A module and the entry points taken from it (fields drop in order: functions first).
struct Loaded {
    functions: HashMap<String, Function<'static>>,
    _module: Module,
}

/// Loads `ptx` and looks up each of its entries that `keep` accepts.
fn load(ptx: &str, keep: impl Fn(&str) -> bool) -> Result<Loaded> {
    let module = Module::from_ptx(ptx, &[])?;
    let mut functions = HashMap::new();
    for name in ptx_entries(ptx).filter(|name| keep(name)) {
        let function = module.get_function(name)?;
        // SAFETY: a `Function` is a plain driver handle (no destructor) whose lifetime only ties
        // it to its module. The module is moved into the same `Loaded`, which keeps it until
        // after `functions` is dropped (fields drop in declaration order), and no `Function`
        // ever leaves the `Gpu` that owns the `Loaded`. Moving the `Module` value does not move
        // the driver's module.
        let function: Function<'static> = unsafe { std::mem::transmute::<Function<'_>, Function<'static>>(function) };
        functions.insert(name.to_string(), function);
    }
    Ok(Loaded { functions, _module: module })
}

/// What the harness and the launch plans need to know about the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device ordinal `Gpu::with_device` opened.
    pub ordinal: u32,
    /// e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// Streaming multiprocessors (sizes grid-stride launches).
    pub multiprocessors: u32,
    /// (major, minor), e.g. (9, 0) for Hopper.
    pub compute_capability: (u32, u32),
    /// Device memory in bytes.
    pub memory_bytes: u64,
    /// L2 cache in bytes (`CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE`): the L2 the model follows this
    /// device's memory through ([`crate::model::Device`]).
    pub l2_bytes: u64,
}

impl Gpu {
    /// Opens device 0 and loads the embedded PTX. Fails with [`Error::NoGpu`] where there is no
    /// driver or no device.
    pub fn new() -> Result<Self> {
        Self::with_device(0)
    }

    /// Opens device `ordinal` and loads the embedded PTX.
    pub fn with_device(ordinal: u32) -> Result<Self> {
        // SAFETY: the embedded module is this crate's own kernels, built from the source the
        // launchers were written against (a test fails when the shipped PTX is stale).
        unsafe { Self::open(ordinal, crate::PTX) }
    }

    /// Opens device `ordinal` with another PTX module as the base module (e.g. one built for a
    /// newer arch by `cargo xtask build-ptx`).
    ///
    /// # Safety
    /// Every launcher trusts the kernels it names to compute the indices its plan proved in
    /// bounds: `ptx` must be built from this version of `coalesce-kernels`, so each entry has
    /// the name, parameters and index math the launchers assume. Foreign PTX can read and write
    /// any device memory.
    pub unsafe fn open(ordinal: u32, ptx: &str) -> Result<Self> {
        let no_gpu = |e: cust::error::CudaError| Error::NoGpu(crate::error::cuda_message(&e));
        let count = Self::device_count()?;
        if ordinal >= count {
            return Err(Error::NoGpu(format!("device {ordinal} requested, the driver reports {count}")));
        }
        let device = Device::get_device(ordinal).map_err(no_gpu)?;
        let context = Context::new(device)?;
        bind(&context)?;
        let Loaded { functions, _module: module } = load(ptx, |_| true)?;
        let stream = DeviceStream::of(ordinal, &context)?;
        let attribute = |a| device.get_attribute(a).map(|v| v as u32);
        let info = DeviceInfo {
            ordinal,
            name: device.name()?,
            multiprocessors: attribute(DeviceAttribute::MultiprocessorCount)?,
            compute_capability: (
                attribute(DeviceAttribute::ComputeCapabilityMajor)?,
                attribute(DeviceAttribute::ComputeCapabilityMinor)?,
            ),
            memory_bytes: device.total_memory()? as u64,
            l2_bytes: attribute(DeviceAttribute::L2CacheSize)?.into(),
        };
        Ok(Gpu {
            functions,
            hopper: OnceLock::new(),
            base_only: false,
            result_slot: Mutex::new(None),
            peers: Mutex::new(Vec::new()),
            stream,
            info,
            _module: module,
            context,
        })
    }

    /// The same handle, never loading the Hopper module: every kernel of it is refused with
    /// [`Error::ModuleUnavailable`] as on a GPU older than compute capability 9.0, and
    /// [`crate::matmul::matmul`] picks base-module kernels. What a pre-Hopper GPU runs, on a
    /// Hopper one (the harness sets it for `COALESCE_BASE_MODULE_ONLY=1`).
    pub fn base_module_only(mut self) -> Self {
        self.base_only = true;
        self
    }

    /// Whether the kernels of `module` can run here: `Ok` for the base module; for the Hopper
    /// module, loads it on first call where the compute capability is at least 9.0, else (or if
    /// the driver refuses it) the reason, as [`Error::ModuleUnavailable`] for `kernel`. Hidden: the
    /// lesson harness keeps a variant's kernels as modules and names, apart from their typed
    /// handles; a program asks [`Gpu::supports`].
    #[doc(hidden)]
    pub fn module_ready(&self, module: PtxModule, kernel: &'static str) -> Result<()> {
        match module {
            PtxModule::Base => Ok(()),
            PtxModule::Hopper => self.hopper().map(|_| ()).map_err(|e| match e {
                Error::ModuleUnavailable { needs, why, .. } => Error::ModuleUnavailable { kernel, needs, why },
                other => other,
            }),
        }
    }

    /// Whether `kernel` can run on this device: `Ok` for a base-module kernel; for a Hopper-module
    /// one, loads that module on first call where the compute capability is at least 9.0, else
    /// (or if the driver refuses it) the reason, as [`Error::ModuleUnavailable`].
    pub fn supports<Sig>(&self, kernel: Kernel<Sig>) -> Result<()> {
        self.module_ready(kernel.module(), kernel.name())
    }

    /// The Hopper module, loaded on first use. A refusal is not remembered: the next use tries
    /// again (the driver may have been short of memory, say).
    fn hopper(&self) -> Result<&Loaded> {
        if let Some(loaded) = self.hopper.get() {
            return Ok(loaded);
        }
        let needs = PtxModule::Hopper.min_compute_capability();
        let unavailable = |why: String| Error::ModuleUnavailable {
            kernel: "(hopper module)",
            needs: format!("compute capability {}.{} (sm_90 PTX, ISA 8.3)", needs.0, needs.1),
            why,
        };
        if self.base_only {
            return Err(unavailable("this handle loads the base module only (Gpu::base_module_only)".into()));
        }
        let have = self.info.compute_capability;
        if have < needs {
            return Err(unavailable(format!("{} has compute capability {}.{}", self.info.name, have.0, have.1)));
        }
        bind(&self.context)?;
        // Entries the base module has stay there: only the Hopper kernels come from here.
        let loaded = load(crate::PTX_SM90, |name| !self.functions.contains_key(name))
            .map_err(|e| unavailable(format!("the driver refused the sm_90 module: {e}")))?;
        // Two threads may both load it: the first to get here keeps its module, the other's is
        // unloaded (dropped with the closure).
        Ok(self.hopper.get_or_init(|| loaded))
    }

    /// The loaded function for `kernel`.
    fn function<Sig>(&self, kernel: Kernel<Sig>) -> Result<&Function<'static>> {
        let name = kernel.name();
        let functions = match kernel.module() {
            PtxModule::Base => &self.functions,
            PtxModule::Hopper => {
                self.module_ready(PtxModule::Hopper, name)?;
                &self.hopper()?.functions
            }
        };
        // A base-module build for sm_90 holds the Hopper kernels too: look there as well.
        functions
            .get(name)
            .or_else(|| self.functions.get(name))
            .ok_or_else(|| Error::Unsupported(format!("kernel {name} is not in the loaded PTX module")))
    }

    /// The device's name, e.g. "NVIDIA H100 80GB HBM3".
    pub fn name(&self) -> &str {
        &self.info.name
    }

    /// Streaming multiprocessors on the device (sizes grid-stride launches).
    pub fn multiprocessors(&self) -> u32 {
        self.info.multiprocessors
    }

    /// Everything known about the device.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The driver's CUDA version, e.g. "13.0".
    pub fn driver_version(&self) -> Result<String> {
        let v = cust::CudaApiVersion::get()?;
        Ok(format!("{}.{}", v.major(), v.minor()))
    }

    /// How many CUDA devices the driver reports (ordinals `0..count` open with
    /// [`Gpu::with_device`]); [`Error::NoGpu`] where there is no driver.
    pub fn device_count() -> Result<u32> {
        let no_gpu = |e: cust::error::CudaError| Error::NoGpu(crate::error::cuda_message(&e));
        cust::init(cust::CudaFlags::empty()).map_err(no_gpu)?;
        Device::num_devices().map_err(no_gpu)
    }

    /// Whether this device can map `peer`'s memory (`cuDeviceCanAccessPeer`); `true` for the
    /// same device.
    pub fn can_access_peer(&self, peer: &Gpu) -> Result<bool> {
        let (here, there) = (self.info.ordinal, peer.info.ordinal);
        if here == there {
            return Ok(true);
        }
        crate::driver::can_access_peer(here, there)
    }

    /// Whether this device's atomics on `peer`'s memory are atomics on the link
    /// (`CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED`, NVLink; `true` for the same device):
    /// where not, a kernel that adds into `peer`'s memory with atomics (the sums, the
    /// histograms) is refused with [`Error::Unsupported`] after [`Gpu::enable_peer_access`].
    pub fn native_peer_atomics(&self, peer: &Gpu) -> Result<bool> {
        let (here, there) = (self.info.ordinal, peer.info.ordinal);
        if here == there {
            return Ok(true);
        }
        crate::driver::native_peer_atomics(here, there)
    }

    /// Maps `peer`'s memory into this device's context, so this handle's kernels may read and
    /// write `peer`'s buffers (over NVLink or PCIe) and [`Gpu::launch`] accepts them (the base
    /// module's kernels; the Hopper module's TMA, bulk-copy and cluster kernels are refused with
    /// [`Error::Unsupported`] over another device's memory). Such a launch is ordered after all
    /// work already queued on the other device (it waits for it first) and returns only when
    /// the kernel has finished, since the other device's `cuMemFree` would not wait for this
    /// device's stream. Mapping is one-way (call it
    /// on `peer` for the other direction) and lasts as long as this handle; the same device, or
    /// mapping twice, is no error. [`Error::NoPeer`] where the hardware cannot map it.
    pub fn enable_peer_access(&self, peer: &Gpu) -> Result<()> {
        let there = peer.info.ordinal;
        if there == self.info.ordinal {
            return Ok(());
        }
        let mut peers = self.peers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if peers.iter().any(|p| p.ordinal == there) {
            return Ok(());
        }
        if !self.can_access_peer(peer)? {
            return Err(Error::NoPeer(format!(
                "device {} cannot map device {there}'s memory (cuDeviceCanAccessPeer)",
                self.info.ordinal
            )));
        }
        bind(&self.context)?;
        // SAFETY: this handle's context is current (bound above); `peer.context` is device
        // `there`'s live primary context, another device's (checked above).
        unsafe { crate::driver::enable_peer_access(&peer.context)? };
        let native_atomics = crate::driver::native_peer_atomics(self.info.ordinal, there)?;
        peers.push(Peer { ordinal: there, context: peer.context.clone(), native_atomics });
        Ok(())
    }

    /// Copies `src` into `dst` where the two live on different devices (or the same one), with
    /// the driver's peer copy (`cuMemcpyPeerAsync` on this handle's stream), and waits for it:
    /// the copy the peer lessons are measured against. It starts after the work already queued
    /// on both devices. Needs no [`Gpu::enable_peer_access`]
    /// (without a mapping the driver stages the copy through the host).
    pub fn memcpy_peer<T: DeviceCopy>(&self, src: &impl DeviceRead<T>, dst: &mut impl DeviceWrite<T>) -> Result<()> {
        let (src, dst) = (src.view(), dst.view_mut());
        exactly("peer copy destination", dst.len(), src.len())?;
        let (src_context, dst_context) = (src.home().context()?, dst.home().context()?);
        // Work queued on either device's streams comes first: this stream waits for neither.
        self.finish([src_context, dst_context])?;
        // SAFETY: both views are live device memory of the contexts they name, of equal length,
        // borrowed for this call (shared and exclusive, so they do not overlap); the call waits
        // for the copy below before the borrows end, so neither can be freed or written during
        // it.
        unsafe {
            let bytes = src.len() * std::mem::size_of::<T>();
            crate::driver::copy_peer_async(
                src.address(),
                src_context,
                dst.address(),
                dst_context,
                bytes,
                self.stream.as_inner(),
            )?;
        }
        Ok(self.stream.synchronize()?)
    }

    /// Waits for everything queued so far; a kernel that failed reports its error here.
    pub fn synchronize(&self) -> Result<()> {
        bind(&self.context)?;
        Ok(self.stream.synchronize()?)
    }

    /// Waits for all work queued on the mapped devices `ordinals` (every stream of their
    /// contexts), then makes this handle's context current again.
    fn finish_peers(&self, ordinals: &[u32]) -> Result<()> {
        if ordinals.is_empty() {
            return Ok(());
        }
        let peers = self.peers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        self.finish(peers.iter().filter(|p| ordinals.contains(&p.ordinal)).map(|p| &p.context))
    }

    /// Waits for all work queued in each of `contexts` (every stream of it), then makes this
    /// handle's context current again.
    fn finish<'c>(&self, contexts: impl IntoIterator<Item = &'c Context>) -> Result<()> {
        for context in contexts {
            bind(context)?;
            cust::context::CurrentContext::synchronize()?;
        }
        bind(&self.context)
    }

    /// `Ok(false)` where `memory` is on this handle's device, `Ok(true)` where it is on a device
    /// whose memory this context maps ([`Gpu::enable_peer_access`]); the model's stand-ins never
    /// are device memory.
    fn check_device(&self, what: &'static str, device: ArgDevice) -> Result<bool> {
        let gpu = self.info.ordinal;
        match device {
            ArgDevice::None => Ok(false),
            ArgDevice::Device(d) if d == gpu => Ok(false),
            ArgDevice::Device(buffer) => {
                let peers = self.peers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                if peers.iter().any(|p| p.ordinal == buffer) {
                    Ok(true)
                } else {
                    Err(Error::WrongDevice { what, buffer, gpu })
                }
            }
            ArgDevice::Modelled => Err(Error::Unsupported(format!("{what} is a modelled buffer, not device memory"))),
        }
    }

    /// `Ok` where `home` is this handle's device (the driver's copies here stay on one device).
    fn check_home(&self, what: &'static str, home: Home<'_>) -> Result<()> {
        let gpu = self.info.ordinal;
        match ArgDevice::of(home) {
            ArgDevice::Device(buffer) if buffer != gpu => Err(Error::WrongDevice { what, buffer, gpu }),
            device => self.check_device(what, device).map(|_| ()),
        }
    }

    /// Everything [`Gpu::launch`] checks before it queues `call`, queueing nothing: the driver's
    /// launch limits, the kernel's launch bounds, where each buffer lives (this device, or one
    /// it maps) and whether the kernel's module runs here. An entry point that writes before its
    /// launch (a zeroed total, cleared bins) calls this first, so a refused call writes nothing.
    pub(crate) fn admit<'a, Sig: Signature<'a>>(&self, call: &Call<'a, Sig>) -> Result<()> {
        self.admitted(call).map(|_| ())
    }

    /// [`Gpu::admit`], returning the other devices whose memory the call touches.
    fn admitted<'a, Sig: Signature<'a>>(&self, call: &Call<'a, Sig>) -> Result<Vec<u32>> {
        let launch = call.launch();
        launch.check_limits()?;
        if let Some((max_threads, _)) = call.kernel().launch_bounds() {
            // The PTX declares `.maxntid`: the driver refuses a larger block.
            in_range("threads per block (launch bounds)", launch.block_threads(), 1, max_threads.into())?;
        }
        let mut remote = Vec::new();
        for device in Sig::devices(call.args()) {
            if self.check_device("a kernel argument", device)?
                && let ArgDevice::Device(ordinal) = device
                && !remote.contains(&ordinal)
            {
                remote.push(ordinal);
            }
        }
        if !remote.is_empty() && call.kernel().module() == PtxModule::Hopper {
            // The Hopper module's kernels move memory with the TMA, bulk copies and clusters,
            // none of which has been run over another device's memory here: refused rather than
            // risk a fault that would end the context.
            return Err(Error::Unsupported(format!(
                "{} (Hopper module) over another device's memory: only the base module's kernels \
                 run across devices",
                call.kernel().name()
            )));
        }
        if call.atomic() {
            let peers = self.peers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            for device in Sig::outputs(call.args()) {
                if let ArgDevice::Device(ordinal) = device
                    && peers.iter().any(|p| p.ordinal == ordinal && !p.native_atomics)
                {
                    return Err(Error::Unsupported(format!(
                        "{} adds into device {ordinal}'s memory with atomics, and the link from device {} \
                         does not do them natively (PCIe): counts would be lost",
                        call.kernel().name(),
                        self.info.ordinal
                    )));
                }
            }
        }
        self.function(call.kernel())?;
        Ok(remote)
    }

    /// Queues a planned kernel launch on the device's stream, after its checks: the driver's
    /// limits, the kernel's launch bounds, where each buffer lives and whether the module runs here.
    pub fn launch<'a, Sig: Signature<'a>>(&self, call: Call<'a, Sig>) -> Result<()> {
        let remote = self.admitted(&call)?;
        let launch = call.launch();
        // Work the other devices queued on that memory runs on their streams, which this stream
        // does not wait for: let it finish first, so the kernel reads what the program wrote.
        self.finish_peers(&remote)?;
        bind(&self.context)?;
        let function = self.function(call.kernel())?;
        if launch.shared_bytes > DEFAULT_SHARED_BYTES {
            // SAFETY: `function` is a live handle of this context's modules, current above.
            unsafe { crate::driver::allow_shared_bytes(function.to_raw(), launch.shared_bytes)? };
        }
        let mut args = call.arg_pointers();
        // SAFETY: `call` was made by `Call::new`, whose contract (established by the plan that
        // validated the sizes) is that every address the kernel computes for this launch lies
        // inside memory borrowed for the call's lifetime; that memory is on this device, whose
        // context is current, or on a device this context maps (both checked above); the
        // argument values have the kernel's parameter types in order (`Signature`, checked at
        // compile time) and live in `call` until `cuLaunchKernel` has copied them. A buffer of
        // this device freed later is freed by `cuMemFree`, which waits for the queued kernel;
        // one of another device is not waited for there, so such a launch is waited for below,
        // before its borrows end.
        // With clusters (launch.cluster > 1, checked to divide the grid) the launch goes through
        // `cuLaunchKernelEx` with the same arguments.
        unsafe {
            if launch.cluster > 1 {
                crate::driver::launch_cluster(
                    function.to_raw(),
                    self.stream.as_inner(),
                    launch.grid,
                    launch.block,
                    launch.shared_bytes,
                    launch.cluster,
                    args.as_mut_slice(),
                )?;
            } else {
                self.stream.launch(function, launch.grid, launch.block, launch.shared_bytes, args.as_mut_slice())?;
            }
        }
        if !remote.is_empty() {
            self.stream.synchronize()?;
        }
        Ok(())
    }

    /// Device-to-device copy of `src` into `dst` on the stream (`cuMemcpyDtoDAsync`): the
    /// bandwidth baseline every kernel is compared with.
    pub fn memcpy<T: DeviceCopy>(&self, src: &impl DeviceRead<T>, dst: &mut impl DeviceWrite<T>) -> Result<()> {
        let (src, dst) = (src.view(), dst.view_mut());
        exactly("memcpy destination", dst.len(), src.len())?;
        self.check_home("memcpy source", src.home())?;
        self.check_home("memcpy destination", dst.home())?;
        bind(&self.context)?;
        // SAFETY: both views are live memory of this device's context (current), of equal
        // length, borrowed for the call (shared and exclusive, so they do not overlap); the copy
        // is ordered on our stream before any later use of `dst`, and a free waits for it.
        unsafe {
            let bytes = src.len() * std::mem::size_of::<T>();
            crate::driver::copy_device_async(src.address(), dst.address(), bytes, self.stream.as_inner())
        }
    }

    /// Queues setting every element of `memory` to zero (`cuMemsetD32Async`): memory of this
    /// device, or of a device it maps ([`Gpu::enable_peer_access`]), which is zeroed after the
    /// work already queued there and waited for, as a launch over it is.
    pub fn zero<T: DeviceCopy + bytemuck::Pod>(&self, memory: &mut impl DeviceWrite<T>) -> Result<()> {
        words::<T>("zeroed buffer")?;
        let memory = memory.view_mut();
        let device = ArgDevice::of(memory.home());
        let remote = self.check_device("zeroed buffer", device)?;
        if let (true, ArgDevice::Device(ordinal)) = (remote, device) {
            self.finish_peers(&[ordinal])?;
        }
        bind(&self.context)?;
        // SAFETY: `memory` is live memory of this device's context (current) or of a device
        // this context maps (checked above), borrowed exclusively, 4-byte aligned (allocations
        // are 256-byte aligned and `T` is whole words); the memset is ordered on our stream
        // before any later work of this device that touches it, and waited for below where the
        // memory is another device's (whose streams and frees do not wait for ours); zero bits
        // are a valid `Pod` value.
        unsafe {
            let words = memory.len() * std::mem::size_of::<T>() / 4;
            crate::driver::set_words(memory.address(), 0, words, Some(self.stream.as_inner()))?;
        }
        if remote {
            self.stream.synchronize()?;
        }
        Ok(())
    }

    /// A device buffer holding a copy of `data`.
    pub fn upload<T: DeviceCopy>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        // SAFETY: every element is written by the copy below before the buffer is returned.
        let mut buffer = unsafe { self.uninitialized(data.len())? };
        buffer.copy_from_host(data)?;
        Ok(buffer)
    }

    /// A device buffer of `len` elements whose contents are whatever the allocator left there.
    ///
    /// # Safety
    /// Every element must be written (by a kernel, a copy or a fill) before anything reads it.
    pub unsafe fn uninitialized<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        bind(&self.context)?;
        // SAFETY: the context is current; the caller writes every element before reading it.
        unsafe { DeviceBuffer::uninitialized(&self.context, self.info.ordinal, len) }
    }

    /// A device buffer of `len` elements, every 32-bit word of it set to `bits`, so an element
    /// the kernel should have written but did not is caught by the comparison. `len` may be 0.
    pub fn poisoned<T: DeviceCopy + bytemuck::Pod>(&self, len: usize, bits: u32) -> Result<DeviceBuffer<T>> {
        words::<T>("poisoned buffer")?;
        // SAFETY: every word is written by the memset below before anyone reads it, and every
        // bit pattern is a valid value of a `Pod` type.
        let buffer = unsafe { self.uninitialized::<T>(len)? };
        let words = len * std::mem::size_of::<T>() / 4;
        if words > 0 {
            // SAFETY: the whole fresh allocation (256-byte aligned), in the current context;
            // nothing else holds it yet.
            unsafe { crate::driver::set_words(buffer.address(), bits, words, None)? };
        }
        Ok(buffer)
    }

    /// Runs `f` with the handle's result buffer of at least `words` u64 (allocated zeroed on first
    /// use, and again, larger, when a call needs more), which no other call holds meanwhile.
    pub(crate) fn with_result_slot<R>(
        &self,
        words: usize,
        f: impl FnOnce(&mut DeviceBuffer<u64>) -> Result<R>,
    ) -> Result<R> {
        // A panic in another holder leaves nothing half-done that matters: each user rewrites
        // what it reads (the float sums' counter is back at 0 when their kernel ends).
        let mut slot = self.result_slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let buffer = match slot.take() {
            Some(buffer) if buffer.len() >= words => slot.insert(buffer),
            // A smaller one is freed after the work queued on it (`cuMemFree` waits for it).
            _ => slot.insert(self.poisoned::<u64>(words, 0)?),
        };
        f(buffer)
    }

    /// The device's stream, this handle's context made current (what [`crate::timing`] records
    /// its events on).
    #[cfg(feature = "model")]
    pub(crate) fn bound_stream(&self) -> Result<&Stream> {
        bind(&self.context)?;
        Ok(&self.stream.stream)
    }
}

/// The `.entry` names a PTX module defines, in order.
pub(crate) fn ptx_entries(ptx: &str) -> impl Iterator<Item = &str> {
    ptx.lines()
        .filter_map(|l| l.trim_start().strip_prefix(".visible .entry "))
        .map(|rest| rest.split(['(', ' ']).next().unwrap_or(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_can_be_shared_by_threads() {
        fn send_sync<X: Send + Sync>() {}
        send_sync::<Gpu>();
    }

    #[test]
    fn entries_are_read_from_ptx_text() {
        let ptx = ".visible .entry foo(\n.param .u64 a\n)\n.func bar()\n.visible .entry baz()\n";
        assert_eq!(ptx_entries(ptx).collect::<Vec<_>>(), ["foo", "baz"]);
    }

    #[test]
    fn declared_launch_bounds_reach_the_embedded_ptx() {
        use coalesce_kernels::matmul::{matmul_warptile, matmul_warptile_edge, matmul_warptile_small};
        for (kernel, bounds) in
            [(matmul_warptile, (256, 2)), (matmul_warptile_edge, (256, 2)), (matmul_warptile_small, (128, 2))]
        {
            assert_eq!(kernel.launch_bounds(), Some(bounds));
            let header = format!(".visible .entry {}(", kernel.name());
            let entry = &crate::PTX[crate::PTX.find(&header).expect("entry in the PTX")..];
            let head = &entry[..entry.find('{').unwrap()];
            let want = format!(".maxntid {}, 1, 1\n.minnctapersm {}\n", bounds.0, bounds.1);
            assert!(head.ends_with(&want), "{head}");
        }
        assert_eq!(coalesce_kernels::matmul::matmul_regblock.launch_bounds(), None);
    }

    #[test]
    fn every_declared_kernel_is_in_the_embedded_ptx() {
        let entries: Vec<&str> = ptx_entries(crate::PTX).collect();
        assert!(entries.contains(&coalesce_kernels::util::util_fill.name()));
        assert!(entries.contains(&coalesce_kernels::coalescing::coalescing_vec4.name()));
    }

    /// The builder's default arch (not a dependency of the library itself).
    fn coalesce_builder_default_arch() -> &'static str {
        "sm_75"
    }

    #[test]
    fn hopper_kernels_are_only_in_the_hopper_module() {
        use coalesce_kernels::{coalescing, histogram, matmul, transpose};
        let base: Vec<&str> = ptx_entries(crate::PTX).collect();
        let hopper: Vec<&str> = ptx_entries(crate::PTX_SM90).collect();
        for kernel in [
            coalescing::coalescing_cp_async.name(),
            coalescing::coalescing_bulk.name(),
            matmul::matmul_cp_async.name(),
            histogram::histogram_cluster.name(),
        ] {
            assert!(hopper.contains(&kernel), "{kernel}");
            if crate::PTX_ARCH == coalesce_builder_default_arch() {
                assert!(!base.contains(&kernel), "{kernel} in the sm_75 module");
            }
        }
        assert!(hopper.contains(&transpose::transpose_tma.name()));
        assert_eq!(transpose::transpose_tma.module(), PtxModule::Hopper);
        assert_eq!(histogram::histogram_shared.module(), PtxModule::Base);
        assert_eq!(coalesce_kernels::util::util_fill.module(), PtxModule::Base);
        assert!(crate::PTX_SM90.contains(".target sm_90") && crate::PTX_SM90.contains(".version 8.3"));
    }
}
