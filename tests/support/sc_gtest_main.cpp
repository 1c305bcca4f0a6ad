// Entry point of SystemC harness tests: GoogleTest inside sc_main, SystemC warnings as failures.
#include <gtest/gtest.h>

#include <cstdlib>
#include <systemc>

namespace {

void report_to_gtest(const sc_core::sc_report& report, const sc_core::sc_actions& actions) {
    if (report.get_severity() >= sc_core::SC_WARNING)
        ADD_FAILURE() << "SystemC " << report.get_msg_type() << ": " << report.get_msg();
    sc_core::sc_report_handler::default_handler(
        report, actions & ~sc_core::SC_DISPLAY & ~sc_core::SC_THROW);
}

// SystemC's own switch for its copyright banner, set before any static initialiser (SystemC
// prints the banner before sc_main runs), so that neither a test nor ctest's listing of the
// tests prints it.
__attribute__((constructor(101))) void quiet_systemc() {
    ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
}

}  // namespace

int sc_main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    sc_core::sc_report_handler::set_handler(report_to_gtest);
    return RUN_ALL_TESTS();
}
