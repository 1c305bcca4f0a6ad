// Every workload variant run in functional mode on small shapes: the model's output must match
// the double-precision reference (exit status 0), and a deliberately wrong kernel must not.
#include <gtest/gtest.h>

#include "support/run_sim.h"

namespace {

using trn::testing::run_sim;

void expect_passes(const std::string& args) {
    for (const char* cfg : {"trn1", "trn2"}) {
        const auto r = run_sim("--config " + std::string(cfg) + " " + args + " --functional -q");
        EXPECT_EQ(r.status, 0) << cfg << " " << args << "\n" << r.output;
    }
}

TEST(functional, vector_add_variants) {
    expect_passes("--workload vector_add --param variant=naive --param n=128");
    expect_passes(
        "--workload vector_add --param variant=tiled --param n=1024 --param row_chunk=128");
    expect_passes(
        "--workload vector_add --param variant=stream --param n=25600 --param free_dim=20");
    expect_passes(
        "--workload vector_add --param variant=stream --param n=25600 --param "
        "free_dim=20 --param layout=strided --param style=isa --param dtype=bfloat16");
    expect_passes("--workload vector_add --param variant=direct_alloc --param n=256000");
}

TEST(functional, matmul_variants_and_dtypes) {
    for (const char* v : {"tiled", "hoist_load", "block_free_dimension"})
        expect_passes(std::string("--workload matmul --param m=256 --param k=256 --param n=1024 "
                                  "--param variant=") +
                      v);
    expect_passes(
        "--workload matmul --param variant=fully_optimized --param m=2048 --param "
        "k=1024 --param n=1024");
    for (const char* t : {"float32", "float16", "fp8"})
        expect_passes(std::string("--workload matmul --param m=128 --param k=384 --param n=512 "
                                  "--param style=isa --param dtype=") +
                      t);
}

TEST(functional, transpose_is_exact) {
    expect_passes("--workload transpose --param m=256 --param n=384");
    expect_passes("--workload transpose --param m=128 --param n=256 --param dtype=bfloat16");
}

TEST(functional, ffnn_predicts_every_class) {
    for (const char* v : {"tiled", "hoist_load"})
        expect_passes(std::string("--workload ffnn --param n=256 --param d=256 --param h=512 "
                                  "--param c=512 --param matmul=") +
                      v);
    expect_passes(
        "--workload ffnn --param n=256 --param d=128 --param h=1024 --param c=1024 "
        "--param matmul=block_free_dimension --param style=isa");
}

TEST(functional, double_row_fp8_runs_on_trn2_only) {
    auto r = run_sim(
        "--config trn2 --workload matmul --param m=128 --param k=256 --param n=512 "
        "--param dtype=fp8 --param perf_mode=double_row --functional -q");
    EXPECT_EQ(r.status, 0) << r.output;
    r = run_sim(
        "--config trn1 --workload matmul --param m=128 --param k=256 --param n=512 "
        "--param dtype=fp8 --param perf_mode=double_row -q");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("double-row"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("core.pe.double_row"), std::string::npos) << r.output;
}

TEST(functional, conv2d_every_variant_pool_and_dtype) {
    for (const char* v : {"row", "optimized", "baseline"})
        for (const char* pool : {"1", "2"})
            for (const char* t : {"float32", "float16"})
                expect_passes(std::string("--workload conv2d --param h=12 --param w=18 --param "
                                          "in=128 --param out=128 --param variant=") +
                              v + " --param pool=" + pool + " --param dtype=" + t);
    // Channels and widths that are not tile multiples; a 5x5 filter; a batch; bfloat16.
    expect_passes(
        "--workload conv2d --param h=11 --param w=13 --param in=200 --param out=150 "
        "--param filter=5 --param batch=2 --param pool=2 --param variant=optimized");
    expect_passes(
        "--workload conv2d --param h=9 --param w=10 --param in=3 --param out=64 "
        "--param dtype=bfloat16");
    expect_passes("--workload conv2d --param h=5 --param w=600 --param in=128 --param out=128");
    expect_passes("--workload conv2d --param case=in128_out128_filter3x3_batch2_8x8_float32_pool2");
}

TEST(functional, alloc_bad_gives_a_wrong_answer) {
    const auto r = run_sim(
        "--config trn1 --workload vector_add --param variant=alloc_bad "
        "--param n=256000 --functional -q");
    EXPECT_EQ(r.status, 1) << r.output;
}

}  // namespace
