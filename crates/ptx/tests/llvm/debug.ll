; A kernel with debug information: LLVM writes `.file`, `.loc` (with
; `inlined_at` for the inlined helper) and the DWARF `.section`s.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define internal i32 @helper(i32 %x) !dbg !20 {
  %r = mul i32 %x, 3, !dbg !21
  ret i32 %r, !dbg !21
}

define void @scale(ptr addrspace(1) %p, i32 %n) !dbg !10 {
entry:
  call void @llvm.dbg.value(metadata i32 %n, metadata !14, metadata !DIExpression()), !dbg !15
  %v = load i32, ptr addrspace(1) %p, align 4, !dbg !15
  %h = mul i32 %v, 3, !dbg !22
  %s = add i32 %h, %n, !dbg !16
  store i32 %s, ptr addrspace(1) %p, align 4, !dbg !16
  ret void, !dbg !17
}

declare void @llvm.dbg.value(metadata, metadata, metadata)

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3, !4}
!nvvm.annotations = !{!5}

!0 = distinct !DICompileUnit(language: DW_LANG_C_plus_plus_14, file: !1, producer: "handwritten", isOptimized: true, runtimeVersion: 0, emissionKind: FullDebug)
!1 = !DIFile(filename: "scale.cu", directory: "/src")
!2 = !DIFile(filename: "helper.h", directory: "/src/include")
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = !{i32 7, !"Dwarf Version", i32 2}
!5 = !{ptr @scale, !"kernel", i32 1}
!10 = distinct !DISubprogram(name: "scale", scope: !1, file: !1, line: 5, type: !11, scopeLine: 5, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0, retainedNodes: !13)
!11 = !DISubroutineType(types: !12)
!12 = !{null, !18}
!13 = !{!14}
!14 = !DILocalVariable(name: "n", arg: 2, scope: !10, file: !1, line: 5, type: !18)
!15 = !DILocation(line: 6, column: 11, scope: !10)
!16 = !DILocation(line: 7, column: 5, scope: !10)
!17 = !DILocation(line: 8, column: 1, scope: !10)
!18 = !DIBasicType(name: "int", size: 32, encoding: DW_ATE_signed)
!20 = distinct !DISubprogram(name: "helper", scope: !2, file: !2, line: 2, type: !11, scopeLine: 2, spFlags: DISPFlagDefinition | DISPFlagOptimized | DISPFlagLocalToUnit, unit: !0)
!21 = !DILocation(line: 3, column: 12, scope: !20)
!22 = !DILocation(line: 3, column: 12, scope: !20, inlinedAt: !23)
!23 = !DILocation(line: 7, column: 9, scope: !10)
