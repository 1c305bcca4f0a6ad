#pragma once
#include <cstdint>
#include <systemc>
#include <vector>

namespace trn {

class busy_port;
struct dma_transfer;

// What the arbiter sees of a queue: the first transfer it holds for the arbiter, and a way to
// start it. Contract: first_held() is null when the queue holds none; the others are asked only
// of a queue that holds one.
class held_transfers {
  public:
    virtual const dma_transfer* first_held() const = 0;
    // When the first held transfer could start (its ring plus the fixed latency).
    virtual sc_core::sc_time first_held_ready() const = 0;
    virtual std::uint64_t first_held_ring() const = 0;  // its ring()'s number
    // The bookings of the DMA engines the first held transfer would use if started now.
    virtual void first_held_engines(std::vector<const busy_port*>& out) const = 0;
    // Starts the first held transfer now, and the transfers of level 0 right behind it.
    virtual void start_held() = 0;

  protected:
    ~held_transfers() = default;
};

// Strict-priority DMA quality of service (NeuronCore-v4): starts the transfers its queues hold,
// highest priority first, once the DMA engines each needs are free.
// Contract: a queue holds a transfer of priority level 1 or more, and every transfer after one it
// holds (a queue starts its transfers in order); it calls wake_at(ready) for each, ready being
// when the transfer could start (its ring plus the fixed latency). At each wake the arbiter
// takes the queues' first held transfers that are ready, by level and then ring order (ring()'s
// numbers), and has a queue start its transfer when every engine it needs is free now and none
// is wanted by a transfer before it in that order (it then waits for those engines); a transfer
// of level 0 that is not held starts when rung, ahead of every held one.
class dma_arbiter : public sc_core::sc_module {
  public:
    SC_HAS_PROCESS(dma_arbiter);
    explicit dma_arbiter(const sc_core::sc_module_name& name);

    void add(held_transfers& q) { m_queues.push_back(&q); }
    // The next ring's number (ring order across the queues).
    std::uint64_t ring() { return m_rings++; }
    // Arbitrates again at simulated time `at` (not before now).
    void wake_at(const sc_core::sc_time& at);

  private:
    void arbitrate();

    std::vector<held_transfers*> m_queues;
    std::uint64_t m_rings = 0;
    sc_core::sc_event m_wake;
    std::vector<held_transfers*> m_ready;     // reused by arbitrate()
    std::vector<const busy_port*> m_wanted;   // reused by arbitrate()
    std::vector<const busy_port*> m_engines;  // reused by arbitrate()
};

}  // namespace trn
