#include "platforms/cli.h"

#include <boost/program_options.hpp>
#include <sstream>
#include <string>

#include "core/error.h"

namespace po = boost::program_options;

namespace trn {

namespace {

const char* const usage_text =
    "usage: sim --config CONFIG (--workload NAME | --trace FILE) [--param KEY=VALUE]...\n"
    "           [--set KEY.PATH=VALUE]... [--stats-out FILE] [--functional]\n"
    "           [--dump-trace FILE] [--annotate] [--quiet]\n"
    "       sim --list-workloads | --list-params [--format text|markdown|json]\n"
    "       sim --list-instructions [--format text|markdown]\n"
    "       sim --list-params --config CONFIG [--set KEY.PATH=VALUE]... [--format text|json]\n"
    "\n"
    "Simulates one kernel on one AWS Trainium NeuronCore and reports its latency and where the\n"
    "time went. CONFIG is a YAML file or the name of one in the project's configs/ folder\n"
    "(trn1 = NeuronCore-v2, trn2 = NeuronCore-v3, trn3 = NeuronCore-v4, uncalibrated). --set\n"
    "chip.active_cores=N runs the kernel on N cores of the chip at once, sharing its HBM stacks\n"
    "(docs/architecture.md, \"Chip\").\n"
    "\n"
    "Exit status: 0 success; 1 functional mismatch; 2 usage, config, workload or trace error.\n"
    "\n"
    "Options";

}  // namespace

namespace {

// sim's options, each stored into `o` when given.
po::options_description options_of(cli_options& o) {
    po::options_description opts(usage_text);
    opts.add_options()("help,h", "print this help")(
        "config,c", po::value(&o.config), "platform config: a YAML path or a configs/ name")(
        "workload,w", po::value(&o.workload), "workload to build (see --list-workloads)")(
        "param,p", po::value(&o.params)->composing(), "workload parameter KEY=VALUE (repeatable)")(
        "set,s", po::value(&o.sets)->composing(),
        "override a config key, e.g. core.hbm.bandwidth=600GB/s (repeatable)")(
        "stats-out", po::value(&o.stats_out),
        "write the statistics tree as JSON to FILE (a fleet: one CSV row per case)")(
        "functional", "compute real values and check the output against the golden reference")(
        "dump-trace", po::value(&o.dump_trace), "write the program as a trace file (then run it)")(
        "trace", po::value(&o.trace), "run a trace file instead of a --workload")(
        "timeline", po::value(&o.timeline),
        "write a Chrome/Perfetto trace-event JSON timeline (ui.perfetto.dev) to FILE")(
        "list-workloads", "list the workloads and their parameters")(
        "list-instructions",
        "list the instruction set: each opcode's fields, semantics, and cost on each engine "
        "that runs it")(
        "list-params",
        "list every config key with unit, default and description; with --config (and --set), "
        "its value in that configuration and where the value came from")(
        "format", po::value(&o.format)->default_value("text"),
        "--list-params format: text|markdown|json; --list-instructions: text|markdown")(
        "annotate",
        "after the summary, where the time went line by line: each kernel source line (a "
        "trace's at=FILE:LINE) or C++ driver step, hottest first, with its share of the "
        "critical path, what holds it, its instructions, busy time, DMA bytes and waits")(
        "quiet,q", "print nothing on success (errors still go to stderr)");
    return opts;
}

// Rejects, as an unknown option, a token with a '%' that is not a known option's.
void reject_percent_tokens(const po::options_description& opts, int argc, const char* const* argv) {
    // Boost.Program_options builds its error messages by replacing placeholders such as
    // %canonical_option% with the offending token; a token that itself contains the placeholder
    // makes that replacement loop forever (found by tests/fuzz/cli_fuzz.cpp). No option name
    // contains '%', so such a token is an unknown option, said here; and so is an unknown
    // option with a '%' in its value (`--list=p%original_token%`), whose whole token the
    // message would hold.
    auto is_option = [&](const std::string& name) {
        try {
            return opts.find_nothrow(name, false) != nullptr;
        } catch (const po::error&) {
            return false;
        }
    };
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i] ? argv[i] : "";
        if (arg.size() < 2 || arg[0] != '-' || arg.find('%') == std::string::npos) continue;
        const std::string name = arg.substr(0, arg.find('='));
        const bool long_form = name.size() > 2 && name[1] == '-';
        const bool known = long_form && is_option(name.substr(2));
        // (a short option is one letter: "-s"; anything longer with a '%' is not an option)
        if (name.find('%') != std::string::npos || (long_form ? !known : name.size() != 2))
            throw user_error("unrecognised option '" + arg + "' (see sim --help)");
    }
}

}  // namespace

cli_options parse_cli(int argc, const char* const* argv) {
    cli_options o;
    po::options_description opts = options_of(o);
    reject_percent_tokens(opts, argc, argv);
    po::variables_map vm;
    try {
        // No abbreviated option names: an abbreviation several options share (`--list`) is
        // an unknown option, named as given, rather than an ambiguity (whose message Boost
        // builds by substituting the token into itself: a '%' in it loops forever).
        po::store(po::command_line_parser(argc, argv)
                      .options(opts)
                      .style(po::command_line_style::default_style &
                             ~po::command_line_style::allow_guessing)
                      .run(),
                  vm);
        po::notify(vm);
    } catch (const po::error& e) {
        throw user_error(std::string(e.what()) + " (see sim --help)");
    }
    if (vm.count("help")) {
        std::ostringstream help;
        help << opts;
        o.help = help.str();
        o.action = cli_action::help;
        return o;
    }
    if (vm.count("list-params")) {
        if (o.format != "text" && o.format != "markdown" && o.format != "json")
            throw user_error("--format must be text, markdown or json");
        o.action = cli_action::list_params;
        return o;
    }
    if (vm.count("list-instructions")) {
        if (o.format != "text" && o.format != "markdown")
            throw user_error("--list-instructions --format must be text or markdown");
        o.action = cli_action::list_instructions;
        return o;
    }
    if (vm.count("list-workloads")) {
        o.action = cli_action::list_workloads;
        return o;
    }
    if (o.config.empty()) throw user_error("--config is required (see sim --help)");
    if (o.workload.empty() == o.trace.empty())
        throw user_error("give exactly one of --workload NAME or --trace FILE");
    if (!o.trace.empty() && !o.params.empty())
        throw user_error("--param applies to a --workload, not to a --trace");
    o.functional = vm.count("functional") != 0;
    if (o.functional && !o.trace.empty())
        throw user_error("--functional needs a --workload (a trace carries no golden reference)");
    o.quiet = vm.count("quiet") != 0;
    o.annotate = vm.count("annotate") != 0;
    return o;
}

}  // namespace trn
