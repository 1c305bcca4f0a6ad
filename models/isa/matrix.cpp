// The rows of the matrix opcodes: the Tensor engine's (timed and computed by tensor_engine),
// the Vector engine's transpose of small blocks and shuffle of partitions, and MX quantization.
#include <algorithm>
#include <cmath>
#include <limits>

#include "isa/opcode_row.h"
#include "isa/operand_checks.h"
#include "isa/semantics.h"
#include "isa/sources.h"

namespace trn {

namespace {
using namespace sources;
namespace oc = operand_checks;
constexpr auto pe = engine_kind::pe, dve = engine_kind::dve;
constexpr auto any = operand_case::any;
const char* const array_in_out = "SBUF in, PSUM out";

// matmul and transpose: on the Tensor engine SBUF in, PSUM out; transpose on the Vector
// engine in blocks of at most 32 x 32.
void check_tensor_engine(const instruction& ins, engine_kind e, const check_context& cx) {
    if (ins.op == opcode::matmul) cx.operand(ins.src1, "src1");
    cx.operand(ins.src0, "src0");
    cx.operand(ins.dst, "dst");
    if (e != pe) {  // the Vector engine's 32 x 32 transpose
        if (ins.op != opcode::transpose) cx.fail("matmul runs on the Tensor engine (pe)");
        if (ins.dst.space == mem_space::hbm || ins.src0.space == mem_space::hbm)
            cx.fail("engines cannot access HBM (use a DMA)");
        if (ins.dst.partitions != ins.src0.elems || ins.dst.elems != ins.src0.partitions ||
            ins.dst.partitions > 32 || ins.dst.elems > 32)
            cx.fail("a Vector-engine transpose takes [P, F] to [F, P], at most 32 x 32");
        return;
    }
    if (ins.dst.space != mem_space::psum || ins.src0.space != mem_space::sbuf ||
        (ins.src1.valid() && ins.src1.space != mem_space::sbuf))
        cx.fail("the Tensor engine reads SBUF and writes PSUM");
}

// An MX scale's type: uint8 (its bits) or fp8_e8m0.
bool is_scale_type(dtype t) {
    return t == dtype::uint8 || t == dtype::fp8_e8m0;
}

// The partitions an MX scale operand spans for data of `p` partitions: 4 of each 32 (one per 8
// data partitions, at the start of each 32-partition quadrant).
std::uint32_t scale_rows(std::uint32_t p) {
    return p == 0 ? 0 : 32 * ((p - 1) / 32) + 4;
}

// matmul_mx (Tensor engine) and quantize_mx (Vector engine): the MX operands and their scales.
void check_mx(const instruction& ins, engine_kind e, const check_context& cx) {
    const bool mm = ins.op == opcode::matmul_mx;
    if (e != (mm ? pe : dve))
        cx.fail(std::string(opcode_name(ins.op)) + " runs on the " +
                (mm ? "Tensor engine (pe)" : "Vector engine (dve)"));
    const operand* data[2] = {&ins.src0, mm ? &ins.src1 : &ins.dst};
    // each scale with its data: matmul_mx's src2 with src0 and src3 with src1; quantize_mx's
    // dst1 with dst
    const operand* scales[2] = {mm ? &ins.src2 : nullptr, mm ? &ins.src3 : &ins.dst1};
    for (const auto& [op, role] : {std::pair<const operand*, const char*>{&ins.dst, "dst"},
                                   {&ins.src0, "src0"},
                                   {mm ? &ins.src1 : &ins.dst1, mm ? "src1" : "dst1"},
                                   {mm ? &ins.src2 : nullptr, "src2"},
                                   {mm ? &ins.src3 : nullptr, "src3"}}) {
        if (!op) continue;
        if (!op->valid()) cx.fail(std::string(opcode_name(ins.op)) + " needs " + role);
        cx.operand(*op, role);
        const bool psum = mm && op == &ins.dst;
        if (op->space != (psum ? mem_space::psum : mem_space::sbuf))
            cx.fail(std::string(opcode_name(ins.op)) + "'s " + role + " is in " +
                    (psum ? "PSUM" : "SBUF"));
    }
    const std::uint32_t p = ins.src0.partitions;
    if (p % 32 != 0 || data[1]->partitions != p)
        cx.fail(std::string(opcode_name(ins.op)) +
                "'s data must have the same partition count, a multiple of 32 (got " +
                std::to_string(p) + " and " + std::to_string(data[1]->partitions) + ")");
    if (mm) {
        for (const operand* d : data)
            if (!is_packed(d->type))
                cx.fail(std::string("matmul_mx multiplies x4-packed MX data (float8_e4m3fn_x4, "
                                    "float8_e5m2_x4, float4_e2m1fn_x4), not ") +
                        dtype_name(d->type));
    } else {
        if (ins.src0.type != dtype::bfloat16 && ins.src0.type != dtype::float16)
            cx.fail(std::string("quantize_mx quantizes bf16 or fp16, not ") +
                    dtype_name(ins.src0.type));
        if (ins.dst.type != dtype::fp8_e4m3fn_x4 && ins.dst.type != dtype::fp8_e5m2_x4)
            cx.fail(std::string("quantize_mx writes float8_e4m3fn_x4 or float8_e5m2_x4, not ") +
                    dtype_name(ins.dst.type));
        if (ins.src0.elems != 4 * ins.dst.elems)
            cx.fail("quantize_mx packs 4 elements of src0 in each of dst's (" +
                    std::to_string(ins.src0.elems) + " for " + std::to_string(ins.dst.elems) + ")");
    }
    for (int i = 0; i < 2; ++i) {
        const operand* sc = scales[i];
        if (!sc) continue;
        if (!is_scale_type(sc->type))
            cx.fail(std::string("an MX scale is uint8 or float8_e8m0fnu, not ") +
                    dtype_name(sc->type));
        const operand& d = *data[i];
        if (sc->partitions < scale_rows(p) || sc->elems < d.elems)
            cx.fail("the MX scale of data [" + std::to_string(p) + ", " + std::to_string(d.elems) +
                    "] spans at least [" + std::to_string(scale_rows(p)) + ", " +
                    std::to_string(d.elems) + "] (4 partitions of each 32)");
    }
}

}  // namespace

const opcode_row& row_of_matmul() {
    static const opcode_row r{
        .info = {"matmul", field::dst | field::src0 | field::src1 | field::flags, 1, false,
                 "dst[m, n] (+)= sum over k of src0[k, m] * src1[k, n] (src0 stationary, src1 "
                 "moving); flags=acc adds to dst, flags=double_row is the NeuronCore-v3 fp8 2x "
                 "mode, flags=stationary_onezero / moving_onezero declare that operand ones and "
                 "zeros"},
        .flags =
            flag::accumulate | flag::double_row | flag::stationary_onezero | flag::moving_onezero,
        .other_engines = engine_bit(pe),
        .other_cost =
            "max(min(64, N_stationary), N_moving) passes, x4 for fp32 (/2 for each fp32 "
            "operand declared ones and zeros), /2 for double_row (hardware-facts 2)",
        .other_operands = array_in_out,
        .other_source = isa_table,
        .check = check_tensor_engine};
    return r;
}

const opcode_row& row_of_transpose() {
    static const opcode_row r{
        .info = {"transpose", field::dst | field::src0 | field::flags, 1, false,
                 "dst[f, p] = src0[p, f]: the Tensor engine into PSUM, or the Vector engine in "
                 "blocks of 32 x 32; flags=moving_onezero: the Tensor engine's identity declared "
                 "ones and zeros"},
        .flags = flag::moving_onezero,
        .other_engines = engine_bit(pe),
        .other_cost = "max(P, min(64, F)) (hardware-facts 2)",
        .other_operands = array_in_out,
        .other_source = isa_table,
        .costs = {{dve, operand_case::block32, 0, 1, true, 0, isa_v2}},
        .check = check_tensor_engine,
        .execute = [](alu_io& io) {  // the Vector engine's (the Tensor engine's: tensor_engine)
            const instruction& ins = io.ins;
            for (std::uint32_t f = 0; f < ins.dst.partitions; ++f)
                for (std::uint32_t p = 0; p < ins.dst.elems; ++p)
                    io.out(std::size_t{f} * ins.dst.elems + p,
                           io.in0(std::size_t{p} * ins.src0.elems + f));
        }};
    return r;
}

// nc_stream_shuffle: output partition i (0..31) of each quadrant of 32 in [imm2, imm3) copies
// the input partition (imm * i + imm1) mod 32 of that quadrant (of src0 itself when it has at
// most 32 partitions); the others keep dst's values, read as src1. The hardware takes any
// 32-entry mask (255: keep); the trace carries the masks of that form (a broadcast of one
// partition, a shift into part of a quadrant, a rotation, a reversal: model choice).
static std::uint32_t shuffle_source(const instruction& ins, std::uint32_t p) {
    const auto a = static_cast<std::int64_t>(ins.imm), b = static_cast<std::int64_t>(ins.imm1);
    const std::uint32_t m = static_cast<std::uint32_t>((((a * (p % 32) + b) % 32) + 32) % 32);
    return ins.src0.partitions <= 32 ? m : (p / 32) * 32 + m;
}

static bool shuffled(const instruction& ins, std::uint32_t p) {
    return static_cast<float>(p % 32) >= ins.imm2 && static_cast<float>(p % 32) < ins.imm3;
}

const opcode_row& row_of_stream_shuffle() {
    static const opcode_row r{
        .info = {"stream_shuffle",
                 field::dst | field::src0 | field::src1 | field::imm | field::imm1 | field::imm2 |
                     field::imm3,
                 6, false,
                 "dst[p, :] = src0[s, :] where imm2 <= p % 32 < imm3, s = 32 (p / 32) + (imm (p % "
                 "32) + imm1) mod 32, or (imm (p % 32) + imm1) mod 32 when src0 has at most 32 "
                 "partitions; elsewhere src1[p, :] (dst's own values, kept): a shuffle of "
                 "partitions within each quadrant of 32 (nc_stream_shuffle: Vector engine; its "
                 "masks of that form)"},
        .costs = {{dve, any, 0, 1, true, 0,
                   "hardware-facts 2 (nc_stream_shuffle: max(MIN_II, N))"}},
        .check =
            [](const instruction& ins, engine_kind e, const check_context& cx) {
                oc::src0(ins, cx);
                cx.operand(ins.dst, "dst");
                if (ins.dst.space == mem_space::hbm || ins.src0.space == mem_space::hbm)
                    cx.fail("engines cannot access HBM (use a DMA)");
                if (e != dve) cx.fail("stream_shuffle runs on the Vector engine (dve)");
                if (ins.dst.elems != ins.src0.elems || ins.dst.type != ins.src0.type)
                    cx.fail("stream_shuffle's dst has src0's elements a partition and dtype");
                for (const float f : {ins.imm, ins.imm1, ins.imm2, ins.imm3})
                    if (f != std::floor(f))
                        cx.fail("stream_shuffle's imm fields are whole numbers");
                if (ins.imm2 < 0 || ins.imm3 > 32 || ins.imm2 >= ins.imm3)
                    cx.fail("stream_shuffle shuffles the partitions [imm2, imm3) of 0..32");
                if (ins.src0.partitions > 32 && ins.src0.partitions != ins.dst.partitions)
                    cx.fail("stream_shuffle's src0 has at most 32 partitions, or dst's");
                const bool keeps = ins.imm2 > 0 || ins.imm3 < 32;
                if (keeps) {
                    if (!ins.src1.valid())
                        cx.fail("a stream_shuffle that keeps partitions reads dst as src1");
                    cx.operand(ins.src1, "src1");
                    if (ins.src1.partitions != ins.dst.partitions ||
                        ins.src1.elems != ins.dst.elems || ins.src1.type != ins.dst.type)
                        cx.fail("stream_shuffle's src1 is dst's values: its shape and dtype");
                }
                for (std::uint32_t p = 0; p < ins.dst.partitions; ++p)
                    if (shuffled(ins, p) && shuffle_source(ins, p) >= ins.src0.partitions)
                        cx.fail("stream_shuffle reads partition " +
                                std::to_string(shuffle_source(ins, p)) + " of a src0 of " +
                                std::to_string(ins.src0.partitions));
            },
        .execute =
            [](alu_io& io) {
                const instruction& ins = io.ins;
                for (std::uint32_t p = 0; p < ins.dst.partitions; ++p) {
                    const bool moved = shuffled(ins, p);
                    const std::size_t from =
                        std::size_t{moved ? shuffle_source(ins, p) : p} * ins.src0.elems;
                    for (std::uint32_t j = 0; j < ins.dst.elems; ++j)
                        io.out(std::size_t{p} * ins.dst.elems + j,
                               moved ? io.in0(from + j) : io.in1(from + j));
                }
            }};
    return r;
}

const opcode_row& row_of_matmul_mx() {
    static const opcode_row r{
        .info = {"matmul_mx",
                 field::dst | field::src0 | field::src1 | field::src2 | field::src3 | field::flags,
                 3, false,
                 "dst[m, n] (+)= sum over partitions p and packed values q of src0[p, m].q * 2^(s0 "
                 "- 127) * src1[p, n].q * 2^(s1 - 127): an MX matmul of x4-packed fp8/fp4 "
                 "operands (src0 stationary, src1 moving); s0, s1 the scales (uint8 or fp8_e8m0) "
                 "of src2 and src3 at partition 32 (p / 32) + (p % 32) / 8 of the scale and the "
                 "element's column (8 partitions x 4 values share one); flags=acc adds to dst "
                 "(Tensor engine, NeuronCore-v4)"},
        .flags = flag::accumulate,
        .other_engines = engine_bit(pe),
        .other_cost =
            "max(min(64, N_stationary), N_moving) of the packed sizes: 4 values a "
            "processing element, 4x the bf16 rate (hardware-facts 1f)",
        .other_operands = array_in_out,
        .other_source = isa_table,
        .check = check_mx};
    return r;
}

const opcode_row& row_of_quantize_mx() {
    static const opcode_row r{
        .info = {"quantize_mx", field::dst | field::dst1 | field::src0, 3, true,
                 "dst[p, j] packs src0[p, 4j .. 4j+3] / X in fp8 (x4; rounded to nearest even, "
                 "saturated), X = 2^e shared by partitions 8g .. 8g+7 of column j, e = "
                 "floor(log2(max |x|)) - (emax - 1) (emax 8 for e4m3fn, 15 for e5m2; 2^-127 for "
                 "a group of zeros), e + 127 stored in dst1 at partition 32 (p / 32) + (p % 32) / "
                 "8, column j (Vector engine, NeuronCore-v4)"},
        // NeuronCore-v4: "four input elements per partition, per cycle (i.e., 4x Vector
        // performance mode)"
        .costs = {{dve, operand_case::sbuf_only, 4, 0.25, true, 0,
                   "hardware-facts 1f (quantize_mx: 4 input elements per partition a cycle)"}},
        .check = check_mx,
        .execute = [](alu_io& io) {  // 8 partitions x one packed column (32 values) share a scale
            // dst1 holds what its rows held (the engine reads it first): only the scale rows,
            // 4 of each 32 partitions, are written.
            const instruction& ins = io.ins;
            const operand& d = ins.dst;
            const std::size_t ds = dtype_size(d.type);
            io.dst1.resize(ins.dst1.bytes());
            const int emax = d.type == dtype::fp8_e4m3fn_x4 ? 8 : 15;
            const std::uint32_t c0 = ins.src0.elems;
            for (std::uint32_t g = 0; g < d.partitions / 8; ++g)
                for (std::uint32_t j = 0; j < d.elems; ++j) {
                    float amax = 0;  // (a NaN is its own element's: a model choice)
                    for (std::uint32_t p = 8 * g; p < 8 * g + 8; ++p)
                        for (std::uint32_t q = 0; q < 4; ++q) {
                            const float v = std::fabs(io.in0(std::size_t{p} * c0 + 4 * j + q));
                            if (v > amax) amax = v;
                        }
                    // X = 2^(floor(log2 amax) - (emax - 1)): twice the OCP scale, so that the
                    // largest values round without saturating; 2^-127 for a group of zeros
                    int e = -127;
                    if (amax > 0) {
                        int x = 0;
                        std::frexp(std::min(amax, std::numeric_limits<float>::max()), &x);
                        e = std::clamp(x - 1 - (emax - 1), -127, 127);
                    }
                    io.dst1[std::size_t{32 * (g / 4) + g % 4} * ins.dst1.elems + j] =
                        static_cast<std::uint8_t>(e + 127);
                    const float inv = std::ldexp(1.0f, -e);
                    for (std::uint32_t p = 8 * g; p < 8 * g + 8; ++p)
                        for (std::uint32_t q = 0; q < 4; ++q)
                            store_packed_value(&io.dst[(std::size_t{p} * d.elems + j) * ds], d.type,
                                               static_cast<int>(q),
                                               io.in0(std::size_t{p} * c0 + 4 * j + q) * inv);
                }
        }};
    return r;
}

}  // namespace trn
