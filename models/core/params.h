#pragma once
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace trn {

enum class param_kind { integer, real, boolean, text, time, frequency, bandwidth, size };
const char* param_kind_unit(param_kind k);

// One configuration parameter, declared once by the module that reads it. The declaration is the
// single source of `sim --list-params`, docs/config.md and validation.
struct param_decl {
    param_decl(std::string key_, param_kind kind_, std::string default_, std::string description_,
               std::string source_, double min_ = -std::numeric_limits<double>::infinity(),
               double max_ = std::numeric_limits<double>::infinity(),
               std::vector<std::string> choices_ = {})
        : key(std::move(key_)),
          kind(kind_),
          default_value(std::move(default_)),
          description(std::move(description_)),
          source(std::move(source_)),
          min(min_),
          max(max_),
          choices(std::move(choices_)) {}

    std::string key;  // full path, e.g. "core.dma.engines"
    param_kind kind;
    std::string default_value;  // written as in YAML ("1.3us")
    std::string description;    // one line
    std::string source;         // hardware-facts.md section, or "calibrated: <points>"
    double min;                 // in base units
    double max;
    std::vector<std::string> choices;  // allowed values of a text parameter (empty: any)
    // A fitted parameter (source "calibrated: ..."): the physical range a fit may move it in,
    // in base units, and why that range (datasheet, documentation). fit_hi == 0: not fitted.
    double fit_lo = 0;
    double fit_hi = 0;
    std::string fit_why;

    bool fitted() const { return fit_hi > 0; }
    // Marks the declaration as fitted within [lo, hi] (base units), for `scripts/calibrate --fit`.
    param_decl&& calibrated(double lo, double hi, std::string why) && {
        fit_lo = lo;
        fit_hi = hi;
        fit_why = std::move(why);
        return std::move(*this);
    }
};

// The set of declared parameters.
class param_registry {
  public:
    void add(param_decl d);
    const param_decl* find(const std::string& key) const;
    const std::vector<param_decl>& all() const { return m_decls; }
    // Declared keys that start with `prefix`, for "did you mean" hints.
    std::vector<std::string> keys_under(const std::string& prefix) const;

  private:
    std::vector<param_decl> m_decls;
    std::map<std::string, std::size_t> m_index;
};

// Validated configuration values. Contract: every value given (YAML or --set) names a declared
// key and parses in its unit and range, or loading throws user_error naming the key and where
// it came from (file:line or --set). Getters return the given value or the declared default.
// check_all_read() reports given keys that no module read.
// A config file may start from another (`base: trn2`, or a path): the base's values first, then
// the file's own. A plain name is looked up beside the file, then in the config directory.
class config {
  public:
    explicit config(const param_registry& registry) : m_registry(&registry) {}

    // Where a `base: NAME` that is not beside the file is looked up (the project's configs/).
    void set_config_dir(std::string dir) { m_config_dir = std::move(dir); }
    void load_yaml_file(const std::string& path);
    void load_yaml_text(const std::string& text, const std::string& origin);
    // "core.hbm.bandwidth=600GB/s"
    // A KEY=VALUE override; `how` names where it came from in the origins and the run's
    // header ("--set", "configure(sets=)").
    void set(const std::string& assignment, const std::string& how = "--set");

    std::int64_t integer(const std::string& key) const;
    double real(const std::string& key) const;
    bool boolean(const std::string& key) const;
    std::string text(const std::string& key) const;
    double time_ns(const std::string& key) const;
    double frequency_ghz(const std::string& key) const;
    double bandwidth(const std::string& key) const;  // bytes per ns
    std::uint64_t size(const std::string& key) const;

    void check_all_read() const;
    // Effective value of every declared key (given or default), for the stats dump.
    std::map<std::string, std::string> effective() const;
    // Where each key's effective value came from: "FILE:LINE", "--set KEY=VALUE" or "default".
    std::string origin_of(const std::string& key) const;
    // The same without the machine's folders, for stats files that travel (goldens, sweeps on
    // other machines): a file of the config directory by its name ("trn2.yaml:8"), any other
    // file relative to the given file's folder ("fast.yaml:5", "../base/my.yaml:3").
    std::string portable_origin_of(const std::string& key) const;
    // The given file as portable_origin_of names it (its file name), or the text's origin.
    std::string portable_source_name() const;
    // Declared keys no file nor --set gave (they take their declared defaults).
    std::vector<std::string> missing_keys() const;
    std::string source_name() const { return m_source; }
    // The files loaded, the given file first, then its base, its base's base...
    const std::vector<std::string>& files() const { return m_files; }
    // The --set assignments applied, in order.
    const std::vector<std::string>& sets() const { return m_sets; }
    // How the overrides were given (set()'s `how`; "--set" when none).
    const std::string& set_how() const { return m_set_how; }

  private:
    struct given {
        std::string value;
        std::string origin;
    };
    const std::string& raw(const std::string& key, param_kind kind) const;
    void assign(const std::string& key, const std::string& value, const std::string& origin);
    void load_file(const std::string& path, std::vector<std::string>& chain);
    void load_node(const std::string& text, const std::string& origin, const std::string& path,
                   std::vector<std::string>& chain);
    void validate(const param_decl& d, const std::string& value, const std::string& origin) const;
    std::string portable_file(const std::string& file) const;

    const param_registry* m_registry;
    std::map<std::string, given> m_given;
    mutable std::set<std::string> m_read;
    std::string m_source;
    std::string m_config_dir;
    std::vector<std::string> m_files;
    std::vector<std::string> m_sets;
    std::string m_set_how = "--set";
};

// Parses a value of the given kind into base units (booleans 0/1); throws user_error.
double parse_param_value(param_kind kind, const std::string& value);

}  // namespace trn
