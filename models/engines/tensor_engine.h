#pragma once
#include <deque>

#include "engines/engine.h"

namespace trn {

// The Tensor engine (PE): a rows x cols systolic array writing into PSUM. Each matmul is a
// LoadStationary (the stationary tile, loaded `ls_speedup` times faster than a MultiplyMoving
// of the same free size, in the background while earlier matmuls run, into one of
// `stationary_buffers` buffers) followed by a MultiplyMoving that streams the moving tile
// through the array: max(min(mm_min, M), N) cycles per pass plus a per-pass overhead; fp32
// operands take `fp32_passes` passes, half as many for each fp32 operand the kernel declares
// ones and zeros (flag::stationary_onezero, flag::moving_onezero). Transposes are identity matmuls.
// An MX matmul (NeuronCore-v4) multiplies x4-packed operands, four values a processing element: the
// bf16 cycles for the packed sizes, 4x the contraction.
class tensor_engine : public engine_base {
  public:
    static void declare_params(param_registry& r);
    tensor_engine(const sc_core::sc_module_name& name, const config& cfg, semaphore_bank& sems,
                  bool functional);

    std::string check(const instruction& ins) const override;
    // Cycles of the LoadStationary and the MultiplyMoving of a matmul or transpose.
    double ls_cycles(const instruction& ins) const;
    double mm_cycles(const instruction& ins) const;

    std::uint32_t rows() const { return m_rows; }
    std::uint32_t cols() const { return m_cols; }
    std::uint32_t moving_max() const { return m_moving_max; }
    // The largest moving free size of a matmul into a `dst` of this dtype: moving_max, or as
    // many elements as core.psum.tile_banks banks hold (NeuronCore-v4: the whole PSUM).
    std::uint32_t moving_limit(dtype dst) const;
    // Peak bf16 FLOPs per ns: 2 x rows x cols x clock.
    // engine_base's statistics and the matmuls' and transposes' (counts, FLOPs) and the peak.
    void report(stats_tree& s, const std::string& prefix, double active_ns) const override;
    double peak_flops_per_ns() const { return 2.0 * m_rows * m_cols * clock_ghz(); }
    double matmul_flops() const { return m_flops; }
    // FLOPs weighted by the dtype's peak: the time the matmuls would take at their dtype's peak.
    double ideal_ns() const { return m_ideal_ns; }
    std::uint64_t matmuls() const { return m_matmuls; }
    std::uint64_t transposes() const { return m_transposes; }
    // A transpose's FLOPs as the array spends them (2 x P x F x P: the input against a P x P
    // identity), as the Neuron profiler's transpose_flops counts them; not in matmul_flops().
    double transpose_flops() const { return m_transpose_flops; }

  protected:
    issue_timing execute(const instruction& ins) override;
    void reset() override;

  private:
    std::uint32_t passes(const instruction& ins) const;
    // Whether the instruction takes the fp32 passes (fp32 operands, core.pe.fp32_passes > 1):
    // each of its passes pays core.pe.fp32_pass_overhead.
    bool fp32_multipass(const instruction& ins) const;
    void compute(const instruction& ins);
    // An MX matmul's products, added into acc ([dst partitions, dst elems]).
    void compute_mx(const instruction& ins, std::vector<float>& acc);

    std::uint32_t m_rows, m_cols, m_moving_max;
    double m_mm_min, m_overhead, m_fp32_pass_overhead, m_ls_speedup;
    std::uint32_t m_fp32_passes, m_stationary_buffers;
    bool m_double_row, m_transpose_mode, m_background_transpose, m_bf16_psum, m_mx;
    std::uint64_t m_psum_bank_bytes, m_psum_tile_banks;
    sc_core::sc_time m_ls_free, m_mm_free;
    // The background lane of NeuronCore-v4 (core.pe.background_transpose): a transpose runs
    // there, beside the array's other work, when it frees before the foreground does.
    sc_core::sc_time m_bg_ls_free, m_bg_mm_free;
    std::deque<sc_core::sc_time> m_mm_done;  // completion of the last matmuls, one per buffer
    double m_flops = 0, m_ideal_ns = 0, m_transpose_flops = 0;
    std::uint64_t m_matmuls = 0, m_transposes = 0;
    std::vector<std::uint8_t> m_s, m_m, m_d;         // functional staging
    std::vector<std::uint8_t> m_s_scale, m_m_scale;  // an MX matmul's scales
};

}  // namespace trn
