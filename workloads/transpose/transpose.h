#pragma once
#include "workloads/builder/kernel_builder.h"
#include "workloads/workload.h"

namespace trn {

// transpose (CS149 2025): out[N,M] = in[M,N]^T with 128x128 Tensor-engine transposes (identity
// matmuls into PSUM), a PSUM-to-SBUF copy on the Vector engine, tiles loaded and stored by DMA.
class transpose_workload : public workload {
  public:
    const char* name() const override { return "transpose"; }
    const char* description() const override {
        return "out = in^T with 128x128 Tensor-engine transposes and PSUM->SBUF copies";
    }
    std::vector<param_doc> params() const override;
    built_kernel build(const workload_params& p, const config& cfg,
                       const program_limits& limits) const override;
};

// Emits out[cols, rows] = in[rows, cols]^T; tiles are partitions x min(partitions, pe cols).
// Throws user_error naming `what` when a dimension is not a multiple of the tile.
void emit_transpose(kernel_builder& kb, const hbm_tensor& in, const hbm_tensor& out,
                    std::uint64_t rows, std::uint64_t cols, const std::string& what);

}  // namespace trn
