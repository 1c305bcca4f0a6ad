// vector_add through the workload registry, with the trn1 config: closed forms of every variant
// (transfers, bytes, instructions, HBM layout, SBUF placement) and its parameter errors.
#include "workloads/vector_add/vector_add.h"

#include <gtest/gtest.h>

#include <cstring>

#include "platforms/neuron_core.h"
#include "support/expect_error.h"
#include "support/platform_config.h"
#include "workloads/registry.h"

namespace {

using namespace trn;
using trn::testing::contains;
using trn::testing::user_error_of;

const config& trn1_config() {
    static const config cfg = trn::testing::platform_config("trn1");
    return cfg;
}

program_limits trn1_limits() {
    return trn::testing::limits_of(trn1_config());
}

built_kernel build(const std::map<std::string, std::string>& given) {
    return trn::testing::build_workload("vector_add", given, trn1_config());
}

std::uint64_t dma_bytes(const program& p) {
    std::uint64_t bytes = 0;
    for (const auto& q : p.queues)
        for (const auto& t : q) {
            EXPECT_EQ(t.src.bytes(), t.dst.bytes());
            bytes += t.src.bytes();
        }
    return bytes;
}

const std::vector<instruction>& stream(const program& p, engine_kind e) {
    return p.engines[std::size_t(e)];
}

// The HBM side of transfer m of a queue (loads: src; stores: dst).
const operand& hbm_side(const program& p, std::size_t q, std::size_t m) {
    const dma_transfer& t = p.queues.at(q).at(m);
    return t.src.space == mem_space::hbm ? t.src : t.dst;
}
const operand& sbuf_side(const program& p, std::size_t q, std::size_t m) {
    const dma_transfer& t = p.queues.at(q).at(m);
    return t.src.space == mem_space::hbm ? t.dst : t.src;
}

// Common closed forms: 3 transfers and 1 DVE add per iteration, every element moved once per
// tensor, queues 0/1 load a/b and queue 2 stores out; the program passes validation.
void expect_common(const program& p, std::uint64_t n, std::uint64_t iterations,
                   std::size_t elem_bytes = 4) {
    EXPECT_EQ(p.transfer_count(), 3 * iterations);
    ASSERT_EQ(p.queues.size(), 3u);
    for (const auto& q : p.queues)
        EXPECT_EQ(q.size(), iterations);
    EXPECT_EQ(dma_bytes(p), 3 * n * elem_bytes);
    const auto& dve = stream(p, engine_kind::dve);
    ASSERT_EQ(dve.size(), iterations);
    for (const auto& ins : dve) {
        EXPECT_EQ(ins.op, opcode::tensor_tensor);
        EXPECT_EQ(ins.alu, alu_op::add);
    }
    ASSERT_EQ(p.regions.size(), 3u);
    EXPECT_EQ(p.regions[0].name, "a");
    EXPECT_EQ(p.regions[1].name, "b");
    EXPECT_EQ(p.regions[2].name, "out");
    for (const auto& r : p.regions)
        EXPECT_EQ(r.bytes, n * elem_bytes);
    EXPECT_TRUE(p.regions[0].input && p.regions[1].input && !p.regions[2].input);
    for (std::size_t q = 0; q < 3; ++q)
        EXPECT_EQ(hbm_side(p, q, 0).offset, p.regions[q].offset);
    EXPECT_NO_THROW(validate_program(p, trn1_limits()));
}

TEST(VectorAdd, RegisteredWithDocumentedParameters) {
    const workload& w = find_workload("vector_add");
    EXPECT_STREQ(w.name(), "vector_add");
    std::vector<std::string> names;
    for (const auto& d : w.params())
        names.push_back(d.name);
    EXPECT_EQ(names, (std::vector<std::string>{"variant", "n", "row_chunk", "free_dim", "layout",
                                               "buffers", "style", "dtype"}));
    const std::string msg = user_error_of([] { find_workload("matmul_9000"); });
    EXPECT_PRED2(contains, msg, "'matmul_9000'");
    EXPECT_PRED2(contains, msg, "vector_add");
}

TEST(VectorAdd, TiledClosedForms) {
    const std::uint64_t n = 4096, row_chunk = 32, iterations = n / row_chunk;
    const program p =
        build({{"variant", "tiled"}, {"n", std::to_string(n)}, {"row_chunk", "32"}}).prog;
    expect_common(p, n, iterations);
    for (std::uint64_t m = 0; m < iterations; ++m) {
        const operand& h = hbm_side(p, 0, m);
        EXPECT_EQ(h.partitions, row_chunk);
        EXPECT_EQ(h.elems, 1u);
        EXPECT_EQ(h.row_stride, 4u);
        EXPECT_EQ(h.offset, p.regions[0].offset + m * row_chunk * 4);
    }
}

TEST(VectorAdd, TiledDefaultIsOneRowPerTile) {
    const std::uint64_t n = 1280;
    const program p = build({{"n", std::to_string(n)}}).prog;  // variant=tiled, row_chunk=1
    expect_common(p, n, n);
    EXPECT_EQ(hbm_side(p, 2, 7).offset, p.regions[2].offset + 7 * 4);
}

TEST(VectorAdd, StreamContiguousClosedForms) {
    const std::uint64_t P = 128, fd = 8, n = P * fd * 5, iterations = n / (P * fd);
    const program p =
        build({{"variant", "stream"}, {"n", std::to_string(n)}, {"free_dim", "8"}}).prog;
    expect_common(p, n, iterations);
    for (std::uint64_t m = 0; m < iterations; ++m)
        for (std::size_t q = 0; q < 3; ++q) {
            const operand& h = hbm_side(p, q, m);
            EXPECT_EQ(h.partitions, P);
            EXPECT_EQ(h.elems, fd);
            EXPECT_EQ(h.row_stride, fd * 4);                            // rows back to back
            EXPECT_EQ(h.offset, p.regions[q].offset + m * P * fd * 4);  // tile m is one block
            EXPECT_EQ(sbuf_side(p, q, m).partitions, P);
        }
}

TEST(VectorAdd, StreamStridedClosedForms) {
    const std::uint64_t P = 128, fd = 4, n = P * fd * 6, iterations = n / (P * fd);
    const program p = build({{"variant", "stream"},
                             {"n", std::to_string(n)},
                             {"free_dim", "4"},
                             {"layout", "strided"}})
                          .prog;
    expect_common(p, n, iterations);
    for (std::uint64_t m = 0; m < iterations; ++m) {
        const operand& h = hbm_side(p, 1, m);
        EXPECT_EQ(h.row_stride, n / P * 4);                     // a partition's column
        EXPECT_EQ(h.offset, p.regions[1].offset + m * fd * 4);  // tile m is a column slice
        EXPECT_EQ(h.elems, fd);
    }
}

TEST(VectorAdd, StreamBfloat16HalvesTheBytes) {
    const std::uint64_t n = 128 * 2 * 4;
    const program p =
        build({{"variant", "stream"}, {"n", std::to_string(n)}, {"dtype", "bfloat16"}}).prog;
    expect_common(p, n, n / (128 * 2), 2);
    EXPECT_EQ(hbm_side(p, 0, 1).row_stride, 2u * 2);
    EXPECT_EQ(hbm_side(p, 0, 1).type, dtype::bfloat16);
}

TEST(VectorAdd, NaiveIsOneTileOfNRows) {
    const program p = build({{"variant", "naive"}, {"n", "128"}}).prog;
    expect_common(p, 128, 1);
    EXPECT_EQ(hbm_side(p, 0, 0).partitions, 128u);
    EXPECT_EQ(hbm_side(p, 0, 0).elems, 1u);
}

TEST(VectorAdd, DirectAllocPlacesTensorsSideBySide) {
    const std::uint64_t P = 128, fd = 1000, buffers = 4, n = P * fd * 6;  // free_dim defaults 1000
    const program p = build({{"variant", "direct_alloc"}, {"n", std::to_string(n)}}).prog;
    expect_common(p, n, n / (P * fd));
    const std::uint64_t span = buffers * fd * 4;
    for (std::uint64_t m = 0; m < n / (P * fd); ++m) {
        const std::uint64_t slot = (m % buffers) * fd * 4;
        EXPECT_EQ(sbuf_side(p, 0, m).offset, slot) << m;             // a at 0
        EXPECT_EQ(sbuf_side(p, 1, m).offset, span + slot) << m;      // b after a's buffers
        EXPECT_EQ(sbuf_side(p, 2, m).offset, 2 * span + slot) << m;  // res after b's
    }
    const auto& add = stream(p, engine_kind::dve)[1];
    EXPECT_EQ(add.src0.offset, fd * 4);
    EXPECT_EQ(add.src1.offset, span + fd * 4);
    EXPECT_EQ(add.dst.offset, 2 * span + fd * 4);
}

TEST(VectorAdd, DirectAllocHonoursBuffersAndFreeDim) {
    const std::uint64_t P = 128, fd = 16, buffers = 2, n = P * fd * 4;
    const program p = build({{"variant", "direct_alloc"},
                             {"n", std::to_string(n)},
                             {"free_dim", "16"},
                             {"buffers", "2"}})
                          .prog;
    expect_common(p, n, n / (P * fd));
    EXPECT_EQ(sbuf_side(p, 1, 0).offset, buffers * fd * 4);
    EXPECT_EQ(sbuf_side(p, 2, 3).offset, 2 * buffers * fd * 4 + fd * 4);
}

TEST(VectorAdd, AllocBadPutsEverythingAtZero) {
    const std::uint64_t P = 128, fd = 1000, n = P * fd * 3;
    const program p = build({{"variant", "alloc_bad"}, {"n", std::to_string(n)}}).prog;
    expect_common(p, n, n / (P * fd));
    // Buffer 0 of all three tiles is the same bytes.
    for (std::size_t q = 0; q < 3; ++q)
        EXPECT_EQ(sbuf_side(p, q, 0).offset, 0u) << q;
    const auto& add = stream(p, engine_kind::dve)[0];
    EXPECT_EQ(add.src0.offset, 0u);
    EXPECT_EQ(add.src1.offset, 0u);
    EXPECT_EQ(add.dst.offset, 0u);
}

TEST(VectorAdd, AllocBadNamesTheRacesItsPlacementCreates) {
    const std::uint64_t P = 128, fd = 1000, n = P * fd * 3;
    const auto bad = build({{"variant", "alloc_bad"}, {"n", std::to_string(n)}});
    ASSERT_FALSE(bad.warnings.empty());
    // The loads of a and b write the same SBUF bytes with nothing ordering them.
    EXPECT_PRED2(contains, bad.warnings[0], "race: ");
    EXPECT_PRED2(contains, bad.warnings[0], "q0 transfer 0");
    EXPECT_PRED2(contains, bad.warnings[0], "q1 transfer 0");
    EXPECT_PRED2(contains, bad.warnings[0], "sbuf partitions 0..127");
    const auto good = build({{"variant", "direct_alloc"}, {"n", std::to_string(n)}});
    EXPECT_TRUE(good.warnings.empty());
    // Kernels whose tiles the builder places are not checked (they cannot race).
    EXPECT_TRUE(build({{"variant", "stream"}, {"n", std::to_string(n)}}).warnings.empty());
}

TEST(VectorAdd, LoadsAndStoresAreTriggeredFromDifferentEngines) {
    const std::uint64_t n = 128 * 2 * 3, iterations = 3;
    for (const char* style : {"nl", "isa"}) {
        const program p =
            build({{"variant", "stream"}, {"n", std::to_string(n)}, {"style", style}}).prog;
        EXPECT_EQ(stream(p, engine_kind::sp).size(), 2 * iterations) << style;  // loads
        EXPECT_EQ(stream(p, engine_kind::act).size(), iterations) << style;     // stores
    }
}

TEST(VectorAdd, CheckAcceptsTheSumAndRejectsOtherOutputs) {
    const std::uint64_t n = 128 * 2;
    const built_kernel k = build({{"variant", "stream"}, {"n", std::to_string(n)}});
    const hbm_region &ra = k.prog.regions[0], &rb = k.prog.regions[1], &ro = k.prog.regions[2];
    const auto a = region_initial_bytes(ra), b = region_initial_bytes(rb);
    std::vector<std::uint8_t> out(ro.bytes);
    for (std::uint64_t i = 0; i < n; ++i)
        store_element(
            &out[i * 4], dtype::float32,
            load_element(&a[i * 4], dtype::float32) + load_element(&b[i * 4], dtype::float32));
    auto reader = [&](const std::vector<std::uint8_t>& bytes) {
        return [&, bytes](std::uint64_t offset, std::uint64_t size) {
            EXPECT_EQ(offset, ro.offset);
            EXPECT_EQ(size, ro.bytes);
            return bytes;
        };
    };
    const check_result good = k.check(reader(out));
    EXPECT_TRUE(good.passed) << good.detail;
    EXPECT_EQ(good.mismatches, 0u);
    std::vector<std::uint8_t> wrong = out;
    store_element(&wrong[5 * 4], dtype::float32, load_element(&out[5 * 4], dtype::float32) + 0.5f);
    const check_result bad = k.check(reader(wrong));
    EXPECT_FALSE(bad.passed);
    EXPECT_EQ(bad.mismatches, 1u);
    EXPECT_PRED2(contains, bad.detail, "element 5");
}

TEST(VectorAdd, PartitionLimitErrors) {
    const std::string naive = user_error_of([] { build({{"variant", "naive"}, {"n", "256"}}); });
    EXPECT_PRED2(contains, naive, "number of partitions 256 exceed architecture limitation of 128");
    const std::string tiled = user_error_of([] {
        build({{"variant", "tiled"}, {"n", "1024"}, {"row_chunk", "256"}});
    });
    EXPECT_PRED2(contains, tiled, "number of partitions 256 exceed architecture limitation of 128");
}

TEST(VectorAdd, UnknownParameterListsValidOnes) {
    const std::string msg = user_error_of([] { build({{"size", "1024"}}); });
    EXPECT_PRED2(contains, msg, "'size'");
    EXPECT_PRED2(contains, msg, "variant, n, row_chunk, free_dim, layout, buffers, style, dtype");
}

TEST(VectorAdd, BadParameterValuesNameTheParameter) {
    const std::string variant = user_error_of([] { build({{"variant", "fast"}}); });
    EXPECT_PRED2(contains, variant, "'variant'");
    EXPECT_PRED2(contains, variant, "tiled, stream, naive, direct_alloc, alloc_bad");
    const std::string n = user_error_of([] { build({{"n", "ten"}}); });
    EXPECT_PRED2(contains, n, "'n'");
    EXPECT_PRED2(contains, n, "whole number");
    EXPECT_PRED2(contains, user_error_of([] { build({{"n", "0"}}); }), "out of range");
    EXPECT_PRED2(contains, user_error_of([] { build({{"dtype", "fp8"}}); }), "'dtype'");
    EXPECT_PRED2(contains, user_error_of([] { build({{"style", "asm"}}); }), "'style'");
}

TEST(VectorAdd, IndivisibleNNamesN) {
    const std::string tiled = user_error_of([] {
        build({{"variant", "tiled"}, {"n", "1000"}, {"row_chunk", "3"}});
    });
    EXPECT_PRED2(contains, tiled, "n=1000");
    EXPECT_PRED2(contains, tiled, "row_chunk (3)");
    const std::string stream = user_error_of([] { build({{"variant", "stream"}, {"n", "1000"}}); });
    EXPECT_PRED2(contains, stream, "n=1000");
    EXPECT_PRED2(contains, stream, "(256)");  // partitions x free_dim
    const std::string strided = user_error_of([] {
        build({{"variant", "stream"}, {"n", "1280"}, {"free_dim", "3"}, {"layout", "strided"}});
    });
    EXPECT_PRED2(contains, strided, "n=1280");
    EXPECT_PRED2(contains, strided, "(384)");  // partitions x free_dim
}

}  // namespace
