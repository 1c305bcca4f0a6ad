#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace trn {

// What would speed a kernel up most: for each resource on its critical path (and the data
// movement as one), an estimate of the time saved were that resource free.
struct limiter_estimate {
    std::string by;        // the resource or group whose freeing saves most; "" for none
    double saving_ns = 0;  // its estimated saving
    std::vector<std::pair<std::string, double>> savings;  // every candidate's, largest first
};

// The resources that move data, freed together as the group "data movement".
bool moves_data(const std::string& resource);

// Contract: total_ns is the kernel time (launch included) and launch_ns its launch overhead;
// path_ns the critical path's time by resource (critical_path::ns_by_resource); busy_ns each
// throughput resource's busy time over the kernel (an engine's, the busiest DMA engine's, the
// busiest HBM channel's). Freeing a set G of resources leaves the kernel at least
// max(total - path time on G, launch + the busiest resource outside G): a resource's saving is
// total minus that bound, which is exact when one resource limits and an upper bound on the
// saving otherwise (others' gaps may then fill in). A single resource is named when it saves
// at least 80% of what the data movement group saves; else the group is.
limiter_estimate estimate_limiter(double total_ns, double launch_ns,
                                  const std::map<std::string, double>& path_ns,
                                  const std::map<std::string, double>& busy_ns);

}  // namespace trn
