#pragma once
#include "workloads/workload.h"

namespace trn {

// conv2d with fused maxpool (CS149 part 2, CS152 lab 6 open-ended part): shift-and-matmul on the
// Tensor engine, contracting over input channels in tiles of the partition count, all
// K*K*Cin/128 partial products of an output tile accumulated in one PSUM tile, eviction with
// bias and max-pool on the Vector engine. Variants baseline, row (the measured CS149 kernel)
// and optimized; `case=` names a shape, `fleet=cs149|cs152` expands to every case of a fleet.
class conv2d_workload : public workload {
  public:
    const char* name() const override { return "conv2d"; }
    const char* description() const override {
        return "fused conv2d + maxpool on the Tensor engine (CS149/CS152): baseline, row, "
               "optimized; case=..., fleet=cs149|cs152";
    }
    std::vector<param_doc> params() const override;
    std::vector<std::map<std::string, std::string>> expand(
        const std::map<std::string, std::string>& given) const override;
    built_kernel build(const workload_params& p, const config& cfg,
                       const program_limits& limits) const override;
};

// The fleets of workloads.md: case names in{Cin}_out{Cout}_filter{K}x{K}_batch{B}_{H}x{W}_
// {dtype}[_pool{p}].
const std::vector<std::string>& conv2d_fleet(const std::string& name);

}  // namespace trn
