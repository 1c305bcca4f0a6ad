#pragma once
#include <cstdint>
#include <vector>

#include "core/prefetch.h"
#include "program/program.h"

namespace trn {

// The entries of one stream that are in memory: entry i (begin <= i < end) is items[i - begin],
// from source place places[i - begin] (places null: none).
template <class T>
struct stream_window {
    const T* items = nullptr;
    const std::uint32_t* places = nullptr;
    std::size_t begin = 0, end = 0;

    bool holds(std::size_t i) const { return i >= begin && i < end; }
    const T& at(std::size_t i) const { return items[i - begin]; }
    std::uint32_t place(std::size_t i) const { return places ? places[i - begin] : 0u; }
    // Asks the processor to bring entry i into its cache, if held (a hint: it changes nothing).
    // A reader does so for its next entry while it works on this one: entries are written by
    // the producer well ahead of their use, and are rarely still in the cache when read.
    void prefetch(std::size_t i) const {
        if (holds(i)) trn::prefetch(items + (i - begin), sizeof(T));
    }
};

// Where a running program's instructions and transfers come from: each engine's and DMA queue's
// stream, read in order. A whole program in memory, or one delivered in pieces while it runs.
// Contract: fetch_*(s, i, w) is called with i the first entry of stream s not yet read; it
// returns false when the stream ends before i, else sets w to a window holding i (entries before
// i may be freed then: a reader keeps no reference to them). The other members are complete once
// every stream has ended.
class program_source {
  public:
    virtual ~program_source() = default;
    virtual bool fetch_instruction(engine_kind e, std::size_t i, stream_window<instruction>& w) = 0;
    virtual bool fetch_transfer(std::size_t q, std::size_t k, stream_window<dma_transfer>& w) = 0;
    // The DMA queues the program uses (its queue streams; at most the platform's).
    virtual std::size_t queue_count() const = 0;
    // Instructions plus transfers when known before the run (0: not known).
    virtual std::size_t size_hint() const = 0;
    // The names of its source places (the ids the windows give).
    virtual const program_sources& sources() const = 0;
    // Its HBM regions, and the highest SBUF byte (offset + row bytes) its operands reach.
    virtual const std::vector<hbm_region>& regions() const = 0;
    virtual std::uint64_t sbuf_high_water() const = 0;
    // Called once the simulation has stopped, before the rest is read: a source still producing
    // stops, and throws what its production threw.
    virtual void end_of_run() {}
};

// The highest SBUF byte (offset + row bytes) an operand reaches (0: not in SBUF).
inline std::uint64_t sbuf_reach(const operand& o) {
    return o.valid() && o.space == mem_space::sbuf ? o.offset + o.row_bytes() : 0;
}
std::uint64_t sbuf_reach(const instruction& ins);
std::uint64_t sbuf_reach(const dma_transfer& t);

// A whole program as a source (it must outlive the source).
class whole_program : public program_source {
  public:
    explicit whole_program(const program& p);
    bool fetch_instruction(engine_kind e, std::size_t i, stream_window<instruction>& w) override;
    bool fetch_transfer(std::size_t q, std::size_t k, stream_window<dma_transfer>& w) override;
    std::size_t queue_count() const override { return m_program.queues.size(); }
    std::size_t size_hint() const override { return m_program.instruction_count(); }
    const program_sources& sources() const override { return m_program.sources; }
    const std::vector<hbm_region>& regions() const override { return m_program.regions; }
    std::uint64_t sbuf_high_water() const override { return m_sbuf_high_water; }

  private:
    // A stream's place ids, one per entry (null: the stream has none).
    const std::uint32_t* places(const std::vector<std::uint32_t>& ids, std::size_t count);

    const program& m_program;
    std::vector<std::vector<std::uint32_t>> m_padded;  // place lists shorter than their stream
    std::uint64_t m_sbuf_high_water = 0;
};

}  // namespace trn
