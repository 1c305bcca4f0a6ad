#pragma once
// A platform config loaded from configs/, and the program limits neuron_core derives from it,
// for tests that build workloads without running them.
#include <map>
#include <string>
#include <vector>

#include "platforms/chip.h"
#include "workloads/registry.h"

namespace trn::testing {

// A SystemC time in ns, for comparing timing with the formulas.
inline double to_ns(const sc_core::sc_time& t) {
    return t.to_seconds() * 1e9;
}

inline const param_registry& platform_registry() {
    static const param_registry registry = [] {
        param_registry r;
        declare_platform_params(r);
        return r;
    }();
    return registry;
}

// The parameters' defaults with `sets` applied (KEY=VALUE).
inline config default_config(const std::vector<std::string>& sets) {
    config c(platform_registry());
    for (const auto& s : sets)
        c.set(s);
    return c;
}

// configs/<name>.yaml with `sets` applied (KEY=VALUE).
inline config platform_config(const std::string& name, const std::vector<std::string>& sets = {}) {
    config c(platform_registry());
    c.load_yaml_file(std::string(SOURCE_DIR) + "/configs/" + name + ".yaml");
    for (const auto& s : sets)
        c.set(s);
    return c;
}

inline program_limits limits_of(const config& c) {
    program_limits l;
    l.partitions = static_cast<std::uint32_t>(c.integer("core.sbuf.partitions"));
    l.sbuf_partition_bytes = c.size("core.sbuf.partition_size");
    l.psum_partition_bytes =
        static_cast<std::uint64_t>(c.integer("core.psum.banks")) * c.size("core.psum.bank_size");
    l.hbm_bytes = c.size("core.hbm.size");
    l.dma_queues = static_cast<std::size_t>(c.integer("core.dma.queues"));
    return l;
}

inline built_kernel build_workload(const std::string& name,
                                   const std::map<std::string, std::string>& params,
                                   const config& cfg) {
    const workload& w = find_workload(name);
    return w.build(workload_params(name, w.params(), params), cfg, limits_of(cfg));
}

}  // namespace trn::testing
