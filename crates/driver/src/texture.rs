//! CUDA arrays, mipmapped arrays, texture objects and surface objects.
//!
//! An array is one device allocation holding its elements packed: rows of
//! `width * element size` bytes, `height` rows per slice, and one slice per
//! depth index, layer or cubemap face. Copies address it through
//! [`Driver::array_extent`], which `plan_copy` uses for `CU_MEMORYTYPE_ARRAY`
//! sides.
//!
//! A texture or surface object is a [`device::TexDesc`] the driver writes
//! into device memory; the object's handle is that descriptor's device
//! address, so compiled code reads everything it needs from the handle
//! alone. How a descriptor is sampled is [`device`]: plain Rust over the
//! descriptor, which every backend that runs Rust device code (the CPU's)
//! calls from its runtime functions.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::handle::{lock, HandleKind, Registry};
use crate::memory::backend_err;
use crate::Driver;

pub use device::TexDesc;

/// `CUarray_format` values and what one channel is.
pub mod format {
    pub const U8: u32 = 0x1;
    pub const U16: u32 = 0x2;
    pub const U32: u32 = 0x3;
    pub const S8: u32 = 0x8;
    pub const S16: u32 = 0x9;
    pub const S32: u32 = 0xa;
    pub const HALF: u32 = 0x10;
    pub const FLOAT: u32 = 0x20;
    // Formats with an implied channel count (CUDA 11.5+).
    pub const UNORM_INT8X1: u32 = 0xc0;
    pub const SNORM_INT16X4: u32 = 0xcb;

    /// The channel format and count of a `CUresourceViewFormat` (1 to 24:
    /// 1, 2 or 4 channels of u8, s8, u16, s16, u32, s32, half, float, in
    /// that order). The block-compressed formats (25 to 34) are not
    /// supported.
    pub fn of_view(f: u32) -> crate::Result<(u32, u32)> {
        const KINDS: [u32; 8] = [U8, S8, U16, S16, U32, S32, HALF, FLOAT];
        match f {
            1..=24 => Ok((KINDS[(f as usize - 1) / 3], [1, 2, 4][(f as usize - 1) % 3])),
            25..=34 => Err(crate::Error::NotSupported(format!("block-compressed resource view format {f}"))),
            _ => Err(crate::Error::invalid(format!("resource view format {f}"))),
        }
    }

    /// (bytes per channel, signed, float) of a format this driver stores;
    /// `None` for anything else.
    pub fn channel(f: u32) -> Option<(u32, bool, bool)> {
        Some(match f {
            U8 => (1, false, false),
            U16 => (2, false, false),
            U32 => (4, false, false),
            S8 => (1, true, false),
            S16 => (2, true, false),
            S32 => (4, true, false),
            HALF => (2, true, true),
            FLOAT => (4, true, true),
            _ => return None,
        })
    }

    /// The plain format and channel count of a format with an implied
    /// channel count (`CU_AD_FORMAT_UNORM_INT8X1` ... `SNORM_INT16X4`).
    pub fn implied(f: u32) -> Option<(u32, u32)> {
        if !(UNORM_INT8X1..=SNORM_INT16X4).contains(&f) {
            return None;
        }
        let i = f - UNORM_INT8X1;
        let base = [U8, U16, S8, S16][(i / 3) as usize];
        Some((base, [1, 2, 4][(i % 3) as usize]))
    }
}

/// `CUDA_ARRAY3D_*` flags.
pub mod array_flags {
    pub const LAYERED: u32 = 0x1;
    pub const SURFACE_LDST: u32 = 0x2;
    pub const CUBEMAP: u32 = 0x4;
    pub const TEXTURE_GATHER: u32 = 0x8;
    pub const DEPTH_TEXTURE: u32 = 0x10;
    pub const COLOR_ATTACHMENT: u32 = 0x20;
    pub const SPARSE: u32 = 0x40;
    pub const DEFERRED_MAPPING: u32 = 0x80;
}

/// An array's shape as `CUDA_ARRAY3D_DESCRIPTOR` gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ArrayDesc {
    pub width: usize,
    pub height: usize,
    pub depth: usize,
    pub format: u32,
    pub channels: u32,
    pub flags: u32,
}

impl ArrayDesc {
    /// Bytes per element (all channels).
    pub fn element_size(&self) -> usize {
        format::channel(self.format).map_or(0, |(b, _, _)| b as usize) * self.channels as usize
    }
    fn rows(&self) -> usize {
        self.height.max(1)
    }
    /// Slices: depth of a 3-D array, layers, or faces.
    fn slices(&self) -> usize {
        self.depth.max(1)
    }
}

/// A CUDA array.
#[derive(Debug)]
pub struct Array {
    pub handle: u64,
    pub ctx: u64,
    pub device: usize,
    pub desc: ArrayDesc,
    pub base: u64,
    pub size: usize,
    /// The mipmapped array this is a level of (destroyed with it).
    pub parent: Option<u64>,
    /// The format as created (a format with an implied channel count is
    /// stored as its plain format in `desc`).
    pub given_format: u32,
}

impl Array {
    pub fn pitch(&self) -> usize {
        self.desc.width * self.desc.element_size()
    }
}

/// A mipmapped array: one array per level.
#[derive(Debug)]
pub struct MipmappedArray {
    pub handle: u64,
    pub desc: ArrayDesc,
    pub levels: Vec<Arc<Array>>,
}

/// A live texture or surface object (its handle is its descriptor's address).
#[derive(Debug, Clone)]
pub struct TexObject {
    pub ctx: u64,
    pub device: usize,
    pub resource: Resource,
    pub texture: Option<TextureDesc>,
    pub view: Option<ViewDesc>,
}

/// `CUDA_RESOURCE_DESC`, decoded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Resource {
    Array(u64),
    Mipmapped(u64),
    Linear { ptr: u64, format: u32, channels: u32, size: usize },
    Pitch2D { ptr: u64, format: u32, channels: u32, width: usize, height: usize, pitch: usize },
}

/// `CUDA_TEXTURE_DESC`, as given.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TextureDesc {
    pub address: [u32; 3],
    pub filter: u32,
    pub flags: u32,
    pub max_anisotropy: u32,
    pub mipmap_filter: u32,
    pub mipmap_bias: f32,
    pub min_lod: f32,
    pub max_lod: f32,
    pub border: [f32; 4],
}

/// `CUDA_TEXTURE_DESC` flags.
pub mod tex_flags {
    pub const READ_AS_INTEGER: u32 = 0x1;
    pub const NORMALIZED_COORDINATES: u32 = 0x2;
    pub const SRGB: u32 = 0x10;
    pub const DISABLE_TRILINEAR_OPTIMIZATION: u32 = 0x20;
    pub const SEAMLESS_CUBEMAP: u32 = 0x40;
}

/// `CUDA_RESOURCE_VIEW_DESC`, as given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ViewDesc {
    pub format: u32,
    pub width: usize,
    pub height: usize,
    pub depth: usize,
    pub first_level: u32,
    pub last_level: u32,
    pub first_layer: u32,
    pub last_layer: u32,
}

/// Arrays and objects of one driver.
pub(crate) struct State {
    arrays: Registry<Array>,
    mipmapped: Registry<MipmappedArray>,
    objects: Mutex<HashMap<u64, TexObject>>,
    /// Texture and surface references by handle (the address of the
    /// module variable that holds the bound object's handle).
    refs: Mutex<HashMap<u64, Arc<TexRef>>>,
}

impl Default for State {
    fn default() -> Self {
        State {
            arrays: Registry::new(HandleKind::Array),
            mipmapped: Registry::new(HandleKind::MipmappedArray),
            objects: Mutex::default(),
            refs: Mutex::default(),
        }
    }
}

/// A module's `.texref` or `.surfref` (`cuModuleGetTexRef`,
/// `cuModuleGetSurfRef`). Kernels read the handle of the object the
/// reference is bound to from the module variable; every change of the
/// binding or its parameters makes a new object and stores its handle
/// there.
#[derive(Debug)]
pub struct TexRef {
    pub home: TexRefHome,
    /// The 8 bytes kernels read the bound object's handle from: its
    /// address is the reference's handle.
    pub slot: u64,
    pub surface: bool,
    pub state: Mutex<TexRefState>,
}

/// Where a texture reference's slot lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TexRefHome {
    /// A variable of this module (`cuModuleGetTexRef`/`GetSurfRef`).
    Module(u64),
    /// Device memory of this device that the reference owns
    /// (`cuTexRefCreate`; no module reads it).
    Own(usize),
}

/// What a texture reference is set to.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TexRefState {
    /// `cuTexRefSetFormat` (for linear and pitched memory).
    pub format: u32,
    pub channels: u32,
    pub texture: TextureDesc,
    pub bound: Option<Resource>,
    /// The object made for the binding (0: none yet).
    pub object: u64,
}

/// Checks an array shape as `cuArray3DCreate` does.
fn check_desc(d: &ArrayDesc) -> Result<ArrayDesc> {
    use array_flags::*;
    let mut d = *d;
    if let Some((f, n)) = format::implied(d.format) {
        if d.channels != n {
            return Err(Error::invalid(format!("format {:#x} has {n} channels, not {}", d.format, d.channels)));
        }
        d.format = f;
    }
    if format::channel(d.format).is_none() {
        let f = cuda_types::CUarray_format(d.format);
        return Err(match f.name() {
            Some(name) if f != cuda_types::CUarray_format::CU_AD_FORMAT_MAX => {
                Error::NotSupported(format!("array format {name} (compressed, packed and YUV formats)"))
            }
            _ => Error::invalid(format!("{:#x} is not an array format", d.format)),
        });
    }
    if !matches!(d.channels, 1 | 2 | 4) {
        return Err(Error::invalid(format!("{} channels (1, 2 or 4)", d.channels)));
    }
    let known = LAYERED | SURFACE_LDST | CUBEMAP | TEXTURE_GATHER | DEPTH_TEXTURE | COLOR_ATTACHMENT | SPARSE | DEFERRED_MAPPING | 0x100;
    if d.flags & !known != 0 {
        return Err(Error::invalid(format!("unknown array flags {:#x}", d.flags & !known)));
    }
    if d.flags & (SPARSE | DEFERRED_MAPPING) != 0 {
        return Err(Error::NotSupported("sparse and deferred-mapping arrays".into()));
    }
    if d.width == 0 {
        return Err(Error::invalid("array width is 0"));
    }
    let layered = d.flags & LAYERED != 0;
    let cube = d.flags & CUBEMAP != 0;
    let (w, h, dp) = (d.width, d.height, d.depth);
    let ok = if cube {
        // Faces are square; 6 faces, or 6 per layer.
        w == h && dp > 0 && dp.is_multiple_of(6) && (layered || dp == 6) && w <= 32768 && dp <= 6 * 2046
    } else if layered {
        dp > 0 && dp <= 2048 && w <= 32768 && h <= 32768
    } else if dp > 0 {
        h > 0 && w <= 16384 && h <= 16384 && dp <= 16384
    } else if h > 0 {
        w <= 131072 && h <= 65536
    } else {
        w <= 131072
    };
    if !ok {
        return Err(Error::invalid(format!(
            "array of {w} x {h} x {dp}{}{} is not a valid shape or exceeds the device's limits",
            if layered { ", layered" } else { "" },
            if cube { ", cubemap" } else { "" }
        )));
    }
    if d.flags & TEXTURE_GATHER != 0 && (h == 0 || dp != 0 || layered || cube) {
        return Err(Error::invalid("texture gather is only for 2-D arrays"));
    }
    Ok(d)
}

impl Driver {
    fn new_array(&self, desc: &ArrayDesc, given_format: u32, parent: Option<u64>) -> Result<Arc<Array>> {
        let ctx = self.current_ctx()?;
        let size = desc
            .element_size()
            .checked_mul(desc.width)
            .and_then(|v| v.checked_mul(desc.rows()))
            .and_then(|v| v.checked_mul(desc.slices()))
            .ok_or_else(|| Error::invalid("array size overflows"))?;
        let base = self.backend.alloc(ctx.device, size).map_err(backend_err)?;
        Ok(self.textures.arrays.insert_with(|h| Array {
            handle: h,
            ctx: ctx.handle,
            device: ctx.device,
            desc: *desc,
            base,
            size,
            parent,
            given_format,
        }))
    }

    /// `cuArrayCreate` / `cuArray3DCreate`.
    pub fn array_create(&self, desc: &ArrayDesc) -> Result<u64> {
        let d = check_desc(desc)?;
        self.current_ctx()?;
        self.check_capture_safe("cuArrayCreate")?;
        Ok(self.new_array(&d, desc.format, None)?.handle)
    }

    /// The live array `h`.
    pub fn array(&self, h: u64) -> Result<Arc<Array>> {
        self.textures.arrays.get(h).ok_or_else(|| Error::handle(format!("{h:#x} is not a CUDA array")))
    }

    /// `cuArrayDestroy`: waits for the device's work, as with `cuMemFree`.
    pub fn array_destroy(&self, h: u64) -> Result<()> {
        let a = self.array(h)?;
        if a.parent.is_some() {
            return Err(Error::handle(format!("{h:#x} is a level of a mipmapped array (cuMipmappedArrayDestroy frees it)")));
        }
        self.textures.arrays.remove(h);
        self.free_array(&a)
    }

    fn free_array(&self, a: &Array) -> Result<()> {
        if let Some(ctx) = self.contexts.get(a.ctx) {
            let _ = ctx.synchronize();
        }
        self.backend.free(a.device, a.base).map_err(backend_err)
    }

    /// `cuArrayGetDescriptor` / `cuArray3DGetDescriptor`.
    pub fn array_descriptor(&self, h: u64) -> Result<ArrayDesc> {
        let a = self.array(h)?;
        Ok(ArrayDesc { format: a.given_format, ..a.desc })
    }

    /// `cuMipmappedArrayCreate`: level `l` is `max(1, size >> l)` in each
    /// dimension the array has (layers and faces stay).
    pub fn mipmapped_array_create(&self, desc: &ArrayDesc, levels: u32) -> Result<u64> {
        let d = check_desc(desc)?;
        self.current_ctx()?;
        if levels == 0 {
            return Err(Error::invalid("a mipmapped array needs at least one level"));
        }
        let cube = d.flags & array_flags::CUBEMAP != 0;
        let layered = d.flags & (array_flags::LAYERED | array_flags::CUBEMAP) != 0;
        let largest = d.width.max(d.height).max(if layered { 0 } else { d.depth });
        let max_levels = usize::BITS - largest.leading_zeros();
        if levels > max_levels {
            return Err(Error::invalid(format!("{levels} levels for a largest extent of {largest} (at most {max_levels})")));
        }
        let mut arrays = Vec::with_capacity(levels as usize);
        let handle = crate::handle::new_handle(HandleKind::MipmappedArray);
        for l in 0..levels {
            let shrink = |v: usize| if v == 0 { 0 } else { (v >> l).max(1) };
            let level = ArrayDesc {
                width: shrink(d.width),
                height: if cube { shrink(d.width) } else { shrink(d.height) },
                depth: if layered { d.depth } else { shrink(d.depth) },
                ..d
            };
            match self.new_array(&level, desc.format, Some(handle)) {
                Ok(a) => arrays.push(a),
                Err(e) => {
                    for a in &arrays {
                        self.textures.arrays.remove(a.handle);
                        let _ = self.free_array(a);
                    }
                    return Err(e);
                }
            }
        }
        self.textures.mipmapped.insert_existing(handle, MipmappedArray { handle, desc: d, levels: arrays });
        Ok(handle)
    }

    pub fn mipmapped_array(&self, h: u64) -> Result<Arc<MipmappedArray>> {
        self.textures.mipmapped.get(h).ok_or_else(|| Error::handle(format!("{h:#x} is not a mipmapped array")))
    }

    /// `cuMipmappedArrayGetLevel`.
    pub fn mipmapped_array_level(&self, h: u64, level: u32) -> Result<u64> {
        let m = self.mipmapped_array(h)?;
        m.levels
            .get(level as usize)
            .map(|a| a.handle)
            .ok_or_else(|| Error::invalid(format!("level {level} of a mipmapped array of {} levels", m.levels.len())))
    }

    /// `cuMipmappedArrayDestroy`.
    pub fn mipmapped_array_destroy(&self, h: u64) -> Result<()> {
        let m = self.textures.mipmapped.remove(h).ok_or_else(|| Error::handle(format!("{h:#x} is not a mipmapped array")))?;
        for a in &m.levels {
            self.textures.arrays.remove(a.handle);
            self.free_array(a)?;
        }
        Ok(())
    }

    /// An array side of a copy: (device address of its first byte, row
    /// pitch, rows per slice), after checking that the region of
    /// `width` bytes x `height` rows x `depth` slices at (`x` bytes, `y`,
    /// `z`) lies inside it.
    pub(crate) fn array_extent(
        &self,
        h: u64,
        x: usize,
        y: usize,
        z: usize,
        width: usize,
        height: usize,
        depth: usize,
    ) -> Result<(u64, usize, usize)> {
        let a = self.array(h)?;
        let pitch = a.pitch();
        let rows = a.desc.rows();
        let slices = a.desc.slices();
        let fits = |o: usize, n: usize, max: usize| o.checked_add(n).is_some_and(|e| e <= max);
        if !fits(x, width, pitch) || !fits(y, height, rows) || !fits(z, depth, slices) {
            return Err(Error::invalid(format!(
                "a copy of {width} bytes x {height} x {depth} at ({x}, {y}, {z}) does not fit the array of {pitch} bytes x {rows} x {slices}"
            )));
        }
        let es = a.desc.element_size();
        if !x.is_multiple_of(es) || !width.is_multiple_of(es) {
            return Err(Error::invalid(format!("array copies move whole {es}-byte elements ({width} bytes at byte {x})")));
        }
        Ok((a.base, pitch, rows))
    }

    // ---- texture and surface objects ----

    fn resource_view(&self, r: &Resource) -> Result<(ArrayDesc, u64, usize, u32)> {
        // (shape, base, pitch, levels)
        match *r {
            Resource::Array(h) => {
                let a = self.array(h)?;
                Ok((a.desc, a.base, a.pitch(), 1))
            }
            Resource::Mipmapped(h) => {
                let m = self.mipmapped_array(h)?;
                let a = &m.levels[0];
                Ok((a.desc, a.base, a.pitch(), m.levels.len() as u32))
            }
            Resource::Linear { ptr, format, channels, size } => {
                let d = check_linear(format, channels)?;
                let es = d.element_size();
                if ptr == 0 || !ptr.is_multiple_of(256) {
                    return Err(Error::invalid(format!("linear texture memory at {ptr:#x} is not aligned to 256 bytes")));
                }
                self.resolve_device(ptr, size)?;
                let width = size / es;
                if width == 0 || width > 1 << 28 {
                    return Err(Error::invalid(format!("{size} bytes is not 1 to 2^28 elements of {es} bytes")));
                }
                Ok((ArrayDesc { width, ..d }, ptr, size, 1))
            }
            Resource::Pitch2D { ptr, format, channels, width, height, pitch } => {
                let d = check_linear(format, channels)?;
                let es = d.element_size();
                if ptr == 0 || !ptr.is_multiple_of(256) {
                    return Err(Error::invalid(format!("pitched texture memory at {ptr:#x} is not aligned to 256 bytes")));
                }
                if width == 0
                    || height == 0
                    || width > 131072
                    || height > 65000
                    || pitch < width * es
                    || !pitch.is_multiple_of(32)
                    || pitch > 2097120
                {
                    return Err(Error::invalid(format!("pitched texture of {width} x {height} elements, pitch {pitch}")));
                }
                self.resolve_device(ptr, pitch * (height - 1) + width * es)?;
                Ok((ArrayDesc { width, height, ..d }, ptr, pitch, 1))
            }
        }
    }

    /// The levels of a mipmapped array as a descriptor's level table
    /// describes them; empty for every other resource.
    fn mip_levels(&self, r: &Resource) -> Result<Vec<device::LevelDesc>> {
        let Resource::Mipmapped(h) = *r else { return Ok(Vec::new()) };
        let m = self.mipmapped_array(h)?;
        Ok(m.levels.iter().map(|a| device::LevelDesc::of(&TexDesc::new(0, &a.desc, a.base, a.pitch(), 1, 0, [0; 3], [0.0; 4]))).collect())
    }

    /// What a resource view (`CUDA_RESOURCE_VIEW_DESC`) selects of an array
    /// or mipmapped array: levels `first_level..=last_level` and layers
    /// `first_layer..=last_layer` (zeros select level 0 and layer 0, as
    /// CUDA documents). Returns the shape, base and pitch of the first
    /// selected level and the selected levels' table (empty for one
    /// level). A view format reads the same bytes as elements of its own
    /// channels (the same element size: CUDA keeps the extent for them);
    /// block-compressed view formats are refused as unsupported, views
    /// that change the extent as invalid (CUDA allows that only with
    /// block-compressed formats).
    fn select_view(&self, r: &Resource, v: ViewDesc) -> Result<(ArrayDesc, u64, usize, Vec<device::LevelDesc>)> {
        let arrays: Vec<Arc<Array>> = match *r {
            Resource::Array(h) => vec![self.array(h)?],
            Resource::Mipmapped(h) => self.mipmapped_array(h)?.levels.clone(),
            _ => return Err(Error::invalid("a resource view is only for arrays and mipmapped arrays")),
        };
        if v.first_level > v.last_level || v.last_level as usize >= arrays.len() {
            return Err(Error::invalid(format!(
                "view of levels {} to {} of a resource of {} level(s)",
                v.first_level,
                v.last_level,
                arrays.len()
            )));
        }
        let first = &arrays[v.first_level as usize];
        let d = match v.format {
            0 => first.desc,
            f => {
                let (format, channels) = format::of_view(f)?;
                let view = ArrayDesc { format, channels, ..first.desc };
                if view.element_size() != first.desc.element_size() {
                    return Err(Error::invalid(format!(
                        "view format {f} has {}-byte elements where the array's have {} bytes",
                        view.element_size(),
                        first.desc.element_size()
                    )));
                }
                view
            }
        };
        let layered = d.flags & array_flags::LAYERED != 0;
        let cube = d.flags & array_flags::CUBEMAP != 0;
        let layers = if layered || cube { d.depth } else { 1 };
        if v.first_layer > v.last_layer || v.last_layer as usize >= layers {
            return Err(Error::invalid(format!("view of layers {} to {} of a resource of {layers} layer(s)", v.first_layer, v.last_layer)));
        }
        let selected = (v.last_layer - v.first_layer + 1) as usize;
        if cube && selected != layers {
            return Err(Error::NotSupported("resource views of some faces or layers of a cubemap".into()));
        }
        let extent = |given: usize, actual: usize| given == 0 || given == actual.max(1);
        let depth_ok = v.depth == 0 || v.depth == selected || v.depth == d.depth.max(1);
        if !extent(v.width, d.width) || !extent(v.height, d.height) || !depth_ok {
            // CUDA: for formats other than block-compressed ones the
            // view's extent "has to be equal to that of the original
            // resource".
            return Err(Error::invalid(format!(
                "a resource view of {} x {} x {} of a level of {} x {} x {} (a view keeps the extent)",
                v.width, v.height, v.depth, d.width, d.height, d.depth
            )));
        }
        let shape = ArrayDesc { depth: if layered { selected } else { d.depth }, ..d };
        let level = |a: &Arc<Array>| {
            let rows = a.desc.height.max(1);
            let skip = (v.first_layer as usize * a.pitch() * rows) as u64;
            let level_shape = ArrayDesc { depth: shape.depth, format: d.format, channels: d.channels, ..a.desc };
            let t = TexDesc::new(0, &level_shape, a.base + skip, a.pitch(), 1, 0, [0; 3], [0.0; 4]);
            device::LevelDesc::of(&t)
        };
        let chosen = &arrays[v.first_level as usize..=v.last_level as usize];
        let table = if chosen.len() > 1 { chosen.iter().map(level).collect() } else { Vec::new() };
        let l0 = level(first);
        Ok((shape, l0.base, first.pitch(), table))
    }

    /// Writes an object's descriptor, followed by its level table when it
    /// has more than one level, into one device allocation.
    fn write_object(&self, obj: TexObject, desc: &TexDesc, levels: &[device::LevelDesc]) -> Result<u64> {
        let head = std::mem::size_of::<TexDesc>();
        let table = if levels.len() > 1 { std::mem::size_of_val(levels) } else { 0 };
        let p = self.backend.alloc(obj.device, head + table).map_err(backend_err)?;
        let mut desc = *desc;
        let mut bytes = Vec::with_capacity(head + table);
        if table != 0 {
            desc.level_table = p + head as u64;
        }
        bytes.extend_from_slice(&desc.to_bytes());
        if table != 0 {
            for l in levels {
                bytes.extend_from_slice(&l.to_bytes());
            }
        }
        if let Err(e) = self.backend.copy_htod(p, &bytes) {
            let _ = self.backend.free(obj.device, p);
            return Err(backend_err(e));
        }
        lock(&self.textures.objects).insert(p, obj);
        Ok(p)
    }

    /// `cuTexObjectCreate`.
    pub fn tex_object_create(&self, resource: Resource, tex: &TextureDesc, view: Option<ViewDesc>) -> Result<u64> {
        let ctx = self.current_ctx()?;
        let (shape, base, pitch, levels, table) = match view {
            Some(v) => {
                let (shape, base, pitch, table) = self.select_view(&resource, v)?;
                (shape, base, pitch, table.len().max(1) as u32, table)
            }
            None => {
                let (shape, base, pitch, levels) = self.resource_view(&resource)?;
                (shape, base, pitch, levels, self.mip_levels(&resource)?)
            }
        };
        let (bytes, signed, float) = format::channel(shape.format).unwrap_or((4, false, false));
        let as_integer = tex.flags & tex_flags::READ_AS_INTEGER != 0;
        for (i, m) in tex.address.iter().enumerate() {
            if *m > 3 {
                return Err(Error::invalid(format!("address mode {m} in dimension {i}")));
            }
        }
        if tex.filter > 1 || tex.mipmap_filter > 1 {
            return Err(Error::invalid(format!("filter mode {} / mipmap filter mode {}", tex.filter, tex.mipmap_filter)));
        }
        // 32-bit integers have no normalized form: they are always read
        // as integers (cudart leaves the flag clear for them).
        let returns_float = float || (!as_integer && bytes < 4);
        if tex.filter == 1 && !returns_float {
            return Err(Error::invalid("linear filtering needs a texture that returns floats"));
        }
        let _ = signed;
        let linear_resource = matches!(resource, Resource::Linear { .. });
        let mut flags = 0;
        if tex.flags & tex_flags::NORMALIZED_COORDINATES != 0 && !linear_resource {
            flags |= device::NORMALIZED;
        }
        if returns_float && !float {
            flags |= device::NORMALIZED_FLOAT;
        }
        if tex.flags & tex_flags::SRGB != 0 {
            flags |= device::SRGB;
        }
        if tex.filter == 1 && !linear_resource {
            flags |= device::LINEAR_FILTER;
        }
        if linear_resource {
            flags |= device::LINEAR_RESOURCE;
        }
        if tex.mipmap_filter == 1 {
            flags |= device::MIPMAP_LINEAR;
        }
        let mut desc = device::TexDesc::new(device::TEX_MAGIC, &shape, base, pitch, levels, flags, tex.address, tex.border);
        desc.lod_bias = tex.mipmap_bias;
        desc.min_lod = tex.min_lod;
        desc.max_lod = tex.max_lod;
        let obj = TexObject { ctx: ctx.handle, device: ctx.device, resource, texture: Some(*tex), view };
        self.write_object(obj, &desc, &table)
    }

    /// `cuSurfObjectCreate`: arrays made with `CUDA_ARRAY3D_SURFACE_LDST`.
    pub fn surf_object_create(&self, resource: Resource) -> Result<u64> {
        let ctx = self.current_ctx()?;
        let Resource::Array(h) = resource else {
            return Err(Error::invalid("a surface object's resource must be an array"));
        };
        let a = self.array(h)?;
        if a.desc.flags & array_flags::SURFACE_LDST == 0 {
            return Err(Error::invalid("the array was not created with CUDA_ARRAY3D_SURFACE_LDST"));
        }
        let desc = device::TexDesc::new(device::SURF_MAGIC, &a.desc, a.base, a.pitch(), 1, 0, [1; 3], [0.0; 4]);
        let obj = TexObject { ctx: ctx.handle, device: ctx.device, resource, texture: None, view: None };
        self.write_object(obj, &desc, &[])
    }

    /// The live object `h` of the given kind.
    pub fn tex_object(&self, h: u64, surface: bool) -> Result<TexObject> {
        lock(&self.textures.objects)
            .get(&h)
            .filter(|o| o.texture.is_none() == surface)
            .cloned()
            .ok_or_else(|| Error::invalid(format!("{h:#x} is not a {} object", if surface { "surface" } else { "texture" })))
    }

    /// `cuTexObjectDestroy` / `cuSurfObjectDestroy`. The descriptor is
    /// overwritten before its memory is freed, so a kernel still holding
    /// the handle fails instead of reading stale data.
    pub fn tex_object_destroy(&self, h: u64, surface: bool) -> Result<()> {
        let obj = self.tex_object(h, surface)?;
        if let Some(ctx) = self.contexts.get(obj.ctx) {
            let _ = ctx.synchronize();
        }
        lock(&self.textures.objects).remove(&h);
        let _ = self.backend.copy_htod(h, &[0u8; 4]);
        self.backend.free(obj.device, h).map_err(backend_err)
    }
}

impl Driver {
    /// `cuModuleGetTexRef` / `cuModuleGetSurfRef`: the module's `.global`
    /// reference `name` (an 8-byte variable); the same handle every time.
    pub fn module_get_texref(&self, module: u64, name: &str, surface: bool) -> Result<u64> {
        let (slot, size) = self.module_get_global(module, name)?;
        if size != 8 {
            return Err(Error::NotFound(format!("{name:?} is not a texture or surface reference of the module")));
        }
        let mut refs = lock(&self.textures.refs);
        if let Some(r) = refs.get(&slot) {
            if r.surface != surface {
                return Err(Error::NotFound(format!(
                    "{name:?} is already used as a {} reference",
                    if r.surface { "surface" } else { "texture" }
                )));
            }
            return Ok(slot);
        }
        refs.insert(slot, Arc::new(TexRef { home: TexRefHome::Module(module), slot, surface, state: Mutex::default() }));
        Ok(slot)
    }

    /// `cuTexRefCreate`: a texture reference of no module, set and queried
    /// as a module's are. Its handle is the address of 8 bytes of device
    /// memory it owns (where a module's reference has its variable), so
    /// binding it makes and frees objects exactly as a module's does.
    pub fn texref_create(&self) -> Result<u64> {
        let ctx = self.current_ctx()?;
        let slot = self.backend.alloc(ctx.device, 8).map_err(backend_err)?;
        if let Err(e) = self.backend.copy_htod(slot, &[0u8; 8]) {
            let _ = self.backend.free(ctx.device, slot);
            return Err(backend_err(e));
        }
        let r = TexRef { home: TexRefHome::Own(ctx.device), slot, surface: false, state: Mutex::default() };
        lock(&self.textures.refs).insert(slot, Arc::new(r));
        Ok(slot)
    }

    /// `cuTexRefDestroy`: a reference made by `cuTexRefCreate`, with the
    /// object it is bound to. A module's references go with the module.
    pub fn texref_destroy(&self, h: u64) -> Result<()> {
        let r = self.texref(h, false)?;
        let TexRefHome::Own(device) = r.home else {
            return Err(Error::invalid(format!("{h:#x} is a module's texture reference: it goes when the module is unloaded")));
        };
        lock(&self.textures.refs).remove(&h);
        let object = lock(&r.state).object;
        if object != 0 {
            let _ = self.tex_object_destroy(object, false);
        }
        self.backend.free(device, r.slot).map_err(backend_err)
    }

    /// The live reference `h` of the given kind.
    pub fn texref(&self, h: u64, surface: bool) -> Result<Arc<TexRef>> {
        let r = lock(&self.textures.refs).get(&h).cloned().filter(|r| r.surface == surface);
        let r = r.ok_or_else(|| Error::handle(format!("{h:#x} is not a {} reference", if surface { "surface" } else { "texture" })))?;
        if let TexRefHome::Module(m) = r.home {
            self.module(m).map_err(|_| Error::handle(format!("{h:#x} belongs to an unloaded module")))?;
        }
        Ok(r)
    }

    /// Changes a reference and rebinds it: the object for the new state
    /// replaces the old one in the module variable (after the context's
    /// work, which may still read the old one, is done). A binding whose
    /// format is not known yet (memory bound before `cuTexRefSetFormat`)
    /// waits for it.
    pub fn texref_update(&self, h: u64, surface: bool, change: impl FnOnce(&mut TexRefState) -> Result<()>) -> Result<()> {
        let r = self.texref(h, surface)?;
        let mut st = lock(&r.state);
        let mut next = *st;
        change(&mut next)?;
        let ready = match next.bound {
            Some(Resource::Linear { format, .. } | Resource::Pitch2D { format, .. }) => format != 0,
            Some(_) => true,
            None => false,
        };
        let new = match next.bound {
            Some(res) if ready => {
                if surface {
                    self.surf_object_create(res)?
                } else {
                    self.tex_object_create(res, &next.texture, None)?
                }
            }
            _ => 0,
        };
        let ctx = self.current_ctx()?;
        let _ = ctx.synchronize();
        if let Err(e) = self.backend.copy_htod(r.slot, &new.to_le_bytes()) {
            if new != 0 {
                let _ = self.tex_object_destroy(new, surface);
            }
            return Err(backend_err(e));
        }
        if st.object != 0 {
            let _ = self.tex_object_destroy(st.object, surface);
        }
        next.object = new;
        *st = next;
        Ok(())
    }

    /// The state of a texture reference.
    pub fn texref_state(&self, h: u64, surface: bool) -> Result<TexRefState> {
        Ok(*lock(&self.texref(h, surface)?.state))
    }

    /// Forgets the references of an unloaded module and frees their objects.
    pub(crate) fn forget_texrefs(&self, module: u64) {
        let gone: Vec<Arc<TexRef>> = {
            let mut refs = lock(&self.textures.refs);
            let keys: Vec<u64> = refs.iter().filter(|(_, r)| r.home == TexRefHome::Module(module)).map(|(k, _)| *k).collect();
            keys.iter().filter_map(|k| refs.remove(k)).collect()
        };
        for r in gone {
            let object = lock(&r.state).object;
            if object != 0 {
                let _ = self.tex_object_destroy(object, r.surface);
            }
        }
    }
}

fn check_linear(format: u32, channels: u32) -> Result<ArrayDesc> {
    let d = check_desc(&ArrayDesc { width: 1, format, channels, ..ArrayDesc::default() })?;
    Ok(ArrayDesc { width: 0, ..d })
}

/// The device side: the descriptor compiled code reads through a handle,
/// and texture sampling and surface access in software.
pub mod device {
    use super::ArrayDesc;

    pub const TEX_MAGIC: u32 = 0x5845_5441; // "ATEX"
    pub const SURF_MAGIC: u32 = 0x5255_5341; // "ASUR"

    // TexDesc::flags
    pub const NORMALIZED: u32 = 1;
    pub const NORMALIZED_FLOAT: u32 = 2;
    pub const SRGB: u32 = 4;
    pub const LINEAR_FILTER: u32 = 8;
    pub const LAYERED: u32 = 16;
    pub const CUBEMAP: u32 = 32;
    pub const LINEAR_RESOURCE: u32 = 64;
    /// Linear filtering between mipmap levels (`CU_TR_FILTER_MODE_LINEAR`
    /// as the mipmap filter mode).
    pub const MIPMAP_LINEAR: u32 = 128;

    /// A texture or surface object in device memory. The layout is part of
    /// the device ABI.
    #[repr(C)]
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct TexDesc {
        pub magic: u32,
        /// `CUarray_format` of one channel.
        pub format: u32,
        pub channels: u32,
        pub flags: u32,
        /// `CUaddress_mode` per dimension.
        pub address: [u32; 3],
        /// 1, 2 or 3 (a layered or cubemap array counts its faces' dimensions).
        pub dims: u32,
        pub width: u32,
        pub height: u32,
        pub depth: u32,
        pub layers: u32,
        pub levels: u32,
        pub _pad: u32,
        pub base: u64,
        /// Bytes from one row to the next.
        pub pitch: u64,
        /// Bytes from one slice (depth index, layer, face) to the next.
        pub slice: u64,
        pub border: [f32; 4],
        /// `mipmapLevelBias`, `minMipmapLevelClamp`, `maxMipmapLevelClamp`.
        pub lod_bias: f32,
        pub min_lod: f32,
        pub max_lod: f32,
        pub _pad2: u32,
        /// Device address of `levels` [`LevelDesc`]s (level 0 first), or 0
        /// when the resource has one level.
        pub level_table: u64,
    }

    /// Where one mipmap level's texels are and its extent (the fields of
    /// [`TexDesc`] that change from level to level).
    #[repr(C)]
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct LevelDesc {
        pub base: u64,
        pub pitch: u64,
        pub slice: u64,
        pub width: u32,
        pub height: u32,
        pub depth: u32,
        pub _pad: u32,
    }

    impl LevelDesc {
        /// The level a descriptor describes.
        pub fn of(d: &TexDesc) -> LevelDesc {
            LevelDesc { base: d.base, pitch: d.pitch, slice: d.slice, width: d.width, height: d.height, depth: d.depth, _pad: 0 }
        }

        pub fn to_bytes(&self) -> Vec<u8> {
            let p = (self as *const LevelDesc).cast::<u8>();
            // SAFETY: a plain repr(C) value without padding.
            unsafe { std::slice::from_raw_parts(p, std::mem::size_of::<LevelDesc>()) }.to_vec()
        }
    }

    impl TexDesc {
        #[allow(clippy::too_many_arguments)]
        pub fn new(
            magic: u32,
            a: &ArrayDesc,
            base: u64,
            pitch: usize,
            levels: u32,
            mut flags: u32,
            address: [u32; 3],
            border: [f32; 4],
        ) -> TexDesc {
            let layered = a.flags & super::array_flags::LAYERED != 0;
            let cube = a.flags & super::array_flags::CUBEMAP != 0;
            if layered {
                flags |= LAYERED;
            }
            if cube {
                flags |= CUBEMAP;
            }
            let dims = if a.height == 0 {
                1
            } else if a.depth == 0 || layered || cube {
                2
            } else {
                3
            };
            let rows = a.height.max(1);
            TexDesc {
                magic,
                format: a.format,
                channels: a.channels,
                flags,
                address,
                dims,
                width: a.width as u32,
                height: rows as u32,
                depth: if dims == 3 { a.depth as u32 } else { 1 },
                layers: if layered || cube { a.depth as u32 } else { 1 },
                levels,
                _pad: 0,
                base,
                pitch: pitch as u64,
                slice: (pitch * rows) as u64,
                border,
                lod_bias: 0.0,
                min_lod: 0.0,
                max_lod: 0.0,
                _pad2: 0,
                level_table: 0,
            }
        }

        pub fn to_bytes(&self) -> Vec<u8> {
            let p = (self as *const TexDesc).cast::<u8>();
            // SAFETY: a plain repr(C) value without padding holes that matter.
            unsafe { std::slice::from_raw_parts(p, std::mem::size_of::<TexDesc>()) }.to_vec()
        }

        fn element_size(&self) -> u64 {
            super::format::channel(self.format).map_or(4, |(b, _, _)| u64::from(b)) * u64::from(self.channels)
        }
    }

    /// Texture geometries of `tex`/`tld4` (the PTX's coordinate layouts).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Geometry {
        D1,
        D2,
        D3,
        A1d,
        A2d,
        Cube,
        Acube,
    }

    /// What a fetch returns.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Ret {
        F32,
        S32,
        U32,
    }

    /// One `tex` or `tld4`.
    #[derive(Debug, Clone, Copy)]
    pub struct Fetch {
        pub geometry: Geometry,
        /// Coordinates are `.s32` texel indices.
        pub int_coords: bool,
        pub result: Ret,
        /// `tld4` component (0..3).
        pub gather: Option<u32>,
    }

    fn half_to_f32(h: u16) -> f32 {
        let sign = u32::from(h >> 15) << 31;
        let exp = u32::from((h >> 10) & 0x1f);
        let man = u32::from(h & 0x3ff);
        let bits = if exp == 0 {
            if man == 0 {
                sign
            } else {
                // subnormal: normalise
                let mut e = 127 - 15 + 1;
                let mut m = man;
                while m & 0x400 == 0 {
                    m <<= 1;
                    e -= 1;
                }
                sign | (e << 23) | ((m & 0x3ff) << 13)
            }
        } else if exp == 31 {
            sign | 0x7f80_0000 | (man << 13)
        } else {
            sign | ((exp + 127 - 15) << 23) | (man << 13)
        };
        f32::from_bits(bits)
    }

    /// A texel's channels: raw integers (sign-extended) or f32 bits.
    ///
    /// # Safety
    /// `d.base` must address the descriptor's memory.
    unsafe fn texel(d: &TexDesc, x: u64, y: u64, z: u64) -> [u32; 4] {
        let (bytes, signed, float) = super::format::channel(d.format).unwrap_or((4, false, false));
        let addr = d.base + z * d.slice + y * d.pitch + x * d.element_size();
        let mut v = [0u32; 4];
        for (c, out) in v.iter_mut().enumerate().take(d.channels as usize) {
            let p = (addr + c as u64 * u64::from(bytes)) as *const u8;
            // SAFETY: inside the resource (coordinates were resolved).
            *out = unsafe {
                match (bytes, signed, float) {
                    (1, false, _) => u32::from(p.read()),
                    (1, true, _) => p.cast::<i8>().read() as i32 as u32,
                    (2, _, true) => half_to_f32(p.cast::<u16>().read_unaligned()).to_bits(),
                    (2, false, _) => u32::from(p.cast::<u16>().read_unaligned()),
                    (2, true, _) => p.cast::<i16>().read_unaligned() as i32 as u32,
                    _ => p.cast::<u32>().read_unaligned(),
                }
            };
        }
        v
    }

    fn srgb_to_linear(c: f32) -> f32 {
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    }

    /// A texel as the fetch returns it: floats (converted per the read
    /// mode) or integers; missing channels read as 0 and alpha as 1.
    fn convert(d: &TexDesc, raw: [u32; 4], float_result: bool) -> [u32; 4] {
        let (bytes, signed, float) = super::format::channel(d.format).unwrap_or((4, false, false));
        let n = d.channels as usize;
        let mut out = [0u32; 4];
        for (c, o) in out.iter_mut().enumerate() {
            if c >= n {
                *o = if c == 3 {
                    if float_result {
                        1.0f32.to_bits()
                    } else {
                        1
                    }
                } else {
                    0
                };
                continue;
            }
            *o = if float || !float_result || d.flags & NORMALIZED_FLOAT == 0 {
                raw[c]
            } else {
                let max = ((1u64 << (bytes * 8 - u32::from(signed))) - 1) as f32;
                let v = if signed { (raw[c] as i32 as f32 / max).max(-1.0) } else { raw[c] as f32 / max };
                let v = if d.flags & SRGB != 0 && c < 3 && !signed { srgb_to_linear(v) } else { v };
                v.to_bits()
            };
        }
        out
    }

    /// Applies an address mode to texel index `i` of `n`; `None`: the
    /// border colour.
    fn address(i: i64, n: u32, mode: u32, normalized: bool) -> Option<u64> {
        let n = i64::from(n.max(1));
        // Wrap and mirror need normalised coordinates; otherwise they clamp.
        let mode = if !normalized && (mode == 0 || mode == 2) { 1 } else { mode };
        Some(match mode {
            0 => i.rem_euclid(n),
            2 => {
                let m = i.rem_euclid(2 * n);
                if m >= n {
                    2 * n - 1 - m
                } else {
                    m
                }
            }
            3 => {
                if i < 0 || i >= n {
                    return None;
                }
                i
            }
            _ => i.clamp(0, n - 1),
        } as u64)
    }

    /// The linear filter's weight for fraction `f`: 9-bit fixed point with
    /// 8 fractional bits (CUDA programming guide, texture fetching).
    fn weight(f: f32) -> f32 {
        (f * 256.0).round() / 256.0
    }

    /// A float coordinate scaled to texel space, kept within ±2^31 texels
    /// (far outside any texture: the address mode gives the same texel
    /// classes, and index arithmetic cannot overflow).
    fn scale(c: f32, n: u32, normalized: bool) -> f32 {
        const LIMIT: f32 = 2_147_483_648.0;
        let u = if normalized { c * n as f32 } else { c };
        // NaN reads as 0 (an assumption: the hardware's conversion to
        // fixed point is not documented).
        if u.is_nan() {
            0.0
        } else {
            u.clamp(-LIMIT, LIMIT)
        }
    }

    /// Picks a cubemap face and its normalised coordinates from a
    /// direction (CUDA programming guide, cubemap textures).
    fn cube_face(x: f32, y: f32, z: f32) -> (u32, f32, f32) {
        let (ax, ay, az) = (x.abs(), y.abs(), z.abs());
        let (face, m, s, t) = if ax >= ay && ax >= az {
            if x >= 0.0 {
                (0, ax, -z, -y)
            } else {
                (1, ax, z, -y)
            }
        } else if ay >= az {
            if y >= 0.0 {
                (2, ay, x, z)
            } else {
                (3, ay, x, -z)
            }
        } else if z >= 0.0 {
            (4, az, x, -y)
        } else {
            (5, az, -x, -y)
        };
        (face, (s / m + 1.0) * 0.5, (t / m + 1.0) * 0.5)
    }

    /// Samples a texture object. Returns the four result registers.
    ///
    /// # Safety
    /// `d` must be a live texture descriptor whose memory is readable.
    pub unsafe fn sample(d: &TexDesc, f: &Fetch, c: [u32; 4]) -> [u32; 4] {
        let float_result = f.result == Ret::F32;
        let fc = |i: usize| f32::from_bits(c[i]);
        let layers = d.layers.max(1);
        let clamp_layer = |l: u32| u64::from(l.min(layers - 1));
        // (coordinates, layer/face slice, normalized, address modes, dims)
        let mut normalized = d.flags & NORMALIZED != 0;
        let mut modes = d.address;
        let (coords, slice): ([f32; 3], u64) = match f.geometry {
            Geometry::D1 | Geometry::D2 | Geometry::D3 if f.int_coords => {
                let idx = [c[0] as i32, c[1] as i32, c[2] as i32];
                return unsafe { fetch_int(d, f, idx, 0) };
            }
            Geometry::A1d | Geometry::A2d if f.int_coords => {
                let idx = [c[1] as i32, c[2] as i32, 0];
                return unsafe { fetch_int(d, f, idx, clamp_layer(c[0])) };
            }
            Geometry::D1 => ([fc(0), 0.0, 0.0], 0),
            Geometry::D2 => ([fc(0), fc(1), 0.0], 0),
            Geometry::D3 => ([fc(0), fc(1), fc(2)], 0),
            Geometry::A1d => ([fc(1), 0.0, 0.0], clamp_layer(c[0])),
            Geometry::A2d => ([fc(1), fc(2), 0.0], clamp_layer(c[0])),
            Geometry::Cube | Geometry::Acube => {
                let (base, x, y, z) =
                    if f.geometry == Geometry::Acube { (c[0].saturating_mul(6), fc(1), fc(2), fc(3)) } else { (0, fc(0), fc(1), fc(2)) };
                let (face, s, t) = cube_face(x, y, z);
                normalized = true;
                modes = [1; 3];
                ([s, t, 0.0], u64::from(base.saturating_add(face).min(layers - 1)))
            }
        };
        let dims = match f.geometry {
            Geometry::D1 | Geometry::A1d => 1,
            Geometry::D3 => 3,
            _ => 2,
        }
        .min(d.dims as usize)
        .max(1);
        let size = [d.width, d.height, d.depth];
        let border = |float: bool| -> [u32; 4] {
            if float {
                d.border.map(f32::to_bits)
            } else {
                d.border.map(|b| b as i32 as u32)
            }
        };
        let tap = |idx: [i64; 3]| -> [u32; 4] {
            let mut at = [0u64; 3];
            for k in 0..dims {
                match address(idx[k], size[k], modes[k], normalized) {
                    Some(v) => at[k] = v,
                    None => return border(float_result),
                }
            }
            let z = if dims == 3 { at[2] } else { slice };
            // SAFETY: in range after addressing.
            convert(d, unsafe { texel(d, at[0], at[1], z) }, float_result)
        };
        let linear = d.flags & LINEAR_FILTER != 0 && float_result;
        if let Some(comp) = f.gather {
            // tld4: the four texels of the bilinear footprint.
            let u = scale(coords[0], size[0], normalized) - 0.5;
            let v = scale(coords[1], size[1], normalized) - 0.5;
            let (i, j) = (u.floor() as i64, v.floor() as i64);
            let order = [[i, j + 1], [i + 1, j + 1], [i + 1, j], [i, j]];
            return order.map(|[x, y]| tap([x, y, 0])[comp as usize & 3]);
        }
        if !linear {
            let mut idx = [0i64; 3];
            for k in 0..dims {
                idx[k] = scale(coords[k], size[k], normalized).floor() as i64;
            }
            return tap(idx);
        }
        let mut base = [0i64; 3];
        let mut w = [[1.0f32, 0.0]; 3];
        for k in 0..dims {
            let u = scale(coords[k], size[k], normalized) - 0.5;
            let i = u.floor();
            let a = weight(u - i);
            base[k] = i as i64;
            w[k] = [1.0 - a, a];
        }
        let mut acc = [0.0f32; 4];
        let n = 1usize << dims;
        for corner in 0..n {
            let mut idx = base;
            let mut wt = 1.0f32;
            for k in 0..dims {
                let b = (corner >> k) & 1;
                idx[k] += b as i64;
                wt *= w[k][b];
            }
            if wt == 0.0 {
                continue;
            }
            let t = tap(idx);
            for ch in 0..4 {
                acc[ch] += wt * f32::from_bits(t[ch]);
            }
        }
        acc.map(f32::to_bits)
    }

    /// How `tex.level` and `tex.grad` choose a mipmap level.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Lod {
        /// `tex.level`: the level of detail.
        Level(f32),
        /// `tex.grad`: the coordinates' derivatives along x and along y
        /// (as many components as the geometry has coordinates).
        Grad([f32; 3], [f32; 3]),
    }

    /// The length of the longer of the two gradients in level-0 texels
    /// (the isotropic footprint of OpenGL 4.6, section 8.14.1: the scale
    /// factor rho). Cubemap gradients are of the direction; they are
    /// projected onto the face the direction selects (section 8.13).
    pub(crate) fn footprint(d: &TexDesc, g: Geometry, c: [f32; 4], dx: [f32; 3], dy: [f32; 3]) -> f32 {
        let normalized = d.flags & NORMALIZED != 0;
        let size = [d.width, d.height, d.depth].map(|n| n.max(1) as f32);
        let rho = |v: [f32; 3], n: usize, scale: [f32; 3]| -> f32 { (0..n).map(|k| (v[k] * scale[k]).powi(2)).sum::<f32>().sqrt() };
        match g {
            Geometry::Cube | Geometry::Acube => {
                let p = if g == Geometry::Acube { [c[1], c[2], c[3]] } else { [c[0], c[1], c[2]] };
                // The face's major axis and its (s, t) components, signed
                // as `cube_face` picks them.
                let (ax, ay, az) = (p[0].abs(), p[1].abs(), p[2].abs());
                let pick = |v: [f32; 3]| -> (f32, f32, f32) {
                    if ax >= ay && ax >= az {
                        let sg = if p[0] >= 0.0 { 1.0 } else { -1.0 };
                        (sg * v[0], -sg * v[2], -v[1])
                    } else if ay >= az {
                        let sg = if p[1] >= 0.0 { 1.0 } else { -1.0 };
                        (sg * v[1], v[0], sg * v[2])
                    } else {
                        let sg = if p[2] >= 0.0 { 1.0 } else { -1.0 };
                        (sg * v[2], sg * v[0], -v[1])
                    }
                };
                let (m, sc, tc) = pick(p);
                let face = |v: [f32; 3]| -> [f32; 3] {
                    let (dm, ds, dt) = pick(v);
                    // d/dx of (sc / m + 1) / 2
                    [0.5 * (ds * m - sc * dm) / (m * m), 0.5 * (dt * m - tc * dm) / (m * m), 0.0]
                };
                let scale = [size[0], size[0], 1.0];
                rho(face(dx), 2, scale).max(rho(face(dy), 2, scale))
            }
            _ => {
                let n = match g {
                    Geometry::D1 | Geometry::A1d => 1,
                    Geometry::D3 => 3,
                    _ => 2,
                };
                let scale = if normalized { size } else { [1.0; 3] };
                rho(dx, n, scale).max(rho(dy, n, scale))
            }
        }
    }

    /// `tex.level` and `tex.grad`: the level of detail, plus the texture's
    /// bias, clamped to its `[min, max]` level clamp and to its levels;
    /// then the nearest level (the mipmap filter mode is point) or the two
    /// levels around it mixed with an 8-bit weight (linear), as the linear
    /// filter weighs texels. A resource of one level samples it. Integer
    /// coordinates address the chosen level's texels; unnormalized float
    /// coordinates are in level-0 texels and scale with the level.
    ///
    /// # Safety
    /// As [`sample`]; `d.level_table`, when not 0, addresses `d.levels`
    /// level descriptors.
    pub unsafe fn sample_mip(d: &TexDesc, f: &Fetch, c: [u32; 4], lod: Lod) -> [u32; 4] {
        if d.levels <= 1 || d.level_table == 0 {
            // SAFETY: per the contract.
            return unsafe { sample(d, f, c) };
        }
        let fc = c.map(f32::from_bits);
        let base = match lod {
            Lod::Level(l) => l,
            Lod::Grad(dx, dy) => footprint(d, f.geometry, fc, dx, dy).log2(),
        };
        let top = (d.levels - 1) as f32;
        // NaN (a NaN level, or 0 x infinity in a gradient) selects level 0
        // (an assumption, as for NaN coordinates).
        let lambda = (base + d.lod_bias).max(d.min_lod).min(d.max_lod);
        let lambda = if lambda.is_nan() { 0.0 } else { lambda.clamp(0.0, top) };
        // SAFETY: per the contract (level < levels).
        let at = |level: u32| unsafe { sample_level(d, f, c, level) };
        if d.flags & MIPMAP_LINEAR == 0 || f.result != Ret::F32 {
            // Nearest: ceil(lambda + 1/2) - 1 (OpenGL 4.6, 8.14.3).
            let level = ((lambda + 0.5).ceil() - 1.0).clamp(0.0, top);
            return at(level as u32);
        }
        let lower = lambda.floor();
        let w = weight(lambda - lower);
        let a = at(lower as u32);
        if w == 0.0 || lower >= top {
            return a;
        }
        let b = at(lower as u32 + 1);
        let mut out = [0u32; 4];
        for k in 0..4 {
            out[k] = ((1.0 - w) * f32::from_bits(a[k]) + w * f32::from_bits(b[k])).to_bits();
        }
        out
    }

    /// [`sample`] at one level of a mipmapped texture.
    ///
    /// # Safety
    /// As [`sample_mip`], with `level < d.levels`.
    unsafe fn sample_level(d: &TexDesc, f: &Fetch, c: [u32; 4], level: u32) -> [u32; 4] {
        // SAFETY: per the contract.
        let l = unsafe { (d.level_table as *const LevelDesc).add(level as usize).read_unaligned() };
        let mut at = *d;
        at.base = l.base;
        at.pitch = l.pitch;
        at.slice = l.slice;
        at.width = l.width;
        at.height = l.height;
        at.depth = l.depth;
        let mut c = c;
        if !f.int_coords && d.flags & NORMALIZED == 0 {
            let first = match f.geometry {
                Geometry::A1d | Geometry::A2d => 1,
                _ => 0,
            };
            let n = match f.geometry {
                Geometry::D1 | Geometry::A1d => 1,
                Geometry::D3 => 3,
                Geometry::D2 | Geometry::A2d => 2,
                // Cubemaps are always addressed by direction.
                Geometry::Cube | Geometry::Acube => 0,
            };
            let ratio = [l.width as f32 / d.width as f32, l.height as f32 / d.height as f32, l.depth as f32 / d.depth as f32];
            for k in 0..n {
                c[first + k] = (f32::from_bits(c[first + k]) * ratio[k]).to_bits();
            }
        }
        // SAFETY: the level's memory, per the contract.
        unsafe { sample(&at, f, c) }
    }

    /// A fetch with integer texel coordinates (`tex1Dfetch` and the
    /// `.s32` coordinate forms): point sampling; linear memory reads
    /// zeros outside its range.
    unsafe fn fetch_int(d: &TexDesc, f: &Fetch, idx: [i32; 3], slice: u64) -> [u32; 4] {
        let float_result = f.result == Ret::F32;
        let dims = (d.dims as usize).max(1);
        let size = [d.width, d.height, d.depth];
        let mut at = [0u64; 3];
        for k in 0..dims {
            let i = i64::from(idx[k]);
            if d.flags & LINEAR_RESOURCE != 0 {
                if i < 0 || i >= i64::from(size[k]) {
                    return convert(d, [0; 4], float_result);
                }
                at[k] = i as u64;
                continue;
            }
            match address(i, size[k], d.address[k], false) {
                Some(v) => at[k] = v,
                None => return if float_result { d.border.map(f32::to_bits) } else { d.border.map(|b| b as i32 as u32) },
            }
        }
        let z = if dims == 3 { at[2] } else { slice };
        // SAFETY: in range.
        convert(d, unsafe { texel(d, at[0], at[1], z) }, float_result)
    }

    /// Surface geometries of `suld`/`sust`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum SurfGeometry {
        D1,
        D2,
        D3,
        A1d,
        A2d,
    }

    /// Out-of-range handling of `suld`/`sust`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Clamp {
        Trap,
        Clamp,
        Zero,
    }

    /// Where a surface access goes.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Access {
        /// This address.
        At(u64),
        /// Nowhere: a load reads zeros, a store is dropped (`.zero`).
        Zero,
        /// Out of range in the `.trap` mode.
        Trap,
    }

    /// Where a surface access goes. `x` is a byte offset (`.b` accesses);
    /// `bytes` the access size.
    pub fn surface_address(d: &TexDesc, g: SurfGeometry, c: [u32; 4], bytes: u64, clamp: Clamp) -> Access {
        let (x, y, z, layer) = match g {
            SurfGeometry::D1 => (c[0], 0, 0, 0),
            SurfGeometry::D2 => (c[0], c[1], 0, 0),
            SurfGeometry::D3 => (c[0], c[1], c[2], 0),
            SurfGeometry::A1d => (c[1], 0, 0, c[0]),
            SurfGeometry::A2d => (c[1], c[2], 0, c[0]),
        };
        let (x, y, z, layer) = (i64::from(x as i32), i64::from(y as i32), i64::from(z as i32), u64::from(layer));
        let row = i64::from(d.width) * d.element_size() as i64;
        let limits = [row - bytes as i64, i64::from(d.height) - 1, i64::from(d.depth) - 1];
        let mut v = [x, y, z];
        if limits[0] < 0 {
            // The access is wider than a row: nothing to clamp to.
            return if clamp == Clamp::Zero { Access::Zero } else { Access::Trap };
        }
        let mut inside = layer < u64::from(d.layers.max(1)) && x.rem_euclid(bytes as i64) == 0;
        for k in 0..3 {
            if v[k] < 0 || v[k] > limits[k] {
                inside = false;
            }
        }
        if !inside {
            match clamp {
                Clamp::Trap => return Access::Trap,
                Clamp::Zero => return Access::Zero,
                Clamp::Clamp => {
                    for k in 0..3 {
                        v[k] = v[k].clamp(0, limits[k].max(0));
                    }
                    v[0] -= v[0].rem_euclid(bytes as i64);
                }
            }
        }
        let layer = layer.min(u64::from(d.layers.max(1)) - 1);
        let slice = if d.dims == 3 { v[2] as u64 } else { layer };
        Access::At(d.base + slice * d.slice + v[1] as u64 * d.pitch + v[0] as u64)
    }

    /// What `sust.p` of `n` 32-bit values (R, G, B, A in order) writes:
    /// `(sample bytes, bytes written)`, the values' bytes going as they are
    /// to the sample's first channels. The ISA reads the values as f32 for
    /// float formats and as u32 or s32 for integer ones, then converts them
    /// to the format; formats with 32-bit channels store them as they are.
    /// Narrower formats are refused: how the hardware narrows (saturation
    /// of integers, rounding to half floats and normalized integers) is not
    /// documented.
    pub fn formatted_store(d: &TexDesc, n: usize) -> Result<(u64, usize), String> {
        let Some((bytes, _, _)) = super::format::channel(d.format) else {
            return Err(format!("a surface of format {:#x}", d.format));
        };
        if bytes != 4 {
            return Err(format!(
                "a surface with {}-bit channels (format {:#x}): the conversion is not documented; \
                 anycuda converts only to 32-bit channels",
                bytes * 8,
                d.format
            ));
        }
        Ok((d.element_size(), 4 * n.min(d.channels as usize)))
    }

    /// Whether a surface's samples are signed integers (`sured.p`);
    /// `None` for float formats.
    pub fn integer_signedness(d: &TexDesc) -> Option<bool> {
        match super::format::channel(d.format) {
            Some((_, signed, false)) => Some(signed),
            _ => None,
        }
    }

    /// Reductions into surface memory, one lock for those whose address
    /// is not aligned to their size (rows of a surface are packed, so a
    /// value may straddle its natural alignment).
    static UNALIGNED: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// `sured`'s read-modify-write at `a` of `size` (4 or 8) bytes:
    /// `red` is one of `cpu_abi::tex::RED_*` (add, min, max, and, or).
    ///
    /// # Safety
    /// `a` addresses `size` writable bytes.
    pub unsafe fn reduce(a: u64, size: u64, red: u32, signed: bool, v: u64) {
        use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
        let combine = |old: u64| -> u64 {
            match (size, red, signed) {
                (4, 0, _) => u64::from((old as u32).wrapping_add(v as u32)),
                (4, 1, false) => u64::from((old as u32).min(v as u32)),
                (4, 1, true) => u64::from((old as i32).min(v as i32) as u32),
                (4, 2, false) => u64::from((old as u32).max(v as u32)),
                (4, 2, true) => u64::from((old as i32).max(v as i32) as u32),
                (_, 0, _) => old.wrapping_add(v),
                (_, 1, false) => old.min(v),
                (_, 1, true) => (old as i64).min(v as i64) as u64,
                (_, 2, false) => old.max(v),
                (_, 2, true) => (old as i64).max(v as i64) as u64,
                (_, 3, _) => old & v,
                _ => old | v,
            }
        };
        if !a.is_multiple_of(size) {
            let _g = UNALIGNED.lock().unwrap_or_else(|e| e.into_inner());
            // SAFETY: per the contract; other unaligned reductions wait.
            unsafe {
                if size == 4 {
                    let p = a as *mut u32;
                    p.write_unaligned(combine(u64::from(p.read_unaligned())) as u32);
                } else {
                    let p = a as *mut u64;
                    p.write_unaligned(combine(p.read_unaligned()));
                }
            }
            return;
        }
        // SAFETY: aligned and writable, per the contract; the surface's
        // memory is only accessed atomically by reductions meanwhile, as
        // on the GPU. The update never declines, so the results are unused.
        unsafe {
            if size == 4 {
                let _ = AtomicU32::from_ptr(a as *mut u32).fetch_update(Relaxed, Relaxed, |old| Some(combine(u64::from(old)) as u32));
            } else {
                let _ = AtomicU64::from_ptr(a as *mut u64).fetch_update(Relaxed, Relaxed, |old| Some(combine(old)));
            }
        }
    }

    /// `txq`/`suq` queries.
    pub mod query {
        pub const WIDTH: u32 = 0;
        pub const HEIGHT: u32 = 1;
        pub const DEPTH: u32 = 2;
        pub const ARRAY_SIZE: u32 = 3;
        pub const NUM_MIPMAP_LEVELS: u32 = 4;
        pub const NORMALIZED_COORDS: u32 = 5;
        pub const FILTER_MODE: u32 = 6;
        pub const ADDR_MODE_0: u32 = 7;
        pub const NUM_SAMPLES: u32 = 10;
    }

    /// Answers a `txq.level` query: the extent of level `level`; 0 for a
    /// level the texture does not have (an assumption: the ISA leaves it
    /// undefined).
    ///
    /// # Safety
    /// `d.level_table`, when not 0, addresses `d.levels` level descriptors.
    pub unsafe fn query_level(d: &TexDesc, q: u32, level: u32) -> u32 {
        let l = if level == 0 {
            LevelDesc::of(d)
        } else if level < d.levels && d.level_table != 0 {
            // SAFETY: per the contract.
            unsafe { (d.level_table as *const LevelDesc).add(level as usize).read_unaligned() }
        } else {
            return 0;
        };
        match q {
            query::WIDTH => l.width,
            query::HEIGHT => l.height,
            _ => l.depth,
        }
    }

    /// Answers a `txq`/`suq` query.
    pub fn query(d: &TexDesc, q: u32) -> u32 {
        match q {
            query::WIDTH => d.width,
            query::HEIGHT => d.height,
            query::DEPTH => d.depth,
            query::ARRAY_SIZE => {
                if d.flags & CUBEMAP != 0 {
                    d.layers / 6
                } else {
                    d.layers
                }
            }
            query::NUM_MIPMAP_LEVELS => d.levels,
            query::NORMALIZED_COORDS => u32::from(d.flags & NORMALIZED != 0),
            query::FILTER_MODE => u32::from(d.flags & LINEAR_FILTER != 0),
            // The ISA's enumeration { wrap, mirror, clamp_ogl,
            // clamp_to_edge, clamp_to_border } for CUaddress_mode's wrap,
            // clamp, mirror and border.
            7..=9 => match d.address[(q - query::ADDR_MODE_0) as usize] {
                0 => 0,
                2 => 1,
                3 => 4,
                _ => 3,
            },
            query::NUM_SAMPLES => 0,
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::device::*;
    use super::*;

    fn desc_2d(data: &[f32], w: u32, h: u32, flags: u32, mode: u32) -> TexDesc {
        let a = ArrayDesc { width: w as usize, height: h as usize, format: format::FLOAT, channels: 1, ..ArrayDesc::default() };
        TexDesc::new(TEX_MAGIC, &a, data.as_ptr() as u64, 4 * w as usize, 1, flags, [mode; 3], [7.0, 0.0, 0.0, 0.0])
    }

    fn f2(x: f32, y: f32) -> [u32; 4] {
        [x.to_bits(), y.to_bits(), 0, 0]
    }

    const FETCH_2D: Fetch = Fetch { geometry: Geometry::D2, int_coords: false, result: Ret::F32, gather: None };

    #[test]
    fn point_sampling_and_address_modes() {
        let data: Vec<f32> = (0..12).map(|v| v as f32).collect(); // 4 x 3
        let s = |d: &TexDesc, x: f32, y: f32| f32::from_bits(unsafe { sample(d, &FETCH_2D, f2(x, y)) }[0]);
        let clamp = desc_2d(&data, 4, 3, 0, 1);
        assert_eq!(s(&clamp, 1.5, 2.5), 9.0);
        assert_eq!(s(&clamp, -3.0, 0.2), 0.0);
        assert_eq!(s(&clamp, 9.0, 9.0), 11.0);
        let border = desc_2d(&data, 4, 3, 0, 3);
        assert_eq!(s(&border, 4.0, 0.5), 7.0);
        assert_eq!(s(&border, -0.01, 0.5), 7.0);
        let wrap = desc_2d(&data, 4, 3, NORMALIZED, 0);
        assert_eq!(s(&wrap, 1.0 + 1.5 / 4.0, -1.0 + 0.5 / 3.0), 1.0);
        let mirror = desc_2d(&data, 4, 3, NORMALIZED, 2);
        // x in texels: 4.5 -> mirrored to 3, 5.5 -> 2, -0.5 -> 0
        assert_eq!(s(&mirror, 4.5 / 4.0, 0.1), 3.0);
        assert_eq!(s(&mirror, 5.5 / 4.0, 0.1), 2.0);
        assert_eq!(s(&mirror, -0.5 / 4.0, 0.1), 0.0);
        // Wrap without normalised coordinates clamps.
        let wrap_unnorm = desc_2d(&data, 4, 3, 0, 0);
        assert_eq!(s(&wrap_unnorm, 5.5, 0.5), 3.0);
    }

    #[test]
    fn linear_filter_uses_8_bit_weights() {
        let data = [0.0f32, 1.0, 0.0, 1.0];
        let d = desc_2d(&data, 2, 2, LINEAR_FILTER, 1);
        // x = 0.5 + 0.3: alpha = 0.3 -> round(76.8)/256 = 77/256
        let v = f32::from_bits(unsafe { sample(&d, &FETCH_2D, f2(0.8, 0.5)) }[0]);
        assert_eq!(v, 77.0 / 256.0);
        let v = f32::from_bits(unsafe { sample(&d, &FETCH_2D, f2(0.5 + 1.0 / 1024.0, 0.5)) }[0]);
        assert_eq!(v, 0.0, "a fraction under half a step rounds to 0");
    }

    #[test]
    fn huge_and_nan_coordinates_stay_inside() {
        let data: Vec<f32> = (0..12).map(|v| v as f32).collect();
        for (flags, mode) in [(LINEAR_FILTER | NORMALIZED, 0), (LINEAR_FILTER | NORMALIZED, 2), (LINEAR_FILTER, 1), (0, 3)] {
            let d = desc_2d(&data, 4, 3, flags, mode);
            for x in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 3.0e38, -3.0e38] {
                let v = f32::from_bits(unsafe { sample(&d, &FETCH_2D, f2(x, 0.5)) }[0]);
                assert!(v.is_finite(), "{x} in mode {mode}: {v}");
            }
        }
    }

    #[test]
    fn gather_returns_the_footprint() {
        let data: Vec<f32> = (0..9).map(|v| v as f32).collect(); // 3 x 3
        let d = desc_2d(&data, 3, 3, 0, 1);
        let f = Fetch { gather: Some(0), ..FETCH_2D };
        let r = unsafe { sample(&d, &f, f2(1.2, 1.7)) }.map(f32::from_bits);
        // footprint i = 0..1, j = 1..2: (0,2), (1,2), (1,1), (0,1)
        assert_eq!(r, [6.0, 7.0, 4.0, 3.0]);
    }

    #[test]
    fn cube_faces() {
        let data: Vec<f32> = (0..6).map(|v| v as f32 * 10.0).collect(); // 1x1 faces
        let a = ArrayDesc { width: 1, height: 1, depth: 6, format: format::FLOAT, channels: 1, flags: array_flags::CUBEMAP };
        let d = TexDesc::new(TEX_MAGIC, &a, data.as_ptr() as u64, 4, 1, 0, [1; 3], [0.0; 4]);
        let f = Fetch { geometry: Geometry::Cube, ..FETCH_2D };
        let at = |x: f32, y: f32, z: f32| f32::from_bits(unsafe { sample(&d, &f, [x.to_bits(), y.to_bits(), z.to_bits(), 0]) }[0]);
        assert_eq!(
            [at(1.0, 0.2, 0.1), at(-1.0, 0.2, 0.1), at(0.1, 2.0, 0.3), at(0.1, -2.0, 0.3), at(0.1, 0.2, 3.0), at(0.1, 0.2, -3.0)],
            [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]
        );
    }

    #[test]
    fn normalized_float_reads() {
        let data: [u8; 4] = [0, 255, 128, 7];
        let a = ArrayDesc { width: 1, height: 1, format: format::U8, channels: 4, ..ArrayDesc::default() };
        let d = TexDesc::new(TEX_MAGIC, &a, data.as_ptr() as u64, 4, 1, NORMALIZED_FLOAT, [1; 3], [0.0; 4]);
        let r = unsafe { sample(&d, &FETCH_2D, f2(0.5, 0.5)) }.map(f32::from_bits);
        assert_eq!(r, [0.0, 1.0, 128.0 / 255.0, 7.0 / 255.0]);
        let s8: [i8; 2] = [-128, 127];
        let a = ArrayDesc { width: 1, height: 1, format: format::S8, channels: 2, ..ArrayDesc::default() };
        let d = TexDesc::new(TEX_MAGIC, &a, s8.as_ptr() as u64, 2, 1, NORMALIZED_FLOAT, [1; 3], [0.0; 4]);
        let r = unsafe { sample(&d, &FETCH_2D, f2(0.5, 0.5)) }.map(f32::from_bits);
        assert_eq!(r, [-1.0, 1.0, 0.0, 1.0]);
    }

    #[test]
    fn half_textures_read_as_floats() {
        // 1.0, -2.5, the smallest subnormal, infinity
        let data: [u16; 4] = [0x3c00, 0xc100, 0x0001, 0x7c00];
        let a = ArrayDesc { width: 1, height: 1, format: format::HALF, channels: 4, ..ArrayDesc::default() };
        let d = TexDesc::new(TEX_MAGIC, &a, data.as_ptr() as u64, 8, 1, 0, [1; 3], [0.0; 4]);
        let r = unsafe { sample(&d, &FETCH_2D, f2(0.5, 0.5)) }.map(f32::from_bits);
        assert_eq!(r, [1.0, -2.5, 2.0f32.powi(-24), f32::INFINITY]);
    }

    #[test]
    fn surface_bounds() {
        let data = [0u32; 8];
        let a =
            ArrayDesc { width: 4, height: 2, format: format::U32, channels: 1, flags: array_flags::SURFACE_LDST, ..ArrayDesc::default() };
        let d = TexDesc::new(SURF_MAGIC, &a, data.as_ptr() as u64, 16, 1, 0, [1; 3], [0.0; 4]);
        let base = data.as_ptr() as u64;
        let at = |x: i32, y: i32, c: Clamp| surface_address(&d, SurfGeometry::D2, [x as u32, y as u32, 0, 0], 4, c);
        assert_eq!(at(12, 1, Clamp::Trap), Access::At(base + 28));
        assert_eq!(at(16, 1, Clamp::Trap), Access::Trap);
        assert_eq!(at(16, 1, Clamp::Zero), Access::Zero);
        assert_eq!(at(40, 5, Clamp::Clamp), Access::At(base + 28));
        assert_eq!(at(-4, 0, Clamp::Clamp), Access::At(base));
        assert_eq!(at(2, 0, Clamp::Trap), Access::Trap, "misaligned");
        let wide = |c| surface_address(&d, SurfGeometry::D2, [0, 0, 0, 0], 32, c);
        assert_eq!((wide(Clamp::Clamp), wide(Clamp::Zero)), (Access::Trap, Access::Zero), "wider than a row");
    }

    /// A 2-D float texture of three levels (8 x 4, 4 x 2, 2 x 1) whose
    /// texels are 10, 20 and 30 by level, and its level table.
    struct Mip {
        levels: Vec<Vec<f32>>,
        table: Vec<LevelDesc>,
    }

    impl Mip {
        fn new() -> Mip {
            let sizes = [(8u32, 4u32), (4, 2), (2, 1)];
            let levels: Vec<Vec<f32>> = sizes.iter().enumerate().map(|(l, (w, h))| vec![10.0 * (l + 1) as f32; (w * h) as usize]).collect();
            let table = sizes.iter().zip(&levels).map(|((w, h), data)| LevelDesc::of(&desc_2d(data, *w, *h, 0, 1))).collect();
            Mip { levels, table }
        }

        fn desc(&self, flags: u32, bias: f32, min: f32, max: f32) -> TexDesc {
            let mut d = desc_2d(&self.levels[0], 8, 4, flags | NORMALIZED, 1);
            d.levels = 3;
            d.level_table = self.table.as_ptr() as u64;
            d.lod_bias = bias;
            d.min_lod = min;
            d.max_lod = max;
            d
        }
    }

    fn at_lod(d: &TexDesc, lod: Lod) -> f32 {
        f32::from_bits(unsafe { sample_mip(d, &FETCH_2D, f2(0.5, 0.5), lod) }[0])
    }

    #[test]
    fn explicit_levels_pick_the_nearest_level_within_the_clamps() {
        let m = Mip::new();
        let d = m.desc(0, 0.0, 0.0, 2.0);
        let cases = [(0.0, 10.0), (0.49, 10.0), (0.5, 10.0), (0.51, 20.0), (1.5, 20.0), (1.6, 30.0), (7.0, 30.0), (-3.0, 10.0)];
        for (lod, want) in cases {
            assert_eq!(at_lod(&d, Lod::Level(lod)), want, "level {lod}");
        }
        assert_eq!(at_lod(&d, Lod::Level(f32::NAN)), 10.0, "NaN reads level 0");
        assert_eq!(at_lod(&m.desc(0, 0.0, 0.0, 1.0), Lod::Level(5.0)), 20.0, "the max clamp");
        assert_eq!(at_lod(&m.desc(0, 0.0, 1.0, 2.0), Lod::Level(0.0)), 20.0, "the min clamp");
        assert_eq!(at_lod(&m.desc(0, 1.0, 0.0, 2.0), Lod::Level(0.0)), 20.0, "the bias");
        assert_eq!(at_lod(&m.desc(0, 0.0, 0.0, 0.0), Lod::Level(2.0)), 10.0, "a zero max clamp keeps level 0");
        // One level: the level of detail does not matter.
        let mut one = d;
        one.levels = 1;
        assert_eq!(at_lod(&one, Lod::Level(2.0)), 10.0);
    }

    #[test]
    fn linear_mipmap_filtering_mixes_two_levels_with_8_bit_weights() {
        let m = Mip::new();
        let d = m.desc(MIPMAP_LINEAR, 0.0, 0.0, 2.0);
        assert_eq!(at_lod(&d, Lod::Level(0.25)), 12.5);
        assert_eq!(at_lod(&d, Lod::Level(1.5)), 25.0);
        assert_eq!(at_lod(&d, Lod::Level(2.0)), 30.0);
        assert_eq!(at_lod(&d, Lod::Level(9.0)), 30.0, "past the last level");
        // 0.3 -> round(76.8) / 256
        let w = 77.0f32 / 256.0;
        assert_eq!(at_lod(&d, Lod::Level(0.3)), (1.0 - w) * 10.0 + w * 20.0);
        // Integer results never mix.
        let f = Fetch { result: Ret::S32, ..FETCH_2D };
        let raw = unsafe { sample_mip(&d, &f, f2(0.5, 0.5), Lod::Level(0.25)) }[0];
        assert_eq!(f32::from_bits(raw), 10.0, "the nearest level's texel, as read");
    }

    #[test]
    fn gradients_select_the_level_of_the_longer_footprint() {
        let m = Mip::new();
        let d = m.desc(0, 0.0, 0.0, 2.0);
        // Level 0 is 8 x 4: a derivative of 4/8 along u is 4 texels.
        assert_eq!(at_lod(&d, Lod::Grad([0.5, 0.0, 0.0], [0.0, 0.0, 0.0])), 30.0, "rho 4: level 2");
        assert_eq!(at_lod(&d, Lod::Grad([0.125, 0.0, 0.0], [0.0, 0.5, 0.0])), 20.0, "rho max(1, 2): level 1");
        assert_eq!(at_lod(&d, Lod::Grad([0.0; 3], [0.0; 3])), 10.0, "no footprint: level 0");
        // The two components of a derivative combine as a length: (3, 4) texels -> 5.
        let rho = footprint(&d, Geometry::D2, [0.0; 4], [3.0 / 8.0, 4.0 / 4.0, 0.0], [0.0; 3]);
        assert_eq!(rho, 5.0);
        // Unnormalized coordinates are derivatives in texels already.
        let mut texels = d;
        texels.flags &= !NORMALIZED;
        assert_eq!(footprint(&texels, Geometry::D2, [0.0; 4], [2.0, 0.0, 0.0], [0.0, 1.0, 0.0]), 2.0);
        // A cubemap: on face +x at (1, 0, 0), s = (-z / x + 1) / 2, so a
        // change of z by 1/2 moves s by 1/4: one texel of a 4-texel face.
        let mut cube = d;
        cube.width = 4;
        cube.height = 4;
        let one = footprint(&cube, Geometry::Cube, [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.5], [0.0; 3]);
        assert_eq!(one, 1.0);
        let y = footprint(&cube, Geometry::Cube, [1.0, 0.0, 0.0, 0.0], [0.0; 3], [0.0, 2.0, 0.0]);
        assert_eq!(y, 4.0, "t = (-y / x + 1) / 2 along y");
    }

    #[test]
    fn levels_address_their_own_texels() {
        // Level 0: 4 x 1 of 0..3; level 1: 2 x 1 of 10, 11.
        let l0 = [0.0f32, 1.0, 2.0, 3.0];
        let l1 = [10.0f32, 11.0];
        let table = [LevelDesc::of(&desc_2d(&l0, 4, 1, 0, 1)), LevelDesc::of(&desc_2d(&l1, 2, 1, 0, 1))];
        let mut d = desc_2d(&l0, 4, 1, 0, 1);
        d.levels = 2;
        d.level_table = table.as_ptr() as u64;
        d.max_lod = 1.0;
        // Unnormalized x = 1.5 in level-0 texels is 0.75 at level 1: texel 0.
        let v = f32::from_bits(unsafe { sample_mip(&d, &FETCH_2D, f2(1.5, 0.5), Lod::Level(1.0)) }[0]);
        assert_eq!(v, 10.0);
        // Integer coordinates index the chosen level.
        let f = Fetch { int_coords: true, ..FETCH_2D };
        let v = f32::from_bits(unsafe { sample_mip(&d, &f, [1, 0, 0, 0], Lod::Level(1.0)) }[0]);
        assert_eq!(v, 11.0);
        assert_eq!(unsafe { query_level(&d, query::WIDTH, 1) }, 2);
        assert_eq!(unsafe { query_level(&d, query::WIDTH, 0) }, 4);
        assert_eq!(unsafe { query_level(&d, query::HEIGHT, 2) }, 0, "no such level");
    }
}
