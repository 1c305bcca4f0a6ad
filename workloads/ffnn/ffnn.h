#pragma once
#include "workloads/workload.h"

namespace trn {

// ffnn (UC Berkeley CS152 lab 6, directed part): H = relu(X W1 + b1); Z = H W2 + b2;
// P = softmax(Z) by rows; predictions = argmax(P) by rows (max8 + find_index8). Built from the
// lab's kernels: transpose (to give lhsT), matmul (any tutorial variant), bias_add_act.
class ffnn_workload : public workload {
  public:
    const char* name() const override { return "ffnn"; }
    const char* description() const override {
        return "two-layer feed-forward network with softmax and argmax (CS152 lab 6)";
    }
    std::vector<param_doc> params() const override;
    built_kernel build(const workload_params& p, const config& cfg,
                       const program_limits& limits) const override;
};

}  // namespace trn
