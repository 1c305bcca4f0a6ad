#pragma once
#include <cstdint>
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

// Formats a time in ns with the unit that keeps 3-4 significant digits ("1.30 us").
std::string format_time(double ns);

}  // namespace trn::units
