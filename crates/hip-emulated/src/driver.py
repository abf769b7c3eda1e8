"""How anycuda's HIP test double drives the AMD ISA emulator.

`libamdhip64.so` (crates/hip-emulated) runs this module in an embedded
CPython. It maps code objects with the emulator harness (`run.load`,
`run.fix_gfx9_flat`), applies the harness's fixes (`run.setup`), and runs
launches with a dispatch loop of its own, because the harness's `run()`
maps the code object again at every launch (so `__device__` variables
would not keep their values) and leaves out what compiled CUDA kernels
need beyond its checks:

- Private memory. Each wavefront gets a region of its own (the emulator
  gives every wavefront of a group the same one), `lanes x stride` bytes,
  lane-major: lane L's private byte X lives at region + L * stride + X.
  gfx11 `scratch_*` instructions address it through the emulator's scratch
  buffer, which is that region; gfx9 `buffer_*` accesses through the
  private segment buffer descriptor (ADD_TID_ENABLE) get a handler here
  with the same layout (per-lane offset = wave-scaled soffset / 64 +
  voffset + offset), which the emulator's MUBUF handler does not have.
- Generic (flat) pointers into LDS and private memory. `src_shared_base`
  and `src_private_base` read as apertures whose high words no host address
  has; a `flat_*` access whose address lies in one is redirected, lane by
  lane, to the group's LDS or to the lane's private bytes. (The emulator
  otherwise reads 0 for both apertures and would access host address 0.)
- LDS is a reserved window covering every 32-bit LDS address: the emulator
  reads and writes back LDS for inactive lanes too, at whatever address
  their registers hold.
- Emulator errors found by running compiled kernels: ds_(b)permute_b32
  lane numbers and inactive lanes, gfx9 flat_* offsets of 2048-4095,
  gfx90a global_* atomics' returned value, 64-bit compare-and-swap, cache
  invalidations its decoder does not know (see the handlers below), and
  the inline constant 1/(2 pi) (operand 248), which the emulator
  overwrites with s_getreg's HW_ID: v_sin_f32/v_cos_f32 then always gave 0.
- s_trap ends the launch with an error instead of jumping to a trap
  handler that does not exist.
- The host's MXCSR (rounding mode, denormal flags) is restored after every
  launch.

Nothing here changes the emulator's files: the handlers are installed in its
dispatch table when this module initialises, before any instruction is
compiled.
"""
import ctypes
import struct
import sys

# High words of the LDS and private apertures. User-space host addresses are
# below 2**47, so no host pointer has these high words.
SHARED_HI = 0x10000
PRIVATE_HI = 0x20000
# Registers of the emulator's SGPR file that hold, per wavefront, the host
# addresses of its private region (209-210) and of the group's LDS (211-212).
# Operand encodings 209-234 name no register or constant on gfx9-gfx11, so no
# instruction reads them.
SLOT_PRIVATE = 209
SLOT_LDS = 211
# src_shared_base, src_shared_limit, src_private_base, src_private_limit.
APERTURE_REGS = {235: SHARED_HI, 236: SHARED_HI, 237: PRIVATE_HI, 238: PRIVATE_HI}
# LDS a work-group may have (the emulator's LDS parameter is 16384 dwords).
LDS_BYTES = 65536
# The LDS window: every 32-bit LDS address and then some. The emulator
# reads (and writes back) LDS for inactive lanes too, at whatever address
# their registers hold; the hardware does not touch memory for them, and
# bounds LDS accesses. A reserved, never-committed mapping this large keeps
# those accesses inside memory of the double's own.
LDS_WINDOW = (1 << 32) + (1 << 18)
# Instructions one wavefront may run between two barriers.
STEP_LIMIT = 20_000_000
# Instructions a wavefront of a cooperative launch runs before the next
# wavefront's turn: every work-group of such a launch is resident at once,
# and groups may wait for each other (a grid barrier spins on global memory
# until the other groups arrive), so no wavefront may run to its end alone.
QUANTUM = 2000
# What a wavefront does after its turn.
RUNNING, AT_BARRIER, ENDED = 0, 1, 2

_h = {}
_modules = {}


class Launch(ctypes.Structure):
    """One launch, filled by the library (`emulator::LaunchRecord`)."""
    _fields_ = [(name, ctypes.c_uint64) for name in (
        "module", "entry", "kernel_object", "kernarg", "kernarg_size",
        "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z",
        "group_fixed", "dynamic_lds", "private_stride",
        "rsrc1", "rsrc2", "properties", "wave64", "dispatch_id", "cooperative", "steps")]


class KernelTrap(Exception):
    pass


def guarded(status, buf, size, function, *args):
    """Calls `function(*args)`. Writes 0 to the int32 at `status`, or 1 and
    the exception's text to the `size`-byte buffer at `buf` (its traceback
    goes to stderr). Nothing propagates: a SystemExit must not end the host."""
    try:
        globals()[function](*args)
        ctypes.c_int32.from_address(status).value = 0
    except BaseException as e:
        if not isinstance(e, KernelTrap):  # a trap is the kernel's doing, not the emulator's
            import traceback
            traceback.print_exc()
            sys.stderr.flush()
        text = f"{type(e).__name__}: {e}".encode(errors="replace")[:size - 1]
        ctypes.memmove(buf, text + b"\0", len(text) + 1)
        ctypes.c_int32.from_address(status).value = 1


def init(emu_dir):
    """Imports the harness from `emu_dir`, applies its fixes and ours."""
    if _h:
        return
    import os
    import shutil
    # The emulator compiles its instruction semantics with `clang`; Debian's
    # clang-19 puts it in its LLVM directory only.
    if shutil.which("clang") is None and os.path.exists("/usr/lib/llvm-19/bin/clang"):
        os.environ["PATH"] = "/usr/lib/llvm-19/bin" + os.pathsep + os.environ.get("PATH", "")
    if shutil.which("clang") is None:
        raise RuntimeError("the AMD emulator needs `clang` on PATH (Debian: clang-19, in /usr/lib/llvm-19/bin)")
    if emu_dir not in sys.path:
        # The emulator's `test` package must win over the standard library's.
        sys.path.insert(0, emu_dir)
    import run
    st = run.setup()
    emu = st["emu"]
    _install(emu)
    lib, _ = emu._get_ftz_lib()
    if lib is None:
        raise RuntimeError("the emulator could not build its MXCSR helper (is clang on PATH?)")
    _h.update(run=run, emu=emu, st=st, fpcr=lib, lds=_lds_window(), lds_pool=[])


def _lds_window():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    # PROT_READ | PROT_WRITE; MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE
    addr = libc.mmap(None, LDS_WINDOW, 3, 0x02 | 0x20 | 0x4000, -1, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "cannot reserve the LDS window")

    def release():  # MADV_DONTNEED: drop the pages a launch touched
        libc.madvise(addr, LDS_WINDOW, 4)
    return addr, release


def load(handle, path, arch, out):
    """Maps the code object at `path`; writes the image's base address to `out`."""
    run = _h["run"]
    elf, base = run.load(path.decode())
    image = run._keep.pop()  # run.load keeps the image alive; the module owns it now
    # Cache invalidations mean nothing in a sequential emulator, and the
    # emulator cannot decode these: run.load turns gfx11's buffer_gl0_inv
    # into s_nop, but its word for buffer_gl1_inv is not gfx11's
    # (0xe0b00000, emitted with release fences); gfx90a's
    # buffer_wbinvl1(_vol) (acquire fences) are not in the emulator's CDNA3
    # tables. Each becomes two s_nop.
    cache_ops = {"rdna3": (0xE0B00000,), "cdna": (0xE0F80000, 0xE0FC0000)}[arch]
    text = [s for s in elf.sh if s["sname"] == ".text"][0]
    words = (ctypes.c_uint32 * (text["size"] // 4)).from_address(base + text["addr"])
    for i in range(len(words) - 1):
        if words[i] in cache_ops and words[i + 1] == 0:
            words[i] = words[i + 1] = 0xBF800000
    if arch == "cdna":
        import shutil
        if shutil.which("llvm-objdump-19") is None:
            raise RuntimeError("the emulator's gfx9 loader needs `llvm-objdump-19` on PATH (Debian: llvm-19)")
        run.fix_gfx9_flat(path.decode(), elf, base)
    _modules[handle] = {"image": image, "programs": {}}
    ctypes.c_uint64.from_address(out).value = base


def unload(handle):
    _modules.pop(handle, None)


def launch(addr):
    """Runs the launch described at `addr`; writes the instructions run to its `steps`."""
    emu, st = _h["emu"], _h["st"]
    r = Launch.from_address(addr)
    mod = _modules[r.module]
    wave64 = bool(r.wave64)
    arch, wave = ("cdna", 64) if wave64 else ("rdna3", 32)
    block = (r.block_x, r.block_y, r.block_z)
    grid = (r.grid_x, r.grid_y, r.grid_z)
    threads = block[0] * block[1] * block[2]
    waves = (threads + wave - 1) // wave
    group = r.group_fixed + r.dynamic_lds
    if group > LDS_BYTES:
        raise RuntimeError(f"{group} bytes of LDS requested; the emulator has {LDS_BYTES}")

    # HIP copies the arguments into a kernarg segment of its own.
    kernarg = ctypes.create_string_buffer(r.kernarg_size + 256)
    ctypes.memmove(kernarg, r.kernarg, r.kernarg_size)
    ka = ctypes.addressof(kernarg)
    # hsa_kernel_dispatch_packet_t
    packet = ctypes.create_string_buffer(64)
    struct.pack_into("<HHHHHH", packet, 0, 0, 3, *block, 0)
    struct.pack_into("<III", packet, 12, *[g * b for g, b in zip(grid, block)])
    struct.pack_into("<IIQQ", packet, 24, r.private_stride, group, r.kernel_object, ka)
    queue = ctypes.create_string_buffer(256)
    stride = r.private_stride
    private = ctypes.create_string_buffer(max(waves * wave * stride, 16))
    lds_addr, lds_release = _h["lds"]

    def user_sgprs(region):
        props, ud = r.properties, []
        if props & 1:  # private segment buffer: base, ADD_TID_ENABLE, no bound
            ud += [region & 0xFFFFFFFF, (region >> 32) & 0xFFFF, 0xFFFFFFFF, 1 << 23]
        if props & 2:
            ud += _split(ctypes.addressof(packet))
        if props & 4:
            ud += _split(ctypes.addressof(queue))
        if props & 8:
            ud += _split(ka)
        if props & 16:
            ud += _split(r.dispatch_id)
        if props & 32:  # flat scratch init: the wavefront's region (its wave offset is 0)
            ud += _split(region)
        if props & 64:
            ud += [stride]
        return ud

    fpcr = _h["fpcr"]
    saved = fpcr.get_fpcr()
    ftz = ((r.rsrc1 >> 16) & 3) == 0  # FLOAT_DENORM_MODE_32: flush
    mode = st["ftz_ctx"] if ftz else st["noftz"]
    steps = 0
    windows = []
    try:
        st["reset"]()
        with mode():
            if r.cooperative:
                groups = [(gx, gy, gz) for gz in range(grid[2]) for gy in range(grid[1]) for gx in range(grid[0])]
                windows = _lds_windows(len(groups))
                steps = _run_cooperative(emu, mod["programs"], r, arch, wave, threads, waves, block, groups, ka,
                                         user_sgprs, stride, [w[0] for w in windows], group)
            else:
                for gz in range(grid[2]):
                    for gy in range(grid[1]):
                        for gx in range(grid[0]):
                            ctypes.memset(lds_addr, 0, max(group, 4))
                            steps += _run_group(emu, mod["programs"], r, arch, wave, threads, waves, block,
                                                (gx, gy, gz), ka, user_sgprs, ctypes.addressof(private), stride, lds_addr)
    finally:
        fpcr.set_fpcr(saved)
        lds_release()
        for _, release in windows:
            release()
    r.steps = steps


def _lds_windows(n):
    """`n` LDS windows, one per work-group of a cooperative launch (made
    once, kept for later launches)."""
    pool = _h["lds_pool"]
    while len(pool) < n:
        pool.append(_lds_window())
    return pool[:n]


def _split(v):
    return [v & 0xFFFFFFFF, (v >> 32) & 0xFFFFFFFF]


def _new_wave(emu, r, arch, wave, threads, block, gid, ka, user_sgprs, region, stride, lds, w):
    """Wavefront `w` of work-group `gid`: its state and the buffers its compiled instructions take."""
    s = emu._init_wave(r.entry, w * wave, threads, *block, ka, r.rsrc2, stride, arch, *gid, user_sgprs(region), wave)
    for reg, hi in APERTURE_REGS.items():
        s._write_sgpr(reg, hi)
    # The emulator keeps s_getreg's HW_ID at index 248, which is also the
    # inline constant 1/(2*pi) (v_sin/v_cos arguments are multiplied by
    # it): the constant wins.
    s._write_sgpr(248, 0x3E22F983)
    s._write_sgpr(SLOT_PRIVATE, region & 0xFFFFFFFF)
    s._write_sgpr(SLOT_PRIVATE + 1, region >> 32)
    s._write_sgpr(SLOT_LDS, lds & 0xFFFFFFFF)
    s._write_sgpr(SLOT_LDS + 1, lds >> 32)
    bufs = [ctypes.c_uint64(s.sgpr_buf._buf.va_addr), ctypes.c_uint64(s.vgpr_buf._buf.va_addr), ctypes.c_uint64(0),
            ctypes.c_uint64(lds), ctypes.c_uint64(region), ctypes.c_uint64(s.accvgpr_buf._buf.va_addr)]
    return s, bufs


def _advance(emu, programs, r, arch, s, bufs, limit, gid, w):
    """Runs a wavefront for at most `limit` instructions, up to a barrier
    (which it executes) or its end: the instructions run and what it does
    next (RUNNING when the limit stopped it)."""
    end = emu.ENDPGM_PC
    n = 0
    while n < limit:
        pc = s.pc
        if pc == end:
            return n, ENDED
        entry = programs.get(pc)
        if entry is None:
            entry = programs[pc] = _compile(emu, pc, arch)
        fxn, glob, kind = entry
        if kind == 2:
            raise KernelTrap(f"the kernel executed s_trap at offset {pc - r.entry:#x} of its code "
                             f"(work-group {gid}, wavefront {w}): trap, assert or abort")
        fxn(*[bufs[g] for g in glob])
        n += 1
        if kind == 1:
            return n, AT_BARRIER
    return n, RUNNING


def _run_group(emu, programs, r, arch, wave, threads, waves, block, gid, ka, user_sgprs, private, stride, lds):
    states = [_new_wave(emu, r, arch, wave, threads, block, gid, ka, user_sgprs, private + w * wave * stride, stride, lds, w)
              for w in range(waves)]
    done = [False] * waves
    steps = 0
    # Each round runs every live wavefront up to its next barrier or its end;
    # a round in which all of them arrived releases the barrier.
    while not all(done):
        for w, (s, bufs) in enumerate(states):
            if done[w]:
                continue
            n, what = _advance(emu, programs, r, arch, s, bufs, STEP_LIMIT, gid, w)
            steps += n
            if what == ENDED:
                done[w] = True
            elif what == RUNNING:
                raise RuntimeError(f"a wavefront ran {STEP_LIMIT} instructions without reaching a barrier or its end "
                                   f"(work-group {gid}, wavefront {w}, pc {s.pc - r.entry:#x})")
    return steps


def _run_cooperative(emu, programs, r, arch, wave, threads, waves, block, groups, ka, user_sgprs, stride, windows, group):
    """A cooperative launch: every wavefront of every work-group, in turns
    of QUANTUM instructions; a group's barrier releases once each of its
    live wavefronts has arrived. Returns the instructions run."""
    private = ctypes.create_string_buffer(max(len(groups) * waves * wave * stride, 16))
    base = ctypes.addressof(private)
    fronts = []  # (group index, wavefront, state, buffers)
    for g, gid in enumerate(groups):
        ctypes.memset(windows[g], 0, max(group, 4))
        for w in range(waves):
            region = base + (g * waves + w) * wave * stride
            s, bufs = _new_wave(emu, r, arch, wave, threads, block, gid, ka, user_sgprs, region, stride, windows[g], w)
            fronts.append((g, w, s, bufs))
    status = [RUNNING] * len(fronts)
    steps = 0
    while any(x != ENDED for x in status):
        for i, (g, w, s, bufs) in enumerate(fronts):
            if status[i] == RUNNING:
                n, status[i] = _advance(emu, programs, r, arch, s, bufs, QUANTUM, groups[g], w)
                steps += n
        for g in range(len(groups)):
            mine = range(g * waves, (g + 1) * waves)
            if all(status[i] != RUNNING for i in mine):
                for i in mine:
                    if status[i] == AT_BARRIER:
                        status[i] = RUNNING
        if steps > STEP_LIMIT:
            waiting = sum(1 for x in status if x != ENDED)
            raise RuntimeError(f"a cooperative launch ran {steps} instructions and {waiting} wavefront(s) have not ended "
                               f"(a grid barrier some work-group never reaches?)")
    return steps


def _compile(emu, pc, arch):
    inst = emu.decode_inst(bytes((ctypes.c_char * 16).from_address(pc).raw), arch)
    if emu._op_name(inst) == "S_TRAP":
        return None, (), 2  # the emulator has no trap handler to jump to
    (prg, runtime), inst = emu._decode_at(pc, arch)
    barrier = isinstance(inst, (emu.ir3.SOPP, emu.irc.SOPP)) and inst.op in emu._BARRIER_OPS
    return runtime.fxn, prg.arg.globals, 1 if barrier else 0


# ---------------------------------------------------------------------------
# Handlers installed in the emulator.
# ---------------------------------------------------------------------------

def _install(emu):
    from tinygrad.dtype import dtypes
    from tinygrad.uop.ops import UOp
    Ctx, c, u64 = emu._Ctx, emu._c, emu._u64
    U64 = dtypes.uint64

    # 64-bit reads of src_{shared,private}_{base,limit}: the aperture's high
    # word in bits 63:32 (the emulator sign-extends inline operands).
    orig_rsrc = Ctx.rsrc_dyn

    def rsrc_dyn(self, off, lane, bits=32, literal=None, is_f64=False, do_cast=True):
        val = orig_rsrc(self, off, lane, bits, literal, is_f64, do_cast)
        if bits != 64:
            return val
        is_aperture = (off >= c(235)) & (off <= c(238))
        hi = self.rsgpr_dyn(off, is_aperture).cast(U64) << UOp.const(32, U64)
        return is_aperture.where(hi, val)
    Ctx.rsrc_dyn = rsrc_dyn

    # flat_*: addresses in the apertures go to the lane's private bytes or
    # to the group's LDS, both host memory the emulator's vmem reaches.
    def remap(ctx, lo, hi, lane):
        region = u64(ctx.rsgpr_dyn(c(SLOT_PRIVATE)), ctx.rsgpr_dyn(c(SLOT_PRIVATE + 1)))
        stride = ctx.rsgpr_dyn(c(emu.SCRATCH_STRIDE_IDX)).cast(U64)
        private = region + lane.cast(U64) * stride + lo.cast(U64)
        shared = u64(ctx.rsgpr_dyn(c(SLOT_LDS)), ctx.rsgpr_dyn(c(SLOT_LDS + 1))) + lo.cast(U64)
        return hi.eq(c(PRIVATE_HI)).where(private, hi.eq(c(SHARED_HI)).where(shared, u64(lo, hi)))

    class FlatCtx(Ctx):
        __slots__ = ()
        addr_regs = (None, None)
        # gfx9 flat_* offsets are 12-bit unsigned (global_* and scratch_*
        # ones are 13-bit signed); the emulator sign-extends them all, so an
        # offset of 2048-4095 became negative.
        unsigned_offset = None

        def inst_field_signed(self, field):
            if field is FlatCtx.unsigned_offset:
                return self.inst_field(field).cast(dtypes.int)
            return Ctx.inst_field_signed(self, field)

        def rvgpr_dyn(self, reg, lane, valid=None):
            lo_reg, hi_reg = FlatCtx.addr_regs
            if reg is not lo_reg and reg is not hi_reg:
                return Ctx.rvgpr_dyn(self, reg, lane, valid)
            lo = Ctx.rvgpr_dyn(self, lo_reg, lane, valid)
            hi = Ctx.rvgpr_dyn(self, hi_reg, lane, valid)
            addr = remap(self, lo, hi, lane)
            if reg is lo_reg:
                return addr.cast(dtypes.uint32)
            return (addr >> UOp.const(32, U64)).cast(dtypes.uint32)

    def flat_handler(orig):
        def handler(inst, ctx):
            lo = ctx.inst_field(type(inst).addr)
            FlatCtx.addr_regs = (lo, lo + c(1))
            FlatCtx.unsigned_offset = type(inst).offset if isinstance(inst, emu.irc.FLAT) else None
            cls = ctx.__class__
            ctx.__class__ = FlatCtx
            try:
                return orig(inst, ctx)
            finally:
                ctx.__class__ = cls
                FlatCtx.addr_regs = (None, None)
                FlatCtx.unsigned_offset = None
        return handler

    for kind in (emu.ir3.FLAT, emu.irc.FLAT):
        emu._INST_HANDLERS[kind] = flat_handler(emu._INST_HANDLERS[kind])

    # 64-bit compare-and-swap (flat_/global_atomic_cmpswap_b64, _x2): its
    # data is 128 bits (the new value, then the compared one), which the
    # emulator reads as one 32-bit register, so the comparison never held.
    def cmpswap64_handler(orig, flat):
        def handler(inst, ctx):
            if emu._op_name(inst) not in ("FLAT_ATOMIC_CMPSWAP_B64", "GLOBAL_ATOMIC_CMPSWAP_B64",
                                          "FLAT_ATOMIC_CMPSWAP_X2", "GLOBAL_ATOMIC_CMPSWAP_X2"):
                return orig(inst, ctx)
            exec_mask = ctx.rexec()
            addr_reg, data, vdst = (ctx.inst_field(getattr(type(inst), f)) for f in ("addr", "data", "vdst"))
            off_field = type(inst).offset
            unsigned = flat and isinstance(inst, emu.irc.FLAT)
            offset = (ctx.inst_field(off_field).cast(dtypes.int) if unsigned else ctx.inst_field_signed(off_field))
            saddr = ctx.optional_field(inst, "saddr")
            lane = ctx.range()
            active = emu._lane_active(exec_mask, lane)
            lo, hi = ctx.rvgpr_dyn(addr_reg, lane), ctx.rvgpr_dyn(addr_reg + c(1), lane)
            if flat:
                base = remap(ctx, lo, hi, lane)
            else:
                use_saddr = saddr < c(124)
                sbase = u64(ctx.rsgpr_dyn(saddr), ctx.rsgpr_dyn(saddr + c(1))) + lo.cast(U64)
                base = use_saddr.where(sbase, u64(lo, hi))
            addr = base + offset.cast(dtypes.int64).cast(U64)
            mem = ctx.vmem
            w0 = mem.index((addr >> UOp.const(2, U64)).valid(active))
            w1 = mem.index(((addr + UOp.const(4, U64)) >> UOp.const(2, U64)).valid(active))
            old0, old1 = w0.load(), w1.load()
            src0, src1 = ctx.rvgpr_dyn(data, lane), ctx.rvgpr_dyn(data + c(1), lane)
            cmp0, cmp1 = ctx.rvgpr_dyn(data + c(2), lane), ctx.rvgpr_dyn(data + c(3), lane)
            hit = active & old0.eq(cmp0) & old1.eq(cmp1)
            writes = UOp.group(w0.store(hit.where(src0, old0)), w1.store(hit.where(src1, old1)))
            stores = [writes]
            if emu._iattr(inst, "glc"):
                stores += [ctx.wvgpr_dyn(vdst, lane, old0, exec_mask, after=writes),
                           ctx.wvgpr_dyn(vdst + c(1), lane, old1, exec_mask, after=writes)]
            return UOp.sink(UOp.group(*stores).end(lane), *ctx.inc_pc())
        return handler

    for kind, flat in ((emu.ir3.FLAT, True), (emu.irc.FLAT, True), (emu.ir3.GLOBAL, False), (emu.irc.GLOBAL, False)):
        emu._INST_HANDLERS[kind] = cmpswap64_handler(emu._INST_HANDLERS[kind], flat)

    emu._INST_HANDLERS[emu.irc.MUBUF] = _mubuf_handler(emu, emu._INST_HANDLERS[emu.irc.MUBUF])

    # gfx90a global_atomic_* with glc return the old value (the CDNA tables
    # call the bit sc0); the harness's fix covers flat_* atomics only.
    orig_iattr = emu._iattr

    def iattr(inst, name, default=0):
        if name == "glc" and isinstance(inst, (emu.irc.GLOBAL, emu.irc.SCRATCH)):
            return orig_iattr(inst, "sc0", default)
        return orig_iattr(inst, name, default)
    emu._iattr = iattr

    # ds_permute_b32 / ds_bpermute_b32: the lane is address bits [6:2]
    # (wave32: [6:2] modulo 32). The ISA text's "/ 4 % 32" (signed on RDNA3)
    # reaches the emulator's code generator without its remainder, so a lane
    # whose address register holds a large value (inactive lanes often do)
    # reads VGPR memory far outside the wavefront's registers.
    orig_pcode = emu.get_pcode
    lane_forms = {
        "32'I(VGPR[i][ADDR] + OFFSET.b32) / 4 % 32": "((VGPR[i][ADDR].u32 + OFFSET.u32) >> 2U) & 31U",
        "(VGPR[i][ADDR].u32 + OFFSET.u32) / 4U % 64U": "((VGPR[i][ADDR].u32 + OFFSET.u32) >> 2U) & 63U",
    }

    # And the write of the result: the emulator drops the ISA text's
    # "if EXEC[i]" around it and writes every lane's register, inactive ones
    # too, where the hardware leaves them alone.
    lane_forms["if EXEC[i].u1 then\nVGPR[i][VDST] = tmp[i]\nendif"] = "VGPR[i][VDST] = EXEC[i].u1 ? tmp[i] : VGPR[i][VDST]"

    def get_pcode(op):
        pcode = orig_pcode(op)
        if op.name in ("DS_PERMUTE_B32", "DS_BPERMUTE_B32"):
            for old, new in lane_forms.items():
                pcode = pcode.replace(old, new)
        return pcode
    emu.get_pcode = get_pcode


def _mubuf_handler(emu, orig):
    """gfx9 buffer instructions. With ADD_TID_ENABLE in the descriptor (the
    private segment buffer) the address is the lane's private byte in the
    layout described at the top; otherwise base + soffset + stride * index +
    voffset + offset, unswizzled. Loads, stores and their byte, short and
    d16 forms; atomics and format conversions are refused by name."""
    from tinygrad.dtype import dtypes
    from tinygrad.uop.ops import UOp
    c, u64 = emu._c, emu._u64
    U64, U32 = dtypes.uint64, dtypes.uint32

    def handler(inst, ctx):
        name = emu._op_name(inst)
        if name in ("BUFFER_WBL2", "BUFFER_INV", "BUFFER_WBINVL1", "BUFFER_WBINVL1_VOL", "BUFFER_INVL2"):
            return UOp.sink(*ctx.inc_pc())  # cache control: nothing to do in a sequential emulator
        if emu._iattr(inst, "lds"):
            return orig(inst, ctx)
        if "ATOMIC" in name or "FORMAT" in name:
            raise NotImplementedError(f"{name} is not emulated (anycuda's compiler emits buffer "
                                      "instructions only for private memory)")
        exec_mask = ctx.rexec()
        vdata, vaddr = ctx.inst_field(type(inst).vdata), ctx.inst_field(type(inst).vaddr)
        srsrc, soffset = ctx.inst_field(type(inst).srsrc) * c(4), ctx.inst_field(type(inst).soffset)
        offset, offen, idxen = ctx.inst_field(type(inst).offset), ctx.inst_field(type(inst).offen), ctx.inst_field(type(inst).idxen)
        use_acc = bool(emu._iattr(inst, "acc"))
        rv = ctx.raccvgpr_dyn if use_acc else ctx.rvgpr_dyn
        wv = ctx.waccvgpr_dyn if use_acc else ctx.wvgpr_dyn
        base = u64(ctx.rsgpr_dyn(srsrc), ctx.rsgpr_dyn(srsrc + c(1)) & c(0xFFFF))
        stride = ((ctx.rsgpr_dyn(srsrc + c(1)) >> c(16)) & c(0x3FFF)).cast(U64)
        add_tid = (ctx.rsgpr_dyn(srsrc + c(3)) >> c(23)) & c(1)
        lane = ctx.range()
        active = emu._lane_active(exec_mask, lane)
        soff = (soffset < c(128)).where(ctx.rsgpr_dyn(soffset), soffset - c(128)).cast(U64)
        index = idxen.ne(c(0)).where(ctx.rvgpr_dyn(vaddr, lane), c(0)).cast(U64)
        voff = offen.ne(c(0)).where(ctx.rvgpr_dyn(idxen.ne(c(0)).where(vaddr + c(1), vaddr), lane), c(0)).cast(U64)
        lane_bytes = ctx.rsgpr_dyn(c(emu.SCRATCH_STRIDE_IDX)).cast(U64)
        private = base + lane.cast(U64) * lane_bytes + (soff >> UOp.const(6, U64)) + voff + offset.cast(U64)
        linear = base + soff + stride * index + voff + offset.cast(U64)
        addr = add_tid.ne(c(0)).where(private, linear)
        mem = ctx.vmem
        stores = []
        if "STORE" in name:
            if "DWORD" in name:
                n = 1 if name.endswith("DWORD") else int(name[-1])
                for i in range(n):
                    stores += emu._mem_store(mem, addr + UOp.const(4 * i, U64), rv(vdata + c(i), lane), active, 64, 32)
            else:
                bits = 8 if "BYTE" in name else 16
                val = rv(vdata, lane)
                if name.endswith("D16_HI"):
                    val = val >> c(16)
                stores += emu._mem_store(mem, addr, val, active, 64, bits)
        elif "LOAD" in name:
            if "DWORD" in name:
                n = 1 if name.endswith("DWORD") else int(name[-1])
                for i in range(n):
                    word = mem.index(((addr + UOp.const(4 * i, U64)) >> UOp.const(2, U64)).valid(active)).load()
                    stores.append(wv(vdata + c(i), lane, word, exec_mask))
            else:
                bits = 8 if "BYTE" in name else 16
                word = mem.index((addr >> UOp.const(2, U64)).valid(active)).load()
                shift = (addr.cast(U32) & c(3)) * c(8)
                raw = (word >> shift) & c((1 << bits) - 1)
                signed = "SBYTE" in name or "SSHORT" in name
                if signed:
                    raw = (raw.cast(dtypes.int8 if bits == 8 else dtypes.int16).cast(dtypes.int32)).bitcast(U32)
                if "D16" in name:
                    old = rv(vdata, lane)
                    half = raw & c(0xFFFF)
                    val = (old & c(0xFFFF)) | (half << c(16)) if name.endswith("_HI") else (old & c(0xFFFF0000)) | half
                else:
                    val = raw
                stores.append(wv(vdata, lane, val, exec_mask))
        else:
            raise NotImplementedError(f"{name} is not emulated")
        return UOp.sink(UOp.group(*stores).end(lane), *ctx.inc_pc())

    return handler
