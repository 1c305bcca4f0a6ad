// The roofline as a test: no matmul beats 2*M*K*N / peak, the fp32 rate is a quarter of bf16,
// and a large bf16 fully_optimized matmul comes within 20% of the roofline.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/run_sim.h"

namespace {

using trn::testing::run_sim;

nlohmann::json stats_of(const std::string& args) {
    const std::string out = "/tmp/trnsim-roofline-" + std::to_string(::getpid()) + ".json";
    const auto r = run_sim(args + " -q --stats-out " + out);
    EXPECT_EQ(r.status, 0) << args << "\n" << r.output;
    std::ifstream in(out);
    nlohmann::json j = nlohmann::json::parse(in);
    std::remove(out.c_str());
    return j;
}

// Seconds the matmul FLOPs need at the array's peak for this dtype (bf16 peak / passes).
double ideal_ns(const nlohmann::json& s, double passes) {
    const double peak_per_ns = s["engines"]["pe"]["peak_tflops"].get<double>() * 1e3;
    return s["engines"]["pe"]["flops"].get<double>() * passes / peak_per_ns;
}

TEST(roofline, no_variant_beats_the_peak) {
    for (const char* cfg : {"trn1", "trn2"})
        for (const char* v : {"tiled", "hoist_load", "block_free_dimension", "fully_optimized"}) {
            const auto s = stats_of(std::string("--config ") + cfg +
                                    " --workload matmul --param m=2048 --param k=1024 "
                                    "--param n=2048 --param variant=" +
                                    v);
            const double t =
                s["total_time_ns"].get<double>() - s["launch_overhead_ns"].get<double>();
            EXPECT_GE(t, ideal_ns(s, 1)) << cfg << " " << v;
            EXPECT_LE(s["mfu_pct"].get<double>(), 100.0) << cfg << " " << v;
        }
}

TEST(roofline, fp32_is_a_quarter_of_bf16) {
    const auto s = stats_of(
        "--config trn1 --workload matmul --param m=2048 --param k=1024 "
        "--param n=2048 --param variant=fully_optimized --param dtype=float32");
    const double t = s["total_time_ns"].get<double>() - s["launch_overhead_ns"].get<double>();
    EXPECT_GE(t, ideal_ns(s, 4));
    EXPECT_LE(s["mfu_pct"].get<double>(), 25.0);
}

TEST(roofline, large_bf16_fully_optimized_within_20_percent) {
    const auto s = stats_of("--config trn1 --workload matmul --param variant=fully_optimized");
    const double ideal = ideal_ns(s, 1);
    const double t = s["total_time_ns"].get<double>();
    EXPECT_GE(t, ideal);
    EXPECT_LE(t, 1.2 * ideal) << "model " << t << " ns vs roofline " << ideal << " ns";
}

}  // namespace
