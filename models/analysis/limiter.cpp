#include "analysis/limiter.h"

#include <algorithm>
#include <set>

namespace trn {

bool moves_data(const std::string& resource) {
    static const std::set<std::string> data = {"dma fixed latency", "dma engines", "hbm", "sbuf",
                                               "psum"};
    return data.count(resource) != 0;
}

namespace {

// The kernel time left with the resources `freed` free (see estimate_limiter's contract).
double time_left(double total_ns, double launch_ns, const std::map<std::string, double>& path_ns,
                 const std::map<std::string, double>& busy_ns, const std::set<std::string>& freed) {
    double on_path = 0;
    for (const auto& [r, ns] : path_ns)
        if (freed.count(r)) on_path += ns;
    double busiest = 0;
    for (const auto& [r, ns] : busy_ns)
        if (!freed.count(r)) busiest = std::max(busiest, ns);
    const double launch = freed.count("launch") ? 0 : launch_ns;
    return std::min(total_ns, std::max(total_ns - on_path, launch + busiest));
}

}  // namespace

limiter_estimate estimate_limiter(double total_ns, double launch_ns,
                                  const std::map<std::string, double>& path_ns,
                                  const std::map<std::string, double>& busy_ns) {
    limiter_estimate out;
    std::set<std::string> names, data;
    for (const auto& [r, ns] : path_ns)
        names.insert(r);
    for (const auto& [r, ns] : busy_ns)
        names.insert(r);
    for (const auto& r : names)
        if (moves_data(r)) data.insert(r);
    for (const auto& r : names)
        out.savings.emplace_back(r,
                                 total_ns - time_left(total_ns, launch_ns, path_ns, busy_ns, {r}));
    const double group =
        data.empty() ? 0 : total_ns - time_left(total_ns, launch_ns, path_ns, busy_ns, data);
    if (!data.empty()) out.savings.emplace_back("data movement", group);
    std::stable_sort(out.savings.begin(), out.savings.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    for (const auto& [r, ns] : out.savings) {
        if (r == "data movement" || ns <= 0) continue;
        out.by = r;  // the best single resource
        out.saving_ns = ns;
        break;
    }
    if (group > 0 && out.saving_ns < 0.8 * group) {
        out.by = "data movement";
        out.saving_ns = group;
    }
    return out;
}

}  // namespace trn
