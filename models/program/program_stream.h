#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "program/program_source.h"

namespace trn {

// A program built while it runs, so that memory stays flat in the kernel's length. The kernel is
// built twice: first counted (count(): each entry checked and counted, none kept), so that the
// simulation knows where each stream ends, then produced (start(): on a thread of its own, while
// the simulation reads the entries as a program_source, each freed once its engine or queue has
// moved past it). The producer runs ahead of the simulation by a bounded number of entries
// (look-ahead), further only while a stream the simulation waits for has nothing yet: a stream
// with a long stretch of the program without entries for it keeps that stretch in memory.
// Contract: both builds emit the same entries in the same order (put_instruction, put_transfer;
// end_of_run() says so when they did not); the producer thread touches nothing the simulation
// does (it builds from the config, which the simulation does not read, and reads only keys the
// counting build read already); each entry is checked alone (the counting build's checks), not
// the program as a whole (validate_program: the builder orders its waits); what it throws is
// thrown again by end_of_run(), which the core calls when the simulation stops (it also stops a
// producer the simulation left behind, at a deadlock). The stream outlives the run.
class program_stream : public program_source {
  public:
    // Checks one entry as it is emitted (its stream's index given), throwing user_error.
    using instruction_check = std::function<void(engine_kind, std::size_t, const instruction&)>;
    using transfer_check = std::function<void(std::size_t, std::size_t, const dma_transfer&)>;

    // `queue_limit`: the platform's DMA queues (a put_transfer beyond them is refused).
    program_stream(std::size_t queue_limit, instruction_check check_instruction,
                   transfer_check check_transfer);
    ~program_stream() override;
    program_stream(const program_stream&) = delete;
    program_stream& operator=(const program_stream&) = delete;

    // Runs `build` on this thread, counting and checking its entries (they are not kept); what
    // it throws, it throws.
    void count(const std::function<void()>& build);
    // After count(): `produce` (the same build) runs on the producer thread, started when the
    // simulation first reads (once).
    void start(std::function<void()> produce);
    // The stream the calling thread builds for, while it runs count()'s or start()'s function
    // (else null), and whether that is the counting build.
    static program_stream* producing();
    bool counting() const { return m_counting; }

    // Producer side.
    void put_instruction(engine_kind e, instruction&& ins, std::uint32_t place);
    void put_transfer(std::size_t q, const dma_transfer& t, std::uint32_t place);
    // The rest of the program once every entry is emitted: its source places' names and its
    // regions (`p`'s streams are not read).
    void set_program(const program& p);

    // Simulation side.
    bool fetch_instruction(engine_kind e, std::size_t i, stream_window<instruction>& w) override;
    bool fetch_transfer(std::size_t q, std::size_t k, stream_window<dma_transfer>& w) override;
    // The DMA queues the program uses (once counted; the platform's before).
    std::size_t queue_count() const override;
    std::size_t size_hint() const override { return m_counted_total; }  // (once counted)
    const program_sources& sources() const override { return m_sources; }
    const std::vector<hbm_region>& regions() const override { return m_regions; }
    std::uint64_t sbuf_high_water() const override { return m_sbuf_high_water; }
    void end_of_run() override;

    // Entries produced, and the most held in memory at once (emitted and not yet run past).
    std::uint64_t produced() const { return m_produced; }
    std::uint64_t most_held() const { return m_most_held; }

    // How far ahead the producer runs, in entries (look-ahead), and the entries it emits
    // before handing them over (one batch).
    static constexpr std::size_t look_ahead = 4096, batch = 512;

  private:
    template <class T>
    struct chunk {
        std::vector<T> items;
        std::vector<std::uint32_t> places;
        std::size_t first = 0;
    };
    template <class T>
    struct lane {
        chunk<T> pending;             // emitted, not handed over (producer's)
        std::deque<chunk<T>> ready;   // handed over (under m_mutex)
        chunk<T> reading;             // the simulation's (its window points into it)
        std::vector<chunk<T>> spare;  // read, kept for reuse (under m_mutex)
        std::size_t emitted = 0;      // entries emitted so far
        std::size_t total = 0;        // entries the counting build emitted
    };
    struct cancelled {};  // unwinds a producer the run no longer needs

    // A lane's id: engines first, then queues.
    template <class T>
    void put(lane<T>& l, T&& item, std::uint32_t place, long id);
    template <class T>
    bool fetch(lane<T>& l, std::size_t i, long id, stream_window<T>& w);
    // Pending entries to the reader (m_mutex held); then, with `may_wait`, waits while the
    // producer is far enough ahead.
    void hand_over(std::unique_lock<std::mutex>& lock, bool may_wait);
    void launch();  // the producer thread, at the first fetch
    void stop_producer();

    std::size_t m_queue_limit;
    instruction_check m_check_instruction;
    transfer_check m_check_transfer;
    std::array<lane<instruction>, engine_count> m_engines;
    std::vector<lane<dma_transfer>> m_queues;
    std::size_t m_queues_used = 0;
    std::size_t m_pending = 0;  // entries in the lanes' pending chunks (producer's)

    std::mutex m_mutex;
    std::condition_variable m_for_producer, m_for_reader;
    std::size_t m_held = 0;  // handed over and not yet taken by a reader (under m_mutex)
    // The lane a reader waits on (engines first, then queues; none: -1): the producer hands
    // over as soon as it has an entry for it.
    std::atomic<long> m_wanted{-1};
    bool m_done = false;                // the producer returned (under m_mutex)
    std::atomic<bool> m_cancel{false};  // the run stopped: the producer unwinds
    std::exception_ptr m_error;         // what the producer threw
    std::function<void()> m_produce;
    std::thread m_thread;
    bool m_counting = false;          // count() is running
    bool m_counted = false;           // count() has run
    bool m_complete = false;          // the producer emitted the whole program
    std::size_t m_counted_total = 0;  // entries the counting build emitted

    program_sources m_sources;
    std::vector<hbm_region> m_regions;
    std::uint64_t m_sbuf_high_water = 0;
    std::uint64_t m_produced = 0, m_most_held = 0;
    std::atomic<std::uint64_t> m_in_memory{0};  // emitted and not yet run past
};

}  // namespace trn
