#include "engines/alu.h"

#include <algorithm>

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
            for (std::size_t i = 0; i < n; ++i)
                out(i, apply_alu(ins.alu, in0(i), ins.imm));
            break;
        case opcode::tensor_copy:
            for (std::size_t i = 0; i < n; ++i)
                out(i, in0(i));
            break;
        case opcode::memset:
            for (std::size_t i = 0; i < n; ++i)
                out(i, ins.imm);
            break;
        case opcode::activation:  // func(src * scale); alu max means relu (max with 0)
            for (std::size_t i = 0; i < n; ++i) {
                const float x = in0(i) * (ins.imm == 0 ? 1.0f : ins.imm);
                out(i, ins.alu == alu_op::max ? std::max(x, 0.0f) : x);
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
                    out(std::size_t{p} * d.elems + j, static_cast<float>(p * d.elems + j));
            break;
        case opcode::dma_trigger:
        case opcode::matmul:
        case opcode::transpose:
            break;
    }
}

}  // namespace trn
