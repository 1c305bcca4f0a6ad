#include "core/dtype.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace trn {
namespace {

std::uint32_t bits_of(float v) {
    std::uint32_t b;
    std::memcpy(&b, &v, 4);
    return b;
}
float float_of(std::uint32_t b) {
    float v;
    std::memcpy(&v, &b, 4);
    return v;
}

// Round-to-nearest-even truncation of a float to its top 16 bits (bfloat16).
std::uint16_t to_bf16(float v) {
    std::uint32_t b = bits_of(v);
    if (std::isnan(v)) return 0x7fc0;
    b += 0x7fff + ((b >> 16) & 1);
    return static_cast<std::uint16_t>(b >> 16);
}

std::uint16_t to_fp16(float v) {
    std::uint32_t b = bits_of(v);
    std::uint32_t sign = (b >> 16) & 0x8000;
    if (std::isnan(v)) return static_cast<std::uint16_t>(sign | 0x7e00);
    float a = std::fabs(v);
    if (a >= 65520.0f) return static_cast<std::uint16_t>(sign | 0x7c00);
    if (a < 6.103515625e-05f) {  // subnormal: round to a multiple of 2^-24
        auto m = static_cast<std::uint32_t>(std::nearbyint(a * 16777216.0f));
        return static_cast<std::uint16_t>(sign | m);
    }
    std::uint32_t ab = b & 0x7fffffff;
    ab += 0xfff + ((ab >> 13) & 1);
    std::uint32_t exp = (ab >> 23) - 112;
    return static_cast<std::uint16_t>(sign | (exp << 10) | ((ab >> 13) & 0x3ff));
}

float from_fp16(std::uint16_t h) {
    std::uint32_t sign = (h & 0x8000u) << 16;
    std::uint32_t exp = (h >> 10) & 0x1f;
    std::uint32_t man = h & 0x3ff;
    if (exp == 0) {
        float v = std::ldexp(static_cast<float>(man), -24);
        return sign ? -v : v;
    }
    if (exp == 31) return float_of(sign | 0x7f800000u | (man << 13));
    return float_of(sign | ((exp + 112) << 23) | (man << 13));
}

// fp8 e4m3 (no infinities, max 448): round to nearest representable value.
std::uint8_t to_fp8(float v) {
    std::uint8_t sign = std::signbit(v) ? 0x80 : 0;
    float a = std::fabs(v);
    if (std::isnan(v)) return 0x7f;
    if (a > 448.0f) a = 448.0f;
    if (a <= std::ldexp(1.0f, -10)) return sign;  // at most half the smallest subnormal
    int e;
    std::frexp(a, &e);  // a = m * 2^e, m in [0.5,1)
    int exp = e - 1;    // a = 1.x * 2^exp
    if (exp < -6) exp = -6;
    float q = std::ldexp(1.0f, exp - 3);
    float r = std::nearbyint(a / q) * q;
    std::frexp(r, &e);
    exp = std::max(e - 1, -6);
    int man = static_cast<int>(std::nearbyint(r / std::ldexp(1.0f, exp - 3)));
    if (exp == -6 && man < 8) return static_cast<std::uint8_t>(sign | man);
    return static_cast<std::uint8_t>(sign | ((exp + 7) << 3) | (man - 8));
}

float from_fp8(std::uint8_t b) {
    if ((b & 0x7f) == 0x7f) return std::numeric_limits<float>::quiet_NaN();  // S.1111.111
    int exp = (b >> 3) & 0xf, man = b & 7;
    float v =
        exp == 0 ? std::ldexp(static_cast<float>(man), -9) : std::ldexp(1.0f + man / 8.0f, exp - 7);
    return (b & 0x80) ? -v : v;
}

}  // namespace

const char* dtype_name(dtype t) {
    switch (t) {
        case dtype::float32:
            return "float32";
        case dtype::bfloat16:
            return "bfloat16";
        case dtype::float16:
            return "float16";
        case dtype::fp8_e4m3:
            return "fp8";
        case dtype::int32:
            return "int32";
    }
    return "?";
}

dtype parse_dtype(const std::string& name) {
    if (name == "float32" || name == "fp32") return dtype::float32;
    if (name == "bfloat16" || name == "bf16") return dtype::bfloat16;
    if (name == "float16" || name == "fp16") return dtype::float16;
    if (name == "fp8" || name == "float8_e4m3") return dtype::fp8_e4m3;
    if (name == "int32") return dtype::int32;
    throw user_error("unknown dtype '" + name +
                     "' (valid: float32, bfloat16, float16, fp8, int32)");
}

float load_element(const std::uint8_t* p, dtype t) {
    switch (t) {
        case dtype::float32: {
            float v;
            std::memcpy(&v, p, 4);
            return v;
        }
        case dtype::int32: {
            std::int32_t v;
            std::memcpy(&v, p, 4);
            return static_cast<float>(v);
        }
        case dtype::bfloat16: {
            std::uint16_t h;
            std::memcpy(&h, p, 2);
            return float_of(static_cast<std::uint32_t>(h) << 16);
        }
        case dtype::float16: {
            std::uint16_t h;
            std::memcpy(&h, p, 2);
            return from_fp16(h);
        }
        case dtype::fp8_e4m3:
            return from_fp8(*p);
    }
    return 0;
}

void store_element(std::uint8_t* p, dtype t, float v) {
    switch (t) {
        case dtype::float32:
            std::memcpy(p, &v, 4);
            return;
        case dtype::int32: {
            auto i = static_cast<std::int32_t>(v);
            std::memcpy(p, &i, 4);
            return;
        }
        case dtype::bfloat16: {
            std::uint16_t h = to_bf16(v);
            std::memcpy(p, &h, 2);
            return;
        }
        case dtype::float16: {
            std::uint16_t h = to_fp16(v);
            std::memcpy(p, &h, 2);
            return;
        }
        case dtype::fp8_e4m3:
            *p = to_fp8(v);
            return;
    }
}

}  // namespace trn
