#include "isa/semantics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "isa/opcode_row.h"

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
        case alu_op::abs:  // |a|, b unused
            return std::fabs(a);
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

void alu_io::reduce_rows(alu_op op) {
    const operand& d = ins.dst;
    dst1.resize(ins.dst1.bytes());
    for (std::uint32_t p = 0; p < d.partitions; ++p) {
        float acc = stored(std::size_t{p} * d.elems);
        for (std::uint32_t j = 1; j < d.elems; ++j)
            acc = apply_alu(op, acc, stored(std::size_t{p} * d.elems + j));
        store_element(&dst1[p * dtype_size(ins.dst1.type)], ins.dst1.type, acc);
    }
}

void alu_io::reduce_through_registers(alu_op op) {
    const operand& d = ins.dst;
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
        float acc = stored(std::size_t{p} * d.elems);
        for (std::uint32_t j = 1; j < d.elems; ++j)
            acc = apply_alu(op, acc, stored(std::size_t{p} * d.elems + j));
        reg = (ins.flags & flag::reduce_accumulate) ? apply_alu(op, reg, acc) : acc;
    }
    if (ins.dst1.valid()) {
        dst1.resize(ins.dst1.bytes());
        for (std::uint32_t p = 0; p < d.partitions; ++p)
            store_element(&dst1[p * dtype_size(ins.dst1.type)], ins.dst1.type,
                          r[std::size_t{d.partition} + p]);
    }
}

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
    dst.resize(ins.dst.bytes());
    alu_io io{ins, src0, src1, src2,
              dst, dst1, regs, std::size_t{ins.dst.partitions} * ins.dst.elems};
    if (const auto run = row(ins.op).execute) run(io);
}

}  // namespace trn
