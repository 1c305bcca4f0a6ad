#include "dma/dma_arbiter.h"

#include <algorithm>

#include "core/port.h"
#include "program/program.h"

namespace trn {

dma_arbiter::dma_arbiter(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
    SC_METHOD(arbitrate);
    sensitive << m_wake;
    dont_initialize();
}

void dma_arbiter::wake_at(const sc_core::sc_time& at) {
    const sc_core::sc_time& now = sim_time();
    m_wake.notify(at > now ? at - now : sc_core::SC_ZERO_TIME);  // keeps the earlier of two
}

void dma_arbiter::arbitrate() {
    const sc_core::sc_time now = sim_time();
    bool next_set = false;
    sc_core::sc_time next;
    const auto wake = [&](const sc_core::sc_time& t) {
        if (!next_set || t < next) next = t;
        next_set = true;
    };
    for (bool started = true; started;) {
        started = false;
        m_ready.clear();
        for (held_transfers* q : m_queues) {
            const dma_transfer* t = q->first_held();
            if (!t) continue;
            if (q->first_held_ready() > now)
                wake(q->first_held_ready());
            else
                m_ready.push_back(q);
        }
        std::sort(m_ready.begin(), m_ready.end(),
                  [](const held_transfers* a, const held_transfers* b) {
                      const int pa = a->first_held()->priority, pb = b->first_held()->priority;
                      return pa != pb ? pa < pb : a->first_held_ring() < b->first_held_ring();
                  });
        m_wanted.clear();
        for (held_transfers* q : m_ready) {
            q->first_held_engines(m_engines);
            bool free = true;
            sc_core::sc_time free_at = now;
            for (const busy_port* e : m_engines) {
                if (std::find(m_wanted.begin(), m_wanted.end(), e) != m_wanted.end())
                    free = false;  // a transfer before it waits for this engine
                if (e->busy_until() > free_at) free_at = e->busy_until();
            }
            if (free && free_at <= now) {
                q->start_held();  // the engines' bookings moved: look again
                started = true;
                break;
            }
            if (free_at > now) wake(free_at);
            m_wanted.insert(m_wanted.end(), m_engines.begin(), m_engines.end());
        }
    }
    if (next_set) m_wake.notify(next - now);
}

}  // namespace trn
