#include "dma/dma_engine.h"

#include "core/stats.h"

#include <algorithm>

namespace trn {

void dma_engine::declare_params(param_registry& r) {
    r.add({"core.dma.engines", param_kind::integer, "16",
           "DMA engines of the NeuronCore; a transfer's partitions are split over all of them in "
           "equal groups (128 partitions over 16 engines: 8 each)",
           "hardware-facts 1d (16 per NC; fan-out 8 partitions per engine)", 1, 256});
    r.add({"core.dma.engine_groups", param_kind::integer, "1",
           "groups of core.dma.engines DMA engines a transfer of this core can be placed on: its "
           "own, and on trn2 those of the other NeuronCore of its HBM stack (idle in a one-core "
           "run); each transfer fans out over the group that frees first",
           "hardware-facts 1d (trn2: the two cores of an HBM stack; one trn2 core alone moves "
           "about 780 GB/s, more than its own 16 engines can)",
           1, 16});
    r.add({"core.dma.hardware_dge", param_kind::boolean, "false",
           "the transfers' descriptors come from the core's hardware descriptor generation "
           "engine (DGE), which feeds the core's own engines (the first group); false: static "
           "descriptor rings (neuronx-cc --disable-dge, or no hardware DGE), placed on any of "
           "core.dma.engine_groups",
           "hardware-facts 1d (hardware DGE: NC-v3, on by default in neuronx-cc for trn2; "
           "which engines it feeds: model choice from the trn2 points W5 and S1)"});
    r.add({"core.dma.queues", param_kind::integer, "16", "DMA queues (rings) per engine",
           "hardware-facts 1d (16 queues per engine)", 1, 256});
    r.add({"core.dma.priority_levels", param_kind::integer, "1",
           "DMA quality-of-service levels (strict priority, 0 the highest; 1: none): a transfer "
           "of level 0 starts when rung, as every transfer does without them; one of a lower "
           "level, and the transfers after it in its queue, are held until the DMA engines it "
           "needs are free and no held transfer of a higher level waits for them "
           "(docs/trace-format.md; nisa.dma_copy's priority=; a transfer without one is level "
           "0: model choice)",
           "hardware-facts 1f (NeuronCore-v4: strict priority per DMA queue, levels 0-3)", 1, 16});
    r.add({"core.dma.engine_bandwidth", param_kind::bandwidth, "17B/ns",
           "sustained bandwidth of one DMA engine on large rows",
           "hardware-facts 1d (17 B/ns NC-v2, 23 B/ns NC-v3)", 1e-3, 1e6});
    r.add(param_decl{"core.dma.descriptor_cost", param_kind::time, "20ns",
                     "minimum engine time per descriptor (one row of one partition): a row costs "
                     "max(descriptor_cost, bytes / engine_bandwidth), which gives the "
                     "efficiency-versus-bytes-per-partition curve",
                     "calibrated", 0, 1e6}
              .calibrated(2, 145,
                          "from a 32 B row at the sustained engine rate (2 ns) to the floor the "
                          "documented efficiency curve implies (about 2.5 KiB / 17 B/ns, "
                          "hardware-facts 1d)"));
    r.add(
        param_decl{"core.dma.fixed_latency", param_kind::time, "1.3us",
                   "trigger-to-start latency of every transfer (pipelined: it does not occupy "
                   "an engine)",
                   "hardware-facts 1d (~1300 ns semaphore-to-start, DBW)", 0, 1e9}
            .calibrated(700, 1300,
                        "from the trigger-to-data times seen in trn2 profiles (0.7-1.0 us) to "
                        "the documented ~1300 ns including descriptor setup (hardware-facts 1d)"));
    r.add({"core.dma.rmw_rate", param_kind::real, "0.5",
           "the rate of a read-add-write transfer into SBUF (nisa.dma_copy's dst_rmw_op, "
           "nisa.dma_compute), as a fraction of a copy's: each row costs its copy time divided "
           "by it",
           "hardware-facts 1f (NC-v4: the same throughput as a DMA copy to SBUF; before, 50% "
           "through the DMA collective compute engines)",
           0.01, 1});
    r.add({"core.dma.transpose_rate", param_kind::real, "0.58",
           "the rate of a DMA transpose into SBUF (nl.load_transpose2d, nisa.dma_transpose: one "
           "DMA whose rows are the destination's partitions, each gathering one element of every "
           "source row), as a fraction of the rate of a copy into the same tile: each row costs "
           "its copy time divided by it",
           "hardware-facts 1d (DMA transpose: NC-v2 'much lower DMA bandwidth', 0.58x a plain "
           "copy on an Inf2 microbenchmark at 4 KiB a partition; NC-v3 up to 90% of DMA "
           "throughput from HBM)",
           0.01, 1});
    r.add({"core.dma.trigger_time", param_kind::time, "9ns",
           "time the issuing engine spends on one dma_trigger instruction (a control "
           "instruction of its sequencer)",
           "hardware-facts 1e (a satisfied EVENT_SEMAPHORE, a control instruction, took 9 ns)", 0,
           1e6});
}

dma_engine::dma_engine(const sc_core::sc_module_name& name, const config& cfg)
    : sc_core::sc_module(name),
      m_rmw_rate(cfg.real("core.dma.rmw_rate")),
      m_transpose_rate(cfg.real("core.dma.transpose_rate")),
      m_bytes_per_ns(cfg.bandwidth("core.dma.engine_bandwidth")),
      m_descriptor_ns(cfg.time_ns("core.dma.descriptor_cost")) {
    in.bind(*this);
    m_trans.set_extension(&m_ext);
}

dma_engine::~dma_engine() {
    m_trans.clear_extension(&m_ext);  // a payload frees the extensions it still holds
}

void dma_engine::set_timeline(timeline* t) {
    m_timeline = t;
    if (t) m_track = t->track(basename());
}

sc_core::sc_time dma_engine::service_time(std::uint64_t rows, std::uint64_t row_bytes) const {
    const double per_row =
        std::max(m_descriptor_ns, static_cast<double>(row_bytes) / m_bytes_per_ns);
    return ns(static_cast<double>(rows) * per_row);
}

void dma_engine::move_rows(tlm::tlm_command cmd, const operand& op, std::uint32_t row_begin,
                           std::uint32_t rows, std::uint8_t* data) {
    m_ext.initiator = initiator_id::dma;
    m_ext.rows = rows;
    m_ext.row_bytes = op.row_bytes();
    m_ext.row_stride = row_stride_of(op);
    m_trans.set_command(cmd);
    m_trans.set_address(address_of(op, row_begin));
    m_trans.set_data_ptr(data);
    m_trans.set_data_length(static_cast<unsigned>(rows * op.row_bytes()));
    out->transport_dbg(m_trans);
}

void dma_engine::move_transposed(const dma_job& job) {
    const dma_transfer& t = *job.transfer;
    // the chunk's columns of every source row, then each written as a row of dst
    operand cols = t.src;
    cols.offset += std::uint64_t{job.row_begin} * dtype_size(t.src.type);
    cols.elems = job.row_end - job.row_begin;
    const std::size_t ss = dtype_size(t.src.type), ds = dtype_size(t.dst.type);
    m_src.resize(std::size_t{t.src.partitions} * cols.elems * ss);
    move_rows(tlm::TLM_READ_COMMAND, cols, 0, t.src.partitions, m_src.data());
    m_dst.resize(std::size_t{cols.elems} * t.dst.elems * ds);
    const bool cast = t.src.type != t.dst.type && !is_mx(t.src.type) && !is_mx(t.dst.type);
    for (std::size_t r = 0; r < t.src.partitions; ++r)
        for (std::size_t c = 0; c < cols.elems; ++c) {
            const std::uint8_t* from = &m_src[(r * cols.elems + c) * ss];
            std::uint8_t* into = &m_dst[(c * t.dst.elems + r) * ds];
            if (cast)
                store_element(into, t.dst.type, load_element(from, t.src.type));
            else
                std::copy(from, from + ss, into);
        }
    move_rows(tlm::TLM_WRITE_COMMAND, t.dst, job.row_begin, cols.elems, m_dst.data());
}

void dma_engine::move_data(const dma_job& job) {
    const dma_transfer& t = *job.transfer;
    if (t.transpose) return move_transposed(job);
    const std::uint32_t rows = job.row_end - job.row_begin;
    m_src.resize(rows * t.src.row_bytes());
    move_rows(tlm::TLM_READ_COMMAND, t.src, job.row_begin, rows, m_src.data());
    std::vector<std::uint8_t>* out = &m_src;
    if (t.rmw == alu_op::add) {  // dst + src in fp32, in dst's dtype (the same as src's)
        const std::size_t n = std::size_t{rows} * t.src.elems, size = dtype_size(t.dst.type);
        m_dst.resize(rows * t.dst.row_bytes());
        move_rows(tlm::TLM_READ_COMMAND, t.dst, job.row_begin, rows, m_dst.data());
        for (std::size_t i = 0; i < n; ++i)
            store_element(&m_dst[i * size], t.dst.type,
                          load_element(&m_dst[i * size], t.dst.type) +
                              load_element(&m_src[i * size], t.src.type));
        out = &m_dst;
    } else if (t.src.type != t.dst.type && !is_mx(t.src.type) && !is_mx(t.dst.type)) {
        // the DMA casts through fp32 (an MX type moves as its bits, to or from an integer type
        // of its size: check_transfer)
        const std::size_t n = std::size_t{rows} * t.src.elems;
        m_dst.resize(rows * t.dst.row_bytes());
        const std::size_t ss = dtype_size(t.src.type), ds = dtype_size(t.dst.type);
        for (std::size_t i = 0; i < n; ++i)
            store_element(&m_dst[i * ds], t.dst.type, load_element(&m_src[i * ss], t.src.type));
        out = &m_dst;
    }
    move_rows(tlm::TLM_WRITE_COMMAND, t.dst, job.row_begin, rows, out->data());
}

void dma_engine::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
    serve(*trans.get_extension<dma_job>(), delay);
    trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

void dma_engine::record(const dma_job& job, const sc_core::sc_time& start,
                        const sc_core::sc_time& service) {
    const std::uint64_t bytes = (job.row_end - job.row_begin) * job.transfer->row_bytes();
    m_timeline->slice(
        m_track, "rows " + std::to_string(job.row_begin) + ".." + std::to_string(job.row_end - 1),
        start.to_seconds() * 1e9, service.to_seconds() * 1e9,
        "{\"bytes\":" + std::to_string(bytes) + "}");
}

void dma_engine::report(stats_tree& s, const std::string& prefix) const {
    report_port(s, prefix, m_port, "time moving rows",
                "chunks' time waiting for the engine (summed over chunks)");
}

}  // namespace trn
