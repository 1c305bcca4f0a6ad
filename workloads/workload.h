#pragma once
// What a workload driver is: its parameters, the kernel it builds and how its output is checked.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/params.h"
#include "program/program.h"

namespace trn {

// A workload parameter: name, default (the first value of workloads.md) and a description.
struct param_doc {
    std::string name;
    std::string default_value;
    std::string description;
};

// The --param values given for one workload. Contract: unknown names are rejected (listing the
// valid ones), and each getter throws user_error naming the parameter on a bad value.
class workload_params {
  public:
    workload_params(std::string workload, std::vector<param_doc> docs,
                    const std::map<std::string, std::string>& given);
    std::string text(const std::string& name, const std::vector<std::string>& allowed = {}) const;
    std::int64_t integer(const std::string& name, std::int64_t min, std::int64_t max) const;
    bool given(const std::string& name) const { return m_given.count(name) != 0; }

  private:
    const param_doc& doc(const std::string& name) const;
    std::string m_workload;
    std::vector<param_doc> m_docs;
    std::map<std::string, std::string> m_given;
};

// How a functional run compared with the golden reference.
struct check_result {
    bool passed = false;
    double max_abs_error = 0;
    double max_rel_error = 0;
    std::uint64_t mismatches = 0;
    std::string detail;
};

using hbm_reader = std::function<std::vector<std::uint8_t>(std::uint64_t, std::uint64_t)>;

struct built_kernel {
    program prog;
    std::string description;
    double pe_flops = 0;  // Tensor-engine FLOPs, for MFU
    std::function<check_result(const hbm_reader&)> check;
    std::vector<std::string> warnings;  // e.g. races a kernel's own tile placement creates
};

// A workload driver: turns parameters into a program and knows its golden result.
class workload {
  public:
    virtual ~workload() = default;
    virtual const char* name() const = 0;
    virtual const char* description() const = 0;
    virtual std::vector<param_doc> params() const = 0;
    // The cases the given parameters stand for: one, or several (a fleet), each built and run in
    // turn by the command line.
    virtual std::vector<std::map<std::string, std::string>> expand(
        const std::map<std::string, std::string>& given) const {
        return {given};
    }
    virtual built_kernel build(const workload_params& p, const config& cfg,
                               const program_limits& limits) const = 0;
    // Whether build() may run while its program is simulated (program_stream): not when the
    // program is needed whole (a kernel that places its own tiles, checked for races).
    virtual bool may_stream(const workload_params&) const { return true; }
};

// Parses KEY=VALUE strings, rejecting repeats.
std::map<std::string, std::string> parse_assignments(const std::vector<std::string>& items,
                                                     const char* option);

// Compares an output region with expected values: |a - e| <= atol + rtol * |e| everywhere.
check_result compare_output(const std::vector<std::uint8_t>& actual, dtype type,
                            const std::vector<double>& expected, double rtol, double atol);

}  // namespace trn
