; Kernels for LLVM's NVPTX backend (llc -march=nvptx64): address spaces,
; shared memory, atomics, device calls, printf, function pointers, inline
; assembly and globals with address initializers.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

%struct.Pair = type { i32, float }
%struct.Mixed = type <{ i8, ptr, i32 }>

@counter = addrspace(1) global i32 0, align 4
@table = addrspace(4) constant [4 x float] [float 1.0, float 2.0, float 0.5, float -3.0], align 4
@fmt = private unnamed_addr addrspace(1) constant [12 x i8] c"value = %d\0A\00", align 1
@tile = internal addrspace(3) global [256 x float] undef, align 4
@dyn = external addrspace(3) global [0 x i8], align 16
@ptr_to_counter = addrspace(1) global ptr addrspacecast (ptr addrspace(1) @counter to ptr), align 8
@ptrs = addrspace(1) global [2 x ptr] [ptr addrspacecast (ptr addrspace(1) @counter to ptr), ptr addrspacecast (ptr addrspace(1) getelementptr (i8, ptr addrspace(1) @fmt, i64 4) to ptr)], align 8
@mixed = addrspace(1) global %struct.Mixed <{ i8 7, ptr addrspacecast (ptr addrspace(1) @counter to ptr), i32 9 }>, align 1
@fnptr = addrspace(1) global ptr @square, align 8

declare i32 @vprintf(ptr, ptr)
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare void @llvm.nvvm.barrier0()
declare float @llvm.nvvm.fma.rn.f(float, float, float)
declare float @llvm.sqrt.f32(float)
declare i32 @llvm.nvvm.shfl.sync.bfly.i32(i32, i32, i32, i32)
declare float @llvm.fabs.f32(float)
declare float @llvm.minnum.f32(float, float)

define internal float @square(float %x) {
  %r = fmul float %x, %x
  ret float %r
}

define internal float @cube(float %x) {
  %s = call float @square(float %x)
  %r = fmul float %s, %x
  ret float %r
}

define %struct.Pair @make_pair(i32 %a, float %b) noinline {
  %p0 = insertvalue %struct.Pair undef, i32 %a, 0
  %p1 = insertvalue %struct.Pair %p0, float %b, 1
  ret %struct.Pair %p1
}

define void @saxpy(float %a, ptr addrspace(1) %x, ptr addrspace(1) %y, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %base = mul i32 %ctaid, %ntid
  %i = add i32 %base, %tid
  %inb = icmp slt i32 %i, %n
  br i1 %inb, label %body, label %exit
body:
  %ix = sext i32 %i to i64
  %px = getelementptr float, ptr addrspace(1) %x, i64 %ix
  %py = getelementptr float, ptr addrspace(1) %y, i64 %ix
  %vx = load float, ptr addrspace(1) %px, align 4
  %vy = load float, ptr addrspace(1) %py, align 4
  %r = call float @llvm.nvvm.fma.rn.f(float %a, float %vx, float %vy)
  %q = call float @llvm.sqrt.f32(float %r)
  %ab = call float @llvm.fabs.f32(float %q)
  %mn = call float @llvm.minnum.f32(float %ab, float 1.0e+10)
  store float %mn, ptr addrspace(1) %py, align 4
  br label %exit
exit:
  ret void
}

define void @reduce(ptr addrspace(1) %in, ptr addrspace(1) %out) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %t64 = zext i32 %tid to i64
  %src = getelementptr float, ptr addrspace(1) %in, i64 %t64
  %v = load float, ptr addrspace(1) %src, align 4
  %slot = getelementptr [256 x float], ptr addrspace(3) @tile, i64 0, i64 %t64
  store float %v, ptr addrspace(3) %slot, align 4
  call void @llvm.nvvm.barrier0()
  %dslot = getelementptr i8, ptr addrspace(3) @dyn, i64 %t64
  store i8 1, ptr addrspace(3) %dslot, align 1
  %first = load float, ptr addrspace(3) @tile, align 4
  %bits = bitcast float %first to i32
  %sh = call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %bits, i32 16, i32 31)
  %old = atomicrmw add ptr addrspace(1) @counter, i32 %sh seq_cst
  %cas = cmpxchg ptr addrspace(1) @counter, i32 %old, i32 0 monotonic monotonic
  %fadd = atomicrmw fadd ptr addrspace(1) %out, float %first monotonic
  %tv = getelementptr [4 x float], ptr addrspace(4) @table, i64 0, i64 %t64
  %c = load float, ptr addrspace(4) %tv, align 4
  %fp = load ptr, ptr addrspace(1) @fnptr, align 8
  %called = call float %fp(float %c)
  %cubed = call float @cube(float %called)
  %pair = call %struct.Pair @make_pair(i32 %old, float %cubed)
  %pf = extractvalue %struct.Pair %pair, 1
  store float %pf, ptr addrspace(1) %out, align 4
  %buf = alloca i32, align 4
  store i32 %old, ptr %buf, align 4
  %fmtp = addrspacecast ptr addrspace(1) @fmt to ptr
  %pr = call i32 @vprintf(ptr %fmtp, ptr %buf)
  %asm = call i32 asm sideeffect "{\0A\09.reg .pred p;\0A\09setp.ne.u32 p, $1, 0;\0A\09selp.u32 $0, 1, 0, p;\0A\09}", "=r,r"(i32 %sh)
  store i32 %asm, ptr addrspace(1) @counter, align 4
  ret void
}

!nvvm.annotations = !{!0, !1, !2}
!0 = !{ptr @saxpy, !"kernel", i32 1}
!1 = !{ptr @reduce, !"kernel", i32 1}
!2 = !{ptr @reduce, !"maxntidx", i32 256}
