#include "engines/tensor_engine.h"

#include <algorithm>

namespace trn {

void tensor_engine::declare_params(param_registry& r) {
    r.add({"core.pe.clock", param_kind::frequency, "2.8GHz", "clock of the Tensor engine",
           "hardware-facts 1a (2.8 GHz NC-v2, 2.4 GHz NC-v3)", 1e-6, 100});
    r.add({"core.pe.latency", param_kind::real, "128",
           "cycles from a MultiplyMoving's last input to its result committed in PSUM",
           "model choice: one pass through the array's 128 rows (not published)", 0, 1e6});
    r.add({"core.pe.rows", param_kind::integer, "128",
           "systolic array rows: the contraction (partition) size of one matmul",
           "hardware-facts 1a", 1, 4096});
    r.add({"core.pe.cols", param_kind::integer, "128",
           "systolic array columns: the stationary free size (M) of one matmul",
           "hardware-facts 1a", 1, 4096});
    r.add({"core.pe.moving_max", param_kind::integer, "512",
           "largest moving free size (N) of one matmul (one PSUM bank of fp32)",
           "hardware-facts 1b", 1, 65536});
    r.add({"core.pe.mm_min", param_kind::real, "64",
           "MM_INIT_LATENCY: the shortest MultiplyMoving, in cycles",
           "hardware-facts 1b (MM_INIT_LATENCY = 64)", 0, 1e6});
    r.add({"core.pe.overhead", param_kind::real, "0",
           "cycles added to every pass of a MultiplyMoving (16-bit and fp8 operands)",
           "hardware-facts 1b (back-to-back cost has none)", 0, 1e6});
    r.add({"core.pe.fp32_passes", param_kind::integer, "4",
           "passes of an fp32 matmul (fp32 runs at a quarter of the bf16 rate)",
           "hardware-facts 1b (FP32 4x)", 1, 16});
    r.add({"core.pe.fp32_pass_overhead", param_kind::real, "0",
           "cycles added to every pass of an fp32 MultiplyMoving",
           "hardware-facts 1b (back-to-back cost has none; an fp32 pass may pay the "
           "MM_INIT_LATENCY of 64 cycles)",
           0, 1e6});
    r.add({"core.pe.ls_speedup", param_kind::real, "4",
           "how much faster a LoadStationary is than a MultiplyMoving of the same free size",
           "hardware-facts 1b (up to 4x)", 1, 64});
    r.add({"core.pe.stationary_buffers", param_kind::integer, "2",
           "stationary tiles resident at once (the next loads while the current multiplies)",
           "hardware-facts 1b (figure: 2 resident)", 1, 16});
    r.add({"core.pe.double_row", param_kind::boolean, "false",
           "fp8 double-row mode (matmul at 2x the bf16 rate) is available",
           "hardware-facts 1b (NC-v3 only)"});
    r.add({"core.pe.transpose_mode", param_kind::boolean, "false",
           "dedicated transpose mode (fp32 transposes at 2x the identity-matmul rate)",
           "hardware-facts 1b (NC-v3 only)"});
    r.add({"core.pe.background_transpose", param_kind::boolean, "false",
           "a transpose may run in a background lane beside another matmul or transpose (the "
           "hardware decides: whichever lane frees first)",
           "hardware-facts 1f (NC-v4)"});
    r.add({"core.pe.mx", param_kind::boolean, "false",
           "MX matmuls (nc_matmul_mx): x4-packed fp8/fp4 operands with their scales, four "
           "values a processing element, at the bf16 cycles of the packed sizes (4x the rate)",
           "hardware-facts 1f (NC-v4: MXFP8/MXFP4 at 4x the BF16 throughput)"});
    r.add({"core.pe.bf16_psum", param_kind::boolean, "false",
           "a matmul may write bf16 results into PSUM, and add onto bf16 PSUM (fp32 inside the "
           "array and for the addition, rounded to nearest even on the write)",
           "hardware-facts 1f (NC-v4: BF16 matmul results in PSUM)"});
}

tensor_engine::tensor_engine(const sc_core::sc_module_name& name, const config& cfg,
                             semaphore_bank& sems, bool functional)
    : engine_base(name, engine_kind::pe, cfg, sems, functional),
      m_rows(static_cast<std::uint32_t>(cfg.integer("core.pe.rows"))),
      m_cols(static_cast<std::uint32_t>(cfg.integer("core.pe.cols"))),
      m_moving_max(static_cast<std::uint32_t>(cfg.integer("core.pe.moving_max"))),
      m_mm_min(cfg.real("core.pe.mm_min")),
      m_overhead(cfg.real("core.pe.overhead")),
      m_fp32_pass_overhead(cfg.real("core.pe.fp32_pass_overhead")),
      m_ls_speedup(cfg.real("core.pe.ls_speedup")),
      m_fp32_passes(static_cast<std::uint32_t>(cfg.integer("core.pe.fp32_passes"))),
      m_stationary_buffers(static_cast<std::uint32_t>(cfg.integer("core.pe.stationary_buffers"))),
      m_double_row(cfg.boolean("core.pe.double_row")),
      m_transpose_mode(cfg.boolean("core.pe.transpose_mode")),
      m_background_transpose(cfg.boolean("core.pe.background_transpose")),
      m_bf16_psum(cfg.boolean("core.pe.bf16_psum")),
      m_mx(cfg.boolean("core.pe.mx")),
      m_psum_bank_bytes(cfg.size("core.psum.bank_size")),
      m_psum_tile_banks(static_cast<std::uint64_t>(cfg.integer("core.psum.tile_banks"))) {}

std::uint32_t tensor_engine::moving_limit(dtype dst) const {
    const std::uint64_t whole = m_psum_tile_banks * m_psum_bank_bytes / dtype_size(dst);
    return static_cast<std::uint32_t>(std::max<std::uint64_t>(m_moving_max, whole));
}

std::string tensor_engine::check(const instruction& ins) const {
    if (!ins.indirect.empty()) {  // (the indirect matmul operands the NKI reference allows)
        if (!m_indirect) return indirect_refused(ins);
        if (ins.op != opcode::matmul)
            return std::string("tensor indirection on the Tensor engine is for matmul, not ") +
                   opcode_name(ins.op);
        for (const auto& t : ins.indirect)
            if (t.slot == operand_slot::dst)
                return "an indirect matmul dst is not modelled (NKI's nc_matmul allows it: its "
                       "stationary and moving are)";
        for (const auto& t : ins.indirect)
            if (t.slot != operand_slot::dst &&
                !(ins.at(t.slot).type == dtype::bfloat16 || ins.at(t.slot).type == dtype::float16 ||
                  is_fp8(ins.at(t.slot).type)))
                return std::string("an indirect matmul ") + operand_slot_name(t.slot) +
                       " is fp16, bf16 or fp8, not " + dtype_name(ins.at(t.slot).type);
    }
    auto lim = [&] {  // built only for a message: check() runs for every instruction
        return " (core.pe.rows=" + std::to_string(m_rows) +
               ", core.pe.cols=" + std::to_string(m_cols) +
               ", core.pe.moving_max=" + std::to_string(m_moving_max) + ")";
    };
    if (ins.op == opcode::transpose) {
        const operand& s = ins.src0;
        if (s.partitions > m_rows || s.elems > m_cols)
            return "transpose of " + std::to_string(s.partitions) + " x " +
                   std::to_string(s.elems) + " exceeds the array" + lim();
        if (ins.dst.partitions != s.elems || ins.dst.elems != s.partitions)
            return "transpose dst must be " + std::to_string(s.elems) + " x " +
                   std::to_string(s.partitions);
    } else if (ins.op == opcode::matmul_mx) {
        const operand &st = ins.src0, &mv = ins.src1;
        if (!m_mx) return "an MX matmul needs NeuronCore-v4's Tensor engine (core.pe.mx=false)";
        if (st.partitions > m_rows)
            return "matmul_mx contracts over " + std::to_string(st.partitions) +
                   " partitions, more than the array's rows" + lim();
        if (st.elems > m_cols || st.elems % 2 != 0)
            return "matmul_mx stationary free size " + std::to_string(st.elems) +
                   " must be even and at most the array's columns" + lim();
        if (ins.dst.type != dtype::float32 && !(ins.dst.type == dtype::bfloat16 && m_bf16_psum))
            return m_bf16_psum ? "matmul_mx writes fp32 or bf16 into PSUM"
                               : "matmul_mx writes fp32 into PSUM (bf16: core.pe.bf16_psum)";
        if (mv.elems > m_psum_bank_bytes / dtype_size(ins.dst.type))
            return "matmul_mx moving free size " + std::to_string(mv.elems) +
                   " exceeds one PSUM bank of its " + dtype_name(ins.dst.type) + " dst (" +
                   std::to_string(m_psum_bank_bytes / dtype_size(ins.dst.type)) + ")";
        if (ins.dst.partitions != st.elems || ins.dst.elems != mv.elems)
            return "matmul_mx dst must be " + std::to_string(st.elems) + " x " +
                   std::to_string(mv.elems);
    } else if (ins.op == opcode::matmul) {
        const operand &st = ins.src0, &mv = ins.src1;
        if (st.partitions != mv.partitions)
            return "matmul stationary and moving contract over different partition counts (" +
                   std::to_string(st.partitions) + " vs " + std::to_string(mv.partitions) + ")";
        if (st.partitions > m_rows)
            return "matmul contracts over " + std::to_string(st.partitions) +
                   " partitions, more than the array's rows" + lim();
        if (st.elems > m_cols)
            return "matmul stationary free size " + std::to_string(st.elems) +
                   " exceeds the array's columns" + lim();
        if (ins.dst.type != dtype::float32 && !(ins.dst.type == dtype::bfloat16 && m_bf16_psum))
            return m_bf16_psum ? "the Tensor engine writes a matmul's fp32 or bf16 results into "
                                 "PSUM"
                               : "the Tensor engine writes a matmul's fp32 results into PSUM "
                                 "(bf16 from NeuronCore-v4: core.pe.bf16_psum)";
        if (mv.elems > moving_limit(ins.dst.type))
            return "matmul moving free size " + std::to_string(mv.elems) +
                   " exceeds the moving limit of " + std::to_string(moving_limit(ins.dst.type)) +
                   " for a " + dtype_name(ins.dst.type) +
                   " dst (core.pe.moving_max=" + std::to_string(m_moving_max) +
                   ", core.psum.tile_banks=" + std::to_string(m_psum_tile_banks) + ")";
        if (st.type != mv.type)
            return std::string("matmul operands have different dtypes (stationary ") +
                   dtype_name(st.type) + ", moving " + dtype_name(mv.type) +
                   "): the Tensor engine multiplies operands of one dtype";
        if (ins.dst.partitions != st.elems || ins.dst.elems != mv.elems)
            return "matmul dst must be " + std::to_string(st.elems) + " x " +
                   std::to_string(mv.elems);
        if ((ins.flags & flag::double_row) && !m_double_row)
            return "fp8 double-row mode is not available on this NeuronCore "
                   "(core.pe.double_row=false)";
        if ((ins.flags & flag::double_row) && !is_fp8(st.type))
            return "double-row mode needs fp8 operands";
    } else {
        return std::string("the Tensor engine cannot execute ") + opcode_name(ins.op);
    }
    // A transpose may also write its input's dtype (bit-accurate from NeuronCore-v3; the NKI
    // reference: "the output dst tile must have the same data type as that of data").
    if (ins.op == opcode::transpose && ins.dst.type != dtype::float32 &&
        ins.dst.type != ins.src0.type)
        return "the Tensor engine writes a transpose into PSUM in fp32 or its input's dtype";
    if (ins.src0.type == dtype::int32) return "the Tensor engine does not multiply int32";
    const std::uint64_t first_bank = ins.dst.offset / m_psum_bank_bytes,
                        last_bank = (ins.dst.offset + ins.dst.row_bytes() - 1) / m_psum_bank_bytes;
    if (last_bank - first_bank >= m_psum_tile_banks)
        return "the PSUM destination spans " + std::to_string(last_bank - first_bank + 1) +
               " banks of " + std::to_string(m_psum_bank_bytes) + " bytes (at most " +
               std::to_string(m_psum_tile_banks) + ": core.psum.tile_banks)";
    return "";
}

std::uint32_t tensor_engine::passes(const instruction& ins) const {
    if (!fp32_multipass(ins)) return 1;
    std::uint32_t n = m_fp32_passes;
    // (transpose mode moves the input's bits: its identity multiplies nothing, and declaring
    // it ones and zeros changes nothing)
    if (ins.op == opcode::transpose && m_transpose_mode) return std::max(1u, n / 2);
    // An fp32 operand the kernel declares ones and zeros has no low half to multiply: half the
    // passes (nc_matmul's is_*_onezero, "could lead to 2x better performance" in fp32), each
    // still an fp32 pass. A transpose's moving operand is its identity, in the input's dtype.
    const bool s32 = ins.src0.type == dtype::float32;
    const bool m32 = ins.op == opcode::transpose ? s32 : ins.src1.type == dtype::float32;
    if ((ins.flags & flag::stationary_onezero) && s32) n /= 2;
    if ((ins.flags & flag::moving_onezero) && m32) n /= 2;
    return std::max(1u, n);
}

bool tensor_engine::fp32_multipass(const instruction& ins) const {
    if (ins.op == opcode::matmul_mx || m_fp32_passes < 2) return false;
    return ins.src0.type == dtype::float32 || (ins.src1.valid() && ins.src1.type == dtype::float32);
}

double tensor_engine::ls_cycles(const instruction& ins) const {
    // The stationary (for a transpose, the input) has free size M = src0.elems.
    return passes(ins) * std::max(1.0, ins.src0.elems / m_ls_speedup);
}

double tensor_engine::mm_cycles(const instruction& ins) const {
    const double m = ins.src0.elems;
    const double n = ins.op == opcode::transpose ? ins.src0.partitions : ins.src1.elems;
    const std::uint32_t p = passes(ins);
    const double per_pass = std::max(std::min(m_mm_min, m), n) +
                            (fp32_multipass(ins) ? m_fp32_pass_overhead : m_overhead);
    double c = p * per_pass;
    if (ins.flags & flag::double_row) c /= 2;
    return c;
}

void tensor_engine::compute(const instruction& ins) {
    const operand& d = ins.dst;
    const std::size_t ds = dtype_size(d.type);
    std::vector<float> acc(std::size_t{d.partitions} * d.elems, 0.0f);
    if ((ins.op == opcode::matmul || ins.op == opcode::matmul_mx) &&
        (ins.flags & flag::accumulate)) {
        peek_slot(ins, operand_slot::dst, m_d);  // (a bf16 dst is upcast, added in fp32 and
                                                 // rounded back on the write)
        for (std::size_t i = 0; i < acc.size(); ++i)
            acc[i] = load_element(&m_d[i * ds], d.type);
    }
    const operand& s = ins.src0;
    const std::size_t ss = dtype_size(s.type);
    if (ins.op == opcode::matmul_mx) {
        compute_mx(ins, acc);
    } else if (ins.op == opcode::transpose) {
        for (std::uint32_t p = 0; p < s.partitions; ++p)
            for (std::uint32_t f = 0; f < s.elems; ++f)
                acc[std::size_t{f} * d.elems + p] =
                    load_element(&m_s[(std::size_t{p} * s.elems + f) * ss], s.type);
    } else {
        const operand& mv = ins.src1;
        const std::size_t ms = dtype_size(mv.type);
        std::vector<float> moving(std::size_t{mv.partitions} * mv.elems);
        for (std::size_t i = 0; i < moving.size(); ++i)
            moving[i] = load_element(&m_m[i * ms], mv.type);
        for (std::uint32_t k = 0; k < s.partitions; ++k) {
            const float* b = &moving[std::size_t{k} * mv.elems];
            for (std::uint32_t m = 0; m < s.elems; ++m) {
                const float a = load_element(&m_s[(std::size_t{k} * s.elems + m) * ss], s.type);
                if (a == 0.0f) continue;
                float* row = &acc[std::size_t{m} * d.elems];
                for (std::uint32_t n = 0; n < mv.elems; ++n)
                    row[n] += a * b[n];
            }
        }
    }
    m_d.resize(d.bytes());
    for (std::size_t i = 0; i < acc.size(); ++i)
        store_element(&m_d[i * ds], d.type, acc[i]);
}

namespace {

// The MX scale of data element [p, j]: 2^(bits - 127) (0xFF: NaN) at partition
// 32 (p / 32) + (p % 32) / 8 of the scale operand, column j.
float mx_scale(const std::vector<std::uint8_t>& scale, const operand& op, std::uint32_t p,
               std::uint32_t j) {
    const std::uint8_t bits = scale[std::size_t{32 * (p / 32) + p % 32 / 8} * op.elems + j];
    return load_element(&bits, dtype::fp8_e8m0);
}

}  // namespace

void tensor_engine::compute_mx(const instruction& ins, std::vector<float>& acc) {
    const operand &st = ins.src0, &mv = ins.src1, &d = ins.dst;
    const std::size_t ss = dtype_size(st.type), ms = dtype_size(mv.type);
    std::vector<float> moving(std::size_t{mv.elems} * 4);
    for (std::uint32_t p = 0; p < st.partitions; ++p) {
        for (std::uint32_t n = 0; n < mv.elems; ++n) {
            const float scale = mx_scale(m_m_scale, ins.src3, p, n);
            for (int q = 0; q < 4; ++q)
                moving[std::size_t{n} * 4 + q] =
                    packed_value(&m_m[(std::size_t{p} * mv.elems + n) * ms], mv.type, q) * scale;
        }
        for (std::uint32_t m = 0; m < st.elems; ++m) {
            const float scale = mx_scale(m_s_scale, ins.src2, p, m);
            float* row = &acc[std::size_t{m} * d.elems];
            for (int q = 0; q < 4; ++q) {
                const float a =
                    packed_value(&m_s[(std::size_t{p} * st.elems + m) * ss], st.type, q) * scale;
                if (a == 0.0f) continue;
                for (std::uint32_t n = 0; n < mv.elems; ++n)
                    row[n] += a * moving[std::size_t{n} * 4 + q];
            }
        }
    }
}

void tensor_engine::reset() {
    m_mm_done.clear();
    m_bg_ls_free = m_bg_mm_free = sc_core::SC_ZERO_TIME;
    m_flops = m_ideal_ns = m_transpose_flops = 0;
    m_matmuls = m_transposes = 0;
}

issue_timing tensor_engine::execute(const instruction& ins) {
    const sc_core::sc_time now = sim_time();
    const sc_core::sc_time ls = cycles(ls_cycles(ins)), mm = cycles(mm_cycles(ins));
    // A transpose goes to the background lane when that frees first (NC-v4); it has its own
    // load and multiply units there, and leaves the foreground's stationaries alone.
    const bool background = ins.op == opcode::transpose && m_background_transpose &&
                            std::max(m_bg_ls_free, m_bg_mm_free) < std::max(m_ls_free, m_mm_free);
    sc_core::sc_time& ls_free = background ? m_bg_ls_free : m_ls_free;
    sc_core::sc_time& mm_free = background ? m_bg_mm_free : m_mm_free;
    // LoadStationary: needs the LS unit and a free stationary buffer (the one the matmul
    // `stationary_buffers` back used).
    sc_core::sc_time ls_start = std::max(now, ls_free);
    if (!background && m_mm_done.size() >= m_stationary_buffers)
        ls_start = std::max(ls_start, m_mm_done[m_mm_done.size() - m_stationary_buffers]);
    // Earlier instructions hold the array until its stationary can load and the matmul follow.
    const sc_core::sc_time held = std::max(ls_start, mm_free > now + ls ? mm_free - ls : now) - now;
    ls_start = now + access_slot(tlm::TLM_READ_COMMAND, ins, operand_slot::src0,
                                 m_functional ? &m_s : nullptr, ls_start - now, ls);
    if (ins.src2.valid())  // an MX stationary's scale, with it
        ls_start = std::max(ls_start, now + access_operand(tlm::TLM_READ_COMMAND, ins.src2,
                                                           m_functional ? &m_s_scale : nullptr,
                                                           ls_start - now, ls));
    const sc_core::sc_time ls_end = ls_start + ls;
    // MultiplyMoving: after its stationary is loaded and the array is free.
    sc_core::sc_time mm_start = std::max(ls_end, mm_free) - now;
    if (ins.src1.valid()) {
        mm_start = std::max(mm_start, access_slot(tlm::TLM_READ_COMMAND, ins, operand_slot::src1,
                                                  m_functional ? &m_m : nullptr, mm_start, mm));
    }
    if (ins.src3.valid())  // an MX moving's scale, with it
        mm_start =
            std::max(mm_start, access_operand(tlm::TLM_READ_COMMAND, ins.src3,
                                              m_functional ? &m_m_scale : nullptr, mm_start, mm));
    if (m_functional) compute(ins);
    mm_start = std::max(mm_start, access_slot(tlm::TLM_WRITE_COMMAND, ins, operand_slot::dst,
                                              m_functional ? &m_d : nullptr, mm_start, mm));
    const sc_core::sc_time mm_end = now + mm_start + mm;
    ls_free = ls_end;
    mm_free = mm_end;
    if (!background) {
        m_mm_done.push_back(mm_end);
        if (m_mm_done.size() > m_stationary_buffers) m_mm_done.pop_front();
    }
    if (ins.op == opcode::matmul || ins.op == opcode::matmul_mx) {
        const bool mx = ins.op == opcode::matmul_mx;  // four values a packed element
        const double flops =
            2.0 * (mx ? 4 : 1) * ins.src0.partitions * ins.src0.elems * ins.src1.elems;
        m_flops += flops;
        m_ideal_ns += flops * passes(ins) /
                      (mx                             ? 4.0
                       : ins.flags & flag::double_row ? 2.0
                                                      : 1.0) /
                      peak_flops_per_ns();
        ++m_matmuls;
    } else {
        ++m_transposes;
        m_transpose_flops += 2.0 * ins.src0.partitions * ins.src0.elems * ins.src0.partitions;
    }
    return {mm_start, mm, ls_end - now, mm_start + mm + m_latency, held, ls, background};
}

void tensor_engine::report(stats_tree& s, const std::string& base, double active_ns) const {
    engine_base::report(s, base, active_ns);
    s.add(base + ".flops", matmul_flops(), "FLOP", "matmul FLOPs (2 x K x M x N each)");
    s.add(base + ".matmuls", static_cast<double>(matmuls()), "count", "matmul instructions");
    s.add(base + ".transposes", static_cast<double>(transposes()), "count",
          "transpose instructions");
    s.add(base + ".transpose_flops", transpose_flops(), "FLOP",
          "transposes' FLOPs (2 x P x F x P each: the input against an identity)");
    s.add(base + ".peak_tflops", peak_flops_per_ns() / 1e3, "TFLOPS",
          "bf16 peak: 2 x rows x cols x clock");
}

}  // namespace trn
