//! Device printf against glibc's snprintf.

mod common;

use std::ffi::{c_char, CString};

use backend_cpu::exec::runtime::__anycuda_vprintf;
use backend_cpu::{BlockCtx, LaunchOptions};
use common::*;
use compiler::printf::format_packed;

#[derive(Clone, Copy, Debug)]
enum Arg {
    I32(i32),
    I64(i64),
    F64(f64),
    Ptr(*const c_char),
}

/// CUDA's packed layout: each argument aligned to its own size.
fn pack(args: &[Arg]) -> Vec<u8> {
    let mut buf = Vec::new();
    for arg in args {
        let (bytes, size): (Vec<u8>, usize) = match *arg {
            Arg::I32(v) => (v.to_le_bytes().to_vec(), 4),
            Arg::I64(v) => (v.to_le_bytes().to_vec(), 8),
            Arg::F64(v) => (v.to_le_bytes().to_vec(), 8),
            Arg::Ptr(p) => ((p as u64).to_le_bytes().to_vec(), 8),
        };
        while buf.len() % size != 0 {
            buf.push(0xee);
        }
        buf.extend_from_slice(&bytes);
    }
    buf
}

fn glibc(format: &str, args: &[Arg]) -> String {
    let format = CString::new(format).unwrap();
    let f = format.as_ptr();
    let mut buf = vec![0u8; 8192];
    let b = buf.as_mut_ptr().cast::<c_char>();
    let len = buf.len();
    macro_rules! one {
        ($($pre:expr),*; $a:expr) => {
            match $a {
                Arg::I32(v) => libc::snprintf(b, len, f, $($pre,)* v),
                Arg::I64(v) => libc::snprintf(b, len, f, $($pre,)* v),
                Arg::F64(v) => libc::snprintf(b, len, f, $($pre,)* v),
                Arg::Ptr(v) => libc::snprintf(b, len, f, $($pre,)* v),
            }
        };
    }
    let n = unsafe {
        match *args {
            [] => libc::snprintf(b, len, f),
            [a] => one!(; a),
            [Arg::I32(w), a] => one!(w; a),
            [Arg::I32(w), Arg::I32(p), a] => one!(w, p; a),
            _ => panic!("unsupported argument list {args:?}"),
        }
    };
    assert!(n >= 0 && (n as usize) < len);
    String::from_utf8_lossy(&buf[..n as usize]).into_owned()
}

fn ours(format: &str, args: &[Arg]) -> (String, i32) {
    let packed = pack(args);
    let (text, count) = unsafe { format_packed(format.as_bytes(), packed.as_ptr(), Some(packed.len())) };
    (String::from_utf8_lossy(&text).into_owned(), count)
}

fn check(format: &str, args: &[Arg]) {
    let (text, count) = ours(format, args);
    assert_eq!(text, glibc(format, args), "format {format:?} args {args:?}");
    assert_eq!(count as usize, args.len(), "argument count for {format:?}");
}

#[test]
fn integers() {
    let formats = [
        "%d", "%i", "%5d", "%-5d|", "%05d", "%+d", "% d", "%.3d", "%.0d", "%8.3d", "%-+8.3d|", "%08.3d", "%x", "%#x", "%#X", "%X", "%#o",
        "%o", "%#.0o", "%.0x", "%u", "%hhd", "%hd", "%hhu", "%hu", "%hhx", "%c", "%5c", "%-3c|", "[%+05d]", "[% 05d]", "%#10x", "%-#10x|",
        "%#010x",
    ];
    let values = [0, 1, -1, 7, 42, -42, 255, 300, 65535, 70000, -70000, i32::MIN, i32::MAX, 0x41];
    for format in formats {
        for value in values {
            check(format, &[Arg::I32(value)]);
        }
    }
    let long_formats = ["%ld", "%lld", "%lu", "%llx", "%#lo", "%zd", "%zu", "%20ld", "%-20lld|", "%.25ld", "%+ld", "%#lX"];
    let long_values = [0i64, 1, -1, 1 << 40, -(1 << 40), i64::MIN, i64::MAX];
    for format in long_formats {
        for value in long_values {
            check(format, &[Arg::I64(value)]);
        }
    }
    check("100%%", &[]);
    check("%5%|", &[]);
    check("plain text", &[]);
}

#[test]
fn floating_point() {
    let formats = [
        "%f", "%F", "%.0f", "%.1f", "%.2f", "%.10f", "%10.3f", "%-10.3f|", "%+f", "% f", "%010.2f", "%#.0f", "%.30f", "%e", "%E", "%.0e",
        "%#.0e", "%.3e", "%12.4e", "%-12.4e|", "%+.2e", "%g", "%G", "%.0g", "%.1g", "%.2g", "%.10g", "%.17g", "%#g", "%#.3g", "%10g",
        "%-10g|", "%010g", "%a", "%A", "%.0a", "%.1a", "%.2a", "%.3a", "%.13a", "%.20a", "%#a", "%#.0a", "%20a", "%020a", "%-20a|", "%+a",
        "% a", "%08.3f", "%+010.3e",
    ];
    let values = [
        0.0,
        -0.0,
        1.0,
        -1.5,
        0.5,
        1.5,
        2.5,
        3.5,
        0.125,
        0.25,
        0.375,
        2.675,
        0.05,
        0.1,
        1.0 / 3.0,
        2.0 / 3.0,
        123.456,
        -123.456,
        1e-5,
        1e-4,
        9.9999999,
        999999.5,
        999999.7,
        99999.97,
        999.5,
        999.7,
        9.5,
        9.97,
        0.99999995,
        0.00009999995,
        9999995.0,
        123456.0,
        1234567.0,
        1.5e-7,
        1e-300,
        1e300,
        1e22,
        1e23,
        f64::MAX,
        f64::MIN_POSITIVE,
        5e-324,
        2.225_073_858_507_201e-308,
        1.0625,
        1.03125,
        1.09375,
        0.9999999999999999,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
    ];
    for format in formats {
        for value in values {
            check(format, &[Arg::F64(value)]);
        }
    }
}

#[test]
fn strings_pointers_and_stars() {
    let hello = c"hello, world";
    let empty = c"";
    for format in ["%s", "%20s", "%-20s|", "%.2s", "%20.2s", "%.0s", "[%5s]"] {
        for text in [hello, empty] {
            check(format, &[Arg::Ptr(text.as_ptr())]);
        }
        check(format, &[Arg::Ptr(std::ptr::null())]);
    }
    for format in ["%p", "%20p", "%-20p|"] {
        check(format, &[Arg::Ptr(0x7f12_3456_789a as *const c_char)]);
        check(format, &[Arg::Ptr(std::ptr::null())]);
    }
    check("%*d|", &[Arg::I32(8), Arg::I32(42)]);
    check("%-*d|", &[Arg::I32(8), Arg::I32(42)]);
    check("%*d|", &[Arg::I32(-6), Arg::I32(42)]);
    check("%.*f", &[Arg::I32(3), Arg::F64(1.234_567_8)]);
    check("%.*f", &[Arg::I32(-1), Arg::F64(1.234_567_8)]);
    check("%*.*e|", &[Arg::I32(15), Arg::I32(2), Arg::F64(-31415.9)]);
    check("%*.*s|", &[Arg::I32(7), Arg::I32(3), Arg::Ptr(hello.as_ptr())]);
    // A precision lets %s read a buffer without a terminator.
    let unterminated = [b'a', b'b', b'c'];
    let (text, _) = ours("%.3s", &[Arg::Ptr(unterminated.as_ptr().cast())]);
    assert_eq!(text, "abc");
}

#[test]
fn mixed_arguments_are_unpacked_with_their_alignment() {
    let name = c"cuda";
    let args = [Arg::I32(-7), Arg::F64(2.5), Arg::I32(9), Arg::I64(-1 << 40), Arg::I32(b'Z' as i32), Arg::Ptr(name.as_ptr()), Arg::I32(3)];
    let packed = pack(&args);
    // int at 0, double at 8, int at 16, long at 24, char at 32, ptr at 40, int at 48.
    assert_eq!(packed.len(), 52);
    let format = "a=%d b=%.2f c=%u d=%ld e=%c f=%s g=%x\n";
    let want = unsafe {
        let mut buf = vec![0u8; 256];
        let n = libc::snprintf(
            buf.as_mut_ptr().cast(),
            buf.len(),
            CString::new(format).unwrap().as_ptr(),
            -7i32,
            2.5f64,
            9u32,
            -1i64 << 40,
            b'Z' as i32,
            name.as_ptr(),
            3u32,
        );
        String::from_utf8(buf[..n as usize].to_vec()).unwrap()
    };
    let (text, count) = ours(format, &args);
    assert_eq!(text, want);
    assert_eq!(count, 7);
}

unsafe extern "C" fn printf_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let t = linear(ctx(c), x, y, z);
        #[repr(C)]
        struct Args {
            name: *const c_char,
            thread: u32,
            value: f64,
        }
        let args = Args { name: c"dev".as_ptr(), thread: t, value: f64::from(t) / 4.0 };
        let r = __anycuda_vprintf(c, t, c"[%s] thread %2u value %.2f\n".as_ptr(), (&args as *const Args).cast(), std::ptr::null());
        *(arg(p, 0) as *mut i32).add((block_linear(ctx(c)) * 32 + t) as usize) = r;
    }
}

#[test]
fn kernels_print_whole_lines_and_get_the_argument_count() {
    let (exec, capture) = executor();
    let mut results = vec![0i32; 64];
    let p = params(&[addr(&mut results)]);
    unsafe { exec.launch(&scheduled(printf_kernel), [2, 1, 1], [32, 1, 1], 0, &p, &LaunchOptions::default()) }.unwrap();
    assert!(results.iter().all(|&r| r == 3));
    let out = capture.stdout();
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort();
    let mut want: Vec<String> = (0..64).map(|t| format!("[dev] thread {:2} value {:.2}", t % 32, f64::from(t % 32) / 4.0)).collect();
    want.sort();
    assert_eq!(lines, want);
    let null = unsafe { __anycuda_vprintf(std::ptr::null_mut(), 0, std::ptr::null(), std::ptr::null(), std::ptr::null()) };
    assert_eq!(null, -1);
}
