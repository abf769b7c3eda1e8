//! Warp-mode 8- and 16-bit loads from lane addresses of no shape (data-
//! dependent offsets), which no x86 processor gathers in one instruction:
//! every offset within a word, lanes that do not execute the load, and
//! elements at the very end of a mapped page with nothing mapped after it
//! (no byte past the element is read); both tiers, and thread mode for
//! reference. (Gathering the 32-bit words that hold the elements instead
//! was exact but slower: llama.cpp's q8_0 matrix-vector product 22.5-25.3
//! -> 31.5-35.8 ms, docs/PERFORMANCE.md.)

use backend_cpu::Executor;
use compiler::{Options, Tier, WarpMode};
use kernels::{as_bytes, launch, Arg, Program};

/// Thread `t` reads byte offset `off[t]` of `src`: the byte there and the
/// 16-bit value there (little-endian), unless `t % 5 == 4`, which skips
/// both loads; writes `byte | half << 8` (or `0xdead` when skipped).
const KERNEL: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry narrow(.param .u64 src, .param .u64 off, .param .u64 out)
{
.reg .pred %p<2>;
.reg .b16 %h<3>;
.reg .b32 %r<12>;
.reg .b64 %rd<10>;
ld.param.u64 %rd1, [src];
ld.param.u64 %rd2, [off];
ld.param.u64 %rd3, [out];
mov.u32 %r1, %ctaid.x;
mov.u32 %r2, %ntid.x;
mov.u32 %r3, %tid.x;
mad.lo.u32 %r4, %r1, %r2, %r3;
mul.wide.u32 %rd4, %r4, 4;
add.u64 %rd5, %rd2, %rd4;
add.u64 %rd6, %rd3, %rd4;
mov.u32 %r10, 57005;
rem.u32 %r5, %r4, 5;
setp.eq.u32 %p1, %r5, 4;
@%p1 bra DONE;
ld.global.u32 %r6, [%rd5];
cvt.u64.u32 %rd7, %r6;
add.u64 %rd8, %rd1, %rd7;
ld.global.u8 %h1, [%rd8];
ld.global.u16 %h2, [%rd8];
cvt.u32.u16 %r7, %h1;
cvt.u32.u16 %r8, %h2;
shl.b32 %r9, %r8, 8;
or.b32 %r10, %r7, %r9;
DONE:
st.global.u32 [%rd6], %r10;
ret;
}
"#;

fn expected(src: &[u8], off: &[u32]) -> Vec<u32> {
    off.iter()
        .enumerate()
        .map(|(t, &o)| {
            if t % 5 == 4 {
                return 0xdead;
            }
            let o = o as usize;
            u32::from(src[o]) | u32::from(u16::from_le_bytes([src[o], src[o + 1]])) << 8
        })
        .collect()
}

fn run(src_addr: u64, off: &[u32], warp: WarpMode, tier: Tier) -> Vec<u32> {
    let p = Program::from_source_with(KERNEL, &Options { warp, tier, strict_affine: false, memcheck: false })
        .unwrap_or_else(|e| panic!("compiles ({warp:?}, {tier:?}): {e}"));
    let k = p.kernel("narrow").expect("kernel `narrow`");
    let mut offs = off.to_vec();
    let mut out = vec![0u32; off.len()];
    launch(
        Executor::global(),
        k,
        [(off.len() / 64) as u32, 1, 1],
        [64, 1, 1],
        0,
        &mut [Arg::U64(src_addr), Arg::Buf(as_bytes(&mut offs)), Arg::Buf(as_bytes(&mut out))],
    )
    .expect("arguments")
    .expect("launch");
    out
}

#[test]
fn narrow_loads_from_shapeless_lane_addresses_are_exact_at_every_offset() {
    let src: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    // Scattered offsets, every offset within a word in every warp.
    let off: Vec<u32> = (0..1024u32).map(|t| (t.wrapping_mul(2_246_822_519) >> 8) % 4000 / 4 * 4 + t % 4).collect();
    let want = expected(&src, &off);
    for warp in [WarpMode::Always, WarpMode::Off] {
        for tier in [Tier::Fast, Tier::Optimized] {
            let got = run(src.as_ptr() as u64, &off, warp, tier);
            for (t, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g, w, "thread {t}, offset {} ({warp:?}, {tier:?})", off[t]);
            }
        }
    }
}

#[test]
fn narrow_loads_at_the_end_of_a_mapping_do_not_fault() {
    const PAGE: usize = 4096;
    // SAFETY: a fresh anonymous mapping of two pages, the second made
    // inaccessible; unmapped at the end.
    let base = unsafe {
        libc::mmap(std::ptr::null_mut(), 2 * PAGE, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
    };
    assert_ne!(base, libc::MAP_FAILED);
    // SAFETY: the mapping's second page.
    assert_eq!(unsafe { libc::mprotect((base as *mut u8).add(PAGE).cast(), PAGE, libc::PROT_NONE) }, 0);
    // SAFETY: the first page is readable and writable.
    let page = unsafe { std::slice::from_raw_parts_mut(base as *mut u8, PAGE) };
    for (i, b) in page.iter_mut().enumerate() {
        *b = (i * 7 + 3) as u8;
    }
    // The last 16-bit element of the page (bytes 4094 and 4095), and the
    // ones just before it: every lane reads near the end.
    let off: Vec<u32> = (0..128u32).map(|t| 4094 - 2 * (t % 3)).collect();
    let want = expected(page, &off);
    for tier in [Tier::Fast, Tier::Optimized] {
        let got = run(base as u64, &off, WarpMode::Always, tier);
        assert_eq!(got, want, "{tier:?}");
    }
    // SAFETY: the mapping made above, no longer used.
    unsafe { libc::munmap(base, 2 * PAGE) };
}
