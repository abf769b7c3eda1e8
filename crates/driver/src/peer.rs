//! Peer access between devices (`cuDeviceCanAccessPeer`,
//! `cuDeviceGetP2PAttribute`, `cuCtxEnablePeerAccess`/`Disable`).
//!
//! Whether two devices can reach each other's memory is the backend's
//! answer ([`crate::backend::Backend::can_access_peer`]); a device is
//! never its own peer. Enabling is recorded per context, one way (the
//! current context gains access to the peer context's device), and
//! forgotten when the context is torn down.

use crate::error::{Error, Result};
use crate::handle::lock;
use crate::Driver;

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
        if !lock(&ctx.st).peers.insert(peer_ctx) {
            return Err(Error::PeerAccessAlreadyEnabled);
        }
        Ok(())
    }

    /// `cuCtxDisablePeerAccess`.
    pub fn ctx_disable_peer_access(&self, peer_ctx: u64) -> Result<()> {
        let ctx = self.current_ctx()?;
        self.ctx_by_handle(peer_ctx)?;
        if !lock(&ctx.st).peers.remove(&peer_ctx) {
            return Err(Error::PeerAccessNotEnabled);
        }
        Ok(())
    }
}
