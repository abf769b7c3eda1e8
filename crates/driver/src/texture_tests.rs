//! Arrays, array copies, texture and surface objects against the mock
//! backend: shapes, descriptors, error codes, and the descriptor a kernel
//! reads through an object handle.

use std::sync::Arc;

use crate::mock::MockBackend;
use crate::texture::device::{self, Fetch, Geometry, Ret, TexDesc};
use crate::texture::{array_flags as af, format, ArrayDesc, Resource, TextureDesc, ViewDesc};
use crate::*;

fn with_ctx() -> Driver {
    let d = Driver::new(Arc::new(MockBackend::with_builtins(1)), Config::default());
    d.init(0).expect("init");
    let c = d.primary_ctx_retain(0).expect("retain");
    d.ctx_set_current(c).expect("set current");
    d
}

fn desc(width: usize, height: usize, depth: usize, fmt: u32, channels: u32, flags: u32) -> ArrayDesc {
    ArrayDesc { width, height, depth, format: fmt, channels, flags }
}

fn copy(src: MemLoc, dst: MemLoc, width: usize, height: usize, depth: usize) -> Memcpy3D {
    Memcpy3D {
        src,
        src_x: 0,
        src_y: 0,
        src_z: 0,
        src_lod: 0,
        src_pitch: width,
        src_height: height,
        dst,
        dst_x: 0,
        dst_y: 0,
        dst_z: 0,
        dst_lod: 0,
        dst_pitch: width,
        dst_height: height,
        width,
        height,
        depth,
    }
}

#[test]
fn array_shapes_are_checked_as_cuda_does() {
    let d = with_ctx();
    let ok = [
        desc(100, 0, 0, format::FLOAT, 1, 0),
        desc(100, 50, 0, format::U8, 4, 0),
        desc(16, 16, 16, format::S16, 2, 0),
        desc(16, 0, 5, format::HALF, 1, af::LAYERED),
        desc(16, 8, 5, format::U32, 1, af::LAYERED | af::SURFACE_LDST),
        desc(8, 8, 6, format::FLOAT, 4, af::CUBEMAP),
        desc(8, 8, 12, format::FLOAT, 1, af::CUBEMAP | af::LAYERED),
        desc(8, 8, 0, format::UNORM_INT8X1 + 2, 4, 0), // UNORM_INT8X4
    ];
    for a in &ok {
        let h = d.array_create(a).unwrap_or_else(|e| panic!("{a:?}: {e}"));
        let got = d.array_descriptor(h).expect("descriptor");
        assert_eq!(got, *a, "the descriptor as created");
        d.array_destroy(h).expect("destroy");
        assert!(matches!(d.array_destroy(h), Err(Error::InvalidHandle(_))), "destroyed twice");
        assert!(matches!(d.array_descriptor(h), Err(Error::InvalidHandle(_))));
    }
    let bad = [
        desc(100, 50, 0, format::FLOAT, 3, 0),          // 3 channels
        desc(100, 50, 0, 0x7, 1, 0),                    // no such format
        desc(0, 50, 0, format::FLOAT, 1, 0),            // zero width
        desc(16, 0, 4, format::FLOAT, 1, 0),            // depth without height
        desc(8, 9, 6, format::FLOAT, 1, af::CUBEMAP),   // faces not square
        desc(8, 8, 7, format::FLOAT, 1, af::CUBEMAP),   // not 6 faces
        desc(16, 16, 0, format::FLOAT, 1, af::LAYERED), // no layers
        desc(200_000, 0, 0, format::FLOAT, 1, 0),       // too wide
        desc(8, 8, 0, format::UNORM_INT8X1 + 2, 2, 0),  // implied 4 channels
        desc(8, 8, 0, format::FLOAT, 1, 0x8000),        // unknown flag
    ];
    for a in &bad {
        assert!(matches!(d.array_create(a), Err(Error::InvalidValue(_))), "{a:?}");
    }
    assert!(matches!(d.array_create(&desc(8, 8, 0, format::FLOAT, 1, af::SPARSE)), Err(Error::NotSupported(_))));
    assert!(matches!(d.array_create(&desc(8, 8, 0, 0x91, 1, 0)), Err(Error::NotSupported(_))), "BC1 is named as unsupported");
    assert!(matches!(d.array_create(&desc(8, 8, 0, 0x50, 1, 0)), Err(Error::NotSupported(_))), "10-10-10-2 too");
    assert!(matches!(d.array_create(&desc(8, 8, 0, 0x7fff_ffff, 1, 0)), Err(Error::InvalidValue(_))), "the MAX marker is no format");
}

#[test]
fn copies_to_from_and_between_arrays() {
    let d = with_ctx();
    // 6 x 4 x 3 array of u16 pairs (4 bytes per element).
    let a = d.array_create(&desc(6, 4, 3, format::U16, 2, 0)).expect("array");
    let host: Vec<u8> = (0..6 * 4 * 4 * 3).map(|i| (i * 7 % 251) as u8).collect();
    let c = copy(MemLoc::Host(host.as_ptr() as usize), MemLoc::Array(a), 24, 4, 3);
    unsafe { d.memcpy_3d(&c, 0, false, false) }.expect("host to array");
    // Back out through a sub-region: elements 2..5 of rows 1..3 of slice 2.
    let mut part = vec![0u8; 12 * 2];
    let mut back = copy(MemLoc::Array(a), MemLoc::Host(part.as_mut_ptr() as usize), 12, 2, 1);
    (back.src_x, back.src_y, back.src_z) = (8, 1, 2);
    unsafe { d.memcpy_3d(&back, 0, false, false) }.expect("array to host");
    for y in 0..2 {
        assert_eq!(&part[y * 12..y * 12 + 12], &host[2 * 96 + (y + 1) * 24 + 8..2 * 96 + (y + 1) * 24 + 20]);
    }
    // Array to array (a 2-D copy), then device memory.
    let b = d.array_create(&desc(6, 4, 3, format::U16, 2, 0)).expect("array");
    let c2 = Memcpy2D {
        src: MemLoc::Array(a),
        src_x: 0,
        src_y: 0,
        src_pitch: 0,
        dst: MemLoc::Array(b),
        dst_x: 0,
        dst_y: 0,
        dst_pitch: 0,
        width: 24,
        height: 4,
    };
    unsafe { d.memcpy_2d(&c2, 0, false, false) }.expect("array to array");
    let dev = d.mem_alloc(96).expect("alloc");
    let c3 = Memcpy2D { src: MemLoc::Array(b), dst: MemLoc::Device(dev), dst_pitch: 24, ..c2 };
    unsafe { d.memcpy_2d(&c3, 0, false, false) }.expect("array to device");
    let mut out = vec![0u8; 96];
    unsafe { d.memcpy_dtoh(out.as_mut_ptr() as usize, dev, 96, 0, false, false) }.expect("dtoh");
    assert_eq!(&out[..], &host[..96]);
    // Out of range in each dimension, and partial elements.
    for (x, y, z, w, h, dp) in [(4, 0, 0, 24, 1, 1), (0, 3, 0, 24, 2, 1), (0, 0, 2, 24, 1, 2), (2, 0, 0, 4, 1, 1), (0, 0, 0, 6, 1, 1)] {
        let mut c = copy(MemLoc::Array(a), MemLoc::Host(out.as_mut_ptr() as usize), w, h, dp);
        (c.src_x, c.src_y, c.src_z) = (x, y, z);
        assert!(matches!(unsafe { d.memcpy_3d(&c, 0, false, false) }, Err(Error::InvalidValue(_))), "({x},{y},{z}) {w}x{h}x{dp}");
    }
    d.array_destroy(a).expect("destroy");
    let c = copy(MemLoc::Array(a), MemLoc::Host(out.as_mut_ptr() as usize), 4, 1, 1);
    assert!(matches!(unsafe { d.memcpy_3d(&c, 0, false, false) }, Err(Error::InvalidHandle(_))), "a destroyed array");
}

#[test]
fn mipmapped_arrays_halve_each_level() {
    let d = with_ctx();
    let m = d.mipmapped_array_create(&desc(20, 7, 0, format::FLOAT, 1, 0), 5).expect("mipmapped");
    let sizes: Vec<(usize, usize)> = (0..5)
        .map(|l| {
            let a = d.mipmapped_array_level(m, l).expect("level");
            let dsc = d.array_descriptor(a).expect("descriptor");
            (dsc.width, dsc.height)
        })
        .collect();
    assert_eq!(sizes, [(20, 7), (10, 3), (5, 1), (2, 1), (1, 1)]);
    assert!(matches!(d.mipmapped_array_level(m, 5), Err(Error::InvalidValue(_))));
    let level = d.mipmapped_array_level(m, 1).expect("level");
    assert!(matches!(d.array_destroy(level), Err(Error::InvalidHandle(_))), "levels belong to the mipmapped array");
    assert!(matches!(d.mipmapped_array_create(&desc(20, 7, 0, format::FLOAT, 1, 0), 6), Err(Error::InvalidValue(_))), "too many levels");
    assert!(matches!(d.mipmapped_array_create(&desc(20, 7, 0, format::FLOAT, 1, 0), 0), Err(Error::InvalidValue(_))));
    // A texture over it samples level 0 and reports its levels.
    let t = d.tex_object_create(Resource::Mipmapped(m), &TextureDesc::default(), None).expect("texture");
    let td = read_desc(&d, t);
    assert_eq!((td.width, td.height, td.levels), (20, 7, 5));
    assert_eq!(device::query(&td, device::query::NUM_MIPMAP_LEVELS), 5);
    d.tex_object_destroy(t, false).expect("destroy");
    d.mipmapped_array_destroy(m).expect("destroy");
    assert!(matches!(d.array_descriptor(level), Err(Error::InvalidHandle(_))), "levels go with it");
    assert!(matches!(d.mipmapped_array_destroy(m), Err(Error::InvalidHandle(_))));
}

/// A float mipmapped array of 8 x 4, 4 x 2 and 2 x 1 texels whose level
/// `l` holds 100 * (l + 1) in every texel.
fn three_levels(d: &Driver) -> u64 {
    let m = d.mipmapped_array_create(&desc(8, 4, 0, format::FLOAT, 1, 0), 3).expect("mipmapped");
    for (l, (w, h)) in [(8usize, 4usize), (4, 2), (2, 1)].into_iter().enumerate() {
        let a = d.mipmapped_array_level(m, l as u32).expect("level");
        let data = vec![100.0f32 * (l + 1) as f32; w * h];
        let c = copy(MemLoc::Host(data.as_ptr() as usize), MemLoc::Array(a), 4 * w, h, 1);
        unsafe { d.memcpy_3d(&c, 0, false, false) }.expect("copy");
    }
    m
}

#[test]
fn a_mipmapped_texture_carries_its_levels_and_clamps() {
    let d = with_ctx();
    let m = three_levels(&d);
    let tex = TextureDesc {
        flags: crate::texture::tex_flags::NORMALIZED_COORDINATES,
        mipmap_filter: 1,
        max_lod: 2.0,
        mipmap_bias: 0.5,
        ..TextureDesc::default()
    };
    let t = d.tex_object_create(Resource::Mipmapped(m), &tex, None).expect("texture");
    let td = read_desc(&d, t);
    assert_eq!((td.levels, td.lod_bias, td.min_lod, td.max_lod), (3, 0.5, 0.0, 2.0));
    assert_eq!(td.flags & device::MIPMAP_LINEAR, device::MIPMAP_LINEAR);
    assert_eq!(td.level_table, t + std::mem::size_of::<TexDesc>() as u64, "the table follows the descriptor");
    let f = Fetch { geometry: Geometry::D2, int_coords: false, result: Ret::F32, gather: None };
    let c = [0.5f32.to_bits(), 0.5f32.to_bits(), 0, 0];
    let at = |lod: f32| f32::from_bits(unsafe { device::sample_mip(&td, &f, c, device::Lod::Level(lod)) }[0]);
    assert_eq!(at(0.0), 150.0, "0 + bias 0.5: halfway between levels 0 and 1");
    assert_eq!(at(0.5), 200.0);
    assert_eq!(at(1.0), 250.0);
    assert_eq!(at(3.0), 300.0, "clamped to level 2");
    assert_eq!(unsafe { device::query_level(&td, device::query::WIDTH, 2) }, 2);
    d.tex_object_destroy(t, false).expect("destroy");
    // A plain array has no table.
    let a = d.array_create(&desc(4, 4, 0, format::FLOAT, 1, 0)).expect("array");
    let t = d.tex_object_create(Resource::Array(a), &tex, None).expect("texture");
    assert_eq!((read_desc(&d, t).levels, read_desc(&d, t).level_table), (1, 0));
    d.tex_object_destroy(t, false).expect("destroy");
    d.mipmapped_array_destroy(m).expect("destroy");
}

#[test]
fn resource_views_select_levels_and_layers() {
    let d = with_ctx();
    let f2 = Fetch { geometry: Geometry::D2, int_coords: false, result: Ret::F32, gather: None };
    let centre = [0.5f32.to_bits(), 0.5f32.to_bits(), 0, 0];
    let m = three_levels(&d);
    let tex = TextureDesc { flags: crate::texture::tex_flags::NORMALIZED_COORDINATES, max_lod: 5.0, ..TextureDesc::default() };
    let levels_1_2 = ViewDesc { width: 4, height: 2, first_level: 1, last_level: 2, ..ViewDesc::default() };
    let t = d.tex_object_create(Resource::Mipmapped(m), &tex, Some(levels_1_2)).expect("view of levels 1-2");
    let td = read_desc(&d, t);
    assert_eq!((td.width, td.height, td.levels), (4, 2, 2));
    let at = |td: &TexDesc, lod: f32| f32::from_bits(unsafe { device::sample_mip(td, &f2, centre, device::Lod::Level(lod)) }[0]);
    assert_eq!((at(&td, 0.0), at(&td, 1.0), at(&td, 4.0)), (200.0, 300.0, 300.0), "the view's level 0 is the array's level 1");
    assert_eq!(d.tex_object(t, false).expect("object").view, Some(levels_1_2));
    d.tex_object_destroy(t, false).expect("destroy");
    // A view of zeros selects level 0 alone.
    let t = d.tex_object_create(Resource::Mipmapped(m), &tex, Some(ViewDesc::default())).expect("zero view");
    let td = read_desc(&d, t);
    assert_eq!((td.levels, at(&td, 2.0)), (1, 100.0));
    d.tex_object_destroy(t, false).expect("destroy");
    let past = ViewDesc { first_level: 1, last_level: 3, ..ViewDesc::default() };
    assert!(matches!(d.tex_object_create(Resource::Mipmapped(m), &tex, Some(past)), Err(Error::InvalidValue(_))), "past the last level");
    // A view format reads the same bytes as elements of its own channels:
    // level 0's floats (100.0, bits 0x42c8_0000) as one u32, as two s16.
    let ints = TextureDesc { flags: tex.flags | crate::texture::tex_flags::READ_AS_INTEGER, ..tex };
    let fetch = |view: u32, result: Ret| {
        let v = ViewDesc { format: view, ..ViewDesc::default() };
        let t = d.tex_object_create(Resource::Mipmapped(m), &ints, Some(v)).expect("view of another format");
        let td = read_desc(&d, t);
        let texel = unsafe { device::sample(&td, &Fetch { result, ..f2 }, centre) };
        d.tex_object_destroy(t, false).expect("destroy");
        (td.format, td.channels, texel)
    };
    assert_eq!(fetch(13, Ret::U32), (format::U32, 1, [0x42c8_0000, 0, 0, 1]), "UINT_1X32");
    assert_eq!(fetch(11, Ret::S32), (format::S16, 2, [0, 0x42c8, 0, 1]), "SINT_2X16");
    assert_eq!(fetch(3, Ret::U32), (format::U8, 4, [0, 0, 0xc8, 0x42]), "UINT_4X8");
    for (view, why) in [(15, "16-byte elements"), (35, "no such format")] {
        let v = ViewDesc { format: view, ..ViewDesc::default() };
        assert!(matches!(d.tex_object_create(Resource::Mipmapped(m), &tex, Some(v)), Err(Error::InvalidValue(_))), "{why}");
    }
    let bc1 = ViewDesc { format: 25, ..ViewDesc::default() };
    assert!(matches!(d.tex_object_create(Resource::Mipmapped(m), &tex, Some(bc1)), Err(Error::NotSupported(_))), "block compressed");
    let wider = ViewDesc { width: 16, ..ViewDesc::default() };
    assert!(
        matches!(d.tex_object_create(Resource::Mipmapped(m), &tex, Some(wider)), Err(Error::InvalidValue(_))),
        "a view keeps the extent"
    );
    d.mipmapped_array_destroy(m).expect("destroy");

    // Layers 1 and 2 of a 2 x 2 array of three layers holding 10, 20, 30.
    let a = d.array_create(&desc(2, 2, 3, format::FLOAT, 1, af::LAYERED)).expect("layered");
    let data: Vec<f32> = (0..12).map(|i| 10.0 * (i / 4 + 1) as f32).collect();
    let c = copy(MemLoc::Host(data.as_ptr() as usize), MemLoc::Array(a), 8, 2, 3);
    unsafe { d.memcpy_3d(&c, 0, false, false) }.expect("copy");
    let layers = ViewDesc { width: 2, height: 2, depth: 2, first_layer: 1, last_layer: 2, ..ViewDesc::default() };
    let t = d.tex_object_create(Resource::Array(a), &tex, Some(layers)).expect("view of layers 1-2");
    let td = read_desc(&d, t);
    assert_eq!(td.layers, 2);
    let fa = Fetch { geometry: Geometry::A2d, ..f2 };
    let layer = |l: u32| f32::from_bits(unsafe { device::sample(&td, &fa, [l, 0.5f32.to_bits(), 0.5f32.to_bits(), 0]) }[0]);
    assert_eq!((layer(0), layer(1), layer(7)), (20.0, 30.0, 30.0), "layer 0 of the view is the array's layer 1; indices clamp to the view");
    d.tex_object_destroy(t, false).expect("destroy");
    let linear = Resource::Linear { ptr: d.mem_alloc(256).expect("alloc"), format: format::FLOAT, channels: 1, size: 256 };
    assert!(matches!(d.tex_object_create(linear, &tex, Some(ViewDesc::default())), Err(Error::InvalidValue(_))), "views are for arrays");
}

/// The descriptor behind an object handle, read back from device memory.
fn read_desc(d: &Driver, h: u64) -> TexDesc {
    let mut bytes = vec![0u8; std::mem::size_of::<TexDesc>()];
    // Objects are not in the address table: read through the backend.
    d.backend.copy_dtoh(&mut bytes, h).expect("descriptor readable");
    unsafe { bytes.as_ptr().cast::<TexDesc>().read_unaligned() }
}

#[test]
fn texture_objects_describe_their_resource() {
    let d = with_ctx();
    let a = d.array_create(&desc(4, 2, 0, format::FLOAT, 1, 0)).expect("array");
    let data: Vec<f32> = (0..8).map(|v| v as f32 * 1.5).collect();
    let c = copy(MemLoc::Host(data.as_ptr() as usize), MemLoc::Array(a), 16, 2, 1);
    unsafe { d.memcpy_3d(&c, 0, false, false) }.expect("copy");
    let tex = TextureDesc { address: [3, 1, 1], filter: 1, flags: 0, border: [9.0, 0.0, 0.0, 0.0], ..TextureDesc::default() };
    let view = ViewDesc { width: 4, height: 2, ..ViewDesc::default() };
    let t = d.tex_object_create(Resource::Array(a), &tex, Some(view)).expect("texture");
    let o = d.tex_object(t, false).expect("object");
    assert_eq!(o.resource, Resource::Array(a));
    assert_eq!(o.texture, Some(tex));
    assert_eq!(o.view, Some(view));
    assert!(d.tex_object(t, true).is_err(), "a texture is not a surface");
    // What a kernel reads through the handle samples the array.
    let td = read_desc(&d, t);
    assert_eq!((td.magic, td.width, td.height, td.dims), (device::TEX_MAGIC, 4, 2, 2));
    let f = Fetch { geometry: Geometry::D2, int_coords: false, result: Ret::F32, gather: None };
    let at = |x: f32, y: f32| f32::from_bits(unsafe { device::sample(&td, &f, [x.to_bits(), y.to_bits(), 0, 0]) }[0]);
    assert_eq!(at(2.5, 1.5), 9.0, "texel (2, 1)");
    assert_eq!(at(3.0, 0.5), 0.5 * 3.0 + 0.5 * 4.5, "halfway between texels 2 and 3");
    assert_eq!(at(4.5, 0.5), 9.0, "border");
    d.tex_object_destroy(t, false).expect("destroy");
    assert!(matches!(d.tex_object(t, false), Err(Error::InvalidValue(_))));
    assert!(matches!(d.tex_object_destroy(t, false), Err(Error::InvalidValue(_))));

    // Errors.
    let int_array = d.array_create(&desc(4, 2, 0, format::S8, 1, 0)).expect("array");
    let as_int = TextureDesc { filter: 1, flags: crate::texture::tex_flags::READ_AS_INTEGER, ..TextureDesc::default() };
    assert!(
        matches!(d.tex_object_create(Resource::Array(int_array), &as_int, None), Err(Error::InvalidValue(_))),
        "linear filtering of integers"
    );
    let bad_mode = TextureDesc { address: [4, 0, 0], ..TextureDesc::default() };
    assert!(matches!(d.tex_object_create(Resource::Array(a), &bad_mode, None), Err(Error::InvalidValue(_))));
    d.array_destroy(a).expect("destroy");
    assert!(matches!(d.tex_object_create(Resource::Array(a), &tex, None), Err(Error::InvalidHandle(_))), "a destroyed array");
    let p = d.mem_alloc(1024).expect("alloc");
    let linear = Resource::Linear { ptr: p, format: format::FLOAT, channels: 1, size: 1024 };
    let tl = d.tex_object_create(linear, &TextureDesc::default(), None).expect("linear texture");
    assert_eq!(read_desc(&d, tl).width, 256);
    let too_long = Resource::Linear { ptr: p, format: format::FLOAT, channels: 1, size: 2048 };
    assert!(matches!(d.tex_object_create(too_long, &TextureDesc::default(), None), Err(Error::InvalidValue(_))), "past the allocation");
    let misaligned = Resource::Linear { ptr: p + 4, format: format::FLOAT, channels: 1, size: 512 };
    assert!(matches!(d.tex_object_create(misaligned, &TextureDesc::default(), None), Err(Error::InvalidValue(_))));
    let pitched = Resource::Pitch2D { ptr: p, format: format::U8, channels: 4, width: 16, height: 4, pitch: 64 };
    let tp = d.tex_object_create(pitched, &TextureDesc::default(), None).expect("pitch2d texture");
    assert_eq!((read_desc(&d, tp).width, read_desc(&d, tp).height, read_desc(&d, tp).pitch), (16, 4, 64));
    let short_pitch = Resource::Pitch2D { ptr: p, format: format::U8, channels: 4, width: 16, height: 4, pitch: 32 };
    assert!(matches!(d.tex_object_create(short_pitch, &TextureDesc::default(), None), Err(Error::InvalidValue(_))));
}

#[test]
fn surface_objects_need_load_store_arrays() {
    let d = with_ctx();
    let plain = d.array_create(&desc(8, 8, 0, format::FLOAT, 1, 0)).expect("array");
    assert!(matches!(d.surf_object_create(Resource::Array(plain)), Err(Error::InvalidValue(_))));
    let ldst = d.array_create(&desc(8, 8, 3, format::FLOAT, 2, af::SURFACE_LDST | af::LAYERED)).expect("array");
    let s = d.surf_object_create(Resource::Array(ldst)).expect("surface");
    assert_eq!(d.tex_object(s, true).expect("surface").resource, Resource::Array(ldst));
    assert!(d.tex_object(s, false).is_err(), "a surface is not a texture");
    let dsc = read_desc(&d, s);
    assert_eq!((dsc.magic, dsc.layers, dsc.pitch, dsc.slice), (device::SURF_MAGIC, 3, 64, 512));
    let p = d.mem_alloc(256).expect("alloc");
    assert!(matches!(
        d.surf_object_create(Resource::Linear { ptr: p, format: format::FLOAT, channels: 1, size: 256 }),
        Err(Error::InvalidValue(_))
    ));
    d.tex_object_destroy(s, true).expect("destroy");
    assert!(d.tex_object_destroy(s, true).is_err());
}
