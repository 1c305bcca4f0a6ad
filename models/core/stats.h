#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace trn {

// The statistics tree: dotted paths ("engines.dve.busy_ns") with value, unit and description.
// Modules own their counters and add them here at dump time; derived figures are computed then.
class stats_tree {
  public:
    struct entry {
        std::string path;
        double value;
        std::string unit;
        std::string description;
    };

    void add(const std::string& path, double value, const std::string& unit,
             const std::string& description);
    void add_text(const std::string& path, const std::string& value,
                  const std::string& description);
    // Every entry and text of `other`, each under `prefix` ("cores.c0.").
    void add_all(const stats_tree& other, const std::string& prefix);
    bool has(const std::string& path) const { return m_index.count(path) != 0; }
    double get(const std::string& path) const;  // throws std::out_of_range
    // A text entry's value; "" when there is none.
    std::string text(const std::string& path) const;

    // Nested JSON object; whole numbers are written as integers.
    nlohmann::json to_json() const;
    // One aligned "path  value unit  # description" line per entry, for people.
    std::string to_text() const;
    const std::vector<entry>& entries() const { return m_entries; }

  private:
    std::vector<entry> m_entries;
    std::map<std::string, std::size_t> m_index;
    std::vector<std::pair<std::string, std::string>> m_texts;
};

}  // namespace trn
