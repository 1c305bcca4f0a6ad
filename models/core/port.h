#pragma once
#include <string>
#include <systemc>

namespace trn {

class stats_tree;

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
    // The same booking without adding to the totals (another's use of this resource, counted
    // where it was made).
    sc_core::sc_time book(const sc_core::sc_time& earliest, const sc_core::sc_time& service) {
        const sc_core::sc_time start = earliest > m_busy_until ? earliest : m_busy_until;
        m_busy_until = start + service;
        return start;
    }
    const sc_core::sc_time& busy_until() const { return m_busy_until; }
    const sc_core::sc_time& busy_total() const { return m_busy_total; }
    const sc_core::sc_time& wait_total() const { return m_wait_total; }
    // Starts a new measurement: the totals restart, the booking stays.
    void reset_stats() { m_busy_total = m_wait_total = sc_core::SC_ZERO_TIME; }

  private:
    sc_core::sc_time m_busy_until = sc_core::SC_ZERO_TIME;
    sc_core::sc_time m_busy_total = sc_core::SC_ZERO_TIME;
    sc_core::sc_time m_wait_total = sc_core::SC_ZERO_TIME;
};

// Adds a port's statistics under `prefix`: .busy_ns (its service time, described as `busy`) and
// .queued_ns (the time requests waited for it, summed over them, described as `queued`).
void report_port(stats_tree& s, const std::string& prefix, const busy_port& port,
                 const std::string& busy, const std::string& queued);

// The current simulated time: sc_time_stamp() without a library call on hot paths (GCC keeps
// sc_get_curr_simcontext out of line for its first-use branch: the context is read directly
// once it exists, as it does whenever a module does).
inline const sc_core::sc_time& sim_time() {
    sc_core::sc_simcontext* context = sc_core::sc_curr_simcontext;
    if (__builtin_expect(context == nullptr, 0)) context = sc_core::sc_get_curr_simcontext();
    return context->time_stamp();
}

// A time in ns, rounded to the kernel's resolution (1 ps by default). Avoids the generic
// sc_time(double, unit) constructor on hot paths.
inline sc_core::sc_time ns(double v) {
    static const double ticks_per_ns = 1e-9 / sc_core::sc_get_time_resolution().to_seconds();
    static const sc_core::sc_time tick = sc_core::sc_time::from_value(1);
    // sc_time * double rounds to the nearest tick inline: for v >= 0 the same value as
    // from_value(uint64(v * ticks_per_ns + 0.5)), without the library call.
    return tick * (v * ticks_per_ns);
}

// A time in ns, as a double (the inverse of ns()), without sc_time::to_seconds's division.
inline double in_ns(const sc_core::sc_time& t) {
    static const double ns_per_tick = sc_core::sc_get_time_resolution().to_seconds() * 1e9;
    return static_cast<double>(t.value()) * ns_per_tick;
}

}  // namespace trn
