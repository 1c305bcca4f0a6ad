#include "engines/alu.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace trn {

namespace {

std::int32_t as_int(float v) {  // the int32 value of an operand of a bitwise operation
    if (!(v > -2147483648.0f)) return std::numeric_limits<std::int32_t>::min();
    if (!(v < 2147483648.0f)) return std::numeric_limits<std::int32_t>::max();
    return static_cast<std::int32_t>(v);
}

}  // namespace

float apply_alu(alu_op op, float a, float b) {
    switch (op) {
        case alu_op::bypass:
            return a;
        case alu_op::add:
            return a + b;
        case alu_op::subtract:
            return a - b;
        case alu_op::multiply:
            return a * b;
        case alu_op::max:  // a NaN operand gives NaN (numpy's maximum)
            return std::isnan(b) ? b : std::max(a, b);
        case alu_op::min:
            return std::isnan(b) ? b : std::min(a, b);
        case alu_op::divide:
            return a / b;
        case alu_op::pow:
            return std::pow(a, b);
        case alu_op::mod: {  // the sign of the divisor (numpy's mod)
            float m = std::fmod(a, b);
            if (m != 0.0f && ((b < 0.0f) != (m < 0.0f))) m += b;
            return m;
        }
        case alu_op::abs_max:
            return std::isnan(b) ? b : std::max(std::fabs(a), std::fabs(b));
        case alu_op::is_equal:
            return a == b ? 1.0f : 0.0f;
        case alu_op::not_equal:
            return a != b ? 1.0f : 0.0f;
        case alu_op::is_gt:
            return a > b ? 1.0f : 0.0f;
        case alu_op::is_ge:
            return a >= b ? 1.0f : 0.0f;
        case alu_op::is_lt:
            return a < b ? 1.0f : 0.0f;
        case alu_op::is_le:
            return a <= b ? 1.0f : 0.0f;
        case alu_op::logical_and:
            return (a != 0.0f && b != 0.0f) ? 1.0f : 0.0f;
        case alu_op::logical_or:
            return (a != 0.0f || b != 0.0f) ? 1.0f : 0.0f;
        case alu_op::logical_xor:
            return ((a != 0.0f) != (b != 0.0f)) ? 1.0f : 0.0f;
        case alu_op::bitwise_and:
            return static_cast<float>(as_int(a) & as_int(b));
        case alu_op::bitwise_or:
            return static_cast<float>(as_int(a) | as_int(b));
        case alu_op::bitwise_xor:
            return static_cast<float>(as_int(a) ^ as_int(b));
        case alu_op::left_shift: {
            const std::int32_t n = as_int(b);
            if (n < 0 || n > 31) return 0.0f;
            return static_cast<float>(static_cast<std::int32_t>(
                static_cast<std::uint32_t>(as_int(a)) << static_cast<std::uint32_t>(n)));
        }
        case alu_op::right_shift: {  // arithmetic: the sign is kept
            const std::int32_t n = as_int(b);
            if (n < 0) return 0.0f;
            return static_cast<float>(as_int(a) >> std::min(n, 31));
        }
    }
    return a;
}

namespace {

// op applied to (a, b), or to (b, a) when `reversed`.
float apply_ordered(alu_op op, float a, float b, bool reversed) {
    return reversed ? apply_alu(op, b, a) : apply_alu(op, a, b);
}

}  // namespace

void execute_alu(const instruction& ins, const std::vector<std::uint8_t>& src0,
                 const std::vector<std::uint8_t>& src1, std::vector<std::uint8_t>& dst) {
    static const std::vector<std::uint8_t> none;
    std::vector<std::uint8_t> unused;
    execute_alu(ins, src0, src1, none, dst, unused);
}

void execute_alu(const instruction& ins, const std::vector<std::uint8_t>& src0,
                 const std::vector<std::uint8_t>& src1, const std::vector<std::uint8_t>& src2,
                 std::vector<std::uint8_t>& dst, std::vector<std::uint8_t>& dst1,
                 std::vector<float>* regs) {
    const operand& d = ins.dst;
    dst.resize(d.bytes());
    const std::size_t ds = dtype_size(d.type);
    const std::size_t s0 = ins.src0.valid() ? dtype_size(ins.src0.type) : 0;
    const std::size_t s1 = ins.src1.valid() ? dtype_size(ins.src1.type) : 0;
    auto in0 = [&](std::size_t i) { return load_element(&src0[i * s0], ins.src0.type); };
    auto in1 = [&](std::size_t i) { return load_element(&src1[i * s1], ins.src1.type); };
    auto in2 = [&](std::size_t p) {  // src2[p, 0]
        return load_element(&src2[p * dtype_size(ins.src2.type)], ins.src2.type);
    };
    auto out = [&](std::size_t i, float v) { store_element(&dst[i * ds], d.type, v); };
    // dst's value as stored (rounded to its dtype), which the *_reduce opcodes reduce
    auto stored = [&](std::size_t i) { return load_element(&dst[i * ds], d.type); };
    const bool rev0 = ins.flags & flag::reverse0, rev1 = ins.flags & flag::reverse1;
    // dst1[p, 0] = the reduction `op` of dst[p, :]
    auto reduce_rows = [&](alu_op op) {
        dst1.resize(ins.dst1.bytes());
        for (std::uint32_t p = 0; p < d.partitions; ++p) {
            float acc = stored(std::size_t{p} * d.elems);
            for (std::uint32_t j = 1; j < d.elems; ++j)
                acc = apply_alu(op, acc, stored(std::size_t{p} * d.elems + j));
            store_element(&dst1[p * dtype_size(ins.dst1.type)], ins.dst1.type, acc);
        }
    };
    const std::size_t n = std::size_t{d.partitions} * d.elems;
    switch (ins.op) {
        case opcode::tensor_tensor:
            for (std::size_t i = 0; i < n; ++i)
                out(i, apply_alu(ins.alu, in0(i), in1(i)));
            break;
        case opcode::tensor_scalar:
        case opcode::tensor_scalar_reduce:
            for (std::uint32_t p = 0; p < d.partitions; ++p) {
                const float s = ins.src1.valid() ? in1(p) : ins.imm;  // one per partition
                const float t = ins.src2.valid() ? in2(p) : ins.imm1;
                for (std::uint32_t j = 0; j < d.elems; ++j) {
                    const std::size_t i = std::size_t{p} * d.elems + j;
                    const float v = apply_ordered(ins.alu, in0(i), s, rev0);
                    out(i, ins.op == opcode::tensor_scalar_reduce
                               ? v
                               : apply_ordered(ins.alu1, v, t, rev1 && ins.alu1 != alu_op::bypass));
                }
            }
            if (ins.op == opcode::tensor_scalar_reduce) reduce_rows(ins.alu1);
            break;
        case opcode::tensor_copy:
            for (std::size_t i = 0; i < n; ++i)
                out(i, in0(i));
            break;
        case opcode::reciprocal:
            for (std::size_t i = 0; i < n; ++i)
                out(i, 1.0f / in0(i));
            break;
        case opcode::topk: {  // per group of 16 partitions, the snake sorted largest first
            const auto total = static_cast<std::uint32_t>(ins.imm);
            const std::uint32_t slots = 16 * d.elems, c0 = ins.src0.elems;
            dst1.resize(ins.dst1.bytes());
            const std::size_t s1 = dtype_size(ins.dst1.type);
            std::vector<std::uint32_t> order(total);
            for (std::uint32_t g = 0; g < d.partitions; g += 16) {
                auto at = [&](std::uint32_t e) {
                    return in0(std::size_t{g + e % 16} * c0 + e / 16);
                };
                for (std::uint32_t e = 0; e < total; ++e)
                    order[e] = e;
                std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
                    const float x = at(a), y = at(b);  // NaN the least (a model choice)
                    return !std::isnan(x) && (std::isnan(y) || x > y);
                });
                for (std::uint32_t j = 0; j < slots; ++j) {
                    const std::size_t i = std::size_t{g + j % 16} * d.elems + j / 16;
                    out(i, j < total ? at(order[j]) : -std::numeric_limits<float>::infinity());
                    store_element(&dst1[i * s1], ins.dst1.type,
                                  static_cast<float>(j < total ? order[j] : total));
                }
            }
            break;
        }
        case opcode::quantize_mx: {  // 8 partitions x one packed column (32 values) share a scale
            // dst1 holds what its rows held (the engine reads it first): only the scale rows,
            // 4 of each 32 partitions, are written.
            dst1.resize(ins.dst1.bytes());
            const int emax = d.type == dtype::fp8_e4m3fn_x4 ? 8 : 15;
            const std::uint32_t c0 = ins.src0.elems;
            for (std::uint32_t g = 0; g < d.partitions / 8; ++g)
                for (std::uint32_t j = 0; j < d.elems; ++j) {
                    float amax = 0;  // (a NaN is its own element's: a model choice)
                    for (std::uint32_t p = 8 * g; p < 8 * g + 8; ++p)
                        for (std::uint32_t q = 0; q < 4; ++q) {
                            const float v = std::fabs(in0(std::size_t{p} * c0 + 4 * j + q));
                            if (v > amax) amax = v;
                        }
                    // X = 2^(floor(log2 amax) - (emax - 1)): twice the OCP scale, so that the
                    // largest values round without saturating; 2^-127 for a group of zeros
                    int e = -127;
                    if (amax > 0) {
                        int x = 0;
                        std::frexp(std::min(amax, std::numeric_limits<float>::max()), &x);
                        e = std::clamp(x - 1 - (emax - 1), -127, 127);
                    }
                    dst1[std::size_t{32 * (g / 4) + g % 4} * ins.dst1.elems + j] =
                        static_cast<std::uint8_t>(e + 127);
                    const float inv = std::ldexp(1.0f, -e);
                    for (std::uint32_t p = 8 * g; p < 8 * g + 8; ++p)
                        for (std::uint32_t q = 0; q < 4; ++q)
                            store_packed_value(&dst[(std::size_t{p} * d.elems + j) * ds], d.type,
                                               static_cast<int>(q),
                                               in0(std::size_t{p} * c0 + 4 * j + q) * inv);
                }
            break;
        }
        case opcode::range_select:  // the element's free index against per-partition bounds
            for (std::uint32_t p = 0; p < d.partitions; ++p) {
                const float lo = in1(p), hi = in2(p);
                for (std::uint32_t j = 0; j < d.elems; ++j) {
                    const std::size_t i = std::size_t{p} * d.elems + j;
                    const float at = static_cast<float>(j) + ins.imm;
                    const bool keep =
                        apply_alu(ins.alu, at, lo) != 0.0f && apply_alu(ins.alu1, at, hi) != 0.0f;
                    out(i, keep ? in0(i) : ins.imm1);
                }
            }
            if (ins.dst1.valid()) reduce_rows(alu_op::max);
            break;
        case opcode::select: {  // src2 [P, 1], of dst's shape, or imm
            const bool per_partition = ins.src2.valid() && ins.src2.elems == 1 && d.elems > 1;
            const std::size_t s2 = ins.src2.valid() ? dtype_size(ins.src2.type) : 0;
            for (std::size_t i = 0; i < n; ++i) {
                const bool keep = (in0(i) != 0.0f) != rev0;
                const float other =
                    !ins.src2.valid() ? ins.imm
                                      : load_element(&src2[(per_partition ? i / d.elems : i) * s2],
                                                     ins.src2.type);
                out(i, keep ? in1(i) : other);
            }
            if (ins.dst1.valid()) reduce_rows(ins.alu);
            break;
        }
        case opcode::bn_stats:  // per half: count, mean, sum of squared deviations
            for (std::uint32_t p = 0; p < d.partitions; ++p)
                for (std::uint32_t half = 0; half < 2; ++half) {
                    const std::size_t row = std::size_t{p} * ins.src0.elems;
                    float count = 0, sum = 0;
                    for (std::uint32_t j = half; j < ins.src0.elems; j += 2) {
                        sum += in0(row + j);
                        count += 1;
                    }
                    const float mean = count > 0 ? sum / count : 0.0f;
                    float m2 = 0;
                    for (std::uint32_t j = half; j < ins.src0.elems; j += 2) {
                        const float dev = in0(row + j) - mean;
                        m2 += dev * dev;
                    }
                    out(std::size_t{p} * 6 + 3 * half, count);
                    out(std::size_t{p} * 6 + 3 * half + 1, mean);
                    out(std::size_t{p} * 6 + 3 * half + 2, m2);
                }
            break;
        case opcode::bn_aggr:  // the triples combined (Chan et al.'s parallel variance)
            for (std::uint32_t p = 0; p < d.partitions; ++p) {
                const std::size_t row = std::size_t{p} * ins.src0.elems;
                const std::uint32_t k = ins.src0.elems / 3;
                float count = 0, weighted = 0;
                for (std::uint32_t t = 0; t < k; ++t) {
                    count += in0(row + 3 * t);
                    weighted += in0(row + 3 * t) * in0(row + 3 * t + 1);
                }
                const float mean = count > 0 ? weighted / count : 0.0f;
                float m2 = 0;
                for (std::uint32_t t = 0; t < k; ++t) {
                    const float n = in0(row + 3 * t), dev = in0(row + 3 * t + 1) - mean;
                    if (n > 0) m2 += in0(row + 3 * t + 2) + n * dev * dev;
                }
                out(std::size_t{p} * 2, mean);
                out(std::size_t{p} * 2 + 1, count > 0 ? m2 / count : 0.0f);
            }
            break;
        case opcode::affine_select:  // the predicate in double: exact for integer steps
            for (std::uint32_t p = 0; p < d.partitions; ++p)
                for (std::uint32_t j = 0; j < d.elems; ++j) {
                    const std::size_t i = std::size_t{p} * d.elems + j;
                    const double v = double{ins.imm} + double{ins.imm1} * p + double{ins.imm2} * j;
                    out(i, apply_alu(ins.alu, static_cast<float>(v), 0.0f) != 0.0f ? in0(i)
                                                                                   : ins.imm3);
                }
            break;
        case opcode::scalar_tensor_tensor:
            for (std::size_t i = 0; i < n; ++i)
                out(i, apply_ordered(ins.alu1, apply_ordered(ins.alu, in0(i), ins.imm, rev0),
                                     in1(i), rev1));
            break;
        case opcode::tensor_tensor_scan:
            for (std::uint32_t p = 0; p < d.partitions; ++p) {
                float prev = ins.imm;
                for (std::uint32_t j = 0; j < d.elems; ++j) {
                    const std::size_t i = std::size_t{p} * d.elems + j;
                    prev = apply_ordered(ins.alu1, apply_ordered(ins.alu, in0(i), prev, rev0),
                                         in1(i), rev1);
                    out(i, prev);
                }
            }
            break;
        case opcode::memset:
            for (std::size_t i = 0; i < n; ++i)
                out(i, ins.imm);
            break;
        case opcode::activation:  // func(src * scale + bias)
        case opcode::activation_reduce:
        case opcode::exponential:  // exp(src - m)
            for (std::size_t i = 0; i < n; ++i) {
                const std::size_t p = i / d.elems;
                if (ins.op == opcode::exponential) {
                    out(i,
                        apply_act(act_func::exp, in0(i) - (ins.src1.valid() ? in1(p) : ins.imm)));
                    continue;
                }
                const float bias = ins.src1.valid() ? in1(p) : 0.0f;
                const float scale = ins.src2.valid() ? in2(p) : (ins.imm == 0 ? 1.0f : ins.imm);
                out(i, apply_act(ins.func, in0(i) * scale + bias));
            }
            if (ins.op == opcode::activation_reduce ||  // through the reduce registers
                (ins.op == opcode::exponential &&
                 (ins.dst1.valid() ||
                  (ins.flags & (flag::reduce_accumulate | flag::reduce_reset))))) {
                std::vector<float> own;
                std::vector<float>& r = regs ? *regs : own;
                if (r.size() < std::size_t{d.partition} + d.partitions)
                    r.resize(std::size_t{d.partition} + d.partitions, 0.0f);
                for (std::uint32_t p = 0; p < d.partitions; ++p) {
                    float& reg = r[std::size_t{d.partition} + p];
                    if (ins.flags & flag::reduce_reset) {
                        reg = 0.0f;
                        continue;
                    }
                    const alu_op ralu = ins.op == opcode::exponential ? alu_op::add : ins.alu;
                    float acc = stored(std::size_t{p} * d.elems);
                    for (std::uint32_t j = 1; j < d.elems; ++j)
                        acc = apply_alu(ralu, acc, stored(std::size_t{p} * d.elems + j));
                    reg = (ins.flags & flag::reduce_accumulate) ? apply_alu(ralu, reg, acc) : acc;
                }
                if (ins.dst1.valid()) {
                    dst1.resize(ins.dst1.bytes());
                    for (std::uint32_t p = 0; p < d.partitions; ++p)
                        store_element(&dst1[p * dtype_size(ins.dst1.type)], ins.dst1.type,
                                      r[std::size_t{d.partition} + p]);
                }
            }
            break;
        case opcode::tensor_reduce: {  // dst.elems groups of src0's row
            const std::uint32_t group = ins.src0.elems / d.elems;
            const bool negate = ins.flags & flag::negate;
            for (std::uint32_t p = 0; p < d.partitions; ++p)
                for (std::uint32_t j = 0; j < d.elems; ++j) {
                    const std::size_t first =
                        std::size_t{p} * ins.src0.elems + std::size_t{j} * group;
                    float acc = in0(first);
                    for (std::uint32_t k = 1; k < group; ++k)
                        acc = apply_alu(ins.alu, acc, in0(first + k));
                    out(std::size_t{p} * d.elems + j, negate ? -acc : acc);
                }
            break;
        }
        case opcode::iota:
            for (std::uint32_t p = 0; p < d.partitions; ++p)
                for (std::uint32_t j = 0; j < d.elems; ++j)
                    out(std::size_t{p} * d.elems + j,
                        static_cast<float>(static_cast<double>(ins.imm) +
                                           static_cast<double>(ins.imm1) * p + j));
            break;
        case opcode::max8:
            for (std::uint32_t p = 0; p < d.partitions; ++p) {
                std::vector<float> row(ins.src0.elems);
                for (std::uint32_t j = 0; j < ins.src0.elems; ++j)
                    row[j] = in0(std::size_t{p} * ins.src0.elems + j);
                std::partial_sort(row.begin(), row.begin() + 8, row.end(), std::greater<float>());
                for (std::uint32_t j = 0; j < 8; ++j)
                    out(std::size_t{p} * 8 + j, row[j]);
            }
            break;
        case opcode::find_index8:
            for (std::uint32_t p = 0; p < d.partitions; ++p)
                for (std::uint32_t j = 0; j < 8; ++j) {
                    const float want = in1(std::size_t{p} * 8 + j);
                    std::int64_t at = -1;  // not found
                    for (std::uint32_t i = 0; i < ins.src0.elems; ++i)
                        if (in0(std::size_t{p} * ins.src0.elems + i) == want) {
                            at = i;
                            break;
                        }
                    out(std::size_t{p} * 8 + j, static_cast<float>(at));
                }
            break;
        case opcode::transpose:  // the Vector engine's (the Tensor engine's is tensor_engine's)
            for (std::uint32_t f = 0; f < d.partitions; ++f)
                for (std::uint32_t p = 0; p < d.elems; ++p)
                    out(std::size_t{f} * d.elems + p, in0(std::size_t{p} * ins.src0.elems + f));
            break;
        case opcode::dma_trigger:
        case opcode::matmul:
        case opcode::matmul_mx:
        case opcode::core_barrier:
            break;
    }
}

}  // namespace trn
