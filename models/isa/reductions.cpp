// The rows of the opcodes whose results gather along a row (reductions, scans, statistics,
// searches and sorts).
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "isa/opcode_row.h"
#include "isa/operand_checks.h"
#include "isa/semantics.h"
#include "isa/sources.h"

namespace trn {

namespace {
namespace oc = operand_checks;
using namespace sources;
constexpr auto dve = engine_kind::dve, pool = engine_kind::pool;
constexpr auto any = operand_case::any;

// max8 and find_index8: [P, N >= 8] to [P, 8].
void check_top8(const instruction& ins, const check_context& cx) {
    if (ins.dst.elems != 8 || ins.src0.elems < 8 ||
        (ins.op == opcode::find_index8 && ins.src1.elems != 8))
        cx.fail("max8/find_index8 take [P, N >= 8] and give [P, 8]");
}

}  // namespace

const opcode_row& row_of_tensor_reduce() {
    static const opcode_row r{
        .info = {"tensor_reduce", field::dst | field::src0 | field::alu | field::flags, 1, true,
                 "dst[p, j] = reduce alu over group j of src0[p, :] cut into dst's elems equal "
                 "groups (dst [P, 1]: the whole row); flags=neg negates it"},
        .flags = flag::negate,
        .costs = {{dve, operand_case::bf16_add_max, 0, 0.5, false, 0, isa_table},
                  {dve, any, 0, 1, false, 0, isa_table}},
        .check =
            [](const instruction& ins, engine_kind, const check_context& cx) {
                oc::src0(ins, cx);
                oc::on_chip(ins, cx);
                if (ins.src0.elems % ins.dst.elems != 0)
                    cx.fail("dst's " + std::to_string(ins.dst.elems) +
                            " elements do not divide src0's " + std::to_string(ins.src0.elems) +
                            " into groups");
            },
        .execute = [](alu_io& io) {  // dst.elems groups of src0's row
            const instruction& ins = io.ins;
            const std::uint32_t group = ins.src0.elems / ins.dst.elems;
            const bool negate = ins.flags & flag::negate;
            for (std::uint32_t p = 0; p < ins.dst.partitions; ++p)
                for (std::uint32_t j = 0; j < ins.dst.elems; ++j) {
                    const std::size_t first =
                        std::size_t{p} * ins.src0.elems + std::size_t{j} * group;
                    float acc = io.in0(first);
                    for (std::uint32_t k = 1; k < group; ++k)
                        acc = apply_alu(ins.alu, acc, io.in0(first + k));
                    io.out(std::size_t{p} * ins.dst.elems + j, negate ? -acc : acc);
                }
        }};
    return r;
}

const opcode_row& row_of_tensor_tensor_scan() {
    static const opcode_row r{
        .info = {"tensor_tensor_scan",
                 field::dst | field::src0 | field::src1 | field::src2 | field::alu | field::imm |
                     field::alu1 | field::flags,
                 2, false,
                 "dst[p, i] = (src0[p, i] alu dst[p, i-1]) alu1 src1[p, i], dst[p, -1] = imm or "
                 "src2[p, 0]: a scan along the free axis"},
        .flags = flag::reverse0 | flag::reverse1,
        .costs = {{dve, any, 0, 2, true, 0, isa_table}},
        .check = [](const instruction& ins, engine_kind,
                    const check_context& cx) { oc::elementwise_two(ins, cx); },
        .execute =
            [](alu_io& io) {
                const instruction& ins = io.ins;
                const bool rev0 = ins.flags & flag::reverse0, rev1 = ins.flags & flag::reverse1;
                for (std::uint32_t p = 0; p < ins.dst.partitions; ++p) {
                    float prev = ins.src2.valid() ? io.in2(p) : ins.imm;  // one per partition
                    for (std::uint32_t j = 0; j < ins.dst.elems; ++j) {
                        const std::size_t i = std::size_t{p} * ins.dst.elems + j;
                        prev =
                            apply_ordered(ins.alu1, apply_ordered(ins.alu, io.in0(i), prev, rev0),
                                          io.in1(i), rev1);
                        io.out(i, prev);
                    }
                }
            }};
    return r;
}

const opcode_row& row_of_max8() {
    static const opcode_row r{
        .info = {"max8", field::dst | field::src0, 1, true,
                 "dst[p, 0..7] = the 8 largest values of src0[p, :], largest first"},
        .costs = {{dve, any, 0, 1, false, 0, isa_table}},
        .check =
            [](const instruction& ins, engine_kind, const check_context& cx) {
                oc::src0(ins, cx);
                oc::on_chip(ins, cx);
                check_top8(ins, cx);
            },
        .execute =
            [](alu_io& io) {
                const instruction& ins = io.ins;
                for (std::uint32_t p = 0; p < ins.dst.partitions; ++p) {
                    std::vector<float> row(ins.src0.elems);
                    for (std::uint32_t j = 0; j < ins.src0.elems; ++j)
                        row[j] = io.in0(std::size_t{p} * ins.src0.elems + j);
                    std::partial_sort(row.begin(), row.begin() + 8, row.end(),
                                      std::greater<float>());
                    for (std::uint32_t j = 0; j < 8; ++j)
                        io.out(std::size_t{p} * 8 + j, row[j]);
                }
            }};
    return r;
}

const opcode_row& row_of_find_index8() {
    static const opcode_row r{
        .info = {"find_index8", field::dst | field::src0 | field::src1, 1, true,
                 "dst[p, j] = the first i with src0[p, i] == src1[p, j] (-1: none)"},
        .costs = {{dve, any, 0, 1, false, 0, isa_table}},
        .check =
            [](const instruction& ins, engine_kind, const check_context& cx) {
                oc::per_partition_operands(ins, cx, false);
                oc::src0(ins, cx);
                oc::on_chip(ins, cx);
                check_top8(ins, cx);
            },
        .execute =
            [](alu_io& io) {
                const instruction& ins = io.ins;
                for (std::uint32_t p = 0; p < ins.dst.partitions; ++p)
                    for (std::uint32_t j = 0; j < 8; ++j) {
                        const float want = io.in1(std::size_t{p} * 8 + j);
                        std::int64_t at = -1;  // not found
                        for (std::uint32_t i = 0; i < ins.src0.elems; ++i)
                            if (io.in0(std::size_t{p} * ins.src0.elems + i) == want) {
                                at = i;
                                break;
                            }
                        io.out(std::size_t{p} * 8 + j, static_cast<float>(at));
                    }
            }};
    return r;
}

const opcode_row& row_of_bn_stats() {
    static const opcode_row r{
        .info = {"bn_stats", field::dst | field::src0, 3, true,
                 "dst[p, 0..5] = the count, mean and squared deviations summed (variance * count) "
                 "of the even, then the odd elements of src0[p, :] (at most 512), in fp32"},
        .costs = {{dve, any, 0, 1, true, 0, isa_v2}},
        .check =
            [](const instruction& ins, engine_kind, const check_context& cx) {
                oc::src0(ins, cx);
                oc::on_chip(ins, cx);
                if (ins.dst.elems != 6 || ins.src0.elems > 512)
                    cx.fail("bn_stats takes [P, N <= 512] and gives [P, 6]");
            },
        .execute = [](alu_io& io) {  // per half: count, mean, sum of squared deviations
            const instruction& ins = io.ins;
            for (std::uint32_t p = 0; p < ins.dst.partitions; ++p)
                for (std::uint32_t half = 0; half < 2; ++half) {
                    const std::size_t row = std::size_t{p} * ins.src0.elems;
                    float count = 0, sum = 0;
                    for (std::uint32_t j = half; j < ins.src0.elems; j += 2) {
                        sum += io.in0(row + j);
                        count += 1;
                    }
                    const float mean = count > 0 ? sum / count : 0.0f;
                    float m2 = 0;
                    for (std::uint32_t j = half; j < ins.src0.elems; j += 2) {
                        const float dev = io.in0(row + j) - mean;
                        m2 += dev * dev;
                    }
                    io.out(std::size_t{p} * 6 + 3 * half, count);
                    io.out(std::size_t{p} * 6 + 3 * half + 1, mean);
                    io.out(std::size_t{p} * 6 + 3 * half + 2, m2);
                }
        }};
    return r;
}

const opcode_row& row_of_bn_aggr() {
    static const opcode_row r{
        .info = {"bn_aggr", field::dst | field::src0, 3, true,
                 "dst[p, 0..1] = the mean and variance of the (count, mean, variance * count) "
                 "triples of src0[p, :] (bn_stats results), combined in fp32"},
        .costs = {{dve, any, 0, 13.0 / 3.0, true, 0, isa_v2}},
        .check =
            [](const instruction& ins, engine_kind, const check_context& cx) {
                oc::src0(ins, cx);
                oc::on_chip(ins, cx);
                if (ins.dst.elems != 2 || ins.src0.elems % 3 != 0)
                    cx.fail("bn_aggr takes [P, 3k] and gives [P, 2]");
            },
        .execute = [](alu_io& io) {  // the triples combined (Chan et al.'s parallel variance)
            const instruction& ins = io.ins;
            for (std::uint32_t p = 0; p < ins.dst.partitions; ++p) {
                const std::size_t row = std::size_t{p} * ins.src0.elems;
                const std::uint32_t k = ins.src0.elems / 3;
                float count = 0, weighted = 0;
                for (std::uint32_t t = 0; t < k; ++t) {
                    count += io.in0(row + 3 * t);
                    weighted += io.in0(row + 3 * t) * io.in0(row + 3 * t + 1);
                }
                const float mean = count > 0 ? weighted / count : 0.0f;
                float m2 = 0;
                for (std::uint32_t t = 0; t < k; ++t) {
                    const float n = io.in0(row + 3 * t), dev = io.in0(row + 3 * t + 1) - mean;
                    if (n > 0) m2 += io.in0(row + 3 * t + 2) + n * dev * dev;
                }
                io.out(std::size_t{p} * 2, mean);
                io.out(std::size_t{p} * 2 + 1, count > 0 ? m2 / count : 0.0f);
            }
        }};
    return r;
}

namespace {

// topk: 4n + k cycles, n the snake's elements (imm), k the results (imm1).
double topk_cycles(const instruction& ins) {
    return 4 * static_cast<double>(ins.imm) + static_cast<double>(ins.imm1);
}

}  // namespace

// nonzero_count: no cost is published; a model choice, one GpSimd pass over the row (N + 150
// cycles, as iota's).
const opcode_row& row_of_nonzero_count() {
    static const opcode_row r{
        .info = {"nonzero_count", field::dst | field::src0 | field::src1 | field::imm | field::imm1,
                 7, false,
                 "at partitions 0, 16, ..., 112 (each GpSimd core's first): dst[p, 0..n) = imm + "
                 "the positions of src0[p, :]'s n nonzero elements in order, dst[p, n..T) = imm1, "
                 "dst[p, T] = n (T src0's elements); dst's other partitions keep their values, "
                 "read as src1 (nisa.nonzero_with_count: GpSimd engine, NeuronCore-v3)"},
        .costs = {{pool, operand_case::sbuf_only, 3, 1, false, 150,
                   "hardware-facts 2 (no cost published: one GpSimd pass, N + 150 as iota; a "
                   "model choice)"}},
        .check =
            [](const instruction& ins, engine_kind e, const check_context& cx) {
                cx.operand(ins.src0, "src0");
                cx.operand(ins.dst, "dst");
                if (e != pool) cx.fail("nonzero_count runs on the GpSimd engine (pool)");
                if (ins.dst.space != mem_space::sbuf || ins.src0.space != mem_space::sbuf)
                    cx.fail("nonzero_count reads and writes SBUF only");
                if (ins.dst.elems != ins.src0.elems + 1)
                    cx.fail(
                        "nonzero_count's dst has one element more than src0 a partition (the "
                        "count)");
                if (ins.dst.partitions != ins.src0.partitions)
                    cx.fail("nonzero_count's dst has src0's partitions");
                if (ins.imm != std::floor(ins.imm) || ins.imm1 != std::floor(ins.imm1))
                    cx.fail(
                        "nonzero_count's imm (index offset) and imm1 (padding) are whole "
                        "numbers");
                if (ins.dst.partitions > 1) {
                    if (!ins.src1.valid())
                        cx.fail(
                            "a nonzero_count of several partitions reads dst as src1 (the "
                            "partitions it keeps)");
                    cx.operand(ins.src1, "src1");
                    if (ins.src1.partitions != ins.dst.partitions ||
                        ins.src1.elems != ins.dst.elems || ins.src1.type != ins.dst.type)
                        cx.fail("nonzero_count's src1 is dst's values: its shape and dtype");
                }
            },
        .execute =
            [](alu_io& io) {
                const instruction& ins = io.ins;
                const std::uint32_t t = ins.src0.elems, w = ins.dst.elems;
                for (std::uint32_t p = 0; p < ins.dst.partitions; ++p) {
                    if (p % 16 != 0) {
                        for (std::uint32_t j = 0; j < w; ++j)
                            io.out(std::size_t{p} * w + j, io.in1(std::size_t{p} * w + j));
                        continue;
                    }
                    std::uint32_t n = 0;
                    for (std::uint32_t i = 0; i < t; ++i)
                        if (io.in0(std::size_t{p} * t + i) != 0.0f)
                            io.out(std::size_t{p} * w + n++,
                                   static_cast<float>(static_cast<double>(ins.imm) + i));
                    for (std::uint32_t j = n; j < t; ++j)
                        io.out(std::size_t{p} * w + j, ins.imm1);
                    io.out(std::size_t{p} * w + t, static_cast<float>(n));
                }
            }};
    return r;
}

const opcode_row& row_of_topk() {
    static const opcode_row r{
        .info = {"topk", field::dst | field::dst1 | field::src0 | field::imm | field::imm1, 3, true,
                 "per group of 16 partitions: the first imm elements of src0 read as a snake "
                 "(element e at partition e % 16, column e / 16), sorted largest first (ties: the "
                 "lower index first); result j (j < 16 * dst's columns, dst's columns = ceil(imm1 "
                 "/ 16)) into dst (its value) and dst1 (its index in the snake) at partition j % "
                 "16, column j / 16; past imm: -inf and index imm (GpSimd engine, "
                 "NeuronCore-v3)"},
        .costs = {{pool, operand_case::sbuf_only, 3, 0, false, 0, "hardware-facts 2", false,
                   topk_cycles, "4 * imm + imm1 cycles (4n + k)"}},
        .check =
            [](const instruction& ins, engine_kind, const check_context& cx) {
                cx.operand(ins.src0, "src0");
                cx.operand(ins.dst, "dst");
                cx.operand(ins.dst1, "dst1");
                const double n = ins.imm, k = ins.imm1;
                if (n != static_cast<std::uint32_t>(n) || n < 8 || n >= 65536 ||
                    k != static_cast<std::uint32_t>(k) || k < 1 || k >= 32768 || k > n)
                    cx.fail(
                        "topk takes 8 <= imm (n) < 65536 and 1 <= imm1 (k) <= n, k < 32768, "
                        "whole numbers");
                const auto cols = static_cast<std::uint32_t>((k + 15) / 16);
                for (const operand* o : {&ins.dst, &ins.dst1, &ins.src0})
                    if (o->space != mem_space::sbuf) cx.fail("topk reads and writes SBUF only");
                if (ins.src0.type != dtype::bfloat16 || ins.dst.type != dtype::bfloat16 ||
                    ins.dst1.type != dtype::uint32)
                    cx.fail("topk takes bf16 src0 and dst, uint32 dst1");
                if (ins.src0.partitions % 16 != 0 || ins.dst.partitions != ins.src0.partitions ||
                    ins.dst1.partitions != ins.src0.partitions)
                    cx.fail("topk's operands have the same partition count, a multiple of 16");
                if (ins.dst.elems != cols || ins.dst1.elems != cols ||
                    ins.src0.elems < static_cast<std::uint32_t>((n + 15) / 16))
                    cx.fail("topk's dst and dst1 have ceil(k / 16) = " + std::to_string(cols) +
                            " columns and src0 at least ceil(n / 16)");
            },
        .execute = [](alu_io& io) {  // per group of 16 partitions, the snake sorted largest first
            const instruction& ins = io.ins;
            const operand& d = ins.dst;
            const auto total = static_cast<std::uint32_t>(ins.imm);
            const std::uint32_t slots = 16 * d.elems, c0 = ins.src0.elems;
            io.dst1.resize(ins.dst1.bytes());
            const std::size_t s1 = dtype_size(ins.dst1.type);
            std::vector<std::uint32_t> order(total);
            for (std::uint32_t g = 0; g < d.partitions; g += 16) {
                auto at = [&](std::uint32_t e) {
                    return io.in0(std::size_t{g + e % 16} * c0 + e / 16);
                };
                for (std::uint32_t e = 0; e < total; ++e)
                    order[e] = e;
                std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
                    const float x = at(a), y = at(b);  // NaN the least (a model choice)
                    return !std::isnan(x) && (std::isnan(y) || x > y);
                });
                for (std::uint32_t j = 0; j < slots; ++j) {
                    const std::size_t i = std::size_t{g + j % 16} * d.elems + j / 16;
                    io.out(i, j < total ? at(order[j]) : -std::numeric_limits<float>::infinity());
                    store_element(&io.dst1[i * s1], ins.dst1.type,
                                  static_cast<float>(j < total ? order[j] : total));
                }
            }
        }};
    return r;
}

const opcode_row& row_of_match_replace8() {
    static const opcode_row r{
        .info = {"match_replace8",
                 field::dst | field::dst1 | field::src0 | field::src1 | field::imm, 3, false,
                 "dst = src0 with, for j = 7 down to 0, the first element of src0[p, :] equal to "
                 "src1[p, j] and not matched before replaced by imm; dst1[p, j], if given, = its "
                 "index (-1: none) (nc_match_replace8: Vector engine, NeuronCore-v3)"},
        // the ISA reference's "min(MIN_II, N)" read as max(MIN_II, N), as every other Vector
        // engine cost (model choice)
        .costs = {{dve, any, 3, 1, true, 0,
                   "hardware-facts 2 (nc_match_replace8; max(MIN_II, N): model choice)"}},
        .check =
            [](const instruction& ins, engine_kind, const check_context& cx) {
                oc::two_inputs(ins, cx);
                oc::src0(ins, cx);
                oc::on_chip(ins, cx);
                if (ins.src1.elems != 8 || ins.dst.elems != ins.src0.elems)
                    cx.fail(
                        "match_replace8 takes data [P, N] and values [P, 8], and gives "
                        "[P, N]");
                if (!ins.dst1.valid()) return;
                cx.operand(ins.dst1, "dst1");
                if (ins.dst1.space == mem_space::hbm)
                    cx.fail("engines cannot access HBM (use a DMA)");
                if (ins.dst1.partitions != ins.dst.partitions || ins.dst1.elems != 8)
                    cx.fail("match_replace8's dst1 (the indices) is [P, 8] with dst's partitions");
            },
        .execute =
            [](alu_io& io) {
                const instruction& ins = io.ins;
                const std::uint32_t n = ins.src0.elems;
                if (ins.dst1.valid()) io.dst1.resize(ins.dst1.bytes());
                std::vector<bool> taken(n);
                for (std::uint32_t p = 0; p < ins.dst.partitions; ++p) {
                    const std::size_t row = std::size_t{p} * n;
                    for (std::uint32_t i = 0; i < n; ++i)
                        io.out(row + i, io.in0(row + i));
                    std::fill(taken.begin(), taken.end(), false);
                    for (std::uint32_t j = 8; j-- > 0;) {  // the last value first (the reference)
                        const float want = io.in1(std::size_t{p} * 8 + j);
                        std::int64_t at = -1;
                        for (std::uint32_t i = 0; i < n && at < 0; ++i)
                            if (!taken[i] && io.in0(row + i) == want) at = i;
                        if (at >= 0) {
                            taken[std::size_t(at)] = true;
                            io.out(row + std::size_t(at), ins.imm);
                        }
                        if (ins.dst1.valid())
                            store_element(
                                &io.dst1[(std::size_t{p} * 8 + j) * dtype_size(ins.dst1.type)],
                                ins.dst1.type, static_cast<float>(at));
                    }
                }
            }};
    return r;
}

}  // namespace trn
