; NVVM intrinsics that lower to the wider instruction set: matrix loads and
; mma, async copies, warp collectives, scoped atomics, textures, surfaces,
; mbarriers, a switch and dynamic stack allocation.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@smem = internal addrspace(3) global [1024 x i8] undef, align 16
@bar = internal addrspace(3) global i64 undef, align 8

declare { i32, i32, i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3))
declare { float, float, float, float } @llvm.nvvm.mma.m16n8k16.row.col.f32.f32(<2 x half>, <2 x half>, <2 x half>, <2 x half>, <2 x half>, <2 x half>, float, float, float, float)
declare void @llvm.nvvm.cp.async.cg.shared.global.16(ptr addrspace(3), ptr addrspace(1))
declare void @llvm.nvvm.cp.async.commit.group()
declare void @llvm.nvvm.cp.async.wait.group(i32)
declare i32 @llvm.nvvm.vote.ballot.sync(i32, i1)
declare i32 @llvm.nvvm.match.any.sync.i32(i32, i32)
declare i32 @llvm.nvvm.redux.sync.add(i32, i32)
declare i32 @llvm.nvvm.atomic.add.gen.i.cta.i32.p0(ptr, i32)
declare { float, float, float, float } @llvm.nvvm.tex.unified.2d.v4f32.f32(i64, float, float)
declare i32 @llvm.nvvm.suld.2d.i32.trap(i64, i32, i32)
declare void @llvm.nvvm.sust.b.2d.i32.clamp(i64, i32, i32, i32)
declare void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3), i32)
declare i64 @llvm.nvvm.mbarrier.arrive.shared(ptr addrspace(3))
declare i1 @llvm.nvvm.mbarrier.test.wait.shared(ptr addrspace(3), i64)
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare half @llvm.fma.f16(half, half, half)
declare bfloat @llvm.maxnum.bf16(bfloat, bfloat)
declare float @llvm.nvvm.ex2.approx.ftz.f(float)
declare i32 @llvm.nvvm.prmt(i32, i32, i32)
declare i32 @llvm.fshl.i32(i32, i32, i32)
declare i32 @llvm.ctpop.i32(i32)
declare i32 @llvm.bitreverse.i32(i32)

define void @matrix(ptr addrspace(1) %g, ptr addrspace(1) %out, i64 %tex, i64 %surf, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %off = zext i32 %tid to i64
  %dst = getelementptr i8, ptr addrspace(3) @smem, i64 %off
  %src = getelementptr i8, ptr addrspace(1) %g, i64 %off
  call void @llvm.nvvm.cp.async.cg.shared.global.16(ptr addrspace(3) %dst, ptr addrspace(1) %src)
  call void @llvm.nvvm.cp.async.commit.group()
  call void @llvm.nvvm.cp.async.wait.group(i32 0)
  %frag = call { i32, i32, i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %dst)
  %a0 = extractvalue { i32, i32, i32, i32 } %frag, 0
  %a1 = extractvalue { i32, i32, i32, i32 } %frag, 1
  %h0 = bitcast i32 %a0 to <2 x half>
  %h1 = bitcast i32 %a1 to <2 x half>
  %acc = call { float, float, float, float } @llvm.nvvm.mma.m16n8k16.row.col.f32.f32(<2 x half> %h0, <2 x half> %h1, <2 x half> %h0, <2 x half> %h1, <2 x half> %h0, <2 x half> %h1, float 0.0, float 0.0, float 0.0, float 0.0)
  %d0 = extractvalue { float, float, float, float } %acc, 0
  %ballot = call i32 @llvm.nvvm.vote.ballot.sync(i32 -1, i1 true)
  %match = call i32 @llvm.nvvm.match.any.sync.i32(i32 -1, i32 %ballot)
  %sum = call i32 @llvm.nvvm.redux.sync.add(i32 %match, i32 -1)
  %gp = addrspacecast ptr addrspace(1) %out to ptr
  %old = call i32 @llvm.nvvm.atomic.add.gen.i.cta.i32.p0(ptr %gp, i32 %sum)
  %texel = call { float, float, float, float } @llvm.nvvm.tex.unified.2d.v4f32.f32(i64 %tex, float %d0, float 0.5)
  %t0 = extractvalue { float, float, float, float } %texel, 0
  %s = call i32 @llvm.nvvm.suld.2d.i32.trap(i64 %surf, i32 %tid, i32 0)
  call void @llvm.nvvm.sust.b.2d.i32.clamp(i64 %surf, i32 %tid, i32 1, i32 %s)
  call void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3) @bar, i32 32)
  %state = call i64 @llvm.nvvm.mbarrier.arrive.shared(ptr addrspace(3) @bar)
  %done = call i1 @llvm.nvvm.mbarrier.test.wait.shared(ptr addrspace(3) @bar, i64 %state)
  %hf = fptrunc float %t0 to half
  %fh = call half @llvm.fma.f16(half %hf, half %hf, half %hf)
  %bf = fptrunc float %d0 to bfloat
  %mb = call bfloat @llvm.maxnum.bf16(bfloat %bf, bfloat %bf)
  %e = call float @llvm.nvvm.ex2.approx.ftz.f(float %t0)
  %pm = call i32 @llvm.nvvm.prmt(i32 %old, i32 %s, i32 12816)
  %rot = call i32 @llvm.fshl.i32(i32 %pm, i32 %pm, i32 %n)
  %pc = call i32 @llvm.ctpop.i32(i32 %rot)
  %br = call i32 @llvm.bitreverse.i32(i32 %pc)
  %dyn = alloca i32, i32 %n, align 16
  store volatile i32 %br, ptr %dyn, align 16
  %fhe = fpext half %fh to float
  %mbe = fpext bfloat %mb to float
  %x1 = fadd float %fhe, %mbe
  %x2 = fadd float %x1, %e
  %outf = getelementptr float, ptr addrspace(1) %out, i64 %off
  store float %x2, ptr addrspace(1) %outf, align 4
  %sel = select i1 %done, i32 %br, i32 0
  store i32 %sel, ptr addrspace(1) %out, align 4
  %v = load <4 x float>, ptr addrspace(1) %g, align 16
  store <4 x float> %v, ptr addrspace(1) %out, align 16
  switch i32 %n, label %exit [ i32 0, label %a
                                i32 1, label %b
                                i32 2, label %c
                                i32 3, label %d ]
a:
  store i32 10, ptr addrspace(1) %out, align 4
  br label %exit
b:
  store i32 11, ptr addrspace(1) %out, align 4
  br label %exit
c:
  store i32 12, ptr addrspace(1) %out, align 4
  br label %exit
d:
  store i32 13, ptr addrspace(1) %out, align 4
  br label %exit
exit:
  ret void
}

!nvvm.annotations = !{!0, !1}
!0 = !{ptr @matrix, !"kernel", i32 1}
!1 = !{ptr @matrix, !"minctasm", i32 2}
