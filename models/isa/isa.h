#pragma once
// The instruction set's names, each declared once: the fields a trace line may give, the opcodes
// (in the order of their rows, isa/opcode_row.h, which hold everything else about each), the
// ALU operations and the activation functions with the trace format version that introduced
// each. The enums (program/program.h), the trace reader and writer, the NKI recording and `sim
// --list-instructions` read these lists.
#include <cstdint>

namespace trn {

// The fields of an instruction a trace line may give (besides wait=).
namespace field {
constexpr std::uint16_t dst = 1 << 0, src0 = 1 << 1, src1 = 1 << 2, src2 = 1 << 3, dst1 = 1 << 4,
                        alu = 1 << 5, imm = 1 << 6, alu1 = 1 << 7, imm1 = 1 << 8, func = 1 << 9,
                        flags = 1 << 10, queue = 1 << 11, imm2 = 1 << 12, imm3 = 1 << 13,
                        src3 = 1 << 14;
}  // namespace field
// Each field's trace name and the trace format version that introduced it.
struct field_info {
    const char* name;
    std::uint16_t bit;
    int since;
};
constexpr field_info all_fields[] = {
    {"dst", field::dst, 1},   {"src0", field::src0, 1},   {"src1", field::src1, 1},
    {"src2", field::src2, 3}, {"dst1", field::dst1, 3},   {"alu", field::alu, 1},
    {"imm", field::imm, 1},   {"alu1", field::alu1, 2},   {"imm1", field::imm1, 2},
    {"func", field::func, 1}, {"flags", field::flags, 1}, {"queue", field::queue, 1},
    {"imm2", field::imm2, 3}, {"imm3", field::imm3, 3},   {"src3", field::src3, 3},
};

// X(name): every opcode; its row is isa/ROW_FILE.cpp's row_of_NAME().
#define TRN_OPCODES(X)      \
    X(tensor_tensor)        \
    X(tensor_scalar)        \
    X(tensor_copy)          \
    X(memset)               \
    X(activation)           \
    X(tensor_reduce)        \
    X(iota)                 \
    X(dma_trigger)          \
    X(matmul)               \
    X(transpose)            \
    X(max8)                 \
    X(find_index8)          \
    X(scalar_tensor_tensor) \
    X(tensor_tensor_scan)   \
    X(activation_reduce)    \
    X(tensor_scalar_reduce) \
    X(affine_select)        \
    X(bn_stats)             \
    X(bn_aggr)              \
    X(select)               \
    X(range_select)         \
    X(exponential)          \
    X(reciprocal)           \
    X(topk)                 \
    X(core_barrier)         \
    X(matmul_mx)            \
    X(quantize_mx)          \
    X(match_replace8)       \
    X(stream_shuffle)       \
    X(register_load)        \
    X(register_store)       \
    X(register_move)        \
    X(nonzero_count)

// X(name, since): the Vector/GpSimd ALU operations (all in fp32; the bitwise ones on the
// int32 value of their operands).
#define TRN_ALU_OPS(X) \
    X(bypass, 1)       \
    X(add, 1)          \
    X(subtract, 1)     \
    X(multiply, 1)     \
    X(max, 1)          \
    X(min, 1)          \
    X(divide, 3)       \
    X(pow, 3)          \
    X(mod, 3)          \
    X(abs_max, 3)      \
    X(abs, 7)          \
    X(is_equal, 3)     \
    X(not_equal, 3)    \
    X(is_gt, 3)        \
    X(is_ge, 3)        \
    X(is_lt, 3)        \
    X(is_le, 3)        \
    X(logical_and, 3)  \
    X(logical_or, 3)   \
    X(logical_xor, 3)  \
    X(bitwise_and, 3) X(bitwise_or, 3) X(bitwise_xor, 3) X(left_shift, 3) X(right_shift, 3)

// X(name, since): the Scalar engine's activation functions (gelu: the exact, erf form).
#define TRN_ACT_FUNCS(X)  \
    X(identity, 1)        \
    X(relu, 1)            \
    X(exp, 1)             \
    X(reciprocal, 1)      \
    X(rsqrt, 2)           \
    X(sqrt, 2)            \
    X(square, 2)          \
    X(sigmoid, 2)         \
    X(tanh, 2)            \
    X(silu, 2)            \
    X(gelu, 2)            \
    X(log, 2)             \
    X(gelu_apprx_tanh, 3) \
    X(softplus, 3)        \
    X(mish, 3)            \
    X(sin, 3)             \
    X(cos, 3)             \
    X(arctan, 3)          \
    X(abs, 3)             \
    X(sign, 3)            \
    X(erf, 3)             \
    X(gelu_dx, 3) X(silu_dx, 3) X(negative, 3) X(tan, 3) X(erf_dx, 3) X(gelu_apprx_sigmoid, 3)

}  // namespace trn
