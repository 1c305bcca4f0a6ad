#pragma once
#include <cstdint>
#include <string>

namespace trn {

// Element types the engines and DMA understand.
enum class dtype : std::uint8_t { float32, bfloat16, float16, fp8_e4m3, int32 };

inline std::size_t dtype_size(dtype t) {
    switch (t) {
        case dtype::float32:
        case dtype::int32:
            return 4;
        case dtype::bfloat16:
        case dtype::float16:
            return 2;
        case dtype::fp8_e4m3:
            return 1;
    }
    return 4;
}
const char* dtype_name(dtype t);
// Throws user_error listing the valid names.
dtype parse_dtype(const std::string& name);

// Conversions used by functional mode: every value is computed in float and rounded to the
// element type on store, as the engines do.
float load_element(const std::uint8_t* p, dtype t);
void store_element(std::uint8_t* p, dtype t, float v);

}  // namespace trn
