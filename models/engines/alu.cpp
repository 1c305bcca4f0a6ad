#include "engines/alu.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace trn {

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
        case alu_op::max:
            return std::max(a, b);
        case alu_op::min:
            return std::min(a, b);
    }
    return a;
}

void execute_alu(const instruction& ins, const std::vector<std::uint8_t>& src0,
                 const std::vector<std::uint8_t>& src1, std::vector<std::uint8_t>& dst) {
    const operand& d = ins.dst;
    dst.resize(d.bytes());
    const std::size_t ds = dtype_size(d.type);
    const std::size_t s0 = ins.src0.valid() ? dtype_size(ins.src0.type) : 0;
    const std::size_t s1 = ins.src1.valid() ? dtype_size(ins.src1.type) : 0;
    auto in0 = [&](std::size_t i) { return load_element(&src0[i * s0], ins.src0.type); };
    auto in1 = [&](std::size_t i) { return load_element(&src1[i * s1], ins.src1.type); };
    auto out = [&](std::size_t i, float v) { store_element(&dst[i * ds], d.type, v); };
    const std::size_t n = std::size_t{d.partitions} * d.elems;
    switch (ins.op) {
        case opcode::tensor_tensor:
            for (std::size_t i = 0; i < n; ++i)
                out(i, apply_alu(ins.alu, in0(i), in1(i)));
            break;
        case opcode::tensor_scalar:
            for (std::uint32_t p = 0; p < d.partitions; ++p) {
                const float s = ins.src1.valid() ? in1(p) : ins.imm;  // one per partition
                for (std::uint32_t j = 0; j < d.elems; ++j) {
                    const std::size_t i = std::size_t{p} * d.elems + j;
                    out(i, apply_alu(ins.alu1, apply_alu(ins.alu, in0(i), s), ins.imm1));
                }
            }
            break;
        case opcode::tensor_copy:
            for (std::size_t i = 0; i < n; ++i)
                out(i, in0(i));
            break;
        case opcode::scalar_tensor_tensor:
            for (std::size_t i = 0; i < n; ++i)
                out(i, apply_alu(ins.alu1, apply_alu(ins.alu, in0(i), ins.imm), in1(i)));
            break;
        case opcode::tensor_tensor_scan:
            for (std::uint32_t p = 0; p < d.partitions; ++p) {
                float prev = ins.imm;
                for (std::uint32_t j = 0; j < d.elems; ++j) {
                    const std::size_t i = std::size_t{p} * d.elems + j;
                    prev = apply_alu(ins.alu1, apply_alu(ins.alu, in0(i), prev), in1(i));
                    out(i, prev);
                }
            }
            break;
        case opcode::memset:
            for (std::size_t i = 0; i < n; ++i)
                out(i, ins.imm);
            break;
        case opcode::activation:  // func(src * scale + bias)
            for (std::size_t i = 0; i < n; ++i) {
                const float bias = ins.src1.valid() ? in1(i / d.elems) : 0.0f;
                const float x = in0(i) * (ins.imm == 0 ? 1.0f : ins.imm) + bias;
                out(i, apply_act(ins.func, x));
            }
            break;
        case opcode::tensor_reduce:
            for (std::uint32_t p = 0; p < d.partitions; ++p) {
                float acc = in0(std::size_t{p} * ins.src0.elems);
                for (std::uint32_t j = 1; j < ins.src0.elems; ++j)
                    acc = apply_alu(ins.alu, acc, in0(std::size_t{p} * ins.src0.elems + j));
                for (std::uint32_t j = 0; j < d.elems; ++j)
                    out(std::size_t{p} * d.elems + j, acc);
            }
            break;
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
        case opcode::dma_trigger:
        case opcode::matmul:
        case opcode::transpose:
            break;
    }
}

}  // namespace trn
