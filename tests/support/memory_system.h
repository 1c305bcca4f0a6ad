#pragma once
// The memory side of a NeuronCore for module benches: the router with its HBM channels, SBUF
// and PSUM banks, built from a config and bound as platforms/neuron_core.cpp binds them.
// Construct it inside a harness module (its modules become the harness's children).
#include <memory>
#include <string>
#include <vector>

#include "interconnect/router.h"
#include "memory/hbm_channel.h"
#include "memory/onchip_bank.h"

namespace trn::testing {

struct memory_system {
    explicit memory_system(const config& cfg)
        : router("router", cfg),
          sbuf("sbuf", address_map::sbuf_base,
               static_cast<std::uint32_t>(cfg.integer("core.sbuf.partitions")),
               cfg.size("core.sbuf.partition_size"), false) {
        for (std::int64_t c = 0; c < cfg.integer("core.hbm.channels"); ++c) {
            hbm.push_back(std::make_unique<hbm_channel>(("hbm" + std::to_string(c)).c_str(), cfg));
            router.hbm.bind(hbm.back()->in);
        }
        router.sbuf.bind(sbuf.in);
        const std::uint64_t bank = cfg.size("core.psum.bank_size");
        for (std::int64_t b = 0; b < cfg.integer("core.psum.banks"); ++b) {
            psum.push_back(std::make_unique<onchip_bank>(
                ("psum" + std::to_string(b)).c_str(), address_map::psum_base + b * bank,
                static_cast<std::uint32_t>(cfg.integer("core.sbuf.partitions")), bank,
                cfg.boolean("core.psum.bank_conflicts")));
            router.psum.bind(psum.back()->in);
        }
    }

    trn::router router;
    std::vector<std::unique_ptr<hbm_channel>> hbm;
    onchip_bank sbuf;
    std::vector<std::unique_ptr<onchip_bank>> psum;
};

}  // namespace trn::testing
