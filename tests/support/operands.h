#pragma once
// Operand builders for module tests.
#include "core/program.h"

namespace trn::testing {

// `rows` rows of `elems` elements at HBM byte `offset`, `stride` bytes apart.
inline operand hbm_op(dtype type, std::uint32_t rows, std::uint32_t elems, std::uint64_t offset,
                      std::uint64_t stride) {
    operand o;
    o.space = mem_space::hbm;
    o.type = type;
    o.partitions = rows;
    o.elems = elems;
    o.offset = offset;
    o.row_stride = stride;
    return o;
}

// Partitions [partition, partition + rows) of SBUF or PSUM at byte `offset`.
inline operand chip_op(mem_space space, dtype type, std::uint32_t partition, std::uint32_t rows,
                       std::uint32_t elems, std::uint64_t offset) {
    operand o;
    o.space = space;
    o.type = type;
    o.partition = partition;
    o.partitions = rows;
    o.elems = elems;
    o.offset = offset;
    return o;
}

}  // namespace trn::testing
