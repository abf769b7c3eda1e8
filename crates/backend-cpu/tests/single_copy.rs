//! Vector accesses that other threads observe are single-copy: a block
//! publishing `{status, value}` with one `st.relaxed.gpu.v2.u32` (as the
//! decoupled look-back scans of CUB and Thrust publish a tile's state) is
//! never seen by another block with the new status and the old value. The
//! writer and the reader are two blocks, which the CPU backend runs on two
//! OS threads; a reader that could see a torn vector counts mismatches.

use std::sync::Arc;

use backend_cpu::CpuBackend;
use driver::backend::{Backend, LaunchParams, ModuleOptions};

const PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64

// Block 0 publishes (i, ~i) with one v2 store, (i, ~i, 3i, i ^ 0x5555)
// with one v4 store and (i, ~i) as 64-bit words with one `.cg` v2 store (as
// CUB before `.relaxed` published 16-byte tile states), for i = 1 ..
// count; block 1 reads them until it sees count, and stores how many reads
// had components of different i.
.visible .entry publish(.param .u64 pair, .param .u64 quad, .param .u64 wide, .param .u64 torn, .param .u32 count)
{
    .reg .pred %p<8>;
    .reg .b32 %r<24>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [pair];
    ld.param.u64 %rd2, [quad];
    ld.param.u64 %rd3, [torn];
    ld.param.u64 %rd4, [wide];
    ld.param.u32 %r1, [count];
    mov.u32 %r2, %ctaid.x;
    setp.ne.u32 %p1, %r2, 0;
    @%p1 bra READ;
    mov.u32 %r3, 1;
WRITE:
    not.b32 %r4, %r3;
    mul.lo.u32 %r5, %r3, 3;
    xor.b32 %r6, %r3, 0x5555;
    st.relaxed.gpu.global.v2.u32 [%rd1], {%r3, %r4};
    st.release.gpu.global.v4.u32 [%rd2], {%r3, %r4, %r5, %r6};
    cvt.u64.u32 %rd5, %r3;
    not.b64 %rd6, %rd5;
    st.global.cg.v2.u64 [%rd4], {%rd5, %rd6};
    add.u32 %r3, %r3, 1;
    setp.le.u32 %p2, %r3, %r1;
    @%p2 bra WRITE;
    ret;
READ:
    mov.u32 %r10, 0;
LOOP:
    ld.relaxed.gpu.global.v2.u32 {%r7, %r8}, [%rd1];
    not.b32 %r9, %r7;
    setp.ne.u32 %p2, %r8, %r9;
    selp.u32 %r11, 1, 0, %p2;
    add.u32 %r10, %r10, %r11;
    ld.acquire.gpu.global.v4.u32 {%r12, %r13, %r14, %r15}, [%rd2];
    not.b32 %r16, %r12;
    mul.lo.u32 %r17, %r12, 3;
    xor.b32 %r18, %r12, 0x5555;
    setp.ne.u32 %p3, %r13, %r16;
    setp.ne.u32 %p4, %r14, %r17;
    setp.ne.u32 %p5, %r15, %r18;
    or.pred %p3, %p3, %p4;
    or.pred %p3, %p3, %p5;
    selp.u32 %r19, 1, 0, %p3;
    add.u32 %r10, %r10, %r19;
    ld.global.cg.v2.u64 {%rd7, %rd8}, [%rd4];
    not.b64 %rd9, %rd7;
    setp.ne.u64 %p7, %rd8, %rd9;
    selp.u32 %r20, 1, 0, %p7;
    add.u32 %r10, %r10, %r20;
    setp.lt.u32 %p6, %r7, %r1;
    @%p6 bra LOOP;
    st.global.u32 [%rd3], %r10;
    ret;
}
"#;

fn torn_reads(warp: compiler::WarpMode, memcheck: bool, count: u32) -> u32 {
    let mut config = jit::JitConfig::uncached(compiler::Tier::Fast);
    config.options.warp = warp;
    config.options.memcheck = memcheck;
    let backend = Arc::new(CpuBackend::with_jit(config));
    let module = backend.load_module(0, PTX, &ModuleOptions { target: 70, ..Default::default() }).expect("the module loads");
    let alloc = |bytes| backend.alloc(0, bytes).expect("alloc");
    let (pair, quad, wide, torn) = (alloc(8), alloc(16), alloc(16), alloc(4));
    // The state before the first store is consistent too: i = 0.
    let words = |w: &[u32]| w.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
    backend.copy_htod(pair, &words(&[0, !0])).expect("copy");
    backend.copy_htod(quad, &words(&[0, !0, 0, 0x5555])).expect("copy");
    backend.copy_htod(wide, &words(&[0, 0, !0, !0])).expect("copy");
    backend.copy_htod(torn, &words(&[u32::MAX])).expect("copy");
    let mut params: Vec<u8> = [pair, quad, wide, torn].iter().flat_map(|a| a.to_le_bytes()).collect();
    params.extend(count.to_le_bytes());
    let launch = LaunchParams {
        grid: [2, 1, 1],
        block: [1, 1, 1],
        dynamic_shared_bytes: 0,
        params: &params,
        cooperative: false,
        pending_launch_limit: 2048,
        heap_limit: 8 << 20,
        printf_fifo_size: 1 << 20,
    };
    module.launch(0, &launch).expect("the launch succeeds");
    let mut out = [0u8; 4];
    backend.copy_dtoh(&mut out, torn).expect("copy");
    u32::from_le_bytes(out)
}

#[test]
fn observed_vector_accesses_are_never_torn() {
    for warp in [compiler::WarpMode::Off, compiler::WarpMode::Always] {
        for memcheck in [false, true] {
            assert_eq!(torn_reads(warp, memcheck, 300_000), 0, "warp mode {warp:?}, memcheck {memcheck}");
        }
    }
}
