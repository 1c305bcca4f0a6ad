// trn::stats_tree: dotted paths become nested JSON; the text dump names path, unit, description.
#include "core/stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "support/expect_error.h"

namespace {

using trn::stats_tree;
using trn::testing::contains;

TEST(Stats, DottedPathsNestInJson) {
    stats_tree s;
    s.add("a.b.c", 3, "count", "deep leaf");
    s.add("a.b.d", 2.5, "ns", "fraction");
    s.add("a.e", 7, "B", "shallow leaf");
    s.add("top", 1, "count", "root leaf");
    const nlohmann::json j = s.to_json();
    ASSERT_TRUE(j.is_object());
    ASSERT_TRUE(j.contains("a"));
    ASSERT_TRUE(j["a"].is_object());
    ASSERT_TRUE(j["a"]["b"].is_object());
    EXPECT_EQ(j["a"]["b"]["c"], 3);
    EXPECT_DOUBLE_EQ(j["a"]["b"]["d"].get<double>(), 2.5);
    EXPECT_EQ(j["a"]["e"], 7);
    EXPECT_EQ(j["top"], 1);
    EXPECT_EQ(j.size(), 2u);
    EXPECT_EQ(j["a"].size(), 2u);
    EXPECT_EQ(j["a"]["b"].size(), 2u);
}

TEST(Stats, WholeNumbersAreIntegersInJson) {
    stats_tree s;
    s.add("whole", 1300.0, "ns", "a whole number");
    s.add("big", 1e12, "B", "large but whole");
    s.add("negative", -4, "count", "negative whole");
    s.add("frac", 0.1, "us", "not whole");
    s.add("nan", std::nan(""), "%", "undefined");
    const nlohmann::json j = s.to_json();
    EXPECT_TRUE(j["whole"].is_number_integer());
    EXPECT_EQ(j["whole"].get<long long>(), 1300);
    EXPECT_TRUE(j["big"].is_number_integer());
    EXPECT_EQ(j["big"].get<long long>(), 1000000000000ll);
    EXPECT_TRUE(j["negative"].is_number_integer());
    EXPECT_EQ(j["negative"].get<long long>(), -4);
    EXPECT_TRUE(j["frac"].is_number_float());
    EXPECT_DOUBLE_EQ(j["frac"].get<double>(), 0.1);
    EXPECT_TRUE(j["nan"].is_null());
    EXPECT_EQ(j.dump().find("1300.0"), std::string::npos) << j.dump();
    EXPECT_PRED2(contains, j.dump(), "\"whole\":1300");
}

TEST(Stats, DuplicateAddThrowsAndKeepsFirst) {
    stats_tree s;
    s.add("engines.dve.busy_ns", 10, "ns", "busy");
    EXPECT_THROW(s.add("engines.dve.busy_ns", 20, "ns", "busy again"), std::logic_error);
    EXPECT_EQ(s.get("engines.dve.busy_ns"), 10);
    EXPECT_EQ(s.entries().size(), 1u);
}

TEST(Stats, GetAndHas) {
    stats_tree s;
    s.add("dma.bytes", 4096, "B", "bytes moved");
    EXPECT_TRUE(s.has("dma.bytes"));
    EXPECT_FALSE(s.has("dma.byte"));
    EXPECT_EQ(s.get("dma.bytes"), 4096);
    EXPECT_THROW(s.get("dma.byte"), std::out_of_range);
}

TEST(Stats, TextEntriesAppearInJson) {
    stats_tree s;
    s.add_text("platform.name", "trn1", "platform");
    s.add("platform.partitions", 128, "count", "partitions");
    const nlohmann::json j = s.to_json();
    EXPECT_EQ(j["platform"]["name"], "trn1");
    EXPECT_EQ(j["platform"]["partitions"], 128);
}

TEST(Stats, TextDumpHasPathValueUnitAndDescription) {
    stats_tree s;
    s.add("engines.dve.busy_ns", 1234.5, "ns", "time the data path was occupied");
    s.add("dma.transfers", 42, "count", "DMA transfers");
    const std::string text = s.to_text();
    // One line per entry, in insertion order.
    const auto first = text.find('\n');
    ASSERT_NE(first, std::string::npos);
    const std::string line1 = text.substr(0, first);
    const std::string line2 = text.substr(first + 1);
    EXPECT_PRED2(contains, line1, "engines.dve.busy_ns");
    EXPECT_PRED2(contains, line1, "1234.5");
    EXPECT_PRED2(contains, line1, "ns");
    EXPECT_PRED2(contains, line1, "# time the data path was occupied");
    EXPECT_PRED2(contains, line2, "dma.transfers");
    EXPECT_PRED2(contains, line2, " 42 ");
    EXPECT_PRED2(contains, line2, "count");
    EXPECT_PRED2(contains, line2, "# DMA transfers");
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
    // Aligned: the value column starts at the same offset on both lines.
    EXPECT_EQ(line1.find('#'), line2.substr(0, line2.size() - 1).find('#'));
}

}  // namespace
