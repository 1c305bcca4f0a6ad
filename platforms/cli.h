#pragma once
#include <string>
#include <vector>

namespace trn {

// What `sim` was asked to do.
enum class cli_action { run, help, list_params, list_workloads, list_instructions };

// The command line of `sim`, parsed and checked.
struct cli_options {
    cli_action action = cli_action::run;
    std::string help;  // the --help text
    std::string config, workload, trace, stats_out, dump_trace, timeline, format = "text";
    std::vector<std::string> params, sets;
    bool functional = false, quiet = false, annotate = false;
};

// Parses sim's arguments (argv[0] is the program). Contract: returns the options of a
// well-formed command line, or throws user_error naming what is wrong (an unknown or repeated
// option, a missing --config, both or neither of --workload and --trace, --param with --trace,
// --functional with --trace, a bad --format); it reads no file and prints nothing.
cli_options parse_cli(int argc, const char* const* argv);

}  // namespace trn
