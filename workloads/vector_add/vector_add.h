#pragma once
#include "workloads/workload.h"

namespace trn {

// vector_add (CS149 assignment 4, part 1): out = a + b in every variant of workloads.md.
class vector_add_workload : public workload {
  public:
    const char* name() const override { return "vector_add"; }
    const char* description() const override {
        return "out = a + b on the Vector engine (CS149 part 1): naive, tiled, stream, "
               "direct_alloc, alloc_bad";
    }
    std::vector<param_doc> params() const override;
    built_kernel build(const workload_params& p, const config& cfg,
                       const program_limits& limits) const override;
    // direct_alloc and alloc_bad place their tiles themselves: their races are found over the
    // whole program.
    bool may_stream(const workload_params& p) const override;
};

}  // namespace trn
