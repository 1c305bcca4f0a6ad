// Fuzz target: the config loader with every parameter the platform declares. Any input loads
// or throws user_error; a loaded config's values are then read back without another error.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/params.h"
#include "platforms/chip.h"

extern "C" int sc_main(int, char*[]) {  // libsystemc's main is unused; the symbol must exist
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const trn::param_registry registry = [] {
        trn::param_registry r;
        trn::declare_platform_params(r);
        return r;
    }();
    trn::config cfg(registry);
    try {
        cfg.load_yaml_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
        (void)cfg.effective();
    } catch (const trn::user_error&) {
    }
    return 0;
}
