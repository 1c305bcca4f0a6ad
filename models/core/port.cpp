#include "core/port.h"

#include "core/stats.h"

namespace trn {

void report_port(stats_tree& s, const std::string& prefix, const busy_port& port,
                 const std::string& busy, const std::string& queued) {
    s.add(prefix + ".busy_ns", in_ns(port.busy_total()), "ns", busy);
    s.add(prefix + ".queued_ns", in_ns(port.wait_total()), "ns", queued);
}

}  // namespace trn
