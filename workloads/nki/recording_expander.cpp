#include "workloads/nki/recording.h"

#include <algorithm>
#include <deque>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>

#include "core/error.h"

namespace trn {

namespace {

// One instance of a declaration: its logical tiles, each taken from the builder (next) the
// first time the instance uses it.
struct instance {
    std::vector<tile> tiles;
    std::vector<bool> taken;
    std::vector<bool> used;  // an operation has used the tile (next_copy)
};

struct decl_state {
    std::vector<std::size_t> ids;  // the builder's declarations
    bool declared = false;
    std::uint32_t buffers = 0;  // planned (0: direct allocation)
    std::size_t keep = 1;       // instances kept: 1 + the largest `back` that refers to one
    std::deque<instance> recent;
    // The declaration whose builder declarations this one's instances take (itself, or the
    // first member of its family: find_families), and, for a family's first member, the
    // loops its plan counts (the members' and one of as many trips as there are members).
    std::size_t owner = 0;
    std::vector<std::uint64_t> loops;
    bool rotates = false;        // a family, or blocks that rotate (planned as a tile in a loop)
    bool blocks_rotate = false;  // its blocks take the buffers of `group` tiles in turn
    std::int64_t group = 1;      // ... block b those of tile (b - group_c) mod group
    std::int64_t group_c = 0;
};

// Runs a recording's operations against a builder, iteration by iteration.
class expander {
  public:
    expander(const nki_recording& r, kernel_builder& kb)
        : m_r(r),
          m_kb(kb),
          m_index(r.loops, 0),
          m_decls(r.decls.size()),
          m_checked(r.ops.size(), false) {}

    program run() {
        match_loops();
        for (const auto& op : m_r.ops)
            for (const auto& t : op.tiles)
                m_decls[t.decl].keep = std::max<std::size_t>(m_decls[t.decl].keep, t.back + 1);
        for (std::size_t d = 0; d < m_decls.size(); ++d) {
            m_decls[d].owner = d;
            m_decls[d].loops = m_r.decls[d].loops;
        }
        collect_ops();
        find_families();
        find_rotating_blocks();
        for (const auto& t : m_r.tensors)
            m_tensors.push_back(t.input ? m_kb.input(t.name, t.elems, t.type, 0.0f, 1.0f, 0)
                                        : m_kb.output(t.name, t.elems, t.type));
        plan_phases();
        for (const auto& place : m_r.places)
            m_place_ids.push_back(m_kb.place_id(place));
        m_kb.set_reorder(true);  // (the compiler schedules an nl kernel's loop bodies)
        run_range(0, m_r.ops.size());
        return m_kb.finish();
    }

  private:
    // The end of every loop, and the loops around every operation (outermost first).
    void match_loops() {
        m_end.assign(m_r.ops.size(), 0);
        m_around.assign(m_r.ops.size(), {});
        std::vector<std::size_t> open;
        for (std::size_t i = 0; i < m_r.ops.size(); ++i) {
            const auto& op = m_r.ops[i];
            if (op.kind == nki_op_kind::end) {
                m_end[open.back()] = i;
                open.pop_back();
            }
            m_around[i] = open;
            if (op.kind == nki_op_kind::loop) open.push_back(i);
        }
        // a loop whose every operation is under one span of a loop around it (a part's copy of
        // an inner loop) runs only in that span: nothing of it, not even its iterations'
        // scheduling bodies, in the other parts' iterations
        m_guard.assign(m_r.ops.size(), {});
        for (std::size_t l = 0; l < m_r.ops.size(); ++l) {
            if (m_r.ops[l].kind != nki_op_kind::loop) continue;
            std::optional<std::vector<nki_span>> shared;
            for (std::size_t i = l + 1; i < m_end[l]; ++i) {
                const nki_op& op = m_r.ops[i];
                if (structural(op)) continue;
                if (!shared) {
                    shared = op.spans;
                    continue;
                }
                shared->erase(std::remove_if(shared->begin(), shared->end(),
                                             [&](const nki_span& a) {
                                                 return std::find(op.spans.begin(), op.spans.end(),
                                                                  a) == op.spans.end();
                                             }),
                              shared->end());
            }
            if (!shared) continue;
            // (only spans of the loops around it: its own and inner ones vary within it)
            for (const nki_span& sp : *shared)
                if (std::any_of(m_around[l].begin(), m_around[l].end(),
                                [&](std::size_t a) { return m_r.ops[a].loop == sp.loop; }))
                    m_guard[l].push_back(sp);
        }
    }

    // The innermost loop of several trips around operation i (its index; none: the top level).
    static constexpr std::size_t none = ~std::size_t{0};
    std::size_t home(std::size_t i) const {
        for (auto it = m_around[i].rbegin(); it != m_around[i].rend(); ++it)
            if (m_r.ops[*it].trips > 1) return *it;
        return none;
    }

    // Where operation i runs within one iteration of loop h (none: the kernel's top level): an
    // operation inside a loop of several trips nested in h counts as that whole loop. False
    // when i is not inside h.
    bool span_in(std::size_t i, std::size_t h, std::size_t& lo, std::size_t& hi) const {
        const auto& around = m_around[i];
        auto it = around.begin();
        if (h != none) {
            it = std::find(around.begin(), around.end(), h);
            if (it == around.end()) return false;
            ++it;
        }
        for (; it != around.end(); ++it)
            if (m_r.ops[*it].trips > 1) {
                lo = *it;
                hi = m_end[*it];
                return true;
            }
        lo = hi = i;
        return true;
    }

    // Each declaration's operations (those that declare an instance and those that use its
    // tiles), in order, and whether an instance outlives its loops' iterations (it is declared
    // in the first iteration only, or runs once in a loop of several trips, or replaces the
    // last instance's).
    void collect_ops() {
        m_ops_of.assign(m_r.decls.size(), {});
        m_across.assign(m_r.decls.size(), false);
        m_first_only.assign(m_r.decls.size(), false);
        for (std::size_t i = 0; i < m_r.ops.size(); ++i) {
            const auto& op = m_r.ops[i];
            auto add = [&](std::size_t d) {
                auto& v = m_ops_of[d];
                if (v.empty() || v.back() != i) v.push_back(i);
            };
            if (op.kind == nki_op_kind::declare) {
                add(op.loop);
                if (!op.when.empty() || (m_r.decls[op.loop].single && home(i) != none))
                    m_across[op.loop] = true;
                if (!op.when.empty()) m_first_only[op.loop] = true;
            }
            for (const auto& t : op.tiles)
                add(t.decl);
        }
    }

    // The loops (operation indices, outermost first) around every one of `ops` (not empty).
    // The operations on declaration d, which keeps several instances alive, in stretches that
    // each make their instances before using them and use none made before the stretch (the
    // declarations of an unrolled loop's iteration, then its uses): each stretch's instances
    // are alive in it alone. One stretch of all of them when they are not so.
    std::vector<std::vector<std::size_t>> kept_segments(std::size_t d) const {
        const auto& all = m_ops_of[d];
        std::vector<std::vector<std::size_t>> out;
        std::size_t made = 0, deepest = 0;
        bool using_ = false;
        auto close = [&]() { return made > deepest; };
        for (const std::size_t i : all) {
            const auto& op = m_r.ops[i];
            const bool declares = op.kind == nki_op_kind::declare && op.loop == d;
            if (declares && using_) {  // a new stretch: the last one's uses reach back too far?
                if (!close()) return {all};
                made = deepest = 0;
                using_ = false;
            }
            if (declares) {
                if (out.empty() || made == 0) out.emplace_back();
                std::size_t times = 1;
                for (const std::size_t l : m_around[i])
                    times *= static_cast<std::size_t>(m_r.ops[l].trips);
                made += times;
            } else {
                if (out.empty()) return {all};  // (used before any declaration: kept across)
                using_ = true;
                for (const auto& t : op.tiles)
                    if (t.decl == d) deepest = std::max<std::size_t>(deepest, t.back);
            }
            out.back().push_back(i);
        }
        if (!close()) return {all};
        return out;
    }

    // How many instances declaration d makes in one iteration of loop l (the op index of its
    // `loop`): its declarations inside l, each times the trips of the loops between l and it
    // (of the parts of l's body, `if=Ln@A:B`, the one that makes most).
    std::size_t made_per_iteration(std::size_t d, std::size_t l) const {
        std::size_t n = 0;
        std::map<std::pair<std::int64_t, std::int64_t>, std::size_t> in_part;
        for (std::size_t i = l + 1; i < m_end[l]; ++i) {
            const auto& op = m_r.ops[i];
            if (op.kind != nki_op_kind::declare || op.loop != d) continue;
            const auto& around = m_around[i];
            const auto at = std::find(around.begin(), around.end(), l);
            std::size_t times = 1;
            for (auto it = at == around.end() ? at : at + 1; it != around.end(); ++it)
                times *= static_cast<std::size_t>(m_r.ops[*it].trips);
            const nki_span* sp = part_span(op.spans, m_r.ops[l].loop);
            (sp ? in_part[{sp->lo, sp->hi}] : n) += times;
        }
        std::size_t most = 0;
        for (const auto& [range, made] : in_part)
            most = std::max(most, made);
        return n + most;
    }

    // The part of loop `loop` spans place an operation in: the widest on the loop (the
    // iterations of a part's first one only are a narrower span beside it), or none.
    static const nki_span* part_span(const std::vector<nki_span>& spans, std::uint32_t loop) {
        const nki_span* best = nullptr;
        for (const nki_span& sp : spans)
            if (sp.loop == loop && (!best || sp.hi - sp.lo > best->hi - best->lo)) best = &sp;
        return best;
    }

    // The loops around every one of `ops` (not empty), outermost first, as the loops around the
    // first of them: a loop whose body holds parts (`if=Ln@A:B`, iterations a mask cut alike)
    // holds a loop inside once per part, and those copies count as one loop.
    std::vector<std::size_t> loop_ids_around_all(const std::vector<std::size_t>& ops) const {
        std::vector<std::size_t> common = m_around[ops.front()];
        for (const std::size_t i : ops) {
            const auto& a = m_around[i];
            std::size_t k = 0;
            while (
                k < common.size() && k < a.size() &&
                (common[k] == a[k] || (k > 0 && copies_in_parts(common[k], a[k], common[k - 1]))))
                ++k;
            common.resize(k);
        }
        return common;
    }

    // Whether loops x and y (operation indices) are copies of one loop in two parts of loop
    // `outer`'s body: the same id, and every operation inside each under a span of `outer`,
    // the two spans apart.
    bool copies_in_parts(std::size_t x, std::size_t y, std::size_t outer) const {
        if (m_r.ops[x].loop != m_r.ops[y].loop) return false;
        // (each copy's part: the widest span on `outer` that all its operations share)
        const nki_span* px = part_span(m_guard[x], m_r.ops[outer].loop);
        const nki_span* py = part_span(m_guard[y], m_r.ops[outer].loop);
        return px && py && (px->hi <= py->lo || py->hi <= px->lo);
    }

    // A loop's bounds and marks, not an operation of the kernel's.
    static bool structural(const nki_op& op) {
        return op.kind == nki_op_kind::loop || op.kind == nki_op_kind::end ||
               op.kind == nki_op_kind::iteration || op.kind == nki_op_kind::order;
    }

    std::vector<std::size_t> loops_around_all(const std::vector<std::size_t>& ops) const {
        std::vector<std::size_t> common = m_around[ops.front()];
        for (const std::size_t i : ops) {
            const auto& a = m_around[i];
            std::size_t k = 0;
            while (k < common.size() && k < a.size() && common[k] == a[k])
                ++k;
            common.resize(k);
        }
        return common;
    }

    // Families: the declarations of one kernel line that the kernel's Python ran several times
    // within one iteration of their loop (or at the top level): a Python loop, nl.static_range
    // before NKI 0.7, a helper called again. The frontend records each run as a declaration
    // of its own ("k.py:19", "k.py:19#2", ...); the compiler sees straight-line code and gives
    // its instances buffers in turn, as it does a loop's (docs/nki.md, "How a kernel becomes a
    // program"). A family's members take the instances of one builder declaration in turn,
    // planned as a declaration in one more loop of as many trips as there are members. Members
    // form a family when each instance is dead before the one the rotation puts in its buffer
    // next: members run once each (one instance) and member k is dead before member k + B
    // begins, B the buffers (at least the policy's, which the plan may lower to what the
    // members keep alive), or members run in a loop and each is dead before the next begins.
    void find_families() {
        struct life {
            std::size_t h = none, first = none, last = 0;
            bool escapes = false;
        };
        std::vector<life> lives(m_r.decls.size());
        for (std::size_t d = 0; d < m_r.decls.size(); ++d) {
            life& l = lives[d];
            l.escapes = m_across[d];
            if (m_ops_of[d].empty()) continue;
            l.h = home(m_ops_of[d].front());
            for (const std::size_t i : m_ops_of[d]) {
                std::size_t lo = 0, hi = 0;
                if (!span_in(i, l.h, lo, hi)) {
                    l.escapes = true;
                    break;
                }
                l.first = std::min(l.first, lo);
                l.last = std::max(l.last, hi);
            }
        }
        auto base = [](const std::string& name) {
            const auto hash = name.rfind('#');
            if (hash == std::string::npos || hash + 1 == name.size()) return name;
            for (std::size_t k = hash + 1; k < name.size(); ++k)
                if (name[k] < '0' || name[k] > '9') return name;
            return name.substr(0, hash);
        };
        std::map<std::string, std::vector<std::size_t>> groups;
        for (std::size_t d = 0; d < m_r.decls.size(); ++d) {
            const nki_decl& nd = m_r.decls[d];
            const life& l = lives[d];
            if (!nd.offsets.empty() || l.escapes || l.first == none || m_decls[d].keep > 1)
                continue;
            std::ostringstream key;
            key << base(nd.name) << '\n'
                << int(nd.space) << ' ' << nd.partitions << ' ' << nd.elems << ' ' << int(nd.type)
                << ' ' << nd.count << ' ' << nd.blocked << ' ' << nd.single << ' ' << l.h;
            for (const auto t : nd.loops)
                key << ' ' << t;
            groups[key.str()].push_back(d);
        }
        for (auto& [key, members] : groups) {
            if (members.size() < 2) continue;
            std::stable_sort(members.begin(), members.end(), [&](std::size_t a, std::size_t b) {
                return lives[a].first < lives[b].first;
            });
            const std::size_t n = members.size();
            // the smallest B with member k dead before member k + B begins
            auto rotates_over = [&](std::size_t b) {
                for (std::size_t k = 0; k + b < n; ++k)
                    if (lives[members[k]].last >= lives[members[k + b]].first) return false;
                return true;
            };
            std::vector<std::uint64_t> loops = m_r.decls[members[0]].loops;
            loops.push_back(n);
            std::size_t keep = 1;
            if (m_r.decls[members[0]].single) {
                const std::size_t policy = m_kb.policy_buffers(m_kb.unrolled_trips(loops));
                while (keep <= policy && !rotates_over(keep))
                    ++keep;
                if (keep > policy) continue;
            } else if (!rotates_over(1)) {
                continue;
            }
            decl_state& owner = m_decls[members[0]];
            owner.keep = keep;
            owner.loops = loops;
            owner.rotates = true;
            for (const std::size_t d : members)
                m_decls[d].owner = members[0];
        }
    }

    // Block dimensions are logical: "the physical tiles may not be alive in the memory
    // simultaneously" (NKI Block Dimension Migration Guide). A tensor whose every use takes, in
    // each iteration of one loop, a group of blocks of its own needs no more physical tiles than
    // a group of tiles declared in that loop: its blocks take the buffers of the group's tiles in
    // turn. Each use's block index is then the same function of that loop's index and the
    // indices around it (the group's first block, never coming back to a group), plus an offset
    // in the group: a constant of its own (a loop the recording unrolled inside that one) and
    // what the loops inside it add (one block a group when there are none).
    void find_rotating_blocks() {
        for (std::size_t d = 0; d < m_r.decls.size(); ++d) {
            const nki_decl& nd = m_r.decls[d];
            decl_state& s = m_decls[d];
            std::vector<std::size_t> uses;
            std::size_t declared_at = none;
            for (const std::size_t i : m_ops_of[d])
                if (m_r.ops[i].kind != nki_op_kind::declare)
                    uses.push_back(i);
                else if (declared_at == none)
                    declared_at = i;
            // (a tile DMAs rewrite takes copies of its own, which shared buffers would not give)
            if (!nd.blocked || nd.count < 2 || !nd.offsets.empty() || uses.empty() ||
                s.owner != d || s.rotates || s.keep > 1 || nd.rewrite)
                continue;
            // the innermost loop of several trips around every use (a loop whose body holds
            // parts, `if=Ln@A:B`, holds a loop inside once per part: one loop, by its id)
            std::vector<std::size_t> common = loop_ids_around_all(uses);
            while (!common.empty() && m_r.ops[common.back()].trips < 2)
                common.pop_back();
            if (common.empty()) continue;
            const std::size_t l = common.back();
            bool declared_inside = false;
            for (const std::size_t u : uses) {
                const std::size_t lu = m_around[u][common.size() - 1];
                declared_inside =
                    declared_inside || (declared_at >= lu && declared_at <= m_end[lu]);
            }
            if (declared_inside) continue;
            std::map<std::uint32_t, std::uint64_t> trips;  // loop id -> trips, l and around it
            for (const std::size_t c : common)
                trips[m_r.ops[c].loop] = m_r.ops[c].trips;
            // the group's first block without its constant, the same in every use; the least
            // constant of the uses, and the largest block past it
            std::optional<nki_affine> first;
            std::int64_t least = 0, most = 0;
            bool ok = true;
            for (const std::size_t u : uses) {
                std::map<std::uint32_t, std::uint64_t> inside;  // the use's loops inside l
                for (const std::size_t a : m_around[u])
                    if (!trips.count(m_r.ops[a].loop)) inside[m_r.ops[a].loop] = m_r.ops[a].trips;
                for (const auto& t : m_r.ops[u].tiles) {
                    if (t.decl != d) continue;
                    nki_affine at{t.block.c, {}};
                    std::int64_t last = 0;  // the largest offset in the group
                    for (const auto& [loop, coef] : t.block.terms) {
                        const auto it = inside.find(loop);
                        if (it == inside.end())
                            at.terms.emplace_back(loop, coef);
                        else if (coef < 0)
                            ok = false;
                        else
                            last += coef * static_cast<std::int64_t>(it->second - 1);
                    }
                    least = first ? std::min(least, at.c) : at.c;
                    most = first ? std::max(most, at.c + last) : at.c + last;
                    if (!first) first = at;
                    ok = ok && at.terms == first->terms;
                }
            }
            ok = ok && first;
            const std::int64_t group = most - least + 1;
            for (std::size_t k = 0; ok && k < first->terms.size(); ++k)
                ok = first->terms[k].second % group == 0;
            ok = ok && injective(*first, trips, m_r.ops[l].loop, group - 1);
            if (!ok) continue;
            s.blocks_rotate = s.rotates = true;
            s.group = group;
            s.group_c = least;
            s.loops.clear();
            for (const std::size_t c : common)
                s.loops.push_back(m_r.ops[c].trips);
        }
    }

    // Whether c + sum coef * L takes values more than `apart` from each other at different
    // indices of the loops it names, every loop in `trips`, and moves with loop `with`.
    static bool injective(const nki_affine& a, const std::map<std::uint32_t, std::uint64_t>& trips,
                          std::uint32_t with, std::int64_t apart) {
        std::vector<std::pair<std::uint64_t, std::uint64_t>> terms;  // (|coef|, trips)
        bool moves = false;
        for (const auto& [loop, coef] : a.terms) {
            const auto it = trips.find(loop);
            if (it == trips.end() || coef == 0) return false;
            moves = moves || loop == with;
            terms.emplace_back(static_cast<std::uint64_t>(coef < 0 ? -coef : coef), it->second);
        }
        std::sort(terms.begin(), terms.end());
        auto reach = static_cast<std::uint64_t>(apart);  // the largest sum of the smaller terms
        for (const auto& [coef, n] : terms) {
            if (coef <= reach) return false;
            reach += coef * (n - 1);
        }
        return moves;
    }

    // The position of an operation's last run among those of others, for lifetimes: inside a
    // loop of several trips it runs again in the loop's last iteration, after every other
    // operation of the earlier ones, so it counts as the loop's end (unless it runs in the
    // loop's first iteration only).
    std::size_t last_run(std::size_t i) const {
        const auto& op = m_r.ops[i];
        for (const std::size_t l : m_around[i]) {  // outermost first
            const auto& loop = m_r.ops[l];
            const bool first_only =
                std::find(op.when.begin(), op.when.end(), loop.loop) != op.when.end();
            if (loop.trips > 1 && !first_only) return m_end[l];
        }
        return i;
    }

    // Where a phase boundary at operation i can go: outside every loop of several trips.
    std::size_t hoisted(std::size_t i, bool to_end) const {
        for (const std::size_t l : m_around[i])
            if (m_r.ops[l].trips > 1) return to_end ? m_end[l] : l;
        return i;
    }

    // Declarations whose lifetimes (first instance to last use) overlap, chained, are one
    // group; several groups are the builder's phases, each planned when it begins.
    void plan_phases() {
        std::vector<std::size_t> first(m_r.decls.size(), none), last(m_r.decls.size(), 0);
        for (std::size_t i = 0; i < m_r.ops.size(); ++i) {
            const auto& op = m_r.ops[i];
            auto use = [&](std::size_t member) {  // (a family's lifetime is its members')
                const std::size_t d = m_decls[member].owner;
                if (first[d] == none) first[d] = i;
                last[d] = std::max(last[d], last_run(i));
            };
            if (op.kind == nki_op_kind::declare) use(op.loop);
            for (const auto& t : op.tiles)
                use(t.decl);
        }
        std::vector<std::size_t> order;
        for (std::size_t d = 0; d < m_r.decls.size(); ++d)
            if (first[d] != none) order.push_back(d);
        std::stable_sort(order.begin(), order.end(),
                         [&](std::size_t a, std::size_t b) { return first[a] < first[b]; });
        struct group {
            std::size_t begin, end;
            std::vector<std::size_t> decls;
        };
        std::vector<group> groups;
        for (const std::size_t d : order) {
            const std::size_t end = std::max(first[d], last[d]);
            if (!groups.empty() && first[d] <= groups.back().end) {
                groups.back().end = std::max(groups.back().end, end);
                groups.back().decls.push_back(d);
            } else {
                groups.push_back({first[d], end, {d}});
            }
        }
        if (needs_sharing(groups)) {
            plan_shared(order);
            return;
        }
        if (groups.size() <= 1) {
            plan(order);
            return;
        }
        // A phase begins and ends outside the loops of several trips (each iteration would
        // otherwise begin it again): at their start and end. Where that makes two phases
        // overlap, a boundary falls in the middle of one iteration (the first only): that loop
        // must be recorded unrolled.
        std::size_t previous_end = 0;
        for (std::size_t g = 0; g < groups.size(); ++g) {
            const std::size_t begin = hoisted(groups[g].begin, false);
            if (g > 0 && begin <= previous_end) {
                const std::size_t at =
                    begin != groups[g].begin ? groups[g].begin : groups[g - 1].end;
                throw nki_unroll_request(m_r.ops[outermost_loop(at)].loop);
            }
            previous_end = hoisted(groups[g].end, true);
            m_phase_begin.emplace_back(begin, std::move(groups[g].decls));
            m_phase_end.push_back(previous_end);
        }
    }

    // The physical tiles of one instance of a declaration (its group's when its blocks rotate).
    std::uint32_t tiles_of(std::size_t d) const {
        return m_decls[d].blocks_rotate ? static_cast<std::uint32_t>(m_decls[d].group)
                                        : m_r.decls[d].count;
    }
    std::uint64_t aligned_bytes(std::size_t d) const {
        const nki_decl& nd = m_r.decls[d];
        return m_kb.aligned_bytes(nd.space, std::uint64_t{nd.elems} * dtype_size(nd.type));
    }

    // Whether some group of declarations with overlapping lifetimes does not fit in SBUF or
    // PSUM even with one buffer per tile (and the instances it keeps): then tiles whose
    // lifetimes do not overlap must share memory, as the compiler's allocator makes them.
    template <class Groups>
    bool needs_sharing(const Groups& groups) const {
        for (const auto& g : groups) {
            std::uint64_t need[2] = {0, 0};
            for (const std::size_t d : g.decls) {
                const nki_decl& nd = m_r.decls[d];
                if (!nd.offsets.empty()) continue;
                need[nd.space == mem_space::psum] +=
                    aligned_bytes(d) * tiles_of(d) * std::max<std::size_t>(1, m_decls[d].keep);
            }
            if (need[0] > m_kb.sbuf_free() || need[1] > m_kb.psum_free()) return true;
        }
        return false;
    }

    // Memory several tiles take in turn (plan_shared): `buffers` buffers of `bytes`.
    struct slot {
        mem_space space = mem_space::sbuf;
        std::uint64_t bytes = 0;
        std::uint32_t buffers = 1, least = 1;  // least: what its members keep alive
        std::vector<std::size_t> units;
        std::size_t reservation = none;
    };
    // The operations on one declaration's instances (one member of a family), with the loops
    // around all of them (chain: the multi-trip loops from the top, as operation indices).
    struct part {
        std::vector<std::size_t> chain, ops;
        std::map<std::size_t, std::pair<std::size_t, std::size_t>> spans;  // per loop C
        std::map<std::size_t, std::int64_t> pinned;  // loop -> the one iteration it is used in
    };
    // A declaration's lifetime (a family's: its members'), or one block's of a blocked one: its
    // parts in order of their first operation, and the furthest end of those up to each (their
    // stretches of the whole kernel).
    struct lifetime {
        std::vector<part> parts;
        std::vector<std::size_t> reach;
        std::size_t first = 0;  // where its first part begins
    };
    // A physical tile of a declaration's instances (block `block` of declaration `decl`, whose
    // lifetime is m_lives[life]).
    struct unit {
        std::size_t decl = 0, block = 0, life = 0;
        std::uint32_t buffers = 1;
        std::uint64_t offset = 0;  // where in its slot's buffers it lies (bytes per partition)
    };

    // Where a part's operations run within one iteration of loop c (none: the top level).
    std::pair<std::size_t, std::size_t> span_of(part& u, std::size_t c) {
        const auto it = u.spans.find(c);
        if (it != u.spans.end()) return it->second;
        std::size_t lo = none, hi = 0;
        for (const std::size_t i : u.ops) {
            std::size_t a = 0, b = 0;
            if (!span_in(i, c, a, b)) throw std::logic_error("a unit outside its loop");
            lo = std::min(lo, a);
            hi = std::max(hi, b);
        }
        return u.spans[c] = {lo, hi};
    }

    static constexpr std::uint64_t no_place = ~std::uint64_t{0};
    // The lowest byte of slot sl's buffers where unit un (of `bytes`) overlaps no unit of the
    // slot it is alive with, starting inside the slot (it may reach past its end, growing it);
    // no_place if there is none. Several small tiles so take the memory of a large one whose
    // lifetime is apart from theirs.
    std::uint64_t place_in(const unit& un, std::uint64_t bytes, const slot& sl) {
        std::vector<std::uint64_t> starts{0};
        for (const std::size_t other : sl.units)
            starts.push_back(m_units[other].offset + aligned_bytes(m_units[other].decl));
        std::sort(starts.begin(), starts.end());
        starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
        for (const std::uint64_t at : starts) {
            if (at >= sl.bytes && at > 0) break;
            bool ok = true;
            for (const std::size_t other : sl.units) {
                const unit& o = m_units[other];
                const std::uint64_t end = o.offset + aligned_bytes(o.decl);
                if (at < end && o.offset < at + bytes && !(ok = apart(un, o))) break;
            }
            if (ok) return at;
        }
        return no_place;
    }

    // Whether parts a and b are never alive together: in one iteration of the innermost loop
    // around both, their operations run apart.
    bool apart(part& a, part& b) {
        for (const auto& [loop, at] : a.pinned) {  // (used in different iterations of a loop)
            const auto it = b.pinned.find(loop);
            if (it != b.pinned.end() && it->second != at) return true;
        }
        std::size_t c = none;
        for (std::size_t k = 0; k < a.chain.size() && k < b.chain.size(); ++k) {
            if (a.chain[k] != b.chain[k]) break;
            c = a.chain[k];
        }
        const auto sa = span_of(a, c), sb = span_of(b, c);
        return sa.second < sb.first || sb.second < sa.first;
    }
    // Whether units a and b are never alive together: no part of one with a part of the other
    // (each instance alive in its own stretch of the kernel). Parts are in order of their
    // first operation; only those whose stretches of the whole kernel meet are compared.
    bool apart(const unit& ua, const unit& ub) {
        lifetime &a = m_lives[ua.life], &b = m_lives[ub.life];
        if (a.parts.empty() || b.parts.empty() || a.reach.back() < b.first ||
            b.reach.back() < a.first)
            return true;
        for (part& pa : a.parts) {
            const auto sa = span_of(pa, none);
            std::size_t j =
                static_cast<std::size_t>(std::upper_bound(b.parts.begin(), b.parts.end(), sa.second,
                                                          [&](std::size_t v, part& pb) {
                                                              return v < span_of(pb, none).first;
                                                          }) -
                                         b.parts.begin());
            while (j > 0 && b.reach[j - 1] >= sa.first) {
                part& pb = b.parts[--j];
                if (span_of(pb, none).second >= sa.first && !apart(pa, pb)) return false;
            }
        }
        return true;
    }

    // Whether operation i may use block b of declaration d (of blocks that rotate in groups: tile
    // b of the group, by the offset in the group, the loops that move the group left out). A
    // declaration uses none (a blocked tile is taken at its first use). Loops that move the
    // block index each past the reach of the smaller steps use exactly the blocks they step on,
    // and `pins` gets each such loop (its operation) and the iteration in which it uses b;
    // otherwise any block between the index's least and greatest values, and no pins.
    using pin_list = std::vector<std::pair<std::size_t, std::int64_t>>;
    bool touches_block(std::size_t i, std::size_t d, std::uint32_t b,
                       pin_list* pins = nullptr) const {
        if (m_r.ops[i].kind == nki_op_kind::declare) return false;
        const decl_state& s = m_decls[d];
        bool found = false;
        int refs = 0;
        if (pins) pins->clear();
        for (const auto& t : m_r.ops[i].tiles)
            for (const nki_tile_ref* r = &t; r; r = r->index.get()) {
                if (r->decl != d) continue;
                ++refs;
                std::int64_t lo = r->block.c, hi = r->block.c;
                if (s.blocks_rotate) lo = hi = r->block.c - s.group_c;
                const std::int64_t base = lo;
                struct step {
                    std::int64_t coef, trips;
                    std::size_t loop;
                };
                std::vector<step> steps;  // the loops of several trips that move it
                for (const auto& [loop, coef] : r->block.terms) {
                    if (s.blocks_rotate && coef % s.group == 0) continue;
                    std::int64_t trips = -1;
                    std::size_t op = none;
                    for (const std::size_t l : m_around[i])
                        if (m_r.ops[l].loop == loop) {
                            trips = std::int64_t(m_r.ops[l].trips);
                            op = l;
                        }
                    if (trips < 1) return true;  // (a loop not around it: any block)
                    (coef < 0 ? lo : hi) += coef * (trips - 1);
                    if (trips > 1) steps.push_back({coef, trips, op});
                }
                const std::int64_t v = std::int64_t{b};
                if (v < lo || v > hi) continue;
                std::sort(steps.begin(), steps.end(),
                          [](const step& x, const step& y) { return x.coef < y.coef; });
                bool exact = true;
                std::int64_t reach = 0;
                for (const step& st : steps) {
                    exact = exact && st.coef > reach;
                    reach += st.coef * (st.trips - 1);
                }
                if (!exact) {  // (steps that overlap: any block in the range, no pins)
                    found = true;
                    continue;
                }
                pin_list mine;
                std::int64_t rest = v - base;
                for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
                    const std::int64_t k = std::min(rest / it->coef, it->trips - 1);
                    rest -= k * it->coef;
                    mine.emplace_back(it->loop, k);
                }
                if (rest != 0) continue;  // (between the blocks it steps on)
                found = true;
                if (pins) *pins = mine;
            }
        if (pins && refs != 1) pins->clear();
        return found;
    }

    // Each declaration's operations by the instance they act on (a declaration operation makes
    // one; an operation acts on the latest), for declarations that keep one alive.
    std::vector<std::vector<std::vector<std::size_t>>> instance_ops() const {
        std::vector<std::vector<std::vector<std::size_t>>> out(m_r.decls.size());
        for (std::size_t i = 0; i < m_r.ops.size(); ++i) {
            const auto& op = m_r.ops[i];
            auto add = [&](std::size_t d) {
                auto& v = out[d];
                if (v.empty()) v.emplace_back();
                if (v.back().empty() || v.back().back() != i) v.back().push_back(i);
            };
            if (op.kind == nki_op_kind::declare) {
                auto& v = out[op.loop];
                if (v.empty() || !v.back().empty()) v.emplace_back();
                add(op.loop);
            }
            for (const auto& t : op.tiles)
                add(t.decl);
        }
        return out;
    }

    // The whole kernel's tiles in slots: a tile shares a slot with others whose lifetimes do
    // not overlap its own, at an offset past those alive with it (the compiler's allocator
    // "analyzes the memory dependency and allocates physical address to each tiles", NKI Block
    // Dimension Migration Guide), each with its own buffer count (its loops', as in plan()); slots'
    // buffers are then lowered, largest first, until the kernel fits. Taken only when the kernel
    // does not fit otherwise (needs_sharing); a tile placed where another was waits for that one's
    // accesses.
    // Plans the memory of declarations `decls`, whose tiles do not fit each in its own: the
    // lifetime of each tile (or block), then slots of memory the tiles whose lifetimes do not
    // overlap share, shrunk to fit, with a note for each declaration given fewer buffers.
    void plan_shared(const std::vector<std::size_t>& decls) {
        m_sharing = true;
        plan_lives(decls);
        place_units();
        fit_slots();
        note_shrunk();
    }

    // The lifetime of every tile (or block, of a blocked tensor whose blocks do not rotate) of
    // `decls` and its members, and the units (declaration, block) placed.
    void plan_lives(const std::vector<std::size_t>& decls) {
        // (a family's operations are its members'; a part is one instance a declaration
        // operation of the recording makes, or all of a declaration's when it keeps several)
        std::vector<std::vector<std::size_t>> members(m_r.decls.size());
        for (std::size_t d = 0; d < m_r.decls.size(); ++d)
            if (!m_ops_of[d].empty()) members[m_decls[d].owner].push_back(d);
        const auto instances = instance_ops();
        m_lives.clear();
        for (const std::size_t d : decls) {
            const nki_decl& nd = m_r.decls[d];
            if (!nd.offsets.empty() || members[d].empty()) continue;
            decl_state& s = m_decls[d];
            const std::uint32_t policy =
                nd.single && !s.rotates ? 1 : m_kb.policy_buffers(m_kb.unrolled_trips(s.loops));
            s.buffers = std::max({policy, static_cast<std::uint32_t>(s.keep), rewrite_floor(d)});
            // (the blocks of a blocked tensor that do not rotate each live from their first use
            // to their last, as a tile taken at its first use: those apart in time share; a
            // block nothing uses lives where the tensor is declared)
            bool kept_whole = s.keep > 1;
            for (const std::size_t m : members[d])
                kept_whole = kept_whole || m_decls[m].keep > 1;
            const bool by_block =
                nd.blocked && nd.count > 1 && !kept_whole && (!s.blocks_rotate || s.group > 1);
            const std::size_t first_life = m_lives.size();
            for (std::uint32_t b = 0; b < (by_block ? tiles_of(d) : 1); ++b) {
                lifetime life;
                for (const std::size_t m : members[d]) {
                    const bool whole = s.keep > 1 || m_decls[m].keep > 1;
                    for (const auto& ops : whole ? kept_segments(m) : instances[m]) {
                        if (auto pt = part_of(ops, d, m, b, by_block))
                            life.parts.push_back(std::move(*pt));
                    }
                }
                std::sort(life.parts.begin(), life.parts.end(), [&](part& x, part& y) {
                    return span_of(x, none).first < span_of(y, none).first;
                });
                for (std::size_t j = 0; j < life.parts.size(); ++j)
                    life.reach.push_back(
                        std::max(j ? life.reach[j - 1] : 0, span_of(life.parts[j], none).second));
                if (!life.parts.empty()) life.first = span_of(life.parts.front(), none).first;
                m_lives.push_back(std::move(life));
            }
            for (std::uint32_t b = 0; b < tiles_of(d); ++b) {
                m_units.push_back({d, b, by_block ? first_life + b : first_life, s.buffers, 0});
                m_unit_of[{d, b}] = m_units.size() - 1;
            }
        }
    }

    // One part of a lifetime: of instance `ops` of member m of declaration d (block b of it
    // alone, `by_block`): the operations that use it, the loops it is pinned to and the loops
    // it lives in one iteration of; none when nothing uses it or declares it.
    std::optional<part> part_of(const std::vector<std::size_t>& ops, std::size_t d, std::size_t m,
                                std::uint32_t b, bool by_block) {
        const decl_state& s = m_decls[d];
        part pt;
        std::map<std::size_t, std::int64_t> pins;  // (what every op agrees on)
        bool first_op = true;
        pin_list mine;
        for (const std::size_t i : ops) {
            if (by_block && !touches_block(i, m, b, &mine)) continue;
            if (!by_block) mine.clear();
            pt.ops.push_back(i);
            if (first_op) {
                pins.insert(mine.begin(), mine.end());
            } else {
                std::map<std::size_t, std::int64_t> both;
                for (const auto& pn : mine) {
                    const auto it = pins.find(pn.first);
                    if (it != pins.end() && it->second == pn.second) both.insert(pn);
                }
                pins.swap(both);
            }
            first_op = false;
        }
        // (an op outside a pinned loop uses the block in all its iterations)
        for (auto it = pins.begin(); it != pins.end();) {
            bool inside = true;
            for (const std::size_t i : pt.ops)
                inside = inside && i > it->first && i <= m_end[it->first];
            it = inside ? std::next(it) : pins.erase(it);
        }
        // (an instance made in a loop's first iteration alone is alive across
        // the loop: in every iteration of the loops it pins a block to, the
        // others' blocks are alive too)
        if (m_first_only[m]) pins.clear();
        pt.pinned = pins;
        if (pt.ops.empty()) {  // (a block nothing uses: where it is declared)
            for (const std::size_t i : ops)
                if (m_r.ops[i].kind == nki_op_kind::declare) pt.ops.push_back(i);
            if (pt.ops.empty()) return std::nullopt;
        }
        // (a tile of one buffer declared in a loop is alive in its own iteration,
        // even one a sequential loop inside carries; only an instance made in a
        // loop's first iteration alone lives across the loop; the instances a
        // declaration keeps alive live in one iteration of the loops in each of
        // whose iterations it makes at least as many)
        const std::size_t kept = std::max(s.keep, m_decls[m].keep);
        if (!m_first_only[m]) {
            pt.chain = loops_around_all(pt.ops);
            pt.chain.erase(std::remove_if(pt.chain.begin(), pt.chain.end(),
                                          [&](std::size_t l) {
                                              return m_r.ops[l].trips < 2 ||
                                                     (kept > 1 && made_per_iteration(m, l) < kept);
                                          }),
                           pt.chain.end());
        }
        return pt;
    }

    // Places each unit, largest first, in the slot it grows least (or one of its own).
    void place_units() {
        std::vector<std::size_t> order(m_units.size());
        for (std::size_t u = 0; u < order.size(); ++u)
            order[u] = u;
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
            return aligned_bytes(m_units[a].decl) > aligned_bytes(m_units[b].decl);
        });
        m_unit_slot.assign(m_units.size(), none);
        for (const std::size_t u : order) {
            unit& un = m_units[u];
            const std::uint64_t bytes = aligned_bytes(un.decl);
            const mem_space space = m_r.decls[un.decl].space;
            std::size_t best = none;
            std::uint64_t best_growth = 0, best_at = 0;
            for (std::size_t k = 0; k < m_slots.size(); ++k) {
                slot& sl = m_slots[k];
                if (sl.space != space) continue;
                const std::uint64_t at = place_in(un, bytes, sl);
                if (at == no_place) continue;
                const std::uint64_t growth =
                    std::max(sl.bytes, at + bytes) * std::max(sl.buffers, un.buffers) -
                    sl.bytes * sl.buffers;
                if (best == none || growth < best_growth) {
                    best = k;
                    best_growth = growth;
                    best_at = at;
                }
            }
            // (a slot of its own when that grows the memory less: a small tile of many
            // buffers in a large tile's slot would give all of the slot those buffers)
            if (best == none || bytes * un.buffers < best_growth) {
                best = m_slots.size();
                best_at = 0;
                m_slots.push_back({space, 0, 1, 1, {}, none});
            }
            slot& sl = m_slots[best];
            un.offset = best_at;
            sl.bytes = std::max(sl.bytes, best_at + bytes);
            sl.buffers = std::max(sl.buffers, un.buffers);
            sl.least = std::max<std::uint32_t>(sl.least,
                                               static_cast<std::uint32_t>(m_decls[un.decl].keep));
            sl.units.push_back(u);
            m_unit_slot[u] = best;
        }
    }

    // Takes buffers from the largest slots that have more than they need until each memory's
    // slots fit it; throws when they cannot.
    void fit_slots() {
        for (const mem_space space : {mem_space::sbuf, mem_space::psum}) {
            const std::uint64_t free =
                space == mem_space::sbuf ? m_kb.sbuf_free() : m_kb.psum_free();
            std::uint64_t total = 0;
            for (const slot& sl : m_slots)
                if (sl.space == space) total += sl.bytes * sl.buffers;
            while (total > free) {
                std::size_t pick = none;
                for (std::size_t k = 0; k < m_slots.size(); ++k)
                    if (m_slots[k].space == space && m_slots[k].buffers > m_slots[k].least &&
                        (pick == none || m_slots[k].bytes > m_slots[pick].bytes))
                        pick = k;
                if (pick == none) break;
                --m_slots[pick].buffers;
                total -= m_slots[pick].bytes;
            }
            if (total > free) throw_unfit(space, total, free);
        }
    }

    // Gives each declaration its slot's buffers, noting those that got fewer than they wanted.
    void note_shrunk() {
        std::vector<std::uint32_t> wanted(m_r.decls.size(), 0);
        for (std::size_t u = 0; u < m_units.size(); ++u) {
            decl_state& s = m_decls[m_units[u].decl];
            wanted[m_units[u].decl] = s.buffers;
            s.buffers = std::min(s.buffers, m_slots[m_unit_slot[u]].buffers);
        }
        for (std::size_t d = 0; d < wanted.size(); ++d)
            if (wanted[d] && m_decls[d].buffers < wanted[d])
                m_kb.note(std::string(mem_space_name(m_r.decls[d].space)) + " tile '" +
                          m_r.decls[d].name + "' rotates over " +
                          std::to_string(m_decls[d].buffers) + " buffer" +
                          (m_decls[d].buffers == 1 ? "" : "s") + ", not " +
                          std::to_string(wanted[d]) +
                          ": the kernel's tiles fit only so, tiles whose lifetimes do not "
                          "overlap sharing memory (the compiler's allocator does the same)");
        if (!m_units.empty())
            m_kb.note(
                "the kernel's tiles fit only with tiles whose lifetimes do not overlap "
                "sharing memory: a tile placed where another was waits for that one's "
                "accesses");
    }

    [[noreturn]] void throw_unfit(mem_space space, std::uint64_t total, std::uint64_t free) {
        std::vector<std::size_t> slots;
        for (std::size_t k = 0; k < m_slots.size(); ++k)
            if (m_slots[k].space == space) slots.push_back(k);
        std::stable_sort(slots.begin(), slots.end(), [&](std::size_t a, std::size_t b) {
            return m_slots[a].bytes * m_slots[a].buffers > m_slots[b].bytes * m_slots[b].buffers;
        });
        std::string names;
        std::size_t shown = 0;
        for (const std::size_t k : slots) {
            if (shown++ == 6) {
                names += ", ...";
                break;
            }
            const unit& u = m_units[m_slots[k].units.front()];
            names += std::string(shown > 1 ? ", " : "") + "'" + m_r.decls[u.decl].name + "'" +
                     (tiles_of(u.decl) > 1 ? "[" + std::to_string(u.block) + "]" : "") + " (" +
                     std::to_string(m_slots[k].buffers) + " x " + std::to_string(m_slots[k].bytes) +
                     " bytes)";
        }
        const unit& largest = m_units[m_slots[slots.front()].units.front()];
        const lifetime& life = m_lives[largest.life];
        throw nki_op_error(
            life.parts.empty() ? m_ops_of[largest.decl].front() : life.parts.front().ops.front(),
            std::string(mem_space_name(space)) +
                " allocation does not fit: the kernel's tiles "
                "need " +
                std::to_string(total) + " of " + std::to_string(free) +
                " bytes per partition with one buffer per tile (or what the kernel keeps alive), "
                "even with tiles whose lifetimes do not overlap sharing memory; alive together: " +
                names);
    }

    // The outermost loop of several trips around operation i (i is inside one).
    std::size_t outermost_loop(std::size_t i) const {
        for (const std::size_t l : m_around[i])
            if (m_r.ops[l].trips > 1) return l;
        throw std::logic_error("a phase boundary outside loops cannot overlap");
    }

    void plan(const std::vector<std::size_t>& decls) {
        std::vector<tile_request> requests;
        std::vector<std::size_t> automatic;
        for (const std::size_t d : decls) {
            const nki_decl& nd = m_r.decls[d];
            if (!nd.offsets.empty()) continue;
            automatic.push_back(d);
            const decl_state& s = m_decls[d];
            requests.push_back({nd.space, std::uint64_t{nd.elems} * dtype_size(nd.type),
                                tiles_of(d), nd.single && !s.rotates, s.loops});
        }
        const auto buffers = m_kb.plan_buffers(requests);
        for (std::size_t i = 0; i < automatic.size(); ++i) {
            decl_state& s = m_decls[automatic[i]];
            // The compiler keeps an instance the kernel still uses in a buffer of its own
            // (more buffers than the plan's, if the kernel keeps several alive); an isa
            // kernel's declarations have the buffers they have.
            s.buffers = m_r.style == kernel_style::nl
                            ? std::max({buffers[i], static_cast<std::uint32_t>(s.keep),
                                        rewrite_floor(automatic[i])})
                            : buffers[i];
        }
        fit(automatic, requests);
    }

    // When the plan, with the instances a kernel keeps, does not fit, rotation is reduced
    // (the largest tiles first, never below what the kernel keeps alive), as the compiler's
    // allocator would; each declaration left with fewer buffers than its loops ask for is
    // said in the build's notes. What still does not fit is the allocation's error.
    void fit(const std::vector<std::size_t>& automatic, const std::vector<tile_request>& requests) {
        for (const mem_space space : {mem_space::sbuf, mem_space::psum}) {
            const std::uint64_t free =
                space == mem_space::sbuf ? m_kb.sbuf_free() : m_kb.psum_free();
            auto per_buffer = [&](std::size_t i) {
                return m_kb.aligned_bytes(space, requests[i].bytes) * requests[i].count;
            };
            std::uint64_t total = 0;
            for (std::size_t i = 0; i < automatic.size(); ++i)
                if (requests[i].space == space)
                    total += per_buffer(i) * m_decls[automatic[i]].buffers;
            while (total > free) {
                std::size_t pick = automatic.size();
                for (std::size_t i = 0; i < automatic.size(); ++i) {
                    const decl_state& s = m_decls[automatic[i]];
                    if (requests[i].space == space &&
                        s.buffers > std::max<std::size_t>(1, s.keep) &&
                        (pick == automatic.size() || per_buffer(i) > per_buffer(pick)))
                        pick = i;
                }
                if (pick == automatic.size()) break;
                --m_decls[automatic[pick]].buffers;
                total -= per_buffer(pick);
            }
        }
        for (std::size_t i = 0; i < automatic.size(); ++i) {
            const tile_request& r = requests[i];
            const std::uint32_t want =
                r.single ? 1 : m_kb.policy_buffers(m_kb.unrolled_trips(r.loops));
            const std::uint32_t got = m_decls[automatic[i]].buffers;
            if (got < want)
                m_kb.note(std::string(mem_space_name(r.space)) + " tile '" +
                          m_r.decls[automatic[i]].name + "' rotates over " + std::to_string(got) +
                          " buffer" + (got == 1 ? "" : "s") + ", not " + std::to_string(want) +
                          ": the kernel's tiles fit only so (the compiler's allocator reduces "
                          "rotation the same way)");
        }
    }

    bool first_iteration(const std::vector<std::uint32_t>& loops) const {
        for (const std::uint32_t l : loops)
            if (m_index[l] != 0) return false;
        return true;
    }

    // Whether one of the builder's phases begins or ends inside loop l.
    bool phase_inside(std::size_t l) const {
        for (const auto& [at, decls] : m_phase_begin)
            if (at > l && at < m_end[l]) return true;
        for (const std::size_t at : m_phase_end)
            if (at >= l && at < m_end[l]) return true;
        return false;
    }

    bool in_spans(const std::vector<nki_span>& spans) const {
        for (const nki_span& sp : spans)
            if (m_index[sp.loop] < sp.lo || m_index[sp.loop] >= sp.hi) return false;
        return true;
    }

    void run_range(std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
            for (auto& [at, decls] : m_phase_begin)
                if (at == i) {
                    try {
                        m_kb.begin_phase();
                        plan(decls);
                    } catch (const std::exception& e) {
                        throw nki_op_error(i, e.what());
                    }
                }
            const nki_op& op = m_r.ops[i];
            if (op.kind == nki_op_kind::loop && !in_spans(m_guard[i]) && !phase_inside(i)) {
                i = m_end[i];
            } else if (op.kind == nki_op_kind::loop) {
                for (std::uint64_t k = 0; k < op.trips; ++k) {
                    m_index[op.loop] = static_cast<std::int64_t>(k);
                    m_kb.loop_iteration(op.trips);
                    run_range(i + 1, m_end[i]);
                }
                m_index[op.loop] = 0;
                m_kb.loop_iteration(op.trips);  // (what follows the loop: a body of its own)
                i = m_end[i];
            } else if (op.kind != nki_op_kind::end && first_iteration(op.when) &&
                       in_spans(op.spans)) {
                try {
                    m_kb.set_place(op.place ? m_place_ids[op.place - 1] : 0u);
                    // the platform's rules, checked on an operation's first expansion (its
                    // engines, NeuronCore version, memories and dtypes do not change with the
                    // loop's index)
                    m_kb.check_entries(!m_checked[i]);
                    m_checked[i] = true;
                    exec(op);
                    m_kb.check_entries(false);
                } catch (const nki_op_error&) {
                    throw;
                } catch (const std::exception& e) {
                    throw nki_op_error(i, e.what());
                }
            }
            for (const std::size_t at : m_phase_end)
                if (at == i) m_kb.end_phase();
        }
    }

    void declare(std::uint32_t d) {
        const nki_decl& nd = m_r.decls[m_decls[d].owner];  // (a family: its first member's)
        decl_state& o = m_decls[m_decls[d].owner];
        if (!o.declared) {
            if (!nd.offsets.empty()) {
                for (std::size_t b = 0; b < nd.offsets.size(); ++b) {
                    const std::uint32_t first = nd.first_partitions[b];
                    o.ids.push_back(m_kb.declare_tile_at(
                        nd.name + "@" + (first ? std::to_string(first) + ":" : std::string()) +
                            std::to_string(nd.offsets[b]),
                        nd.space, nd.partitions, nd.elems, nd.type, nd.offsets[b], 1, first));
                }
            } else if (m_sharing) {
                for (std::uint32_t b = 0; b < tiles_of(m_decls[d].owner); ++b) {
                    const std::size_t u = m_unit_of.at({m_decls[d].owner, b});
                    slot& sl = m_slots[m_unit_slot[u]];
                    if (sl.reservation == none)
                        sl.reservation =
                            m_kb.reserve("shared by " + nd.name, sl.space, sl.bytes, sl.buffers);
                    o.ids.push_back(m_kb.declare_tile_in(
                        tiles_of(m_decls[d].owner) > 1 ? nd.name + "[" + std::to_string(b) + "]"
                                                       : nd.name,
                        sl.reservation, nd.partitions, nd.elems, nd.type, o.buffers,
                        m_units[u].offset));
                }
            } else if (tiles_of(m_decls[d].owner) == 1) {
                o.ids.push_back(m_kb.declare_tile(nd.name, nd.space, nd.partitions, nd.elems,
                                                  nd.type, o.buffers));
            } else {
                o.ids = m_kb.declare_tile_array(nd.name, tiles_of(m_decls[d].owner), nd.space,
                                                nd.partitions, nd.elems, nd.type, o.buffers);
            }
            o.declared = true;
        }
        decl_state& s = m_decls[d];
        instance inst;
        inst.tiles.resize(nd.count);
        inst.taken.assign(nd.count, false);
        inst.used.assign(nd.count, false);
        s.recent.push_front(std::move(inst));
        if (s.recent.size() > s.keep) s.recent.pop_back();
        if (!nd.blocked) take(d, s.recent.front(), 0);
    }

    // The buffers at least of a declaration whose tiles DMAs rewrite whole (the compiler's
    // copies: compiler.nl_rewrite_buffers), 1 for any other.
    std::uint32_t rewrite_floor(std::size_t d) const {
        return m_r.style == kernel_style::nl && m_r.decls[d].rewrite
                   ? m_kb.opts().nl_rewrite_buffers
                   : 1;
    }

    std::size_t builder_decl(std::uint32_t d, std::size_t block) const {
        const nki_decl& nd = m_r.decls[d];
        const decl_state& o = m_decls[m_decls[d].owner];
        if (o.blocks_rotate) {
            const std::int64_t k = (static_cast<std::int64_t>(block) - o.group_c) % o.group;
            return o.ids[static_cast<std::size_t>(k < 0 ? k + o.group : k)];
        }
        return o.ids[nd.phys.empty() ? block : nd.phys[block]];
    }

    void take(std::uint32_t d, instance& inst, std::size_t block) {
        inst.tiles[block] = m_kb.next(builder_decl(d, block));
        inst.taken[block] = true;
    }

    tile resolve(const nki_tile_ref& ref) {
        decl_state& s = m_decls[ref.decl];
        if (ref.back >= s.recent.size())
            throw std::logic_error("tile of a declaration instance that does not exist yet");
        const bool direct = !m_r.decls[ref.decl].offsets.empty();  // its own bytes, always
        if (!direct && ref.back >= m_decls[s.owner].buffers)
            throw user_error("a tile of '" + m_r.decls[ref.decl].name + "' from " +
                             std::to_string(ref.back) +
                             " instances before the latest is used, but its declaration has " +
                             std::to_string(m_decls[s.owner].buffers) +
                             " buffer(s): later instances overwrote it (in an isa kernel each "
                             "declaration has one buffer: keep the tile in a declaration of its "
                             "own)");
        instance& inst = s.recent[ref.back];
        const std::int64_t b = ref.block.at(m_index);
        if (b < 0 || static_cast<std::uint64_t>(b) >= inst.tiles.size())
            throw std::logic_error("block index out of range");
        if (!inst.taken[std::size_t(b)]) take(ref.decl, inst, std::size_t(b));
        inst.used[std::size_t(b)] = true;
        const std::int64_t p0 = ref.p0.at(m_index), f0 = ref.f0.at(m_index);
        if (p0 < 0 || f0 < 0) throw std::logic_error("negative tile offset");
        if (!ref.extent)
            return kernel_builder::part(inst.tiles[std::size_t(b)], static_cast<std::uint32_t>(p0),
                                        ref.pc, static_cast<std::uint32_t>(f0), ref.fc, ref.es);
        // an indirect view: the indexed columns, then the view of fc elements over them
        tile view =
            kernel_builder::part(inst.tiles[std::size_t(b)], static_cast<std::uint32_t>(p0), ref.pc,
                                 static_cast<std::uint32_t>(f0), ref.extent, ref.es);
        const tile index = resolve(*ref.index);
        view.op.elems = ref.fc;
        view.extent = ref.extent;
        view.index = index.op;
        view.index_buffer = index.buffer;
        return view;
    }

    operand hbm(const nki_hbm_ref& h) const {
        const std::int64_t first = h.first.at(m_index);
        if (first < 0) throw std::logic_error("negative HBM offset");
        return m_kb.view(m_tensors[h.tensor], static_cast<std::uint64_t>(first), h.rows, h.elems,
                         h.row_stride);
    }

    // A DMA that rewrites dst's logical tile (all the kernel reads of it before its next write)
    // writes its next copy, which its later uses read: the write waits for that copy's readers,
    // not for the readers of the value before. Not the first use of the tile (it holds no value
    // yet), nor a tile of one buffer, of direct allocation, or whose kept instances or blocks
    // share the buffers.
    void next_copy(const nki_tile_ref& ref) {
        decl_state& s = m_decls[ref.decl];
        const decl_state& o = m_decls[s.owner];
        if (!m_r.decls[ref.decl].offsets.empty() || o.buffers < 2 || o.blocks_rotate ||
            o.keep > 1 || ref.back >= s.recent.size())
            return;
        const std::int64_t b = ref.block.at(m_index);
        instance& inst = s.recent[ref.back];
        if (b >= 0 && static_cast<std::uint64_t>(b) < inst.tiles.size() &&
            inst.used[std::size_t(b)])
            take(ref.decl, inst, std::size_t(b));
    }

    void exec(const nki_op& op) {
        auto t = [&](std::size_t i) { return resolve(op.tiles[i]); };
        if (op.rewrite) next_copy(op.tiles[0]);
        if (op.part) m_kb.next_transfer_part(op.part);
        if (op.cont) m_kb.next_instruction_continues();
        switch (op.kind) {
            case nki_op_kind::declare:
                declare(op.loop);
                break;
            case nki_op_kind::load:
                exec_load(op);
                break;
            case nki_op_kind::load_add:
                m_kb.load_add(t(0), m_tensors[op.hbm.tensor], hbm(op.hbm), op.priority);
                break;
            case nki_op_kind::gather:
                m_kb.gather(t(0), m_tensors[op.hbm.tensor], hbm(op.hbm), t(1));
                break;
            case nki_op_kind::load_at: {
                const tile offset = t(1);
                m_kb.load(t(0), m_tensors[op.hbm.tensor], hbm(op.hbm), 0, &offset);
                break;
            }
            case nki_op_kind::store_at: {
                const tile offset = t(1);
                m_kb.store(m_tensors[op.hbm.tensor], hbm(op.hbm), t(0), 0, &offset);
                break;
            }
            case nki_op_kind::store: {
                const operand dst = hbm(op.hbm);
                m_kb.store(m_tensors[op.hbm.tensor], dst, t(0), op.priority);
                break;
            }
            case nki_op_kind::copy:
                m_kb.copy(t(0), t(1));
                break;
            case nki_op_kind::dma:
                m_kb.sbuf_dma(t(0), t(1));
                break;
            case nki_op_kind::scatter:
                m_kb.scatter(m_tensors[op.hbm.tensor], hbm(op.hbm), t(0), t(1));
                break;
            case nki_op_kind::hbm_dma:
                m_kb.hbm_dma(m_tensors[op.hbm.tensor], hbm(op.hbm), m_tensors[op.hbm2.tensor],
                             hbm(op.hbm2));
                break;
            case nki_op_kind::barrier:
                if (op.tiles.empty())
                    m_kb.core_barrier(op.engine, m_tensors[op.hbm.tensor]);
                else
                    m_kb.core_barrier(op.engine, t(0));
                break;
            case nki_op_kind::sendrecv:
                m_kb.sendrecv(t(0), t(1));
                break;
            case nki_op_kind::matmul: {
                const bool acc = op.accumulate || (!op.fresh.empty() && !first_iteration(op.fresh));
                m_kb.matmul(t(0), t(1), t(2), acc, op.double_row, op.flags);
                break;
            }
            case nki_op_kind::matmul_mx: {
                const bool acc = op.accumulate || (!op.fresh.empty() && !first_iteration(op.fresh));
                m_kb.matmul_mx(t(0), t(1), t(2), t(3), t(4), acc);
                break;
            }
            case nki_op_kind::transpose:
                m_kb.transpose(t(0), t(1), op.flags);
                break;
            case nki_op_kind::instruction:
                exec_instruction(op);
                break;
            case nki_op_kind::print:
            case nki_op_kind::loop:
            case nki_op_kind::end:
                break;
            case nki_op_kind::iteration:
                m_kb.loop_iteration(op.trips);
                break;
            case nki_op_kind::order:  // (no_reorder blocks nest)
                m_kept_order += op.keeps_order ? 1 : -1;
                m_kb.set_reorder(m_kept_order <= 0);
                break;
        }
    }

    // A load: of the tensor's bytes read as the tile's dtype (`bits`), transposed, or a copy.
    void exec_load(const nki_op& op) {
        const tile dst = resolve(op.tiles[0]);
        operand src = hbm(op.hbm);
        if (op.bits) {  // the same bytes read as the tile's dtype
            if (src.row_bytes() != dst.op.row_bytes())
                throw user_error("a load of the bits of tensor " + m_tensors[op.hbm.tensor].name +
                                 " as another dtype: its rows are " +
                                 std::to_string(src.row_bytes()) + " bytes, the tile's " +
                                 std::to_string(dst.op.row_bytes()));
            src.type = dst.op.type;
            src.elems = dst.op.elems;
        }
        if (op.transpose) {
            if (src.partitions != dst.op.elems || src.elems != dst.op.partitions)
                throw user_error("a DMA transpose of tensor " + m_tensors[op.hbm.tensor].name +
                                 " of " + std::to_string(src.partitions) + " x " +
                                 std::to_string(src.elems) + " into a tile of " +
                                 std::to_string(dst.op.partitions) + " x " +
                                 std::to_string(dst.op.elems));
            m_kb.load_transposed(dst, m_tensors[op.hbm.tensor], src, op.priority);
            return;
        }
        m_kb.load(dst, m_tensors[op.hbm.tensor], src, op.priority);
    }

    // An engine instruction of the recording (an `ins` line), its tiles resolved.
    void exec_instruction(const nki_op& op) {
        instruction ins;
        ins.op = op.code;
        ins.alu = op.alu0;
        ins.alu1 = op.alu1;
        ins.imm = op.imm0;
        ins.imm1 = op.imm1;
        ins.imm2 = op.imm2;
        ins.imm3 = op.imm3;
        ins.func = op.func;
        ins.flags = op.flags;
        tile resolved[5];
        const tile* at[5] = {};
        for (std::size_t i = 0; i < 5; ++i)
            if (op.slots[i] >= 0) {
                resolved[i] = resolve(op.tiles[std::size_t(op.slots[i])]);
                at[i] = &resolved[i];
            }
        if (op.either && at[0] && at[1] && !at[4])
            m_kb.instruction_either(ins, *at[0], *at[1], at[2], at[3]);
        else
            m_kb.instruction_op(op.engine, ins, at[0], at[1], at[2], at[3], at[4]);
    }

    const nki_recording& m_r;
    kernel_builder& m_kb;
    int m_kept_order = 0;                    // open no_reorder blocks
    std::vector<std::int64_t> m_index;       // each loop's current index
    std::vector<std::uint32_t> m_place_ids;  // the program's id of each of the places
    std::vector<decl_state> m_decls;
    std::vector<hbm_tensor> m_tensors;
    std::vector<std::size_t> m_end;
    std::vector<std::vector<nki_span>> m_guard;  // a loop's spans (match_loops), by its index
    std::vector<std::vector<std::size_t>> m_around;
    std::vector<std::pair<std::size_t, std::vector<std::size_t>>> m_phase_begin;
    std::vector<std::size_t> m_phase_end;
    std::vector<bool> m_checked;  // each operation's entries checked (its first expansion)
    std::vector<std::vector<std::size_t>> m_ops_of;  // collect_ops
    std::vector<bool> m_across;
    std::vector<bool> m_first_only;  // declared in the first iteration of a loop only
    bool m_sharing = false;          // tiles take slots (plan_shared)
    std::vector<lifetime> m_lives;   // per declaration, or block of one (plan_shared)
    std::vector<unit> m_units;
    std::vector<std::size_t> m_unit_slot;
    std::vector<slot> m_slots;
    std::map<std::pair<std::size_t, std::size_t>, std::size_t> m_unit_of;  // (decl, block)
};

}  // namespace

program expand_recording(const nki_recording& r, kernel_builder& kb) {
    return expander(r, kb).run();
}

}  // namespace trn
