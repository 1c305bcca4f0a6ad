#include "platforms/run_setup.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "analysis/coverage.h"
#include "core/error.h"
#include "core/output_file.h"
#include "core/units.h"

namespace fs = std::filesystem;

namespace trn {

namespace {

fs::path config_dir() {
    const char* env = std::getenv("TRNSIM_CONFIG_DIR");
    return env ? fs::path(env) : fs::path(TRNSIM_CONFIG_DIR);
}

}  // namespace

std::string resolve_config(const std::string& name) {
    if (fs::exists(name)) return name;
    const fs::path dir = config_dir();
    if (name.find('/') == std::string::npos) {
        for (const fs::path& p : {dir / name, dir / (name + ".yaml")})
            if (fs::exists(p)) return p.string();
    }
    std::string available;
    if (fs::is_directory(dir))
        for (const auto& e : fs::directory_iterator(dir))
            if (e.path().extension() == ".yaml")
                available += (available.empty() ? "" : ", ") + e.path().stem().string();
    throw user_error("config '" + name + "' not found (not a file, and not in " + dir.string() +
                     ": " + available + ")");
}

void write_atomically(const std::string& path, const std::string& text) {
    write_file_atomically(path, text);
}

void print_summary(const stats_tree& s, const std::string& what, const std::string& cfg) {
    std::printf("trnsim: %s on %s\n", what.c_str(), cfg.c_str());
    std::printf("kernel time      %s  (%.3f us; launch overhead %s)\n",
                units::format_time(s.get("total_time_ns")).c_str(), s.get("total_time_ns") / 1e3,
                units::format_time(s.get("launch_overhead_ns")).c_str());
    // Entries under `prefix` whose names end in _ns, largest first, without the suffix.
    auto times_under = [&](const std::string& prefix) {
        std::vector<std::pair<std::string, double>> out;
        for (const auto& e : s.entries()) {
            const std::string& p = e.path;
            if (p.rfind(prefix, 0) == 0 && p.size() > prefix.size() + 3 &&
                p.compare(p.size() - 3, 3, "_ns") == 0)
                out.emplace_back(p.substr(prefix.size(), p.size() - prefix.size() - 3), e.value);
        }
        std::stable_sort(out.begin(), out.end(),
                         [](const auto& a, const auto& b) { return a.second > b.second; });
        return out;
    };
    std::printf("%-8s %14s %12s %8s %16s  %s\n", "engine", "busy", "instructions", "util",
                "semaphore wait", "mostly on");
    for (const char* e : {"pe", "dve", "act", "pool", "sp"}) {
        const std::string b = std::string("engines.") + e;
        const auto on = times_under(b + ".stall_on.");
        std::printf("%-8s %14s %12.0f %7.1f%% %16s  %s\n", e,
                    units::format_time(s.get(b + ".busy_ns")).c_str(), s.get(b + ".instructions"),
                    s.get(b + ".utilisation_pct"),
                    units::format_time(s.get(b + ".stall_semaphore_ns")).c_str(),
                    on.empty() ? "-" : on.front().first.c_str());
    }
    std::printf("DMA transfers    %.0f  (%.0f bytes, %.1f GB/s; busiest engine %s)\n",
                s.get("dma.transfers"), s.get("dma.bytes"), s.get("dma.bandwidth_gbps"),
                units::format_time(s.get("dma.busiest_engine_ns")).c_str());
    std::printf(
        "HBM              read %.0f B, write %.0f B (%.1f GB/s; busiest channel %s, "
        "%.0f page activations)\n",
        s.get("hbm.read_bytes"), s.get("hbm.write_bytes"), s.get("hbm.bandwidth_gbps"),
        units::format_time(s.get("hbm.busiest_channel_ns")).c_str(), s.get("hbm.page_misses"));
    std::printf("MFU              %.2f %%\n", s.get("mfu_pct"));
    if (!s.has("critical_path.total_ns") || s.get("critical_path.total_ns") <= 0) return;
    // What limits the kernel: the resources on its critical path, largest share first.
    const double path = s.get("critical_path.total_ns");
    std::vector<std::pair<std::string, double>> parts;
    for (auto [name, ns] : times_under("critical_path.")) {
        if (name == "total") continue;
        std::replace(name.begin(), name.end(), '_', ' ');
        parts.emplace_back(name, ns);
    }
    if (parts.empty()) return;
    // What would speed it up most (limit.*), then how the critical path splits.
    if (!s.text("limit.by").empty())
        std::printf("bound by         %s: freed, it would save up to %.0f%% of the kernel time\n",
                    s.text("limit.by").c_str(), s.get("limit.saving_pct"));
    std::string rest;
    for (std::size_t i = 0; i < parts.size() && i < 4; ++i) {
        if (i > 0 && 100.0 * parts[i].second / path < 1) break;
        char buf[96];
        std::snprintf(buf, sizeof buf, "%s%s %.0f%%", rest.empty() ? "" : ", ",
                      parts[i].first.c_str(), 100.0 * parts[i].second / path);
        rest += buf;
    }
    std::string why;
    if (s.get("hbm.activation_bound_pct") > 50)
        why = "; HBM time " +
              std::to_string(static_cast<int>(s.get("hbm.activation_bound_pct") + 0.5)) +
              "% set by page activations, not bandwidth";
    std::printf("critical path    %s%s\n", rest.c_str(), why.c_str());
    // The path's largest share is not always what bounds the kernel: a resource can lie on the
    // path while others would take its place were it free (docs/exploration.md).
    std::string key = parts.front().first;
    std::replace(key.begin(), key.end(), ' ', '_');
    const std::string saving = "limit.savings." + key + "_pct";
    if (!s.text("limit.by").empty() && s.has(saving) &&
        s.get(saving) + 0.5 < s.get("limit.saving_pct"))
        std::printf(
            "what-if          %s, %.0f%% of the critical path, freed would save up to %.0f%%; "
            "%s up to %.0f%% (the path runs through what holds it now, not what holds it "
            "most)\n",
            parts.front().first.c_str(), 100.0 * parts.front().second / path, s.get(saving),
            s.text("limit.by").c_str(), s.get("limit.saving_pct"));
}

void print_coverage_note(const stats_tree& s, const config& cfg) {
    if (cfg.files().empty()) return;
    const auto file = std::filesystem::path(cfg.files().back()).parent_path().parent_path() /
                      "calibration" / "coverage.json";
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return;
    const std::string generation = cfg.text("name");
    try {
        const std::string why = unlike_every_point(
            kernel_features::of(s), calibration_coverage::read(file.string(), generation));
        if (!why.empty())
            std::printf(
                "calibration      unlike every fitted %s point: %s; docs/results.md gives the "
                "model's error by kernel class\n",
                generation.c_str(), why.c_str());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "trnsim: warning: %s\n", e.what());
    }
}

void print_lines(const stats_tree& s) {
    struct row {
        std::string place, bound;
        double saving_pct, path_pct, instructions, busy, bytes, wait;
        std::string waiter;
    };
    std::vector<row> rows;
    for (const auto& e : s.entries()) {  // one row per lines.K.critical_path_pct
        const std::string tail = ".critical_path_pct";
        if (e.path.rfind("lines.", 0) != 0 || e.path.size() <= tail.size() ||
            e.path.compare(e.path.size() - tail.size(), tail.size(), tail) != 0)
            continue;
        const std::string k = e.path.substr(0, e.path.size() - tail.size());
        rows.push_back({s.text(k + ".place"), s.text(k + ".bound"), s.get(k + ".saving_pct"),
                        e.value, s.get(k + ".instructions"), s.get(k + ".busy_ns"),
                        s.get(k + ".dma_bytes"), s.get(k + ".wait_most_ns"),
                        s.text(k + ".wait_most_engine")});
    }
    if (rows.empty()) {
        std::printf("lines            none: the program names no source lines or steps\n");
        return;
    }
    std::stable_sort(rows.begin(), rows.end(), [](const row& a, const row& b) {
        return a.saving_pct != b.saving_pct ? a.saving_pct > b.saving_pct : a.path_pct > b.path_pct;
    });
    std::printf(
        "\nwhere the time went, line by line, the lines whose work costs most first (save: the "
        "kernel time that would save were the line's work free, at most, as \"bound by\" says "
        "for resources; path: its share of the critical path, the shares add up to 100%%; "
        "wait: the longest its engines waited on semaphores before its instructions, and which "
        "engine; a line in a loop sums all its iterations)\n");
    if (s.has("chip.slowest_core"))
        std::printf(
            "(core %.0f's lines, the core that ended last; every core's are in the "
            "stats, cores.cN.lines)\n",
            s.get("chip.slowest_core"));
    std::printf("%7s %7s  %-18s %12s %12s %12s %17s  %s\n", "save", "path", "bound", "instructions",
                "busy", "DMA bytes", "wait", "line or step");
    for (const row& r : rows)
        std::printf("%6.1f%% %6.1f%%  %-18s %12.0f %12s %12.0f %12s %-4s  %s\n", r.saving_pct,
                    r.path_pct, r.bound.c_str(), r.instructions, units::format_time(r.busy).c_str(),
                    r.bytes, units::format_time(r.wait).c_str(),
                    r.waiter.empty() ? "-" : r.waiter.c_str(), r.place.c_str());
}

void print_chip_summary(const stats_tree& s, std::size_t cores, std::size_t cores_per_stack) {
    std::printf(
        "chip             %zu cores at once (%zu per HBM stack); the figures above are "
        "core %.0f's, which ended last\n",
        cores, cores_per_stack, s.get("chip.slowest_core"));
    std::printf("%-8s %14s %12s %12s  %s\n", "core", "kernel time", "DMA GB/s", "HBM GB/s",
                "bound by");
    for (std::size_t i = 0; i < cores; ++i) {
        const std::string c = "cores.c" + std::to_string(i) + ".";
        const std::string limit = s.text(c + "limit.by");
        const std::string bound = limit.empty() ? "-" : limit;
        std::printf("%-8zu %14s %12.1f %12.1f  %s\n", i,
                    units::format_time(s.get(c + "total_time_ns")).c_str(),
                    s.get(c + "dma.bandwidth_gbps"), s.get(c + "hbm.bandwidth_gbps"),
                    bound.c_str());
    }
    for (std::size_t k = 0; s.has("chip.stacks.s" + std::to_string(k) + ".bytes"); ++k) {
        const std::string st = "chip.stacks.s" + std::to_string(k) + ".";
        std::printf(
            "HBM stack %zu      %.1f GB/s over the chip's time (%.0f bytes; busiest "
            "channel %s)\n",
            k, s.get(st + "bandwidth_gbps"), s.get(st + "bytes"),
            units::format_time(s.get(st + "busiest_channel_ns")).c_str());
    }
}

void load_config(config& cfg, const std::string& path, const std::vector<std::string>& sets,
                 const std::string& how) {
    cfg.set_config_dir(config_dir().string());
    cfg.load_yaml_file(path);
    // No silent defaults: the declared defaults are neither generation's values, so a config
    // (with its bases) gives every key.
    const auto missing = cfg.missing_keys();
    if (!missing.empty()) {
        std::string list;
        for (std::size_t i = 0; i < missing.size() && i < 8; ++i)
            list += (i ? ", " : "") + missing[i];
        if (missing.size() > 8) list += " and " + std::to_string(missing.size() - 8) + " more";
        throw user_error(path + ": the config gives no value for " +
                         std::to_string(missing.size()) + " key(s): " + list +
                         ". A config starts from a generation's with `base: trn1` or "
                         "`base: trn2` and overrides what it changes, or gives every key "
                         "(`sim --list-params` lists them)");
    }
    for (const auto& s : sets)
        cfg.set(s, how);
}

std::string describe_config(const config& cfg) {
    std::string out = cfg.text("name") + " (" + cfg.source_name();
    for (std::size_t i = 1; i < cfg.files().size(); ++i)
        out += ", base " + cfg.files()[i];
    out += ")";
    if (!cfg.sets().empty()) {
        out += " with " + cfg.set_how();
        for (const auto& s : cfg.sets())
            out += " " + s;
    }
    return out;
}

void add_config_stats(stats_tree& s, const config& cfg,
                      const std::map<std::string, config_override>& overrides) {
    s.add_text("run.config", cfg.portable_source_name(), "config file");
    for (const auto& [key, value] : cfg.effective()) {
        const auto over = overrides.find(key);
        const bool flag = over != overrides.end();
        s.add_text("config." + key, flag ? over->second.value : value,
                   "effective configuration value");
        s.add_text("config_origin." + key, flag ? over->second.origin : cfg.portable_origin_of(key),
                   "where that value came from");
    }
}

}  // namespace trn
