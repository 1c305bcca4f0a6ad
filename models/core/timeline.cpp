#include "core/timeline.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include "core/error.h"
#include "core/output_file.h"

namespace trn {

std::size_t timeline::track(const std::string& name) {
    m_tracks.push_back(name);
    return m_tracks.size() - 1;
}

void timeline::slice(std::size_t track, const std::string& name, double start_ns, double dur_ns,
                     const std::string& args_json) {
    m_slices.push_back({track, name, start_ns, dur_ns, args_json});
}

void timeline::counter_delta(const std::string& name, double t_ns, double delta) {
    m_deltas.push_back({name, t_ns, delta});
}

void timeline::write(const std::string& path) const {
    output_file file(path);
    write(file.stream());
    file.commit();
}

void timeline::write(std::ostream& out) const {
    out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    out << "{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":\"NeuronCore\"}}";
    for (std::size_t t = 0; t < m_tracks.size(); ++t)
        out << ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":" << t
            << ",\"name\":\"thread_name\",\"args\":{\"name\":\"" << m_tracks[t] << "\"}}"
            << ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":" << t
            << ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":" << t << "}}";
    char buf[128];
    for (const auto& s : m_slices) {
        std::snprintf(buf, sizeof buf, "\"ts\":%.6f,\"dur\":%.6f", s.start_ns / 1e3,
                      s.dur_ns / 1e3);
        out << ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":" << s.track << ",\"name\":\"" << s.name << "\","
            << buf;
        if (!s.args.empty()) out << ",\"args\":" << s.args;
        out << "}";
    }
    // Counters: deltas in time order, accumulated per counter.
    std::vector<delta> deltas = m_deltas;
    std::stable_sort(deltas.begin(), deltas.end(),
                     [](const delta& a, const delta& b) { return a.t_ns < b.t_ns; });
    std::map<std::string, double> value;
    for (const auto& d : deltas) {
        value[d.name] += d.value;
        std::snprintf(buf, sizeof buf, "\"ts\":%.6f", d.t_ns / 1e3);
        out << ",\n{\"ph\":\"C\",\"pid\":1,\"name\":\"" << d.name << "\"," << buf
            << ",\"args\":{\"value\":" << value[d.name] << "}}";
    }
    out << "\n]}\n";
}

}  // namespace trn
