//! Interprocess memory handles (`cuIpcGetMemHandle`,
//! `cuIpcOpenMemHandle`, `cuIpcCloseMemHandle`).
//!
//! A handle's 64 bytes: `anycIPC1`, the exporting process's id (u32,
//! little-endian), 4 zero bytes, then [`IPC_PAYLOAD`] bytes that are the
//! backend's (what another process needs to map the memory). Opening a
//! handle in the context that already opened it returns the same address
//! and counts the opening; each `cuIpcCloseMemHandle` undoes one, the
//! last unmaps. A process cannot open its own handles (CUDA answers
//! `CUDA_ERROR_INVALID_CONTEXT`).

use std::collections::HashMap;
use std::sync::Mutex;

use crate::backend::IPC_PAYLOAD;
use crate::error::{Error, Result};
use crate::handle::lock;
use crate::memory::AllocKind;
use crate::Driver;

/// The first bytes of every handle anycuda makes.
pub const MAGIC: [u8; 8] = *b"anycIPC1";

/// `CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS`, the one flag `cuIpcOpenMemHandle`
/// takes.
pub const LAZY_ENABLE_PEER_ACCESS: u32 = 1;

/// A context and a handle it opened.
type Opened = (u64, [u8; 64]);

/// Handles opened in this process: (context, handle) -> (address, count).
#[derive(Default)]
pub(crate) struct Imports {
    open: Mutex<HashMap<Opened, (u64, u32)>>,
}

impl Driver {
    /// `cuIpcGetMemHandle`: a handle to the `cuMemAlloc` allocation holding
    /// `ptr`. The backend may move the memory into shareable pages, so the
    /// allocation's context finishes its work first.
    pub fn ipc_get_mem_handle(&self, ptr: u64) -> Result<[u8; 64]> {
        let ctx = self.current_ctx()?;
        let info = self.pointer_info(ptr).ok_or_else(|| Error::invalid(format!("{ptr:#x} is not device memory")))?;
        let a = self
            .mem_allocation(ptr)
            .filter(|a| a.kind == AllocKind::Device)
            .ok_or_else(|| Error::invalid(format!("{ptr:#x} is not memory from cuMemAlloc (only such memory has interprocess handles)")))?;
        let owner = self.contexts.get(info.ctx);
        owner.as_deref().unwrap_or(&ctx).synchronize()?;
        let payload = self.backend.ipc_export(a.device_base, a.size).map_err(crate::memory::backend_err)?;
        let mut h = [0u8; 64];
        h[..8].copy_from_slice(&MAGIC);
        h[8..12].copy_from_slice(&std::process::id().to_le_bytes());
        h[16..16 + IPC_PAYLOAD].copy_from_slice(&payload);
        Ok(h)
    }

    /// `cuIpcOpenMemHandle`.
    pub fn ipc_open_mem_handle(&self, handle: &[u8; 64], flags: u32) -> Result<u64> {
        let ctx = self.current_ctx()?;
        if flags != LAZY_ENABLE_PEER_ACCESS {
            return Err(Error::invalid(format!("flags {flags:#x}: must be CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS")));
        }
        if handle[..8] != MAGIC {
            return Err(Error::invalid("not an interprocess memory handle of anycuda's"));
        }
        let pid = u32::from_le_bytes([handle[8], handle[9], handle[10], handle[11]]);
        if pid == std::process::id() {
            return Err(Error::InvalidContext);
        }
        let mut open = lock(&self.ipc.open);
        // (A context torn down since forgot its mappings.)
        open.retain(|(c, _), (p, _)| *c != ctx.handle || self.mem_allocation(*p).is_some_and(|a| a.kind == AllocKind::Ipc));
        if let Some((ptr, n)) = open.get_mut(&(ctx.handle, *handle)) {
            *n += 1;
            return Ok(*ptr);
        }
        let mut payload = [0u8; IPC_PAYLOAD];
        payload.copy_from_slice(&handle[16..16 + IPC_PAYLOAD]);
        let (ptr, size) = self.backend.ipc_import(ctx.device, &payload).map_err(crate::memory::backend_err)?;
        self.record_ipc(&ctx, size, ptr);
        open.insert((ctx.handle, *handle), (ptr, 1));
        Ok(ptr)
    }

    /// `cuIpcCloseMemHandle`: undoes one opening of the handle mapped at
    /// `ptr` in the current context; the last one unmaps it.
    pub fn ipc_close_mem_handle(&self, ptr: u64) -> Result<()> {
        let ctx = self.current_ctx()?;
        let mut open = lock(&self.ipc.open);
        let key = open
            .iter()
            .find(|((c, _), (p, _))| *c == ctx.handle && *p == ptr)
            .map(|(k, _)| *k)
            .ok_or_else(|| Error::invalid(format!("{ptr:#x} is not memory opened with cuIpcOpenMemHandle in this context")))?;
        let last = match open.get_mut(&key) {
            Some((_, n)) if *n > 1 => {
                *n -= 1;
                false
            }
            _ => true,
        };
        if last {
            open.remove(&key);
            ctx.synchronize()?;
            self.release_ipc(ptr)?;
        }
        Ok(())
    }
}
