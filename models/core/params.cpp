#include "core/params.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/units.h"

namespace trn {

const char* param_kind_unit(param_kind k) {
    switch (k) {
        case param_kind::integer:
            return "count";
        case param_kind::real:
            return "number";
        case param_kind::boolean:
            return "bool";
        case param_kind::text:
            return "text";
        case param_kind::time:
            return "time";
        case param_kind::frequency:
            return "frequency";
        case param_kind::bandwidth:
            return "bandwidth";
        case param_kind::size:
            return "size";
    }
    return "?";
}

void param_registry::add(param_decl d) {
    if (m_index.count(d.key)) throw std::logic_error("parameter declared twice: " + d.key);
    m_index[d.key] = m_decls.size();
    m_decls.push_back(std::move(d));
}

const param_decl* param_registry::find(const std::string& key) const {
    auto it = m_index.find(key);
    return it == m_index.end() ? nullptr : &m_decls[it->second];
}

std::vector<std::string> param_registry::keys_under(const std::string& prefix) const {
    std::vector<std::string> out;
    for (const auto& d : m_decls)
        if (d.key.compare(0, prefix.size(), prefix) == 0) out.push_back(d.key);
    return out;
}

double parse_param_value(param_kind kind, const std::string& value) {
    switch (kind) {
        case param_kind::integer: {
            const auto v = units::parse_whole<std::int64_t>(value);
            if (!v) throw user_error("'" + value + "' is not a whole number");
            return static_cast<double>(*v);
        }
        case param_kind::real: {
            std::size_t pos = 0;
            double v = 0;
            try {
                v = std::stod(value, &pos);
            } catch (const std::exception&) {
                pos = 0;
            }
            if (pos == 0 || pos != value.size() || !std::isfinite(v))
                throw user_error("'" + value + "' is not a number");
            return v;
        }
        case param_kind::boolean:
            if (value == "true") return 1;
            if (value == "false") return 0;
            throw user_error("'" + value + "' is not a boolean (true or false)");
        case param_kind::text:
            return 0;
        case param_kind::time:
            return units::parse_time_ns(value);
        case param_kind::frequency:
            return units::parse_frequency_ghz(value);
        case param_kind::bandwidth:
            return units::parse_bandwidth_bytes_per_ns(value);
        case param_kind::size:
            return static_cast<double>(units::parse_size_bytes(value));
    }
    return 0;
}

namespace {

std::string join(const std::vector<std::string>& v, const char* sep) {
    std::string out;
    for (const auto& s : v)
        out += (out.empty() ? "" : sep) + s;
    return out;
}

std::string format_bound(const param_decl& d, double v) {
    std::ostringstream os;
    os << v;
    switch (d.kind) {
        case param_kind::time:
            os << "ns";
            break;
        case param_kind::frequency:
            os << "GHz";
            break;
        case param_kind::bandwidth:
            os << "B/ns";
            break;
        case param_kind::size:
            os << "B";
            break;
        default:
            break;
    }
    return os.str();
}

}  // namespace

void config::validate(const param_decl& d, const std::string& value,
                      const std::string& origin) const {
    const std::string where = "config key '" + d.key + "' (" + origin + "): ";
    double v = 0;
    try {
        v = parse_param_value(d.kind, value);
    } catch (const user_error& e) {
        throw user_error(where + e.what());
    }
    if (d.kind == param_kind::text) {
        if (!d.choices.empty() &&
            std::find(d.choices.begin(), d.choices.end(), value) == d.choices.end())
            throw user_error(where + "'" + value + "' is not one of: " + join(d.choices, ", "));
        return;
    }
    if (v < d.min || v > d.max)
        throw user_error(where + "value " + value + " is out of range [" + format_bound(d, d.min) +
                         ", " + format_bound(d, d.max) + "]");
}

void config::assign(const std::string& key, const std::string& value, const std::string& origin) {
    const param_decl* d = m_registry->find(key);
    if (!d) {
        std::string msg = "unknown config key '" + key + "' (" + origin + ")";
        auto dot = key.rfind('.');
        auto near = m_registry->keys_under(dot == std::string::npos ? "" : key.substr(0, dot + 1));
        if (!near.empty() && near.size() <= 30) msg += "; keys at that level: " + join(near, ", ");
        msg += "; `sim --list-params` lists every key";
        throw user_error(msg);
    }
    validate(*d, value, origin);
    m_given[key] = {value, origin};
}

namespace {

// Limits of a config's shape. Keys mirror the module tree (three or four levels) and a config
// sets a few hundred values at most: deeper or larger maps come from YAML aliases that refer to
// themselves or expand exponentially, and are rejected before they exhaust the stack or memory.
constexpr int max_config_depth = 16;
constexpr std::size_t max_config_values = 10000;

void flatten(const YAML::Node& node, const std::string& prefix, const std::string& file,
             std::vector<std::tuple<std::string, std::string, std::string>>& out, int depth) {
    for (auto it = node.begin(); it != node.end(); ++it) {
        const std::string origin = file + ":" + std::to_string(it->first.Mark().line + 1);
        if (!it->first.IsScalar() || it->first.Scalar().empty())
            throw user_error(origin + ": a config key must be a plain name" +
                             (prefix.empty() ? std::string() : " (under '" + prefix + "')"));
        const std::string key = it->first.Scalar();
        const std::string path = prefix.empty() ? key : prefix + "." + key;
        const YAML::Node value = it->second;  // a copy: `it->` points into a temporary
        if (value.IsMap()) {
            if (depth + 1 >= max_config_depth)
                throw user_error(origin + ": config keys nest deeper than " +
                                 std::to_string(max_config_depth) + " levels under '" + prefix +
                                 "' (a YAML alias that contains itself?)");
            flatten(value, path, file, out, depth + 1);
        } else if (value.IsScalar()) {
            if (out.size() >= max_config_values)
                throw user_error(origin + ": the config expands to more than " +
                                 std::to_string(max_config_values) +
                                 " values (YAML aliases that expand exponentially?)");
            out.emplace_back(path, value.Scalar(), origin);
        } else {
            throw user_error("config key '" + path + "' (" + origin +
                             "): expected a single value or a map of keys, got " +
                             (value.IsSequence() ? "a list" : "nothing"));
        }
    }
}

}  // namespace

namespace {

// A config nests bases this deep at most (deeper is a cycle or a mistake).
constexpr std::size_t max_base_depth = 8;

}  // namespace

void config::load_yaml_text(const std::string& text, const std::string& origin) {
    std::vector<std::string> chain;
    m_files.clear();
    load_node(text, origin, "", chain);
    m_source = origin;
}

// Loads one config text; `path` is its file (empty for a text), `chain` the files that include
// it (to find cycles). A `base:` is loaded first, so the text's own values win.
void config::load_node(const std::string& text, const std::string& origin, const std::string& path,
                       std::vector<std::string>& chain) {
    YAML::Node root;
    try {
        root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
        throw user_error(origin + ":" + std::to_string(e.mark.line + 1) + ":" +
                         std::to_string(e.mark.column + 1) + ": malformed YAML: " + e.msg);
    }
    if (!root.IsMap())
        throw user_error(origin + ": a config must be a YAML map with a top-level 'core' key");
    if (const YAML::Node base = root["base"]) {
        const std::string where = origin + ":" + std::to_string(base.Mark().line + 1);
        if (!base.IsScalar() || base.Scalar().empty())
            throw user_error(where + ": 'base' must name a config (trn1, trn2, or a YAML path)");
        if (path.empty()) throw user_error(where + ": 'base' is only allowed in a config file");
        namespace fs = std::filesystem;
        const std::string name = base.Scalar();
        const fs::path dir = fs::path(path).parent_path();
        std::vector<fs::path> candidates;
        if (fs::path(name).is_absolute()) {
            candidates = {name};
        } else {
            candidates = {dir / name, dir / (name + ".yaml")};
            if (name.find('/') == std::string::npos && !m_config_dir.empty())
                candidates.insert(candidates.end(), {fs::path(m_config_dir) / name,
                                                     fs::path(m_config_dir) / (name + ".yaml")});
        }
        std::string found;
        for (const auto& c : candidates)
            if (fs::is_regular_file(c)) {
                found = c.string();
                break;
            }
        if (found.empty()) {
            std::string tried;
            for (const auto& c : candidates)
                tried += (tried.empty() ? "" : ", ") + c.string();
            throw user_error(where + ": base config '" + name + "' not found (tried " + tried +
                             ")");
        }
        const std::string canon = fs::weakly_canonical(found).string();
        if (std::find(chain.begin(), chain.end(), canon) != chain.end())
            throw user_error(where + ": base config '" + name + "' includes itself (" + found +
                             ")");
        if (chain.size() >= max_base_depth)
            throw user_error(where + ": bases nest deeper than " + std::to_string(max_base_depth) +
                             " configs");
        load_file(found, chain);
    }
    std::vector<std::tuple<std::string, std::string, std::string>> flat;
    // The file's own keys, with the lines they are on in the file.
    for (auto it = root.begin(); it != root.end(); ++it) {
        if (it->first.IsScalar() && it->first.Scalar() == "base") continue;
        YAML::Node one(YAML::NodeType::Map);
        one.force_insert(it->first, it->second);
        flatten(one, "", origin, flat, 0);
    }
    for (const auto& [key, value, where] : flat)
        assign(key, value, where);
}

void config::load_file(const std::string& path, std::vector<std::string>& chain) {
    // A config is a few kilobytes; reading stops past this bound (a device such as /dev/zero
    // would otherwise be read forever).
    constexpr std::size_t max_bytes = 1 << 20;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw user_error("cannot read config file '" + path + "'");
    std::string text(max_bytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    if (in.bad()) throw user_error("cannot read config file '" + path + "'");
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_bytes)
        throw user_error("config file '" + path + "' is larger than " + std::to_string(max_bytes) +
                         " bytes: not a trnsim config");
    if (text.find('\0') != std::string::npos)
        throw user_error("config file '" + path + "' contains NUL bytes: not a YAML text");
    chain.push_back(std::filesystem::weakly_canonical(path).string());
    m_files.push_back(path);  // before its base: the given file first, then its bases
    load_node(text, path, path, chain);
    chain.pop_back();
}

void config::load_yaml_file(const std::string& path) {
    std::vector<std::string> chain;
    m_files.clear();
    load_file(path, chain);
    m_source = path;
}

void config::set(const std::string& assignment, const std::string& how) {
    auto eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0)
        throw user_error(how + " '" + assignment + "': expected KEY.PATH=VALUE");
    assign(assignment.substr(0, eq), assignment.substr(eq + 1), how + " " + assignment);
    m_sets.push_back(assignment);
    m_set_how = how;
}

const std::string& config::raw(const std::string& key, param_kind kind) const {
    const param_decl* d = m_registry->find(key);
    if (!d) throw std::logic_error("model reads undeclared parameter " + key);
    if (d->kind != kind) throw std::logic_error("parameter read with the wrong kind: " + key);
    m_read.insert(key);
    auto it = m_given.find(key);
    return it == m_given.end() ? d->default_value : it->second.value;
}

std::int64_t config::integer(const std::string& key) const {
    return static_cast<std::int64_t>(
        parse_param_value(param_kind::integer, raw(key, param_kind::integer)));
}
double config::real(const std::string& key) const {
    return parse_param_value(param_kind::real, raw(key, param_kind::real));
}
bool config::boolean(const std::string& key) const {
    return parse_param_value(param_kind::boolean, raw(key, param_kind::boolean)) != 0;
}
std::string config::text(const std::string& key) const {
    return raw(key, param_kind::text);
}
double config::time_ns(const std::string& key) const {
    return parse_param_value(param_kind::time, raw(key, param_kind::time));
}
double config::frequency_ghz(const std::string& key) const {
    return parse_param_value(param_kind::frequency, raw(key, param_kind::frequency));
}
double config::bandwidth(const std::string& key) const {
    return parse_param_value(param_kind::bandwidth, raw(key, param_kind::bandwidth));
}
std::uint64_t config::size(const std::string& key) const {
    return static_cast<std::uint64_t>(
        parse_param_value(param_kind::size, raw(key, param_kind::size)));
}

void config::check_all_read() const {
    for (const auto& [key, g] : m_given)
        if (!m_read.count(key))
            throw user_error("config key '" + key + "' (" + g.origin +
                             ") is declared but not used by this platform; remove it");
}

std::string config::origin_of(const std::string& key) const {
    auto it = m_given.find(key);
    return it == m_given.end() ? "default" : it->second.origin;
}

std::string config::portable_file(const std::string& file) const {
    namespace fs = std::filesystem;
    const fs::path canon = fs::weakly_canonical(file);
    if (!m_config_dir.empty() && canon.parent_path() == fs::weakly_canonical(m_config_dir))
        return canon.filename().string();
    const fs::path rel =
        canon.lexically_relative(fs::weakly_canonical(m_files.front()).parent_path());
    return rel.empty() ? canon.filename().string() : rel.generic_string();
}

std::string config::portable_origin_of(const std::string& key) const {
    const std::string origin = origin_of(key);
    for (const auto& file : m_files) {
        // "FILE:LINE", FILE as it was loaded (flatten's form)
        const std::string line = origin.substr(std::min(origin.size(), file.size() + 1));
        if (origin.size() > file.size() + 1 && origin.compare(0, file.size(), file) == 0 &&
            origin[file.size()] == ':' && line.find_first_not_of("0123456789") == std::string::npos)
            return portable_file(file) + ":" + line;
    }
    return origin;
}

std::string config::portable_source_name() const {
    return m_files.empty() ? m_source : portable_file(m_files.front());
}

std::vector<std::string> config::missing_keys() const {
    std::vector<std::string> out;
    for (const auto& d : m_registry->all())
        if (!m_given.count(d.key)) out.push_back(d.key);
    return out;
}

std::map<std::string, std::string> config::effective() const {
    std::map<std::string, std::string> out;
    for (const auto& d : m_registry->all()) {
        auto it = m_given.find(d.key);
        out[d.key] = it == m_given.end() ? d.default_value : it->second.value;
    }
    return out;
}

}  // namespace trn
