"""The public NKI API's names, per edition and namespace, as the API reference indexes list
them (awsdocs-neuron.readthedocs-hosted.com, `nki/api/nki*.rst` of the SDK named; dtypes the
module defines beside them): facts, to tell a name NKI has but trnsim does not support yet from
a name NKI does not have (a typo: "did you mean ...?"). Not what trnsim supports: that is the
registry (_registry)."""

import difflib

_BETA1_LANGUAGE = '''
abs add affine_range all all_reduce arange arctan atomic_rmw bfloat16 bitwise_and bitwise_or
bitwise_xor bool_ broadcast_to ceil copy cos device_print divide dropout ds empty_like equal erf
erf_dx exp expand_dims float16 float32 float8_e4m3 float8_e5m2 floor fmod fp32 full
gather_flattened gelu gelu_apprx_sigmoid gelu_apprx_tanh gelu_dx greater greater_equal hbm int16
int32 int8 invert left_shift less less_equal load load_transpose2d log logical_and logical_not
logical_or logical_xor loop_reduce matmul max maximum mean mgrid min minimum mish mod multiply nc
ndarray negative not_equal num_programs ones par_dim power private_hbm prod program_id
program_ndim psum rand random_seed reciprocal relu right_shift rms_norm rsqrt sbuf
sequential_range shared_constant shared_hbm shared_identity_matrix sigmoid sign silu silu_dx sin
softmax softplus spmd_dim sqrt square static_range store subtract sum tan tanh tfloat32
tile_size transpose trunc uint16 uint32 uint8 var where zeros zeros_like
static_cast'''  # (static_cast: a module attribute the SDK's own tests use, not in the index)

_BETA1_ISA = '''
activation activation_reduce affine_select bn_aggr bn_stats dge_mode dma_copy dma_transpose
dropout engine get_nc_version iota local_gather max8 memset nc_find_index8 nc_match_replace8
nc_matmul nc_stream_shuffle nc_transpose nc_version range_select reciprocal reduce_cmd
scalar_tensor_tensor select_reduce sequence_bounds tensor_copy tensor_copy_dynamic_dst
tensor_copy_dynamic_src tensor_copy_predicated tensor_partition_reduce tensor_reduce
tensor_scalar tensor_scalar_reduce tensor_tensor tensor_tensor_scan oob_mode
tensor_engine vector_engine scalar_engine gpsimd_engine unknown_engine'''

# SDK 2.33 (NKI 0.7), with what 2.29-2.32 listed and 0.7 still has
_NKI0_LANGUAGE = '''
abs abs_max abs_min add affine_range all arctan bfloat16 bitwise_and bitwise_or bitwise_xor
bool_ broadcast_to bypass ceil copy cos device_print dropout ds dynamic_range empty_like equal
erf erf_dx exp expand_dims float16 float32 float4_e2m1fn_x4 float8_e4m3 float8_e4m3fn
float8_e4m3fn_x4 float8_e5m2 float8_e5m2_x4 float8_e8m0fnu floor fori_loop full gather_flattened
gelu gelu_apprx_sigmoid gelu_apprx_sigmoid_dx gelu_apprx_tanh gelu_dx greater greater_equal hbm
int16 int32 int64 int8 invert is_hbm is_on_chip is_psum is_sbuf left_shift less less_equal load
load_transpose2d log logical_and logical_not logical_or logical_xor matmul max maximum mean min
minimum mish multiply ndarray negative NkiTensor no_reorder not_equal num_programs ones power
prelu private_hbm prod program_id program_ndim psum rand random_seed reciprocal relu
right_shift rms_norm rsqrt sbuf sequential_range shared_constant shared_hbm
shared_identity_matrix sigmoid sign silu silu_dx sin softmax softplus sqrt square static_range
store subtract sum tan tanh tfloat32 tile_size transpose trunc uint16 uint32 uint64 uint8 var
where while_loop zeros zeros_like alloc_tiles alloc_blocks Op
NKIObject'''  # (NKIObject: the language module's source, SDK 2.30-2.32)

_NKI0_ISA = '''
activate2 activation activation_reduce affine_select bn_aggr bn_stats core_barrier dge_mode
dma_compute dma_copy dma_engine dma_transpose dropout engine exponential get_nc_version iota
local_gather matmul_perf_mode max8 memset nc_find_index8 nc_match_replace8 nc_matmul
nc_matmul_mx nc_n_gather nc_stream_shuffle nc_transpose nc_version NkiScalar nonzero_with_count
oob_mode quantize_mx rand2 rand_get_state rand_set_state range_select reciprocal reduce_cmd
register_alloc register_load register_move register_store rng scalar_tensor_tensor
select_reduce sendrecv sequence_bounds set_rng_seed tensor_copy tensor_copy_predicated
tensor_partition_reduce tensor_reduce tensor_scalar tensor_scalar_cumulative
tensor_scalar_reduce tensor_tensor tensor_tensor_scan VirtualRegister scalar_load scalar_store
tensor_engine vector_engine scalar_engine gpsimd_engine unknown_engine topk'''  # (topk: 2.33's page)

# The dtypes of nki.language (0.x), also nki.language.dtypes / nki.dtype
_NKI0_DTYPES = '''
bfloat16 bool_ float16 float32 float4_e2m1fn_x4 float8_e4m3 float8_e4m3fn float8_e4m3fn_x4
float8_e5m2 float8_e5m2_x4 float8_e8m0fnu int16 int32 int64 int8 tfloat32 uint16 uint32 uint64
uint8'''
# namespace -> (SDK the list is from, names), per edition family
NAMES = {
    'beta1': {
        '': ('2.26.1', set('baremetal benchmark jit profile simulate_kernel tensor trace'
                           .split())),
        'language': ('2.26.1', set(_BETA1_LANGUAGE.split())),
        'isa': ('2.26.1', set(_BETA1_ISA.split())),
        'compiler': ('2.26.1', set('enable_stack_allocator force_auto_alloc psum sbuf '
                                   'skip_middle_end_transformations allocation_scope '
                                   'multi_buffer no_reorder'.split())),
        'typing': ('2.26.1', set('tensor mutable_tensor mutable immutable'.split())),
    },
    '0.x': {
        '': ('2.33', set('jit simulate'.split()) | {'cpu_simulate'}),  # (the NKI Library's)
        'language': ('2.33', set(_NKI0_LANGUAGE.split())),
        'isa': ('2.33', set(_NKI0_ISA.split())),
        'compiler': ('2.33', set('AddressRotation CompileConfig SpecializationConfig'.split())),
        'typing': ('2.33', set('tensor'.split())),
        # (not in the API reference: the entry point vLLM Neuron's CPU mode calls)
        'simulator': ('vLLM Neuron', {'simulate_kernel'}),
        # (not in the API reference: the modules the NKI Library's simulation harness imports,
        # and the names its kernels take from them; nki-autotune's summary reader)
        'isa.constants': ('the NKI Library', set('dge_mode oob_mode matmul_perf_mode engine '
                                                'nc_version reduce_cmd'.split())),
        'language.dtypes': ('the NKI Library', set(_NKI0_DTYPES.split())),
        'tensor': ('the NKI Library', {'NkiTensor'}),
        'builtin': ('the NKI Library', set()),
        'compiler.ncc_driver': ('nki-autotune', {'extract_perf_metrics'}),
        # (multi-rank: what the NKI Library's kernels call)
        'collectives': ('the NKI Library', set('ReplicaGroup all_gather all_reduce rank_id '
                                               'collective_permute_implicit collective_permute_'
                                               'implicit_current_processing_rank_id'.split())),
    },
}


def family(edition):
    return 'beta1' if edition == 'beta1' else '0.x'


def is_real(namespace, name, edition):
    """Whether NKI's reference has `name` in `namespace` (in the edition's family)."""
    return name in NAMES[family(edition)].get(namespace, ('', set()))[1]


def suggestion(namespace, name, edition, supported):
    """The nearest real name (from the reference and what trnsim supports), or None."""
    pool = set(NAMES[family(edition)].get(namespace, ('', set()))[1]) | set(supported)
    close = difflib.get_close_matches(name, sorted(pool), n=1, cutoff=0.75)
    return close[0] if close else None


def sdk(edition, namespace):
    return NAMES[family(edition)].get(namespace, ('?', set()))[0]
