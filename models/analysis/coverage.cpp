#include "analysis/coverage.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace trn {

kernel_features kernel_features::of(const stats_tree& s) {
    kernel_features k;
    const double rows = s.has("dma.descriptors") ? s.get("dma.descriptors") : 0;
    if (rows > 0 && s.has("dma.bytes")) k.row_bytes = s.get("dma.bytes") / rows;
    double total = 0;
    for (std::size_t e = 0; e < engines.size(); ++e) {
        const std::string key = std::string("engines.") + engines[e] + ".busy_ns";
        k.share[e] = s.has(key) ? s.get(key) : 0;
        total += k.share[e];
    }
    for (double& x : k.share)
        x = total > 0 ? x / total : 0;
    // engines.E.dtypes.T.busy_ns, summed over the compute engines
    double typed = 0;
    for (const auto& e : s.entries()) {
        const std::string& p = e.path;
        const auto at = p.find(".dtypes.");
        if (at == std::string::npos || p.size() < 8 || p.compare(p.size() - 8, 8, ".busy_ns") != 0)
            continue;
        if (std::none_of(engines.begin(), engines.end(), [&](const char* name) {
                return p.compare(0, at, std::string("engines.") + name) == 0;
            }))
            continue;
        const std::string name = p.substr(at + 8, p.size() - 8 - at - 8);
        k.dtypes[name] += e.value;
        typed += e.value;
    }
    for (auto& [name, x] : k.dtypes)
        x = typed > 0 ? x / typed : 0;
    return k;
}

std::string kernel_features::main_dtype() const {
    std::string best;
    double most = 0;
    for (const auto& [name, x] : dtypes)
        if (x > most) {
            most = x;
            best = name;
        }
    return best;
}

int kernel_features::busiest() const {
    const auto it = std::max_element(share.begin(), share.end());
    return *it > 0 ? static_cast<int>(it - share.begin()) : -1;
}

namespace {

// The numbers of a JSON tree as statistics entries under dotted paths (a stats dump's own form).
void flatten(const nlohmann::json& j, const std::string& prefix, stats_tree& out) {
    if (j.is_number()) {
        out.add(prefix, j.get<double>(), "", "");
        return;
    }
    if (!j.is_object())
        throw std::runtime_error("'" + prefix + "' is neither a number nor an object");
    for (const auto& [key, value] : j.items())
        flatten(value, prefix.empty() ? key : prefix + "." + key, out);
}

}  // namespace

calibration_coverage calibration_coverage::read(const std::string& path,
                                                const std::string& generation) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error(path + ": cannot be read");
    calibration_coverage c;
    try {
        const nlohmann::json j = nlohmann::json::parse(in);
        const auto& all = j.at("platforms");
        if (!all.contains(generation)) return c;
        for (const auto& p : all.at(generation)) {
            // (the point's statistics, as a run's: the same features from the same entries)
            stats_tree s;
            flatten(p.at("stats"), "", s);
            kernel_features k = kernel_features::of(s);
            k.id = p.at("id").get<std::string>();
            c.points.push_back(k);
        }
    } catch (const std::exception& e) {
        throw std::runtime_error(path + ": not a coverage file of scripts/calibrate --coverage (" +
                                 e.what() + ")");
    }
    return c;
}

namespace {

std::string bytes_text(double b) {
    char buf[32];
    if (b >= 1024)
        std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024);
    else
        std::snprintf(buf, sizeof buf, "%.0f B", b);
    return buf;
}

}  // namespace

std::string unlike_every_point(const kernel_features& k, const calibration_coverage& c,
                               double row_factor, double engine_share) {
    if (c.points.empty()) return "";
    const int top = k.busiest();
    const std::string type = k.main_dtype();
    bool rows_seen = false, engine_seen = false, dtype_seen = false;
    double below = 0, above = 0;  // the nearest points' rows either side of the kernel's
    for (const auto& p : c.points) {
        const bool rows_like = (k.row_bytes > 0) == (p.row_bytes > 0) &&
                               (k.row_bytes <= 0 || (k.row_bytes <= p.row_bytes * row_factor &&
                                                     p.row_bytes <= k.row_bytes * row_factor));
        const bool engine_like = top < 0 || p.share[std::size_t(top)] >= engine_share;
        const auto in_point = p.dtypes.find(type);
        const bool dtype_like =
            type.empty() || (in_point != p.dtypes.end() && in_point->second >= engine_share);
        if (rows_like && engine_like && dtype_like) return "";
        rows_seen = rows_seen || rows_like;
        engine_seen = engine_seen || engine_like;
        dtype_seen = dtype_seen || dtype_like;
        if (p.row_bytes > 0 && p.row_bytes <= k.row_bytes) below = std::max(below, p.row_bytes);
        if (p.row_bytes > k.row_bytes && (above == 0 || p.row_bytes < above)) above = p.row_bytes;
    }
    std::string why;
    if (!rows_seen && k.row_bytes <= 0) why = "no DMA (every point has some)";
    if (!rows_seen && k.row_bytes > 0) {
        why = "DMA rows of " + bytes_text(k.row_bytes) + " on average (the nearest points': ";
        if (below > 0) why += bytes_text(below);
        if (below > 0 && above > 0) why += " and ";
        if (above > 0) why += bytes_text(above);
        why += ")";
    }
    if (!engine_seen) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "%.0f%% of its engine time on %s (%.0f%% or more of none)",
                      100 * k.share[std::size_t(top)], kernel_features::engines[std::size_t(top)],
                      100 * engine_share);
        why += (why.empty() ? "" : "; ") + std::string(buf);
    }
    if (!dtype_seen) {
        char buf[128];
        std::snprintf(buf, sizeof buf, "%.0f%% of its engine time in %s (%.0f%% or more of none)",
                      100 * k.dtypes.at(type), type.c_str(), 100 * engine_share);
        why += (why.empty() ? "" : "; ") + std::string(buf);
    }
    if (why.empty())
        why = "its DMA rows, engines and dtypes are each like some points', never together";
    return why;
}

}  // namespace trn
