// conv2d built (not run) with the platform configs: counts of matmuls, DMA transfers and bytes
// against closed forms of each variant, the measured kernel's 7992 matmuls and 2664 row loads,
// cases and fleets, and the errors of shapes it cannot run.
#include <gtest/gtest.h>

#include "support/expect_error.h"
#include "support/platform_config.h"
#include "support/program_queries.h"
#include "workloads/conv2d/conv2d.h"

namespace {

using namespace trn;
using trn::testing::build_workload;
using trn::testing::contains;
using trn::testing::platform_config;
using trn::testing::user_error_of;

using trn::testing::count;
using trn::testing::region;

std::pair<std::size_t, std::uint64_t> transfers(const program& p, const std::string& name,
                                                bool load) {
    return trn::testing::region_transfers(p, name, load);
}

struct conv {
    std::uint64_t batch = 1, cin = 256, cout = 256, k = 3, h = 224, w = 224, pool = 1;
    std::string dtype = "float16", variant = "row";
    std::uint64_t oh() const { return h - k + 1; }
    std::uint64_t ow() const { return w - k + 1; }
    std::uint64_t tiles(std::uint64_t c) const { return (c + 127) / 128; }
    program build(const std::string& cfg = "trn2") const {
        return build_workload("conv2d",
                              {{"variant", variant},
                               {"batch", std::to_string(batch)},
                               {"in", std::to_string(cin)},
                               {"out", std::to_string(cout)},
                               {"filter", std::to_string(k)},
                               {"h", std::to_string(h)},
                               {"w", std::to_string(w)},
                               {"pool", std::to_string(pool)},
                               {"dtype", dtype}},
                              platform_config(cfg))
            .prog;
    }
};

TEST(conv2d, row_is_the_measured_kernel) {
    const conv c;  // the default: CS149's 224x224, 256 -> 256, 3x3, float16
    const program p = c.build();
    EXPECT_EQ(count(p, engine_kind::pe, opcode::matmul), 7992u);
    const auto [loads, bytes] = transfers(p, "X", true);
    EXPECT_EQ(loads, 2664u);
    EXPECT_EQ(bytes, 2664u * 128 * 224 * 2);
    // Every matmul: 128 x 128 stationary tap, moving size 222.
    for (const auto& ins : p.engines[std::size_t(engine_kind::pe)])
        if (ins.op == opcode::matmul) {
            EXPECT_EQ(ins.src0.partitions, 128u);
            EXPECT_EQ(ins.src1.elems, 222u);
        }
    // Weights once per (co, ci) pair, each tap transposed once; one bias load per co tile.
    EXPECT_EQ(transfers(p, "W", true).first, 4u);
    EXPECT_EQ(count(p, engine_kind::pe, opcode::transpose), 4u * 9);
    EXPECT_EQ(transfers(p, "bias", true).first, 2u);
    EXPECT_EQ(transfers(p, "out", false).first, 2u * 222);
}

TEST(conv2d, row_counts_closed_form) {
    for (std::uint64_t pool : {1, 2}) {
        conv c;
        c.batch = 2;
        c.cin = 200;   // 2 in-channel tiles (128 + 72)
        c.cout = 160;  // 2 out-channel tiles
        c.h = 20;
        c.w = 24;
        c.k = 5;
        c.pool = pool;
        const program p = c.build();
        const std::uint64_t rows = c.oh() / pool * pool;
        EXPECT_EQ(count(p, engine_kind::pe, opcode::matmul), c.batch * 2 * rows * 2 * c.k * c.k);
        EXPECT_EQ(transfers(p, "X", true).first, c.batch * 2 * rows * 2 * c.k);
        EXPECT_EQ(transfers(p, "out", false).first, c.batch * 2 * (c.oh() / pool));
        EXPECT_EQ(transfers(p, "out", false).second,
                  c.batch * c.cout * (c.oh() / pool) * (c.ow() / pool) * 2);
    }
}

TEST(conv2d, wide_rows_split_at_the_moving_limit) {
    conv c;
    c.cin = c.cout = 128;
    c.h = 4;
    c.w = 700;  // 698 output columns: chunks of 512 and 186
    const program p = c.build("trn1");
    EXPECT_EQ(count(p, engine_kind::pe, opcode::matmul), 2u * 2 * 9);
    for (const auto& ins : p.engines[std::size_t(engine_kind::pe)])
        if (ins.op == opcode::matmul) {
            EXPECT_LE(ins.src1.elems, 512u);
        }
}

TEST(conv2d, optimized_loads_each_input_row_block_once) {
    conv c;
    c.variant = "optimized";
    c.h = 34;
    c.w = 32;  // 16 whole rows (of 32) fit the 512 moving limit: 32 output rows in 2 blocks
    const program p = c.build();
    const std::uint64_t R = 512 / c.w, blocks = (c.oh() + R - 1) / R;
    EXPECT_EQ(transfers(p, "X", true).first, blocks * 2);  // one per block and ci tile
    EXPECT_EQ(count(p, engine_kind::pe, opcode::matmul), blocks * 2 * 2 * 9);
    for (const auto& ins : p.engines[std::size_t(engine_kind::pe)])
        if (ins.op == opcode::matmul) {
            EXPECT_LE(ins.src1.elems, R * c.w);
        }
    EXPECT_EQ(transfers(p, "out", false).second, c.cout * c.oh() * c.ow() * 2);
}

TEST(conv2d, baseline_reloads_weights_for_every_row) {
    conv c;
    c.variant = "baseline";
    c.cin = c.cout = 128;
    c.h = 10;
    c.w = 16;
    const program p = c.build();
    EXPECT_EQ(transfers(p, "W", true).first, c.oh());
    EXPECT_EQ(count(p, engine_kind::pe, opcode::transpose), c.oh() * 9);
    EXPECT_EQ(count(p, engine_kind::pe, opcode::matmul), c.oh() * 9);
}

TEST(conv2d, cases_and_fleets) {
    const config cfg = platform_config("trn1");
    const program p =
        build_workload("conv2d", {{"case", "in128_out256_filter5x5_batch4_32x32_float32_pool2"}},
                       cfg)
            .prog;
    EXPECT_EQ(region(p, "X").bytes, 4u * 128 * 32 * 32 * 4);
    EXPECT_EQ(region(p, "out").bytes, 4u * 256 * 14 * 14 * 4);
    const workload& w = find_workload("conv2d");
    EXPECT_EQ(w.expand({{"fleet", "cs152"}}).size(), 14u);
    EXPECT_EQ(w.expand({{"fleet", "cs149"}}).size(), 8u);
    EXPECT_EQ(w.expand({{"variant", "row"}}).size(), 1u);
    auto err = user_error_of([&] { w.expand({{"fleet", "cs999"}}); });
    EXPECT_TRUE(contains(err, "cs149")) << err;
    err = user_error_of([&] { w.expand({{"fleet", "cs152"}, {"h", "8"}}); });
    EXPECT_TRUE(contains(err, "'h'")) << err;
    err = user_error_of([&] { build_workload("conv2d", {{"case", "in128_out256"}}, cfg); });
    EXPECT_TRUE(contains(err, "in{C}_out{C}")) << err;
    err = user_error_of([&] {
        build_workload("conv2d", {{"case", "in1_out1_filter3x3_batch1_8x8_float32"}, {"h", "9"}},
                       cfg);
    });
    EXPECT_TRUE(contains(err, "'h'")) << err;
}

TEST(conv2d, impossible_shapes_are_rejected) {
    const config cfg = platform_config("trn1");
    auto err = user_error_of([&] {
        build_workload("conv2d", {{"h", "2"}, {"w", "8"}, {"filter", "3"}}, cfg);
    });
    EXPECT_TRUE(contains(err, "larger than")) << err;
    err = user_error_of([&] { build_workload("conv2d", {{"pool", "3"}}, cfg); });
    EXPECT_TRUE(contains(err, "'pool'")) << err;
    err = user_error_of([&] {
        build_workload("conv2d", {{"h", "4"}, {"w", "60000"}, {"in", "128"}, {"out", "128"}}, cfg);
    });
    EXPECT_TRUE(contains(err, "too wide")) << err;
}

}  // namespace
