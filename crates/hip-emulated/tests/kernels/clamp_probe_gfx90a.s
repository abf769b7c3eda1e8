// The clamp modifier on its own: out[i] = v_max_f32(in[i], in[i]) clamp,
// assembled rather than compiled from PTX, so that the test sees what the
// emulator does with the clamp bit whatever anycuda's compiler emits.
	.amdgcn_target "amdgcn-amd-amdhsa--gfx90a"
	.amdhsa_code_object_version 5
	.text
	.globl	clamp_probe
	.p2align	8
	.type	clamp_probe,@function
clamp_probe:
	s_load_dwordx4 s[4:7], s[0:1], 0x0
	v_and_b32_e32 v0, 0x3ff, v0
	v_lshlrev_b32_e32 v0, 2, v0
	s_waitcnt lgkmcnt(0)
	global_load_dword v1, v0, s[4:5]
	s_waitcnt vmcnt(0)
	v_max_f32_e64 v2, v1, v1 clamp
	global_store_dword v0, v2, s[6:7]
	s_endpgm
.Lend:
	.size	clamp_probe, .Lend-clamp_probe

	.rodata
	.p2align	6
	.amdhsa_kernel clamp_probe
		.amdhsa_user_sgpr_kernarg_segment_ptr 1
		.amdhsa_kernarg_size 16
		.amdhsa_next_free_vgpr 3
		.amdhsa_next_free_sgpr 8
		.amdhsa_float_denorm_mode_32 3
		.amdhsa_float_denorm_mode_16_64 3
		.amdhsa_accum_offset 4
	.end_amdhsa_kernel

	.amdgpu_metadata
---
amdhsa.kernels:
  - .args:
      - .address_space:  global
        .offset:         0
        .size:           8
        .value_kind:     global_buffer
      - .address_space:  global
        .offset:         8
        .size:           8
        .value_kind:     global_buffer
    .group_segment_fixed_size: 0
    .kernarg_segment_align: 8
    .kernarg_segment_size: 16
    .max_flat_workgroup_size: 256
    .name:           clamp_probe
    .private_segment_fixed_size: 0
    .sgpr_count:     8
    .symbol:         clamp_probe.kd
    .vgpr_count:     3
    .wavefront_size: 64
amdhsa.target:   amdgcn-amd-amdhsa--gfx90a
amdhsa.version:
  - 1
  - 2
...
	.end_amdgpu_metadata
