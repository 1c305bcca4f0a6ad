#include "core/stats.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace trn {

void stats_tree::add(const std::string& path, double value, const std::string& unit,
                     const std::string& description) {
    if (m_index.count(path)) throw std::logic_error("statistic added twice: " + path);
    m_index[path] = m_entries.size();
    m_entries.push_back({path, value, unit, description});
}

void stats_tree::add_text(const std::string& path, const std::string& value,
                          const std::string& /*description*/) {
    m_texts.emplace_back(path, value);
}

void stats_tree::add_all(const stats_tree& other, const std::string& prefix) {
    for (const auto& e : other.m_entries)
        add(prefix + e.path, e.value, e.unit, e.description);
    for (const auto& [path, value] : other.m_texts)
        m_texts.emplace_back(prefix + path, value);
}

std::string stats_tree::text(const std::string& path) const {
    for (const auto& [p, v] : m_texts)
        if (p == path) return v;
    return "";
}

double stats_tree::get(const std::string& path) const {
    auto it = m_index.find(path);
    if (it == m_index.end()) throw std::out_of_range("no statistic " + path);
    return m_entries[it->second].value;
}

namespace {

nlohmann::json& node_at(nlohmann::json& root, const std::string& path, std::string& leaf) {
    nlohmann::json* node = &root;
    std::size_t start = 0;
    for (std::size_t dot; (dot = path.find('.', start)) != std::string::npos; start = dot + 1) {
        node = &(*node)[path.substr(start, dot - start)];
    }
    leaf = path.substr(start);
    return *node;
}

}  // namespace

nlohmann::json stats_tree::to_json() const {
    nlohmann::json root = nlohmann::json::object();
    for (const auto& [path, value] : m_texts) {
        std::string leaf;
        node_at(root, path, leaf)[leaf] = value;
    }
    for (const auto& e : m_entries) {
        std::string leaf;
        nlohmann::json& node = node_at(root, e.path, leaf);
        if (std::isfinite(e.value) && e.value == std::floor(e.value) && std::fabs(e.value) < 9e15)
            node[leaf] = static_cast<long long>(e.value);
        else if (std::isfinite(e.value))
            node[leaf] = e.value;
        else
            node[leaf] = nullptr;
    }
    return root;
}

std::string stats_tree::to_text() const {
    std::size_t width = 0;
    for (const auto& e : m_entries)
        width = std::max(width, e.path.size());
    std::string out;
    char buf[512];
    for (const auto& e : m_entries) {
        std::snprintf(buf, sizeof buf, "%-*s %16.6g %-6s # %s\n", static_cast<int>(width),
                      e.path.c_str(), e.value, e.unit.c_str(), e.description.c_str());
        out += buf;
    }
    return out;
}

}  // namespace trn
