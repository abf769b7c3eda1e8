//! Checked mode (`Options::memcheck`): kernels that make each kind of bad
//! access fail with the CUDA error NVIDIA's driver gives and a report that
//! names the access; correct kernels run as before.

use std::sync::Arc;

use backend_cpu::CpuBackend;
use driver::backend::{Backend, BackendModule, LaunchFault, LaunchParams, ModuleOptions};

const PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.file 1 "kernels.cu"

// out[i] = in[i] for i < count (the bug: count may exceed the buffers).
.visible .entry copy(.param .u64 in, .param .u64 out, .param .u64 count)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<2>;
    .reg .b64 %rd<10>;
    ld.param.u64 %rd1, [in];
    ld.param.u64 %rd2, [out];
    ld.param.u64 %rd3, [count];
    cvta.to.global.u64 %rd4, %rd1;
    cvta.to.global.u64 %rd5, %rd2;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    cvt.u64.u32 %rd6, %r4;
    setp.ge.u64 %p1, %rd6, %rd3;
    @%p1 bra DONE;
    shl.b64 %rd7, %rd6, 2;
    add.s64 %rd8, %rd4, %rd7;
    .loc 1 12 5
    ld.global.f32 %f1, [%rd8];
    add.s64 %rd9, %rd5, %rd7;
    .loc 1 13 5
    st.global.f32 [%rd9], %f1;
DONE:
    ret;
}

// Thread 0 stores 7 at p + offset, through a generic address.
.visible .entry store_at(.param .u64 p, .param .u64 offset)
{
    .reg .pred %p<2>;
    .reg .b32 %r<3>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra DONE;
    ld.param.u64 %rd1, [p];
    ld.param.u64 %rd2, [offset];
    add.s64 %rd3, %rd1, %rd2;
    mov.u32 %r2, 7;
    st.u32 [%rd3], %r2;
DONE:
    ret;
}

// Every thread reads a 16-byte vector at p + 16 * tid and adds it into
// total with an atomic.
.visible .entry vec_sum(.param .u64 p, .param .u64 total)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [p];
    ld.param.u64 %rd2, [total];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 16;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.v4.u32 {%r2, %r3, %r4, %r5}, [%rd4];
    add.u32 %r6, %r2, %r3;
    add.u32 %r6, %r6, %r4;
    add.u32 %r6, %r6, %r5;
    atom.global.add.u32 %r7, [%rd2], %r6;
    ret;
}

// Thread t writes tile[t] (64 bytes of static shared memory), then after a
// barrier thread 0 sums the tile into out.
.visible .entry shared_tile(.param .u64 out)
{
    .shared .align 4 .b8 tile[64];
    .reg .pred %p<3>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<3>;
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, tile;
    add.u32 %r4, %r3, %r2;
    st.shared.u32 [%r4], %r1;
    bar.sync 0;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra DONE;
    mov.u32 %r5, 0;
    mov.u32 %r6, 0;
LOOP:
    add.u32 %r7, %r3, %r6;
    ld.shared.u32 %r8, [%r7];
    add.u32 %r5, %r5, %r8;
    add.u32 %r6, %r6, 4;
    setp.lt.u32 %p2, %r6, 64;
    @%p2 bra LOOP;
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1], %r5;
DONE:
    ret;
}

// Thread t writes dyn[t] through a generic address into dynamic shared
// memory, and a local array through a generic address.
.extern .shared .align 4 .b8 dyn[];
.visible .entry dynamic_tile(.param .u64 out)
{
    .local .align 4 .b8 scratch[16];
    .reg .b32 %r<6>;
    .reg .b64 %rd<8>;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd1, %r1, 4;
    mov.u64 %rd2, dyn;
    cvta.shared.u64 %rd3, %rd2;
    add.s64 %rd4, %rd3, %rd1;
    st.u32 [%rd4], %r1;
    mov.u64 %rd5, scratch;
    cvta.local.u64 %rd6, %rd5;
    st.u32 [%rd6+12], %r1;
    ld.u32 %r2, [%rd6+12];
    ld.u32 %r3, [%rd4];
    add.u32 %r4, %r2, %r3;
    ld.param.u64 %rd7, [out];
    mul.wide.u32 %rd1, %r1, 4;
    add.s64 %rd7, %rd7, %rd1;
    st.global.u32 [%rd7], %r4;
    ret;
}

// Thread 0 writes 32-bit words at p, p + 4, ... while below p + bytes: the
// accesses after the first are decided by the inline test against the
// range the first one found.
.visible .entry fill(.param .u64 p, .param .u64 bytes)
{
    .reg .pred %p<3>;
    .reg .b32 %r<2>;
    .reg .b64 %rd<6>;
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra DONE;
    ld.param.u64 %rd1, [p];
    ld.param.u64 %rd2, [bytes];
    mov.u64 %rd3, 0;
LOOP:
    add.s64 %rd4, %rd1, %rd3;
    st.global.u32 [%rd4], %r1;
    add.s64 %rd3, %rd3, 4;
    setp.lt.u64 %p2, %rd3, %rd2;
    @%p2 bra LOOP;
DONE:
    ret;
}

.global .align 4 .u32 counters[4];

// counters[i] += 1 for i = index.
.visible .entry bump(.param .u64 index)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [index];
    shl.b64 %rd2, %rd1, 2;
    mov.u64 %rd3, counters;
    add.s64 %rd4, %rd3, %rd2;
    atom.global.add.u32 %r1, [%rd4], 1;
    ret;
}
"#;

struct Fixture {
    backend: CpuBackend,
    module: Arc<dyn BackendModule>,
}

/// One fixture per way of running kernels: thread by thread, and as
/// 32-lane warps (every kernel warp mode can lower).
fn fixtures() -> Vec<Fixture> {
    [compiler::WarpMode::Off, compiler::WarpMode::Always].into_iter().map(|w| fixture(true, w)).collect()
}

fn fixture(memcheck: bool, warp: compiler::WarpMode) -> Fixture {
    let mut config = jit::JitConfig::uncached(compiler::Tier::Fast);
    config.options.memcheck = memcheck;
    config.options.warp = warp;
    let backend = CpuBackend::with_jit(config);
    let module = backend.load_module(0, PTX, &ModuleOptions { target: 70, ..Default::default() }).expect("the module loads");
    Fixture { backend, module }
}

impl Fixture {
    fn alloc(&self, bytes: usize) -> u64 {
        self.backend.alloc(0, bytes).expect("alloc")
    }

    fn launch(&self, kernel: &str, grid: u32, block: u32, dynamic: u32, args: &[u64]) -> Result<(), LaunchFault> {
        let k = self.module.kernels().iter().position(|k| k.name == kernel).expect("kernel");
        let params: Vec<u8> = args.iter().flat_map(|a| a.to_le_bytes()).collect();
        let launch = LaunchParams {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
            dynamic_shared_bytes: dynamic,
            params: &params,
            cooperative: false,
            pending_launch_limit: 2048,
            heap_limit: 8 << 20,
            printf_fifo_size: 1 << 20,
        };
        self.module.launch(k, &launch)
    }

    fn write_f32(&self, at: u64, values: &[f32]) {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.backend.copy_htod(at, &bytes).expect("copy");
    }

    fn read_u32(&self, at: u64, n: usize) -> Vec<u32> {
        let mut bytes = vec![0u8; n * 4];
        self.backend.copy_dtoh(&mut bytes, at).expect("copy");
        bytes.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    }
}

/// The report of an illegal-address fault.
fn illegal(r: Result<(), LaunchFault>) -> (u64, String) {
    match r {
        Err(LaunchFault::IllegalAddress { address, detail }) => (address, detail),
        other => panic!("expected an illegal address, got {other:?}"),
    }
}

#[test]
fn a_read_just_past_an_allocation_is_reported_with_its_thread_and_line() {
    for f in fixtures() {
        let n = 40;
        let input = f.alloc(n * 4);
        let output = f.alloc(n * 4);
        f.write_f32(input, &(0..n).map(|i| i as f32).collect::<Vec<_>>());
        // Correct: every element copied, nothing reported.
        f.launch("copy", 2, 32, 0, &[input, output, n as u64]).expect("a correct launch");
        assert_eq!(f.read_u32(output, n)[39], 39f32.to_bits());
        // One element too many: thread 8 of block 1 reads in[40].
        let (address, report) = illegal(f.launch("copy", 2, 32, 0, &[input, output, n as u64 + 1]));
        assert_eq!(address, input + 160);
        let line = PTX.lines().position(|l| l.contains("ld.global.f32 %f1")).expect("the load") + 1;
        let place = format!("at kernel copy in copy (PTX line {line}, kernels.cu:12:5)");
        for want in [
            "invalid __global__ read of size 4 bytes",
            place.as_str(),
            "by thread (8,0,0) in block (1,0,0)",
            "is 0 bytes past the end of a 160-byte device allocation",
        ] {
            assert!(report.contains(want), "`{want}` missing from: {report}");
        }
    }
}

#[test]
fn a_write_just_past_an_allocation_is_reported() {
    for f in fixtures() {
        let p = f.alloc(64);
        f.launch("store_at", 1, 32, 0, &[p, 60]).expect("the last element is in bounds");
        assert_eq!(f.read_u32(p + 60, 1), [7]);
        let (address, report) = illegal(f.launch("store_at", 1, 32, 0, &[p, 64]));
        assert_eq!(address, p + 64);
        assert!(report.contains("invalid generic write of size 4 bytes"), "{report}");
        assert!(report.contains("by thread (0,0,0) in block (0,0,0)"), "{report}");
        assert!(report.contains("0 bytes past the end of a 64-byte device allocation"), "{report}");
        // An access that starts inside but runs past the end.
        let p2 = f.alloc(62);
        let (_, report) = illegal(f.launch("store_at", 1, 1, 0, &[p2, 60]));
        assert!(report.contains("runs") || report.contains("ends 2 bytes past its end"), "{report}");
    }
}

#[test]
fn freed_memory_is_reported_as_freed() {
    for f in fixtures() {
        let p = f.alloc(256);
        f.launch("store_at", 1, 1, 0, &[p, 8]).expect("live memory");
        f.backend.free(0, p).expect("free");
        let (address, report) = illegal(f.launch("store_at", 1, 1, 0, &[p, 8]));
        assert_eq!(address, p + 8);
        assert!(report.contains("8 bytes inside a 256-byte device allocation") && report.contains("that was freed"), "{report}");
    }
}

#[test]
fn null_and_misaligned_accesses_fail_as_on_nvidia() {
    for f in fixtures() {
        let (address, report) = illegal(f.launch("store_at", 1, 1, 0, &[0, 16]));
        assert_eq!(address, 16);
        assert!(report.contains("address 0x10 is a null pointer plus 16"), "{report}");
        let p = f.alloc(64);
        match f.launch("store_at", 1, 1, 0, &[p, 2]) {
            Err(LaunchFault::MisalignedAddress { address, detail }) => {
                assert_eq!(address, p + 2);
                assert!(detail.contains("misaligned (not a multiple of 4)"), "{detail}");
            }
            other => panic!("expected a misaligned address, got {other:?}"),
        }
    }
}

#[test]
fn vector_and_atomic_accesses_are_checked_whole() {
    for f in fixtures() {
        let p = f.alloc(32 * 16);
        let total = f.alloc(4);
        let ones: Vec<f32> = vec![f32::from_bits(1); 32 * 4];
        f.write_f32(p, &ones);
        f.backend.memset(total, driver::backend::MemsetValue::U8(0), 4).expect("memset");
        f.launch("vec_sum", 1, 32, 0, &[p, total]).expect("in bounds");
        assert_eq!(f.read_u32(total, 1), [128]);
        // 33 threads: thread 32's 16-byte vector lies past the end.
        let (address, report) = illegal(f.launch("vec_sum", 1, 33, 0, &[p, total]));
        assert_eq!(address, p + 32 * 16);
        assert!(report.contains("invalid __global__ read of size 16 bytes") && report.contains("thread (32,0,0)"), "{report}");
        // The atomic's target past its allocation.
        let (address, report) = illegal(f.launch("vec_sum", 1, 1, 0, &[p, total + 4]));
        assert_eq!(address, total + 4);
        assert!(report.contains("invalid __global__ atomic of size 4 bytes"), "{report}");
    }
}

#[test]
fn shared_memory_past_its_size_is_reported() {
    for f in fixtures() {
        let out = f.alloc(4);
        f.launch("shared_tile", 1, 16, 0, &[out]).expect("16 threads fill the 64-byte tile");
        assert_eq!(f.read_u32(out, 1), [(0..16).sum::<u32>()]);
        let (_, report) = illegal(f.launch("shared_tile", 1, 17, 0, &[out]));
        assert!(report.contains("invalid __shared__ write of size 4 bytes") && report.contains("thread (16,0,0)"), "{report}");
        assert!(report.contains("shared address 0x40 (offset 64) is out of bounds: the block has 64 bytes of shared memory"), "{report}");
    }
}

#[test]
fn dynamic_shared_memory_and_local_memory_through_generic_addresses() {
    for f in fixtures() {
        let out = f.alloc(32 * 4);
        f.launch("dynamic_tile", 1, 32, 128, &[out]).expect("128 bytes of dynamic shared memory");
        assert_eq!(f.read_u32(out, 32), (0..32).map(|t| 2 * t).collect::<Vec<u32>>());
        let (_, report) = illegal(f.launch("dynamic_tile", 1, 32, 64, &[out]));
        assert!(report.contains("invalid generic write of size 4 bytes") && report.contains("thread (16,0,0)"), "{report}");
        assert!(report.contains("is shared memory offset 64, out of bounds: the block has 64 bytes of shared memory"), "{report}");
    }
}

#[test]
fn module_variables_are_checked() {
    for f in fixtures() {
        f.launch("bump", 1, 1, 0, &[3]).expect("the last counter");
        let (_, report) = illegal(f.launch("bump", 1, 1, 0, &[4]));
        assert!(report.contains("0 bytes past the end of a 16-byte module variable"), "{report}");
    }
}

#[test]
fn a_loop_running_past_its_allocation_is_caught_after_its_good_accesses() {
    for f in fixtures() {
        let p = f.alloc(64);
        f.launch("fill", 1, 1, 0, &[p, 64]).expect("in bounds");
        let (address, report) = illegal(f.launch("fill", 1, 1, 0, &[p, 68]));
        assert_eq!(address, p + 64);
        assert!(report.contains("0 bytes past the end of a 64-byte device allocation"), "{report}");
        // The last word starts inside a 62-byte allocation and ends past it.
        let q = f.alloc(62);
        let (address, report) = illegal(f.launch("fill", 1, 1, 0, &[q, 62]));
        assert_eq!(address, q + 60);
        assert!(report.contains("the access ends 2 bytes past its end"), "{report}");
    }
}

/// Warp-level matrix and mbarrier instructions (sm_80).
const MATRIX_PTX: &str = r#"
.version 8.0
.target sm_80
.address_size 64

// Each lane fills 4 bytes of the 128-byte tile; ldmatrix x1 reads the 8
// rows of 16 bytes at tile + offset (lane l of 0-7 gives row l's
// address); out[lane] = the lane's fragment register.
.visible .entry ldm(.param .u64 out, .param .u32 offset)
{
    .shared .align 16 .b8 tile[128];
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, tile;
    shl.b32 %r3, %r1, 2;
    add.u32 %r4, %r2, %r3;
    st.shared.u32 [%r4], %r1;
    bar.sync 0;
    ld.param.u32 %r5, [offset];
    and.b32 %r6, %r1, 7;
    shl.b32 %r6, %r6, 4;
    add.u32 %r6, %r6, %r5;
    add.u32 %r6, %r6, %r2;
    ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r7}, [%r6];
    ld.param.u64 %rd1, [out];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r7;
    ret;
}

// Thread 0 initialises the mbarrier at bar + offset.
.visible .entry mbar(.param .u32 offset)
{
    .shared .align 8 .b64 bar[1];
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra DONE;
    ld.param.u32 %r2, [offset];
    mov.u32 %r3, bar;
    add.u32 %r3, %r3, %r2;
    mbarrier.init.shared.b64 [%r3], 1;
DONE:
    ret;
}

// The warp loads a 16x16 f16 A fragment (row-major, 512 bytes) at p and
// each lane stores its first register to out[lane].
.visible .entry wmma_a(.param .u64 p, .param .u64 out)
{
    .reg .b32 %r<10>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [p];
    wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, [%rd1];
    mov.u32 %r9, %tid.x;
    ld.param.u64 %rd2, [out];
    mul.wide.u32 %rd3, %r9, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r1;
    ret;
}
"#;

fn matrix_fixtures() -> Vec<Fixture> {
    [compiler::WarpMode::Off, compiler::WarpMode::Always]
        .into_iter()
        .map(|w| {
            let mut config = jit::JitConfig::uncached(compiler::Tier::Fast);
            config.options.memcheck = true;
            config.options.warp = w;
            let backend = CpuBackend::with_jit(config);
            let module = backend.load_module(0, MATRIX_PTX, &ModuleOptions { target: 80, ..Default::default() }).expect("the module loads");
            Fixture { backend, module }
        })
        .collect()
}

/// ldmatrix, mbarrier and wmma accesses are checked like loads and
/// stores: the rows an ldmatrix reads, the mbarrier word, each element a
/// wmma.load reads.
#[test]
fn matrix_and_mbarrier_accesses_are_checked() {
    for f in matrix_fixtures() {
        let out = f.alloc(32 * 4);
        f.launch("ldm", 1, 32, 0, &[out, 0]).expect("the 8 rows lie in the tile");
        // Lane l holds row l/4, columns 2(l%4) and 2(l%4)+1: bytes 16(l/4) + 4(l%4), the word thread 4(l/4) + l%4 stored.
        assert_eq!(f.read_u32(out, 32), (0..32).map(|l| 4 * (l / 4) + l % 4).collect::<Vec<u32>>());
        let (_, report) = illegal(f.launch("ldm", 1, 32, 0, &[out, 16]));
        assert!(report.contains("invalid __shared__ read of size 4 bytes"), "{report}");
        assert!(report.contains("is out of bounds: the block has 128 bytes of shared memory"), "{report}");

        f.launch("mbar", 1, 32, 0, &[0]).expect("the mbarrier is in the block's shared memory");
        let (_, report) = illegal(f.launch("mbar", 1, 32, 0, &[8]));
        assert!(report.contains("invalid __shared__ write of size 8 bytes") && report.contains("thread (0,0,0)"), "{report}");

        let a = f.alloc(512);
        f.launch("wmma_a", 1, 32, 0, &[a, out]).expect("512 bytes hold the 16x16 f16 tile");
        let short = f.alloc(256);
        let (_, report) = illegal(f.launch("wmma_a", 1, 32, 0, &[short, out]));
        assert!(report.contains("invalid __global__ read"), "{report}");
    }
}
