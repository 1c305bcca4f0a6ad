#include "analysis/critical_path.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace trn {

std::string critical_path::bound() const {
    std::string best;
    double most = -1;
    for (const auto& [r, ns] : ns_by_resource)
        if (ns > most) {
            most = ns;
            best = r;
        }
    return best;
}

double critical_path::bound_pct() const {
    const std::string b = bound();
    return b.empty() || total_ns <= 0 ? 0 : 100.0 * ns_by_resource.at(b) / total_ns;
}

namespace {

// The resources time is attributed to, as indices while walking (names at the end): each
// engine running, each engine's shared ports, then the DMA and memory resources.
enum resource : std::size_t {
    port_base = engine_count,
    dma_fixed = 2 * engine_count,
    dma_engines,
    hbm,
    sbuf,
    psum,
    launch,
    sync,
    resource_count
};

std::string resource_name(std::size_t r) {
    if (r < engine_count) return engine_name(static_cast<engine_kind>(r));
    if (r < dma_fixed)
        return std::string(engine_name(static_cast<engine_kind>(r - port_base))) + " port";
    static const char* const names[] = {
        "dma fixed latency", "dma engines", "hbm", "sbuf", "psum", "launch", "sync"};
    return names[r - dma_fixed];
}

resource memory_resource(mem_space s) {
    return s == mem_space::hbm ? hbm : s == mem_space::sbuf ? sbuf : psum;
}

const instruction_activity& instruction_at(const activity_log& log, std::size_t e, std::size_t i) {
    const auto& r = log.instructions(e);
    if (!r.holds(i))
        throw std::logic_error("critical path: " + std::string(engine_name(engine_kind(e))) +
                               " instruction " + std::to_string(i) + " is not in the log");
    return r[i];
}

const transfer_activity& transfer_at(const activity_log& log, std::size_t q, std::size_t k) {
    const auto& r = log.transfers(q);
    if (!r.holds(k))
        throw std::logic_error("critical path: q" + std::to_string(q) + " transfer " +
                               std::to_string(k) + " is not in the log");
    return r[k];
}

// The source place of a step's event (0: none).
std::uint32_t place_of(const activity_log& log, const path_step& s) {
    return s.kind == path_step::instruction ? instruction_at(log, s.stream, s.index).place()
           : s.kind == path_step::transfer  ? transfer_at(log, s.stream, s.index).place()
                                            : 0u;
}

// One step of the walk back from `cur`: calls add(resource, from, to) for each stretch of time it
// gives cur's event (from < to, more than eps apart), and returns the step it leads to (the event
// that released cur's last; kind none where the walk ends).
template <class Add>
path_step walk_back(const activity_log& log, const path_step& cur, Add&& add) {
    const tick t = cur.arrival, eps = log.eps();
    const auto stretch = [&](std::size_t r, tick from, tick to) {
        if (to > from + eps) add(r, from, to);
    };
    if (cur.kind == path_step::instruction) {
        const std::size_t e = cur.stream, i = cur.index;
        const instruction_activity& a = instruction_at(log, e, i);
        // Committed after an earlier instruction of its engine: that one set the time.
        if (cur.through_semaphore && i > 0 && a.complete() > a.own_complete() + eps)
            return {path_step::instruction, true, cur.stream, i - 1, t};
        const std::size_t engine = e, port = port_base + e;
        // From ready to its start: its engine's own pipeline (busy with earlier instructions, or
        // loading its stationary), then queueing on a shared port.
        const tick begin = std::min(a.begin(), t);
        stretch(engine, begin, t);  // running
        if (i > 0 && a.free() > a.ready() + eps) {
            // Ready, but earlier instructions still held its engine: the previous one released
            // it (then its own lead, then perhaps a shared port).
            const tick from = std::min(a.free(), begin), lead = std::min(from + a.lead(), begin);
            stretch(engine, from, lead);
            stretch(port, lead, begin);
            return {path_step::instruction, false, cur.stream, i - 1, from};
        }
        const tick lead = std::min(a.ready() + a.lead(), begin);
        stretch(engine, a.ready(), lead);
        stretch(port, lead, begin);
        path_step next;
        if (a.waited(eps)) {  // a semaphore wait released it: the latest one
            if (a.has_releaser()) {
                const sem_id s = a.releaser_sem();
                next = s < engine_count
                           ? path_step{path_step::instruction, true, s, a.releaser_index(),
                                       a.released_at()}
                           : path_step{path_step::transfer, true, std::uint32_t(s - engine_count),
                                       a.releaser_index(), a.released_at()};
            }
            if (next.kind != path_step::none) stretch(sync, next.arrival, a.ready());
        } else if (i > 0) {  // program order: the previous instruction let it go
            next = {path_step::instruction, false, cur.stream, i - 1, a.reached()};
        } else {
            stretch(launch, log.launch_begin, a.reached());
        }
        return next;
    }
    const std::size_t q = cur.stream, k = cur.index;
    const transfer_activity& x = transfer_at(log, q, k);
    // Completed after an earlier transfer of its queue: that one set the time.
    if (k > 0 && t > x.own_end() + eps) return {path_step::transfer, true, cur.stream, k - 1, t};
    const std::size_t where =
        x.chunks_end() + eps >= x.memory_end() ? dma_engines : memory_resource(x.memory());
    stretch(where, std::min(x.started(), t), t);
    stretch(dma_fixed, x.rung(), std::min(x.started(), t));
    if (!x.has_trigger()) return {};
    // the trigger that rang for it
    return {path_step::instruction, false, std::uint32_t(x.trigger_engine()), x.trigger_index(),
            x.rung()};
}

constexpr std::size_t summary_every = 8192;  // records between summaries

}  // namespace

void path_sums::add(std::size_t r, std::uint32_t place, tick t) {
    if (by_resource.empty()) by_resource.assign(resource_count, 0);
    by_resource[r] += t;
    if (by_place.size() <= place) by_place.resize(place + 1);
    if (by_place[place].empty()) by_place[place].assign(resource_count, 0);
    by_place[place][r] += t;
}

void path_sums::add(const path_sums& o) {
    if (!o.by_resource.empty()) {
        if (by_resource.empty()) by_resource.assign(resource_count, 0);
        for (std::size_t r = 0; r < resource_count; ++r)
            by_resource[r] += o.by_resource[r];
    }
    if (by_place.size() < o.by_place.size()) by_place.resize(o.by_place.size());
    for (std::size_t p = 0; p < o.by_place.size(); ++p) {
        if (o.by_place[p].empty()) continue;
        if (by_place[p].empty()) by_place[p].assign(resource_count, 0);
        for (std::size_t r = 0; r < resource_count; ++r)
            by_place[p][r] += o.by_place[p][r];
    }
    steps += o.steps;
}

void activity_log::reset(std::size_t queues, bool summarise, double ns_per_tick) {
    m_instructions.assign(engine_count, {});
    m_transfers.assign(queues, {});
    m_rings.assign(queues, 0);
    m_held_transfers.assign(queues, {});
    m_summarise = summarise;
    m_ns_per_tick = ns_per_tick;
    m_eps = static_cast<tick>(std::llround(activity_eps_ns / ns_per_tick));
    m_events = m_held = m_most_held = 0;
    m_next_summary = summary_every;
    m_last = launch_end;
    m_last_event = {};
    m_summed.clear();
}

void activity_log::counted(tick complete, const path_step& event) {
    ++m_events;
    m_most_held = std::max(m_most_held, ++m_held);
    // The last completion; on a tie, the first event in (engine, queue; index) order.
    const auto earlier = [](const path_step& a, const path_step& b) {
        return a.kind != b.kind       ? a.kind < b.kind
               : a.stream != b.stream ? a.stream < b.stream
                                      : a.index < b.index;
    };
    if (complete > m_last || (complete == m_last && m_last_event.kind != path_step::none &&
                              earlier(event, m_last_event))) {
        m_last = complete;
        m_last_event = event;
    }
}

void activity_log::add_instruction(engine_kind e, instruction_activity a, const wait_list& waits,
                                   tick now) {
    if (a.waited(m_eps)) {
        tick latest = -1;
        for (const sem_wait& w : waits) {
            if (w.value == 0) continue;
            const std::size_t k = w.value - 1u;
            // (a record no longer held completed before `a` was reached: never the latest)
            tick released = -1;
            if (w.sem < engine_count) {
                if (m_instructions[w.sem].holds(k)) released = m_instructions[w.sem][k].complete();
            } else if (m_transfers[w.sem - engine_count].holds(k)) {
                released = m_transfers[w.sem - engine_count][k].done();
            }
            if (released > latest) {
                latest = released;
                a.set_releaser(w.sem, static_cast<std::uint32_t>(k), released);
            }
        }
    }
    auto& r = m_instructions[std::size_t(e)];
    const std::size_t i = r.end();
    r.push_back(a);
    counted(a.complete(), {path_step::instruction, true, std::uint32_t(e), i, 0});
    if (m_summarise && m_held >= m_next_summary) {
        summarise(now);
        m_next_summary = std::max(summary_every, 2 * m_held);
    }
}

void activity_log::add_transfer(std::size_t q, const transfer_activity& t) {
    auto& r = m_transfers[q];
    const std::size_t k = r.end();
    r.push_back(t);
    auto& held = m_held_transfers[q];
    if (!held.empty() && held.front().transfer == k) {
        if (held.front().has_trigger) r.back().set_trigger(held.front().engine, held.front().index);
        held.pop_front();
    }
    counted(t.done(), {path_step::transfer, true, std::uint32_t(q), k, 0});
}

void activity_log::note_held(std::size_t q, std::size_t k, tick rung) {
    if (q < m_held_transfers.size()) m_held_transfers[q].push_back({k, rung});
}

void activity_log::note_ring(std::size_t q, engine_kind e, std::size_t index) {
    if (q >= m_transfers.size()) return;
    const std::size_t k = m_rings[q]++;   // the k-th ring starts the k-th transfer
    if (k + 1 == m_transfers[q].end()) {  // (recorded as it was rung: the last)
        m_transfers[q].back().set_trigger(e, static_cast<std::uint32_t>(index));
    } else if (!m_held_transfers[q].empty() && m_held_transfers[q].back().transfer == k) {
        held_transfer& h = m_held_transfers[q].back();
        h.has_trigger = true;
        h.engine = e;
        h.index = static_cast<std::uint32_t>(index);
    }
}

void activity_log::summarise(tick now) {
    std::vector<path_step> frontier;
    std::vector<std::size_t> keep_i(engine_count), keep_t(m_transfers.size());
    if (!frontier_of(now, frontier, keep_i, keep_t)) return;
    prepare_walks();
    std::vector<std::pair<std::size_t, std::size_t>> chains;  // [first node, end)
    std::vector<long> frontier_node(frontier.size(), -1);
    if (!walk_chains(frontier, chains, frontier_node)) return;
    m_summed = sum_chains(frontier, chains, frontier_node);
    for (std::size_t e = 0; e < engine_count; ++e)
        m_held -= m_instructions[e].drop_before(keep_i[e]);
    for (std::size_t q = 0; q < m_transfers.size(); ++q)
        m_held -= m_transfers[q].drop_before(keep_t[q]);
}

bool activity_log::frontier_of(tick now, std::vector<path_step>& frontier,
                               std::vector<std::size_t>& keep_i, std::vector<std::size_t>& keep_t) {
    const auto nothing = [](std::size_t, tick, tick) {};
    // The frontier: the semaphore of an event that completes from now on (a later wait's last
    // release comes after its instruction was reached, now or later), and the step each
    // engine's last instruction leads to, entered at now or later (the same step for every
    // such arrival, unless the instruction waited for its engine to be freed after now: then
    // its predecessor's, in turn). Those records are kept.
    for (std::size_t e = 0; e < engine_count; ++e) {
        const auto& r = m_instructions[e];
        keep_i[e] = r.end();
        for (std::size_t i = r.end(); i-- > r.begin() && r[i].complete() >= now - m_eps;) {
            frontier.push_back(
                {path_step::instruction, true, std::uint32_t(e), i, r[i].complete()});
            keep_i[e] = i;
        }
        if (r.end() == r.begin()) continue;
        // (a successor that did not wait enters it at its `reached`, which may lie up to eps
        // before now: two times closer than eps are one)
        tick from = now - m_eps;
        for (std::size_t i = r.end() - 1;; --i) {
            keep_i[e] = std::min(keep_i[e], i);
            const instruction_activity& a = r[i];
            const tick hi = std::min(a.free(), a.begin()), lo = std::min(hi, from);
            if (i == 0 || a.free() <= a.ready() + m_eps || lo == hi) {
                const path_step at{path_step::instruction, false, std::uint32_t(e), i,
                                   std::max(from, a.begin())};
                frontier.push_back(walk_back(*this, at, nothing));
                break;
            }
            if (!r.holds(i - 1)) return false;  // (cannot happen: the records it needs are held)
            from = lo;
        }
    }
    // a held transfer, recorded later, leads to the instruction that rang for it
    for (const auto& held : m_held_transfers)
        for (const held_transfer& h : held)
            if (h.has_trigger)
                frontier.push_back(
                    {path_step::instruction, false, std::uint32_t(h.engine), h.index, h.rung});
    for (std::size_t q = 0; q < m_transfers.size(); ++q) {
        const auto& r = m_transfers[q];
        keep_t[q] = r.end();
        for (std::size_t k = r.end(); k-- > r.begin() && r[k].done() >= now - m_eps;) {
            frontier.push_back({path_step::transfer, true, std::uint32_t(q), k, r[k].done()});
            keep_t[q] = k;
        }
    }
    return true;
}

std::size_t activity_log::stream_of(const path_step& at) const {
    return at.kind == path_step::transfer ? engine_count + at.stream : std::size_t(at.stream);
}

std::size_t activity_log::first_held(const path_step& at) const {
    return at.kind == path_step::transfer ? m_transfers[at.stream].begin()
                                          : m_instructions[at.stream].begin();
}

std::uint32_t* activity_log::seen_slot(const path_step& at) {
    auto& v = m_seen_at[stream_of(at)][at.through_semaphore];
    const std::size_t base = first_held(at);
    return at.index >= base && at.index - base < v.size() ? &v[at.index - base] : nullptr;
}

long activity_log::seen_node(const path_step& at) {
    const std::uint32_t* n = seen_slot(at);
    if (!n || *n == 0) return -1;
    if (m_nodes[*n - 1].at == at) return static_cast<long>(*n - 1);
    const auto it = m_seen.find(at);
    return it == m_seen.end() ? -1 : static_cast<long>(it->second);
}

void activity_log::remember(const path_step& at, std::size_t node) {
    std::uint32_t* v = seen_slot(at);
    if (v && *v == 0)
        *v = static_cast<std::uint32_t>(node + 1);
    else
        m_seen.emplace(at, node);
}

const path_sums* activity_log::summed_step(const path_step& at) const {
    if (at.index >= first_held(at)) {
        const auto& marks = m_summed_at[stream_of(at)];
        const std::size_t i = at.index - first_held(at);
        if (i < marks.size() && !marks[i]) return nullptr;
    }
    return summed(at);
}

void activity_log::prepare_walks() {
    // Which held records have a summed step (most steps of the walks do not: a look-up only
    // where one may be).
    m_summed_at.assign(engine_count + m_transfers.size(), {});
    for (std::size_t s = 0; s < m_summed_at.size(); ++s)
        m_summed_at[s].assign(s < engine_count ? m_instructions[s].end() - m_instructions[s].begin()
                                               : m_transfers[s - engine_count].end() -
                                                     m_transfers[s - engine_count].begin(),
                              false);
    for (const auto& entry : m_summed) {
        const path_step& at = entry.first;
        if (at.kind == path_step::none || at.index < first_held(at)) continue;
        auto& marks = m_summed_at[stream_of(at)];
        if (at.index - first_held(at) < marks.size()) marks[at.index - first_held(at)] = true;
    }
    m_seen_at.resize(engine_count + m_transfers.size());
    for (std::size_t s = 0; s < m_seen_at.size(); ++s) {
        const std::size_t held =
            s < engine_count
                ? m_instructions[s].end() - m_instructions[s].begin()
                : m_transfers[s - engine_count].end() - m_transfers[s - engine_count].begin();
        for (auto& v : m_seen_at[s])
            v.assign(held, 0);
    }
}

bool activity_log::walk_chains(const std::vector<path_step>& frontier,
                               std::vector<std::pair<std::size_t, std::size_t>>& chains,
                               std::vector<long>& frontier_node) {
    // The walks back from the frontier, as chains of steps, each ending where an earlier chain
    // or a summed step (or the walk's end) is met: a step's time, then where it leads. Where
    // each step was met: per stream and entry mode, a node number (+1) by record index (the
    // first arrival met; a step met again at another arrival is looked up in m_seen).
    std::vector<summary_node>& nodes = m_nodes;
    std::vector<summary_stretch>& stretches = m_stretches;
    nodes.clear();
    stretches.clear();
    m_seen.clear();
    for (std::size_t f = 0; f < frontier.size(); ++f) {
        const std::size_t first = nodes.size();
        path_step cur = frontier[f];
        long from = -1;  // the node that leads to cur (-1: cur is the frontier step)
        const auto link = [&](long to) {
            (from < 0 ? frontier_node[f] : nodes[std::size_t(from)].next) = to;
        };
        const path_sums* ends = nullptr;
        for (;;) {
            if (cur.kind != path_step::none) {
                if (const long met = seen_node(cur); met >= 0) {
                    link(met);
                    nodes[std::size_t(met)].needed = true;
                    break;
                }
            }
            if (cur.kind == path_step::none || (ends = summed_step(cur))) break;
            if (nodes.size() > 2 * m_held + 2) return false;  // (cannot happen: a walk ends)
            const std::size_t n = nodes.size();
            remember(cur, n);
            link(static_cast<long>(n));
            const std::uint32_t place = place_of(*this, cur);
            nodes.push_back({cur, stretches.size(), 0, -1, nullptr, false});
            const path_step next = walk_back(*this, cur, [&](std::size_t r, tick from, tick to) {
                stretches.push_back(
                    {static_cast<std::uint8_t>(r), r == launch ? 0u : place, to - from});
            });
            nodes[n].count = stretches.size() - nodes[n].first;
            from = static_cast<long>(n);
            cur = next;
        }
        if (nodes.size() > first && nodes.back().next < 0) nodes.back().ends = ends;
        if (frontier_node[f] >= 0) nodes[std::size_t(frontier_node[f])].needed = true;
        chains.emplace_back(first, nodes.size());
    }
    return true;
}

std::unordered_map<path_step, path_sums, path_step_hash> activity_log::sum_chains(
    const std::vector<path_step>& frontier,
    const std::vector<std::pair<std::size_t, std::size_t>>& chains,
    const std::vector<long>& frontier_node) const {
    const std::vector<summary_node>& nodes = m_nodes;
    const std::vector<summary_stretch>& stretches = m_stretches;
    // The sums from each needed node back: each chain from its end, running, kept where needed
    // (a chain ends at an earlier chain's node, summed already, or at a summed step).
    std::unordered_map<std::size_t, path_sums> sums;
    for (const auto& [first, end] : chains) {
        if (first == end) continue;
        path_sums running;
        const summary_node& last = nodes[end - 1];
        if (last.next >= 0)
            running = sums.at(std::size_t(last.next));
        else if (last.ends)
            running = *last.ends;
        for (std::size_t n = end; n-- > first;) {
            for (std::size_t s = nodes[n].first; s < nodes[n].first + nodes[n].count; ++s)
                running.add(stretches[s].resource, stretches[s].place, stretches[s].t);
            ++running.steps;
            if (nodes[n].needed) sums.emplace(n, running);
        }
    }
    std::unordered_map<path_step, path_sums, path_step_hash> summed_now;
    for (std::size_t f = 0; f < frontier.size(); ++f) {
        const path_step& at = frontier[f];
        if (at.kind == path_step::none || summed_now.count(at)) continue;
        if (frontier_node[f] >= 0)
            summed_now.emplace(at, sums.at(std::size_t(frontier_node[f])));
        else if (const path_sums* before = summed(at))
            summed_now.emplace(at, *before);
    }
    return summed_now;
}

critical_path analyse_critical_path(const activity_log& log, std::size_t places,
                                    std::vector<critical_segment>* segments) {
    critical_path cp;
    const double ticks_per_ns = std::round(1.0 / log.ns_per_tick());  // (exact: 1000 for ps)
    const tick end = log.last_completion();
    path_step cur = log.last_event();
    cur.arrival = end;
    cur.through_semaphore = true;
    const auto in_ns = [&](tick t) { return static_cast<double>(t) / ticks_per_ns; };
    cp.total_ns = in_ns(end - log.launch_begin);
    path_sums total;              // exact: integer ticks, whatever order they are added in
    const path_step* now = &cur;  // the step whose time is being attributed
    auto add = [&](std::size_t r, tick from, tick to) {
        total.add(r, r == launch ? 0u : place_of(log, *now), to - from);
        if (!segments) return;
        std::string event = "the kernel launch";
        if (now->kind == path_step::instruction)
            event = std::string(engine_name(static_cast<engine_kind>(now->stream))) +
                    " instruction " + std::to_string(now->index);
        else if (now->kind == path_step::transfer)
            event = "q" + std::to_string(now->stream) + " transfer " + std::to_string(now->index);
        segments->push_back({resource_name(r), std::move(event), in_ns(from), in_ns(to)});
    };
    if (cur.kind == path_step::none) {
        if (end > log.launch_begin + log.eps()) add(launch, log.launch_begin, end);
    } else {
        // Every event is visited at most twice (through its semaphore, then in order): a bound
        // that only a malformed log could reach.
        for (std::size_t guard = 2 * log.events() + 2; cur.kind != path_step::none && guard > 0;
             --guard) {
            if (const path_sums* before = log.summed(cur)) {  // the rest, summed as it ran
                total.add(*before);
                break;
            }
            ++total.steps;
            cur = walk_back(log, cur, add);
        }
    }
    cp.steps = total.steps;
    for (std::size_t r = 0; r < total.by_resource.size(); ++r)
        if (total.by_resource[r] > 0)
            cp.ns_by_resource[resource_name(r)] = in_ns(total.by_resource[r]);
    if (places > 0) {  // (a place id past the program's names counts as none)
        cp.ns_by_place.resize(places + 1);
        std::vector<std::vector<tick>> rows(places + 1, std::vector<tick>(resource_count, 0));
        for (std::size_t at = 0; at < total.by_place.size(); ++at)
            for (std::size_t r = 0; r < total.by_place[at].size(); ++r)
                rows[at <= places ? at : 0][r] += total.by_place[at][r];
        for (std::size_t at = 0; at <= places; ++at)
            for (std::size_t r = 0; r < resource_count; ++r)
                if (rows[at][r] > 0) cp.ns_by_place[at][resource_name(r)] = in_ns(rows[at][r]);
    }
    return cp;
}

}  // namespace trn
