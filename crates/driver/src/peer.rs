//! Peer access between devices (`cuDeviceCanAccessPeer`,
//! `cuDeviceGetP2PAttribute`, `cuCtxEnablePeerAccess`/`Disable`).
//!
//! Whether two devices can reach each other's memory is the backend's
//! answer ([`crate::backend::Backend::can_access_peer`]); a device is
//! never its own peer. Enabling is recorded per context, one way (the
//! current context gains access to the peer context's device), and
//! forgotten when the context is torn down. GPU runtimes enable access per
//! device, not per context: the backend is told when the first context of
//! a device gains access to a device and when the last one loses it
//! ([`PeerLinks`]).

use std::collections::HashMap;
use std::sync::Mutex;

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::handle::lock;
use crate::Driver;

/// For each (device, peer device) pair, how many contexts of `device` have
/// peer access to a context of the peer. Invariant: the backend has access
/// enabled for exactly the pairs with a count above 0.
#[derive(Default)]
pub(crate) struct PeerLinks {
    counts: Mutex<HashMap<(usize, usize), usize>>,
}

impl PeerLinks {
    /// One more context of `device` has access to `peer`: the backend
    /// enables the pair if it is the first; its refusal undoes the count.
    fn link(&self, backend: &dyn Backend, device: usize, peer: usize) -> Result<()> {
        let mut counts = lock(&self.counts);
        let n = counts.entry((device, peer)).or_insert(0);
        if *n == 0 {
            backend.enable_peer_access(device, peer).map_err(crate::memory::backend_err)?;
        }
        *n += 1;
        Ok(())
    }

    /// One context fewer; the backend disables the pair after the last.
    /// The count drops even when the backend fails to disable (the
    /// context's access is gone either way; what the backend leaves
    /// enabled only permits more, and the backend logs its failure).
    pub(crate) fn unlink(&self, backend: &dyn Backend, device: usize, peer: usize) -> Result<()> {
        let mut counts = lock(&self.counts);
        let Some(n) = counts.get_mut(&(device, peer)) else { return Ok(()) };
        *n -= 1;
        if *n > 0 {
            return Ok(());
        }
        counts.remove(&(device, peer));
        backend.disable_peer_access(device, peer).map_err(crate::memory::backend_err)
    }
}

/// `CUdevice_P2PAttribute` values.
pub mod p2p {
    pub const PERFORMANCE_RANK: i32 = 1;
    pub const ACCESS_SUPPORTED: i32 = 2;
    pub const NATIVE_ATOMIC_SUPPORTED: i32 = 3;
    pub const CUDA_ARRAY_ACCESS_SUPPORTED: i32 = 4;
    pub const ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED: i32 = 5;
}

impl Driver {
    /// `cuDeviceCanAccessPeer`.
    pub fn can_access_peer(&self, dev: i32, peer: i32) -> Result<bool> {
        self.device_props(dev)?;
        self.device_props(peer)?;
        Ok(dev != peer && self.backend().can_access_peer(dev as usize, peer as usize))
    }

    /// `cuDeviceGetP2PAttribute`: for devices that can access each other,
    /// what sharing one memory gives (every access, native atomics, arrays;
    /// rank 0); 0 for every attribute otherwise.
    pub fn p2p_attribute(&self, attrib: i32, src: i32, dst: i32) -> Result<i32> {
        self.device_props(src)?;
        self.device_props(dst)?;
        if src == dst {
            return Err(Error::InvalidDevice(i64::from(src)));
        }
        if !(p2p::PERFORMANCE_RANK..=p2p::ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED).contains(&attrib) {
            return Err(Error::InvalidValue(format!("unknown P2P attribute {attrib}")));
        }
        let peers = self.can_access_peer(src, dst)?;
        Ok(match attrib {
            p2p::ACCESS_SUPPORTED | p2p::NATIVE_ATOMIC_SUPPORTED | p2p::CUDA_ARRAY_ACCESS_SUPPORTED => i32::from(peers),
            _ => 0,
        })
    }

    /// `cuCtxEnablePeerAccess`: the current context may access the memory
    /// of `peer_ctx`'s device.
    pub fn ctx_enable_peer_access(&self, peer_ctx: u64, flags: u32) -> Result<()> {
        let ctx = self.current_ctx()?;
        if flags != 0 {
            return Err(Error::InvalidValue("flags must be 0".into()));
        }
        let peer = self.ctx_by_handle(peer_ctx)?;
        if !self.can_access_peer(ctx.device as i32, peer.device as i32)? {
            return Err(Error::PeerAccessUnsupported);
        }
        let mut st = lock(&ctx.st);
        if st.peers.contains_key(&peer_ctx) {
            return Err(Error::PeerAccessAlreadyEnabled);
        }
        self.peer_links.link(self.backend().as_ref(), ctx.device, peer.device)?;
        st.peers.insert(peer_ctx, peer.device);
        Ok(())
    }

    /// `cuCtxDisablePeerAccess`.
    pub fn ctx_disable_peer_access(&self, peer_ctx: u64) -> Result<()> {
        let ctx = self.current_ctx()?;
        self.ctx_by_handle(peer_ctx)?;
        let Some(device) = lock(&ctx.st).peers.remove(&peer_ctx) else {
            return Err(Error::PeerAccessNotEnabled);
        };
        self.peer_links.unlink(self.backend().as_ref(), ctx.device, device)
    }
}
