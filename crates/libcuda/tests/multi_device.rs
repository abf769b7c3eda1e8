//! Several CPU devices (`ANYCUDA_CPU_DEVICES=2`): each is a device of its
//! own (UUID, PCI bus, contexts, allocations), and any two are peers: they
//! report peer access, enabling it is recorded per context as CUDA's
//! driver does, and a kernel on one device reads the other's memory.

mod common;
use common::*;
use std::ffi::{c_char, c_void, CString};
use std::ptr::null_mut;

const PEER_ACCESS_UNSUPPORTED: u32 = 217;
const PEER_ACCESS_ALREADY_ENABLED: u32 = 704;
const PEER_ACCESS_NOT_ENABLED: u32 = 705;
const DEVICE_ORDINAL: u32 = 9;

// out[i] = in[i] + 1 for i < n.
const PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry inc(.param .u64 in, .param .u64 out, .param .u32 n)
{
    .reg .pred %p;
    .reg .b32 %r<6>;
    .reg .b64 %rd<6>;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    ld.param.u32 %r5, [n];
    setp.ge.u32 %p, %r4, %r5;
    @%p bra DONE;
    ld.param.u64 %rd1, [in];
    ld.param.u64 %rd2, [out];
    mul.wide.u32 %rd3, %r4, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    ld.global.u32 %r1, [%rd4];
    add.u32 %r1, %r1, 1;
    st.global.u32 [%rd5], %r1;
DONE:
    ret;
}
"#;

#[test]
fn two_cpu_devices_are_peers() {
    std::env::set_var("ANYCUDA_CPU_DEVICES", "2");
    let l = Lib::open_cpu();
    api!(l;
        cuInit: fn(u32); cuDeviceGetCount: fn(*mut i32); cuDeviceGetUuid_v2: fn(*mut [u8; 16], i32);
        cuDeviceGetPCIBusId: fn(*mut c_char, i32, i32);
        cuDeviceCanAccessPeer: fn(*mut i32, i32, i32); cuDeviceGetP2PAttribute: fn(*mut i32, u32, i32, i32);
        cuDevicePrimaryCtxRetain: fn(*mut Ptr, i32); cuCtxSetCurrent: fn(Ptr);
        cuCtxEnablePeerAccess: fn(Ptr, u32); cuCtxDisablePeerAccess: fn(Ptr);
        cuMemAlloc_v2: fn(*mut u64, usize); cuMemcpyHtoD_v2: fn(u64, *const c_void, usize);
        cuMemcpyDtoH_v2: fn(*mut c_void, u64, usize); cuMemcpyPeer: fn(u64, Ptr, u64, Ptr, usize);
        cuPointerGetAttribute: fn(*mut c_void, u32, u64);
        cuModuleLoadData: fn(*mut Ptr, *const c_void); cuModuleGetFunction: fn(*mut Ptr, Ptr, *const c_char);
        cuLaunchKernel: fn(Ptr, u32, u32, u32, u32, u32, u32, u32, Ptr, *mut *mut c_void, *mut *mut c_void);
        cuCtxSynchronize: fn();
    );
    unsafe {
        assert_eq!(cuInit(0), SUCCESS);
        let mut n = 0;
        assert_eq!(cuDeviceGetCount(&mut n), SUCCESS);
        assert_eq!(n, 2);
        let (mut u0, mut u1) = ([0u8; 16], [0u8; 16]);
        assert_eq!(cuDeviceGetUuid_v2(&mut u0, 0), SUCCESS);
        assert_eq!(cuDeviceGetUuid_v2(&mut u1, 1), SUCCESS);
        assert_ne!(u0, u1);
        let (mut b0, mut b1) = ([0 as c_char; 32], [0 as c_char; 32]);
        assert_eq!(cuDeviceGetPCIBusId(b0.as_mut_ptr(), 32, 0), SUCCESS);
        assert_eq!(cuDeviceGetPCIBusId(b1.as_mut_ptr(), 32, 1), SUCCESS);
        assert_ne!(b0, b1);

        // Peers, never of themselves.
        let mut can = -1;
        assert_eq!(cuDeviceCanAccessPeer(&mut can, 0, 1), SUCCESS);
        assert_eq!(can, 1);
        assert_eq!(cuDeviceCanAccessPeer(&mut can, 1, 1), SUCCESS);
        assert_eq!(can, 0);
        assert_eq!(cuDeviceCanAccessPeer(&mut can, 0, 2), INVALID_DEVICE);
        for (attr, want) in [(1, 0), (2, 1), (3, 1), (4, 1), (5, 0)] {
            let mut v = -1;
            assert_eq!(cuDeviceGetP2PAttribute(&mut v, attr, 1, 0), SUCCESS, "attribute {attr}");
            assert_eq!(v, want, "attribute {attr}");
        }
        let mut v = -1;
        assert_eq!(cuDeviceGetP2PAttribute(&mut v, 2, 0, 0), INVALID_DEVICE);
        assert_eq!(cuDeviceGetP2PAttribute(&mut v, 9, 0, 1), INVALID_VALUE);

        let (mut c0, mut c1) = (null_mut(), null_mut());
        assert_eq!(cuDevicePrimaryCtxRetain(&mut c0, 0), SUCCESS);
        assert_eq!(cuDevicePrimaryCtxRetain(&mut c1, 1), SUCCESS);
        assert_ne!(c0, c1);

        // Memory of device 1, written there.
        assert_eq!(cuCtxSetCurrent(c1), SUCCESS);
        let count = 1000usize;
        let mut on1 = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut on1, count * 4), SUCCESS);
        let data: Vec<u32> = (0..count as u32).map(|i| i * 3).collect();
        assert_eq!(cuMemcpyHtoD_v2(on1, data.as_ptr().cast(), count * 4), SUCCESS);
        let mut ordinal = -1i32;
        assert_eq!(cuPointerGetAttribute((&mut ordinal as *mut i32).cast(), DEVICE_ORDINAL, on1), SUCCESS);
        assert_eq!(ordinal, 1);

        // Enabling from device 0's context, once; disabling, once.
        assert_eq!(cuCtxSetCurrent(c0), SUCCESS);
        assert_eq!(cuCtxEnablePeerAccess(c0, 0), PEER_ACCESS_UNSUPPORTED, "a device is not its own peer");
        assert_eq!(cuCtxEnablePeerAccess(c1, 1), INVALID_VALUE);
        assert_eq!(cuCtxDisablePeerAccess(c1), PEER_ACCESS_NOT_ENABLED);
        assert_eq!(cuCtxEnablePeerAccess(c1, 0), SUCCESS);
        assert_eq!(cuCtxEnablePeerAccess(c1, 0), PEER_ACCESS_ALREADY_ENABLED);
        assert_eq!(cuCtxDisablePeerAccess(c1), SUCCESS);
        assert_eq!(cuCtxDisablePeerAccess(c1), PEER_ACCESS_NOT_ENABLED);
        assert_eq!(cuCtxEnablePeerAccess(c1, 0), SUCCESS);

        // Device 0's kernel reads device 1's memory.
        let mut on0 = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut on0, count * 4), SUCCESS);
        assert_eq!(cuPointerGetAttribute((&mut ordinal as *mut i32).cast(), DEVICE_ORDINAL, on0), SUCCESS);
        assert_eq!(ordinal, 0);
        let ptx = CString::new(PTX).expect("ptx");
        let (mut m, mut f) = (null_mut(), null_mut());
        assert_eq!(cuModuleLoadData(&mut m, ptx.as_ptr().cast()), SUCCESS);
        assert_eq!(cuModuleGetFunction(&mut f, m, c"inc".as_ptr()), SUCCESS);
        let (mut a, mut b, mut nn) = (on1, on0, count as u32);
        let mut params = [(&mut a as *mut u64).cast::<c_void>(), (&mut b as *mut u64).cast(), (&mut nn as *mut u32).cast()];
        assert_eq!(cuLaunchKernel(f, 8, 1, 1, 128, 1, 1, 0, null_mut(), params.as_mut_ptr(), null_mut()), SUCCESS);
        assert_eq!(cuCtxSynchronize(), SUCCESS);
        let mut got = vec![0u32; count];
        assert_eq!(cuMemcpyDtoH_v2(got.as_mut_ptr().cast(), on0, count * 4), SUCCESS);
        assert!(got.iter().enumerate().all(|(i, &v)| v == 3 * i as u32 + 1), "{:?}", &got[..8]);

        // And a peer copy back to device 1.
        assert_eq!(cuMemcpyPeer(on1, c1, on0, c0, count * 4), SUCCESS);
        let mut back = vec![0u32; count];
        assert_eq!(cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), on1, count * 4), SUCCESS);
        assert_eq!(back, got);
    }
}
