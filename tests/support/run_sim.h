#pragma once
// Runs the `sim` binary in a child process, for end-to-end tests.
#include <sys/wait.h>
#include <cstdio>
#include <string>

namespace trn::testing {

struct sim_result {
    int status = -1;     // exit status
    std::string output;  // stdout and stderr together
};

// `args` is appended to the sim path (with `prefix_sim`; else run as it is) and run through the
// shell; quote as needed.
inline sim_result run_sim(const std::string& args, bool prefix_sim = true) {
    sim_result r;
    const std::string cmd =
        (prefix_sim ? std::string(SIM_PATH) + " " : std::string()) + args + " 2>&1";
    FILE* pipe = ::popen(cmd.c_str(), "r");
    if (!pipe) return r;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;)
        r.output.append(buf, n);
    const int raw = ::pclose(pipe);
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    return r;
}

}  // namespace trn::testing
