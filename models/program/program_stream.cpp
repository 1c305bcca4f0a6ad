#include "program/program_stream.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/error.h"

namespace trn {

namespace {

thread_local program_stream* t_producing = nullptr;

}  // namespace

program_stream::program_stream(std::size_t queue_limit, instruction_check check_instruction,
                               transfer_check check_transfer)
    : m_queue_limit(queue_limit),
      m_check_instruction(std::move(check_instruction)),
      m_check_transfer(std::move(check_transfer)),
      m_queues(queue_limit) {}

program_stream::~program_stream() {
    stop_producer();
}

program_stream* program_stream::producing() {
    return t_producing;
}

void program_stream::count(const std::function<void()>& build) {
    if (m_counted) throw std::logic_error("program_stream counted twice");
    struct scope {
        program_stream& s;
        explicit scope(program_stream& st) : s(st) {
            t_producing = &s;
            s.m_counting = true;
        }
        ~scope() {
            t_producing = nullptr;
            s.m_counting = false;
        }
    } counting(*this);
    build();
    m_counted = true;
    for (const auto& l : m_engines)
        m_counted_total += l.total;
    for (const auto& l : m_queues)
        m_counted_total += l.total;
}

void program_stream::start(std::function<void()> produce) {
    if (!m_counted || m_produce || m_thread.joinable())
        throw std::logic_error("program_stream started before count(), or twice");
    m_produce = std::move(produce);
}

void program_stream::launch() {
    m_thread = std::thread([this] {
        t_producing = this;
        try {
            m_produce();
            m_complete = true;
        } catch (const cancelled&) {
        } catch (...) {
            m_error = std::current_exception();
        }
        t_producing = nullptr;
        std::unique_lock<std::mutex> lock(m_mutex);
        hand_over(lock, false);
        m_done = true;
        m_for_reader.notify_all();
    });
}

template <class T>
void program_stream::put(lane<T>& l, T&& item, std::uint32_t place, long id) {
    if (m_cancel.load(std::memory_order_relaxed)) throw cancelled{};
    if (l.emitted == l.total)
        throw std::logic_error(
            "program_stream: the kernel's second build emits more than its "
            "first");
    if (l.pending.items.empty()) l.pending.first = l.emitted;
    l.pending.items.push_back(std::move(item));
    l.pending.places.push_back(place);
    ++l.emitted;
    ++m_pending;
    ++m_produced;
    const std::uint64_t held = m_in_memory.fetch_add(1, std::memory_order_relaxed) + 1;
    m_most_held = std::max(m_most_held, held);
    if (m_pending >= batch || m_wanted.load(std::memory_order_relaxed) == id) {
        std::unique_lock<std::mutex> lock(m_mutex);
        hand_over(lock, true);
    }
}

void program_stream::put_instruction(engine_kind e, instruction&& ins, std::uint32_t place) {
    lane<instruction>& l = m_engines[std::size_t(e)];
    if (!m_counting) return put(l, std::move(ins), place, static_cast<long>(e));
    if (m_check_instruction) m_check_instruction(e, l.total, ins);
    m_sbuf_high_water = std::max(m_sbuf_high_water, sbuf_reach(ins));
    ++l.total;
}

void program_stream::put_transfer(std::size_t q, const dma_transfer& t, std::uint32_t place) {
    if (q >= m_queue_limit)
        throw user_error("program uses DMA queue " + std::to_string(q) + "; the platform has " +
                         std::to_string(m_queue_limit));
    lane<dma_transfer>& l = m_queues[q];
    if (!m_counting) return put(l, dma_transfer(t), place, static_cast<long>(engine_count + q));
    if (m_check_transfer) m_check_transfer(q, l.total, t);
    m_sbuf_high_water = std::max(m_sbuf_high_water, sbuf_reach(t));
    m_queues_used = std::max(m_queues_used, q + 1);
    ++l.total;
}

void program_stream::set_program(const program& p) {
    if (!m_counting) return;  // (the second build's is the same)
    m_sources.names = p.sources.names;
    m_regions = p.regions;
}

void program_stream::hand_over(std::unique_lock<std::mutex>& lock, bool may_wait) {
    auto move_pending = [](auto& l) {
        if (l.pending.items.empty()) return;
        l.ready.push_back(std::move(l.pending));
        l.pending = {};
        if (!l.spare.empty()) {  // a chunk the reader is done with, its memory kept
            l.pending = std::move(l.spare.back());
            l.spare.pop_back();
        }
    };
    for (auto& l : m_engines)
        move_pending(l);
    for (auto& l : m_queues)
        move_pending(l);
    m_held += m_pending;
    m_pending = 0;
    // The lane a reader waits for has an entry now: the producer need not run further for it.
    const long wanted = m_wanted.load();
    if (wanted >= 0 && !(wanted < static_cast<long>(engine_count)
                             ? m_engines[std::size_t(wanted)].ready.empty()
                             : m_queues[std::size_t(wanted) - engine_count].ready.empty()))
        m_wanted.store(-1);
    m_for_reader.notify_all();
    // Far enough ahead: wait until the simulation has taken some, or waits for a lane.
    while (may_wait && m_held >= look_ahead && m_wanted.load() < 0 && !m_cancel.load())
        m_for_producer.wait(lock);
    if (may_wait && m_cancel.load()) throw cancelled{};
}

template <class T>
bool program_stream::fetch(lane<T>& l, std::size_t i, long id, stream_window<T>& w) {
    if (i >= l.total) {  // the end of its stream (the counting build said where)
        m_in_memory.fetch_sub(l.reading.items.size(), std::memory_order_relaxed);
        l.reading = {};
        w = {};
        return false;
    }
    if (!m_thread.joinable() && !m_done && m_produce) launch();
    std::unique_lock<std::mutex> lock(m_mutex);
    for (;;) {
        if (!l.ready.empty()) {
            const std::size_t freed = l.reading.items.size();
            chunk<T> done = std::move(l.reading);
            l.reading = std::move(l.ready.front());
            l.ready.pop_front();
            // (its memory goes back to the producer: no allocation per chunk, on either side)
            done.items.clear();
            done.places.clear();
            if (done.items.capacity() > 0) l.spare.push_back(std::move(done));
            m_held -= l.reading.items.size();
            if (m_wanted.load() == id) m_wanted.store(-1);
            if (m_held < look_ahead / 2) m_for_producer.notify_one();
            m_in_memory.fetch_sub(freed, std::memory_order_relaxed);
            if (l.reading.first != i)
                throw std::logic_error("program_stream: entry " + std::to_string(i) +
                                       " fetched out of order");
            w = {l.reading.items.data(), l.reading.places.data(), l.reading.first,
                 l.reading.first + l.reading.items.size()};
            return true;
        }
        if (m_done) {
            m_in_memory.fetch_sub(l.reading.items.size(), std::memory_order_relaxed);
            l.reading = {};
            w = {};
            return false;
        }
        m_wanted.store(id);
        m_for_producer.notify_one();
        m_for_reader.wait(lock);
    }
}

bool program_stream::fetch_instruction(engine_kind e, std::size_t i,
                                       stream_window<instruction>& w) {
    return fetch(m_engines[std::size_t(e)], i, static_cast<long>(e), w);
}

bool program_stream::fetch_transfer(std::size_t q, std::size_t k, stream_window<dma_transfer>& w) {
    if (q >= m_queues.size()) return false;
    return fetch(m_queues[q], k, static_cast<long>(engine_count + q), w);
}

std::size_t program_stream::queue_count() const {
    return m_counted ? m_queues_used : m_queue_limit;
}

void program_stream::stop_producer() {
    if (!m_thread.joinable()) return;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_cancel.store(true);
        m_for_producer.notify_all();
    }
    m_thread.join();
}

void program_stream::end_of_run() {
    // A producer that has emitted everything is left to finish (what it does after its last
    // instruction may still fail, and that error is the run's); one still emitting is stopped
    // (the run ended early: a deadlock, which the core reports).
    bool emitted_all = true;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        for (const auto& l : m_engines)
            emitted_all &= l.emitted == l.total;
        for (const auto& l : m_queues)
            emitted_all &= l.emitted == l.total;
    }
    if (emitted_all && m_thread.joinable())
        m_thread.join();
    else
        stop_producer();
    if (m_error) std::rethrow_exception(m_error);
    if (!m_complete) return;  // (stopped: a deadlock, which the core reports)
    bool same = true;
    for (const auto& l : m_engines)
        same &= l.emitted == l.total;
    for (const auto& l : m_queues)
        same &= l.emitted == l.total;
    if (!same)
        throw std::logic_error(
            "program_stream: the kernel's second build emits less than its "
            "first");
}

}  // namespace trn
