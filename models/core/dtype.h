#pragma once
#include <cstdint>
#include <string>

namespace trn {

// Element types the engines and DMA understand. The 8-bit floats are those of the NKI API
// reference: fp8_e4m3 (bias 7, IEEE infinities, max 240), fp8_e4m3fn (bias 7, no infinity,
// max 448), fp8_e5m2 (bias 15, IEEE, max 57344); docs/nki.md, "Data types". The MX types of
// NeuronCore-v4 pack four values in one element (fp8_e4m3fn_x4, fp8_e5m2_x4: 32 bits;
// fp4_e2m1fn_x4: 16 bits; value i in bits [i w, (i + 1) w) of the little-endian element, w its
// width); fp8_e8m0 is an MX scale, 2^(bits - 127) (0xFF: NaN).
enum class dtype : std::uint8_t {
    float32,
    bfloat16,
    float16,
    fp8_e4m3,
    int32,
    fp8_e4m3fn,
    fp8_e5m2,
    int8,
    uint8,
    int16,
    uint16,
    uint32,
    fp8_e4m3fn_x4,
    fp8_e5m2_x4,
    fp4_e2m1fn_x4,
    fp8_e8m0,
};
constexpr std::size_t dtype_count = static_cast<std::size_t>(dtype::fp8_e8m0) + 1;

inline std::size_t dtype_size(dtype t) {
    switch (t) {
        case dtype::float32:
        case dtype::int32:
        case dtype::uint32:
        case dtype::fp8_e4m3fn_x4:
        case dtype::fp8_e5m2_x4:
            return 4;
        case dtype::bfloat16:
        case dtype::float16:
        case dtype::int16:
        case dtype::uint16:
        case dtype::fp4_e2m1fn_x4:
            return 2;
        case dtype::fp8_e4m3:
        case dtype::fp8_e4m3fn:
        case dtype::fp8_e5m2:
        case dtype::int8:
        case dtype::uint8:
        case dtype::fp8_e8m0:
            return 1;
    }
    return 4;
}
// An 8-bit floating-point type (what the Tensor engine's fp8 modes take).
inline bool is_fp8(dtype t) {
    return t == dtype::fp8_e4m3 || t == dtype::fp8_e4m3fn || t == dtype::fp8_e5m2;
}
// A two's-complement or unsigned integer type.
inline bool is_integer(dtype t) {
    return t == dtype::int8 || t == dtype::uint8 || t == dtype::int16 || t == dtype::uint16 ||
           t == dtype::int32 || t == dtype::uint32;
}
// An MX type of four packed values (what nc_matmul_mx multiplies, quantize_mx writes).
inline bool is_packed(dtype t) {
    return t == dtype::fp8_e4m3fn_x4 || t == dtype::fp8_e5m2_x4 || t == dtype::fp4_e2m1fn_x4;
}
// An MX type: packed, or the MX scale.
inline bool is_mx(dtype t) {
    return is_packed(t) || t == dtype::fp8_e8m0;
}
// Value i (0..3) of the packed element at p, and its encoding of v (rounded to nearest even,
// saturated to the format's largest value, as an MX conversion does).
float packed_value(const std::uint8_t* p, dtype t, int i);
void store_packed_value(std::uint8_t* p, dtype t, int i, float v);
const char* dtype_name(dtype t);
// Throws user_error listing the valid names.
dtype parse_dtype(const std::string& name);

// Conversions used by functional mode: every value is computed in float and rounded to the
// element type on store, as the engines do (integers: truncated toward zero and saturated;
// fp8_e8m0: the nearest power of two). A packed type has no single value: its element is its
// first value (packed_value for the others); storing one sets all four.
float load_element(const std::uint8_t* p, dtype t);
void store_element(std::uint8_t* p, dtype t, float v);

}  // namespace trn
