// The rows of the control opcodes: no data path of their own.
#include <cmath>
#include <string>

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

// The register instructions (nisa.register_load, register_store, register_move): an engine
// sequencer's 32-bit scalar registers, which bound the loops the device runs
// (nl.dynamic_range). No cost is published: control instructions of the sequencer, no data
// path (hardware-facts 1e); the engine's per-instruction overhead only. Their values are the
// NKI frontend's (its interpreter keeps the registers; a loop's bound is read where it starts).
const char* const register_cost = "0 cycles (a sequencer's control instruction)";

std::vector<cost_rule> register_costs() {
    std::vector<cost_rule> costs;
    for (const engine_kind e :
         {engine_kind::sp, engine_kind::act, engine_kind::dve, engine_kind::pool})
        costs.push_back(
            {e, any, 3, 0, false, 0, "hardware-facts 1e", false, no_cycles, register_cost});
    return costs;
}

void one_element(const operand& op, const char* role, const check_context& cx) {
    cx.operand(op, role);
    if (op.partitions != 1 || op.elems != 1 || dtype_size(op.type) > 4)
        cx.fail(std::string("a register's ") + role +
                " is one element of at most 32 bits ([1, 1])");
}

void register_number(const instruction& ins, const check_context& cx) {
    if (ins.imm < 0 || ins.imm != std::floor(ins.imm))
        cx.fail("a register instruction's imm is its register's number, 0, 1, ...");
}

const opcode_row& row_of_register_load() {
    static const opcode_row r{
        .info = {"register_load", field::src0 | field::imm, 7, false,
                 "register imm = src0[0, 0], one element (SBUF, PSUM or HBM) of at most 32 "
                 "bits: nisa.register_load"},
        .costs = register_costs(),
        .check = [](const instruction& ins, engine_kind, const check_context& cx) {
            register_number(ins, cx);
            one_element(ins.src0, "src0", cx);
        }};
    return r;
}

const opcode_row& row_of_register_store() {
    static const opcode_row r{
        .info = {"register_store", field::dst | field::imm, 7, false,
                 "dst[0, 0] = register imm, one element (SBUF, PSUM or HBM) of at most 32 bits: "
                 "nisa.register_store"},
        .costs = register_costs(),
        .check = [](const instruction& ins, engine_kind, const check_context& cx) {
            register_number(ins, cx);
            one_element(ins.dst, "dst", cx);
        }};
    return r;
}

const opcode_row& row_of_register_move() {
    static const opcode_row r{
        .info = {"register_move", field::imm | field::imm1 | field::imm2, 7, false,
                 "register imm = register imm2 when imm2 >= 0, else imm1 (a constant): "
                 "nisa.register_move, nisa.register_alloc's initial value"},
        .costs = register_costs(),
        .check = [](const instruction& ins, engine_kind, const check_context& cx) {
            register_number(ins, cx);
            if (ins.imm1 != std::floor(ins.imm1) || ins.imm2 != std::floor(ins.imm2))
                cx.fail(
                    "register_move's imm1 (a constant) and imm2 (a register, or -1) are "
                    "whole numbers");
        }};
    return r;
}

}  // namespace trn
