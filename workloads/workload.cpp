#include "workloads/workload.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/units.h"

namespace trn {

workload_params::workload_params(std::string workload, std::vector<param_doc> docs,
                                 const std::map<std::string, std::string>& given)
    : m_workload(std::move(workload)), m_docs(std::move(docs)), m_given(given) {
    for (const auto& given_param : m_given) {
        const std::string& k = given_param.first;  // not a structured binding: lambdas capture it
        if (std::none_of(m_docs.begin(), m_docs.end(),
                         [&](const param_doc& d) { return d.name == k; })) {
            std::string valid;
            for (const auto& d : m_docs)
                valid += (valid.empty() ? "" : ", ") + d.name;
            throw user_error("workload '" + m_workload + "' has no parameter '" + k +
                             "' (valid: " + valid + ")");
        }
    }
}

const param_doc& workload_params::doc(const std::string& name) const {
    for (const auto& d : m_docs)
        if (d.name == name) return d;
    throw std::logic_error("workload " + m_workload + " reads undeclared parameter " + name);
}

std::string workload_params::text(const std::string& name,
                                  const std::vector<std::string>& allowed) const {
    const param_doc& d = doc(name);
    auto it = m_given.find(name);
    const std::string v = it == m_given.end() ? d.default_value : it->second;
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
        std::string list;
        for (const auto& a : allowed)
            list += (list.empty() ? "" : ", ") + a;
        throw user_error("workload parameter '" + name + "': '" + v + "' is not one of: " + list);
    }
    return v;
}

std::int64_t workload_params::integer(const std::string& name, std::int64_t min,
                                      std::int64_t max) const {
    const std::string v = text(name);
    const auto parsed = units::parse_whole<std::int64_t>(v);
    if (!parsed)
        throw user_error("workload parameter '" + name + "': '" + v + "' is not a whole number");
    const std::int64_t x = *parsed;
    if (x < min || x > max)
        throw user_error("workload parameter '" + name + "': " + v + " is out of range [" +
                         std::to_string(min) + ", " + std::to_string(max) + "]");
    return x;
}

std::map<std::string, std::string> parse_assignments(const std::vector<std::string>& items,
                                                     const char* option) {
    std::map<std::string, std::string> out;
    for (const auto& item : items) {
        auto eq = item.find('=');
        if (eq == std::string::npos || eq == 0)
            throw user_error(std::string(option) + " '" + item + "': expected KEY=VALUE");
        if (!out.emplace(item.substr(0, eq), item.substr(eq + 1)).second)
            throw user_error(std::string(option) + " '" + item.substr(0, eq) + "' given twice");
    }
    return out;
}

check_result compare_output(const std::vector<std::uint8_t>& actual, dtype type,
                            const std::vector<double>& expected, double rtol, double atol) {
    check_result r;
    const std::size_t size = dtype_size(type);
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const double a = load_element(&actual[i * size], type);
        const double e = expected[i];
        const double err = std::fabs(a - e);
        r.max_abs_error = std::max(r.max_abs_error, err);
        if (e != 0) r.max_rel_error = std::max(r.max_rel_error, err / std::fabs(e));
        if (!(err <= atol + rtol * std::fabs(e))) {
            if (r.mismatches == 0)
                r.detail = "first mismatch at element " + std::to_string(i) + ": got " +
                           std::to_string(a) + ", expected " + std::to_string(e);
            ++r.mismatches;
        }
    }
    r.passed = r.mismatches == 0;
    if (r.passed) r.detail = std::to_string(expected.size()) + " elements within tolerance";
    return r;
}

}  // namespace trn
