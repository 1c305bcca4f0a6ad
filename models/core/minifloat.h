#pragma once
// Bit-exact conversions between float/double and the narrow floating-point formats (bfloat16,
// float16, the 8-bit floats), shared by the model's functional mode (core/dtype.cpp) and the
// NKI frontend's numpy dtypes (workloads/nki/numpy_dtypes.cpp), so both round alike.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace trn::minifloat {

// A binary floating-point format of at most 16 bits: exponent and mantissa widths, bias, and
// how it spends its top exponent. `ieee`: infinities and NaNs as IEEE 754; `fn`: no
// infinities, one NaN per sign (all exponent and mantissa bits set), the rest finite. Casts
// from wider types round to nearest even; what overflows becomes infinity where the format has
// one, else NaN (as ml_dtypes does), unless `saturate`.
struct float_format {
    int exp_bits, man_bits, bias;
    bool ieee;  // else "fn"
    bool saturate;
    bool has_nan = true;  // an "fn" format without NaN (OCP FP4 E2M1): every encoding finite
};

inline double decode(const float_format& f, std::uint32_t bits) {
    const int total = 1 + f.exp_bits + f.man_bits;
    const bool negative = (bits >> (total - 1)) & 1;
    const std::uint32_t exp = (bits >> f.man_bits) & ((1u << f.exp_bits) - 1);
    const std::uint32_t man = bits & ((1u << f.man_bits) - 1);
    const std::uint32_t top = (1u << f.exp_bits) - 1;
    double v;
    if (f.ieee && exp == top) {
        v = man ? std::numeric_limits<double>::quiet_NaN()
                : std::numeric_limits<double>::infinity();
    } else if (!f.ieee && f.has_nan && exp == top && man == (1u << f.man_bits) - 1) {
        v = std::numeric_limits<double>::quiet_NaN();
    } else if (exp == 0) {
        v = std::ldexp(double(man), 1 - f.bias - f.man_bits);
    } else {
        v = std::ldexp(double(man + (1u << f.man_bits)), int(exp) - f.bias - f.man_bits);
    }
    return negative ? -v : v;
}

// The largest finite encoding's exponent and mantissa fields.
inline void max_fields(const float_format& f, std::uint32_t& exp, std::uint32_t& man) {
    const std::uint32_t top = (1u << f.exp_bits) - 1;
    if (f.ieee) {
        exp = top - 1;
        man = (1u << f.man_bits) - 1;
    } else {
        exp = top;
        man = (1u << f.man_bits) - (f.has_nan ? 2 : 1);
    }
}

inline std::uint32_t encode(const float_format& f, double x) {
    const int total = 1 + f.exp_bits + f.man_bits;
    const std::uint32_t sign = std::signbit(x) ? 1u << (total - 1) : 0;
    const std::uint32_t top = (1u << f.exp_bits) - 1;
    const std::uint32_t nan = f.ieee ? (top << f.man_bits) | (1u << (f.man_bits - 1))
                                     : (top << f.man_bits) | ((1u << f.man_bits) - 1);
    std::uint32_t max_exp, max_man;
    max_fields(f, max_exp, max_man);
    const std::uint32_t max = (max_exp << f.man_bits) | max_man;
    if (std::isnan(x)) return sign | nan;
    const double a = std::fabs(x);
    auto overflow = [&] {
        if (f.saturate) return sign | max;
        return sign | (f.ieee ? top << f.man_bits : nan);
    };
    if (std::isinf(a)) return f.saturate ? sign | max : overflow();
    if (a == 0) return sign;
    int e;
    const double m = std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1)
    int exp = e - 1 + f.bias;
    std::uint32_t man;
    if (exp >= 1) {
        double q = std::nearbyint(std::ldexp(m, f.man_bits + 1));  // in [2^M, 2^(M+1)]
        if (q == std::ldexp(1.0, f.man_bits + 1)) {
            q = std::ldexp(1.0, f.man_bits);
            ++exp;
        }
        man = std::uint32_t(q) - (1u << f.man_bits);
    } else {
        const double q = std::nearbyint(std::ldexp(a, f.man_bits - 1 + f.bias));
        if (q >= std::ldexp(1.0, f.man_bits)) {
            exp = 1;
            man = 0;
        } else {
            exp = 0;
            man = std::uint32_t(q);
        }
    }
    if (exp > int(max_exp) || (exp == int(max_exp) && man > max_man)) return overflow();
    return sign | (std::uint32_t(exp) << f.man_bits) | man;
}

// bfloat16 from float32 as the engines round it: the top 16 bits, to nearest even.
inline std::uint16_t bf16_from_float(float x) {
    if (std::isnan(x)) return std::signbit(x) ? 0xFFC0 : 0x7FC0;
    std::uint32_t bits;
    std::memcpy(&bits, &x, 4);
    bits += 0x7FFF + ((bits >> 16) & 1);
    return std::uint16_t(bits >> 16);
}

inline float bf16_to_float(std::uint16_t b) {
    const std::uint32_t bits = std::uint32_t(b) << 16;
    float x;
    std::memcpy(&x, &bits, 4);
    return x;
}

// The formats by name (docs/nki.md, "Data types").
constexpr float_format float16 = {5, 10, 15, true, false};
constexpr float_format float8_e4m3 = {4, 3, 7, true, false};         // IEEE-like, max 240
constexpr float_format float8_e4m3fn = {4, 3, 7, false, false};      // no inf, max 448
constexpr float_format float8_e5m2 = {5, 2, 15, true, false};        // IEEE-like, max 57344
constexpr float_format float4_e2m1 = {2, 1, 1, false, true, false};  // OCP FP4: max 6, no NaN

}  // namespace trn::minifloat
