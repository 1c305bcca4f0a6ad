// trn::param_registry and trn::config: YAML loading, --set overrides, validation messages.
#include "core/params.h"

#include <gtest/gtest.h>

#include "support/expect_error.h"

namespace {

using trn::config;
using trn::param_kind;
using trn::param_registry;
using trn::testing::contains;
using trn::testing::starts_with;
using trn::testing::user_error_of;

param_registry make_registry() {
    param_registry r;
    r.add({"name", param_kind::text, "trn1", "platform name", "-"});
    r.add({"core.dma.engines", param_kind::integer, "16", "DMA engines", "facts 1d", 1, 64});
    r.add({"core.dma.fixed_latency", param_kind::time, "1.3us", "DMA latency", "facts 1d", 0, 1e6});
    r.add({"core.dve.clock", param_kind::frequency, "1.12GHz", "DVE clock", "facts 1a", 0.1, 10});
    r.add({"core.hbm.bandwidth", param_kind::bandwidth, "410GB/s", "HBM bandwidth", "facts 1d", 1,
           1e4});
    r.add({"core.sbuf.partition_size", param_kind::size, "192KiB", "SBUF partition", "facts 1c",
           1024, 1048576});
    r.add({"core.psum.bank_conflicts", param_kind::boolean, "false", "PSUM conflicts", "facts"});
    r.add({"core.sbuf.port_sharing",
           param_kind::text,
           "dve+pool",
           "port sharing",
           "facts",
           -std::numeric_limits<double>::infinity(),
           std::numeric_limits<double>::infinity(),
           {"dve+pool", "none"}});
    r.add({"core.ratio", param_kind::real, "0.5", "a ratio", "-", 0, 1});
    return r;
}

class ConfigTest : public ::testing::Test {
  protected:
    param_registry reg = make_registry();
    config cfg{reg};
};

TEST(ParamRegistry, FindsDeclaredKeysAndRejectsDuplicates) {
    param_registry r = make_registry();
    ASSERT_NE(r.find("core.dma.engines"), nullptr);
    EXPECT_EQ(r.find("core.dma.engines")->kind, param_kind::integer);
    EXPECT_EQ(r.find("core.dma.engine"), nullptr);
    EXPECT_EQ(r.keys_under("core.dma."),
              (std::vector<std::string>{"core.dma.engines", "core.dma.fixed_latency"}));
    EXPECT_THROW(r.add({"core.dma.engines", param_kind::integer, "1", "again", "-"}),
                 std::logic_error);
    EXPECT_EQ(r.all().size(), 9u);
}

TEST_F(ConfigTest, DefaultsWhenNothingGiven) {
    EXPECT_EQ(cfg.text("name"), "trn1");
    EXPECT_EQ(cfg.integer("core.dma.engines"), 16);
    EXPECT_DOUBLE_EQ(cfg.time_ns("core.dma.fixed_latency"), 1300.0);
    EXPECT_DOUBLE_EQ(cfg.frequency_ghz("core.dve.clock"), 1.12);
    EXPECT_DOUBLE_EQ(cfg.bandwidth("core.hbm.bandwidth"), 410.0);
    EXPECT_EQ(cfg.size("core.sbuf.partition_size"), 192u * 1024u);
    EXPECT_FALSE(cfg.boolean("core.psum.bank_conflicts"));
    EXPECT_EQ(cfg.text("core.sbuf.port_sharing"), "dve+pool");
    EXPECT_DOUBLE_EQ(cfg.real("core.ratio"), 0.5);
    EXPECT_NO_THROW(cfg.check_all_read());
}

TEST_F(ConfigTest, NestedYamlMapsGiveDottedKeys) {
    cfg.load_yaml_text(
        "name: mychip\n"
        "core:\n"
        "  dma:\n"
        "    engines: 8\n"
        "    fixed_latency: 2us\n"
        "  hbm:\n"
        "    bandwidth: 1TB/s\n"
        "  sbuf: {partition_size: 96KiB, port_sharing: none}\n"
        "  psum:\n"
        "    bank_conflicts: true\n"
        "  ratio: 0.25\n",
        "chip.yaml");
    EXPECT_EQ(cfg.text("name"), "mychip");
    EXPECT_EQ(cfg.integer("core.dma.engines"), 8);
    EXPECT_DOUBLE_EQ(cfg.time_ns("core.dma.fixed_latency"), 2000.0);
    EXPECT_DOUBLE_EQ(cfg.bandwidth("core.hbm.bandwidth"), 1000.0);
    EXPECT_EQ(cfg.size("core.sbuf.partition_size"), 96u * 1024u);
    EXPECT_EQ(cfg.text("core.sbuf.port_sharing"), "none");
    EXPECT_TRUE(cfg.boolean("core.psum.bank_conflicts"));
    EXPECT_DOUBLE_EQ(cfg.real("core.ratio"), 0.25);
    EXPECT_DOUBLE_EQ(cfg.frequency_ghz("core.dve.clock"), 1.12);  // not given: default
    EXPECT_EQ(cfg.source_name(), "chip.yaml");
}

TEST_F(ConfigTest, UnknownKeyNamesKeyAndFileLine) {
    const std::string msg = user_error_of(
        [&] { cfg.load_yaml_text("core:\n  dma:\n    engines: 8\n    engine: 8\n", "chip.yaml"); });
    EXPECT_PRED2(contains, msg, "'core.dma.engine'");
    EXPECT_PRED2(contains, msg, "chip.yaml:4");
    // The hint lists the keys declared at that level.
    EXPECT_PRED2(contains, msg, "core.dma.engines, core.dma.fixed_latency");
}

TEST_F(ConfigTest, BadUnitNamesKeyOriginAndUnit) {
    const std::string msg = user_error_of(
        [&] { cfg.load_yaml_text("core:\n  dma:\n    fixed_latency: 3 parsecs\n", "chip.yaml"); });
    EXPECT_PRED2(contains, msg, "'core.dma.fixed_latency'");
    EXPECT_PRED2(contains, msg, "chip.yaml:3");
    EXPECT_PRED2(contains, msg, "parsecs");
    EXPECT_PRED2(contains, msg, "ps, ns, us, ms, s");
}

TEST_F(ConfigTest, OutOfRangeNamesKeyAndRange) {
    const std::string msg =
        user_error_of([&] { cfg.load_yaml_text("core:\n  dma:\n    engines: 65\n", "chip.yaml"); });
    EXPECT_PRED2(contains, msg, "'core.dma.engines'");
    EXPECT_PRED2(contains, msg, "chip.yaml:3");
    EXPECT_PRED2(contains, msg, "65");
    EXPECT_PRED2(contains, msg, "[1, 64]");
    // Boundaries are inclusive.
    EXPECT_NO_THROW(cfg.set("core.dma.engines=64"));
    EXPECT_NO_THROW(cfg.set("core.dma.engines=1"));
    const std::string low = user_error_of([&] { cfg.set("core.dma.engines=0"); });
    EXPECT_PRED2(contains, low, "'core.dma.engines'");
    EXPECT_PRED2(contains, low, "[1, 64]");
    // Ranges of unit-carrying keys are given in base units.
    const std::string size = user_error_of([&] { cfg.set("core.sbuf.partition_size=512B"); });
    EXPECT_PRED2(contains, size, "'core.sbuf.partition_size'");
    EXPECT_PRED2(contains, size, "[1024B, ");
}

TEST_F(ConfigTest, WrongValueKindsNameKey) {
    const std::string integer = user_error_of([&] { cfg.set("core.dma.engines=3.5"); });
    EXPECT_PRED2(contains, integer, "'core.dma.engines'");
    EXPECT_PRED2(contains, integer, "whole number");
    const std::string boolean = user_error_of([&] { cfg.set("core.psum.bank_conflicts=yes"); });
    EXPECT_PRED2(contains, boolean, "'core.psum.bank_conflicts'");
    EXPECT_PRED2(contains, boolean, "true or false");
    const std::string real = user_error_of([&] { cfg.set("core.ratio=half"); });
    EXPECT_PRED2(contains, real, "'core.ratio'");
    EXPECT_PRED2(contains, real, "not a number");
}

TEST_F(ConfigTest, MalformedYamlNamesOriginAndLine) {
    const std::string msg =
        user_error_of([&] { cfg.load_yaml_text("a: 1\nb: 2\n  c: 3\n", "broken.yaml"); });
    EXPECT_PRED2(starts_with, msg, "broken.yaml:3:");
    EXPECT_PRED2(contains, msg, "malformed YAML");
    const std::string flow =
        user_error_of([&] { cfg.load_yaml_text("core:\n  dma: {engines: 8\n", "flow.yaml"); });
    EXPECT_PRED2(starts_with, flow, "flow.yaml:");
}

TEST_F(ConfigTest, NonMapRootRejected) {
    const std::string msg = user_error_of([&] { cfg.load_yaml_text("- a\n- b\n", "list.yaml"); });
    EXPECT_PRED2(starts_with, msg, "list.yaml:");
    EXPECT_PRED2(contains, msg, "map");
}

TEST_F(ConfigTest, ListsAndEmptyValuesRejected) {
    const std::string list = user_error_of(
        [&] { cfg.load_yaml_text("core:\n  dma:\n    engines: [1, 2]\n", "chip.yaml"); });
    EXPECT_PRED2(contains, list, "'core.dma.engines'");
    EXPECT_PRED2(contains, list, "chip.yaml:3");
    EXPECT_PRED2(contains, list, "list");
    const std::string empty =
        user_error_of([&] { cfg.load_yaml_text("core:\n  dma:\n    engines:\n", "chip.yaml"); });
    EXPECT_PRED2(contains, empty, "'core.dma.engines'");
    EXPECT_PRED2(contains, empty, "nothing");
}

TEST_F(ConfigTest, SetOverridesYaml) {
    cfg.load_yaml_text("core:\n  dma:\n    engines: 8\n", "chip.yaml");
    cfg.set("core.dma.engines=32");
    cfg.set("core.hbm.bandwidth=600GB/s");
    EXPECT_EQ(cfg.integer("core.dma.engines"), 32);
    EXPECT_DOUBLE_EQ(cfg.bandwidth("core.hbm.bandwidth"), 600.0);
    EXPECT_EQ(cfg.effective().at("core.dma.engines"), "32");
}

TEST_F(ConfigTest, SetErrorsNameAssignment) {
    const std::string no_eq = user_error_of([&] { cfg.set("core.dma.engines"); });
    EXPECT_PRED2(contains, no_eq, "'core.dma.engines'");
    EXPECT_PRED2(contains, no_eq, "KEY.PATH=VALUE");
    EXPECT_PRED2(contains, user_error_of([&] { cfg.set("=5"); }), "KEY.PATH=VALUE");
    const std::string unknown = user_error_of([&] { cfg.set("core.dma.engins=5"); });
    EXPECT_PRED2(contains, unknown, "'core.dma.engins'");
    EXPECT_PRED2(contains, unknown, "--set core.dma.engins=5");
    EXPECT_EQ(cfg.integer("core.dma.engines"), 16);  // nothing was assigned
}

TEST_F(ConfigTest, CheckAllReadNamesGivenButUnreadKey) {
    cfg.load_yaml_text("core:\n  dma:\n    engines: 8\n  ratio: 0.1\n", "chip.yaml");
    cfg.integer("core.dma.engines");
    cfg.time_ns("core.dma.fixed_latency");  // read but not given: irrelevant
    const std::string msg = user_error_of([&] { cfg.check_all_read(); });
    EXPECT_PRED2(contains, msg, "'core.ratio'");
    EXPECT_PRED2(contains, msg, "chip.yaml:4");
    EXPECT_FALSE(contains(msg, "core.dma.engines"));
    cfg.real("core.ratio");
    EXPECT_NO_THROW(cfg.check_all_read());
}

TEST_F(ConfigTest, TextChoicesEnforced) {
    const std::string msg = user_error_of([&] { cfg.set("core.sbuf.port_sharing=dve+act"); });
    EXPECT_PRED2(contains, msg, "'core.sbuf.port_sharing'");
    EXPECT_PRED2(contains, msg, "'dve+act'");
    EXPECT_PRED2(contains, msg, "dve+pool, none");
    EXPECT_NO_THROW(cfg.set("core.sbuf.port_sharing=none"));
    EXPECT_EQ(cfg.text("core.sbuf.port_sharing"), "none");
    EXPECT_NO_THROW(cfg.set("name=anything goes"));  // no choices declared
}

TEST_F(ConfigTest, EffectiveListsEveryDeclaredKey) {
    cfg.set("core.dve.clock=1400MHz");
    const auto eff = cfg.effective();
    ASSERT_EQ(eff.size(), reg.all().size());
    for (const auto& d : reg.all()) {
        ASSERT_EQ(eff.count(d.key), 1u) << d.key;
        if (d.key != "core.dve.clock") {
            EXPECT_EQ(eff.at(d.key), d.default_value) << d.key;
        }
    }
    EXPECT_EQ(eff.at("core.dve.clock"), "1400MHz");
}

TEST_F(ConfigTest, ReadingUndeclaredOrWithWrongKindIsAProgrammingError) {
    EXPECT_THROW(cfg.integer("core.nope"), std::logic_error);
    EXPECT_THROW(cfg.time_ns("core.dma.engines"), std::logic_error);
}

TEST_F(ConfigTest, MissingFileNamesPath) {
    const std::string msg =
        user_error_of([&] { cfg.load_yaml_file("/nonexistent/dir/config.yaml"); });
    EXPECT_PRED2(contains, msg, "/nonexistent/dir/config.yaml");
}

TEST_F(ConfigTest, AnAliasThatContainsItselfIsRejectedNotRecursedForever) {
    const std::string msg =
        user_error_of([&] { cfg.load_yaml_text("core: &c\n  hbm: *c\n", "self.yaml"); });
    EXPECT_PRED2(starts_with, msg, "self.yaml:2: config keys nest deeper than 16 levels");
    EXPECT_PRED2(contains, msg, "alias");
}

TEST_F(ConfigTest, AnAliasBombIsRejectedBeforeItExpands) {
    // Each level refers twice to the one before: 2^20 values if expanded.
    std::string text = "l0: &l0 {x: 1, y: 2}\n";
    for (int i = 1; i <= 20; ++i)
        text += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " {p: *l" +
                std::to_string(i - 1) + ", q: *l" + std::to_string(i - 1) + "}\n";
    const std::string msg = user_error_of([&] { cfg.load_yaml_text(text, "bomb.yaml"); });
    EXPECT_PRED2(contains, msg, "expands to more than 10000 values");
    EXPECT_PRED2(starts_with, msg, "bomb.yaml:");
}

TEST_F(ConfigTest, KeysMustBePlainNames) {
    for (const char* text : {"? \n: 1\n", "? [a, b]\n: 1\n", "core:\n  ? {x: 1}\n  : 2\n"}) {
        const std::string msg = user_error_of([&] { cfg.load_yaml_text(text, "keys.yaml"); });
        EXPECT_PRED2(starts_with, msg, "keys.yaml:") << text;
        EXPECT_PRED2(contains, msg, "a config key must be a plain name") << text;
    }
}

TEST_F(ConfigTest, SizesOf2To64BytesOrMoreAreRejected) {
    const std::string msg = user_error_of(
        [&] { cfg.load_yaml_text("core:\n  sbuf:\n    partition_size: 16EiB\n", "big.yaml"); });
    EXPECT_PRED2(contains, msg, "partition_size");
    const std::string big = user_error_of([&] {
        cfg.load_yaml_text("core:\n  sbuf:\n    partition_size: 20000000000000000000B\n",
                           "big.yaml");
    });
    EXPECT_PRED2(contains, big, "too large a size");
    EXPECT_PRED2(contains, big, "big.yaml:3");
}

TEST_F(ConfigTest, EndlessOrBinaryFilesAreRejected) {
    const std::string msg = user_error_of([&] { cfg.load_yaml_file("/dev/zero"); });
    EXPECT_PRED2(contains, msg, "/dev/zero");
    EXPECT_PRED2(contains, msg, "larger than 1048576 bytes");
}

}  // namespace
