mod fuzz;
mod raw_ptr;
pub mod writer;

use std::borrow::Cow;

use writer::{cubin, elf, entries, fatbin, ptx, Item, TestEntry};

use crate::*;

const PTX80: &str = "\n\n\n.version 9.5\n.target sm_80\n.address_size 64\n\n.visible .entry k80()\n{\n\tret;\n}\n";
const PTX90: &str = ".version 9.5\n.target sm_90\n.address_size 64\n.visible .entry k90()\n{\n\tret;\n}\n";
const PTX52: &str = ".version 7.0\n.target sm_52\n.address_size 64\n.visible .entry k52()\n{\n\tret;\n}\n";

fn fake_sass(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + 3) as u8).collect()
}

fn mixed() -> Vec<u8> {
    entries(vec![
        elf(86, &fake_sass(300)),
        ptx(90, PTX90).zstd(),
        ptx(52, PTX52),
        elf(75, &fake_sass(200)).zstd(),
        ptx(80, PTX80).lz4(),
        TestEntry { kind: 7, ..ptx(0, "whatever") },
    ])
}

fn text_of(fb: &Fatbin<'_>, target: u32, policy: Policy) -> Result<String> {
    Ok(fb.extract_ptx(target, policy)?.text.into_owned())
}

#[test]
fn single_raw_ptx_entry() {
    let img = entries(vec![ptx(80, PTX80)]);
    let fb = Fatbin::parse(&img).unwrap();
    assert_eq!(fb.version(), 1);
    assert_eq!(fb.header_size(), 16);
    assert_eq!(fb.size(), img.len());
    let e = &fb.entries()[0];
    assert_eq!(e.kind(), EntryKind::Ptx);
    assert_eq!(e.arch(), 80);
    assert_eq!(e.arch_name(), "compute_80");
    assert_eq!(e.ptx_version(), Some(PtxVersion { major: 9, minor: 5 }));
    assert_eq!(e.ptx_version().unwrap().to_string(), "9.5");
    assert_eq!(e.header_size(), 0x50, "PTX headers carry an options descriptor");
    assert_eq!(e.compression(), Compression::None);
    assert_eq!(e.compressed_size(), 0);
    assert!(e.flags().is_64bit());
    assert_eq!(e.payload_size() % 8, 0);
    assert!(e.payload_size() > PTX80.len() as u64);
    let text = e.ptx_text().unwrap();
    assert!(matches!(text, Cow::Borrowed(_)), "raw PTX is not copied");
    assert_eq!(text, PTX80, "leading blank lines kept, NUL and padding dropped");
    assert_eq!(e.jit_options(), None);
    assert_eq!(e.identifier(), None);
}

#[test]
fn multiple_entries_any_order() {
    let img = mixed();
    let fb = Fatbin::parse(&img).unwrap();
    let kinds: Vec<_> = fb.entries().iter().map(|e| (e.kind(), e.arch())).collect();
    assert_eq!(
        kinds,
        vec![
            (EntryKind::Elf, 86),
            (EntryKind::Ptx, 90),
            (EntryKind::Ptx, 52),
            (EntryKind::Elf, 75),
            (EntryKind::Ptx, 80),
            (EntryKind::Unknown(7), 0),
        ]
    );
    let e = fb.entries();
    assert_eq!(e[1].compression(), Compression::Zstd);
    assert_eq!(e[4].compression(), Compression::Lz4);
    assert_eq!(e[1].uncompressed_size(), PTX90.len() as u64 + 1);
    assert_eq!(e[1].ptx_text().unwrap(), PTX90);
    assert_eq!(e[2].ptx_text().unwrap(), PTX52);
    assert_eq!(e[4].ptx_text().unwrap(), PTX80);
    assert_eq!(e[3].data().unwrap(), &fake_sass(200)[..]);
    assert_eq!(&e[0].data().unwrap()[..300], &fake_sass(300)[..]);
    assert_eq!(fb.sass_archs(), vec![75, 86]);
    assert!(matches!(e[0].ptx_text(), Err(Error::NotPtx { kind: EntryKind::Elf, .. })));
    // Offsets chain: each entry starts where the previous payload ends.
    for w in e.windows(2) {
        assert_eq!(w[1].offset(), w[0].offset() + u64::from(w[0].header_size()) + w[0].payload_size());
    }
}

#[test]
fn strict_selection_is_highest_not_above_target() {
    let img = mixed();
    let fb = Fatbin::parse(&img).unwrap();
    assert_eq!(text_of(&fb, 86, Policy::Strict).unwrap(), PTX80);
    assert_eq!(text_of(&fb, 80, Policy::Strict).unwrap(), PTX80);
    assert_eq!(text_of(&fb, 79, Policy::Strict).unwrap(), PTX52);
    assert_eq!(text_of(&fb, 90, Policy::Strict).unwrap(), PTX90);
    assert_eq!(text_of(&fb, 120, Policy::Strict).unwrap(), PTX90);
    let p = fb.extract_ptx(86, Policy::Strict).unwrap();
    assert_eq!((p.arch, p.entry), (Some(80), Some(4)));
    assert_eq!(p.version, Some(PtxVersion { major: 9, minor: 5 }));
    match fb.select_ptx(50, Policy::Strict) {
        Err(Error::NoCompatiblePtx { target: 50, ptx_archs, .. }) => assert_eq!(ptx_archs, vec![52, 80, 90]),
        other => panic!("expected NoCompatiblePtx, got {other:?}"),
    }
}

#[test]
fn nearest_and_any_policies() {
    let img = mixed();
    let fb = Fatbin::parse(&img).unwrap();
    assert_eq!(text_of(&fb, 86, Policy::Nearest).unwrap(), PTX80);
    assert_eq!(text_of(&fb, 50, Policy::Nearest).unwrap(), PTX52);
    assert_eq!(text_of(&fb, 50, Policy::Any).unwrap(), PTX90);
    assert_eq!(text_of(&fb, 86, Policy::Any).unwrap(), PTX90);
    assert_eq!(Policy::default(), Policy::Strict);
}

#[test]
fn elf_only_is_no_ptx_naming_the_sass_archs() {
    let img = entries(vec![elf(86, &fake_sass(64)), elf(75, &fake_sass(64)).lz4(), elf(86, &fake_sass(8))]);
    let fb = Fatbin::parse(&img).unwrap();
    for policy in [Policy::Strict, Policy::Nearest, Policy::Any] {
        let err = fb.select_ptx(86, policy).unwrap_err();
        assert_eq!(err, Error::NoPtx { archs: vec![75, 86] });
        assert!(err.to_string().contains("sm_75, sm_86"), "{err}");
    }
    let img = entries(vec![]);
    let fb = Fatbin::parse(&img).unwrap();
    assert!(fb.entries().is_empty());
    assert_eq!(fb.select_ptx(86, Policy::Any).unwrap_err(), Error::NoPtx { archs: vec![] });
}

#[test]
fn arch_specific_and_family_variants() {
    let a = ".version 8.0\n.target sm_90a\n";
    let g = ".version 8.0\n.target sm_90\n";
    let f = ".version 8.8\n.target sm_100f\n";
    let img = entries(vec![ptx(90, a).flag(Flags::ARCH_SPECIFIC), ptx(90, g), ptx(100, f).flag(Flags::FAMILY_SPECIFIC)]);
    let fb = Fatbin::parse(&img).unwrap();
    assert_eq!(fb.entries()[0].arch_name(), "compute_90a");
    assert_eq!(fb.entries()[2].arch_name(), "compute_100f");
    assert_eq!(fb.entries()[2].arch_variant(), ArchVariant::FamilySpecific);
    // Same arch: the portable variant wins.
    assert_eq!(text_of(&fb, 90, Policy::Strict).unwrap(), g);
    assert_eq!(text_of(&fb, 100, Policy::Strict).unwrap(), f);
    assert_eq!(text_of(&fb, 103, Policy::Strict).unwrap(), f);
    // 100f does not run on 12.x; 90 (generic) does.
    assert_eq!(text_of(&fb, 120, Policy::Strict).unwrap(), g);

    let only_a = entries(vec![ptx(90, a).flag(Flags::ARCH_SPECIFIC)]);
    let fb = Fatbin::parse(&only_a).unwrap();
    assert_eq!(text_of(&fb, 90, Policy::Strict).unwrap(), a);
    assert!(matches!(fb.select_ptx(100, Policy::Strict), Err(Error::NoCompatiblePtx { .. })));
    assert_eq!(text_of(&fb, 100, Policy::Any).unwrap(), a);
    assert!(!runs_on(90, ArchVariant::ArchSpecific, 89));
    assert!(runs_on(52, ArchVariant::Generic, 86));
}

#[test]
fn equal_arch_prefers_newer_isa_then_file_order() {
    let old = ".version 7.0\n// old\n";
    let new = ".version 8.0\n// new\n";
    let mut e_old = ptx(80, old);
    e_old.version = 0x0007_0000;
    let mut e_new = ptx(80, new);
    e_new.version = 0x0008_0000;
    let img = entries(vec![e_old.clone(), e_new, e_old]);
    let fb = Fatbin::parse(&img).unwrap();
    assert_eq!(text_of(&fb, 86, Policy::Strict).unwrap(), new);
    let img = entries(vec![ptx(80, old), ptx(80, new)]);
    let fb = Fatbin::parse(&img).unwrap();
    assert_eq!(fb.select_ptx(86, Policy::Strict).unwrap().index(), 0);
}

#[test]
fn names_and_jit_options() {
    let img = entries(vec![
        ptx(80, PTX80).named("k.cu").options("--compile-only  -g --return-at-end ").zstd(),
        elf(80, &fake_sass(40)).named("k.cu").flag(Flags::DEBUG),
    ]);
    let fb = Fatbin::parse(&img).unwrap();
    let e = &fb.entries()[0];
    assert_eq!(e.identifier(), Some("k.cu"));
    assert_eq!(e.jit_options(), Some("--compile-only  -g --return-at-end"));
    // name "k.cu\0" at 0x40, descriptor at 0x48, 35 option bytes + NUL at 0x50, padded.
    assert_eq!(e.header_size(), 0x78);
    assert_eq!(e.ptx_text().unwrap(), PTX80);
    let s = &fb.entries()[1];
    assert_eq!(s.identifier(), Some("k.cu"));
    assert_eq!(s.header_size(), 0x48);
    assert!(s.flags().has_debug_info());
}

fn concat_fatbin(codec: Codec, named: bool) -> Vec<u8> {
    let mut a = ptx(80, PTX80);
    let mut b = ptx(90, PTX90);
    if named {
        // Different option lengths: member headers of different sizes.
        a = a.named("k.cu").options("-O1");
        b = b.named("kernels.cu").options("--compile-only -g --dont-merge-basicblocks");
    }
    fatbin(&[
        Item::Concat { members: vec![a, b], codec },
        Item::Concat { members: vec![elf(80, &fake_sass(100)), elf(86, &fake_sass(120))], codec },
    ])
}

#[test]
fn concatenated_entries_expose_their_members() {
    for codec in [Codec::Zstd, Codec::Lz4] {
        for named in [false, true] {
            let img = concat_fatbin(codec, named);
            let fb = Fatbin::parse(&img).unwrap_or_else(|e| panic!("{codec:?} named={named}: {e}"));
            let e = fb.entries();
            let kinds: Vec<_> = e.iter().map(|e| (e.kind(), e.arch(), e.container())).collect();
            assert_eq!(
                kinds,
                vec![
                    (EntryKind::Concat, 0, None),
                    (EntryKind::Ptx, 80, Some(0)),
                    (EntryKind::Ptx, 90, Some(0)),
                    (EntryKind::Concat, 0, None),
                    (EntryKind::Elf, 80, Some(3)),
                    (EntryKind::Elf, 86, Some(3)),
                ]
            );
            assert_eq!(e[1].member_start(), Some(0));
            assert!(e[1].stored_payload().is_none());
            assert_eq!(e[1].ptx_text().unwrap(), PTX80);
            assert_eq!(e[2].ptx_text().unwrap(), PTX90);
            assert_eq!(&e[5].data().unwrap()[..120], &fake_sass(120)[..]);
            assert_eq!(text_of(&fb, 86, Policy::Strict).unwrap(), PTX80);
            assert_eq!(text_of(&fb, 90, Policy::Strict).unwrap(), PTX90);
            assert_eq!(fb.sass_archs(), vec![80, 86]);
            if named {
                assert_eq!(e[2].identifier(), Some("kernels.cu"));
                assert_eq!(e[2].jit_options(), Some("--compile-only -g --dont-merge-basicblocks"));
                assert_ne!(e[1].header_size(), e[2].header_size());
            }
        }
    }
}

#[test]
fn concat_member_out_of_range_fails_at_parse() {
    let mut img = concat_fatbin(Codec::Zstd, false);
    let fb = Fatbin::parse(&img).unwrap();
    let member = fb.entries()[2].offset() as usize;
    // The member's start field (+4) past the container's data.
    img[member + 4..member + 8].copy_from_slice(&0x10_0000u32.to_le_bytes());
    assert!(matches!(Fatbin::parse(&img), Err(Error::MemberOutOfRange { .. })));
}

#[test]
fn concat_table_inconsistencies() {
    let img = concat_fatbin(Codec::Zstd, false);
    let fb = Fatbin::parse(&img).unwrap();
    let c = fb.entries()[0].offset() as usize;
    // Table at +0x40: count, size.
    let mut bad = img.clone();
    bad[c + 0x40..c + 0x44].copy_from_slice(&3u32.to_le_bytes());
    assert!(matches!(Fatbin::parse(&bad), Err(Error::BadConcatTable { .. })), "{:?}", Fatbin::parse(&bad));
    let mut bad = img.clone();
    bad[c + 0x44..c + 0x48].copy_from_slice(&0x4000u32.to_le_bytes());
    assert!(matches!(Fatbin::parse(&bad), Err(Error::Truncated { .. })));
    let mut bad = img.clone();
    bad[c + 0x14..c + 0x18].copy_from_slice(&0u32.to_le_bytes());
    assert!(matches!(Fatbin::parse(&bad), Err(Error::BadConcatTable { .. })));
}

/// Offset of the first entry header in writer output.
const E0: usize = 16;

#[test]
fn truncation_at_every_offset_is_an_error() {
    for img in [mixed(), concat_fatbin(Codec::Zstd, true)] {
        Fatbin::parse(&img).unwrap();
        for n in 0..img.len() {
            let cut = &img[..n];
            match Fatbin::parse(cut) {
                Err(Error::Truncated { .. }) => {}
                other => panic!("cut at {n}: expected Truncated, got {other:?}"),
            }
            let r = Image::parse(cut);
            if n >= 4 {
                assert!(matches!(r, Err(Error::Truncated { .. })), "cut at {n}: {r:?}");
            } else {
                // Shorter than a magic: classified as (bad) text or empty, never a panic.
                assert!(!matches!(r, Ok(Image::Fatbin { .. })));
            }
        }
    }
}

#[test]
fn trailing_bytes_after_the_fatbin_are_ignored() {
    let mut img = mixed();
    let len = img.len();
    img.extend_from_slice(&[0xAB; 40]);
    let fb = Fatbin::parse(&img).unwrap();
    assert_eq!(fb.size(), len);
    assert_eq!(fb.as_bytes(), &img[..len]);
    assert_eq!(fatbin_size(&img).unwrap(), len as u64);
}

#[test]
fn wrong_magics_and_versions() {
    let mut img = mixed();
    img[0] ^= 1;
    assert_eq!(Fatbin::parse(&img).unwrap_err(), Error::BadMagic { what: "fatbin", found: FATBIN_MAGIC ^ 1, expected: FATBIN_MAGIC });
    assert!(matches!(Image::parse(&img), Err(Error::UnknownFormat { .. })));

    let mut img = mixed();
    img[4] = 2;
    assert_eq!(Fatbin::parse(&img).unwrap_err(), Error::UnsupportedVersion { what: "fatbin", version: 2 });
    let mut img = mixed();
    img[6] = 8;
    assert!(matches!(Fatbin::parse(&img), Err(Error::HeaderTooSmall { size: 8, .. })));

    let mut w = writer::wrapper(1, 0x1000);
    assert_eq!(Wrapper::parse(&w).unwrap().fatbin_address, 0x1000);
    assert_eq!(Image::parse(&w).unwrap_err(), Error::UnresolvedWrapper { version: 1, fatbin_address: 0x1000 });
    w[4] = 3;
    assert_eq!(Wrapper::parse(&w).unwrap_err(), Error::UnsupportedVersion { what: "fatbin wrapper", version: 3 });
    w[0] = 0;
    assert!(matches!(Wrapper::parse(&w), Err(Error::BadMagic { what: "fatbin wrapper", .. })));
    assert_eq!(Wrapper::parse(&writer::wrapper(2, 8)).unwrap().version, 2);
    let w = writer::wrapper(1, 0x1000);
    assert!(matches!(Wrapper::parse(&w[..20]), Err(Error::Truncated { offset: 16, .. })));
}

/// Byte offsets inside the first entry header.
fn patch_u32(img: &mut [u8], at: usize, v: u32) {
    img[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn patch_u64(img: &mut [u8], at: usize, v: u64) {
    img[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn size_mismatches_are_detected() {
    for codec in [Codec::Lz4, Codec::Zstd] {
        let good = match codec {
            Codec::Lz4 => entries(vec![ptx(80, PTX80).lz4()]),
            Codec::Zstd => entries(vec![ptx(80, PTX80).zstd()]),
        };
        let usz = PTX80.len() as u64 + 1;
        for wrong in [usz - 1, usz + 1, usz * 2] {
            let mut img = good.clone();
            patch_u64(&mut img, E0 + 0x38, wrong);
            let fb = Fatbin::parse(&img).unwrap();
            let err = fb.entries()[0].ptx_text().unwrap_err();
            assert!(matches!(err, Error::SizeMismatch { .. } | Error::Decompression { .. }), "{codec:?} usz {wrong}: {err:?}");
        }
        // A compressed size beyond the payload is caught at parse time.
        let mut img = good.clone();
        let psz = u64::from_le_bytes(img[E0 + 8..E0 + 16].try_into().unwrap());
        patch_u32(&mut img, E0 + 0x10, psz as u32 + 1);
        assert!(matches!(Fatbin::parse(&img), Err(Error::CompressedTooLarge { .. })));
        // A shorter compressed size cuts the stream.
        let mut img = good.clone();
        let csz = u32::from_le_bytes(img[E0 + 0x10..E0 + 0x14].try_into().unwrap());
        patch_u32(&mut img, E0 + 0x10, csz - 3);
        let fb = Fatbin::parse(&img).unwrap();
        assert!(fb.entries()[0].data().is_err(), "{codec:?}");
    }
    // LZ4 cannot be decoded without the size.
    let mut img = entries(vec![ptx(80, PTX80).lz4()]);
    patch_u64(&mut img, E0 + 0x38, 0);
    let fb = Fatbin::parse(&img).unwrap();
    assert!(matches!(fb.entries()[0].data(), Err(Error::MissingUncompressedSize { .. })));
    // ...and a size no LZ4 block of this length can produce is refused before allocating.
    patch_u64(&mut img, E0 + 0x38, 1 << 20);
    let fb = Fatbin::parse(&img).unwrap();
    assert!(matches!(fb.entries()[0].data(), Err(Error::ImplausibleSize { .. })));
    // A decoded size beyond the limit is refused from the header alone.
    for codec in [None, Some(Codec::Lz4), Some(Codec::Zstd)] {
        let e = ptx(80, PTX80);
        let e = match codec {
            None => e,
            Some(Codec::Lz4) => e.lz4(),
            Some(Codec::Zstd) => e.zstd(),
        };
        let mut img = entries(vec![e]);
        patch_u64(&mut img, E0 + 0x38, MAX_DECOMPRESSED_SIZE + 1);
        assert!(matches!(Fatbin::parse(&img), Err(Error::ImplausibleSize { .. })), "{codec:?}");
    }
    // Zstandard without a header size uses the frame's own.
    let mut img = entries(vec![ptx(80, PTX80).zstd()]);
    patch_u64(&mut img, E0 + 0x38, 0);
    let fb = Fatbin::parse(&img).unwrap();
    assert_eq!(fb.entries()[0].ptx_text().unwrap(), PTX80);
    // Raw entries with a recorded size: exact slice; too large: mismatch.
    let mut img = entries(vec![ptx(80, PTX80)]);
    patch_u64(&mut img, E0 + 0x38, 5);
    let fb = Fatbin::parse(&img).unwrap();
    assert_eq!(fb.entries()[0].data().unwrap(), &PTX80.as_bytes()[..5]);
    // A raw payload smaller than its recorded size is refused when parsing.
    patch_u64(&mut img, E0 + 0x38, 5000);
    assert!(matches!(Fatbin::parse(&img), Err(Error::SizeMismatch { expected: 5000, .. })));
}

#[test]
fn entry_header_checks() {
    let good = mixed();
    let mut img = good.clone();
    patch_u32(&mut img, E0 + 4, 0x20);
    assert!(matches!(Fatbin::parse(&img), Err(Error::HeaderTooSmall { size: 0x20, .. })));
    let mut img = good.clone();
    patch_u64(&mut img, E0 + 8, u64::MAX - 8);
    assert!(matches!(Fatbin::parse(&img), Err(Error::Overflow { .. } | Error::Truncated { .. })));
    let mut img = good.clone();
    patch_u64(&mut img, 8, u64::MAX);
    assert!(matches!(Fatbin::parse(&img), Err(Error::Overflow { .. })));
    // Entries area ending inside an entry.
    let mut img = good.clone();
    let size = u64::from_le_bytes(img[8..16].try_into().unwrap());
    patch_u64(&mut img, 8, size - 8);
    assert!(matches!(Fatbin::parse(&img), Err(Error::Truncated { .. })));
}

#[test]
fn compression_flags() {
    // Both codecs named.
    let mut img = entries(vec![ptx(80, PTX80).zstd()]);
    let flags = u64::from_le_bytes(img[E0 + 0x28..E0 + 0x30].try_into().unwrap());
    patch_u64(&mut img, E0 + 0x28, flags | Flags::COMPRESSED_LZ4);
    assert!(matches!(Fatbin::parse(&img), Err(Error::ConflictingCompression { .. })));
    // A compressed size with no codec.
    patch_u64(&mut img, E0 + 0x28, 0x11);
    assert!(matches!(Fatbin::parse(&img), Err(Error::UnknownCompression { flags: 0x11, .. })));
    // A codec flag with compressed size 0 is raw.
    let mut img = entries(vec![ptx(80, PTX80)]);
    patch_u64(&mut img, E0 + 0x28, 0x8011);
    let fb = Fatbin::parse(&img).unwrap();
    assert_eq!(fb.entries()[0].compression(), Compression::None);
    assert_eq!(fb.entries()[0].ptx_text().unwrap(), PTX80);
}

#[test]
fn corrupt_compressed_streams_fail_cleanly() {
    for e in [ptx(80, PTX80).zstd(), ptx(80, PTX80).lz4()] {
        let good = entries(vec![e]);
        let payload = E0 + 0x50;
        let csz = u32::from_le_bytes(good[E0 + 0x10..E0 + 0x14].try_into().unwrap()) as usize;
        for i in 0..csz {
            for x in [0x01u8, 0x80, 0xff] {
                let mut img = good.clone();
                img[payload + i] ^= x;
                let fb = Fatbin::parse(&img).unwrap();
                // Either an error, or (for bits that do not matter) text.
                let _ = fb.entries()[0].ptx_text();
            }
        }
        let mut img = good.clone();
        img[payload] ^= 0xff; // zstd magic or the first LZ4 token
        let fb = Fatbin::parse(&img).unwrap();
        assert!(fb.entries()[0].ptx_text().is_err() || fb.entries()[0].compression() == Compression::Lz4);
    }
    let mut img = entries(vec![ptx(80, PTX80).zstd()]);
    img[E0 + 0x50] = 0;
    let fb = Fatbin::parse(&img).unwrap();
    assert!(matches!(fb.entries()[0].data(), Err(Error::Decompression { codec: Codec::Zstd, .. })));
}

#[test]
fn ptx_text_with_bad_utf8() {
    let mut e = ptx(80, "ok");
    e.payload = b".version 9.5\n// \xff\xfe\n\0".to_vec();
    let img = entries(vec![e]);
    let fb = Fatbin::parse(&img).unwrap();
    assert_eq!(fb.entries()[0].ptx_text().unwrap_err(), Error::PtxNotUtf8 { position: 16 });
}

#[test]
fn image_classification() {
    let fb = mixed();
    assert!(matches!(Image::parse(&fb), Ok(Image::Fatbin { wrapper: None, .. })));
    let img = Image::parse(b"\n.version 9.5\n.target sm_80\0garbage").unwrap();
    assert!(matches!(img, Image::Ptx("\n.version 9.5\n.target sm_80")));
    let p = img.ptx(86, Policy::Strict).unwrap();
    assert_eq!((p.arch, p.entry), (None, None));
    assert!(matches!(Image::parse(b".version 9.5"), Ok(Image::Ptx(".version 9.5"))));
    assert_eq!(Image::parse(b"").unwrap_err(), Error::Empty);
    assert_eq!(Image::parse(b"\0abc").unwrap_err(), Error::Empty);
    assert!(matches!(Image::parse(&[1, 2, 3, 4, 5]), Err(Error::UnknownFormat { .. })));
    assert!(matches!(Image::parse(&[0xde, 0xad, 0xbe, 0xef]), Err(Error::UnknownFormat { .. })));
    assert!(matches!(Image::parse(b"ab\xffcd"), Err(Error::PtxNotUtf8 { position: 2 })));

    let c = cubin(EM_CUDA, 86, &fake_sass(100));
    let mut padded = c.clone();
    padded.extend_from_slice(&[0u8; 64]);
    match Image::parse(&padded).unwrap() {
        Image::Cubin(cb) => {
            assert_eq!(cb.as_bytes().len(), c.len(), "trimmed to the headers' extent");
            assert_eq!(cb.arch(), Some(86));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(Image::parse(&c).unwrap().ptx(86, Policy::Any).unwrap_err(), Error::NoPtx { archs: vec![86] });
    for n in 0..c.len() {
        assert!(Image::parse(&c[..n]).is_err(), "cubin cut at {n}");
    }
    let x86 = cubin(62, 86, &fake_sass(10));
    assert!(matches!(Image::parse(&x86), Err(Error::NotCudaElf { .. })));
    let mut elf32 = c.clone();
    elf32[4] = 1;
    assert!(matches!(Image::parse(&elf32), Err(Error::NotCudaElf { .. })));
}

#[test]
fn errors_read_well() {
    let e = Error::Truncated { what: "entry payload", offset: 96, needed: 624, available: 100 };
    assert_eq!(e.to_string(), "truncated entry payload: 624 bytes needed at offset 96, 100 available");
    let e = Error::BadMagic { what: "fatbin", found: 0x1234, expected: FATBIN_MAGIC };
    assert_eq!(e.to_string(), "bad fatbin magic 0x00001234 (expected 0xba55ed50)");
    let e = Error::NoCompatiblePtx { target: 75, policy: Policy::Strict, ptx_archs: vec![80, 90] };
    assert_eq!(e.to_string(), "no PTX usable for sm_75 under Strict policy (PTX present for sm_80, sm_90)");
}
