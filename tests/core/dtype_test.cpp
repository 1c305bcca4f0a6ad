// trn::dtype: sizes, names, and the round-to-nearest-even conversions functional mode uses.
#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "support/expect_error.h"

namespace {

using trn::dtype;
using trn::load_element;
using trn::store_element;
using trn::testing::contains;
using trn::testing::user_error_of;

std::uint16_t store16(dtype t, float v) {
    std::uint8_t b[2];
    store_element(b, t, v);
    std::uint16_t h;
    std::memcpy(&h, b, 2);
    return h;
}

float load16(dtype t, std::uint16_t h) {
    std::uint8_t b[2];
    std::memcpy(b, &h, 2);
    return load_element(b, t);
}

std::uint8_t store8(float v, dtype t = dtype::fp8_e4m3) {
    std::uint8_t b = 0;
    store_element(&b, t, v);
    return b;
}

float load8(std::uint8_t b, dtype t = dtype::fp8_e4m3) {
    return load_element(&b, t);
}

float from_bits(std::uint32_t b) {
    float v;
    std::memcpy(&v, &b, 4);
    return v;
}

TEST(Dtype, SizesNamesAndParsing) {
    EXPECT_EQ(trn::dtype_size(dtype::float32), 4u);
    EXPECT_EQ(trn::dtype_size(dtype::int32), 4u);
    EXPECT_EQ(trn::dtype_size(dtype::bfloat16), 2u);
    EXPECT_EQ(trn::dtype_size(dtype::float16), 2u);
    EXPECT_EQ(trn::dtype_size(dtype::fp8_e4m3), 1u);
    EXPECT_EQ(trn::dtype_size(dtype::fp8_e5m2), 1u);
    EXPECT_EQ(trn::dtype_size(dtype::int8), 1u);
    EXPECT_EQ(trn::dtype_size(dtype::uint16), 2u);
    EXPECT_EQ(trn::dtype_size(dtype::uint32), 4u);
    for (dtype t : {dtype::float32, dtype::bfloat16, dtype::float16, dtype::fp8_e4m3, dtype::int32,
                    dtype::fp8_e4m3fn, dtype::fp8_e5m2, dtype::int8, dtype::uint8, dtype::int16,
                    dtype::uint16, dtype::uint32})
        EXPECT_EQ(trn::parse_dtype(trn::dtype_name(t)), t) << trn::dtype_name(t);
    EXPECT_EQ(trn::parse_dtype("bf16"), dtype::bfloat16);
    EXPECT_EQ(trn::parse_dtype("fp16"), dtype::float16);
    EXPECT_EQ(trn::parse_dtype("fp32"), dtype::float32);
    EXPECT_EQ(trn::parse_dtype("float8_e4m3"), dtype::fp8_e4m3);
    EXPECT_TRUE(trn::is_fp8(dtype::fp8_e5m2));
    EXPECT_FALSE(trn::is_fp8(dtype::int8));
    const std::string msg = user_error_of([] { trn::parse_dtype("float64"); });
    EXPECT_PRED2(contains, msg, "'float64'");
    EXPECT_PRED2(contains, msg,
                 "float32, bfloat16, float16, fp8, int32, float8_e4m3fn, float8_e5m2, int8");
}

TEST(Dtype, Float32AndInt32StoreExactly) {
    std::uint8_t b[4];
    store_element(b, dtype::float32, 0.1f);
    EXPECT_EQ(load_element(b, dtype::float32), 0.1f);
    store_element(b, dtype::int32, 7.0f);
    std::int32_t i;
    std::memcpy(&i, b, 4);
    EXPECT_EQ(i, 7);
    EXPECT_EQ(load_element(b, dtype::int32), 7.0f);
    store_element(b, dtype::int32, -123456.0f);
    EXPECT_EQ(load_element(b, dtype::int32), -123456.0f);
}

TEST(DtypeBf16, KnownValuesRoundToNearestEven) {
    EXPECT_EQ(store16(dtype::bfloat16, 1.0f), 0x3f80);
    EXPECT_EQ(store16(dtype::bfloat16, -2.0f), 0xc000);
    EXPECT_EQ(store16(dtype::bfloat16, 1.0f / 3.0f), 0x3eab);            // 0x3eaaaaab rounds up
    EXPECT_EQ(store16(dtype::bfloat16, from_bits(0x3f807fff)), 0x3f80);  // below half: down
    EXPECT_EQ(store16(dtype::bfloat16, from_bits(0x3f808000)), 0x3f80);  // tie to even (down)
    EXPECT_EQ(store16(dtype::bfloat16, from_bits(0x3f818000)), 0x3f82);  // tie to even (up)
    EXPECT_EQ(store16(dtype::bfloat16, from_bits(0x3f808001)), 0x3f81);  // above half: up
    EXPECT_EQ(store16(dtype::bfloat16, std::numeric_limits<float>::infinity()), 0x7f80);
    EXPECT_EQ(store16(dtype::bfloat16, std::numeric_limits<float>::max()), 0x7f80);  // overflow
    EXPECT_EQ(store16(dtype::bfloat16, from_bits(0x00018000)), 0x0002);  // subnormal tie, up
    EXPECT_TRUE(std::isnan(load16(
        dtype::bfloat16, store16(dtype::bfloat16, std::numeric_limits<float>::quiet_NaN()))));
    EXPECT_EQ(load16(dtype::bfloat16, 0x3eab), from_bits(0x3eab0000));
}

TEST(DtypeBf16, EveryNonNanPatternRoundTrips) {
    for (std::uint32_t h = 0; h <= 0xffff; ++h) {
        const float v = load16(dtype::bfloat16, static_cast<std::uint16_t>(h));
        if (std::isnan(v)) continue;
        ASSERT_EQ(store16(dtype::bfloat16, v), h) << std::hex << h;
    }
}

TEST(DtypeFp16, KnownValuesRoundToNearestEven) {
    EXPECT_EQ(store16(dtype::float16, 1.0f), 0x3c00);
    EXPECT_EQ(store16(dtype::float16, -2.0f), 0xc000);
    EXPECT_EQ(store16(dtype::float16, 1.0f / 3.0f), 0x3555);
    EXPECT_EQ(load16(dtype::float16, 0x3555), 0.333251953125f);
    EXPECT_EQ(store16(dtype::float16, 65504.0f), 0x7bff);  // largest finite
    EXPECT_EQ(store16(dtype::float16, 65519.0f), 0x7bff);  // below the midpoint
    EXPECT_EQ(store16(dtype::float16, 65520.0f), 0x7c00);  // midpoint ties to even: inf
    EXPECT_EQ(store16(dtype::float16, 1e6f), 0x7c00);
    EXPECT_EQ(store16(dtype::float16, -1e6f), 0xfc00);
    EXPECT_EQ(store16(dtype::float16, 1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie: even
    EXPECT_EQ(store16(dtype::float16, 1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie: even
    EXPECT_EQ(store16(dtype::float16, 1.0f + 1.5f * std::ldexp(1.0f, -11)), 0x3c01);
    EXPECT_EQ(store16(dtype::float16, 2047.5f), 0x6800);  // mantissa carry into the exponent
    // Subnormals are multiples of 2^-24.
    EXPECT_EQ(store16(dtype::float16, std::ldexp(1.0f, -24)), 0x0001);
    EXPECT_EQ(store16(dtype::float16, std::ldexp(1.0f, -25)), 0x0000);  // tie to even: zero
    EXPECT_EQ(store16(dtype::float16, std::ldexp(1.5f, -24)), 0x0002);  // tie to even: 2
    EXPECT_EQ(store16(dtype::float16, std::ldexp(1.25f, -24)), 0x0001);
    EXPECT_EQ(store16(dtype::float16, std::ldexp(1.0f, -14)), 0x0400);     // smallest normal
    EXPECT_EQ(store16(dtype::float16, std::ldexp(1023.6f, -24)), 0x0400);  // rounds up to it
    EXPECT_EQ(load16(dtype::float16, 0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(load16(dtype::float16, 0x8001), -std::ldexp(1.0f, -24));
    EXPECT_EQ(load16(dtype::float16, 0x7c00), std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(
        load16(dtype::float16, store16(dtype::float16, std::numeric_limits<float>::quiet_NaN()))));
}

TEST(DtypeFp16, EveryNonNanPatternRoundTrips) {
    for (std::uint32_t h = 0; h <= 0xffff; ++h) {
        const float v = load16(dtype::float16, static_cast<std::uint16_t>(h));
        if (std::isnan(v)) continue;
        ASSERT_EQ(store16(dtype::float16, v), h) << std::hex << h;
    }
}

TEST(DtypeFp8, KnownValuesRoundToNearestEven) {
    EXPECT_EQ(store8(1.0f), 0x38);
    EXPECT_EQ(store8(-1.0f), 0xb8);
    EXPECT_EQ(store8(1.0f / 3.0f), 0x2b);  // 1.375 * 2^-2
    EXPECT_EQ(load8(0x2b), 0.34375f);
    EXPECT_EQ(store8(1.0f + 1.0f / 16), 0x38);      // tie: even (down)
    EXPECT_EQ(store8(1.0f + 3.0f / 16), 0x3a);      // tie: even (up)
    EXPECT_EQ(store8(15.9f), 0x58);                 // rounds up into the next binade: 16
    EXPECT_EQ(store8(std::ldexp(1.0f, -6)), 0x08);  // smallest normal
    // Subnormals are multiples of 2^-9.
    EXPECT_EQ(store8(std::ldexp(1.0f, -9)), 0x01);
    EXPECT_EQ(store8(std::ldexp(3.0f, -9)), 0x03);
    EXPECT_EQ(store8(std::ldexp(0.75f, -9)), 0x01);  // nearest is 2^-9, not zero
    EXPECT_EQ(store8(std::ldexp(1.0f, -10)), 0x00);  // tie to even: zero
    EXPECT_EQ(store8(std::ldexp(0.4f, -9)), 0x00);
    EXPECT_EQ(store8(std::ldexp(7.5f, -9)), 0x08);  // tie to even: the smallest normal
    EXPECT_EQ(load8(0x01), std::ldexp(1.0f, -9));
}

TEST(DtypeFp8, E4m3HasInfinitiesAndMax240) {
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(store8(240.0f), 0x77);  // largest finite
    EXPECT_EQ(store8(247.0f), 0x77);
    EXPECT_EQ(store8(248.0f), 0x78);  // tie between 240 (odd) and 256: overflows to infinity
    EXPECT_EQ(store8(1000.0f), 0x78);
    EXPECT_EQ(store8(-inf), 0xf8);
    EXPECT_EQ(load8(0x78), inf);
    EXPECT_EQ(load8(0xf8), -inf);
    for (std::uint8_t b = 0x79; b <= 0x7f; ++b)
        EXPECT_TRUE(std::isnan(load8(b))) << int(b);
}

TEST(DtypeFp8, E4m3fnHasNoInfinityAndMax448) {
    const dtype fn = dtype::fp8_e4m3fn;
    EXPECT_EQ(store8(448.0f, fn), 0x7e);   // largest finite
    EXPECT_EQ(store8(464.0f, fn), 0x7e);   // tie between 448 (even) and 480: down
    EXPECT_EQ(store8(-465.0f, fn), 0xff);  // beyond: NaN (as ml_dtypes casts)
    EXPECT_TRUE(std::isnan(load8(store8(std::numeric_limits<float>::infinity(), fn), fn)));
    EXPECT_EQ(load8(0x78, fn), 256.0f);
    EXPECT_EQ(load8(0x38, fn), 1.0f);
    EXPECT_TRUE(std::isnan(load8(0x7f, fn)));
}

TEST(DtypeFp8, E5m2HasInfinitiesAndMax57344) {
    const dtype e5 = dtype::fp8_e5m2;
    EXPECT_EQ(store8(1.0f, e5), 0x3c);
    EXPECT_EQ(store8(57344.0f, e5), 0x7b);  // largest finite
    EXPECT_EQ(store8(61440.0f, e5), 0x7c);  // tie between 57344 (odd) and 65536: infinity
    EXPECT_EQ(load8(0x7c, e5), std::numeric_limits<float>::infinity());
    EXPECT_EQ(store8(std::ldexp(1.0f, -16), e5), 0x01);  // smallest subnormal
    EXPECT_EQ(store8(1.25f, e5), 0x3d);
    EXPECT_EQ(store8(1.125f, e5), 0x3c);  // tie: even (down)
}

// NeuronCore-v4's MX types: four values packed little-endian (fp8: value q in byte q; fp4 E2M1:
// in bits 4q .. 4q+3, every encoding finite, max 6), and the e8m0 scale 2^(bits - 127).
TEST(DtypeMx, PackedValuesAndTheScale) {
    using trn::packed_value;
    using trn::store_packed_value;
    EXPECT_EQ(trn::dtype_size(dtype::fp8_e4m3fn_x4), 4u);
    EXPECT_EQ(trn::dtype_size(dtype::fp4_e2m1fn_x4), 2u);
    EXPECT_EQ(trn::parse_dtype("float8_e5m2_x4"), dtype::fp8_e5m2_x4);
    EXPECT_STREQ(trn::dtype_name(dtype::fp8_e8m0), "float8_e8m0fnu");
    std::uint8_t w[4] = {};
    const float v[4] = {1.0f, -2.0f, 448.0f, 0.015625f};
    for (int q = 0; q < 4; ++q)
        store_packed_value(w, dtype::fp8_e4m3fn_x4, q, v[q]);
    EXPECT_EQ(w[0], 0x38);  // 1.0 in e4m3fn, in the lowest byte
    EXPECT_EQ(w[1], 0xC0);  // -2.0
    EXPECT_EQ(w[2], 0x7E);  // 448, the largest
    for (int q = 0; q < 4; ++q)
        EXPECT_EQ(packed_value(w, dtype::fp8_e4m3fn_x4, q), v[q]) << q;
    store_packed_value(w, dtype::fp8_e4m3fn_x4, 0, 1000.0f);  // an MX conversion saturates
    EXPECT_EQ(packed_value(w, dtype::fp8_e4m3fn_x4, 0), 448.0f);
    EXPECT_EQ(packed_value(w, dtype::fp8_e4m3fn_x4, 1), -2.0f);  // the others untouched
    // fp4 E2M1: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives; 0x7 is 6, not NaN
    const std::uint8_t f4[2] = {0x71, 0xF5};  // values 0.5, 6, 3, -6
    EXPECT_EQ(packed_value(f4, dtype::fp4_e2m1fn_x4, 0), 0.5f);
    EXPECT_EQ(packed_value(f4, dtype::fp4_e2m1fn_x4, 1), 6.0f);
    EXPECT_EQ(packed_value(f4, dtype::fp4_e2m1fn_x4, 2), 3.0f);
    EXPECT_EQ(packed_value(f4, dtype::fp4_e2m1fn_x4, 3), -6.0f);
    std::uint8_t f4w[2] = {};
    store_packed_value(f4w, dtype::fp4_e2m1fn_x4, 2, 2.6f);  // to nearest: 3
    EXPECT_EQ(f4w[1], 0x05);
    // the scale
    const std::uint8_t s127 = 127, s130 = 130, nan = 0xFF;
    EXPECT_EQ(load_element(&s127, dtype::fp8_e8m0), 1.0f);
    EXPECT_EQ(load_element(&s130, dtype::fp8_e8m0), 8.0f);
    EXPECT_TRUE(std::isnan(load_element(&nan, dtype::fp8_e8m0)));
    std::uint8_t b = 0;
    store_element(&b, dtype::fp8_e8m0, 0.25f);
    EXPECT_EQ(b, 125);
}

TEST(DtypeFp8, NanIsPreserved) {
    for (dtype t : {dtype::fp8_e4m3, dtype::fp8_e4m3fn, dtype::fp8_e5m2}) {
        const std::uint8_t nan = store8(std::numeric_limits<float>::quiet_NaN(), t);
        EXPECT_TRUE(std::isnan(load8(nan, t))) << trn::dtype_name(t);
        EXPECT_TRUE(std::isnan(load8(0xff, t))) << trn::dtype_name(t);
    }
}

TEST(DtypeFp8, EveryNonNanPatternRoundTrips) {
    for (dtype t : {dtype::fp8_e4m3, dtype::fp8_e4m3fn, dtype::fp8_e5m2}) {
        int finite = 0;
        for (std::uint32_t b = 0; b <= 0xff; ++b) {
            const float v = load8(static_cast<std::uint8_t>(b), t);
            if (std::isnan(v)) continue;
            finite += std::isfinite(v);
            ASSERT_EQ(store8(v, t), b) << trn::dtype_name(t) << " " << std::hex << b << " = " << v;
        }
        // e4m3: 2 infinities, 14 NaNs; e4m3fn: 2 NaNs; e5m2: 2 infinities, 6 NaNs
        const int expected = t == dtype::fp8_e4m3 ? 240 : t == dtype::fp8_e4m3fn ? 254 : 248;
        EXPECT_EQ(finite, expected) << trn::dtype_name(t);
    }
}

TEST(DtypeInt, TruncatesTowardZeroAndSaturates) {
    std::uint8_t b[4];
    auto round = [&](dtype t, float v) {
        store_element(b, t, v);
        return load_element(b, t);
    };
    EXPECT_EQ(round(dtype::int8, 3.7f), 3.0f);
    EXPECT_EQ(round(dtype::int8, -3.7f), -3.0f);
    EXPECT_EQ(round(dtype::int8, 200.0f), 127.0f);
    EXPECT_EQ(round(dtype::int8, -200.0f), -128.0f);
    EXPECT_EQ(round(dtype::uint8, -1.0f), 0.0f);
    EXPECT_EQ(round(dtype::uint8, 255.9f), 255.0f);
    EXPECT_EQ(round(dtype::int16, -40000.0f), -32768.0f);
    EXPECT_EQ(round(dtype::uint16, 65535.0f), 65535.0f);
    EXPECT_EQ(round(dtype::uint32, 1e10f), 4294967296.0f);  // 2^32 - 1 as a float
    EXPECT_EQ(round(dtype::int32, std::numeric_limits<float>::quiet_NaN()), 0.0f);
}

}  // namespace
