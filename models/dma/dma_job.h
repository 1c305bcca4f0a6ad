#pragma once
#include <tlm>

#include "program/program.h"

namespace trn {

// Rows [row_begin, row_end) of one DMA transfer, handed by a queue to one DMA engine.
struct dma_job : tlm::tlm_extension<dma_job> {
    const dma_transfer* transfer = nullptr;
    std::uint32_t row_begin = 0, row_end = 0;
    bool functional = false;
    sc_core::sc_time start;  // out: when the engine started the chunk (offset from now)

    tlm::tlm_extension_base* clone() const override { return new dma_job(*this); }
    void copy_from(const tlm::tlm_extension_base& o) override {
        *this = static_cast<const dma_job&>(o);
    }
};

}  // namespace trn
