#pragma once
#include <array>
#include <map>
#include <string>
#include <vector>

#include "core/stats.h"

namespace trn {

// What a run's kernel is like, for comparing it with the kernels a generation was calibrated on:
// its mean bytes per DMA row (one run of one partition; 0 without DMA) and each compute
// engine's share of the compute engines' busy time (pe, dve, act, pool).
struct kernel_features {
    static constexpr std::array<const char*, 4> engines{"pe", "dve", "act", "pool"};
    double row_bytes = 0;
    std::array<double, 4> share{};
    // each dtype's share of the engines' busy time (by the dtype each instruction computes on)
    std::map<std::string, double> dtypes;
    std::string id;  // a calibrated point's id (empty for a run)

    static kernel_features of(const stats_tree& s);
    // The engine of the largest share (-1: no engine time).
    int busiest() const;
    // The dtype of the largest share ("": no engine time).
    std::string main_dtype() const;
};

// The fitted points of one generation, each with the statistics its features are computed from
// (calibration/coverage.json, written by `scripts/calibrate --coverage`).
// Contract: read() throws std::runtime_error naming the file when it is not such JSON; a file
// without the generation gives no points.
struct calibration_coverage {
    std::vector<kernel_features> points;
    static calibration_coverage read(const std::string& path, const std::string& generation);
};

// A kernel is like a calibrated point when both move data by DMA or neither does, their mean
// bytes per DMA row are within a factor `row_factor` of each other, and the engine and the
// dtype the kernel spends most of its engine time on each have at least `engine_share` of the
// point's. The sentence saying how a kernel is unlike every point ("" when it is like one, or
// there are no points).
std::string unlike_every_point(const kernel_features& k, const calibration_coverage& c,
                               double row_factor = 4, double engine_share = 0.1);

}  // namespace trn
