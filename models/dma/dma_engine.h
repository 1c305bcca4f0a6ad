#pragma once
#include <tlm_utils/simple_initiator_socket.h>
#include <array>
#include <tlm>
#include <vector>

#include "core/lt_target.h"
#include "core/params.h"
#include "core/port.h"
#include "core/prefetch.h"
#include "core/timeline.h"
#include "dma/dma_job.h"
#include "program/access.h"

namespace trn {

// One DMA engine: moves the rows of transfer chunks it is handed, one chunk at a time, each row
// costing max(descriptor_cost, bytes / engine_bandwidth), divided by rmw_rate for a
// read-add-write and by transpose_rate for a transpose (the queue times the memory sides of the
// whole transfer) and, in functional mode, moves the data through the router, converting
// element types through fp32 as the hardware does (adding onto dst in fp32 for a read-add-write,
// a transpose's chunk writing its rows from one column of each source row).
// Contract (in socket): the payload carries a dma_job; on return `delay` is the chunk's
// completion offset, given that it may start at the incoming `delay`.
class dma_engine : public sc_core::sc_module, private lt_target {
  public:
    // Any number of queues bind here; it calls the engine directly (no per-binding callback).
    tlm::tlm_target_socket<32, tlm::tlm_base_protocol_types, 0> in{"in"};
    tlm_utils::simple_initiator_socket<dma_engine> out{"out"};

    static void declare_params(param_registry& r);
    dma_engine(const sc_core::sc_module_name& name, const config& cfg);
    ~dma_engine() override;
    dma_engine(const dma_engine&) = delete;
    dma_engine& operator=(const dma_engine&) = delete;

    const busy_port& port() const { return m_port; }
    // This engine is another core's (a chip's HBM pair shares its engines): its rows are booked
    // on that engine's port too, so the two cores' transfers take turns on it. Its own port
    // keeps this core's statistics.
    void book_on(dma_engine& physical) { m_physical = &physical.m_port; }
    // The booking that says when the engine is next free (the physical engine's).
    const busy_port& booking() const { return m_physical ? *m_physical : m_port; }
    void set_timeline(timeline* t);
    void reset_stats() {
        m_port.reset_stats();
        m_bytes = m_rows = 0;
    }
    std::uint64_t bytes() const { return m_bytes; }
    std::uint64_t rows() const { return m_rows; }
    // Adds its port's statistics under `prefix` ("dma.engines.e3").
    void report(stats_tree& s, const std::string& prefix) const;
    // Asks the processor to bring what booking a chunk touches into its cache (a hint: it
    // changes nothing), so that a queue can fetch every engine's at once before booking them.
    void prefetch() const { trn::prefetch(&m_port, 2 * 64, true); }  // (its two lines)

    // Serves one chunk of a transfer: what the socket's b_transport does with its payload's
    // dma_job. A queue that holds its engines calls this directly, without the socket's dispatch
    // (1M chunks in the matmul tutorial). On return `delay` is the chunk's completion offset and
    // job.start its start offset, given that it may start at the incoming `delay`.
    void serve(dma_job& job, sc_core::sc_time& delay) {
        const std::uint32_t rows = job.row_end - job.row_begin;
        const std::uint64_t row_bytes = job.transfer->row_bytes();
        const sc_core::sc_time now = sim_time();
        const sc_core::sc_time service = chunk_time(*job.transfer, rows, row_bytes);
        const sc_core::sc_time start = book(now + delay, service, rows, row_bytes) - now;
        if (job.functional) move_data(job);
        if (m_timeline) record(job, now + start, service);
        job.start = start;
        delay = start + service;
    }
    // The timing of serve() alone, for a queue that times a transfer's chunks itself (no
    // functional data, no timeline): books `rows` rows of `row_bytes` each, taking `service`,
    // from `earliest` (an absolute time) and returns when they start.
    sc_core::sc_time book(const sc_core::sc_time& earliest, const sc_core::sc_time& service,
                          std::uint32_t rows, std::uint64_t row_bytes) {
        const sc_core::sc_time from = m_physical ? m_physical->book(earliest, service) : earliest;
        m_bytes += rows * row_bytes;
        m_rows += rows;
        return m_port.reserve(from, service);
    }
    // How long `rows` rows of transfer `t` (of `row_bytes` each) take on this engine.
    sc_core::sc_time chunk_time(const dma_transfer& t, std::uint32_t rows,
                                std::uint64_t row_bytes) {
        return t.rmw != alu_op::bypass ? chunk_service_time(rows, row_bytes) / m_rmw_rate
               : t.transpose           ? chunk_service_time(rows, row_bytes) / m_transpose_rate
                                       : chunk_service_time(rows, row_bytes);
    }

    // Time one engine needs for `rows` rows of `row_bytes` each.
    sc_core::sc_time service_time(std::uint64_t rows, std::uint64_t row_bytes) const;

  private:
    void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) override;
    // Reads or writes the functional data of rows [row_begin, row_begin + rows) of an operand,
    // packed at `data`, without timing (transport_dbg).
    void move_rows(tlm::tlm_command cmd, const operand& op, std::uint32_t row_begin,
                   std::uint32_t rows, std::uint8_t* data);
    void move_data(const dma_job& job);
    // A transpose's chunk: dst rows [row_begin, row_end) from those columns of every src row.
    void move_transposed(const dma_job& job);
    // service_time, remembered for the last few chunk shapes (the chunks of a transfer are
    // alike, and an engine serves a few kinds of transfer in turn).
    const sc_core::sc_time& chunk_service_time(std::uint64_t rows, std::uint64_t row_bytes) {
        for (const auto& s : m_shapes)
            if (s.rows == rows && s.row_bytes == row_bytes) return s.service;
        shape& s = m_shapes[m_next_shape];
        m_next_shape = (m_next_shape + 1) % m_shapes.size();
        s = {rows, row_bytes, service_time(rows, row_bytes)};
        return s.service;
    }
    // Adds a chunk's slice to the timeline.
    void record(const dma_job& job, const sc_core::sc_time& start, const sc_core::sc_time& service);

    // What a chunk's booking reads and writes, from the port to the first shapes in two cache
    // lines (prefetch()):
    struct shape {
        std::uint64_t rows = 0, row_bytes = 0;  // rows = 0: unused
        sc_core::sc_time service;
    };
    alignas(64) busy_port m_port;
    busy_port* m_physical = nullptr;
    std::uint64_t m_bytes = 0, m_rows = 0;
    timeline* m_timeline = nullptr;
    double m_rmw_rate;
    double m_transpose_rate;
    std::array<shape, 4> m_shapes;
    std::size_t m_next_shape = 0;  // the one to replace next

    double m_bytes_per_ns;
    double m_descriptor_ns;
    std::vector<std::uint8_t> m_src, m_dst;  // functional staging
    std::size_t m_track = 0;
    tlm::tlm_generic_payload m_trans;  // reused: a payload allocates its extension array
    access_ext m_ext;                  // m_trans's extension for the engine's lifetime
};

}  // namespace trn
