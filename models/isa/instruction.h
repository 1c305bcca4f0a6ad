#pragma once
// The instruction set's vocabulary: engines, memories, operands, opcodes, semaphores and the
// instruction itself, with the checks of one instruction against the platform.
#include <array>
#include <cstdint>
#include <functional>
#include <iterator>
#include <string>
// GCC 11+ misreads the inline buffer's moves as over-reads (-Wstringop-overread).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
#include <boost/container/small_vector.hpp>
#pragma GCC diagnostic pop
#else
#include <boost/container/small_vector.hpp>
#endif
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "isa/isa.h"

namespace trn {

// The instruction streams of the NeuronCore: one per engine.
enum class engine_kind : std::uint8_t { pe, dve, act, pool, sp };
constexpr std::size_t engine_count = 5;
const char* engine_name(engine_kind e);
constexpr std::array<engine_kind, engine_count> all_engines{
    engine_kind::pe, engine_kind::dve, engine_kind::act, engine_kind::pool, engine_kind::sp};

enum class mem_space : std::uint8_t { hbm, sbuf, psum };
const char* mem_space_name(mem_space s);

// A 2-D operand: `partitions` rows of `elems` elements, `elem_stride` elements apart (1:
// contiguous). On chip (SBUF, PSUM) row r is partition `partition + r` at byte `offset` inside
// it. In HBM, row r starts at byte `offset + r * row_stride`.
// Packed into 32 bytes (programs hold hundreds of thousands): the first partition is 16 bits,
// enough for any SBUF (core.sbuf.partitions is at most 1024).
struct operand {
    std::uint64_t offset = 0;
    std::uint64_t row_stride = 0;
    std::uint32_t partitions = 0;
    std::uint32_t elems = 0;
    std::uint32_t elem_stride = 1;
    std::uint16_t partition = 0;
    mem_space space = mem_space::sbuf;
    dtype type = dtype::float32;

    bool valid() const { return partitions > 0; }
    // Bytes of data per row, and bytes a row spans in memory (more when strided).
    std::uint64_t row_bytes() const { return std::uint64_t{elems} * dtype_size(type); }
    std::uint64_t span_bytes() const {
        return (std::uint64_t{elems - 1} * elem_stride + 1) * dtype_size(type);
    }
    std::uint64_t bytes() const { return row_bytes() * partitions; }
    bool operator==(const operand& o) const;
};
static_assert(sizeof(operand) == 32, "operand is meant to pack into 32 bytes");

// The instruction set (isa/isa.h names each opcode, operation and function once; its row,
// isa/opcode_row.h, holds everything else about an opcode).
enum class opcode : std::uint8_t {
#define TRN_ENUM(name, ...) name,
    TRN_OPCODES(TRN_ENUM)
};
constexpr opcode all_opcodes[] = {
#define TRN_ALL_OPCODES(name, ...) opcode::name,
    TRN_OPCODES(TRN_ALL_OPCODES)
#undef TRN_ALL_OPCODES
};
constexpr std::size_t opcode_count = std::size(all_opcodes);

// What a trace line gives of an opcode (the first part of its row, isa/opcode_row.h).
struct opcode_info {
    const char* name;
    std::uint16_t fields;  // field:: bits
    int since;             // the trace format version that introduced it
    bool input_sized;      // its cost counts src0's free size
    const char* semantics;
};
const opcode_info& info(opcode o);
const char* opcode_name(opcode o);

// Instruction flags.
namespace flag {
constexpr std::uint16_t accumulate = 1;  // matmul adds to dst instead of overwriting it
constexpr std::uint16_t double_row = 2;  // fp8 matmul in the v3 double-row mode (2x rate)
constexpr std::uint16_t reverse0 = 4;    // the first operation takes its operands swapped
constexpr std::uint16_t reverse1 = 8;    // the second operation takes its operands swapped
constexpr std::uint16_t negate = 16;     // tensor_reduce negates its result
// activation_reduce and the Scalar engine's reduce registers (one per partition): the
// reduction adds to them (reduce_cmd.reduce) rather than replacing them; or they are zeroed
// and nothing is reduced (reduce_cmd.reset). dst1, if given, receives them.
constexpr std::uint16_t reduce_accumulate = 32;
constexpr std::uint16_t reduce_reset = 64;
// The instruction continues the one before it on its engine: one instruction whose access
// pattern has several runs a partition, written as one instruction a run (the model's operands
// hold one run a partition). It costs its elements alone: the per-instruction minimum (MIN_II)
// and fixed cycles are the first part's.
constexpr std::uint16_t continues = 128;
// The kernel's hint (nc_matmul's is_stationary_onezero / is_moving_onezero) that the matmul's
// stationary or moving operand holds only ones and zeros: an fp32 operand so marked needs half
// the passes (the NKI reference: "could lead to 2x better performance if [the] tile is in
// float32"). A transpose's moving operand is its identity.
constexpr std::uint16_t stationary_onezero = 256;
constexpr std::uint16_t moving_onezero = 512;
}  // namespace flag
// The flags' trace names (acc, double_row, rev0, rev1, neg, ...) and the version of each.
struct flag_info {
    std::uint16_t bit;
    const char* name;
    int since;
};
constexpr flag_info all_flags[] = {{flag::accumulate, "acc", 1},
                                   {flag::double_row, "double_row", 2},
                                   {flag::reverse0, "rev0", 3},
                                   {flag::reverse1, "rev1", 3},
                                   {flag::negate, "neg", 3},
                                   {flag::reduce_accumulate, "racc", 3},
                                   {flag::reduce_reset, "rzero", 3},
                                   {flag::continues, "cont", 8},
                                   {flag::stationary_onezero, "stationary_onezero", 9},
                                   {flag::moving_onezero, "moving_onezero", 9}};

enum class alu_op : std::uint8_t { TRN_ALU_OPS(TRN_ENUM) };
constexpr alu_op all_alu_ops[] = {
#define TRN_ALL_ALU(name, since) alu_op::name,
    TRN_ALU_OPS(TRN_ALL_ALU)
#undef TRN_ALL_ALU
};
const char* alu_name(alu_op a);
int alu_since(alu_op a);  // the trace format version that introduced it

enum class act_func : std::uint8_t { TRN_ACT_FUNCS(TRN_ENUM) };
#undef TRN_ENUM
constexpr act_func all_act_funcs[] = {
#define TRN_ALL_ACT(name, since) act_func::name,
    TRN_ACT_FUNCS(TRN_ALL_ACT)
#undef TRN_ALL_ACT
};
const char* act_func_name(act_func f);
int act_func_since(act_func f);
// f(x) as the Scalar engine computes it (in float).
float apply_act(act_func f, float x);

// Semaphores: one per engine (completed instructions) and one per DMA queue (completed
// transfers), numbered engines first: semaphore_of_engine(e) = e, of queue q = engine_count + q.
using sem_id = std::uint16_t;
inline sem_id semaphore_of_engine(engine_kind e) {
    return static_cast<sem_id>(e);
}
inline sem_id semaphore_of_queue(std::size_t q) {
    return static_cast<sem_id>(engine_count + q);
}
std::string semaphore_name(sem_id s);

// "Wait until semaphore `sem` has counted at least `value`."
struct sem_wait {
    sem_id sem;
    std::uint32_t value;
    bool operator==(const sem_wait& o) const { return sem == o.sem && value == o.value; }
};

// An instruction's waits: most have one or two, kept inline (no allocation per instruction).
using wait_list = boost::container::small_vector<sem_wait, 2>;

// An instruction's operands, in the order of its fields.
enum class operand_slot : std::uint8_t { dst, src0, src1, src2, dst1, src3 };
constexpr std::size_t operand_slot_count = 6;
const char* operand_slot_name(operand_slot s);

// Tensor indirection (NeuronCore-v4, `.indirect()` in NKI): one operand of an instruction is a
// gather (an input) or a scatter (an output) of columns of an on-chip tile. The operand itself
// is the view the engine computes on: its partitions x elems elements, starting at the indexed
// tile's first column, with that tile's element stride. Element i of each row is the indexed
// tile's column offset(i), 0 <= offset(i) < extent: the integer at
// index[(i / (G K)) G + i % G, (i / G) % K], K = index.elems and G the engine's partition group
// (32 on the Tensor engine, 16 on the others): offsets in a snake over groups of G partitions.
struct indirection {
    operand_slot slot = operand_slot::dst;
    std::uint32_t extent = 0;  // columns of the indexed tile the offsets may name
    operand index;             // the offsets (SBUF, an integer type)
    bool operator==(const indirection& o) const {
        return slot == o.slot && extent == o.extent && index == o.index;
    }
};
// The partition group offsets are laid out in on an engine (indirection).
constexpr std::uint32_t indirection_group(engine_kind e) {
    return e == engine_kind::pe ? 32 : 16;
}
// Where offset i of an indirection with `group`-partition groups lies in its index operand:
// (row, element).
inline std::pair<std::uint32_t, std::uint32_t> indirection_position(std::uint32_t i,
                                                                    std::uint32_t group,
                                                                    std::uint32_t index_elems) {
    return {(i / (group * index_elems)) * group + i % group, (i / group) % index_elems};
}

struct instruction {
    opcode op = opcode::tensor_copy;
    alu_op alu = alu_op::bypass;
    alu_op alu1 = alu_op::bypass;  // tensor_scalar's second operation (bypass: none)
    act_func func = act_func::identity;
    float imm1 = 0;  // its operand; iota's step per partition
    operand dst, src0, src1;
    operand src2;  // a third input: the per-partition scale or second scalar operand
    operand dst1;  // a second output: the per-partition reduction of the *_reduce opcodes
    operand src3;  // a fourth input: matmul_mx's moving scale
    // The operands that gather or scatter (tensor indirection, NeuronCore-v4): most have none,
    // an empty vector allocates nothing.
    std::vector<indirection> indirect;
    float imm2 = 0, imm3 = 0;  // affine_select's step per free element and its fill value
    float imm = 0;
    std::uint16_t queue = 0;
    std::uint16_t flags = 0;
    wait_list waits;
    bool operator==(const instruction& o) const;
    // The operand in `slot`, and its indirection (null: a direct access).
    const operand& at(operand_slot slot) const {
        switch (slot) {
            case operand_slot::dst:
                return dst;
            case operand_slot::src0:
                return src0;
            case operand_slot::src1:
                return src1;
            case operand_slot::src2:
                return src2;
            case operand_slot::dst1:
                return dst1;
            case operand_slot::src3:
                break;
        }
        return src3;
    }
    operand& at(operand_slot slot) {
        return const_cast<operand&>(static_cast<const instruction&>(*this).at(slot));
    }
    const indirection* indirection_of(operand_slot slot) const {
        for (const auto& t : indirect)
            if (t.slot == slot) return &t;
        return nullptr;
    }
    // What the operand in `slot` may touch: itself or, indirect, all of the indexed tile.
    operand reach(operand_slot slot) const {
        operand r = at(slot);
        if (const indirection* t = indirection_of(slot)) r.elems = t->extent;
        return r;
    }
};

// The platform limits a program is checked against before it runs.
struct program_limits {
    std::uint32_t partitions = 128;
    std::uint64_t sbuf_partition_bytes = 0;
    std::uint64_t psum_partition_bytes = 0;
    std::uint64_t hbm_bytes = 0;
    std::size_t dma_queues = 16;
    std::uint32_t dma_priority_levels = 1;  // a transfer's priority is below it
    int isa_version = 0;  // the NeuronCore version, for the rows' version rules (0: none checked)
};

// The operand lies within the platform (partitions, the memory's size) and within `hbm_bytes`
// of HBM, and is not empty; else user_error starting with where(), naming it `role`.
void check_operand(const operand& op, const char* role, const program_limits& limits,
                   std::uint64_t hbm_bytes, const std::function<std::string()>& where);
// The checks of one instruction alone that validate_program makes (operands within the
// platform and within `hbm_bytes` of HBM, the shapes and memories its opcode takes), throwing
// user_error that starts with where() (naming it).
void check_instruction(const instruction& ins, engine_kind e, const program_limits& limits,
                       std::uint64_t hbm_bytes, const std::function<std::string()>& where);

}  // namespace trn
