//! `Image::from_ptr` on memory that ends right before an inaccessible page:
//! reading one byte beyond what the headers describe kills the test with
//! SIGSEGV, so these tests prove the reader stays inside the image.
#![allow(unsafe_code)]

use super::writer::{cubin, elf, entries, ptx, wrapper};
use super::{fake_sass, PTX80};
use crate::*;

/// `data` copied so that its last byte is the last readable byte before a
/// PROT_NONE page.
pub(super) struct Guarded {
    map: *mut libc::c_void,
    map_len: usize,
    ptr: *const u8,
    len: usize,
}

impl Guarded {
    pub(super) fn new(data: &[u8]) -> Self {
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
            Guarded { map, map_len, ptr: dst, len: data.len() }
        }
    }

    fn image(&self) -> Result<Image<'_>> {
        // SAFETY: points to the image copied in `new`, alive as long as self.
        unsafe { Image::from_ptr(self.ptr.cast()) }
    }

    /// The image read with the readable range limited to the copied bytes
    /// (which are followed by the PROT_NONE page).
    pub(super) fn checked(&self) -> Result<Image<'_>> {
        // SAFETY: points to the image copied in `new`; `Bounds` reports only
        // bytes of it readable.
        unsafe { Image::from_ptr_checked(self.ptr.cast(), &self.bounds()) }
    }

    fn bounds(&self) -> Bounds {
        Bounds { start: self.ptr as usize, end: self.ptr as usize + self.len }
    }
}

/// Knows the one readable range of a test: what a kernel query would say
/// about memory followed by an inaccessible page.
pub(super) struct Bounds {
    start: usize,
    end: usize,
}

impl Readable for Bounds {
    fn readable_prefix(&self, addr: usize, len: usize) -> usize {
        if addr < self.start || addr >= self.end {
            0
        } else {
            len.min(self.end - addr)
        }
    }
}

/// Several readable ranges: a wrapper and the fatbin it points to.
struct Ranges(Vec<Bounds>);

impl Readable for Ranges {
    fn readable_prefix(&self, addr: usize, len: usize) -> usize {
        self.0.iter().map(|b| b.readable_prefix(addr, len)).max().unwrap_or(0)
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

/// Every form of image, cut at every length and placed so that the cut is
/// the end of readable memory: a read past the cut would kill the test with
/// SIGSEGV. Each cut gives an error (the image's headers declare more than
/// is there); the whole image reads as it does from bytes.
#[test]
fn images_cut_at_every_offset_before_an_inaccessible_page() {
    let fat = entries(vec![ptx(80, PTX80).zstd(), ptx(70, PTX80).lz4(), ptx(90, PTX80)]);
    let concat = super::concat_fatbin(Codec::Zstd, true);
    let cub = cubin(EM_CUDA, 86, &[0x5a; 300]);
    let mut text = PTX80.as_bytes().to_vec();
    text.push(0);
    for (name, img) in [("fatbin", &fat), ("concat fatbin", &concat), ("cubin", &cub), ("PTX", &text)] {
        let whole = Guarded::new(img);
        let full = whole.checked().unwrap_or_else(|e| panic!("{name}: {e}"));
        let from_bytes = Image::parse(img).unwrap();
        assert_eq!(format!("{:?}", full.ptx(80, Policy::Any)), format!("{:?}", from_bytes.ptx(80, Policy::Any)), "{name}");
        for n in 0..img.len() {
            let g = Guarded::new(&img[..n]);
            match g.checked() {
                Err(Error::Unreadable { .. }) => {}
                other => panic!("{name} cut at {n} of {}: {other:?}", img.len()),
            }
        }
    }
}

/// A wrapper whose fatbin is cut, and a wrapper that is cut itself.
#[test]
fn wrapper_to_a_cut_fatbin() {
    let img = entries(vec![ptx(80, PTX80).lz4(), ptx(90, PTX80)]);
    for n in 0..=img.len() {
        let fat = Guarded::new(&img[..n]);
        let w = Guarded::new(&wrapper(1, fat.ptr as u64));
        let ranges = Ranges(vec![w.bounds(), fat.bounds()]);
        // SAFETY: both ranges are the copies above; `ranges` reports only them.
        let r = unsafe { Image::from_ptr_checked(w.ptr.cast(), &ranges) };
        match r {
            Ok(Image::Fatbin { wrapper: Some(_), fatbin }) if n == img.len() => assert_eq!(fatbin.size(), img.len()),
            Err(Error::Unreadable { .. }) if n < img.len() => {}
            other => panic!("fatbin cut at {n}: {other:?}"),
        }
    }
    let fat = Guarded::new(&img);
    let full = wrapper(2, fat.ptr as u64);
    for n in 0..full.len() {
        let w = Guarded::new(&full[..n]);
        let ranges = Ranges(vec![w.bounds(), fat.bounds()]);
        // SAFETY: as above.
        let r = unsafe { Image::from_ptr_checked(w.ptr.cast(), &ranges) };
        assert!(matches!(r, Err(Error::Unreadable { .. })), "wrapper cut at {n}: {r:?}");
    }
}

/// PTX text longer than one checked run, with and without its NUL.
#[test]
fn long_ptx_text_is_scanned_run_by_run() {
    let mut text = String::from(".version 9.5\n.target sm_80\n.address_size 64\n");
    while text.len() < 200_000 {
        text.push_str("// filler line of a long module\n");
    }
    let mut with_nul = text.clone().into_bytes();
    with_nul.push(0);
    let g = Guarded::new(&with_nul);
    match g.checked() {
        Ok(Image::Ptx(t)) => assert_eq!(t, text),
        other => panic!("{other:?}"),
    }
    let g = Guarded::new(text.as_bytes());
    assert!(matches!(g.checked(), Err(Error::Unreadable { what: "PTX text (no terminating NUL)", .. })));
}

/// Short strings as in `short_ptx_strings_are_not_overrun`, checked.
#[test]
fn short_ptx_strings_checked() {
    for s in [&b"\0"[..], b"a\0", b"ab\0", b"abc\0", b"abcd\0"] {
        let g = Guarded::new(s);
        match g.checked() {
            Ok(Image::Ptx(t)) => assert_eq!(t.as_bytes(), &s[..s.len() - 1]),
            Err(Error::Empty) => assert_eq!(s, b"\0"),
            other => panic!("{s:?}: {other:?}"),
        }
        let g = Guarded::new(&s[..s.len() - 1]);
        assert!(matches!(g.checked(), Err(Error::Unreadable { .. })), "{s:?} without NUL");
    }
}

/// Records every range asked about.
struct Recording<'b> {
    inner: &'b Bounds,
    asked: std::cell::RefCell<Vec<(usize, usize)>>,
}

impl Readable for Recording<'_> {
    fn readable_prefix(&self, addr: usize, len: usize) -> usize {
        self.asked.borrow_mut().push((addr, len));
        self.inner.readable_prefix(addr, len)
    }
}

/// The check starts its questions only at headers, decoded payloads and the
/// fatbin's last byte, never inside SASS payloads, which nothing reads
/// (each question may look a few KiB ahead, see `Remembered`), so checking
/// a fatbin of mostly SASS asks about a fraction of it; a payload running
/// past the declared size is refused before its bytes are asked about.
#[test]
fn checked_fatbin_asks_about_headers_and_decoded_payloads_only() {
    let sass = fake_sass(200_000);
    let img = entries(vec![elf(86, &sass), ptx(80, PTX80).zstd(), elf(75, &sass)]);
    let g = Guarded::new(&img);
    let bounds = g.bounds();
    let rec = Recording { inner: &bounds, asked: Default::default() };
    // SAFETY: the copy in `g`; `bounds` reports only it.
    let image = unsafe { Image::from_ptr_checked(g.ptr.cast(), &rec) }.unwrap();
    let fb = image.fatbin().unwrap().clone();
    let base = g.ptr as usize;
    let mut asked = 0;
    for &(a, l) in rec.asked.borrow().iter() {
        assert!(a >= base && a < base + img.len(), "asked outside the fatbin: {:#x}+{l}", a.wrapping_sub(base));
        asked += l;
        if a == base + img.len() - 1 {
            continue; // the last byte, so a cut anywhere is found
        }
        for e in fb.entries().iter().filter(|e| e.kind() == EntryKind::Elf) {
            let p = e.stored_payload().unwrap().as_ptr() as usize;
            assert!(a < p || a >= p + e.payload_size() as usize, "asked inside the {} payload", e.arch_name());
        }
    }
    assert!(asked < img.len() / 8, "asked about {asked} of {} bytes", img.len());
    let ptx_entry = &fb.entries()[1];
    let p = ptx_entry.stored_payload().unwrap().as_ptr() as usize;
    assert!(rec.asked.borrow().iter().any(|&(a, l)| a <= p && a + l >= p + ptx_entry.payload_size() as usize), "PTX payload checked");

    // The second entry's payload size patched to run past the declared
    // total: refused from the sizes, before that payload is asked about.
    let mut bad = img.clone();
    let e1 = fb.entries()[1].offset() as usize;
    let psz = fb.entries()[1].payload_size();
    bad[e1 + 8..e1 + 16].copy_from_slice(&(psz + img.len() as u64).to_le_bytes());
    let g = Guarded::new(&bad);
    let bounds = g.bounds();
    let rec = Recording { inner: &bounds, asked: Default::default() };
    // SAFETY: as above.
    let r = unsafe { Image::from_ptr_checked(g.ptr.cast(), &rec) };
    assert!(matches!(r, Err(Error::Truncated { what: "entry payload", .. })), "{r:?}");
    let payload_at = g.ptr as usize + e1 + fb.entries()[1].header_size() as usize;
    assert!(rec.asked.borrow().iter().all(|&(a, _)| a != payload_at));
}
