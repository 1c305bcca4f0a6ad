#pragma once
#include <cstdint>
#include <string>

namespace trn {

// Element types the engines and DMA understand. The 8-bit floats are those of the NKI API
// reference: fp8_e4m3 (bias 7, IEEE infinities, max 240), fp8_e4m3fn (bias 7, no infinity,
// max 448), fp8_e5m2 (bias 15, IEEE, max 57344); docs/nki.md, "Data types".
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
};

inline std::size_t dtype_size(dtype t) {
    switch (t) {
        case dtype::float32:
        case dtype::int32:
        case dtype::uint32:
            return 4;
        case dtype::bfloat16:
        case dtype::float16:
        case dtype::int16:
        case dtype::uint16:
            return 2;
        case dtype::fp8_e4m3:
        case dtype::fp8_e4m3fn:
        case dtype::fp8_e5m2:
        case dtype::int8:
        case dtype::uint8:
            return 1;
    }
    return 4;
}
// An 8-bit floating-point type (what the Tensor engine's fp8 modes take).
inline bool is_fp8(dtype t) {
    return t == dtype::fp8_e4m3 || t == dtype::fp8_e4m3fn || t == dtype::fp8_e5m2;
}
const char* dtype_name(dtype t);
// Throws user_error listing the valid names.
dtype parse_dtype(const std::string& name);

// Conversions used by functional mode: every value is computed in float and rounded to the
// element type on store, as the engines do (integers: truncated toward zero and saturated).
float load_element(const std::uint8_t* p, dtype t);
void store_element(std::uint8_t* p, dtype t, float v);

}  // namespace trn
