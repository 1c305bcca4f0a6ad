#pragma once
#include <systemc>

namespace trn {

// The busy-until port model: a resource that serves one request at a time, first come first
// served. Contract: reserve(earliest, service) returns the start time max(earliest, busy-until)
// and books the port until start + service.
class busy_port {
  public:
    sc_core::sc_time reserve(const sc_core::sc_time& earliest, const sc_core::sc_time& service) {
        const sc_core::sc_time start = earliest > m_busy_until ? earliest : m_busy_until;
        m_busy_until = start + service;
        m_busy_total += service;
        m_wait_total += start - earliest;
        return start;
    }
    const sc_core::sc_time& busy_until() const { return m_busy_until; }
    const sc_core::sc_time& busy_total() const { return m_busy_total; }
    const sc_core::sc_time& wait_total() const { return m_wait_total; }

  private:
    sc_core::sc_time m_busy_until = sc_core::SC_ZERO_TIME;
    sc_core::sc_time m_busy_total = sc_core::SC_ZERO_TIME;
    sc_core::sc_time m_wait_total = sc_core::SC_ZERO_TIME;
};

inline sc_core::sc_time ns(double v) {
    return sc_core::sc_time(v, sc_core::SC_NS);
}

}  // namespace trn
