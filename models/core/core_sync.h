#pragma once
#include <string>
#include <systemc>
#include <vector>

namespace trn {

// The barrier of the NeuronCores of an HBM stack (nisa.core_barrier): each core's arrivals at
// its barriers, which the others see `latency` later (a remote semaphore update).
// Contract: reset() before each program, naming how many cores run one; arrive() and
// wait_all() are called by an engine's thread, arrive() first (its signal to the others), then
// wait_all() blocks it until every other running core's n-th arrival is seen.
class core_sync {
  public:
    explicit core_sync(const sc_core::sc_time& latency) : m_latency(latency) {}
    void reset(std::size_t cores);
    // Core `core` reached its barrier number n (1, 2, ... in program order) now.
    void arrive(std::size_t core, std::size_t n);
    void wait_all(std::size_t core, std::size_t n);
    // Who waits for whom, for a deadlock report ("core 0 waits for core 1's barrier 2").
    std::vector<std::string> waiting() const;

  private:
    sc_core::sc_time m_latency;
    std::vector<std::vector<sc_core::sc_time>> m_arrivals;  // [core][n - 1]: when (or never)
    std::vector<std::string> m_waiting;                     // [core]: "" or what it waits for
    sc_core::sc_event m_arrived;
};

}  // namespace trn
