// Fuzz target: sim's command-line parser. The input is the argument list, NUL-separated; any
// list parses or throws user_error (never another exception, a crash or a hang).
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "platforms/cli.h"

extern "C" int sc_main(int, char*[]) {  // libsystemc's main is unused; the symbol must exist
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::string> args{"sim"};
    std::string current;
    for (std::size_t i = 0; i < size && args.size() < 64; ++i) {
        if (data[i] == 0) {
            args.push_back(current);
            current.clear();
        } else {
            current.push_back(static_cast<char>(data[i]));
        }
    }
    if (!current.empty()) args.push_back(current);
    std::vector<const char*> argv;
    for (const auto& a : args)
        argv.push_back(a.c_str());
    argv.push_back(nullptr);
    try {
        (void)trn::parse_cli(static_cast<int>(args.size()), argv.data());
    } catch (const trn::user_error&) {
    }
    return 0;
}
