//! `Image::from_ptr` on memory that ends right before an inaccessible page:
//! reading one byte beyond what the headers describe kills the test with
//! SIGSEGV, so these tests prove the reader stays inside the image.
#![allow(unsafe_code)]

use super::writer::{cubin, entries, ptx, wrapper};
use super::PTX80;
use crate::*;

/// `data` copied so that its last byte is the last readable byte before a
/// PROT_NONE page.
struct Guarded {
    map: *mut libc::c_void,
    map_len: usize,
    ptr: *const u8,
}

impl Guarded {
    fn new(data: &[u8]) -> Self {
        // SAFETY: plain anonymous mapping and protection change, checked.
        unsafe {
            let page = libc::sysconf(libc::_SC_PAGESIZE) as usize;
            let data_pages = data.len().div_ceil(page).max(1);
            let map_len = (data_pages + 1) * page;
            let map = libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(map, libc::MAP_FAILED);
            let guard = (map as *mut u8).add(data_pages * page);
            assert_eq!(libc::mprotect(guard.cast(), page, libc::PROT_NONE), 0);
            let dst = guard.sub(data.len());
            std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len());
            Guarded { map, map_len, ptr: dst }
        }
    }

    fn image(&self) -> Result<Image<'_>> {
        // SAFETY: points to the image copied in `new`, alive as long as self.
        unsafe { Image::from_ptr(self.ptr.cast()) }
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        // SAFETY: unmaps what `new` mapped.
        unsafe {
            libc::munmap(self.map, self.map_len);
        }
    }
}

#[test]
fn fatbin_from_pointer_reads_exactly_its_size() {
    let img = entries(vec![ptx(80, PTX80).zstd(), ptx(70, PTX80).lz4()]);
    let g = Guarded::new(&img);
    let image = g.image().unwrap();
    let Image::Fatbin { wrapper: None, fatbin } = &image else { panic!("{image:?}") };
    assert_eq!(fatbin.as_bytes().as_ptr(), g.ptr, "borrowed, not copied");
    assert_eq!(fatbin.size(), img.len());
    assert_eq!(image.ptx(86, Policy::Strict).unwrap().text, PTX80);
}

#[test]
fn wrapper_from_pointer_follows_to_the_fatbin() {
    let img = entries(vec![ptx(80, PTX80)]);
    let fat = Guarded::new(&img);
    for version in [1, 2] {
        let w = Guarded::new(&wrapper(version, fat.ptr as u64));
        let image = w.image().unwrap();
        match &image {
            Image::Fatbin { wrapper: Some(wr), fatbin } => {
                assert_eq!(wr.version, version);
                assert_eq!(fatbin.as_bytes().as_ptr(), fat.ptr);
                assert_eq!(fatbin.size(), img.len());
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(image.ptx(80, Policy::Strict).unwrap().text, PTX80);
    }
    let w = Guarded::new(&wrapper(1, 0));
    assert_eq!(w.image().unwrap_err(), Error::NullPointer { what: "wrapper's fatbin" });
    let w = Guarded::new(&wrapper(9, fat.ptr as u64));
    assert!(matches!(w.image(), Err(Error::UnsupportedVersion { version: 9, .. })));
}

#[test]
fn bad_fatbin_header_from_pointer() {
    let mut img = entries(vec![ptx(80, PTX80)]);
    img[4] = 7;
    let g = Guarded::new(&img[..16]);
    assert!(matches!(g.image(), Err(Error::UnsupportedVersion { version: 7, .. })));
}

#[test]
fn short_ptx_strings_are_not_overrun() {
    for s in [&b"\0"[..], b"a\0", b"ab\0", b"abc\0", b".version 9.5\n\0"] {
        let g = Guarded::new(s);
        match g.image() {
            Ok(Image::Ptx(t)) => assert_eq!(t.as_bytes(), &s[..s.len() - 1]),
            Err(Error::Empty) => assert_eq!(s, b"\0"),
            other => panic!("{s:?}: {other:?}"),
        }
    }
}

#[test]
fn cubin_from_pointer_reads_its_extent() {
    let c = cubin(EM_CUDA, 90, &[0x5a; 77]);
    let g = Guarded::new(&c);
    match g.image().unwrap() {
        Image::Cubin(cb) => {
            assert_eq!(cb.as_bytes().len(), c.len());
            assert_eq!(cb.arch(), Some(90));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn null_pointer() {
    // SAFETY: null is explicitly allowed.
    let r = unsafe { Image::from_ptr(std::ptr::null()) };
    assert_eq!(r.unwrap_err(), Error::NullPointer { what: "image" });
}
