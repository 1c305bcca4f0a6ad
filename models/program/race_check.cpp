#include "program/race_check.h"

#include <algorithm>
#include <array>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"

namespace trn {

namespace {

// One memory access of an event: partitions [p0, p1) x bytes [lo, hi) of an on-chip memory, or
// bytes [lo, hi) of HBM (p0 = p1 = 0).
struct access {
    std::uint32_t event;
    std::uint32_t p0, p1;
    std::uint64_t lo, hi;
    bool write;
};

constexpr std::uint64_t chip_granule = 64;  // on-chip allocation alignment
constexpr std::uint64_t hbm_granule = 512;

// Finds races by walking the program in an order consistent with its synchronisation (a linear
// extension of happens-before), with a vector clock per event: clock[s] = how many events of
// stream s are known to have completed when the event starts. Shadow memory keeps, per granule,
// the accesses not yet superseded by a later covering access ordered after them.
class race_finder {
  public:
    race_finder(const program& p, std::size_t max_reports)
        : m_p(p), m_streams(engine_count + p.queues.size()), m_max(max_reports) {
        std::size_t n = 0;
        for (auto e : all_engines) {
            m_first[std::size_t(e)] = n;
            n += p.engines[std::size_t(e)].size();
        }
        m_queue_first.resize(p.queues.size());
        for (std::size_t q = 0; q < p.queues.size(); ++q) {
            m_queue_first[q] = n;
            n += p.queues[q].size();
        }
        m_stream_of.resize(n);
        m_index_of.resize(n);
        for (std::size_t s = 0; s < m_streams; ++s) {
            const std::size_t first =
                s < engine_count ? m_first[s] : m_queue_first[s - engine_count];
            for (std::size_t i = 0; i < length(s); ++i) {
                m_stream_of[first + i] = static_cast<std::uint32_t>(s);
                m_index_of[first + i] = static_cast<std::uint32_t>(i);
            }
        }
        m_clock.assign(n * m_streams, 0);
        m_queue_done.assign(n * m_streams, 0);
    }

    std::vector<std::string> run() {
        std::vector<std::size_t> next(m_streams, 0), done(m_streams, 0);
        std::vector<std::vector<std::size_t>> triggers(m_p.queues.size());
        std::size_t remaining = m_stream_of.size();
        while (remaining > 0 && m_reports.size() < m_max) {
            bool progress = false;
            for (auto e : all_engines) {
                const std::size_t s = std::size_t(e);
                const auto& stream = m_p.engines[s];
                while (next[s] < stream.size()) {
                    const instruction& ins = stream[next[s]];
                    if (!std::all_of(ins.waits.begin(), ins.waits.end(), [&](const sem_wait& w) {
                            return w.sem < m_streams && done[w.sem] >= w.value;
                        }))
                        break;
                    const std::size_t ev = m_first[s] + next[s];
                    std::uint32_t* c = clock(ev);
                    if (next[s] > 0) join(c, clock(ev - 1));
                    for (const auto& w : ins.waits)
                        if (w.value > 0) join(c, done_clock(w.sem, w.value));
                    engine_accesses(ev, ins);
                    if (ins.op == opcode::dma_trigger && ins.queue < triggers.size())
                        triggers[ins.queue].push_back(ev);
                    ++next[s];
                    ++done[s];
                    --remaining;
                    progress = true;
                }
            }
            for (std::size_t q = 0; q < m_p.queues.size(); ++q) {
                const std::size_t s = engine_count + q;
                while (next[s] < triggers[q].size() && next[s] < m_p.queues[q].size()) {
                    const std::size_t ev = m_queue_first[q] + next[s];
                    std::uint32_t* c = clock(ev);
                    join(c, clock(triggers[q][next[s]]));
                    if (next[s] > 0) join(c, clock(ev - 1));
                    const dma_transfer& t = m_p.queues[q][next[s]];
                    operand_accesses(ev, t.src, false);
                    operand_accesses(ev, t.dst, true);
                    // Completions signal in order: q >= k + 1 means transfers 0..k are done.
                    std::uint32_t* d = m_queue_done.data() + ev * m_streams;
                    if (next[s] > 0) join(d, m_queue_done.data() + (ev - 1) * m_streams);
                    join(d, c);
                    d[s] = std::max<std::uint32_t>(d[s], static_cast<std::uint32_t>(next[s] + 1));
                    ++next[s];
                    ++done[s];
                    --remaining;
                    progress = true;
                }
            }
            // A cycle of waits: no schedule runs the rest, and the simulation reports it as a
            // deadlock naming every waiter; what was walked so far has been checked.
            if (!progress) break;
        }
        return m_reports;
    }

  private:
    std::size_t length(std::size_t s) const {
        return s < engine_count ? m_p.engines[s].size() : m_p.queues[s - engine_count].size();
    }
    std::uint32_t* clock(std::size_t ev) { return m_clock.data() + ev * m_streams; }
    void join(std::uint32_t* into, const std::uint32_t* from) const {
        for (std::size_t s = 0; s < m_streams; ++s)
            into[s] = std::max(into[s], from[s]);
    }
    // What is known once semaphore `sem` has counted `value` completions.
    const std::uint32_t* done_clock(sem_id sem, std::uint32_t value) {
        m_scratch.assign(m_streams, 0);
        if (sem < engine_count) {
            const std::size_t ev = m_first[sem] + value - 1;
            std::copy(clock(ev), clock(ev) + m_streams, m_scratch.begin());
        } else {
            const std::size_t ev = m_queue_first[sem - engine_count] + value - 1;
            std::copy(m_queue_done.data() + ev * m_streams,
                      m_queue_done.data() + (ev + 1) * m_streams, m_scratch.begin());
        }
        m_scratch[sem] = std::max(m_scratch[sem], value);
        return m_scratch.data();
    }
    // x happens before y (or shares its stream, whose order the hardware keeps).
    bool ordered(std::uint32_t x, std::uint32_t y) {
        const std::uint32_t sx = m_stream_of[x];
        if (sx == m_stream_of[y]) return true;
        return clock(y)[sx] >= m_index_of[x] + 1;
    }

    void engine_accesses(std::size_t ev, const instruction& ins) {
        if (ins.op == opcode::dma_trigger) return;
        if (!ins.indirect.empty()) {  // all the indexed tiles, and the offsets read
            for (const auto& t : ins.indirect)
                operand_accesses(ev, t.index, false);
            for (auto slot :
                 {operand_slot::src0, operand_slot::src1, operand_slot::src2, operand_slot::src3})
                operand_accesses(ev, ins.reach(slot), false);
            operand_accesses(ev, ins.reach(operand_slot::dst), true);
            operand_accesses(ev, ins.dst1, true);
            return;
        }
        for (const operand* op : {&ins.src0, &ins.src1, &ins.src2, &ins.src3})
            if (op->valid()) operand_accesses(ev, *op, false);
        // A matmul that accumulates reads its destination too; either way it writes it.
        operand_accesses(ev, ins.dst, true);
        if (ins.dst1.valid()) operand_accesses(ev, ins.dst1, true);
    }

    void operand_accesses(std::size_t ev, const operand& op, bool write) {
        if (!op.valid() || op.elems == 0) return;
        const auto e = static_cast<std::uint32_t>(ev);
        if (op.space == mem_space::hbm) {
            for (std::uint32_t r = 0; r < op.partitions && m_reports.size() < m_max; ++r) {
                const std::uint64_t lo = op.offset + r * op.row_stride;
                touch(m_hbm, {e, 0, 0, lo, lo + op.span_bytes(), write}, hbm_granule);
            }
            return;
        }
        const std::uint64_t lo = op.offset;
        touch(op.space == mem_space::sbuf ? m_sbuf : m_psum,
              {e, op.partition, op.partition + op.partitions, lo, lo + op.span_bytes(), write},
              chip_granule);
    }

    using shadow = std::unordered_map<std::uint64_t, std::vector<access>>;

    void touch(shadow& mem, const access& a, std::uint64_t granule) {
        const bool chip = &mem != &m_hbm;
        for (std::uint64_t g = a.lo / granule; g * granule < a.hi; ++g) {
            std::vector<access>& cell = mem[g];
            const std::uint64_t glo = std::max(a.lo, g * granule);
            const std::uint64_t ghi = std::min(a.hi, (g + 1) * granule);
            bool reported = false;
            for (const access& b : cell) {
                const bool overlap =
                    b.lo < ghi && glo < b.hi && (!chip || (b.p0 < a.p1 && a.p0 < b.p1));
                if (!overlap || !(a.write || b.write) || ordered(b.event, a.event)) continue;
                if (!reported && m_reports.size() < m_max &&
                    m_reported.insert({b.event, a.event}).second)
                    m_reports.push_back(
                        race_message(b, a, chip ? (&mem == &m_sbuf ? "sbuf" : "psum") : "hbm"));
                reported = true;
            }
            // Accesses covered by this one and ordered before it can no longer race with anything
            // that this one does not race with as well.
            cell.erase(std::remove_if(
                           cell.begin(), cell.end(),
                           [&](const access& b) {
                               const bool covered = a.lo <= std::max(b.lo, g * granule) &&
                                                    std::min(b.hi, (g + 1) * granule) <= a.hi &&
                                                    (!chip || (a.p0 <= b.p0 && b.p1 <= a.p1));
                               return covered && (a.write || !b.write) && ordered(b.event, a.event);
                           }),
                       cell.end());
            cell.push_back(a);
        }
    }

    std::string describe(std::size_t ev) const {
        const std::size_t s = m_stream_of[ev], i = m_index_of[ev];
        std::string where;
        if (m_p.origin) {
            const auto& lines = s < engine_count ? m_p.origin->engine_lines[s]
                                                 : m_p.origin->queue_lines[s - engine_count];
            if (i < lines.size()) where = m_p.origin->file + ":" + std::to_string(lines[i]) + " ";
        }
        if (s < engine_count)
            return where + "(" + engine_name(static_cast<engine_kind>(s)) + " instruction " +
                   std::to_string(i) + ", " + opcode_name(m_p.engines[s][i].op) + ")";
        return where + "(q" + std::to_string(s - engine_count) + " transfer " + std::to_string(i) +
               ")";
    }

    std::string race_message(const access& first, const access& second, const char* space) const {
        std::string mem = std::string(space) + " ";
        if (std::string(space) != "hbm")
            mem += "partitions " + std::to_string(std::max(first.p0, second.p0)) + ".." +
                   std::to_string(std::min(first.p1, second.p1) - 1) + ", ";
        mem += "bytes " + std::to_string(std::max(first.lo, second.lo)) + ".." +
               std::to_string(std::min(first.hi, second.hi) - 1);
        return "race: " + describe(first.event) + (first.write ? " writes " : " reads ") + mem +
               " and " + describe(second.event) + (second.write ? " writes" : " reads") +
               " them, with no wait ordering the two";
    }

    const program& m_p;
    std::size_t m_streams;
    std::size_t m_max;
    std::array<std::size_t, engine_count> m_first{};
    std::vector<std::size_t> m_queue_first;
    std::vector<std::uint32_t> m_stream_of, m_index_of;
    std::vector<std::uint32_t> m_clock;       // per event: clock at its start
    std::vector<std::uint32_t> m_queue_done;  // per transfer: clock once its queue counted it
    std::vector<std::uint32_t> m_scratch;
    shadow m_sbuf, m_psum, m_hbm;
    std::vector<std::string> m_reports;
    struct pair_hash {
        std::size_t operator()(const std::pair<std::uint32_t, std::uint32_t>& p) const {
            return std::hash<std::uint64_t>()((std::uint64_t{p.first} << 32) | p.second);
        }
    };
    std::unordered_set<std::pair<std::uint32_t, std::uint32_t>, pair_hash> m_reported;
};

}  // namespace

std::vector<std::string> find_races(const program& p, std::size_t max_reports) {
    if (max_reports == 0) return {};
    return race_finder(p, max_reports).run();
}

void check_no_races(const program& p) {
    const auto races = find_races(p, 1);
    if (!races.empty()) throw user_error(races.front());
}

}  // namespace trn
