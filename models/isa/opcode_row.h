#pragma once
// One row per opcode: what a trace line gives, the flags it takes, the engines and NeuronCore
// versions that run it and at what cost, the rules its operands follow beyond their bounds, and
// the values it computes. The program checks, the cost table, the functional engines, the trace
// reader and writer, `sim --list-instructions` (docs/instructions.md) and the NKI bridge read
// the rows; isa/rows.cpp gathers them in the order of isa/isa.h's list.
#include <functional>
#include <string>
#include <vector>

#include "isa/cost_rule.h"
#include "isa/instruction.h"

namespace trn {

// What an opcode's check is given besides the instruction and its engine. Contract: each
// method throws user_error starting with where() when the rule does not hold.
struct check_context {
    const program_limits& limits;
    std::uint64_t hbm_bytes;
    const std::function<std::string()>& where;
    // The operand lies within the platform and the program's HBM (program/program.h's
    // check_operand).
    void operand(const operand& op, const char* role) const;
    [[noreturn]] void fail(const std::string& what) const;  // "WHERE: what"
};

struct alu_io;

// Bits of engine_kind, for a row's engines.
constexpr std::uint8_t engine_bit(engine_kind e) {
    return static_cast<std::uint8_t>(1u << static_cast<unsigned>(e));
}

struct opcode_row {
    opcode_info info;         // name, trace fields, trace version, cost size, semantics in words
    std::uint16_t flags = 0;  // the flag:: bits it takes
    // Engines that run it without a rule of the cost table, with their cost in words: the
    // Tensor engine's opcodes (tensor_engine.cpp times them) and dma_trigger.
    std::uint8_t other_engines = 0;
    const char* other_cost = nullptr;
    const char* other_operands = nullptr;
    const char* other_source = nullptr;
    // What a NeuronCore before its first version runs instead (named in the version error).
    const char* before = nullptr;
    std::vector<cost_rule> costs = {};  // tried in order: the first that applies gives the cost
    // Its operands' rules beyond their bounds (program checks; the MX types, indirection and
    // src3 are checked for every opcode before it).
    void (*check)(const instruction& ins, engine_kind e, const check_context& cx) = nullptr;
    // Its values on the Vector, Scalar and GpSimd engines (null: none: the Tensor engine's
    // values are tensor_engine's, dma_trigger and core_barrier compute nothing).
    void (*execute)(alu_io& io) = nullptr;
};

const opcode_row& row(opcode o);

// The rows, each defined in the isa/ file of its family.
#define TRN_ROW_DECL(op) const opcode_row& row_of_##op();
TRN_OPCODES(TRN_ROW_DECL)
#undef TRN_ROW_DECL

}  // namespace trn
