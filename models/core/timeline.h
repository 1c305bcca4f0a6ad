#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trn {

// Records what each track (engine, DMA queue) did when, for a Chrome/Perfetto trace-event JSON
// file. Contract: slices on one track are added in start order; write() emits one complete
// ("X") event per slice with times in microseconds. Recording is off unless a timeline exists.
class timeline {
  public:
    // Starts a group of tracks (a Perfetto process: one per NeuronCore of a chip) and returns
    // its id: the tracks and counters made next belong to it. Without any, all are in one
    // group, "NeuronCore".
    std::size_t group(const std::string& name);
    std::size_t current_group() const { return m_groups.empty() ? 0 : m_groups.size() - 1; }
    std::size_t track(const std::string& name) { return track(name, current_group()); }
    std::size_t track(const std::string& name, std::size_t group);
    void slice(std::size_t track, const std::string& name, double start_ns, double dur_ns,
               const std::string& args_json = "");
    // A counter track ("C" events) of the current group; counter_delta adds `delta` to it at
    // time t.
    std::size_t counter(const std::string& name);
    void counter_delta(std::size_t counter, double t_ns, double delta);
    // Writes the JSON to `path` (atomically: core/output_file.h) or to a stream.
    void write(const std::string& path) const;
    void write(std::ostream& out) const;
    std::size_t size() const { return m_slices.size(); }

  private:
    struct entry {
        std::size_t track;
        std::string name;
        double start_ns, dur_ns;
        std::string args;
    };
    struct delta {
        std::size_t counter;
        double t_ns, value;
    };
    struct named {
        std::string name;
        std::size_t group;
    };
    std::vector<std::string> m_groups;
    std::vector<named> m_tracks, m_counters;
    std::vector<entry> m_slices;
    std::vector<delta> m_deltas;
};

}  // namespace trn
