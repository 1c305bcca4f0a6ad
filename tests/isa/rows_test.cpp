// The rows (isa/opcode_row.h): one per opcode, each complete, and what the rest of the model
// reads from them.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "engines/cost_table.h"
#include "isa/opcode_row.h"

using trn::engine_kind;
using trn::opcode;

TEST(Rows, OnePerOpcodeEachComplete) {
    std::set<std::string> names;
    for (const opcode op : trn::all_opcodes) {
        const trn::opcode_row& r = trn::row(op);
        SCOPED_TRACE(r.info.name);
        EXPECT_TRUE(names.insert(r.info.name).second);
        EXPECT_STREQ(trn::opcode_name(op), r.info.name);
        EXPECT_GE(r.info.since, 1);
        EXPECT_NE(r.info.semantics, nullptr);
        EXPECT_NE(r.check, nullptr);
        // Every opcode runs somewhere, and says at what cost.
        EXPECT_TRUE(!r.costs.empty() || r.other_engines != 0);
        if (r.other_engines) {
            EXPECT_NE(r.other_cost, nullptr);
            EXPECT_NE(r.other_source, nullptr);
        }
        for (const auto& c : r.costs)
            EXPECT_NE(c.source, nullptr);
        // An opcode a Vector, Scalar or GpSimd engine runs computes values there, except
        // core_barrier and the register instructions (no data path: the NKI frontend keeps
        // the registers' values).
        bool alu_engine = false;
        for (const auto& c : r.costs)
            alu_engine |= c.engine != engine_kind::pe && c.engine != engine_kind::sp;
        const bool control = op == opcode::core_barrier || op == opcode::register_load ||
                             op == opcode::register_store || op == opcode::register_move;
        if (alu_engine && !control) {
            EXPECT_NE(r.execute, nullptr);
        }
    }
    EXPECT_EQ(names.size(), trn::opcode_count);
}

TEST(Rows, TheCostTableIsTheRowsRules) {
    std::size_t n = 0;
    for (const opcode op : trn::all_opcodes)
        n += trn::row(op).costs.size();
    ASSERT_EQ(trn::cost_table::rules().size(), n);
    std::size_t at = 0;  // row by row, each rule with its opcode
    for (const opcode op : trn::all_opcodes)
        for (std::size_t i = 0; i < trn::row(op).costs.size(); ++i, ++at)
            EXPECT_EQ(trn::cost_table::rules()[at].op, op);
    const trn::cost_table v2(2, 64), v4(4, 64);
    EXPECT_TRUE(v2.supports(engine_kind::sp, opcode::dma_trigger));  // other_engines
    EXPECT_FALSE(v2.supports(engine_kind::dve, opcode::dma_trigger));
    EXPECT_FALSE(v2.supports(engine_kind::dve, opcode::exponential));  // a v4 rule only
    EXPECT_TRUE(v4.supports(engine_kind::dve, opcode::exponential));
    EXPECT_TRUE(v4.supports(engine_kind::pool, opcode::topk));  // v3's rule, on v4
}

TEST(Rows, FlagsAreTheRows) {
    EXPECT_EQ(trn::row(opcode::matmul).flags, trn::flag::accumulate | trn::flag::double_row |
                                                  trn::flag::stationary_onezero |
                                                  trn::flag::moving_onezero);
    EXPECT_EQ(trn::row(opcode::transpose).flags, trn::flag::moving_onezero);
    EXPECT_EQ(trn::row(opcode::tensor_reduce).flags, trn::flag::negate);
    EXPECT_EQ(trn::row(opcode::tensor_copy).flags, 0);
}
