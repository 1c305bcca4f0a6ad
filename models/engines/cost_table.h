#pragma once
#include <string>
#include <vector>

#include "core/program.h"

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

// One row of the instruction cost table: cycles = max(min_ii?, per_elem * N) + fixed (+ MIN_II
// when `plus_min_ii`), N the elements per partition. `isa` 0 applies to every NeuronCore version.
struct cost_rule {
    engine_kind engine;
    opcode op;
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
};

// The per-opcode cost table of hardware-facts.md section 2, as data. Rules are tried in order;
// the first that matches the engine, opcode, ISA version and operand case gives the cost.
// The rule's cost as text ("max(MIN_II, 2N) + 150 cycles") and its operand case in words.
std::string formula(const cost_rule& r);
const char* describe(operand_case c);
// The cost of the Tensor engine's opcodes (tensor_engine.cpp computes it; hardware-facts 2),
// as text; "" for other opcodes.
const char* tensor_engine_cost(opcode op);

class cost_table {
  public:
    cost_table(int isa_version, double min_ii) : m_isa(isa_version), m_min_ii(min_ii) {}
    static const std::vector<cost_rule>& rules();

    bool supports(engine_kind e, opcode op) const;
    int isa() const { return m_isa; }
    // The NeuronCore version whose rules apply to an opcode on an engine: NeuronCore-v4 (4)
    // takes NeuronCore-v3's where the table has none of its own (its engines' data paths per
    // cycle are NC-v3's, at its own clocks: hardware-facts 1f).
    int rules_isa(engine_kind e, opcode op) const;
    // Engine cycles the instruction occupies its engine; a dma_trigger has no rule (its cost is
    // a time, core.dma.trigger_time).
    double cycles(engine_kind e, const instruction& ins) const;
    const cost_rule* match(engine_kind e, const instruction& ins) const;

  private:
    int m_isa;
    double m_min_ii;
};

}  // namespace trn
