// neuron_core runs any number of programs in turn: each one's inputs are written before it
// starts (the first at the start of simulation, when the sockets are bound; later ones when they
// run), so every program in functional mode computes from its own inputs. One bench: a trn1
// core in functional mode runs vector_add, matmul, then vector_add of another size, each
// checked against its reference, as a fleet does.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "support/platform_config.h"

namespace {

struct outcome {
    std::string description;
    trn::check_result check;
    double time_ns = 0;
};

const std::vector<std::pair<std::string, std::map<std::string, std::string>>>& programs() {
    static const std::vector<std::pair<std::string, std::map<std::string, std::string>>> p = {
        {"vector_add", {{"n", "2048"}}},
        {"matmul", {{"m", "128"}, {"k", "256"}, {"n", "512"}, {"dtype", "float32"}}},
        {"vector_add", {{"n", "4096"}, {"variant", "stream"}, {"free_dim", "16"}}},
        {"vector_add", {{"n", "2048"}}},
    };
    return p;
}

const std::vector<outcome>& bench() {
    static const std::vector<outcome> out = [] {
        static const trn::config cfg = trn::testing::platform_config("trn1");
        static trn::neuron_core core("core", cfg, true);
        std::vector<outcome> o;
        for (const auto& [name, params] : programs()) {
            const trn::built_kernel k = trn::testing::build_workload(name, params, cfg);
            core.load(k.prog);
            core.run();
            trn::stats_tree stats;
            core.report(stats);
            o.push_back({k.description, k.check([&](std::uint64_t off, std::uint64_t n) {
                             return core.read_hbm(off, n);
                         }),
                         stats.get("total_time_ns")});
        }
        return o;
    }();
    return out;
}

TEST(NeuronCore, EveryProgramRunInTurnComputesFromItsOwnInputs) {
    const auto& o = bench();
    ASSERT_EQ(o.size(), programs().size());
    for (const auto& r : o)
        EXPECT_TRUE(r.check.passed) << r.description << ": " << r.check.detail;
}

TEST(NeuronCore, ARepeatedProgramTakesTheSameTime) {
    const auto& o = bench();
    ASSERT_EQ(o.size(), 4u);
    EXPECT_GT(o[0].time_ns, 0);
    EXPECT_DOUBLE_EQ(o[3].time_ns, o[0].time_ns);
}

}  // namespace
