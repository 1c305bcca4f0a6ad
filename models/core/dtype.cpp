#include "core/dtype.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/minifloat.h"

namespace trn {
namespace {

// An integer type's value of v: truncated toward zero, saturated to [lo, hi], NaN as 0.
template <typename I>
I to_int(float v) {
    if (std::isnan(v)) return 0;
    const double t = std::trunc(static_cast<double>(v));
    if (t <= static_cast<double>(std::numeric_limits<I>::min()))
        return std::numeric_limits<I>::min();
    if (t >= static_cast<double>(std::numeric_limits<I>::max()))
        return std::numeric_limits<I>::max();
    return static_cast<I>(t);
}

template <typename I>
float load_int(const std::uint8_t* p) {
    I v;
    std::memcpy(&v, p, sizeof v);
    return static_cast<float>(v);
}

template <typename I>
void store_int(std::uint8_t* p, float v) {
    const I i = to_int<I>(v);
    std::memcpy(p, &i, sizeof i);
}

const minifloat::float_format* fp8_format(dtype t) {
    switch (t) {
        case dtype::fp8_e4m3:
            return &minifloat::float8_e4m3;
        case dtype::fp8_e4m3fn:
            return &minifloat::float8_e4m3fn;
        case dtype::fp8_e5m2:
            return &minifloat::float8_e5m2;
        default:
            return nullptr;
    }
}

// Each type's accepted spellings, the first its name.
struct dtype_names {
    dtype type;
    const char* names[3];
};
constexpr dtype_names k_names[] = {
    {dtype::float32, {"float32", "fp32", nullptr}},
    {dtype::bfloat16, {"bfloat16", "bf16", nullptr}},
    {dtype::float16, {"float16", "fp16", nullptr}},
    {dtype::fp8_e4m3, {"fp8", "float8_e4m3", "fp8_e4m3"}},
    {dtype::int32, {"int32", nullptr, nullptr}},
    {dtype::fp8_e4m3fn, {"float8_e4m3fn", "fp8_e4m3fn", nullptr}},
    {dtype::fp8_e5m2, {"float8_e5m2", "fp8_e5m2", nullptr}},
    {dtype::int8, {"int8", nullptr, nullptr}},
    {dtype::uint8, {"uint8", nullptr, nullptr}},
    {dtype::int16, {"int16", nullptr, nullptr}},
    {dtype::uint16, {"uint16", nullptr, nullptr}},
    {dtype::uint32, {"uint32", nullptr, nullptr}},
    {dtype::fp8_e4m3fn_x4, {"float8_e4m3fn_x4", "fp8_e4m3fn_x4", nullptr}},
    {dtype::fp8_e5m2_x4, {"float8_e5m2_x4", "fp8_e5m2_x4", nullptr}},
    {dtype::fp4_e2m1fn_x4, {"float4_e2m1fn_x4", "fp4_e2m1fn_x4", nullptr}},
    {dtype::fp8_e8m0, {"float8_e8m0fnu", "fp8_e8m0", nullptr}},
};

// A packed type's values: their format and width in bits.
const minifloat::float_format& packed_format(dtype t, unsigned& bits) {
    bits = t == dtype::fp4_e2m1fn_x4 ? 4 : 8;
    return t == dtype::fp8_e4m3fn_x4 ? minifloat::float8_e4m3fn
           : t == dtype::fp8_e5m2_x4 ? minifloat::float8_e5m2
                                     : minifloat::float4_e2m1;
}

// The MX saturating variant of a format: an overflow gives the largest finite value.
minifloat::float_format saturating(minifloat::float_format f) {
    f.saturate = true;
    return f;
}

}  // namespace

float packed_value(const std::uint8_t* p, dtype t, int i) {
    unsigned bits = 0;
    const minifloat::float_format& f = packed_format(t, bits);
    std::uint32_t word = 0;
    std::memcpy(&word, p, dtype_size(t));
    return static_cast<float>(minifloat::decode(f, (word >> (i * bits)) & ((1u << bits) - 1)));
}

void store_packed_value(std::uint8_t* p, dtype t, int i, float v) {
    unsigned bits = 0;
    const minifloat::float_format f = saturating(packed_format(t, bits));
    std::uint32_t word = 0;
    std::memcpy(&word, p, dtype_size(t));
    const std::uint32_t mask = ((1u << bits) - 1) << (i * bits);
    word = (word & ~mask) | ((minifloat::encode(f, v) << (i * bits)) & mask);
    std::memcpy(p, &word, dtype_size(t));
}

const char* dtype_name(dtype t) {
    for (const auto& n : k_names)
        if (n.type == t) return n.names[0];
    return "?";
}

dtype parse_dtype(const std::string& name) {
    std::string valid;
    for (const auto& n : k_names) {
        for (const char* spelling : n.names)
            if (spelling && name == spelling) return n.type;
        valid += (valid.empty() ? "" : ", ") + std::string(n.names[0]);
    }
    throw user_error("unknown dtype '" + name + "' (valid: " + valid + ")");
}

float load_element(const std::uint8_t* p, dtype t) {
    switch (t) {
        case dtype::float32: {
            float v;
            std::memcpy(&v, p, 4);
            return v;
        }
        case dtype::bfloat16: {
            std::uint16_t h;
            std::memcpy(&h, p, 2);
            return minifloat::bf16_to_float(h);
        }
        case dtype::float16: {
            std::uint16_t h;
            std::memcpy(&h, p, 2);
            return static_cast<float>(minifloat::decode(minifloat::float16, h));
        }
        case dtype::fp8_e4m3:
        case dtype::fp8_e4m3fn:
        case dtype::fp8_e5m2:
            return static_cast<float>(minifloat::decode(*fp8_format(t), *p));
        case dtype::int32:
            return load_int<std::int32_t>(p);
        case dtype::int8:
            return load_int<std::int8_t>(p);
        case dtype::uint8:
            return load_int<std::uint8_t>(p);
        case dtype::int16:
            return load_int<std::int16_t>(p);
        case dtype::uint16:
            return load_int<std::uint16_t>(p);
        case dtype::uint32:
            return load_int<std::uint32_t>(p);
        case dtype::fp8_e4m3fn_x4:
        case dtype::fp8_e5m2_x4:
        case dtype::fp4_e2m1fn_x4:
            return packed_value(p, t, 0);
        case dtype::fp8_e8m0:
            return *p == 0xFF ? std::numeric_limits<float>::quiet_NaN()
                              : std::ldexp(1.0f, int(*p) - 127);
    }
    return 0;
}

void store_element(std::uint8_t* p, dtype t, float v) {
    switch (t) {
        case dtype::float32:
            std::memcpy(p, &v, 4);
            return;
        case dtype::bfloat16: {
            const std::uint16_t h = minifloat::bf16_from_float(v);
            std::memcpy(p, &h, 2);
            return;
        }
        case dtype::float16: {
            const auto h = static_cast<std::uint16_t>(minifloat::encode(minifloat::float16, v));
            std::memcpy(p, &h, 2);
            return;
        }
        case dtype::fp8_e4m3:
        case dtype::fp8_e4m3fn:
        case dtype::fp8_e5m2:
            *p = static_cast<std::uint8_t>(minifloat::encode(*fp8_format(t), v));
            return;
        case dtype::int32:
            return store_int<std::int32_t>(p, v);
        case dtype::int8:
            return store_int<std::int8_t>(p, v);
        case dtype::uint8:
            return store_int<std::uint8_t>(p, v);
        case dtype::int16:
            return store_int<std::int16_t>(p, v);
        case dtype::uint16:
            return store_int<std::uint16_t>(p, v);
        case dtype::uint32:
            return store_int<std::uint32_t>(p, v);
        case dtype::fp8_e4m3fn_x4:
        case dtype::fp8_e5m2_x4:
        case dtype::fp4_e2m1fn_x4:
            for (int i = 0; i < 4; ++i)
                store_packed_value(p, t, i, v);
            return;
        case dtype::fp8_e8m0: {  // the nearest power of two (in log2), within 2^-127..2^127
            if (std::isnan(v) || v <= 0) {
                *p = std::isnan(v) ? 0xFF : 0;
                return;
            }
            const long e = std::lround(std::log2(static_cast<double>(v)));
            *p = static_cast<std::uint8_t>(std::clamp<long>(e + 127, 0, 254));
            return;
        }
    }
}

}  // namespace trn
