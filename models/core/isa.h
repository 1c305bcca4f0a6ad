#pragma once
// The instruction set, declared once: every opcode, ALU operation, activation function and flag
// with its name, the trace format version that introduced it, and (opcodes) the fields it takes
// and its semantics. The enums (core/program.h), the trace reader and writer, the NKI
// recording, the cost table's input sizes and `sim --list-instructions` all read these lists.
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

// X(name, fields, since, input_sized, semantics): `since` the trace format version that
// introduced it; `input_sized`: its cost counts src0's free size N, not dst's (the output is
// smaller than the input).
#define TRN_OPCODES(X)                                                                             \
    X(tensor_tensor, field::dst | field::src0 | field::src1 | field::alu, 1, false,                \
      "dst = src0 alu src1")                                                                       \
    X(tensor_scalar,                                                                               \
      field::dst | field::src0 | field::src1 | field::src2 | field::alu | field::imm |             \
          field::alu1 | field::imm1 | field::flags,                                                \
      1, false,                                                                                    \
      "dst = (src0 alu s0) alu1 s1: s0 is imm or src1[p, 0], s1 imm1 or src2[p, 0]; "              \
      "flags=rev0 / rev1 swap an operation's operands")                                            \
    X(tensor_copy, field::dst | field::src0, 1, false, "dst = src0 (dtype converted)")             \
    X(memset, field::dst | field::imm, 1, false, "dst = imm")                                      \
    X(activation, field::dst | field::src0 | field::src1 | field::src2 | field::func | field::imm, \
      1, false,                                                                                    \
      "dst = func(src0 * scale + bias): scale is src2[p, 0] if given, else imm (0 means 1); "      \
      "bias src1[p, 0] if given, else 0")                                                          \
    X(tensor_reduce, field::dst | field::src0 | field::alu | field::flags, 1, true,                \
      "dst[p, j] = reduce alu over group j of src0[p, :] cut into dst's elems equal groups "       \
      "(dst [P, 1]: the whole row); flags=neg negates it")                                         \
    X(iota, field::dst | field::imm | field::imm1, 1, false, "dst[p, i] = imm + imm1 * p + i")     \
    X(dma_trigger, field::queue, 1, false, "starts the next transfer of DMA queue `queue`")        \
    X(matmul, field::dst | field::src0 | field::src1 | field::flags, 1, false,                     \
      "dst[m, n] (+)= sum over k of src0[k, m] * src1[k, n] (src0 stationary, src1 moving); "      \
      "flags=acc adds to dst, flags=double_row is the NeuronCore-v3 fp8 2x mode")                  \
    X(transpose, field::dst | field::src0, 1, false,                                               \
      "dst[f, p] = src0[p, f]: the Tensor engine into PSUM, or the Vector engine in blocks of "    \
      "32 x 32")                                                                                   \
    X(max8, field::dst | field::src0, 1, true,                                                     \
      "dst[p, 0..7] = the 8 largest values of src0[p, :], largest first")                          \
    X(find_index8, field::dst | field::src0 | field::src1, 1, true,                                \
      "dst[p, j] = the first i with src0[p, i] == src1[p, j] (-1: none)")                          \
    X(scalar_tensor_tensor,                                                                        \
      field::dst | field::src0 | field::src1 | field::alu | field::imm | field::alu1 |             \
          field::flags,                                                                            \
      2, false, "dst = (src0 alu imm) alu1 src1; flags=rev0 / rev1 swap an operation's operands")  \
    X(tensor_tensor_scan,                                                                          \
      field::dst | field::src0 | field::src1 | field::alu | field::imm | field::alu1 |             \
          field::flags,                                                                            \
      2, false,                                                                                    \
      "dst[p, i] = (src0[p, i] alu dst[p, i-1]) alu1 src1[p, i], dst[p, -1] = imm: a scan "        \
      "along the free axis")                                                                       \
    X(activation_reduce,                                                                           \
      field::dst | field::dst1 | field::src0 | field::src1 | field::src2 | field::func |           \
          field::imm | field::alu | field::flags,                                                  \
      3, false,                                                                                    \
      "activation, and the reduce alu over dst[p, :] into the Scalar engine's register of "        \
      "partition p (flags=racc: reduced onto it; rzero: zeroed, nothing reduced), copied to "      \
      "dst1[p, 0] when dst1 is given")                                                             \
    X(tensor_scalar_reduce,                                                                        \
      field::dst | field::dst1 | field::src0 | field::src1 | field::alu | field::imm |             \
          field::alu1 | field::flags,                                                              \
      3, false,                                                                                    \
      "dst = src0 alu (imm or src1[p, 0]), and dst1[p, 0] = reduce alu1 over dst[p, :] in the "    \
      "same pass; flags=rev0 swaps the operation's operands")                                      \
    X(affine_select,                                                                               \
      field::dst | field::src0 | field::alu | field::imm | field::imm1 | field::imm2 |             \
          field::imm3,                                                                             \
      3, false,                                                                                    \
      "dst[p, i] = src0[p, i] where (imm + imm1 * p + imm2 * i) alu 0 holds, else imm3 (a "        \
      "predicate the GpSimd engine computes element by element: a causal mask)")                   \
    X(bn_stats, field::dst | field::src0, 3, true,                                                 \
      "dst[p, 0..5] = the count, mean and squared deviations summed (variance * count) of the "    \
      "even, then the odd elements of src0[p, :] (at most 512), in fp32")                          \
    X(bn_aggr, field::dst | field::src0, 3, true,                                                  \
      "dst[p, 0..1] = the mean and variance of the (count, mean, variance * count) triples of "    \
      "src0[p, :] (bn_stats results), combined in fp32")                                           \
    X(select,                                                                                      \
      field::dst | field::dst1 | field::src0 | field::src1 | field::src2 | field::imm |            \
          field::alu | field::flags,                                                               \
      3, false,                                                                                    \
      "dst = src1 where src0 (the predicate) is not 0, else src2 (a tile of dst's shape or "       \
      "[P, 1]) or imm; flags=rev0 inverts the predicate; dst1[p, 0], if given, = the alu "         \
      "reduction of dst[p, :]")                                                                    \
    X(range_select,                                                                                \
      field::dst | field::dst1 | field::src0 | field::src1 | field::src2 | field::alu |            \
          field::alu1 | field::imm | field::imm1,                                                  \
      3, false,                                                                                    \
      "dst[p, i] = src0[p, i] where (i + imm) alu src1[p, 0] and (i + imm) alu1 src2[p, 0] "       \
      "both hold, else imm1; dst1[p, 0], if given, = the max of dst[p, :] (NeuronCore-v3)")        \
    X(exponential,                                                                                 \
      field::dst | field::dst1 | field::src0 | field::src1 | field::imm | field::flags, 3, false,  \
      "dst = exp(src0 - m), m = src1[p, 0] if given, else imm; with dst1, the sum of dst[p, :] "   \
      "through the Vector engine's reduce register of partition p (flags=racc: added onto it; "    \
      "rzero: zeroed, nothing reduced), copied to dst1[p, 0] (Vector engine, NeuronCore-v4)")      \
    X(reciprocal, field::dst | field::src0, 3, false,                                              \
      "dst = 1 / src0 on the Vector engine (more precise than the Scalar engine's, 8x slower)")    \
    X(topk, field::dst | field::dst1 | field::src0 | field::imm | field::imm1, 3, true,            \
      "per group of 16 partitions: the first imm elements of src0 read as a snake (element e at "  \
      "partition e % 16, column e / 16), sorted largest first (ties: the lower index first); "     \
      "result j (j < 16 * dst's columns, dst's columns = ceil(imm1 / 16)) into dst (its value) "   \
      "and dst1 (its index in the snake) at partition j % 16, column j / 16; past imm: -inf and "  \
      "index imm (GpSimd engine, NeuronCore-v3)")                                                  \
    X(core_barrier, field::imm, 3, false,                                                          \
      "barrier number imm (1, 2, ... in program order): signals the other cores of its HBM "       \
      "stack, then waits until each has reached its barrier of that number and its signal is "     \
      "seen (chip.barrier_latency later): nisa.core_barrier (NeuronCore-v3)")                      \
    X(matmul_mx,                                                                                   \
      field::dst | field::src0 | field::src1 | field::src2 | field::src3 | field::flags, 3, false, \
      "dst[m, n] (+)= sum over partitions p and packed values q of src0[p, m].q * 2^(s0 - 127) * " \
      "src1[p, n].q * 2^(s1 - 127): an MX matmul of x4-packed fp8/fp4 operands (src0 "             \
      "stationary, src1 moving); s0, s1 the scales (uint8 or fp8_e8m0) of src2 and src3 at "       \
      "partition 32 (p / 32) + (p % 32) / 8 of the scale and the element's column (8 partitions "  \
      "x 4 values share one); flags=acc adds to dst (Tensor engine, NeuronCore-v4)")               \
    X(quantize_mx, field::dst | field::dst1 | field::src0, 3, true,                                \
      "dst[p, j] packs src0[p, 4j .. 4j+3] / X in fp8 (x4; rounded to nearest even, saturated), "  \
      "X = 2^e shared by partitions 8g .. 8g+7 of column j, e = floor(log2(max |x|)) - (emax - "   \
      "1) (emax 8 for e4m3fn, 15 for e5m2; 2^-127 for a group of zeros), e + 127 stored in dst1 "  \
      "at partition 32 (p / 32) + (p % 32) / 8, column j (Vector engine, NeuronCore-v4)")

// X(name, since): the Vector/GpSimd ALU operations (all in fp32; the bitwise ones on the
// int32 value of their operands).
#define TRN_ALU_OPS(X)                                                                       \
    X(bypass, 1)                                                                             \
    X(add, 1)                                                                                \
    X(subtract, 1)                                                                           \
    X(multiply, 1)                                                                           \
    X(max, 1)                                                                                \
    X(min, 1)                                                                                \
    X(divide, 3)                                                                             \
    X(pow, 3)                                                                                \
    X(mod, 3)                                                                                \
    X(abs_max, 3)                                                                            \
    X(is_equal, 3)                                                                           \
    X(not_equal, 3)                                                                          \
    X(is_gt, 3)                                                                              \
    X(is_ge, 3) X(is_lt, 3) X(is_le, 3) X(logical_and, 3) X(logical_or, 3) X(logical_xor, 3) \
        X(bitwise_and, 3) X(bitwise_or, 3) X(bitwise_xor, 3) X(left_shift, 3) X(right_shift, 3)

// X(name, since): the Scalar engine's activation functions (gelu: the exact, erf form).
#define TRN_ACT_FUNCS(X)                                                                      \
    X(identity, 1)                                                                            \
    X(relu, 1)                                                                                \
    X(exp, 1)                                                                                 \
    X(reciprocal, 1)                                                                          \
    X(rsqrt, 2)                                                                               \
    X(sqrt, 2)                                                                                \
    X(square, 2)                                                                              \
    X(sigmoid, 2)                                                                             \
    X(tanh, 2)                                                                                \
    X(silu, 2)                                                                                \
    X(gelu, 2)                                                                                \
    X(log, 2)                                                                                 \
    X(gelu_apprx_tanh, 3)                                                                     \
    X(softplus, 3) X(mish, 3) X(sin, 3) X(cos, 3) X(arctan, 3) X(abs, 3) X(sign, 3) X(erf, 3) \
        X(gelu_dx, 3) X(silu_dx, 3) X(negative, 3) X(tan, 3) X(erf_dx, 3) X(gelu_apprx_sigmoid, 3)

}  // namespace trn
