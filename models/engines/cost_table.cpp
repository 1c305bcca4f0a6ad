#include "engines/cost_table.h"

#include <algorithm>

#include "isa/opcode_row.h"

namespace trn {

const std::vector<cost_rule>& cost_table::rules() {
    static const std::vector<cost_rule> table = [] {
        std::vector<cost_rule> out;
        for (const opcode op : all_opcodes)
            for (cost_rule r : row(op).costs) {
                r.op = op;
                out.push_back(r);
            }
        return out;
    }();
    return table;
}

int cost_table::rules_isa(engine_kind e, opcode op) const {
    if (m_isa <= 3) return m_isa;
    for (const auto& r : row(op).costs)  // rules of its own for this opcode, else NC-v3's
        if (r.engine == e && r.isa == m_isa) return m_isa;
    return 3;
}

const cost_rule* cost_table::match(engine_kind e, const instruction& ins) const {
    const int isa = rules_isa(e, ins.op);
    for (const auto& r : row(ins.op).costs)
        if (r.engine == e && (r.isa == 0 || r.isa == isa) && matches(r.when, ins)) return &r;
    return nullptr;
}

bool cost_table::supports(engine_kind e, opcode op) const {
    const opcode_row& r = row(op);
    if (r.other_engines & engine_bit(e)) return true;
    for (const auto& c : r.costs)
        if (c.engine == e && (c.isa == 0 || c.isa == rules_isa(e, op))) return true;
    return false;
}

double cost_table::cycles(engine_kind e, const instruction& ins) const {
    const cost_rule* r = match(e, ins);
    if (!r) return 0;
    if (r->custom) return r->custom(ins);
    // N is the free size of the input for the instructions whose output is smaller than it.
    const double n = info(ins.op).input_sized ? ins.src0.elems : ins.dst.elems;
    const double per_elem =
        ins.op == opcode::reciprocal && e == engine_kind::dve ? m_reciprocal : r->per_elem;
    double c = per_elem * n;
    if (ins.flags & flag::continues) return c;  // (the first part paid the rest)
    if (r->min_ii) c = std::max(c, m_min_ii);
    return c + r->fixed + (r->plus_min_ii ? m_min_ii : 0.0);
}

}  // namespace trn
