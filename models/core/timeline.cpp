#include "core/timeline.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include "core/error.h"
#include "core/output_file.h"

namespace trn {

std::size_t timeline::group(const std::string& name) {
    m_groups.push_back(name);
    return m_groups.size() - 1;
}

std::size_t timeline::track(const std::string& name, std::size_t group) {
    m_tracks.push_back({name, group});
    return m_tracks.size() - 1;
}

std::size_t timeline::counter(const std::string& name) {
    m_counters.push_back({name, current_group()});
    return m_counters.size() - 1;
}

void timeline::slice(std::size_t track, const std::string& name, double start_ns, double dur_ns,
                     const std::string& args_json) {
    m_slices.push_back({track, name, start_ns, dur_ns, args_json});
}

void timeline::counter_delta(std::size_t counter, double t_ns, double delta) {
    m_deltas.push_back({counter, t_ns, delta});
}

void timeline::write(const std::string& path) const {
    output_file file(path);
    write(file.stream());
    file.commit();
}

void timeline::write(std::ostream& out) const {
    out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    const std::vector<std::string> groups =
        m_groups.empty() ? std::vector<std::string>{"NeuronCore"} : m_groups;
    for (std::size_t g = 0; g < groups.size(); ++g)
        out << (g ? ",\n" : "") << "{\"ph\":\"M\",\"pid\":" << g + 1
            << ",\"name\":\"process_name\",\"args\":{\"name\":\"" << groups[g] << "\"}}";
    for (std::size_t t = 0; t < m_tracks.size(); ++t)
        out << ",\n{\"ph\":\"M\",\"pid\":" << m_tracks[t].group + 1 << ",\"tid\":" << t
            << ",\"name\":\"thread_name\",\"args\":{\"name\":\"" << m_tracks[t].name << "\"}}"
            << ",\n{\"ph\":\"M\",\"pid\":" << m_tracks[t].group + 1 << ",\"tid\":" << t
            << ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":" << t << "}}";
    char buf[128];
    for (const auto& s : m_slices) {
        std::snprintf(buf, sizeof buf, "\"ts\":%.6f,\"dur\":%.6f", s.start_ns / 1e3,
                      s.dur_ns / 1e3);
        out << ",\n{\"ph\":\"X\",\"pid\":" << m_tracks[s.track].group + 1 << ",\"tid\":" << s.track
            << ",\"name\":\"" << s.name << "\"," << buf;
        if (!s.args.empty()) out << ",\"args\":" << s.args;
        out << "}";
    }
    // Counters: deltas in time order, accumulated per counter.
    std::vector<delta> deltas = m_deltas;
    std::stable_sort(deltas.begin(), deltas.end(),
                     [](const delta& a, const delta& b) { return a.t_ns < b.t_ns; });
    // counters of one name in one group add up (every DMA queue's bytes in flight)
    std::map<std::pair<std::size_t, std::string>, double> value;
    for (const auto& d : deltas) {
        const named& c = m_counters[d.counter];
        double& v = value[{c.group, c.name}];
        v += d.value;
        std::snprintf(buf, sizeof buf, "\"ts\":%.6f", d.t_ns / 1e3);
        out << ",\n{\"ph\":\"C\",\"pid\":" << c.group + 1 << ",\"name\":\"" << c.name << "\","
            << buf << ",\"args\":{\"value\":" << v << "}}";
    }
    out << "\n]}\n";
}

}  // namespace trn
