#include "core/units.h"

#include <cmath>
#include <cstdio>
#include <map>

#include "core/error.h"

namespace trn::units {
namespace {

// Splits "1.3us" into 1.3 and "us"; throws if there is no leading number.
std::pair<double, std::string> split(const std::string& text, const char* what,
                                     const char* accepted) {
    std::size_t pos = 0;
    double value = 0;
    try {
        value = std::stod(text, &pos);
    } catch (const std::exception&) {
        throw user_error("'" + text + "' is not a " + what +
                         " (expected a number and a unit: " + accepted + ")");
    }
    if (!std::isfinite(value))
        throw user_error("'" + text + "' is not a finite " + std::string(what));
    std::string unit = text.substr(pos);
    while (!unit.empty() && unit.front() == ' ')
        unit.erase(unit.begin());
    return {value, unit};
}

double scaled(const std::string& text, const char* what,
              const std::map<std::string, double>& factors, const char* accepted) {
    auto [value, unit] = split(text, what, accepted);
    auto it = factors.find(unit);
    if (it == factors.end())
        throw user_error("'" + text + "': unknown " + what + " unit '" + unit +
                         "' (accepted: " + accepted + ")");
    return value * it->second;
}

}  // namespace

double parse_time_ns(const std::string& text) {
    static const std::map<std::string, double> f{
        {"ps", 1e-3}, {"ns", 1.0}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
    return scaled(text, "time", f, "ps, ns, us, ms, s");
}

double parse_frequency_ghz(const std::string& text) {
    static const std::map<std::string, double> f{
        {"Hz", 1e-9}, {"kHz", 1e-6}, {"MHz", 1e-3}, {"GHz", 1.0}};
    return scaled(text, "frequency", f, "Hz, kHz, MHz, GHz");
}

double parse_bandwidth_bytes_per_ns(const std::string& text) {
    static const std::map<std::string, double> f{{"B/ns", 1.0},
                                                 {"MB/s", 1e-3},
                                                 {"GB/s", 1.0},
                                                 {"TB/s", 1e3},
                                                 {"MiB/s", 1048576e-9},
                                                 {"GiB/s", 1073741824e-9},
                                                 {"TiB/s", 1099511627776e-9}};
    return scaled(text, "bandwidth", f, "B/ns, MB/s, GB/s, TB/s, MiB/s, GiB/s, TiB/s");
}

std::uint64_t parse_size_bytes(const std::string& text) {
    static const std::map<std::string, double> f{
        {"B", 1.0},  {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
        {"kB", 1e3}, {"KB", 1e3},     {"MB", 1e6},        {"GB", 1e9}};
    double bytes = scaled(text, "size", f, "B, KiB, MiB, GiB, kB, MB, GB");
    if (bytes < 0 || bytes != std::floor(bytes))
        throw user_error("'" + text + "' is not a whole, non-negative number of bytes");
    if (bytes >= 18446744073709551616.0)  // 2^64: not representable (the cast would be undefined)
        throw user_error("'" + text + "' is too large a size (at most 2^64 - 1 bytes)");
    return static_cast<std::uint64_t>(bytes);
}

std::string format_time(double ns) {
    char buf[64];
    if (ns >= 1e6)
        std::snprintf(buf, sizeof buf, "%.3f ms", ns / 1e6);
    else if (ns >= 1e3)
        std::snprintf(buf, sizeof buf, "%.3f us", ns / 1e3);
    else
        std::snprintf(buf, sizeof buf, "%.1f ns", ns);
    return buf;
}

}  // namespace trn::units
