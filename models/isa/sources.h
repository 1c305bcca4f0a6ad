#pragma once
// Where the rows' costs come from (docs/hardware-facts.md), shared by the isa/ files.

namespace trn::sources {

inline constexpr const char* isa_table = "hardware-facts 2";
inline constexpr const char* dve_width =
    "hardware-facts 1a, 2 (NC-v3 Vector engine 256 fp32 elements per cycle; the public trn2 "
    "AdamW kernel's profile: about 0.56 cycles per element)";
inline constexpr const char* pool_guess =
    "hardware-facts 2 (GPSIMD_START 150 + N, as iota; no Pool rule)";
// The instructions documented from the Neuron 2.26 notes onward, whose formulas the ISA
// reference gives without a NeuronCore version: the same cycles on each (model choice).
inline constexpr const char* isa_v2 =
    "hardware-facts 2 (one formula for NC-v2 and NC-v3: model choice)";
inline constexpr const char* act_measured =
    "hardware-facts 2 (NC-v3 activation: public trn2 profiles, 0.51 cycles per element; the "
    "guide's engine table says 128 elements a cycle)";
inline constexpr const char* act_v4_doc =
    "hardware-facts 1f (NC-v4: the guide's Vector exponential at 4x the Scalar engine's rate "
    "implies 1 element per partition a cycle)";
inline constexpr const char* act_v4 =
    "hardware-facts 1f (NC-v4 Scalar engine: tensor_scalar and tensor_copy, 2x for bf16/fp16)";

}  // namespace trn::sources
