#include "core/dtype.h"

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
};

}  // namespace

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
    }
}

}  // namespace trn
