// trn::units: "<number><unit>" parsers into the model's base units, and format_time.
#include "core/units.h"

#include <gtest/gtest.h>

#include "support/expect_error.h"

namespace {

using trn::testing::contains;
using trn::testing::user_error_of;
namespace u = trn::units;

TEST(UnitsTime, ConvertsEveryUnitToNanoseconds) {
    EXPECT_DOUBLE_EQ(u::parse_time_ns("1.3us"), 1300.0);
    EXPECT_DOUBLE_EQ(u::parse_time_ns("250 ps"), 0.25);
    EXPECT_DOUBLE_EQ(u::parse_time_ns("16ns"), 16.0);
    EXPECT_DOUBLE_EQ(u::parse_time_ns("15us"), 15e3);
    EXPECT_DOUBLE_EQ(u::parse_time_ns("2ms"), 2e6);
    EXPECT_DOUBLE_EQ(u::parse_time_ns("0.5s"), 0.5e9);
    EXPECT_DOUBLE_EQ(u::parse_time_ns("0ns"), 0.0);
    EXPECT_DOUBLE_EQ(u::parse_time_ns("1e3ns"), 1000.0);
}

TEST(UnitsTime, UnknownUnitNamesTextAndAcceptedUnits) {
    const std::string msg = user_error_of([] { u::parse_time_ns("3 parsecs"); });
    EXPECT_PRED2(contains, msg, "'3 parsecs'");
    EXPECT_PRED2(contains, msg, "parsecs");
    EXPECT_PRED2(contains, msg, "ps, ns, us, ms, s");
}

TEST(UnitsTime, TextWithoutNumberNamesTextAndAcceptedUnits) {
    const std::string msg = user_error_of([] { u::parse_time_ns("abc"); });
    EXPECT_PRED2(contains, msg, "'abc'");
    EXPECT_PRED2(contains, msg, "ps, ns, us, ms, s");
}

TEST(UnitsTime, RejectsMissingUnitWrongCaseAndTrailingText) {
    EXPECT_PRED2(contains, user_error_of([] { u::parse_time_ns("5"); }), "'5'");
    EXPECT_PRED2(contains, user_error_of([] { u::parse_time_ns("5NS"); }), "'NS'");
    EXPECT_PRED2(contains, user_error_of([] { u::parse_time_ns("5nsx"); }), "'nsx'");
    EXPECT_PRED2(contains, user_error_of([] { u::parse_time_ns(""); }), "time");
    EXPECT_PRED2(contains, user_error_of([] { u::parse_time_ns("inf ns"); }), "finite");
}

TEST(UnitsFrequency, ConvertsToGigahertz) {
    EXPECT_DOUBLE_EQ(u::parse_frequency_ghz("1.4GHz"), 1.4);
    EXPECT_DOUBLE_EQ(u::parse_frequency_ghz("1120MHz"), 1.12);
    EXPECT_DOUBLE_EQ(u::parse_frequency_ghz("500 kHz"), 500e-6);
    EXPECT_DOUBLE_EQ(u::parse_frequency_ghz("2e9Hz"), 2.0);
    const std::string msg = user_error_of([] { u::parse_frequency_ghz("3 ghz"); });
    EXPECT_PRED2(contains, msg, "'3 ghz'");
    EXPECT_PRED2(contains, msg, "Hz, kHz, MHz, GHz");
}

TEST(UnitsBandwidth, GigabytesPerSecondAreBytesPerNanosecond) {
    EXPECT_DOUBLE_EQ(u::parse_bandwidth_bytes_per_ns("410GB/s"), 410.0);
    EXPECT_DOUBLE_EQ(u::parse_bandwidth_bytes_per_ns("17B/ns"), 17.0);
    EXPECT_DOUBLE_EQ(u::parse_bandwidth_bytes_per_ns("1GiB/s"), 1073741824.0 / 1e9);
    EXPECT_DOUBLE_EQ(u::parse_bandwidth_bytes_per_ns("2TB/s"), 2000.0);
    EXPECT_DOUBLE_EQ(u::parse_bandwidth_bytes_per_ns("1TiB/s"), 1099511627776.0 / 1e9);
    EXPECT_DOUBLE_EQ(u::parse_bandwidth_bytes_per_ns("500MB/s"), 0.5);
    EXPECT_DOUBLE_EQ(u::parse_bandwidth_bytes_per_ns("1MiB/s"), 1048576.0 / 1e9);
    const std::string msg = user_error_of([] { u::parse_bandwidth_bytes_per_ns("10Gbps"); });
    EXPECT_PRED2(contains, msg, "'10Gbps'");
    EXPECT_PRED2(contains, msg, "GB/s");
    EXPECT_PRED2(contains, msg, "GiB/s");
}

TEST(UnitsSize, BinaryAndDecimalPrefixes) {
    EXPECT_EQ(u::parse_size_bytes("192KiB"), 192u * 1024u);
    EXPECT_EQ(u::parse_size_bytes("2MiB"), 2u * 1024u * 1024u);
    EXPECT_EQ(u::parse_size_bytes("16GiB"), 16ull << 30);
    EXPECT_EQ(u::parse_size_bytes("256B"), 256u);
    EXPECT_EQ(u::parse_size_bytes("3kB"), 3000u);
    EXPECT_EQ(u::parse_size_bytes("1.5KiB"), 1536u);  // fractional prefix, whole bytes
    EXPECT_EQ(u::parse_size_bytes("2 MB"), 2000000u);
}

TEST(UnitsSize, SizesOf2To64BytesOrMoreRejected) {
    EXPECT_EQ(u::parse_size_bytes("16000000000GiB"), 16000000000ull << 30);
    EXPECT_PRED2(contains, user_error_of([] { u::parse_size_bytes("18446744073709551616B"); }),
                 "too large a size");
    EXPECT_PRED2(contains, user_error_of([] { u::parse_size_bytes("1e30GB"); }), "too large");
}

TEST(UnitsSize, FractionalOrNegativeBytesRejected) {
    const std::string frac = user_error_of([] { u::parse_size_bytes("0.5B"); });
    EXPECT_PRED2(contains, frac, "'0.5B'");
    EXPECT_PRED2(contains, frac, "whole");
    EXPECT_PRED2(contains, user_error_of([] { u::parse_size_bytes("1.0001KiB"); }), "'1.0001KiB'");
    EXPECT_PRED2(contains, user_error_of([] { u::parse_size_bytes("-1B"); }), "'-1B'");
    const std::string unit = user_error_of([] { u::parse_size_bytes("4 kiB"); });
    EXPECT_PRED2(contains, unit, "'kiB'");
    EXPECT_PRED2(contains, unit, "KiB, MiB");
}

TEST(UnitsFormat, PicksUnitAndParsesBack) {
    EXPECT_PRED2(contains, u::format_time(999.0), " ns");
    EXPECT_PRED2(contains, u::format_time(1300.0), " us");
    EXPECT_PRED2(contains, u::format_time(2.5e6), " ms");
    for (double ns : {12.5, 999.0, 1300.0, 45678.0, 2.5e6}) {
        const double back = u::parse_time_ns(u::format_time(ns));
        EXPECT_NEAR(back, ns, ns * 1e-3) << u::format_time(ns);
    }
}

}  // namespace

TEST(UnitsWhole, ReadsWholeNumbersAsStollDoes) {
    using trn::units::parse_whole;
    EXPECT_EQ(parse_whole<std::int64_t>("128"), 128);
    EXPECT_EQ(parse_whole<std::int64_t>("+128"), 128);
    EXPECT_EQ(parse_whole<std::int64_t>(" 7"), 7);
    EXPECT_EQ(parse_whole<std::int64_t>("-3"), -3);
    EXPECT_EQ(parse_whole<std::uint64_t>("18446744073709551615"), 18446744073709551615ull);
    for (const char* bad : {"", " ", "+", "12x", "1.5", "0x10", "+-5", "7 ", "9223372036854775808"})
        EXPECT_FALSE(parse_whole<std::int64_t>(bad).has_value()) << "'" << bad << "'";
    for (const char* bad : {"-3", "-0", "18446744073709551616"})
        EXPECT_FALSE(parse_whole<std::uint64_t>(bad).has_value()) << "'" << bad << "'";
}
