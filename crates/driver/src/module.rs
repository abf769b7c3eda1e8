//! Modules, libraries, functions and kernels.
//!
//! A *module* (`CUmodule`) is code loaded into one context. A *library*
//! (`CUlibrary`, CUDA 12) is context-independent: its code is loaded per
//! device on first use, and each context sees it through a module of its
//! own (`cuLibraryGetModule`). A *kernel* (`CUkernel`) is a library's
//! context-independent name for an entry; `cuKernelGetFunction` turns it
//! into the `CUfunction` of the current context. CUDA 13 cudart passes
//! `CUkernel`s wherever a `CUfunction` is expected, so every function
//! argument accepts both ([`Driver::resolve_function`]).
//!
//! Images arrive as [`fatbin::Image`]s: a fatbin (from a wrapper or not),
//! PTX text, or an ELF cubin. Only PTX can run; the entry is chosen for
//! the device's compute capability under [`crate::Config::ptx_policy`],
//! and an image without usable PTX fails with
//! `CUDA_ERROR_NO_BINARY_FOR_GPU` and a log that says why.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::backend::{BackendModule, GlobalDesc, KernelDesc, ModuleErrorKind, ModuleOptions};
use crate::error::{Error, Result};
use crate::handle::{handle_kind, lock, HandleKind};
use crate::props::COMPUTE_CAPABILITY_ENV;
use crate::Driver;

/// The JIT logs of a load, for `CU_JIT_INFO_LOG_BUFFER` and
/// `CU_JIT_ERROR_LOG_BUFFER`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JitLog {
    pub info: String,
    pub error: String,
    /// `CU_JIT_WALL_TIME`, milliseconds.
    pub wall_ms: f32,
}

/// The PTX chosen from an image, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedImage {
    pub ptx: String,
    /// "PTX text", "fatbin entry 2 (compute_86, PTX ISA 8.6)".
    pub source: String,
}

/// Where a module's image comes from.
#[derive(Debug, Clone, Copy)]
pub enum ModuleSource<'a> {
    Image(&'a fatbin::Image<'a>),
    /// Already-selected PTX text.
    Ptx(&'a str),
    /// The image of a program built with relocatable device code
    /// (`nvcc -rdc=true`): a version-2 fatbin wrapper whose own fatbin
    /// (nvlink's output: machine code, if any) comes with the *prelinked*
    /// fatbins of each translation unit. Without usable PTX in the image,
    /// the prelinked fatbins' PTX is linked, as NVIDIA's driver JIT-links
    /// them.
    Prelinked {
        image: &'a fatbin::Image<'a>,
        parts: &'a [fatbin::Image<'a>],
    },
}

/// Functions every backend supplies itself: a PTX module calls them
/// without defining them (`printf`, `malloc`, `free`, `assert`).
pub const PROVIDED_FUNCTIONS: &[&str] = ptx::DRIVER_FUNCTIONS;

/// One input of a link: its PTX, and whether it is an archive member
/// (linked only when it defines something still undefined).
#[derive(Debug, Clone)]
pub struct LinkPart {
    pub name: String,
    pub ptx: String,
    pub lazy: bool,
}

/// A library kernel's handle and the settings its functions share.
type KernelAttrs = (u64, Arc<Mutex<FuncAttrs>>);

/// Per-function settings (`cuFuncSetAttribute`, `cuFuncSetCacheConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FuncAttrs {
    /// `None`: the default, 48 KiB minus the static shared memory.
    pub max_dynamic_shared: Option<u32>,
    pub carveout: i32,
    pub cache_config: u32,
    pub shared_config: u32,
    pub required_cluster: [u32; 3],
    pub non_portable_cluster: bool,
    pub cluster_scheduling: u32,
}

impl Default for FuncAttrs {
    fn default() -> Self {
        FuncAttrs {
            max_dynamic_shared: None,
            carveout: -1,
            cache_config: 0,
            shared_config: 0,
            required_cluster: [0; 3],
            non_portable_cluster: false,
            cluster_scheduling: 0,
        }
    }
}

pub(crate) struct Module {
    pub handle: u64,
    pub ctx: u64,
    pub code: Arc<dyn BackendModule>,
    pub functions: Vec<u64>,
    /// The library this module is a per-context view of.
    pub library: Option<u64>,
}

pub(crate) struct Function {
    pub handle: u64,
    pub module: u64,
    pub ctx: u64,
    pub device: usize,
    pub index: usize,
    pub desc: KernelDesc,
    pub code: Arc<dyn BackendModule>,
    pub attrs: Arc<Mutex<FuncAttrs>>,
    /// The library kernel this function is the per-context form of.
    pub kernel: Option<u64>,
}

pub(crate) struct Library {
    pub handle: u64,
    pub ptx: Arc<str>,
    pub options: ModuleOptions,
    pub names: Vec<String>,
    pub kernels: Vec<u64>,
    pub per_device: Mutex<HashMap<usize, Arc<dyn BackendModule>>>,
    /// Context -> the module that is this library in it.
    pub per_ctx: Mutex<HashMap<u64, u64>>,
}

pub(crate) struct Kernel {
    pub handle: u64,
    pub library: u64,
    pub index: usize,
    pub name: String,
    pub attrs: Arc<Mutex<FuncAttrs>>,
}

/// `cuLinkCreate` state: PTX inputs collected until `cuLinkComplete`.
pub(crate) struct LinkState {
    pub handle: u64,
    pub options: ModuleOptions,
    pub inputs: Mutex<Vec<LinkPart>>,
    pub output: Mutex<Option<Vec<u8>>>,
}

pub(crate) fn module_error(e: crate::backend::ModuleError) -> Error {
    match e.kind {
        ModuleErrorKind::InvalidPtx => Error::InvalidPtx(e.log),
        ModuleErrorKind::UnsupportedPtxVersion => Error::UnsupportedPtxVersion(e.log),
        ModuleErrorKind::OutOfMemory => Error::OutOfMemory(e.log),
        ModuleErrorKind::Other => Error::Unknown(e.log),
    }
}

fn sm_list(archs: &[u32]) -> String {
    if archs.is_empty() {
        return "no architecture".into();
    }
    archs.iter().map(|a| format!("sm_{a}")).collect::<Vec<_>>().join(", ")
}

impl Driver {
    /// Chooses the PTX of `image` for a device of compute capability
    /// `target` (major * 10 + minor).
    pub fn select_ptx(&self, image: &fatbin::Image<'_>, target: u32) -> Result<LoadedImage> {
        match image {
            fatbin::Image::Ptx(text) => Ok(LoadedImage { ptx: text.to_string(), source: "PTX text".into() }),
            fatbin::Image::Cubin(c) => Err(Error::NoBinaryForGpu(format!(
                "the image is an ELF cubin (NVIDIA machine code for {}); anycuda runs PTX only: \
                 rebuild with PTX embedded (e.g. nvcc -gencode arch=compute_{t},code=compute_{t})",
                sm_list(&c.arch().into_iter().collect::<Vec<_>>()),
                t = target.min(90)
            ))),
            fatbin::Image::Fatbin { fatbin, .. } => {
                let e = match fatbin.select_ptx(target, self.config.ptx_policy) {
                    Ok(e) => e,
                    Err(fatbin::Error::NoPtx { archs }) => {
                        // A fatbin of exactly the device's architecture was
                        // chosen for it: libraries that keep one fatbin per
                        // architecture and a PTX one for the others (NVIDIA's
                        // cuRAND) take their PTX on a device they have no
                        // machine code for.
                        let hint = if archs.contains(&target) {
                            format!(
                                "; if a library chose it for compute capability {}.{}, \
                                 {COMPUTE_CAPABILITY_ENV}=8.8 may make it choose its PTX",
                                target / 10,
                                target % 10
                            )
                        } else {
                            String::new()
                        };
                        return Err(Error::NoBinaryForGpu(format!(
                            "the fatbin holds only NVIDIA machine code (SASS for {}) and no PTX; \
                             anycuda runs PTX only: rebuild with PTX embedded \
                             (e.g. nvcc -gencode arch=compute_{t},code=compute_{t}){hint}",
                            sm_list(&archs),
                            t = target.min(90)
                        )));
                    }
                    Err(fatbin::Error::NoCompatiblePtx { ptx_archs, .. }) => {
                        return Err(Error::NoBinaryForGpu(format!(
                            "no PTX usable for compute capability {}.{} under the {:?} policy \
                             (PTX present for {}); set ANYCUDA_PTX_POLICY=nearest or \
                             ANYCUDA_COMPUTE_CAPABILITY",
                            target / 10,
                            target % 10,
                            self.config.ptx_policy,
                            sm_list(&ptx_archs)
                        )))
                    }
                    Err(e) => return Err(Error::InvalidImage(e.to_string())),
                };
                let text = e.ptx_text().map_err(|e| Error::InvalidImage(e.to_string()))?;
                let version = e.ptx_version().map(|v| format!(", PTX ISA {}.{}", v.major, v.minor)).unwrap_or_default();
                Ok(LoadedImage {
                    ptx: text.into_owned(),
                    source: format!("fatbin entry {} of {} ({}{version})", e.index() + 1, fatbin.entries().len(), e.arch_name()),
                })
            }
        }
    }

    fn compile(&self, device: usize, ptx: &str, options: &ModuleOptions, log: &mut JitLog) -> Result<Arc<dyn BackendModule>> {
        let t = Instant::now();
        let r = self.backend.load_module(device, ptx, options);
        log.wall_ms = t.elapsed().as_secs_f32() * 1e3;
        match r {
            Ok(m) => {
                let mut info = format!(
                    "anycuda: loaded {} for {} (compute capability {}.{}): {} kernel(s), {} variable(s)",
                    options.source,
                    self.backend.name(),
                    options.target / 10,
                    options.target % 10,
                    m.kernels().len(),
                    m.globals().len()
                );
                let extra = m.info_log();
                if !extra.is_empty() {
                    info.push('\n');
                    info.push_str(&extra);
                }
                log.info = if log.info.is_empty() { info } else { format!("{}\n{info}", log.info) };
                Ok(m)
            }
            Err(e) => {
                log.error = format!("anycuda: cannot load {}: {}", options.source, e.log);
                Err(module_error(e))
            }
        }
    }

    fn resolve_source(&self, source: ModuleSource<'_>, target: u32, log: &mut JitLog) -> Result<LoadedImage> {
        let r = match source {
            ModuleSource::Image(img) => self.select_ptx(img, target),
            ModuleSource::Ptx(p) => Ok(LoadedImage { ptx: p.to_string(), source: "PTX text".into() }),
            ModuleSource::Prelinked { image, parts } => match self.select_ptx(image, target) {
                Err(Error::NoBinaryForGpu(why)) if !parts.is_empty() => self.link_prelinked(parts, target, log).map_err(|e| match e {
                    Error::NoBinaryForGpu(more) => Error::NoBinaryForGpu(format!("{why}; and its prelinked fatbins: {more}")),
                    e => e,
                }),
                r => r,
            },
        };
        // A module that calls functions of anycuda's device library
        // (cooperative groups' grid barrier from libcudadevrt) is linked
        // with it, even alone.
        let r = match r {
            Ok(img) if ptx::may_use_device_library(&img.ptx) => {
                let part = LinkPart { name: img.source.clone(), ptx: img.ptx, lazy: false };
                self.link_parts(std::slice::from_ref(&part), false, log).map(|ptx| LoadedImage { ptx, source: img.source })
            }
            r => r,
        };
        if let Err(e) = &r {
            if log.error.is_empty() {
                log.error = format!("anycuda: {e}");
            }
        }
        r
    }

    /// Links the PTX of an `-rdc` program's prelinked fatbins. Parts
    /// without PTX (device-runtime objects built for machine code only)
    /// are left out, with a line in the info log.
    fn link_prelinked(&self, parts: &[fatbin::Image<'_>], target: u32, log: &mut JitLog) -> Result<LoadedImage> {
        let mut inputs = Vec::new();
        let mut skipped = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            let name = format!("prelinked fatbin {}", i + 1);
            match self.select_ptx(part, target) {
                Ok(img) => inputs.push(LinkPart { name, ptx: img.ptx, lazy: false }),
                Err(Error::NoBinaryForGpu(why)) => skipped.push(format!("anycuda: {name} left out of the link: {why}")),
                Err(e) => return Err(e),
            }
        }
        if inputs.is_empty() {
            return Err(Error::NoBinaryForGpu(format!("none of the {} holds PTX ({})", parts.len(), skipped.join("; "))));
        }
        let n = inputs.len();
        let ptx = self.link_parts(&inputs, true, log)?;
        if !skipped.is_empty() {
            log.info = format!("{}\n{}", skipped.join("\n"), log.info).trim_end().to_string();
        }
        Ok(LoadedImage { ptx, source: format!("relocatable device code: {n} prelinked fatbin(s) with PTX, linked") })
    }

    /// Links PTX inputs into one module's text; errors, and with `verbose`
    /// (`CU_JIT_LOG_VERBOSE`) each decision, go to the logs. A link error is `CUDA_ERROR_INVALID_PTX`.
    pub(crate) fn link_parts(&self, parts: &[LinkPart], verbose: bool, log: &mut JitLog) -> Result<String> {
        // CUDA's device runtime (libcudadevrt), which nvcc links into every
        // -rdc program: the compiler lowers calls to its functions itself
        // (`ptx::DEVICE_RUNTIME_PROVIDED`), so it is left out, recognised
        // from its text without parsing it (50 ms for its 763 KB).
        let (runtime, parts): (Vec<&LinkPart>, Vec<&LinkPart>) = parts.iter().partition(|p| ptx::is_device_runtime_text(&p.ptx));
        let mut modules = Vec::with_capacity(parts.len());
        for p in &parts {
            match ptx::parse(&p.ptx) {
                Ok(m) => modules.push(m),
                Err(d) => {
                    let first = d.to_string();
                    let first = first.lines().next().unwrap_or("").to_string();
                    log.error = format!("anycuda: cannot link {}: its PTX does not parse: {first}", p.name);
                    return Err(Error::InvalidPtx(log.error.clone()));
                }
            }
        }
        // CUDA's device runtime comes with every -rdc program; it is linked
        // only when code calls into it.
        let inputs: Vec<ptx::LinkInput<'_, '_>> = parts
            .iter()
            .zip(&modules)
            .map(|(p, m)| ptx::LinkInput { name: &p.name, module: m, lazy: p.lazy || ptx::is_device_runtime(m) })
            .collect();
        match ptx::link(&inputs, &ptx::LinkOptions { provided: PROVIDED_FUNCTIONS }) {
            Ok(l) => {
                let names: Vec<&str> = l.included.iter().map(|&i| parts[i].name.as_str()).collect();
                let mut info = format!("anycuda: linked {} input(s): {}", names.len(), names.join(", "));
                for p in &runtime {
                    info.push_str(&format!("\nanycuda: {} (CUDA's device runtime) left out: anycuda provides its functions", p.name));
                }
                for line in l.log.iter().filter(|_| verbose) {
                    info.push_str("\nanycuda: ");
                    info.push_str(line);
                }
                log.info = info;
                Ok(l.ptx)
            }
            Err(e) => {
                log.error = e.to_string();
                Err(Error::InvalidPtx(format!("link failed: {}", e.errors.join("; "))))
            }
        }
    }

    /// `cuModuleLoadData[Ex]`, `cuModuleLoadFatBinary`, `cuModuleLoad`:
    /// loads into the current context.
    pub fn module_load(&self, source: ModuleSource<'_>, mut options: ModuleOptions, log: &mut JitLog) -> Result<u64> {
        let ctx = self.current_ctx()?;
        let target = self.device_props(ctx.device as i32)?.compute_capability();
        let img = self.resolve_source(source, target, log)?;
        options.target = target;
        options.source = img.source.clone();
        let code = self.compile(ctx.device, &img.ptx, &options, log)?;
        Ok(self.make_module(ctx.handle, ctx.device, code, None, None, true))
    }

    /// Registers a module object (and its functions) for `code` in `ctx`.
    fn make_module(
        &self,
        ctx: u64,
        device: usize,
        code: Arc<dyn BackendModule>,
        library: Option<u64>,
        kernel_attrs: Option<&[KernelAttrs]>,
        own_globals: bool,
    ) -> u64 {
        let mh = crate::handle::new_handle(HandleKind::Module);
        let functions: Vec<u64> = code
            .kernels()
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let (kernel, attrs) = match kernel_attrs.and_then(|ka| ka.get(i)) {
                    Some((kh, a)) => (Some(*kh), a.clone()),
                    None => (None, Arc::new(Mutex::new(FuncAttrs::default()))),
                };
                self.functions
                    .insert_with(|h| Function {
                        handle: h,
                        module: mh,
                        ctx,
                        device,
                        index: i,
                        desc: k.clone(),
                        code: code.clone(),
                        attrs,
                        kernel,
                    })
                    .handle
            })
            .collect();
        if own_globals {
            self.record_globals(ctx, device, mh, code.globals());
        }
        self.modules.insert_existing(mh, Module { handle: mh, ctx, code, functions, library });
        mh
    }

    pub(crate) fn module(&self, h: u64) -> Result<Arc<Module>> {
        self.modules.get(h).ok_or_else(|| Error::handle(format!("{h:#x} is not a loaded module")))
    }

    /// `cuModuleUnload`.
    pub fn module_unload(&self, h: u64) -> Result<()> {
        self.check_init()?;
        let m = self.module(h)?;
        if m.library.is_some() {
            return Err(Error::handle("a library's module is unloaded with the library"));
        }
        self.drop_module(&m);
        Ok(())
    }

    fn drop_module(&self, m: &Module) {
        self.forget_texrefs(m.handle);
        for f in &m.functions {
            self.functions.remove(*f);
        }
        self.forget_globals(m.handle);
        self.modules.remove(m.handle);
    }

    /// Unloads every module of a context (at its destruction).
    pub(crate) fn unload_modules_of(&self, ctx: u64) {
        for m in self.modules.remove_where(|m| m.ctx == ctx) {
            for f in &m.functions {
                self.functions.remove(*f);
            }
            self.forget_globals(m.handle);
            if let Some(l) = m.library.and_then(|l| self.libraries.get(l)) {
                lock(&l.per_ctx).remove(&ctx);
            }
        }
    }

    /// `cuModuleGetFunction`.
    pub fn module_get_function(&self, h: u64, name: &str) -> Result<u64> {
        self.check_init()?;
        let m = self.module(h)?;
        m.code
            .kernels()
            .iter()
            .position(|k| k.name == name)
            .and_then(|i| m.functions.get(i).copied())
            .ok_or_else(|| Error::NotFound(format!("no kernel named {name:?} in the module")))
    }

    /// `cuModuleGetFunctionCount`.
    pub fn module_function_count(&self, h: u64) -> Result<u32> {
        self.check_init()?;
        Ok(self.module(h)?.functions.len() as u32)
    }

    /// `cuModuleEnumerateFunctions`: all function handles, in PTX order.
    pub fn module_functions(&self, h: u64) -> Result<Vec<u64>> {
        self.check_init()?;
        Ok(self.module(h)?.functions.clone())
    }

    fn find_global(globals: &[GlobalDesc], name: &str) -> Option<(u64, usize)> {
        globals.iter().find(|g| g.name == name).map(|g| (g.address, g.size))
    }

    /// `cuModuleGetGlobal`: (address, size).
    pub fn module_get_global(&self, h: u64, name: &str) -> Result<(u64, usize)> {
        self.check_init()?;
        let m = self.module(h)?;
        Self::find_global(m.code.globals(), name).ok_or_else(|| Error::NotFound(format!("no variable named {name:?} in the module")))
    }

    // ---- functions ----

    /// A function handle, or a kernel handle turned into the function of
    /// the current context.
    pub(crate) fn resolve_function(&self, h: u64) -> Result<Arc<Function>> {
        match handle_kind(h) {
            Some(HandleKind::Function) => self.functions.get(h).ok_or_else(|| Error::handle(format!("{h:#x} is not a live function"))),
            Some(HandleKind::Kernel) => {
                let fh = self.kernel_get_function(h)?;
                self.functions.get(fh).ok_or_else(|| Error::handle("kernel function vanished"))
            }
            _ => Err(Error::handle(format!("{h:#x} is not a function or kernel"))),
        }
    }

    /// `cuFuncGetModule`.
    pub fn func_get_module(&self, f: u64) -> Result<u64> {
        self.check_init()?;
        Ok(self.resolve_function(f)?.module)
    }

    /// `cuFuncGetName` / `cuKernelGetName`.
    pub fn func_get_name(&self, f: u64) -> Result<String> {
        self.check_init()?;
        if handle_kind(f) == Some(HandleKind::Kernel) {
            return Ok(self.kernel(f)?.name.clone());
        }
        let func = self.resolve_function(f)?;
        match func.kernel.and_then(|k| self.kernels.get(k)) {
            Some(k) => Ok(k.name.clone()),
            None => Ok(func.desc.name.clone()),
        }
    }

    /// The kernel's description (`cuFuncGetParamInfo` and friends).
    pub fn func_desc(&self, f: u64) -> Result<KernelDesc> {
        self.check_init()?;
        if handle_kind(f) == Some(HandleKind::Kernel) {
            let k = self.kernel(f)?;
            let l = self.library(k.library)?;
            let code = self.library_code(&l, self.library_device()?)?;
            return code.kernels().get(k.index).cloned().ok_or_else(|| Error::handle("kernel index out of range"));
        }
        Ok(self.resolve_function(f)?.desc.clone())
    }

    /// `cuFuncGetParamInfo`: (offset, size) of parameter `index`.
    pub fn func_param_info(&self, f: u64, index: usize) -> Result<(usize, usize)> {
        let d = self.func_desc(f)?;
        d.params
            .get(index)
            .map(|p| (p.offset as usize, p.size as usize))
            .ok_or_else(|| Error::invalid(format!("parameter {index} of {} does not exist", d.name)))
    }

    // ---- libraries ----

    fn library_device(&self) -> Result<usize> {
        match self.current_ctx_alive() {
            Ok(c) => Ok(c.device),
            Err(Error::InvalidContext) => {
                self.device_props(0)?;
                Ok(0)
            }
            Err(e) => Err(e),
        }
    }

    /// `cuLibraryLoadData` / `cuLibraryLoadFromFile`. The code is loaded
    /// for the current context's device (device 0 without one) at once, to
    /// learn its kernels; other devices load on first use.
    pub fn library_load(&self, source: ModuleSource<'_>, mut options: ModuleOptions, log: &mut JitLog) -> Result<u64> {
        self.check_init()?;
        let device = self.library_device()?;
        let target = self.device_props(device as i32)?.compute_capability();
        let img = self.resolve_source(source, target, log)?;
        options.target = target;
        options.source = img.source.clone();
        let code = self.compile(device, &img.ptx, &options, log)?;
        let names: Vec<String> = code.kernels().iter().map(|k| k.name.clone()).collect();
        let lh = crate::handle::new_handle(HandleKind::Library);
        let kernels: Vec<u64> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                self.kernels
                    .insert_with(|h| Kernel {
                        handle: h,
                        library: lh,
                        index: i,
                        name: n.clone(),
                        attrs: Arc::new(Mutex::new(FuncAttrs::default())),
                    })
                    .handle
            })
            .collect();
        self.record_globals(0, device, lh, code.globals());
        let mut per_device = HashMap::new();
        per_device.insert(device, code);
        self.libraries.insert_existing(
            lh,
            Library {
                handle: lh,
                ptx: img.ptx.into(),
                options,
                names,
                kernels,
                per_device: Mutex::new(per_device),
                per_ctx: Mutex::new(HashMap::new()),
            },
        );
        Ok(lh)
    }

    pub(crate) fn library(&self, h: u64) -> Result<Arc<Library>> {
        self.libraries.get(h).ok_or_else(|| Error::handle(format!("{h:#x} is not a loaded library")))
    }

    pub(crate) fn kernel(&self, h: u64) -> Result<Arc<Kernel>> {
        self.kernels.get(h).ok_or_else(|| Error::handle(format!("{h:#x} is not a live kernel")))
    }

    /// The library's code for `device`, loading it if needed.
    fn library_code(&self, l: &Library, device: usize) -> Result<Arc<dyn BackendModule>> {
        if let Some(c) = lock(&l.per_device).get(&device) {
            return Ok(c.clone());
        }
        let mut log = JitLog::default();
        let mut options = l.options.clone();
        options.target = self.device_props(device as i32)?.compute_capability();
        let code = self.compile(device, &l.ptx, &options, &mut log)?;
        self.record_globals(0, device, l.handle, code.globals());
        Ok(lock(&l.per_device).entry(device).or_insert(code).clone())
    }

    /// The module that is library `l` in context `ctx`.
    fn library_module_in(&self, l: &Library, ctx: u64, device: usize) -> Result<u64> {
        if let Some(m) = lock(&l.per_ctx).get(&ctx) {
            return Ok(*m);
        }
        let code = self.library_code(l, device)?;
        let attrs: Vec<KernelAttrs> = l.kernels.iter().filter_map(|k| self.kernels.get(*k).map(|k| (k.handle, k.attrs.clone()))).collect();
        let mut per_ctx = lock(&l.per_ctx);
        if let Some(m) = per_ctx.get(&ctx) {
            return Ok(*m);
        }
        let m = self.make_module(ctx, device, code, Some(l.handle), Some(&attrs), false);
        per_ctx.insert(ctx, m);
        Ok(m)
    }

    /// `cuLibraryUnload`.
    pub fn library_unload(&self, h: u64) -> Result<()> {
        self.check_init()?;
        let l = self.library(h)?;
        let mods: Vec<u64> = lock(&l.per_ctx).drain().map(|(_, m)| m).collect();
        for m in mods {
            if let Some(m) = self.modules.get(m) {
                self.drop_module(&m);
            }
        }
        for k in &l.kernels {
            self.kernels.remove(*k);
        }
        self.forget_globals(h);
        self.libraries.remove(h);
        Ok(())
    }

    /// `cuLibraryGetKernel`.
    pub fn library_get_kernel(&self, h: u64, name: &str) -> Result<u64> {
        self.check_init()?;
        let l = self.library(h)?;
        l.names
            .iter()
            .position(|n| n == name)
            .and_then(|i| l.kernels.get(i).copied())
            .ok_or_else(|| Error::NotFound(format!("no kernel named {name:?} in the library")))
    }

    /// `cuLibraryGetKernelCount`.
    pub fn library_kernel_count(&self, h: u64) -> Result<u32> {
        self.check_init()?;
        Ok(self.library(h)?.kernels.len() as u32)
    }

    /// `cuLibraryEnumerateKernels`.
    pub fn library_kernels(&self, h: u64) -> Result<Vec<u64>> {
        self.check_init()?;
        Ok(self.library(h)?.kernels.clone())
    }

    /// `cuLibraryGetModule`: the library in the current context.
    pub fn library_get_module(&self, h: u64) -> Result<u64> {
        let ctx = self.current_ctx()?;
        let l = self.library(h)?;
        self.library_module_in(&l, ctx.handle, ctx.device)
    }

    /// `cuLibraryGetGlobal` (`managed`: `cuLibraryGetManaged`).
    pub fn library_get_global(&self, h: u64, name: &str, managed: bool) -> Result<(u64, usize)> {
        // Managed variables belong to no context: cudart asks for them right
        // after loading a library, before any context is current.
        let device = if managed {
            self.check_init()?;
            self.current_ctx().map(|c| c.device).unwrap_or(0)
        } else {
            self.current_ctx()?.device
        };
        let l = self.library(h)?;
        let code = self.library_code(&l, device)?;
        code.globals()
            .iter()
            .find(|g| g.name == name && (!managed || g.managed))
            .map(|g| (g.address, g.size))
            .ok_or_else(|| Error::NotFound(format!("no variable named {name:?} in the library")))
    }

    /// `cuKernelGetFunction`: the kernel's function in the current context.
    pub fn kernel_get_function(&self, h: u64) -> Result<u64> {
        let ctx = self.current_ctx()?;
        let k = self.kernel(h)?;
        let l = self.library(k.library)?;
        let m = self.library_module_in(&l, ctx.handle, ctx.device)?;
        self.module(m)?.functions.get(k.index).copied().ok_or_else(|| Error::handle("kernel index out of range"))
    }

    /// `cuKernelGetLibrary`.
    pub fn kernel_get_library(&self, h: u64) -> Result<u64> {
        self.check_init()?;
        Ok(self.kernel(h)?.library)
    }

    // ---- linking ----

    /// `cuLinkCreate`.
    pub fn link_create(&self, options: ModuleOptions) -> Result<u64> {
        self.check_init()?;
        Ok(self.links.insert_with(|h| LinkState { handle: h, options, inputs: Mutex::new(Vec::new()), output: Mutex::new(None) }).handle)
    }

    fn link(&self, h: u64) -> Result<Arc<LinkState>> {
        self.links.get(h).ok_or_else(|| Error::handle(format!("{h:#x} is not a link state")))
    }

    /// `cuLinkAddData` / `cuLinkAddFile`: PTX, or a fatbin with PTX (alone,
    /// from a host object, or from an archive member when `lazy`). An
    /// archive member without PTX is left out with a line in the info log;
    /// PTX that does not parse is `CUDA_ERROR_INVALID_PTX`.
    pub fn link_add(&self, h: u64, source: ModuleSource<'_>, name: &str, lazy: bool, log: &mut JitLog) -> Result<()> {
        let ctx = self.current_ctx()?;
        let l = self.link(h)?;
        let target = self.device_props(ctx.device as i32)?.compute_capability();
        if lazy {
            if let ModuleSource::Image(img) = source {
                if let Err(Error::NoBinaryForGpu(why)) = self.select_ptx(img, target) {
                    log.info = format!("anycuda: {name} left out of the link: {why}");
                    return Ok(());
                }
            }
        }
        let img = self.resolve_source(source, target, log)?;
        // As CUDA's driver compiles PTX inputs when they are added, PTX that
        // does not parse is refused here.
        if let Err(d) = ptx::parse(&img.ptx) {
            let d = d.to_string();
            log.error = format!("anycuda: {name}: the PTX does not parse: {}", d.lines().next().unwrap_or(""));
            return Err(Error::InvalidPtx(log.error.clone()));
        }
        lock(&l.inputs).push(LinkPart { name: name.to_string(), ptx: img.ptx, lazy });
        Ok(())
    }

    /// `cuLinkComplete`: links the inputs into one PTX module (see
    /// [`ptx::link`]). The "cubin" handed back is that PTX text,
    /// NUL-terminated, which `cuModuleLoadData` and `cuLibraryLoadData`
    /// accept; it stays valid until `cuLinkDestroy`.
    pub fn link_complete(&self, h: u64, log: &mut JitLog) -> Result<(usize, usize)> {
        self.current_ctx()?;
        let l = self.link(h)?;
        let inputs = lock(&l.inputs).clone();
        if inputs.is_empty() {
            log.error = "anycuda: cuLinkComplete without inputs".into();
            return Err(Error::invalid("nothing to link: no input was added"));
        }
        let t = Instant::now();
        let text = self.link_parts(&inputs, l.options.verbose, log);
        log.wall_ms = t.elapsed().as_secs_f32() * 1e3;
        let mut out = text?.into_bytes();
        out.push(0);
        let mut o = lock(&l.output);
        let v = o.insert(out);
        Ok((v.as_ptr() as usize, v.len()))
    }

    /// `cuLinkDestroy`.
    pub fn link_destroy(&self, h: u64) -> Result<()> {
        self.check_init()?;
        self.links.remove(h).map(|_| ()).ok_or_else(|| Error::handle(format!("{h:#x} is not a link state")))
    }
}
