//! The shadow tools of checked mode (`ANYCUDA_MEMCHECK=initcheck`,
//! `racecheck`), thread by thread and in warp mode, and `cp.async`'s
//! register `src-size` under memcheck: kernels that make each kind of
//! uninitialised read and each shared-memory hazard are reported with the
//! access's fields, correct ones report nothing, and reports do not fail
//! the launch.

use std::sync::Arc;

use backend_cpu::CpuBackend;
use compiler::cpu_abi::check_tools::{INITCHECK, INITCHECK_HOST, RACECHECK};
use driver::backend::{Backend, BackendModule, LaunchFault, LaunchParams, ModuleOptions};

const PTX: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.file 1 "checkers.cu"

// out[i] = in[i] for i < count.
.visible .entry copy(.param .u64 in, .param .u64 out, .param .u64 count)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<10>;
    ld.param.u64 %rd1, [in];
    ld.param.u64 %rd2, [out];
    ld.param.u64 %rd3, [count];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    cvt.u64.u32 %rd6, %r4;
    setp.ge.u64 %p1, %rd6, %rd3;
    @%p1 bra DONE;
    shl.b64 %rd7, %rd6, 2;
    add.s64 %rd8, %rd1, %rd7;
    .loc 1 7 5
    ld.global.u32 %r5, [%rd8];
    add.s64 %rd9, %rd2, %rd7;
    st.global.u32 [%rd9], %r5;
DONE:
    ret;
}

// Thread t stores t at p[t] through a generic address.
.visible .entry fill(.param .u64 p)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.u32 [%rd3], %r1;
    ret;
}

// Every thread adds 1 to *p.
.visible .entry count(.param .u64 p)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p];
    atom.global.add.u32 %r1, [%rd1], 1;
    ret;
}

// Thread 0 copies n bytes (a register src-size) from src into a 16-byte
// shared buffer with cp.async (zeros after them), then the buffer to out.
.visible .entry cp_async_n(.param .u64 src, .param .u32 n, .param .u64 out)
{
    .shared .align 16 .b8 buf[16];
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [src];
    ld.param.u32 %r1, [n];
    ld.param.u64 %rd2, [out];
    mov.u32 %r2, %tid.x;
    setp.ne.u32 %p1, %r2, 0;
    mov.u32 %r3, buf;
    @%p1 bra WAIT;
    cp.async.ca.shared.global [%r3], [%rd1], 16, %r1;
WAIT:
    cp.async.wait_all;
    bar.sync 0;
    @%p1 bra DONE;
    ld.shared.v4.u32 {%r4, %r5, %r6, %r7}, [%r3];
    st.global.v4.u32 [%rd2], {%r4, %r5, %r6, %r7};
DONE:
    ret;
}
"#;

/// The kernels of the racecheck tests: thread `a` makes access `first` to
/// `sh[0]`, then after `sync` thread `b` makes access `second`.
fn race_ptx() -> String {
    let mut ptx = String::from(".version 7.0\n.target sm_80\n.address_size 64\n");
    for (name, first, sync, second) in RACE_KERNELS {
        let access = |op: &str, reg: &str| match op {
            "r" => format!("    ld.shared.u32 {reg}, [%r9];\n"),
            "w" => "    st.shared.u32 [%r9], %r1;\n".to_string(),
            _ => format!("    atom.shared.add.u32 {reg}, [%r9], 1;\n"),
        };
        let sync = match sync {
            "bar" => "    bar.sync 0;\n",
            "warp" => "    bar.warp.sync -1;\n",
            // Every thread arrives on an mbarrier (set up for the block's 64
            // threads before the first access) and waits for the phase.
            "mbar" => "    mbarrier.arrive.shared.b64 %rd1, [mb];\nWAIT:\n    mbarrier.test_wait.shared.b64 %p3, [mb], %rd1;\n    @!%p3 bra WAIT;\n",
            _ => "",
        };
        ptx += &format!(
            ".visible .entry {name}(.param .u32 a, .param .u32 b, .param .u64 out)\n{{\n\
             \x20   .shared .align 8 .b8 sh[8];\n\
             \x20   .shared .align 8 .b64 mb;\n\
             \x20   .reg .pred %p<4>;\n\
             \x20   .reg .b32 %r<10>;\n\
             \x20   .reg .b64 %rd<2>;\n\
             \x20   mov.u32 %r1, %tid.x;\n\
             \x20   ld.param.u32 %r2, [a];\n\
             \x20   ld.param.u32 %r3, [b];\n\
             \x20   mov.u32 %r9, sh;\n\
             \x20   setp.ne.u32 %p1, %r1, %r2;\n\
             \x20   setp.ne.u32 %p2, %r1, %r3;\n\
             \x20   setp.ne.u32 %p3, %r1, 0;\n\
             \x20   @%p3 bra INIT;\n\
             \x20   mbarrier.init.shared.b64 [mb], 64;\n\
             INIT:\n\
             \x20   bar.sync 0;\n\
             \x20   @%p1 bra SKIP1;\n\
             {}SKIP1:\n\
             {sync}\
             \x20   @%p2 bra SKIP2;\n\
             {}SKIP2:\n\
             \x20   ret;\n}}\n",
            access(first, "%r4"),
            access(second, "%r5"),
        );
    }
    ptx
}

const RACE_KERNELS: [(&str, &str, &str, &str); 10] = [
    ("raw", "w", "none", "r"),
    ("war", "r", "none", "w"),
    ("waw", "w", "none", "w"),
    ("reads", "r", "none", "r"),
    ("atomics", "a", "none", "a"),
    ("atomic_read", "a", "none", "r"),
    ("write_atomic", "w", "none", "a"),
    ("raw_bar", "w", "bar", "r"),
    ("raw_syncwarp", "w", "warp", "r"),
    ("raw_mbarrier", "w", "mbar", "r"),
];

struct Fixture {
    backend: CpuBackend,
    module: Arc<dyn BackendModule>,
    races: Arc<dyn BackendModule>,
}

/// Thread by thread, and as 32-lane warps; the process runs both tools.
fn fixtures() -> Vec<Fixture> {
    backend_cpu::memcheck::set_tools(INITCHECK | INITCHECK_HOST | RACECHECK);
    [compiler::WarpMode::Off, compiler::WarpMode::Always]
        .into_iter()
        .map(|w| {
            let mut config = jit::JitConfig::uncached(compiler::Tier::Fast);
            config.options.memcheck = true;
            config.options.warp = w;
            let backend = CpuBackend::with_jit(config);
            let options = ModuleOptions { target: 80, ..Default::default() };
            let module = backend.load_module(0, PTX, &options).expect("the module loads");
            let races = backend.load_module(0, &race_ptx(), &options).expect("the race module loads");
            Fixture { backend, module, races }
        })
        .collect()
}

fn launch(module: &Arc<dyn BackendModule>, kernel: &str, block: u32, args: &[u64]) -> Result<(), LaunchFault> {
    let k = module.kernels().iter().position(|k| k.name == kernel).expect("kernel");
    let mut params = Vec::new();
    for (i, a) in args.iter().enumerate() {
        // The race kernels and cp_async_n take u32 parameters where their
        // PTX says so; their layouts are given by the kernel info.
        let p = &module.kernels()[k].params[i];
        params.resize(p.offset as usize, 0);
        params.extend_from_slice(&a.to_le_bytes()[..p.size as usize]);
    }
    let launch = LaunchParams {
        grid: [1, 1, 1],
        block: [block, 1, 1],
        dynamic_shared_bytes: 0,
        params: &params,
        cooperative: false,
        pending_launch_limit: 2048,
        heap_limit: 8 << 20,
        printf_fifo_size: 1 << 20,
    };
    module.launch(k, &launch)
}

impl Fixture {
    fn alloc(&self, bytes: usize) -> u64 {
        self.backend.alloc(0, bytes).expect("alloc")
    }
    fn write(&self, at: u64, bytes: &[u8]) {
        self.backend.copy_htod(at, bytes).expect("copy");
    }
    fn read(&self, at: u64, n: usize) -> Vec<u8> {
        let mut bytes = vec![0u8; n];
        self.backend.copy_dtoh(&mut bytes, at).expect("copy");
        bytes
    }
}

/// The reports made since `before` reports that mention `needle`.
fn new_reports(before: usize, needle: &str) -> Vec<String> {
    backend_cpu::memcheck::reports().into_iter().skip(before).filter(|r| r.contains(needle)).collect()
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).expect("the line") + 1
}

#[test]
fn tool_names_parse_and_unknown_ones_are_errors() {
    assert_eq!(compiler::check_tools_from("1"), Ok(0));
    assert_eq!(compiler::check_tools_from("memcheck"), Ok(0));
    assert_eq!(compiler::check_tools_from("initcheck"), Ok(INITCHECK));
    assert_eq!(compiler::check_tools_from(" Racecheck , initcheck"), Ok(INITCHECK | RACECHECK));
    assert_eq!(compiler::check_tools_from("initcheck-host"), Ok(INITCHECK | INITCHECK_HOST));
    assert!(compiler::check_tools_from("synccheck").is_err_and(|e| e.contains("synccheck")));
}

#[test]
fn cp_async_with_a_register_src_size_checks_exactly_the_bytes_it_reads() {
    for f in fixtures() {
        // 60 bytes: a 16-byte copy at offset 48 runs 4 bytes past the end.
        let p = f.alloc(60);
        f.write(p, &(0..60).collect::<Vec<u8>>());
        let out = f.alloc(16);
        // 12 bytes end exactly at the end: no report, zeros after them.
        launch(&f.module, "cp_async_n", 32, &[p + 48, 12, out]).expect("12 bytes lie in the allocation");
        let mut want: Vec<u8> = (48..60).collect();
        want.extend([0; 4]);
        assert_eq!(f.read(out, 16), want);
        // 0 bytes read nothing, wherever the source points.
        launch(&f.module, "cp_async_n", 32, &[p + 4096, 0, out]).expect("0 bytes read nothing");
        assert_eq!(f.read(out, 16), [0; 16]);
        // 16 bytes: 4 past the end.
        let line = line_of(PTX, "cp.async.ca.shared.global");
        match launch(&f.module, "cp_async_n", 32, &[p + 48, 16, out]) {
            Err(LaunchFault::IllegalAddress { address, detail }) => {
                assert_eq!(address, p + 48);
                for want in [
                    "invalid __global__ read of size 16 bytes",
                    &format!("PTX line {line}"),
                    "by thread (0,0,0)",
                    "ends 4 bytes past its end",
                ] {
                    assert!(detail.contains(want), "`{want}` missing from: {detail}");
                }
            }
            other => panic!("expected an illegal address, got {other:?}"),
        }
    }
}

#[test]
fn initcheck_reports_kernel_reads_of_unwritten_device_memory_and_goes_on() {
    for f in fixtures() {
        let n = 40usize;
        let input = f.alloc(n * 4);
        let out = f.alloc(n * 4);
        // The first 39 words written, the last not.
        f.write(input, &vec![1u8; (n - 1) * 4]);
        let before = backend_cpu::memcheck::reports().len();
        launch(&f.module, "copy", 64, &[input, out, n as u64]).expect("initcheck does not fail the launch");
        let reports = new_reports(before, &format!("allocation at {input:#x}"));
        assert_eq!(reports.len(), 1, "one report for the kernel's read: {reports:?}");
        let line = line_of(PTX, "ld.global.u32 %r5");
        for want in [
            "anycuda initcheck: uninitialized __global__ memory read of size 4 bytes".to_string(),
            format!("at kernel copy in copy (PTX line {line}, checkers.cu:7:5)"),
            "by thread (39,0,0) in block (0,0,0)".to_string(),
            format!("address {:#x}: 4 of its bytes were never written", input + 156),
            "156 bytes into a 160-byte device allocation".to_string(),
        ] {
            assert!(reports[0].contains(&want), "`{want}` missing from: {}", reports[0]);
        }
        // The copy went on: 39 words copied.
        assert_eq!(&f.read(out, 4), &[1, 1, 1, 1]);

        // Written by a memset, by a device-to-device copy of written
        // bytes, by a kernel's stores: nothing to report.
        let a = f.alloc(n * 4);
        f.backend.memset(a, driver::backend::MemsetValue::U8(0), n * 4).expect("memset");
        let b = f.alloc(n * 4);
        f.backend.copy_dtod(b, a, n * 4).expect("dtod");
        let c = f.alloc(64 * 4);
        launch(&f.module, "fill", 64, &[c]).expect("fill");
        let before = backend_cpu::memcheck::reports().len();
        for src in [a, b, c] {
            launch(&f.module, "copy", 64, &[src, out, n as u64]).expect("copy");
        }
        let reports = new_reports(before, "initcheck");
        assert!(reports.iter().all(|r| ![a, b, c].iter().any(|x| r.contains(&format!("{x:#x}")))), "{reports:?}");

        // A device-to-device copy of unwritten bytes carries them.
        let d = f.alloc(n * 4);
        let e = f.alloc(n * 4);
        f.write(d, &[7; 8]);
        f.backend.copy_dtod(e, d, n * 4).expect("dtod");
        let before = backend_cpu::memcheck::reports().len();
        launch(&f.module, "copy", 64, &[e, out, n as u64]).expect("copy");
        let reports = new_reports(before, &format!("allocation at {e:#x}"));
        assert_eq!(reports.len(), 1, "{reports:?}");
        assert!(reports[0].contains("by thread (2,0,0)"), "the first unwritten word is word 2: {}", reports[0]);

        // An atomic on an unwritten word.
        let counter = f.alloc(4);
        let before = backend_cpu::memcheck::reports().len();
        launch(&f.module, "count", 32, &[counter]).expect("count");
        let reports = new_reports(before, &format!("allocation at {counter:#x}"));
        assert_eq!(reports.len(), 1, "{reports:?}");
        assert!(reports[0].contains("uninitialized __global__ memory atomic of size 4 bytes"), "{}", reports[0]);
    }
}

/// With `initcheck-host` (this process runs it), a device-to-host copy of
/// unwritten bytes is reported too.
#[test]
fn initcheck_reports_a_device_to_host_copy_of_unwritten_bytes() {
    for f in fixtures() {
        let p = f.alloc(64);
        f.write(p, &[3; 16]);
        let before = backend_cpu::memcheck::reports().len();
        assert_eq!(&f.read(p, 16), &[3; 16]);
        assert!(new_reports(before, &format!("allocation at {p:#x}")).is_empty(), "the written bytes");
        let _ = f.read(p, 64);
        let reports = new_reports(before, &format!("allocation at {p:#x}"));
        assert_eq!(reports.len(), 1, "{reports:?}");
        assert!(reports[0].contains("read by the host API (device-to-host copy)"), "{}", reports[0]);
        assert!(
            reports[0].contains(&format!("48 of the 64 bytes copied from {p:#x} were never written, the first at {:#x}", p + 16)),
            "{}",
            reports[0]
        );
    }
}

/// Each hazard between two threads of a block, between warps and within
/// one; barriers and `__syncwarp` within a warp order accesses, atomics do
/// not race with atomics nor with plain reads (the read of a
/// compare-and-swap loop), but do with plain writes; an mbarrier's
/// arrive and wait order accesses too (and its own word is no data).
#[test]
fn racecheck_reports_each_hazard_once_with_both_threads_and_lines() {
    let ptx = race_ptx();
    for (mode, f) in fixtures().into_iter().enumerate() {
        // (kernel, a, b, the hazard, or None)
        let cases: [(&str, u32, u32, Option<&str>); 14] = [
            ("raw", 0, 1, Some("read-after-write")),
            ("raw", 3, 40, Some("read-after-write")),
            ("war", 0, 1, Some("write-after-read")),
            ("war", 1, 33, Some("write-after-read")),
            ("waw", 0, 1, Some("write-after-write")),
            ("atomic_read", 0, 1, None),
            ("write_atomic", 0, 1, Some("write-after-write")),
            ("reads", 0, 1, None),
            ("atomics", 0, 1, None),
            ("raw", 2, 2, None),
            ("raw_bar", 0, 40, None),
            ("raw_syncwarp", 0, 1, None),
            ("raw_syncwarp", 0, 40, Some("read-after-write")),
            ("raw_mbarrier", 0, 40, None),
        ];
        for (kernel, a, b, hazard) in cases {
            let before = backend_cpu::memcheck::reports().len();
            launch(&f.races, kernel, 64, &[u64::from(a), u64::from(b), 0]).expect("racecheck does not fail the launch");
            let reports = new_reports(before, &format!("at kernel {kernel} "));
            let Some(hazard) = hazard else {
                assert!(reports.is_empty(), "mode {mode}: {kernel} ({a}, {b}): {reports:?}");
                continue;
            };
            assert_eq!(reports.len(), 1, "mode {mode}: {kernel} ({a}, {b}): {reports:?}");
            let r = &reports[0];
            // The kernel's two accesses: the first and second access lines
            // after its `.entry`.
            let start = line_of(&ptx, &format!(".entry {kernel}("));
            let lines: Vec<usize> = ptx
                .lines()
                .enumerate()
                .skip(start)
                .take_while(|(_, l)| !l.starts_with('}'))
                .filter(|(_, l)| l.contains("[%r9]"))
                .map(|(i, _)| i + 1)
                .collect();
            for want in [
                format!("{hazard} hazard on __shared__ memory at offset 0x0 in block (0,0,0)"),
                format!("by thread ({b},0,0) at kernel {kernel} in {kernel} (PTX line {})", lines[1]),
                format!("by thread ({a},0,0) in {kernel} (PTX line {})", lines[0]),
            ] {
                assert!(r.contains(&want), "mode {mode}: {kernel} ({a}, {b}): `{want}` missing from: {r}");
            }
        }
    }
}
