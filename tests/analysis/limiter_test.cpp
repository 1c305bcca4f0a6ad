// estimate_limiter: the saving of freeing each resource, bounded by the busiest one left; the
// data movement named as a whole when no single part of it saves most of what it saves.
#include "analysis/limiter.h"

#include <gtest/gtest.h>

namespace trn {
namespace {

double saving_of(const limiter_estimate& l, const std::string& r) {
    for (const auto& [name, ns] : l.savings)
        if (name == r) return ns;
    return -1;
}

TEST(Limiter, ABusyEngineOffThePathStillLimits) {
    // The path runs through DMA latency, but the Tensor engine is busy 90 of 100 ns: freeing the
    // latency saves at most 10, freeing the Tensor engine the 20 it has on the path.
    const auto l = estimate_limiter(100, 0, {{"dma fixed latency", 70}, {"pe", 20}, {"hbm", 10}},
                                    {{"pe", 90}, {"dma engines", 50}, {"hbm", 30}});
    EXPECT_EQ(l.by, "pe");
    EXPECT_DOUBLE_EQ(l.saving_ns, 20);
    EXPECT_DOUBLE_EQ(saving_of(l, "dma fixed latency"), 10);
    EXPECT_DOUBLE_EQ(saving_of(l, "data movement"), 10);
    EXPECT_EQ(l.savings.front().first, "pe");
}

TEST(Limiter, TwoSaturatedDataResourcesAreNamedTogether) {
    // HBM and the DMA engines both busy all the time: neither alone helps, both together do.
    const auto l = estimate_limiter(100, 5, {{"hbm", 60}, {"dma fixed latency", 30}, {"pe", 5}},
                                    {{"hbm", 95}, {"dma engines", 95}, {"pe", 30}});
    EXPECT_EQ(l.by, "data movement");
    EXPECT_DOUBLE_EQ(l.saving_ns, 65);  // down to launch 5 + the Tensor engine's 30
    EXPECT_DOUBLE_EQ(saving_of(l, "hbm"), 0);
}

TEST(Limiter, ALatencyChainIsItsLatency) {
    const auto l = estimate_limiter(100, 1, {{"dma fixed latency", 80}, {"dve", 15}, {"launch", 1}},
                                    {{"dve", 6}, {"dma engines", 4}});
    EXPECT_EQ(l.by, "dma fixed latency");
    EXPECT_DOUBLE_EQ(l.saving_ns, 80);
}

TEST(Limiter, NothingToSave) {
    const auto l = estimate_limiter(0, 0, {}, {});
    EXPECT_EQ(l.by, "");
    EXPECT_DOUBLE_EQ(l.saving_ns, 0);
}

}  // namespace
}  // namespace trn
