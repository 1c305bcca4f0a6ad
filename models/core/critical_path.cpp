#include "core/critical_path.h"

#include <algorithm>
#include <cmath>

namespace trn {

void activity_log::reset(std::size_t queues) {
    instructions.assign(engine_count, {});
    transfers.assign(queues, {});
    rings.assign(queues, {});
}

void activity_log::note_releaser(instruction_activity& a, const wait_list& waits) const {
    if (!a.waited()) return;
    double latest = -1;
    for (const sem_wait& w : waits) {
        if (w.value == 0) continue;
        const double released = w.sem < engine_count
                                    ? instructions[w.sem][w.value - 1u].complete()
                                    : transfers[w.sem - engine_count][w.value - 1u].done();
        if (released > latest) {
            latest = released;
            a.set_releaser(w.sem, w.value - 1u);
        }
    }
}

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

constexpr double eps = activity_eps;

// A time of the log (ns) in whole femtoseconds, and back.
std::int64_t in_fs(double ns) {
    return std::llround(ns * 1e6);
}
double fs_in_ns(std::int64_t fs) {
    return static_cast<double>(fs) / 1e6;
}

// A step of the walk: an instruction or a transfer, and the time its successor needed from it.
struct step {
    enum { none, instruction, transfer } kind = none;
    std::size_t stream = 0, index = 0;
    double arrival = 0;
    bool through_semaphore = false;  // reached through its semaphore (not program order)
};

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

}  // namespace

critical_path analyse_critical_path(const activity_log& log, std::size_t places,
                                    std::vector<critical_segment>* segments) {
    critical_path cp;
    step cur;
    double end = log.launch_end;
    std::size_t events = 0;
    for (std::size_t e = 0; e < log.instructions.size(); ++e)
        for (std::size_t i = 0; i < log.instructions[e].size(); ++i, ++events)
            if (log.instructions[e][i].complete() > end) {
                end = log.instructions[e][i].complete();
                cur = {step::instruction, e, i, end, true};
            }
    for (std::size_t q = 0; q < log.transfers.size(); ++q)
        for (std::size_t k = 0; k < log.transfers[q].size(); ++k, ++events)
            if (log.transfers[q][k].done() > end) {
                end = log.transfers[q][k].done();
                cur = {step::transfer, q, k, end, true};
            }
    cp.total_ns = end - log.launch_begin;
    // Time is summed exactly, in whole femtoseconds between the segments' ends, so that the
    // sums do not depend on the order they are taken in.
    std::int64_t spent[resource_count] = {};
    const bool placed = places > 0;
    std::vector<std::array<std::int64_t, resource_count>> by_place(
        placed ? places + 1 : 0, std::array<std::int64_t, resource_count>{});
    const step* now = &cur;  // the step whose time is being attributed
    auto place_of = [&](const step& s) -> std::uint32_t {
        const std::uint32_t at =
            s.kind == step::instruction ? log.instructions[s.stream][s.index].place()
            : s.kind == step::transfer  ? log.transfers[s.stream][s.index].place()
                                        : 0u;
        return at <= places ? at : 0u;
    };
    auto add = [&](std::size_t r, double from, double to) {
        if (to <= from + eps) return;
        const std::int64_t fs = in_fs(to) - in_fs(from);
        spent[r] += fs;
        if (placed) by_place[r == launch ? 0 : place_of(*now)][r] += fs;
        if (!segments) return;
        std::string event = "the kernel launch";
        if (now->kind == step::instruction)
            event = std::string(engine_name(static_cast<engine_kind>(now->stream))) +
                    " instruction " + std::to_string(now->index);
        else if (now->kind == step::transfer)
            event = "q" + std::to_string(now->stream) + " transfer " + std::to_string(now->index);
        segments->push_back({resource_name(r), std::move(event), from, to});
    };
    auto finish = [&] {
        for (std::size_t r = 0; r < resource_count; ++r)
            if (spent[r] > 0) cp.ns_by_resource[resource_name(r)] = fs_in_ns(spent[r]);
        cp.ns_by_place.resize(by_place.size());
        for (std::size_t at = 0; at < by_place.size(); ++at)
            for (std::size_t r = 0; r < resource_count; ++r)
                if (by_place[at][r] > 0)
                    cp.ns_by_place[at][resource_name(r)] = fs_in_ns(by_place[at][r]);
        return cp;
    };
    if (cur.kind == step::none) {
        add(launch, log.launch_begin, end);
        return finish();
    }
    // Every event is visited at most twice (through its semaphore, then in order): a bound
    // that only a malformed log could reach.
    for (std::size_t guard = 2 * events + 2; cur.kind != step::none && guard > 0; --guard) {
        ++cp.steps;
        const double t = cur.arrival;

        if (cur.kind == step::instruction) {
            const std::size_t e = cur.stream, i = cur.index;
            const instruction_activity& a = log.instructions[e][i];
            // Committed after an earlier instruction of its engine: that one set the time.
            if (cur.through_semaphore && i > 0 && a.complete() > a.own_complete() + eps) {
                cur = {step::instruction, e, i - 1, t, true};
                continue;
            }
            const std::size_t engine = e, port = port_base + e;
            // From ready to its start: its engine's own pipeline (busy with earlier
            // instructions, or loading its stationary), then queueing on a shared port.
            const double begin = std::min(a.begin(), t);
            add(engine, begin, t);  // running
            step next;
            if (i > 0 && a.free() > a.ready() + eps) {
                // Ready, but earlier instructions still held its engine: the previous one
                // released it (then its own lead, then perhaps a shared port).
                const double from = std::min(a.free(), begin),
                             lead = std::min(from + a.lead(), begin);
                add(engine, from, lead);
                add(port, lead, begin);
                cur = {step::instruction, e, i - 1, from, false};
                continue;
            }
            const double lead = std::min(a.ready() + a.lead(), begin);
            add(engine, a.ready(), lead);
            add(port, lead, begin);
            if (a.waited()) {  // a semaphore wait released it: the latest one
                if (a.has_releaser()) {
                    const sem_id s = a.releaser_sem();
                    const std::size_t k = a.releaser_index();
                    if (s < engine_count)
                        next = {step::instruction, s, k, log.instructions[s][k].complete(), true};
                    else
                        next = {step::transfer, s - engine_count, k,
                                log.transfers[s - engine_count][k].done(), true};
                }
                if (next.kind != step::none) add(sync, next.arrival, a.ready());
            } else if (i > 0) {  // program order: the previous instruction let it go
                next = {step::instruction, e, i - 1, a.reached(), false};
            } else {
                add(launch, log.launch_begin, a.reached());
            }
            cur = next;
        } else {
            const std::size_t q = cur.stream, k = cur.index;
            const transfer_activity& x = log.transfers[q][k];
            // Completed after an earlier transfer of its queue: that one set the time.
            if (k > 0 && t > x.own_end() + eps) {
                cur = {step::transfer, q, k - 1, t, true};
                continue;
            }
            const std::size_t where =
                x.chunks_end() + eps >= x.memory_end() ? dma_engines : memory_resource(x.memory());
            add(where, std::min(x.started(), t), t);
            add(dma_fixed, x.rung(), std::min(x.started(), t));
            if (k < log.rings[q].size()) {  // the trigger that rang for it
                const auto [e, j] = log.rings[q][k];
                cur = {step::instruction, static_cast<std::size_t>(e), j, x.rung(), false};
            } else {
                cur = {};
            }
        }
    }
    return finish();
}

}  // namespace trn
