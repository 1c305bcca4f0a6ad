#pragma once
#include <string>

#include "isa/instruction.h"

namespace trn {

// Which operands a cost rule applies to.
enum class operand_case : std::uint8_t {
    any,
    mixed_psum_sbuf,  // one input in PSUM, the other in SBUF
    arith16_sbuf,     // bf16 add/subtract/multiply, all operands in SBUF
    all16_sbuf,       // every operand bf16/fp16 and in SBUF
    sbuf_only,        // every operand in SBUF
    zero16,           // memset of zero into a bf16/fp16 tile
    bf16_add_max,     // bf16 in and out, add or max reduction
    bf16_sub_mul,     // bf16 operands, subtract then multiply, an even free size
    block32,          // at most 32 x 32, on chip (the Vector engine's transpose)
};

// One cost rule of an opcode (its row, isa/opcode_row.h): on `engine`, for operands of case
// `when`, cycles = max(min_ii?, per_elem * N) + fixed (+ MIN_II when `plus_min_ii`), N the
// elements per partition. `isa` 0 applies to every NeuronCore version. `op` is filled in from
// the row.
struct cost_rule {
    engine_kind engine;
    operand_case when;
    int isa;
    double per_elem;
    bool min_ii;
    double fixed;
    const char* source;
    bool plus_min_ii = false;
    // An opcode whose cost is not per element of an operand: its cycles, and that as text.
    double (*custom)(const instruction&) = nullptr;
    const char* custom_text = nullptr;
    opcode op = opcode::tensor_copy;
};

// Whether the instruction's operands are of case `c`.
bool matches(operand_case c, const instruction& ins);
// The rule's cost as text ("max(MIN_II, 2N) + 150 cycles") and its operand case in words.
std::string formula(const cost_rule& r);
const char* describe(operand_case c);

}  // namespace trn
