// matmul, transpose and ffnn drivers built (not run) with the platform configs: instruction and
// transfer counts against closed forms of each variant, re-tiling when the array changes, and
// the errors of shapes and modes a platform cannot run.
#include <gtest/gtest.h>

#include "support/expect_error.h"
#include "support/platform_config.h"
#include "support/program_queries.h"
#include "workloads/builder/kernel_builder.h"

namespace {

using namespace trn;
using trn::testing::build_workload;
using trn::testing::contains;
using trn::testing::platform_config;
using trn::testing::user_error_of;

using trn::testing::count;

// Transfers reading (loads) or writing (stores) the named HBM region.
std::size_t transfers(const program& p, const std::string& region, bool load) {
    return trn::testing::region_transfers(p, region, load).first;
}

struct shape {
    std::uint64_t m, k, n;
};

program matmul(const std::string& variant, shape s, const std::vector<std::string>& sets = {}) {
    return build_workload("matmul",
                          {{"variant", variant},
                           {"m", std::to_string(s.m)},
                           {"k", std::to_string(s.k)},
                           {"n", std::to_string(s.n)}},
                          platform_config("trn1", sets))
        .prog;
}

TEST(matmul, tiled_counts) {
    const shape s{256, 512, 1024};
    const std::uint64_t MT = s.m / 128, KT = s.k / 128, NT = s.n / 512;
    const program p = matmul("tiled", s);
    EXPECT_EQ(count(p, engine_kind::pe, opcode::matmul), MT * NT * KT);
    EXPECT_EQ(transfers(p, "lhsT", true), MT * NT * KT);
    EXPECT_EQ(transfers(p, "rhs", true), MT * NT * KT);
    EXPECT_EQ(transfers(p, "result", false), MT * NT);
    // the PSUM evictions (nl.copy: the compiler's engine) shared by the Vector and Scalar engines
    EXPECT_EQ(count(p, engine_kind::dve, opcode::tensor_copy) +
                  count(p, engine_kind::act, opcode::activation),
              MT * NT);
    EXPECT_GT(count(p, engine_kind::act, opcode::activation), 0u);
}

TEST(matmul, hoist_load_counts) {
    const shape s{256, 512, 1024};
    const std::uint64_t MT = s.m / 128, KT = s.k / 128, NT = s.n / 512;
    const program p = matmul("hoist_load", s);
    EXPECT_EQ(count(p, engine_kind::pe, opcode::matmul), MT * NT * KT);
    EXPECT_EQ(transfers(p, "lhsT", true), MT * KT);
    EXPECT_EQ(transfers(p, "rhs", true), MT * NT * KT);
}

TEST(matmul, block_free_dimension_counts) {
    const shape s{512, 256, 2048};
    const std::uint64_t MT = s.m / 128, KT = s.k / 128, NT = s.n / 512;
    const program p = matmul("block_free_dimension", s);
    EXPECT_EQ(count(p, engine_kind::pe, opcode::matmul), MT * NT * KT);
    EXPECT_EQ(transfers(p, "lhsT", true), MT * KT);
    EXPECT_EQ(transfers(p, "rhs", true), MT / 2 * NT * KT);
    EXPECT_EQ(transfers(p, "result", false), MT * NT);
}

TEST(matmul, fully_optimized_counts) {
    const shape s{2048, 2048, 2048};
    const std::uint64_t MT = s.m / 128, KT = s.k / 128, NT = s.n / 512;
    const program p = matmul("fully_optimized", s);
    EXPECT_EQ(count(p, engine_kind::pe, opcode::matmul), MT * NT * KT);
    EXPECT_EQ(transfers(p, "rhs", true), NT / 2 * KT);             // once per K-block
    EXPECT_EQ(transfers(p, "lhsT", true), NT / 2 * (KT / 8) * 8);  // per (n-block, K-block)
    EXPECT_EQ(transfers(p, "result", false), NT / 2 * MT);
    // Partial sums accumulate in SBUF once per (K-block, tile).
    EXPECT_EQ(count(p, engine_kind::dve, opcode::tensor_tensor), (KT / 8) * MT * NT);
    // Each matmul contracts the full 128-row K tile of a 128 x 512 output tile.
    for (const auto& ins : p.engines[std::size_t(engine_kind::pe)]) {
        EXPECT_EQ(ins.src0.partitions, 128u);
        EXPECT_EQ(ins.src1.elems, 512u);
    }
}

TEST(matmul, first_matmul_of_a_tile_overwrites_psum_and_the_rest_accumulate) {
    const program p = matmul("tiled", {128, 512, 512});
    const auto& pe = p.engines[std::size_t(engine_kind::pe)];
    ASSERT_EQ(pe.size(), 4u);
    EXPECT_FALSE(pe[0].flags & flag::accumulate);
    for (std::size_t i = 1; i < 4; ++i)
        EXPECT_TRUE(pe[i].flags & flag::accumulate);
    // Accumulating matmuls do not wait for each other (PSUM accumulation is in order).
    for (std::size_t i = 1; i < 4; ++i)
        for (const auto& w : pe[i].waits)
            EXPECT_NE(w.sem, semaphore_of_engine(engine_kind::pe));
}

TEST(matmul, array_size_retiles_the_workload) {
    const shape s{512, 512, 1024};
    const std::size_t base = count(matmul("tiled", s), engine_kind::pe, opcode::matmul);
    EXPECT_EQ(count(matmul("tiled", s, {"core.pe.cols=64"}), engine_kind::pe, opcode::matmul),
              2 * base);
    EXPECT_EQ(
        count(matmul("tiled", s, {"core.pe.moving_max=256"}), engine_kind::pe, opcode::matmul),
        2 * base);
    EXPECT_EQ(count(matmul("tiled", s, {"core.pe.rows=64"}), engine_kind::pe, opcode::matmul),
              2 * base);
    // A 256-wide array needs 256 partitions to contract over.
    EXPECT_EQ(count(matmul("tiled", s,
                           {"core.pe.rows=256", "core.pe.cols=256", "core.sbuf.partitions=256"}),
                    engine_kind::pe, opcode::matmul),
              base / 4);
}

TEST(matmul, shape_errors_name_the_parameter_and_tile) {
    const config cfg = platform_config("trn1");
    auto err = user_error_of([&] {
        build_workload("matmul", {{"m", "100"}, {"k", "128"}, {"n", "512"}}, cfg);
    });
    EXPECT_TRUE(contains(err, "m=100")) << err;
    EXPECT_TRUE(contains(err, "128")) << err;
    err = user_error_of([&] {
        build_workload("matmul", {{"m", "128"}, {"k", "128"}, {"n", "700"}}, cfg);
    });
    EXPECT_TRUE(contains(err, "n=700")) << err;
    EXPECT_TRUE(contains(err, "core.pe.moving_max")) << err;
    err = user_error_of([&] {
        build_workload(
            "matmul", {{"variant", "fully_optimized"}, {"m", "1024"}, {"k", "1024"}, {"n", "1024"}},
            cfg);
    });
    EXPECT_TRUE(contains(err, "m=1024")) << err;
    EXPECT_TRUE(contains(err, "tiles per block")) << err;
    err = user_error_of([&] {
        build_workload(
            "matmul", {{"perf_mode", "double_row"}, {"m", "128"}, {"k", "128"}, {"n", "512"}}, cfg);
    });
    EXPECT_TRUE(contains(err, "fp8")) << err;
}

TEST(matmul, hoisted_operands_that_cannot_fit_are_rejected) {
    const config cfg = platform_config("trn1");
    const auto err = user_error_of([&] {
        build_workload("matmul",
                       {{"variant", "block_free_dimension"},
                        {"m", "256"},
                        {"k", "16384"},
                        {"n", "1024"},
                        {"dtype", "float32"}},
                       cfg);
    });
    EXPECT_TRUE(contains(err, "bytes per partition")) << err;
    EXPECT_TRUE(contains(err, "block_free_dimension")) << err;
}

TEST(transpose, one_pe_transpose_per_tile) {
    const config cfg = platform_config("trn2");
    const program p = build_workload("transpose", {{"m", "256"}, {"n", "384"}}, cfg).prog;
    EXPECT_EQ(count(p, engine_kind::pe, opcode::transpose), 2u * 3u);
    EXPECT_EQ(count(p, engine_kind::dve, opcode::tensor_copy) +
                  count(p, engine_kind::act, opcode::activation),
              6u);
    EXPECT_EQ(transfers(p, "in", true), 6u);
    EXPECT_EQ(transfers(p, "out", false), 6u);
    const auto err = user_error_of([&] {
        build_workload("transpose", {{"m", "100"}, {"n", "128"}}, cfg);
    });
    EXPECT_TRUE(contains(err, "multiple of 128")) << err;
}

TEST(ffnn, kernels_and_layers) {
    const config cfg = platform_config("trn1");
    const std::uint64_t N = 256, D = 256, H = 512, C = 512;
    const program p = build_workload("ffnn",
                                     {{"n", std::to_string(N)},
                                      {"d", std::to_string(D)},
                                      {"h", std::to_string(H)},
                                      {"c", std::to_string(C)}},
                                     cfg)
                          .prog;
    // Two transposes (X and H), two tiled matmuls.
    EXPECT_EQ(count(p, engine_kind::pe, opcode::transpose),
              (N / 128) * (D / 128) + (N / 128) * (H / 128));
    EXPECT_EQ(count(p, engine_kind::pe, opcode::matmul),
              (N / 128) * (H / 512) * (D / 128) + (N / 128) * (C / 512) * (H / 128));
    // Softmax: one exp and one reciprocal per 128-row block; argmax with max8 + find_index8.
    std::size_t exps = 0;
    for (const auto& ins : p.engines[std::size_t(engine_kind::act)])
        exps += ins.op == opcode::activation && ins.func == act_func::exp;
    EXPECT_EQ(exps, N / 128);
    EXPECT_EQ(count(p, engine_kind::dve, opcode::max8), N / 128);
    EXPECT_EQ(count(p, engine_kind::dve, opcode::find_index8), N / 128);
    EXPECT_EQ(transfers(p, "predictions", false), N / 128);
    const auto err = user_error_of([&] {
        build_workload("ffnn", {{"n", "128"}, {"d", "128"}, {"h", "512"}, {"c", "64"}}, cfg);
    });
    EXPECT_TRUE(contains(err, "c=64")) << err;
}

TEST(builder, psum_oversubscription_names_the_tile) {
    const config cfg = platform_config("trn1");
    kernel_builder kb(
        kernel_builder::options(cfg, trn::testing::limits_of(cfg), kernel_style::isa));
    for (int i = 0; i < 8; ++i)
        kb.declare_tile("acc" + std::to_string(i), mem_space::psum, 128, 512, dtype::float32);
    const auto err =
        user_error_of([&] { kb.declare_tile("acc8", mem_space::psum, 128, 512, dtype::float32); });
    EXPECT_TRUE(contains(err, "psum")) << err;
    EXPECT_TRUE(contains(err, "acc8")) << err;
    EXPECT_TRUE(contains(err, "16384")) << err;
}

TEST(builder, phases_free_memory_and_keep_dependencies) {
    const config cfg = platform_config("trn1");
    kernel_builder kb(
        kernel_builder::options(cfg, trn::testing::limits_of(cfg), kernel_style::isa));
    const hbm_tensor in = kb.input("in", 128 * 512, dtype::float32, 0, 1, 1);
    kb.begin_phase();
    const std::size_t a = kb.declare_tile("a", mem_space::sbuf, 128, 40000, dtype::float32);
    const tile ta = kb.next(a);
    kb.load(kernel_builder::slice(ta, 0, 512), in, kb.view(in, 0, 128, 512, 512));
    kb.end_phase();
    // The freed 160 KB can be allocated again; its first writer waits for the old load.
    const std::size_t b = kb.declare_tile("b", mem_space::sbuf, 128, 40000, dtype::float32);
    kb.memset(kb.next(b), 0.0f);
    EXPECT_THROW(kb.next(a), std::logic_error);
    const program p = kb.finish();
    const auto& ms = p.engines[std::size_t(engine_kind::dve)].at(0);
    ASSERT_EQ(ms.waits.size(), 1u);
    EXPECT_EQ(ms.waits[0].sem, semaphore_of_queue(0));
}

}  // namespace
