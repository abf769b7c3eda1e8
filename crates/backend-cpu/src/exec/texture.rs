//! The texture and surface runtime functions (`cpu_abi::tex`): decode the
//! operation word and run the driver's software sampler
//! (`driver::texture::device`) on the object's descriptor.

use compiler::cpu_abi::{tex, BlockCtx};
use driver::texture::device::{self, Access, Clamp, Fetch, Geometry, Lod, Ret, SurfGeometry, TexDesc};

use super::runtime::illegal_address;

/// The descriptor behind a handle, or the launch fails with an illegal
/// address (a null, misaligned or destroyed handle, or one of the other
/// kind).
///
/// # Safety
/// Called from compiled code with its ctx; `handle` is read if it looks
/// like a descriptor's address.
unsafe fn descriptor<'a>(ctx: *mut BlockCtx, handle: u64, magic: u32) -> Option<&'a TexDesc> {
    let kind = if magic == device::TEX_MAGIC { "texture" } else { "surface" };
    if handle == 0 || !handle.is_multiple_of(8) {
        tracing::debug!("{handle:#x} is not a {kind} object handle");
        // SAFETY: per the contract.
        unsafe { illegal_address(ctx, handle) };
        return None;
    }
    // SAFETY: the handle is a descriptor's device address (device memory
    // is host memory here); a wild one faults like any kernel access.
    let d = unsafe { &*(handle as *const TexDesc) };
    if d.magic != magic {
        tracing::debug!("{handle:#x} is not a live {kind} object (destroyed, or another kind of object)");
        // SAFETY: per the contract.
        unsafe { illegal_address(ctx, handle) };
        return None;
    }
    Some(d)
}

/// `tex` and `tld4`.
///
/// # Safety
/// Called from compiled code; `out` holds 4 words.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn __anycuda_tex(
    ctx: *mut BlockCtx,
    _thread: u32,
    handle: u64,
    op: u32,
    c0: u32,
    c1: u32,
    c2: u32,
    c3: u32,
    out: *mut u8,
) -> u32 {
    // SAFETY: per the contract.
    let Some(d) = (unsafe { descriptor(ctx, handle, device::TEX_MAGIC) }) else { return 0 };
    // SAFETY: a live descriptor.
    let v = unsafe { device::sample(d, &fetch(op), [c0, c1, c2, c3]) };
    // SAFETY: out holds 4 words.
    unsafe { out.cast::<[u32; 4]>().write_unaligned(v) };
    1
}

/// What a `tex`/`tld4` operation word asks for.
fn fetch(op: u32) -> Fetch {
    let geometry = match op & tex::GEOMETRY_MASK {
        tex::D1 => Geometry::D1,
        tex::D2 => Geometry::D2,
        tex::D3 => Geometry::D3,
        tex::A1D => Geometry::A1d,
        tex::A2D => Geometry::A2d,
        tex::CUBE => Geometry::Cube,
        _ => Geometry::Acube,
    };
    let result = match (op >> tex::RESULT_SHIFT) & 3 {
        tex::RESULT_S32 => Ret::S32,
        tex::RESULT_U32 => Ret::U32,
        _ => Ret::F32,
    };
    let gather = match (op >> tex::GATHER_SHIFT) & 7 {
        0 => None,
        g => Some(g - 1),
    };
    Fetch { geometry, int_coords: op & tex::INT_COORDS != 0, result, gather }
}

/// `tex.level` and `tex.grad`.
///
/// # Safety
/// Called from compiled code; `lod` holds 7 words, `out` 4.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn __anycuda_tex_mip(
    ctx: *mut BlockCtx,
    _thread: u32,
    handle: u64,
    op: u32,
    c0: u32,
    c1: u32,
    c2: u32,
    c3: u32,
    lod: *const u8,
    out: *mut u8,
) -> u32 {
    // SAFETY: per the contract.
    let Some(d) = (unsafe { descriptor(ctx, handle, device::TEX_MAGIC) }) else { return 0 };
    // SAFETY: lod holds 7 words.
    let w = unsafe { lod.cast::<[u32; 7]>().read_unaligned() }.map(f32::from_bits);
    let lod = if op & tex::GRAD != 0 { Lod::Grad([w[1], w[2], w[3]], [w[4], w[5], w[6]]) } else { Lod::Level(w[0]) };
    // SAFETY: a live descriptor, whose level table the driver wrote.
    let v = unsafe { device::sample_mip(d, &fetch(op), [c0, c1, c2, c3], lod) };
    // SAFETY: out holds 4 words.
    unsafe { out.cast::<[u32; 4]>().write_unaligned(v) };
    1
}

fn surface_geometry(op: u32) -> SurfGeometry {
    match op & tex::GEOMETRY_MASK {
        tex::D1 => SurfGeometry::D1,
        tex::D2 => SurfGeometry::D2,
        tex::D3 => SurfGeometry::D3,
        tex::A1D => SurfGeometry::A1d,
        _ => SurfGeometry::A2d,
    }
}

/// The coordinates of a formatted access (`.p`), whose x counts samples of
/// `size` bytes, as byte coordinates (the x of `.b` accesses).
fn samples_to_bytes(g: SurfGeometry, mut c: [u32; 4], size: u64) -> [u32; 4] {
    let x = if matches!(g, SurfGeometry::A1d | SurfGeometry::A2d) { 1 } else { 0 };
    c[x] = (c[x] as i32 as i64).wrapping_mul(size as i64) as u32;
    c
}

/// (element bytes, elements, clamp mode) of a surface access.
fn surface_access(op: u32) -> (u64, u64, Clamp) {
    let size = 1u64 << ((op >> tex::SIZE_SHIFT) & 3);
    let n = 1u64 << ((op >> tex::VEC_SHIFT) & 3);
    let clamp = match (op >> tex::CLAMP_SHIFT) & 3 {
        tex::CLAMP => Clamp::Clamp,
        tex::ZERO => Clamp::Zero,
        _ => Clamp::Trap,
    };
    (size, n, clamp)
}

/// `suld.b`.
///
/// # Safety
/// Called from compiled code; `out` holds the access's bytes.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn __anycuda_suld(
    ctx: *mut BlockCtx,
    _thread: u32,
    handle: u64,
    op: u32,
    c0: u32,
    c1: u32,
    c2: u32,
    c3: u32,
    out: *mut u8,
) {
    // SAFETY: per the contract.
    let Some(d) = (unsafe { descriptor(ctx, handle, device::SURF_MAGIC) }) else { return };
    let (size, n, clamp) = surface_access(op);
    let bytes = size * n;
    match device::surface_address(d, surface_geometry(op), [c0, c1, c2, c3], bytes, clamp) {
        // SAFETY: inside the surface; out holds `bytes`.
        Access::At(a) => unsafe { std::ptr::copy_nonoverlapping(a as *const u8, out, bytes as usize) },
        // SAFETY: out holds `bytes`.
        Access::Zero => unsafe { std::ptr::write_bytes(out, 0, bytes as usize) },
        Access::Trap => {
            tracing::debug!("suld.trap out of range of surface {handle:#x} at ({c0}, {c1}, {c2}, {c3})");
            // SAFETY: per the contract.
            unsafe { illegal_address(ctx, handle) }
        }
    }
}

/// `sust.b` and `sust.p`.
///
/// # Safety
/// Called from compiled code; `data` holds the access's bytes.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn __anycuda_sust(
    ctx: *mut BlockCtx,
    _thread: u32,
    handle: u64,
    op: u32,
    c0: u32,
    c1: u32,
    c2: u32,
    c3: u32,
    data: *const u8,
) {
    // SAFETY: per the contract.
    let Some(d) = (unsafe { descriptor(ctx, handle, device::SURF_MAGIC) }) else { return };
    let (size, n, clamp) = surface_access(op);
    if op & tex::FORMATTED != 0 {
        let (es, bytes) = match device::formatted_store(d, n as usize) {
            Ok(s) => s,
            Err(why) => {
                // SAFETY: per the contract.
                unsafe { super::runtime::unsupported(ctx, format!("sust.p: {why}")) };
                return;
            }
        };
        let g = surface_geometry(op);
        match device::surface_address(d, g, samples_to_bytes(g, [c0, c1, c2, c3], es), es, clamp) {
            Access::At(a) => {
                // Channels the data does not cover keep what they held
                // (the ISA leaves them unpredictable).
                // SAFETY: inside the surface (`es` >= `bytes`); data holds
                // n 32-bit values, `bytes` of them at most.
                unsafe { std::ptr::copy_nonoverlapping(data, a as *mut u8, bytes) };
                crate::memcheck::host_wrote(a, bytes as u64);
            }
            Access::Zero => {}
            Access::Trap => {
                tracing::debug!("sust.p.trap out of range of surface {handle:#x} at ({c0}, {c1}, {c2}, {c3})");
                // SAFETY: per the contract.
                unsafe { illegal_address(ctx, handle) }
            }
        }
        return;
    }
    let bytes = size * n;
    match device::surface_address(d, surface_geometry(op), [c0, c1, c2, c3], bytes, clamp) {
        Access::At(a) => {
            // SAFETY: inside the surface; data holds `bytes`.
            unsafe { std::ptr::copy_nonoverlapping(data, a as *mut u8, bytes as usize) };
            crate::memcheck::host_wrote(a, bytes);
        }
        Access::Zero => {}
        Access::Trap => {
            tracing::debug!("sust.trap out of range of surface {handle:#x} at ({c0}, {c1}, {c2}, {c3})");
            // SAFETY: per the contract.
            unsafe { illegal_address(ctx, handle) }
        }
    }
}

/// `sured.b` and `sured.p`: an atomic reduction into one element.
///
/// # Safety
/// Called from compiled code.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn __anycuda_sured(
    ctx: *mut BlockCtx,
    _thread: u32,
    handle: u64,
    op: u32,
    c0: u32,
    c1: u32,
    c2: u32,
    c3: u32,
    value: u64,
) {
    // SAFETY: per the contract.
    let Some(d) = (unsafe { descriptor(ctx, handle, device::SURF_MAGIC) }) else { return };
    let (size, _, clamp) = surface_access(op);
    let red = (op >> tex::RED_SHIFT) & 7;
    let mut signed = op & tex::RED_SIGNED != 0;
    let mut c = [c0, c1, c2, c3];
    if op & tex::FORMATTED != 0 {
        // The x coordinate counts values of the instruction's size; the
        // format says whether they are signed.
        signed = match device::integer_signedness(d) {
            Some(s) => s,
            None => {
                // SAFETY: per the contract.
                unsafe {
                    super::runtime::unsupported(
                        ctx,
                        "sured.p on a surface whose format is not integer (the ISA defines UINT and SINT data only)".into(),
                    )
                };
                return;
            }
        };
        c = samples_to_bytes(surface_geometry(op), c, size);
    }
    let a = match device::surface_address(d, surface_geometry(op), c, size, clamp) {
        Access::At(a) => a,
        Access::Zero => return,
        Access::Trap => {
            tracing::debug!("sured.trap out of range of surface {handle:#x} at ({c0}, {c1}, {c2}, {c3})");
            // SAFETY: per the contract.
            unsafe { illegal_address(ctx, handle) };
            return;
        }
    };
    // SAFETY: inside the surface, `size` bytes.
    unsafe { device::reduce(a, size, red, signed, value) };
    crate::memcheck::host_wrote(a, size);
}

/// `istypep`: whether `value` is the handle of a live object of the kind
/// asked for: the start of a live device allocation that holds a
/// descriptor of that kind. Any 64-bit value may come: it is read only when
/// it starts a live allocation.
///
/// # Safety
/// Called from compiled code.
pub unsafe extern "C" fn __anycuda_istypep(_ctx: *mut BlockCtx, _thread: u32, value: u64, kind: u32) -> u32 {
    let magic = match kind {
        tex::IS_TEXTURE => device::TEX_MAGIC,
        tex::IS_SURFACE => device::SURF_MAGIC,
        // CUDA has no sampler objects of their own.
        _ => return 0,
    };
    // An object's descriptor is an allocation of its own, from its start.
    let whole = crate::memcheck::containing(value, std::mem::size_of::<TexDesc>() as u64).is_some_and(|r| r.start == value);
    if !whole || !value.is_multiple_of(8) {
        return 0;
    }
    // SAFETY: inside a live allocation, aligned.
    let d = unsafe { &*(value as *const TexDesc) };
    u32::from(d.magic == magic)
}

/// The descriptor behind a `txq`/`suq` handle (either kind of object).
///
/// # Safety
/// As [`descriptor`].
unsafe fn any_descriptor<'a>(ctx: *mut BlockCtx, handle: u64) -> Option<&'a TexDesc> {
    if handle == 0 || !handle.is_multiple_of(8) {
        tracing::debug!("txq/suq: {handle:#x} is not a texture or surface object handle");
        // SAFETY: per the contract.
        unsafe { illegal_address(ctx, handle) };
        return None;
    }
    // SAFETY: as in `descriptor`; either kind of object.
    let d = unsafe { &*(handle as *const TexDesc) };
    if d.magic != device::TEX_MAGIC && d.magic != device::SURF_MAGIC {
        tracing::debug!("txq/suq: {handle:#x} is not a live texture or surface object");
        // SAFETY: per the contract.
        unsafe { illegal_address(ctx, handle) };
        return None;
    }
    Some(d)
}

/// `txq` and `suq`.
///
/// # Safety
/// Called from compiled code.
pub unsafe extern "C" fn __anycuda_txq(ctx: *mut BlockCtx, _thread: u32, handle: u64, query: u32) -> u32 {
    // SAFETY: per the contract.
    let Some(d) = (unsafe { any_descriptor(ctx, handle) }) else { return 0 };
    device::query(d, query_code(query))
}

/// The sampler's query for a `txq`/`suq` query word.
fn query_code(query: u32) -> u32 {
    match query {
        tex::Q_WIDTH => device::query::WIDTH,
        tex::Q_HEIGHT => device::query::HEIGHT,
        tex::Q_DEPTH => device::query::DEPTH,
        tex::Q_ARRAY_SIZE => device::query::ARRAY_SIZE,
        tex::Q_NUM_MIPMAP_LEVELS => device::query::NUM_MIPMAP_LEVELS,
        tex::Q_NORMALIZED_COORDS => device::query::NORMALIZED_COORDS,
        tex::Q_FILTER_MODE => device::query::FILTER_MODE,
        q @ 7..=9 => device::query::ADDR_MODE_0 + (q - tex::Q_ADDR_MODE_0),
        _ => device::query::NUM_SAMPLES,
    }
}

/// `txq.level`: the width, height or depth of one level.
///
/// # Safety
/// Called from compiled code.
pub unsafe extern "C" fn __anycuda_txq_level(ctx: *mut BlockCtx, _thread: u32, handle: u64, query: u32, level: u32) -> u32 {
    // SAFETY: per the contract.
    let Some(d) = (unsafe { any_descriptor(ctx, handle) }) else { return 0 };
    // SAFETY: a live descriptor, whose level table the driver wrote.
    unsafe { device::query_level(d, query_code(query), level) }
}
