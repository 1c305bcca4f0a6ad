#pragma once
#include <cctype>
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

// A whole number in decimal, as std::stoll reads one: all of `text`, white space first allowed,
// then an optional sign ('+', or '-' for a signed T) and digits, within T's range; nullopt for
// anything else (the callers name the text in their errors).
template <typename T>
std::optional<T> parse_whole(const std::string& text) {
    std::size_t at = 0;
    while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at])))
        ++at;
    if (at + 1 < text.size() && text[at] == '+' &&
        std::isdigit(static_cast<unsigned char>(text[at + 1])))
        ++at;
    T v{};
    const char* end = text.data() + text.size();
    const auto [stop, ec] = std::from_chars(text.data() + at, end, v);
    if (ec != std::errc() || stop != end || at == text.size()) return std::nullopt;
    return v;
}

// Formats a time in ns with the unit that keeps 3-4 significant digits ("1.30 us").
std::string format_time(double ns);

}  // namespace trn::units
