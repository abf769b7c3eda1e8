//! Kernel launches: configuration checks, parameter buffers, cooperative
//! launches, function attributes and occupancy.

use std::ffi::c_void;
use std::sync::Arc;

use cuda_types::CUfunction_attribute as FA;

use crate::backend::{KernelDesc, LaunchParams};
use crate::error::{Error, Result};
use crate::handle::{handle_kind, lock, HandleKind};
use crate::module::FuncAttrs;
use crate::props::DeviceProps;
use crate::Driver;

/// A function attribute id (`CUfunction_attribute`).
pub type FuncAttribute = FA;

/// The kernel arguments of a launch.
#[derive(Debug, Clone, Copy)]
pub enum KernelArgs<'a> {
    /// `kernelParams`: one pointer per parameter, to its value.
    Pointers(*const *const c_void),
    /// The `extra` form: the whole parameter buffer.
    Buffer(&'a [u8]),
    /// Neither (valid only for kernels without parameters).
    None,
}

/// Everything of a launch but the function and the arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    pub stream: u64,
    pub cooperative: bool,
}

/// The parameter buffer of a launch of `desc`, laid out as its
/// [`KernelDesc::params`] say, from either argument form.
///
/// # Safety
/// With [`KernelArgs::Pointers`], the array must hold one valid pointer
/// per kernel parameter, each to a value of the parameter's size.
pub(crate) unsafe fn build_params(desc: &KernelDesc, args: KernelArgs<'_>) -> Result<Vec<u8>> {
    let mut params = vec![0u8; desc.param_bytes as usize];
    match args {
        KernelArgs::Pointers(p) => {
            if !desc.params.is_empty() && p.is_null() {
                return Err(Error::invalid(format!("{} takes {} parameters but kernelParams is NULL", desc.name, desc.params.len())));
            }
            for (i, pd) in desc.params.iter().enumerate() {
                // SAFETY: one pointer per parameter (caller's contract).
                let src = unsafe { *p.add(i) } as *const u8;
                if src.is_null() {
                    return Err(Error::invalid(format!("kernelParams[{i}] is NULL")));
                }
                let (o, n) = (pd.offset as usize, pd.size as usize);
                let dst = params.get_mut(o..o + n).ok_or_else(|| Error::Unknown(format!("parameter {i} outside the buffer")))?;
                // SAFETY: the value has the parameter's size (contract).
                dst.copy_from_slice(unsafe { std::slice::from_raw_parts(src, n) });
            }
        }
        KernelArgs::Buffer(b) => {
            if b.len() < params.len() {
                return Err(Error::invalid(format!("parameter buffer of {} bytes, {} needs {}", b.len(), desc.name, params.len())));
            }
            let n = params.len();
            params.copy_from_slice(&b[..n]);
        }
        KernelArgs::None => {
            if !desc.params.is_empty() {
                return Err(Error::invalid(format!("{} takes parameters, none given", desc.name)));
            }
        }
    }
    Ok(params)
}

/// The dynamic shared memory a kernel may use by default: what is left of
/// the per-block default after its static shared memory.
fn max_dynamic_shared(props: &DeviceProps, desc: &KernelDesc, attrs: &FuncAttrs) -> u32 {
    attrs.max_dynamic_shared.unwrap_or_else(|| props.shared_mem_per_block.saturating_sub(desc.static_shared_bytes))
}

/// The most threads per block the kernel can run with, from its
/// directives and its register use.
pub fn func_max_threads(props: &DeviceProps, desc: &KernelDesc) -> u32 {
    let by_directives = desc.max_threads_per_block(props.max_threads_per_block);
    let regs = desc.num_regs.max(1);
    let by_regs = (props.regs_per_block / regs) / props.warp_size * props.warp_size;
    by_directives.min(by_regs.max(props.warp_size))
}

/// Blocks of `block_threads` threads (and `dynamic_shared` bytes) that fit
/// on one multiprocessor at once, by NVIDIA's occupancy rules.
pub fn blocks_per_sm(props: &DeviceProps, desc: &KernelDesc, block_threads: u32, dynamic_shared: u32) -> u32 {
    if block_threads == 0 || block_threads > func_max_threads(props, desc) {
        return 0;
    }
    let warp = props.warp_size.max(1);
    let warps = block_threads.div_ceil(warp);
    let by_threads = props.max_threads_per_multiprocessor / (warps * warp);
    let regs = desc.num_regs.max(1).next_multiple_of(8);
    let by_regs = props.regs_per_multiprocessor / (regs * warps * warp);
    let smem = desc.static_shared_bytes as u64 + dynamic_shared as u64;
    let by_smem = if smem == 0 {
        u32::MAX
    } else {
        (props.shared_mem_per_multiprocessor as u64 / (smem + props.reserved_shared_mem_per_block as u64)) as u32
    };
    props.max_blocks_per_multiprocessor.min(by_threads).min(by_regs).min(by_smem)
}

/// A function attribute (`cuFuncGetAttribute`) of kernel `desc` with the
/// settings `a`; `None` for attributes CUDA does not define.
fn func_attribute(props: &DeviceProps, desc: &KernelDesc, a: &FuncAttrs, attr: FA) -> Option<i32> {
    let i = |v: u32| v.min(i32::MAX as u32) as i32;
    Some(match attr {
        FA::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK => i(func_max_threads(props, desc)),
        FA::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES => i(desc.static_shared_bytes),
        FA::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES => i(desc.const_bytes),
        FA::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES => i(desc.local_bytes),
        FA::CU_FUNC_ATTRIBUTE_NUM_REGS => i(desc.num_regs),
        FA::CU_FUNC_ATTRIBUTE_PTX_VERSION => i(desc.ptx_version),
        FA::CU_FUNC_ATTRIBUTE_BINARY_VERSION => i(if desc.binary_version != 0 { desc.binary_version } else { props.compute_capability() }),
        FA::CU_FUNC_ATTRIBUTE_CACHE_MODE_CA => 0,
        FA::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES => i(max_dynamic_shared(props, desc, a)),
        FA::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT => a.carveout,
        FA::CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET => 0,
        FA::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH => i(a.required_cluster[0]),
        FA::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT => i(a.required_cluster[1]),
        FA::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH => i(a.required_cluster[2]),
        FA::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED => a.non_portable_cluster as i32,
        FA::CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE => i(a.cluster_scheduling),
        FA::CU_FUNC_ATTRIBUTE_DEVICE_NODE_UPDATE_SUPPORTED => 0,
        FA::CU_FUNC_ATTRIBUTE_SHARED_MEMORY_MODE => 0,
        _ => return None,
    })
}

/// [`func_attribute`] with the settings a kernel has until the host
/// changes them: what device-side `cudaFuncGetAttributes` reports.
pub fn default_func_attribute(props: &DeviceProps, desc: &KernelDesc, attr: FA) -> Option<i32> {
    func_attribute(props, desc, &FuncAttrs::default(), attr)
}

impl Driver {
    fn func_parts(&self, f: u64) -> Result<(KernelDesc, Arc<std::sync::Mutex<FuncAttrs>>, usize)> {
        if handle_kind(f) == Some(HandleKind::Kernel) && self.current_ctx_alive().is_err() {
            // Kernel attributes do not need a context.
            let k = self.kernel(f)?;
            let d = self.func_desc(f)?;
            return Ok((d, k.attrs.clone(), 0));
        }
        let func = self.resolve_function(f)?;
        Ok((func.desc.clone(), func.attrs.clone(), func.device))
    }

    /// Checks a launch configuration the way NVIDIA's driver does.
    pub(crate) fn check_config(&self, props: &DeviceProps, desc: &KernelDesc, attrs: &FuncAttrs, cfg: &LaunchConfig) -> Result<()> {
        let [bx, by, bz] = cfg.block;
        let [gx, gy, gz] = cfg.grid;
        if bx == 0 || by == 0 || bz == 0 || gx == 0 || gy == 0 || gz == 0 {
            return Err(Error::invalid(format!("zero dimension in grid {:?} / block {:?}", cfg.grid, cfg.block)));
        }
        for i in 0..3 {
            if cfg.block[i] > props.max_block_dim[i] {
                return Err(Error::invalid(format!("block dimension {} = {} exceeds {}", i, cfg.block[i], props.max_block_dim[i])));
            }
            if cfg.grid[i] > props.max_grid_dim[i] {
                return Err(Error::invalid(format!("grid dimension {} = {} exceeds {}", i, cfg.grid[i], props.max_grid_dim[i])));
            }
        }
        let threads = bx as u64 * by as u64 * bz as u64;
        if threads > props.max_threads_per_block as u64 {
            return Err(Error::invalid(format!("{threads} threads per block exceed {}", props.max_threads_per_block)));
        }
        if let Some(req) = desc.reqntid {
            let want = req.map(|d| d.max(1));
            if cfg.block != want {
                return Err(Error::invalid(format!("{} requires a block of {:?} (.reqntid), got {:?}", desc.name, want, cfg.block)));
            }
        }
        let fmax = func_max_threads(props, desc);
        if threads > fmax as u64 {
            return Err(Error::LaunchOutOfResources(format!(
                "{} supports at most {fmax} threads per block, launched with {threads}",
                desc.name
            )));
        }
        let dyn_max = max_dynamic_shared(props, desc, attrs);
        if cfg.shared_bytes > dyn_max || desc.static_shared_bytes as u64 + cfg.shared_bytes as u64 > props.shared_mem_per_block_optin as u64
        {
            return Err(Error::invalid(format!(
                "{} bytes of dynamic shared memory exceed the kernel's limit of {dyn_max} \
                 (raise it with CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                cfg.shared_bytes
            )));
        }
        if cfg.cooperative {
            if !props.cooperative_launch {
                return Err(Error::NotSupported("cooperative launch".into()));
            }
            let per_sm = blocks_per_sm(props, desc, threads as u32, cfg.shared_bytes);
            let max = per_sm as u64 * props.multiprocessor_count as u64;
            let blocks = gx as u64 * gy as u64 * gz as u64;
            if blocks > max {
                return Err(Error::CooperativeLaunchTooLarge(format!(
                    "{blocks} blocks, at most {max} can be resident ({per_sm} per multiprocessor x {})",
                    props.multiprocessor_count
                )));
            }
        }
        Ok(())
    }

    /// `cuLaunchKernel`, `cuLaunchKernelEx`, `cuLaunchCooperativeKernel`.
    ///
    /// # Safety
    /// With [`KernelArgs::Pointers`], the array must hold one valid pointer
    /// per kernel parameter, each to a value of the parameter's size.
    pub unsafe fn launch_kernel(&self, f: u64, cfg: &LaunchConfig, args: KernelArgs<'_>, ptds: bool) -> Result<()> {
        let (ctx, stream) = self.resolve_stream(cfg.stream, ptds)?;
        let func = self.resolve_function(f)?;
        if func.ctx != ctx.handle {
            return Err(Error::handle("the function belongs to another context than the stream"));
        }
        let props = self.device_props(ctx.device as i32)?.clone();
        let attrs = *lock(&func.attrs);
        self.check_config(&props, &func.desc, &attrs, cfg)?;
        // SAFETY: the caller's contract on `args`.
        let params = unsafe { build_params(&func.desc, args) }?;
        let code = func.code.clone();
        let index = func.index;
        // The kernel's code, compiled now if it was not: a kernel that
        // cannot be compiled fails its launch (not sticky), as the module
        // load of a driver that compiles eagerly would have failed. A
        // captured launch fails its capture call the same way.
        code.prepare(index).map_err(crate::module::module_error)?;
        if let Some(cap) = self.capturing(&stream) {
            let node = crate::graph::KernelNode::new(func.clone(), cfg, params);
            return self.capture_node(&stream, &cap, crate::graph::NodeParams::Kernel(node)).map(|_| ());
        }
        let cfg = *cfg;
        let limits = ctx.limits_for_launch([&func.desc]);
        let (pending_launch_limit, heap_limit, printf_fifo_size) =
            (limits.dev_runtime_pending_launch_count, limits.malloc_heap_size, limits.printf_fifo_size);
        self.run_async(
            &ctx,
            &stream,
            Box::new(move |queue| {
                let lp = LaunchParams {
                    grid: cfg.grid,
                    block: cfg.block,
                    dynamic_shared_bytes: cfg.shared_bytes,
                    params: &params,
                    cooperative: cfg.cooperative,
                    pending_launch_limit,
                    heap_limit,
                    printf_fifo_size,
                };
                queue.launch(&code, index, &lp).map_err(Error::Fault)
            }),
        )
    }

    /// `cuFuncGetAttribute` / `cuKernelGetAttribute`.
    pub fn func_get_attribute(&self, f: u64, attr: FA) -> Result<i32> {
        self.check_init()?;
        let (desc, attrs, device) = self.func_parts(f)?;
        let props = self.device_props(device as i32)?;
        let a = *lock(&attrs);
        func_attribute(props, &desc, &a, attr).ok_or_else(|| Error::invalid(format!("unknown function attribute {}", attr.0)))
    }

    /// `cuFuncSetAttribute` / `cuKernelSetAttribute`.
    pub fn func_set_attribute(&self, f: u64, attr: FA, value: i32) -> Result<()> {
        self.check_init()?;
        let (desc, attrs, device) = self.func_parts(f)?;
        let props = self.device_props(device as i32)?;
        let mut a = lock(&attrs);
        match attr {
            FA::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES => {
                let limit = props.shared_mem_per_block_optin.saturating_sub(desc.static_shared_bytes);
                if value < 0 || value as u32 > limit {
                    return Err(Error::invalid(format!("{value} bytes exceed the opt-in limit {limit}")));
                }
                a.max_dynamic_shared = Some(value as u32);
            }
            FA::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT => {
                if !(-1..=100).contains(&value) {
                    return Err(Error::invalid(format!("carveout {value} outside -1..=100")));
                }
                a.carveout = value;
            }
            FA::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH
            | FA::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT
            | FA::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH => {
                return Err(Error::NotSupported("thread block clusters".into()));
            }
            FA::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED => a.non_portable_cluster = value != 0,
            FA::CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE => {
                if !(0..=3).contains(&value) {
                    return Err(Error::invalid("unknown cluster scheduling policy"));
                }
                a.cluster_scheduling = value as u32;
            }
            _ => return Err(Error::invalid(format!("function attribute {} cannot be set", attr.0))),
        }
        Ok(())
    }

    /// `cuFuncSetCacheConfig` / `cuKernelSetCacheConfig`.
    pub fn func_set_cache_config(&self, f: u64, config: u32) -> Result<()> {
        self.check_init()?;
        if config > 3 {
            return Err(Error::invalid(format!("unknown cache config {config}")));
        }
        let (_, attrs, _) = self.func_parts(f)?;
        lock(&attrs).cache_config = config;
        Ok(())
    }

    /// `cuFuncSetSharedMemConfig`.
    pub fn func_set_shared_mem_config(&self, f: u64, config: u32) -> Result<()> {
        self.check_init()?;
        if config > 2 {
            return Err(Error::invalid(format!("unknown shared memory config {config}")));
        }
        let (_, attrs, _) = self.func_parts(f)?;
        lock(&attrs).shared_config = config;
        Ok(())
    }

    /// `cuOccupancyMaxActiveBlocksPerMultiprocessor[WithFlags]`.
    pub fn occupancy_max_active_blocks(&self, f: u64, block_size: i32, dynamic_shared: usize, flags: u32) -> Result<i32> {
        self.check_init()?;
        if flags > 1 {
            return Err(Error::invalid(format!("unknown occupancy flags {flags:#x}")));
        }
        let (desc, _, device) = self.func_parts(f)?;
        let props = self.device_props(device as i32)?;
        if block_size <= 0 {
            return Err(Error::invalid("block size must be positive"));
        }
        let dyn_smem = u32::try_from(dynamic_shared).map_err(|_| Error::invalid("dynamic shared memory too large"))?;
        Ok(blocks_per_sm(props, &desc, block_size as u32, dyn_smem) as i32)
    }

    /// `cuOccupancyMaxPotentialBlockSize[WithFlags]`: (min grid size,
    /// block size) maximising occupancy. `b2d` maps a block size to its
    /// dynamic shared memory (else `dynamic_shared` is used for all).
    pub fn occupancy_max_potential_block_size(
        &self,
        f: u64,
        b2d: Option<&dyn Fn(i32) -> usize>,
        dynamic_shared: usize,
        block_size_limit: i32,
        flags: u32,
    ) -> Result<(i32, i32)> {
        self.check_init()?;
        if flags > 1 {
            return Err(Error::invalid(format!("unknown occupancy flags {flags:#x}")));
        }
        let (desc, _, device) = self.func_parts(f)?;
        let props = self.device_props(device as i32)?;
        let warp = props.warp_size.max(1);
        let mut limit = func_max_threads(props, &desc);
        if block_size_limit > 0 {
            limit = limit.min(block_size_limit as u32);
        }
        let mut best = (0u32, 0u32, 0u32); // (active threads, block size, blocks per SM)
        let mut bs = limit.div_ceil(warp) * warp;
        while bs > 0 {
            let size = bs.min(limit);
            let smem = match b2d {
                Some(cb) => cb(size as i32),
                None => dynamic_shared,
            };
            let smem = u32::try_from(smem).unwrap_or(u32::MAX);
            let per_sm = blocks_per_sm(props, &desc, size, smem);
            let active = per_sm * size;
            if active > best.0 {
                best = (active, size, per_sm);
            }
            if bs <= warp {
                break;
            }
            bs -= warp;
        }
        let min_grid = best.2 * props.multiprocessor_count;
        Ok((min_grid as i32, best.1 as i32))
    }

    /// `cuOccupancyAvailableDynamicSMemPerBlock`.
    pub fn occupancy_available_dynamic_smem(&self, f: u64, num_blocks: i32, block_size: i32) -> Result<usize> {
        self.check_init()?;
        let (desc, _, device) = self.func_parts(f)?;
        let props = self.device_props(device as i32)?;
        if num_blocks <= 0 || block_size <= 0 {
            return Err(Error::invalid("block count and size must be positive"));
        }
        if blocks_per_sm(props, &desc, block_size as u32, 0) < num_blocks as u32 {
            return Ok(0);
        }
        let per_block = props.shared_mem_per_multiprocessor / num_blocks as u32;
        let avail = per_block
            .saturating_sub(props.reserved_shared_mem_per_block)
            .saturating_sub(desc.static_shared_bytes)
            .min(props.shared_mem_per_block_optin.saturating_sub(desc.static_shared_bytes));
        Ok(avail as usize)
    }
}
