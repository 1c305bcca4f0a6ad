// The rows of the control opcodes: no data path of their own.
#include "isa/opcode_row.h"

namespace trn {

namespace {
constexpr auto any = operand_case::any;
const char* const barrier_cost = "0 cycles (the wait is the others' arrival, chip.barrier_latency)";
// core_barrier: no data path (the wait is the other cores' arrival, chip.barrier_latency).
double no_cycles(const instruction&) {
    return 0;
}
}  // namespace

const opcode_row& row_of_dma_trigger() {
    static const opcode_row r{.info = {"dma_trigger", field::queue, 1, false,
                                       "starts the next transfer of DMA queue `queue`"},
                              .other_engines = engine_bit(engine_kind::sp) |
                                               engine_bit(engine_kind::act) |
                                               engine_bit(engine_kind::pool),
                              .other_cost = "core.dma.trigger_time",
                              .other_operands = "-",
                              .other_source = "hardware-facts 1e",
                              .check = [](const instruction&, engine_kind, const check_context&) {
                                  // (its queue: validate_program)
                              }};
    return r;
}

const opcode_row& row_of_core_barrier() {
    // nisa.core_barrier: a remote semaphore update and a local wait (no data path)
    static const opcode_row r{
        .info = {"core_barrier", field::imm, 3, false,
                 "barrier number imm (1, 2, ... in program order): signals the other cores of its "
                 "HBM stack, then waits until each has reached its barrier of that number and its "
                 "signal is seen (chip.barrier_latency later): nisa.core_barrier (NeuronCore-v3)"},
        .costs = {{engine_kind::pool, any, 3, 0, false, 0, "hardware-facts 1e", false, no_cycles,
                   barrier_cost},
                  {engine_kind::act, any, 3, 0, false, 0, "hardware-facts 1e", false, no_cycles,
                   barrier_cost},
                  {engine_kind::dve, any, 3, 0, false, 0, "hardware-facts 1e", false, no_cycles,
                   barrier_cost},
                  {engine_kind::sp, any, 3, 0, false, 0, "hardware-facts 1e", false, no_cycles,
                   barrier_cost}},
        .check = [](const instruction& ins, engine_kind, const check_context& cx) {
            if (ins.imm < 1 || ins.imm != static_cast<std::uint32_t>(ins.imm))
                cx.fail("core_barrier's imm is its number, 1, 2, ...");
        }};
    return r;
}

}  // namespace trn
