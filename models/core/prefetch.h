#pragma once
#include <cstddef>
#include <cstdint>

namespace trn {

// Asks the processor to bring every cache line of [p, p + bytes) into its cache, for reading or
// (`for_write`) writing. A hint: it changes nothing but when the memory is there. The model
// prefetches what it is about to read where its working set does not stay in the caches
// (docs/architecture.md, "Simulation speed").
inline void prefetch(const void* p, std::size_t bytes, bool for_write = false) {
    constexpr std::uintptr_t line = 64;
    const auto first = reinterpret_cast<std::uintptr_t>(p) & ~(line - 1);
    const auto end = reinterpret_cast<std::uintptr_t>(p) + bytes;
    for (std::uintptr_t a = first; a < end; a += line)
        if (for_write)
            __builtin_prefetch(reinterpret_cast<const void*>(a), 1);
        else
            __builtin_prefetch(reinterpret_cast<const void*>(a), 0);
}

}  // namespace trn
