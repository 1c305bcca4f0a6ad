#pragma once
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>

// Contract: each parser accepts "<number><unit>" (optional space, case-sensitive unit) and
// returns the value in the model's base unit; it throws trn::user_error naming the text and the
// accepted units on anything else. Base units: ns, GHz (cycles per ns), bytes per ns (= GB/s),
// bytes.
namespace trn::units {

double parse_time_ns(const std::string& text);
double parse_frequency_ghz(const std::string& text);
double parse_bandwidth_bytes_per_ns(const std::string& text);
std::uint64_t parse_size_bytes(const std::string& text);

// A whole number in decimal: all of `text`, digits after an optional '-' (for a signed T), within
// T's range; nullopt for anything else (the callers name the text in their errors).
template <typename T>
std::optional<T> parse_whole(const std::string& text) {
    T v{};
    const char* end = text.data() + text.size();
    const auto [at, ec] = std::from_chars(text.data(), end, v);
    if (ec != std::errc() || at != end || text.empty()) return std::nullopt;
    return v;
}

// Formats a time in ns with the unit that keeps 3-4 significant digits ("1.30 us").
std::string format_time(double ns);

}  // namespace trn::units
