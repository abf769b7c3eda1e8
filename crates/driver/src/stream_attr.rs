//! Stream attributes (`cuStreamSetAttribute`, `cuStreamGetAttribute`,
//! `cuStreamCopyAttributes`).
//!
//! The attributes a stream takes are hints for the GPU's memory system and
//! scheduler (the L2 access policy window, the synchronization policy, the
//! memory synchronization domain, priority); on anycuda's devices they
//! change nothing, so they are checked as CUDA checks them, kept per
//! stream, and read back as they were set. Attributes that only launches
//! take (clusters, cooperative...) are `CUDA_ERROR_INVALID_VALUE`.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::handle::lock;
use crate::Driver;

/// `CUstreamAttrID` values a stream takes.
pub mod id {
    pub const ACCESS_POLICY_WINDOW: u32 = 1;
    pub const SYNCHRONIZATION_POLICY: u32 = 3;
    pub const PRIORITY: u32 = 8;
    pub const MEM_SYNC_DOMAIN_MAP: u32 = 9;
    pub const MEM_SYNC_DOMAIN: u32 = 10;
}

/// A `CUstreamAttrValue`: a 64-byte union.
pub type AttrValue = [u8; 64];

/// Attributes set on streams, by stream id (`cuStreamGetId`).
#[derive(Default)]
pub(crate) struct StreamAttrs {
    values: Mutex<HashMap<(u64, u32), AttrValue>>,
}

fn u32_at(v: &AttrValue, at: usize) -> u32 {
    u32::from_le_bytes([v[at], v[at + 1], v[at + 2], v[at + 3]])
}

/// Checks `value` for attribute `attr` as CUDA does.
fn check(attr: u32, v: &AttrValue, max_window: u64) -> Result<()> {
    match attr {
        id::ACCESS_POLICY_WINDOW => {
            // { void *base_ptr; size_t num_bytes; float hitRatio; hitProp; missProp }
            let num_bytes = u64::from_le_bytes([v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15]]);
            let hit_ratio = f32::from_bits(u32_at(v, 16));
            let (hit, miss) = (u32_at(v, 20), u32_at(v, 24));
            if num_bytes > max_window {
                return Err(Error::invalid(format!("an access policy window of {num_bytes} bytes; the device's largest is {max_window}")));
            }
            if !(0.0..=1.0).contains(&hit_ratio) {
                return Err(Error::invalid(format!("hitRatio {hit_ratio} is not in [0, 1]")));
            }
            if hit > 2 || miss > 2 {
                return Err(Error::invalid(format!("access properties {hit}, {miss}: not a CUaccessProperty")));
            }
            Ok(())
        }
        id::SYNCHRONIZATION_POLICY => match u32_at(v, 0) {
            1..=4 => Ok(()),
            p => Err(Error::invalid(format!("synchronization policy {p}"))),
        },
        id::MEM_SYNC_DOMAIN => match u32_at(v, 0) {
            0 | 1 => Ok(()),
            d => Err(Error::invalid(format!("memory synchronization domain {d}"))),
        },
        id::PRIORITY | id::MEM_SYNC_DOMAIN_MAP => Ok(()),
        other => Err(Error::invalid(format!("attribute {other} does not apply to streams"))),
    }
}

impl Driver {
    /// `cuStreamSetAttribute`.
    pub fn stream_set_attribute(&self, stream: u64, ptds: bool, attr: u32, value: &AttrValue) -> Result<()> {
        let id = self.stream_get_id(stream, ptds)?;
        let device = self.stream_get_device(stream, ptds)?;
        let max_window = u64::from(self.device_props(device)?.max_access_policy_window_size);
        check(attr, value, max_window)?;
        lock(&self.stream_attrs.values).insert((id, attr), *value);
        Ok(())
    }

    /// `cuStreamGetAttribute`: what was set, else the default (the
    /// stream's own priority; the `AUTO` synchronization policy; zeros).
    pub fn stream_get_attribute(&self, stream: u64, ptds: bool, attr: u32) -> Result<AttrValue> {
        let id = self.stream_get_id(stream, ptds)?;
        check(attr, &default_value(attr, 0), u64::MAX)?;
        if let Some(v) = lock(&self.stream_attrs.values).get(&(id, attr)) {
            return Ok(*v);
        }
        let priority = if attr == id::PRIORITY { self.stream_get_priority(stream, ptds)? } else { 0 };
        Ok(default_value(attr, priority))
    }

    /// `cuStreamCopyAttributes`: `dst` takes every attribute `src` has.
    pub fn stream_copy_attributes(&self, dst: u64, src: u64, ptds: bool) -> Result<()> {
        let (d, s) = (self.stream_get_id(dst, ptds)?, self.stream_get_id(src, ptds)?);
        let mut values = lock(&self.stream_attrs.values);
        let from: Vec<(u32, AttrValue)> = values.iter().filter(|((i, _), _)| *i == s).map(|((_, a), v)| (*a, *v)).collect();
        for (a, v) in from {
            values.insert((d, a), v);
        }
        Ok(())
    }
}

fn default_value(attr: u32, priority: i32) -> AttrValue {
    let mut v = [0u8; 64];
    match attr {
        id::SYNCHRONIZATION_POLICY => v[..4].copy_from_slice(&1u32.to_le_bytes()),
        id::PRIORITY => v[..4].copy_from_slice(&priority.to_le_bytes()),
        _ => {}
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(num_bytes: u64, hit_ratio: f32, hit: u32, miss: u32) -> AttrValue {
        let mut v = [0u8; 64];
        v[8..16].copy_from_slice(&num_bytes.to_le_bytes());
        v[16..20].copy_from_slice(&hit_ratio.to_bits().to_le_bytes());
        v[20..24].copy_from_slice(&hit.to_le_bytes());
        v[24..28].copy_from_slice(&miss.to_le_bytes());
        v
    }

    #[test]
    fn values_are_checked_as_cuda_checks_them() {
        assert!(check(id::ACCESS_POLICY_WINDOW, &window(1 << 20, 0.6, 2, 1), 1 << 27).is_ok());
        assert!(check(id::ACCESS_POLICY_WINDOW, &window((1 << 27) + 1, 0.6, 2, 1), 1 << 27).is_err());
        assert!(check(id::ACCESS_POLICY_WINDOW, &window(1 << 20, 1.5, 2, 1), 1 << 27).is_err());
        assert!(check(id::ACCESS_POLICY_WINDOW, &window(1 << 20, 0.5, 3, 1), 1 << 27).is_err());
        assert!(check(id::SYNCHRONIZATION_POLICY, &default_value(id::SYNCHRONIZATION_POLICY, 0), 0).is_ok());
        assert!(check(id::SYNCHRONIZATION_POLICY, &[0; 64], 0).is_err());
        assert!(check(2, &[0; 64], 0).is_err(), "cooperative is a launch attribute");
    }
}
