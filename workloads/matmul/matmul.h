#pragma once
#include <array>

#include "workloads/builder/kernel_builder.h"
#include "workloads/workload.h"

namespace trn {

// matmul (AWS NKI matrix-multiplication tutorial): result[M,N] = lhsT[K,M]^T x rhs[K,N] in the
// tutorial's four variants. Tile sizes come from the platform (TILE_K = core.pe.rows,
// TILE_M = core.pe.cols, TILE_N = core.pe.moving_max).
class matmul_workload : public workload {
  public:
    const char* name() const override { return "matmul"; }
    const char* description() const override {
        return "C = A x B on the Tensor engine (NKI tutorial): tiled, hoist_load, "
               "block_free_dimension, fully_optimized";
    }
    std::vector<param_doc> params() const override;
    built_kernel build(const workload_params& p, const config& cfg,
                       const program_limits& limits) const override;
};

// The matmul kernels on HBM tensors the caller owns, so other kernels (ffnn) can reuse them:
// result[M,N] = lhsT[K,M]^T x rhs[K,N] (result's dtype may differ from the operands').
struct matmul_shape {
    std::uint64_t m, k, n;
};
void emit_matmul(kernel_builder& kb, const std::string& variant, const hbm_tensor& lhsT,
                 const hbm_tensor& rhs, const hbm_tensor& result, const matmul_shape& s,
                 bool double_row = false);
// Throws user_error naming the parameter when a dimension is not a multiple of its tile;
// `names` are the workload's names for m, k and n.
void check_matmul_shape(const kernel_builder& kb, const std::string& variant, const matmul_shape& s,
                        const std::array<const char*, 3>& names = {"m", "k", "n"});
// result = lhsT^T x rhs in double precision, from the operands as stored (already rounded).
std::vector<double> reference_matmul(const std::vector<double>& lhsT,
                                     const std::vector<double>& rhs, const matmul_shape& s);
std::vector<double> region_values(const hbm_region& r);

}  // namespace trn
