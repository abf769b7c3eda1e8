//! `mma` on the emulated AMD GPUs: thread-mode code whose lanes read each
//! other's fragment registers (`ds_bpermute`), one function per form of
//! `mma`, compared bit for bit with the reference model of the CPU tests
//! (`kernels/tests/mma_model`), through the driver API.

#[path = "../../../kernels/tests/mma_model/mod.rs"]
mod mma_model;

use crate::api;
use crate::common::*;
use mma_model::*;
use std::ffi::c_void;

/// One variant of each shape, element type, accumulator and `.satfinite`
/// (the row/column layouts of m8n8k4 f16 too): every fragment table the
/// lane plans follow, at a size the emulator runs in a few minutes.
fn variants() -> Vec<Variant> {
    let mut seen = std::collections::HashSet::new();
    all_variants()
        .into_iter()
        .filter(|v| {
            seen.insert(format!(
                "{:?} {:?} {} {:?} {:?} {} {} {} {}",
                v.shape,
                v.a,
                v.b == v.a,
                v.c,
                v.d,
                v.satfinite,
                v.row_a,
                v.row_b,
                v.bit_and
            ))
        })
        .collect()
}

/// Forms whose emulated results differ from the hardware's because of an
/// error of the emulator its README lists: `.satfinite` ends in a
/// saturating signed add (`v_add_i32 ... clamp`), which the emulator gets
/// wrong on gfx90a (gfx1100 runs the same code right). Each must still
/// differ: when the emulator is fixed, the list goes.
fn known_emulator_error(arch: &str, v: &Variant) -> bool {
    arch == "gfx90a" && v.satfinite
}

/// Two warps a block (on wave64 one wavefront holds both): each computes
/// its own product from random fragments.
pub fn mma_products(arch: &'static str) {
    let lib = crate::hip_emulated::library(arch);
    assert!(crate::hip_emulated::device_name(lib).contains("emulated"));
    api!(lib;
        cuDevicePrimaryCtxRetain: fn(*mut Ptr, i32);
        cuCtxSetCurrent: fn(Ptr);
        cuModuleLoadData: fn(*mut Ptr, *const c_void);
        cuModuleGetFunction: fn(*mut Ptr, Ptr, *const std::ffi::c_char);
        cuMemAlloc_v2: fn(*mut u64, usize);
        cuMemFree_v2: fn(u64);
        cuLaunchKernel: fn(Ptr, u32, u32, u32, u32, u32, u32, u32, Ptr, *mut *mut c_void, *mut *mut c_void);
        cuMemcpyDtoH_v2: fn(*mut c_void, u64, usize);
        cuMemcpyHtoD_v2: fn(u64, *const c_void, usize);
        cuCtxSynchronize: fn();
    );
    let variants = variants();
    let src = format!("{}\0", mma_module(&variants));
    let null = std::ptr::null_mut::<c_void>();
    let (mut ctx, mut module) = (null, null);
    let mut rng = Rng(0x51ab_1e5e_ed00_0001);
    let (mut failures, mut still_known) = (Vec::new(), 0);
    // SAFETY: driver calls with valid out-pointers and buffers of the sizes
    // given; the kernel's parameters are two device addresses.
    unsafe {
        assert_eq!(cuDevicePrimaryCtxRetain(&mut ctx, 0), SUCCESS);
        assert_eq!(cuCtxSetCurrent(ctx), SUCCESS);
        assert_eq!(cuModuleLoadData(&mut module, src.as_ptr().cast()), SUCCESS);
        for (idx, v) in variants.iter().enumerate() {
            let mut f = null;
            let name = std::ffi::CString::new(format!("v{idx}")).expect("name");
            assert_eq!(cuModuleGetFunction(&mut f, module, name.as_ptr()), SUCCESS);
            let warps = 2;
            let nd = v.d_regs();
            let (input, regs) = random_fragments(&mut rng, v, warps);
            let out_len = warps * 32 * nd as usize;
            let (mut din, mut dout) = (0u64, 0u64);
            assert_eq!(cuMemAlloc_v2(&mut din, input.len() * 8), SUCCESS);
            assert_eq!(cuMemAlloc_v2(&mut dout, out_len * 8), SUCCESS);
            assert_eq!(cuMemcpyHtoD_v2(din, input.as_ptr().cast(), input.len() * 8), SUCCESS);
            let mut args = [(&mut din as *mut u64).cast::<c_void>(), (&mut dout as *mut u64).cast::<c_void>()];
            let e = cuLaunchKernel(f, 1, 1, 1, warps as u32 * 32, 1, 1, 0, null, args.as_mut_ptr(), std::ptr::null_mut());
            assert_eq!(e, SUCCESS, "{}: launch", v.text());
            assert_eq!(cuCtxSynchronize(), SUCCESS, "{}", v.text());
            let mut out = vec![0u64; out_len];
            assert_eq!(cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), dout, out_len * 8), SUCCESS);
            assert_eq!(cuMemFree_v2(din), SUCCESS);
            assert_eq!(cuMemFree_v2(dout), SUCCESS);
            let mask = if v.d.reg_bits() == 64 { u64::MAX } else { 0xffff_ffff };
            let known = known_emulator_error(arch, v);
            let mut differs = false;
            'check: for (w, [a, b, c]) in regs.iter().enumerate() {
                let want = reference(v, a, b, c);
                for lane in 0..32 {
                    for j in 0..nd as usize {
                        let got = out[(w * 32 + lane) * nd as usize + j] & mask;
                        if got != want[lane][j] {
                            differs = true;
                            if known {
                                break 'check;
                            }
                            failures.push(format!("{}: warp {w} lane {lane} d{j}: {got:#x}, want {:#x}", v.text(), want[lane][j]));
                            break 'check;
                        }
                    }
                }
            }
            if known {
                assert!(differs, "{arch}: {} is a known emulator error but matches the model now", v.text());
                still_known += 1;
            }
        }
    }
    assert!(variants.len() - still_known >= 50, "{arch}: only {} forms compared", variants.len() - still_known);
    assert!(
        failures.is_empty(),
        "{arch}: {} of {} mma forms differ from the model:\n{}",
        failures.len(),
        variants.len(),
        failures.join("\n")
    );
}
