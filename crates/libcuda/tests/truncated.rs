//! Module images cut short: the bytes end where the caller's memory ends (an
//! inaccessible page follows), while the image's headers declare more. The
//! library must answer `CUDA_ERROR_INVALID_IMAGE` and read nothing past the
//! cut; a read past it would kill this test with SIGSEGV.

mod common;
use common::*;
use std::ffi::c_void;
use std::ptr::null_mut;

/// A fatbin with one raw PTX entry (`MOCK_PTX`, whose kernels the mock
/// backend knows), laid out as nvcc's fatbinary writes it.
fn fatbin() -> Vec<u8> {
    let mut payload = MOCK_PTX.as_bytes().to_vec();
    while !payload.len().is_multiple_of(8) {
        payload.push(0);
    }
    let mut entry = Vec::new();
    entry.extend_from_slice(&1u16.to_le_bytes()); // PTX
    entry.extend_from_slice(&0x0101u16.to_le_bytes());
    entry.extend_from_slice(&0x40u32.to_le_bytes()); // header size
    entry.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    entry.extend_from_slice(&0u32.to_le_bytes()); // compressed size: raw
    entry.extend_from_slice(&0u32.to_le_bytes()); // no options
    entry.extend_from_slice(&0x0008_0006u32.to_le_bytes()); // PTX ISA 8.6
    entry.extend_from_slice(&80u32.to_le_bytes()); // compute_80
    entry.extend_from_slice(&[0; 8]); // no identifier
    entry.extend_from_slice(&0x11u64.to_le_bytes()); // 64-bit, Linux
    entry.extend_from_slice(&[0; 16]);
    assert_eq!(entry.len(), 0x40);
    entry.extend_from_slice(&payload);
    let mut fb = Vec::new();
    fb.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
    fb.extend_from_slice(&1u16.to_le_bytes());
    fb.extend_from_slice(&16u16.to_le_bytes());
    fb.extend_from_slice(&(entry.len() as u64).to_le_bytes());
    fb.extend_from_slice(&entry);
    fb
}

/// `data` copied to end right before a PROT_NONE page.
struct Guarded {
    map: *mut c_void,
    map_len: usize,
    ptr: *const u8,
}

impl Guarded {
    fn new(data: &[u8]) -> Guarded {
        unsafe {
            let page = libc::sysconf(libc::_SC_PAGESIZE) as usize;
            let pages = data.len().div_ceil(page).max(1);
            let map_len = (pages + 1) * page;
            let map = libc::mmap(null_mut(), map_len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
            assert_ne!(map, libc::MAP_FAILED);
            let guard = (map as *mut u8).add(pages * page);
            assert_eq!(libc::mprotect(guard.cast(), page, libc::PROT_NONE), 0);
            let dst = guard.sub(data.len());
            std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len());
            Guarded { map, map_len, ptr: dst }
        }
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        unsafe { libc::munmap(self.map, self.map_len) };
    }
}

#[test]
fn images_cut_at_every_offset_are_invalid_images() {
    let l = Lib::open();
    api!(l;
        cuInit: fn(u32); cuDevicePrimaryCtxRetain: fn(*mut Ptr, i32); cuCtxSetCurrent: fn(Ptr);
        cuModuleLoadData: fn(*mut Ptr, *const c_void); cuModuleLoadFatBinary: fn(*mut Ptr, *const c_void);
        cuModuleUnload: fn(Ptr);
        cuLibraryLoadData: fn(*mut Ptr, *const c_void, *mut u32, *mut *mut c_void, u32, *mut u32, *mut *mut c_void, u32);
        cuLibraryUnload: fn(Ptr);
    );
    let fb = fatbin();
    let ptx = MOCK_PTX.as_bytes();
    unsafe {
        assert_eq!(cuInit(0), SUCCESS);
        let mut c = null_mut();
        assert_eq!(cuDevicePrimaryCtxRetain(&mut c, 0), SUCCESS);
        assert_eq!(cuCtxSetCurrent(c), SUCCESS);

        // Whole images load.
        for img in [&fb[..], ptx] {
            let g = Guarded::new(img);
            let mut m = null_mut();
            assert_eq!(cuModuleLoadData(&mut m, g.ptr.cast()), SUCCESS);
            assert_eq!(cuModuleUnload(m), SUCCESS);
        }
        // Every cut of the fatbin, and of the PTX text before its NUL.
        for (name, img) in [("fatbin", &fb[..]), ("PTX", ptx)] {
            for n in 0..img.len() {
                let g = Guarded::new(&img[..n]);
                let mut m = null_mut();
                let r = cuModuleLoadData(&mut m, g.ptr.cast());
                assert_eq!(r, INVALID_IMAGE, "{name} cut at {n} of {}", img.len());
                let mut lib = null_mut();
                let r = cuLibraryLoadData(&mut lib, g.ptr.cast(), null_mut(), null_mut(), 0, null_mut(), null_mut(), 0);
                assert_eq!(r, INVALID_IMAGE, "library: {name} cut at {n}");
            }
        }
        // A wrapper (what cudart registers) pointing to a cut fatbin.
        for n in [0, 8, 16, 40, 0x50, fb.len() - 1] {
            let g = Guarded::new(&fb[..n]);
            let mut w = Vec::new();
            w.extend_from_slice(&0x4662_43B1u32.to_le_bytes());
            w.extend_from_slice(&1u32.to_le_bytes());
            w.extend_from_slice(&(g.ptr as u64).to_le_bytes());
            w.extend_from_slice(&0u64.to_le_bytes());
            let wg = Guarded::new(&w);
            let mut m = null_mut();
            assert_eq!(cuModuleLoadFatBinary(&mut m, wg.ptr.cast()), INVALID_IMAGE, "wrapper to a fatbin cut at {n}");
            // The wrapper itself cut.
            let wg = Guarded::new(&w[..20]);
            assert_eq!(cuModuleLoadFatBinary(&mut m, wg.ptr.cast()), INVALID_IMAGE, "wrapper cut at 20");
        }
    }
}

#[test]
fn link_inputs_longer_than_their_memory_are_refused() {
    let l = Lib::open();
    api!(l;
        cuInit: fn(u32); cuDevicePrimaryCtxRetain: fn(*mut Ptr, i32); cuCtxSetCurrent: fn(Ptr);
        cuLinkCreate_v2: fn(u32, *mut u32, *mut *mut c_void, *mut Ptr);
        cuLinkAddData_v2: fn(Ptr, u32, *mut c_void, usize, *const std::ffi::c_char, u32, *mut u32, *mut *mut c_void);
        cuLinkDestroy: fn(Ptr);
    );
    const FATBINARY: u32 = 2;
    let fb = fatbin();
    unsafe {
        assert_eq!(cuInit(0), SUCCESS);
        let mut c = null_mut();
        assert_eq!(cuDevicePrimaryCtxRetain(&mut c, 0), SUCCESS);
        assert_eq!(cuCtxSetCurrent(c), SUCCESS);
        let mut link = null_mut();
        assert_eq!(cuLinkCreate_v2(0, null_mut(), null_mut(), &mut link), SUCCESS);
        let g = Guarded::new(&fb);
        let add = |size: usize| cuLinkAddData_v2(link, FATBINARY, g.ptr.cast_mut().cast(), size, c"in".as_ptr(), 0, null_mut(), null_mut());
        // A size past the mapping: refused before anything is read.
        assert_eq!(add(fb.len() + 1), INVALID_VALUE);
        assert_eq!(add(fb.len() + 100_000), INVALID_VALUE);
        // A size short of what the fatbin's header declares: a bad image.
        assert_eq!(add(fb.len() - 8), INVALID_IMAGE);
        assert_eq!(add(fb.len()), SUCCESS);
        assert_eq!(cuLinkDestroy(link), SUCCESS);
    }
}
