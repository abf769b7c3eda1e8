; cpus: sm_90a
; Cluster operations (sm_90): cluster barriers, the CTA rank in the
; cluster, distributed shared memory addresses and cluster dimensions.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare void @llvm.nvvm.barrier.cluster.arrive()
declare void @llvm.nvvm.barrier.cluster.wait()
declare ptr @llvm.nvvm.mapa(ptr, i32)
declare i32 @llvm.nvvm.read.ptx.sreg.cluster.ctarank()
declare i32 @llvm.nvvm.read.ptx.sreg.cluster.nctarank()
declare i32 @llvm.nvvm.read.ptx.sreg.clusterid.x()

define void @cluster(ptr %p) {
  call void @llvm.nvvm.barrier.cluster.arrive()
  call void @llvm.nvvm.barrier.cluster.wait()
  %rank = call i32 @llvm.nvvm.read.ptx.sreg.cluster.ctarank()
  %q = call ptr @llvm.nvvm.mapa(ptr %p, i32 %rank)
  %n = call i32 @llvm.nvvm.read.ptx.sreg.cluster.nctarank()
  %id = call i32 @llvm.nvvm.read.ptx.sreg.clusterid.x()
  %s = add i32 %n, %id
  store i32 %s, ptr %q, align 4
  ret void
}

!nvvm.annotations = !{!0, !1, !2}
!0 = !{ptr @cluster, !"kernel", i32 1}
!1 = !{ptr @cluster, !"cluster_dim_x", i32 2}
!2 = !{ptr @cluster, !"maxclusterrank", i32 8}
