#pragma once
// Operand and instruction builders for tests.
#include <utility>
#include <vector>

#include "program/program.h"

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

// An engine instruction with its operands, immediate and semaphore waits.
inline instruction make_instruction(opcode code, alu_op alu, operand dst, operand src0 = {},
                                    operand src1 = {}, float imm = 0,
                                    std::vector<sem_wait> waits = {}) {
    instruction i;
    i.op = code;
    i.alu = alu;
    i.dst = dst;
    i.src0 = src0;
    i.src1 = src1;
    i.imm = imm;
    i.waits.assign(waits.begin(), waits.end());
    return i;
}

// A dma_trigger of DMA queue `queue`.
inline instruction trigger(std::uint16_t queue, std::vector<sem_wait> waits = {}) {
    instruction i;
    i.op = opcode::dma_trigger;
    i.queue = queue;
    i.waits.assign(waits.begin(), waits.end());
    return i;
}

}  // namespace trn::testing
