#pragma once
#include <vector>

#include "workloads/workload.h"

namespace trn {

// The workload drivers sim runs by name (--workload), in the order --list-workloads gives them.
const std::vector<const workload*>& all_workloads();
// Throws user_error listing the workloads.
const workload& find_workload(const std::string& name);

}  // namespace trn
