// coverage: a kernel is like a calibrated point when their DMA rows are within a factor 4 (or
// neither moves data) and the engine the kernel spends most time on has 10% of the point's;
// the sentence says what is unlike every point.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "analysis/coverage.h"

namespace {

using trn::calibration_coverage;
using trn::kernel_features;
using trn::stats_tree;

kernel_features kernel(double row_bytes, double pe, double dve, double act, double pool) {
    kernel_features k;
    k.row_bytes = row_bytes;
    k.share = {pe, dve, act, pool};
    return k;
}

calibration_coverage points() {
    calibration_coverage c;
    c.points = {kernel(8, 0, 0.9, 0.1, 0), kernel(1024, 0.8, 0.1, 0.1, 0),
                kernel(8000, 0, 1, 0, 0)};
    return c;
}

TEST(Coverage, FeaturesOfAStatsTree) {
    stats_tree s;
    s.add("dma.bytes", 4096, "bytes", "");
    s.add("dma.descriptors", 128, "", "");
    s.add("engines.pe.busy_ns", 0, "ns", "");
    s.add("engines.dve.busy_ns", 300, "ns", "");
    s.add("engines.act.busy_ns", 100, "ns", "");
    s.add("engines.dve.dtypes.float32.busy_ns", 300, "ns", "");
    s.add("engines.act.dtypes.bfloat16.busy_ns", 100, "ns", "");
    const kernel_features k = kernel_features::of(s);
    EXPECT_DOUBLE_EQ(k.dtypes.at("float32"), 0.75);
    EXPECT_EQ(k.main_dtype(), "float32");
    EXPECT_DOUBLE_EQ(k.row_bytes, 32);
    EXPECT_DOUBLE_EQ(k.share[1], 0.75);
    EXPECT_DOUBLE_EQ(k.share[3], 0);  // (no pool entry: none)
    EXPECT_EQ(k.busiest(), 1);
}

TEST(Coverage, LikeAPointOfRowsAndEngine) {
    EXPECT_EQ(unlike_every_point(kernel(30, 0, 1, 0, 0), points()), "");    // 8 B x 4 = 32
    EXPECT_EQ(unlike_every_point(kernel(2048, 1, 0, 0, 0), points()), "");  // 1 KiB x 2
    EXPECT_EQ(unlike_every_point(kernel(30, 0, 0, 0, 0), points()), "");    // no engine time
    EXPECT_EQ(unlike_every_point(kernel(30, 1, 0, 0, 0), calibration_coverage{}), "");
}

TEST(Coverage, UnlikeEveryPointSaysWhy) {
    const std::string small = unlike_every_point(kernel(1, 0, 1, 0, 0), points());
    EXPECT_NE(small.find("DMA rows of 1 B on average (the nearest points': 8 B)"),
              std::string::npos)
        << small;
    const std::string gap = unlike_every_point(kernel(100, 0, 1, 0, 0), points());
    EXPECT_NE(gap.find("DMA rows of 100 B on average (the nearest points': 8 B and 1.0 KiB)"),
              std::string::npos)
        << gap;
    const std::string pool = unlike_every_point(kernel(1024, 0, 0, 0.2, 0.8), points());
    EXPECT_NE(pool.find("80% of its engine time on pool (10% or more of none)"), std::string::npos)
        << pool;
    EXPECT_EQ(pool.find("DMA rows"), std::string::npos) << pool;
    // rows like the Vector-engine points', the engine like the matmul's: unlike each point
    EXPECT_NE(unlike_every_point(kernel(8, 1, 0, 0, 0), points()).find("like some points'"),
              std::string::npos);
    EXPECT_NE(unlike_every_point(kernel(0, 0, 1, 0, 0), points()).find("no DMA"),
              std::string::npos);
}

TEST(Coverage, TheMainDtypeMustBeAPointsToo) {
    calibration_coverage c = points();
    for (auto& p : c.points)
        p.dtypes = {{"float32", 0.7}, {"bfloat16", 0.3}};
    kernel_features k = kernel(1024, 1, 0, 0, 0);
    k.dtypes = {{"bfloat16", 0.9}, {"float32", 0.1}};
    EXPECT_EQ(unlike_every_point(k, c), "");
    k.dtypes = {{"fp8_e4m3", 0.95}, {"float32", 0.05}};
    EXPECT_EQ(k.main_dtype(), "fp8_e4m3");
    const std::string why = unlike_every_point(k, c);
    EXPECT_EQ(why, "95% of its engine time in fp8_e4m3 (10% or more of none)") << why;
}

TEST(Coverage, ReadsTheCalibrationFile) {
    const std::string path = ::testing::TempDir() + "coverage.json";
    std::ofstream(path) << R"({"platforms": {"trn1": [{"id": "V3", "stats": {
        "dma": {"bytes": 1024, "descriptors": 128},
        "engines": {"dve": {"busy_ns": 30, "dtypes": {"float32": {"busy_ns": 30}}}}}}]}})";
    const calibration_coverage c = calibration_coverage::read(path, "trn1");
    ASSERT_EQ(c.points.size(), 1u);
    EXPECT_EQ(c.points[0].id, "V3");
    EXPECT_DOUBLE_EQ(c.points[0].row_bytes, 8);
    EXPECT_DOUBLE_EQ(c.points[0].share[1], 1);
    EXPECT_DOUBLE_EQ(c.points[0].dtypes.at("float32"), 1);
    EXPECT_TRUE(calibration_coverage::read(path, "trn2").points.empty());
    std::ofstream(path) << "{\"platforms\": {\"trn1\": [{\"id\": \"V3\", \"stats\": []}]}}";
    EXPECT_THROW(calibration_coverage::read(path, "trn1"), std::runtime_error);
    std::remove(path.c_str());
}

}  // namespace
