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
    std::size_t track(const std::string& name);
    void slice(std::size_t track, const std::string& name, double start_ns, double dur_ns,
               const std::string& args_json = "");
    // A counter track ("C" events): `delta` is added to counter `name` at time t.
    void counter_delta(const std::string& name, double t_ns, double delta);
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
        std::string name;
        double t_ns, value;
    };
    std::vector<std::string> m_tracks;
    std::vector<entry> m_slices;
    std::vector<delta> m_deltas;
};

}  // namespace trn
