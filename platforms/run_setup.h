#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/params.h"
#include "core/stats.h"
#include "core/timeline.h"

namespace trn {

// What `sim` and the NKI bridge share to set up a run and report it.

// A config name (a file, or a stem in TRNSIM_CONFIG_DIR or the project's configs/) -> a path.
// Throws user_error listing the configs available.
std::string resolve_config(const std::string& name);
// Loads the YAML file at `path` (and its bases) into `cfg`, requires a value for every declared
// key, then applies the KEY=VALUE overrides in order. Throws user_error naming what is wrong.
void load_config(config& cfg, const std::string& path, const std::vector<std::string>& sets,
                 const std::string& how = "--set");
// "NAME (FILE, base FILE...) with --set K=V ...": what a run's header says it ran on.
std::string describe_config(const config& cfg);
// The configuration in the stats tree: run.config = the config file's name, config.KEY = its
// effective value, config_origin.KEY = where it came from (FILE:LINE without the machine's
// folders, --set, or default: config::portable_origin_of).
// A value a run used in place of the config's, and where it came from (a compiler flag).
struct config_override {
    std::string value, origin;
};
void add_config_stats(stats_tree& s, const config& cfg,
                      const std::map<std::string, config_override>& overrides = {});
// Writes `text` to `path` atomically (a temporary file renamed into place).
void write_atomically(const std::string& path, const std::string& text);
// The where-the-time-went summary on stdout: latency, engines, DMA, HBM, MFU.
void print_summary(const stats_tree& s, const std::string& what, const std::string& cfg);
// A line when the run's kernel is unlike every point its generation was fitted to (DMA row
// sizes, the engine and dtype it spends most time on: analysis/coverage.h), from the
// calibration/coverage.json
// beside the configuration's base directory; nothing when it is like one or there is no file.
void print_coverage_note(const stats_tree& s, const config& cfg);
// Where the time went line by line (the lines.* statistics, sim --annotate): each source line or
// driver step, hottest on the critical path first; says when the run has none.
void print_lines(const stats_tree& s);
// Runs what is loaded on `platform` (a chip, or a core) to the end, recording every instruction
// on `tl` (when not null), and returns its statistics.
template <typename Platform>
stats_tree simulate(Platform& platform, timeline* tl) {
    platform.set_timeline(tl);
    platform.run();
    platform.set_timeline(nullptr);
    stats_tree stats;
    platform.report(stats);
    return stats;
}
// A chip run's lines after the summary (which is its slowest core's): each core's time, DMA
// bandwidth and bound, and each HBM stack's bandwidth.
void print_chip_summary(const stats_tree& s, std::size_t cores, std::size_t cores_per_stack);

}  // namespace trn
