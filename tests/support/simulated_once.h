#pragma once
#include <systemc>

namespace trn::testing {

// The SystemC bench of a test executable (SystemC elaborates once per process): built as
// Harness("bench") and simulated to the end on first use. It lives until exit: SystemC owns the
// hierarchy.
template <typename Harness>
Harness& simulated_once() {
    static Harness* h = [] {
        auto* b = new Harness("bench");
        sc_core::sc_start();
        return b;
    }();
    return *h;
}

}  // namespace trn::testing
