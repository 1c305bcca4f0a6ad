#pragma once
#include <string>
#include <vector>

#include "isa/cost_rule.h"
#include "program/program.h"

namespace trn {

// The opcodes' cost rules (their rows' costs, isa/opcode_row.h) as one core's engines apply
// them: at its NeuronCore version and MIN_II, and the Vector engine's reciprocal at
// `reciprocal_per_elem` cycles an element (core.dve.reciprocal_cycles; the reference's 8 unless
// a generation's measurements say otherwise). The first rule that matches the engine, opcode,
// version and operand case gives the cost.
class cost_table {
  public:
    cost_table(int isa_version, double min_ii, double reciprocal_per_elem = 8)
        : m_isa(isa_version), m_min_ii(min_ii), m_reciprocal(reciprocal_per_elem) {}
    // Every row's rules, row by row, each with its opcode.
    static const std::vector<cost_rule>& rules();

    bool supports(engine_kind e, opcode op) const;
    int isa() const { return m_isa; }
    // The NeuronCore version whose rules apply to an opcode on an engine: NeuronCore-v4 (4)
    // takes NeuronCore-v3's where the table has none of its own (its engines' data paths per
    // cycle are NC-v3's, at its own clocks: hardware-facts 1f).
    int rules_isa(engine_kind e, opcode op) const;
    // Engine cycles the instruction occupies its engine; a dma_trigger has no rule (its cost is
    // a time, core.dma.trigger_time), nor do the Tensor engine's opcodes (tensor_engine).
    double cycles(engine_kind e, const instruction& ins) const;
    const cost_rule* match(engine_kind e, const instruction& ins) const;

  private:
    int m_isa;
    double m_min_ii;
    double m_reciprocal;
};

}  // namespace trn
