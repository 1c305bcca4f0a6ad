// Fuzz target: the trace reader. Any input either reads or throws user_error; what reads is
// validated (again user_error at most) and must survive a write/read round trip unchanged.
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "core/error.h"
#include "program/program.h"
#include "program/race_check.h"
#include "program/trace.h"

extern "C" int sc_main(int, char*[]) {  // libsystemc's main is unused; the symbol must exist
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    trn::program p;
    try {
        std::istringstream in(text);
        p = trn::read_trace(in, "fuzz.trace");
    } catch (const trn::user_error&) {
        return 0;
    }
    trn::program_limits lim;
    lim.partitions = 128;
    lim.sbuf_partition_bytes = 192 * 1024;
    lim.psum_partition_bytes = 16 * 1024;
    lim.hbm_bytes = std::uint64_t{16} << 30;
    lim.dma_queues = 16;
    lim.dma_priority_levels = 4;
    try {  // (as the platform checks a trace: its limits, then its races)
        trn::validate_program(p, lim);
        trn::check_no_races(p);
    } catch (const trn::user_error&) {
    }
    std::ostringstream out;
    trn::write_trace(out, p);
    std::istringstream back(out.str());
    if (!(trn::read_trace(back, "round-trip.trace") == p)) std::abort();  // read(write(p)) == p
    return 0;
}
