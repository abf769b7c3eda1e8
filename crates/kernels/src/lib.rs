//! Compiles PTX and runs its kernels on the CPU backend, for tests and
//! benchmarks that work below the driver API.

use backend_cpu::{Executor, LaunchError, LaunchOptions, LoadedKernel, LoadedModule};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The repository's `ptx/` folder.
pub fn ptx_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ptx")
}

/// A compiled and loaded module with its kernels by name.
pub struct Program {
    _module: LoadedModule,
    kernels: HashMap<String, LoadedKernel>,
}

impl Program {
    pub fn from_source(src: &str) -> Result<Program, String> {
        Program::from_source_with(src, &compiler::Options::default())
    }

    pub fn from_source_with(src: &str, opts: &compiler::Options) -> Result<Program, String> {
        let module = ptx::parse(src).map_err(|d| d.to_string())?;
        let compiled = compiler::compile_with_options(&module, src, &compiler::Target::HostCpu, opts).map_err(|e| e.to_string())?;
        let loaded = backend_cpu::load_compiled(&compiled, &[]).map_err(|e| e.to_string())?;
        let mut kernels = HashMap::new();
        for info in compiled.info.kernels {
            let name = info.name.clone();
            // SAFETY: the object and its description come from the same compile.
            let k =
                unsafe { LoadedKernel::from_module(&loaded, info) }.ok_or_else(|| format!("{name}: symbols missing from the object"))?;
            kernels.insert(name, k);
        }
        Ok(Program { _module: loaded, kernels })
    }

    pub fn from_file(name: &str) -> Result<Program, String> {
        Program::from_file_with(name, &compiler::Options::default())
    }

    pub fn from_file_with(name: &str, opts: &compiler::Options) -> Result<Program, String> {
        let path = ptx_dir().join(name);
        let src = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Program::from_source_with(&src, opts)
    }

    pub fn kernel(&self, name: &str) -> Result<&LoadedKernel, String> {
        self.kernels.get(name).ok_or_else(|| format!("no kernel `{name}`"))
    }
}

/// A kernel argument.
pub enum Arg<'a> {
    /// A buffer whose address is passed (the kernel may write it).
    Buf(&'a mut [u8]),
    U32(u32),
    U64(u64),
    F32(f32),
}

/// Packs arguments as the kernel's parameter layout says.
pub fn pack(kernel: &LoadedKernel, args: &mut [Arg]) -> Result<Vec<u8>, String> {
    let info = &kernel.info;
    if info.params.len() != args.len() {
        return Err(format!("`{}` takes {} parameters, {} given", info.name, info.params.len(), args.len()));
    }
    let mut buf = vec![0u8; info.param_bytes as usize];
    for (p, a) in info.params.iter().zip(args.iter_mut()) {
        let bytes: Vec<u8> = match a {
            Arg::Buf(b) => (b.as_mut_ptr() as u64).to_le_bytes().to_vec(),
            Arg::U32(v) => v.to_le_bytes().to_vec(),
            Arg::U64(v) => v.to_le_bytes().to_vec(),
            Arg::F32(v) => v.to_le_bytes().to_vec(),
        };
        let n = bytes.len().min(p.size as usize);
        buf[p.offset as usize..p.offset as usize + n].copy_from_slice(&bytes[..n]);
    }
    Ok(buf)
}

/// Runs one launch on `exec`.
pub fn launch(
    exec: &Executor,
    kernel: &LoadedKernel,
    grid: [u32; 3],
    block: [u32; 3],
    dynamic_shared: u32,
    args: &mut [Arg],
) -> Result<Result<(), LaunchError>, String> {
    let params = pack(kernel, args)?;
    // SAFETY: every pointer argument is a live buffer borrowed for the call.
    Ok(unsafe { exec.launch(kernel, grid, block, dynamic_shared, &params, &LaunchOptions::default()) })
}

pub fn as_bytes<T: Copy>(v: &mut [T]) -> &mut [u8] {
    // SAFETY: plain-old-data element types only (u32, u64, f32) in this crate.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// A typed buffer in device memory (`backend_cpu::memory`): where a real
/// program's kernels find their data, and where benchmarks put the data of
/// both the kernels and their native counterparts.
pub struct DeviceVec<T: Copy> {
    buf: backend_cpu::memory::DeviceBuffer,
    len: usize,
    _t: std::marker::PhantomData<T>,
}

impl<T: Copy> DeviceVec<T> {
    /// A copy of `data`; panics when the memory is not there (tests and
    /// benchmarks only).
    pub fn from_slice(data: &[T]) -> DeviceVec<T> {
        let bytes = std::mem::size_of_val(data);
        let mut buf = backend_cpu::memory::DeviceBuffer::zeroed(bytes).expect("device memory");
        // SAFETY: plain-old-data element types only (u8, u32, f32) in this crate.
        let src = unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), bytes) };
        buf.as_mut_slice().copy_from_slice(src);
        DeviceVec { buf, len: data.len(), _t: std::marker::PhantomData }
    }

    /// The buffer as a kernel argument.
    pub fn arg(&mut self) -> Arg<'_> {
        Arg::Buf(self.buf.as_mut_slice())
    }
}

impl<T: Copy> std::ops::Deref for DeviceVec<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: the buffer holds `len` elements of T, 256-byte aligned.
        unsafe { std::slice::from_raw_parts(self.buf.as_slice().as_ptr().cast::<T>(), self.len) }
    }
}

impl<T: Copy> std::ops::DerefMut for DeviceVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as above, uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.buf.as_mut_slice().as_mut_ptr().cast::<T>(), self.len) }
    }
}
