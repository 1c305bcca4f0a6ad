#include "workloads/nki/recording.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>

#include "core/error.h"

namespace trn {

namespace {

// Reading the text form. Every mistake is the frontend's (it writes the text), so it throws
// std::invalid_argument naming the line.
class reader {
  public:
    explicit reader(std::size_t line) : m_line(line) {}

    [[noreturn]] void fail(const std::string& why) const {
        throw std::invalid_argument("recording line " + std::to_string(m_line) + ": " + why);
    }

    std::int64_t integer(const std::string& s) const {
        if (s.empty()) fail("empty number");
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(s.c_str(), &end, 10);
        if (errno || *end) fail("bad integer '" + s + "'");
        return v;
    }

    std::uint64_t count(const std::string& s) const {
        const std::int64_t v = integer(s);
        if (v < 0) fail("negative count '" + s + "'");
        return static_cast<std::uint64_t>(v);
    }

    float real(const std::string& s) const {
        errno = 0;
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || *end) fail("bad number '" + s + "'");
        return static_cast<float>(v);
    }

    std::vector<std::string> split(const std::string& s, char sep) const {
        std::vector<std::string> out;
        std::string part;
        std::istringstream in(s);
        while (std::getline(in, part, sep))
            out.push_back(part);
        if (!s.empty() && s.back() == sep) out.emplace_back();
        return out;
    }

    // "-" or a comma-separated list of counts.
    std::vector<std::uint64_t> counts(const std::string& s) const {
        std::vector<std::uint64_t> out;
        if (s == "-") return out;
        for (const auto& part : split(s, ','))
            out.push_back(count(part));
        return out;
    }

    std::uint32_t loop_id(const std::string& s) const {
        if (s.size() < 2 || s[0] != 'L') fail("bad loop '" + s + "'");
        const auto id = count(s.substr(1));
        if (id > std::numeric_limits<std::uint32_t>::max()) fail("bad loop '" + s + "'");
        return static_cast<std::uint32_t>(id);
    }

    std::vector<std::uint32_t> loop_ids(const std::string& s) const {
        std::vector<std::uint32_t> out;
        for (const auto& part : split(s, ','))
            out.push_back(loop_id(part));
        return out;
    }

    // "c", "coef*Lid" and sums of them with '+': 3, 512*L2+3, -1*L0+7.
    nki_affine affine(const std::string& s) const {
        nki_affine a;
        for (const auto& term : split(s, '+')) {
            const auto star = term.find('*');
            if (star == std::string::npos) {
                a.c += integer(term);
            } else {
                a.terms.emplace_back(loop_id(term.substr(star + 1)), integer(term.substr(0, star)));
            }
        }
        return a;
    }

    // T<decl>.<back>.<block>:<p0>:<pc>:<f0>:<fc>:<es>, and an indirect view's ~<index>~<extent>
    nki_tile_ref tile(const std::string& s) const {
        if (const auto tilde = s.find('~'); tilde != std::string::npos) {
            const auto parts = split(s, '~');
            if (parts.size() != 3) fail("bad indirect tile '" + s + "'");
            nki_tile_ref t = tile(parts[0]);
            t.index = std::make_shared<const nki_tile_ref>(tile(parts[1]));
            t.extent = static_cast<std::uint32_t>(count(parts[2]));
            if (t.extent == 0 || t.index->extent) fail("bad indirect tile '" + s + "'");
            return t;
        }
        const auto f = split(s, ':');
        if (f.size() != 6 || f[0].empty() || f[0][0] != 'T') fail("bad tile '" + s + "'");
        const auto head = split(f[0].substr(1), '.');
        if (head.size() != 3) fail("bad tile '" + s + "'");
        nki_tile_ref t;
        t.decl = static_cast<std::uint32_t>(count(head[0]));
        t.back = static_cast<std::uint32_t>(count(head[1]));
        t.block = affine(head[2]);
        t.p0 = affine(f[1]);
        t.pc = static_cast<std::uint32_t>(count(f[2]));
        t.f0 = affine(f[3]);
        t.fc = static_cast<std::uint32_t>(count(f[4]));
        t.es = static_cast<std::uint32_t>(count(f[5]));
        return t;
    }

    // H<tensor>:<first>:<rows>:<elems>:<row_stride>
    nki_hbm_ref hbm(const std::string& s) const {
        const auto f = split(s, ':');
        if (f.size() != 5 || f[0].size() < 2 || f[0][0] != 'H') fail("bad HBM access '" + s + "'");
        nki_hbm_ref h;
        h.tensor = static_cast<std::uint32_t>(count(f[0].substr(1)));
        h.first = affine(f[1]);
        h.rows = static_cast<std::uint32_t>(count(f[2]));
        h.elems = static_cast<std::uint32_t>(count(f[3]));
        h.row_stride = count(f[4]);
        return h;
    }

    template <typename E, typename Names>
    E named(const std::string& s, const Names& all, const char* (*name)(E),
            const char* what) const {
        for (const E e : all)
            if (s == name(e)) return e;
        fail(std::string("unknown ") + what + " '" + s + "'");
    }

    alu_op alu(const std::string& s) const { return named(s, all_alu_ops, alu_name, "operation"); }
    opcode code(const std::string& s) const { return named(s, all_opcodes, opcode_name, "opcode"); }
    engine_kind engine(const std::string& s) const {
        return named(s, all_engines, engine_name, "engine");
    }
    act_func func(const std::string& s) const {
        return named(s, all_act_funcs, act_func_name, "activation function");
    }
    dtype type(const std::string& s) const {
        try {
            return parse_dtype(s);
        } catch (const std::exception&) {
            fail("unknown dtype '" + s + "'");
        }
    }
    mem_space space(const std::string& s) const {
        if (s == "sbuf") return mem_space::sbuf;
        if (s == "psum") return mem_space::psum;
        fail("unknown memory '" + s + "'");
    }

  private:
    std::size_t m_line;
};

struct op_syntax {
    const char* name;
    nki_op_kind kind;
};
constexpr op_syntax op_names[] = {
    {"declare", nki_op_kind::declare},      {"load", nki_op_kind::load},
    {"load_add", nki_op_kind::load_add},    {"store", nki_op_kind::store},
    {"gather", nki_op_kind::gather},        {"copy", nki_op_kind::copy},
    {"matmul", nki_op_kind::matmul},        {"matmul_mx", nki_op_kind::matmul_mx},
    {"transpose", nki_op_kind::transpose},  {"print", nki_op_kind::print},
    {"ins", nki_op_kind::instruction},      {"barrier", nki_op_kind::barrier},
    {"sendrecv", nki_op_kind::sendrecv},    {"load_at", nki_op_kind::load_at},
    {"store_at", nki_op_kind::store_at},    {"dma", nki_op_kind::dma},
    {"hbm_dma", nki_op_kind::hbm_dma},      {"scatter", nki_op_kind::scatter},
    {"tile_barrier", nki_op_kind::barrier},
};

// `need(n)`: w has n words, else the reader fails; tiles(op, w, rd, {i...}): op's tiles are the
// words at those places, in that order.
void need(const std::vector<std::string>& w, std::size_t n, const reader& rd) {
    if (w.size() != n) rd.fail("expected " + std::to_string(n) + " operands");
}
void tiles(nki_op& op, const std::vector<std::string>& w, const reader& rd,
           std::initializer_list<std::size_t> at) {
    for (const std::size_t i : at)
        op.tiles.push_back(rd.tile(w[i]));
}

// The words an operation line may end with, taken off `w` (last first): cont, a matmul's or
// transpose's ones-and-zeros hints, a DMA's part=, a load's `new`.
void read_suffixes(nki_op& op, std::vector<std::string>& w, const reader& rd) {
    if (!w.empty() && w.back() == "cont" &&
        (op.kind == nki_op_kind::instruction || op.kind == nki_op_kind::copy ||
         op.kind == nki_op_kind::transpose)) {
        op.cont = true;  // (last)
        w.pop_back();
    }
    // a matmul's or transpose's declarations of ones-and-zeros operands (nc_matmul's hints)
    while ((op.kind == nki_op_kind::matmul || op.kind == nki_op_kind::transpose) && !w.empty() &&
           (w.back() == "stationary_onezero" || w.back() == "moving_onezero")) {
        if (op.kind == nki_op_kind::transpose && w.back() == "stationary_onezero")
            rd.fail("a transpose declares only its identity (moving_onezero)");
        op.flags |=
            w.back() == "stationary_onezero" ? flag::stationary_onezero : flag::moving_onezero;
        w.pop_back();
    }
    if (!w.empty() && w.back().rfind("part=", 0) == 0 &&
        (op.kind == nki_op_kind::load || op.kind == nki_op_kind::load_add ||
         op.kind == nki_op_kind::store || op.kind == nki_op_kind::dma)) {
        const auto part = rd.count(w.back().substr(5));
        if (part < 1 || part > 255) rd.fail("bad DMA part '" + w.back() + "' (1 to 255)");
        op.part = static_cast<std::uint8_t>(part);
        w.pop_back();  // (last: after a load's priority and bits)
    }
    if (!w.empty() && w.back() == "new" &&
        (op.kind == nki_op_kind::load || op.kind == nki_op_kind::load_at ||
         op.kind == nki_op_kind::gather || op.kind == nki_op_kind::dma)) {
        op.rewrite = true;  // (last: after a load's priority and bits)
        w.pop_back();
    }
}

// A load, load_add or store: TILE H... or H... TILE, then an optional priority=N, then (a load)
// bits or transpose.
void read_dma_operands(nki_op& op, std::vector<std::string>& w, const reader& rd) {
    if (w.size() > 2 && w.back() == "bits" && op.kind == nki_op_kind::load) {
        op.bits = true;
        w.pop_back();
    } else if (w.size() > 2 && w.back() == "transpose" && op.kind == nki_op_kind::load) {
        op.transpose = true;
        w.pop_back();
    }
    if (w.size() == 3 && w[2].rfind("priority=", 0) == 0) {
        const auto level = rd.count(w[2].substr(9));
        if (level > 255) rd.fail("bad DMA priority '" + w[2] + "'");
        op.priority = static_cast<std::uint8_t>(level);
    } else {
        need(w, 2, rd);
    }
    const bool load = op.kind != nki_op_kind::store;
    tiles(op, w, rd, {load ? 0u : 1u});
    op.hbm = rd.hbm(w[load ? 1 : 0]);
}

// A matmul: DST STATIONARY MOVING ACCUMULATE [double_row]; matmul_mx: DST STATIONARY MOVING
// STATIONARY_SCALE MOVING_SCALE ACCUMULATE. ACCUMULATE is 1, 0, or !LOOPS (fresh in those).
void read_matmul_operands(nki_op& op, const std::vector<std::string>& w, const reader& rd) {
    const bool mx = op.kind == nki_op_kind::matmul_mx;
    const std::size_t acc = mx ? 5 : 3;
    op.double_row = !mx && w.size() == 5 && w[4] == "double_row";
    if (!op.double_row) need(w, acc + 1, rd);
    if (mx)
        tiles(op, w, rd, {0, 1, 2, 3, 4});
    else
        tiles(op, w, rd, {0, 1, 2});
    if (w[acc] == "1") {
        op.accumulate = true;
    } else if (w[acc] != "0") {
        if (w[acc].size() < 2 || w[acc][0] != '!') rd.fail("bad accumulate '" + w[acc] + "'");
        op.fresh = rd.loop_ids(w[acc].substr(1));
    }
}

// One field=value of an instruction line.
void read_field(nki_op& op, const std::string& word, const reader& rd) {
    static const char* const tile_fields[] = {"dst", "src0", "src1", "src2", "dst1"};
    const auto eq = word.find('=');
    if (eq == std::string::npos) rd.fail("expected field=value, got '" + word + "'");
    const std::string k = word.substr(0, eq), v = word.substr(eq + 1);
    const auto* f = std::find_if(std::begin(all_fields), std::end(all_fields),
                                 [&](const field_info& x) { return k == x.name; });
    if (f == std::end(all_fields) || !(info(op.code).fields & f->bit))
        rd.fail("field '" + k + "' does not apply to " + opcode_name(op.code));
    const auto* t = std::find(std::begin(tile_fields), std::end(tile_fields), k);
    if (t != std::end(tile_fields)) {
        op.slots[std::size_t(t - std::begin(tile_fields))] =
            static_cast<std::int8_t>(op.tiles.size());
        op.tiles.push_back(rd.tile(v));
    } else if (k == "alu") {
        op.alu0 = rd.alu(v);
    } else if (k == "alu1") {
        op.alu1 = rd.alu(v);
    } else if (k == "imm") {
        op.imm0 = rd.real(v);
    } else if (k == "imm1") {
        op.imm1 = rd.real(v);
    } else if (k == "imm2") {
        op.imm2 = rd.real(v);
    } else if (k == "imm3") {
        op.imm3 = rd.real(v);
    } else if (k == "func") {
        op.func = rd.func(v);
    } else if (k == "flags") {
        for (const auto& name : rd.split(v, '|')) {
            const auto* fl = std::find_if(std::begin(all_flags), std::end(all_flags),
                                          [&](const flag_info& x) { return name == x.name; });
            if (fl == std::end(all_flags)) rd.fail("unknown flag '" + name + "'");
            op.flags |= fl->bit;
        }
    } else {
        rd.fail("field '" + k + "' is not given in a recording");
    }
}

// An instruction: ENGINE OPCODE field=value ... (ENGINE `either`: a tensor_scalar the compiler
// places).
void read_instruction_operands(nki_op& op, const std::vector<std::string>& w, const reader& rd) {
    if (w.size() < 3) rd.fail("expected ENGINE OPCODE field=value...");
    op.either = w[0] == "either";
    op.engine = op.either ? engine_kind::dve : rd.engine(w[0]);
    op.code = rd.code(w[1]);
    if (op.either && op.code != opcode::tensor_scalar)
        rd.fail("only tensor_scalar leaves its engine to the compiler ('either'), not " + w[1]);
    for (std::size_t i = 2; i < w.size(); ++i)
        read_field(op, w[i], rd);
    if (op.slots[0] < 0 && (info(op.code).fields & field::dst)) rd.fail(w[1] + " needs dst=");
    // (the Scalar engine's scale and bias: multiply, add, or multiply then add)
    if (op.either &&
        !((op.alu0 == alu_op::multiply || op.alu0 == alu_op::add) &&
          (op.alu1 == alu_op::bypass || (op.alu0 == alu_op::multiply && op.alu1 == alu_op::add))))
        rd.fail(
            "a tensor_scalar left to the compiler ('either') is multiply, add, or "
            "multiply then add");
}

// The operands of an operation line, after its name and its optional `if=`.
void read_operands(nki_op& op, std::vector<std::string> w, const reader& rd) {
    read_suffixes(op, w, rd);
    switch (op.kind) {
        case nki_op_kind::declare:
            need(w, 1, rd);
            op.loop = static_cast<std::uint32_t>(rd.count(w[0]));
            break;
        case nki_op_kind::load:
        case nki_op_kind::load_add:
        case nki_op_kind::store:
            read_dma_operands(op, w, rd);
            break;
        case nki_op_kind::copy:
        case nki_op_kind::transpose:
        case nki_op_kind::sendrecv:
        case nki_op_kind::dma:
            need(w, 2, rd);
            tiles(op, w, rd, {0, 1});
            break;
        case nki_op_kind::gather:   // TILE H... INDEX
        case nki_op_kind::load_at:  // TILE H... OFFSET
            need(w, 3, rd);
            tiles(op, w, rd, {0, 2});
            op.hbm = rd.hbm(w[1]);
            break;
        case nki_op_kind::hbm_dma:  // H... H...
            need(w, 2, rd);
            op.hbm = rd.hbm(w[0]);
            op.hbm2 = rd.hbm(w[1]);
            break;
        case nki_op_kind::scatter:   // H... TILE INDEX
        case nki_op_kind::store_at:  // H... TILE OFFSET
            need(w, 3, rd);
            tiles(op, w, rd, {1, 2});
            op.hbm = rd.hbm(w[0]);
            break;
        case nki_op_kind::matmul:
        case nki_op_kind::matmul_mx:
            read_matmul_operands(op, w, rd);
            break;
        case nki_op_kind::print:
            if (w.empty()) rd.fail("print needs a tile");
            tiles(op, w, rd, {0});
            break;
        case nki_op_kind::barrier:  // ENGINE H... (barrier) or ENGINE TILE (tile_barrier, checked
                                    // by the caller)
            need(w, 2, rd);
            op.engine = rd.engine(w[0]);
            if (w[1].rfind('T', 0) == 0)
                tiles(op, w, rd, {1});
            else
                op.hbm = rd.hbm(w[1]);
            break;
        case nki_op_kind::instruction:
            read_instruction_operands(op, w, rd);
            break;
        case nki_op_kind::loop:
        case nki_op_kind::end:
        case nki_op_kind::iteration:
        case nki_op_kind::order:
            break;
    }
}

std::vector<std::string> words(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string w; in >> w;)
        out.push_back(w);
    return out;
}

// The rest of `line` after its first `n` words (a name, which may hold spaces).
std::string rest_after(const std::string& line, std::size_t n) {
    std::size_t at = 0;
    for (std::size_t i = 0; i < n; ++i) {
        at = line.find_first_not_of(' ', at);
        at = line.find(' ', at);
        if (at == std::string::npos) return "";
    }
    return line.substr(std::min(line.size(), at + 1));
}

// tensor INPUT|OUTPUT DTYPE ELEMS NAME
nki_tensor read_tensor(const std::vector<std::string>& w, const std::string& line,
                       const reader& rd) {
    if (w.size() < 5) rd.fail("tensor INPUT|OUTPUT DTYPE ELEMS NAME");
    nki_tensor t;
    if (w[1] != "input" && w[1] != "output") rd.fail("tensor kind '" + w[1] + "'");
    t.input = w[1] == "input";
    t.type = rd.type(w[2]);
    t.elems = rd.count(w[3]);
    t.name = rest_after(line, 4);
    return t;
}

// decl SPACE PARTITIONS ELEMS DTYPE COUNT BLOCKED SINGLE LOOPS OFFSETS PHYS NAME
nki_decl read_decl(const std::vector<std::string>& w, const std::string& line, const reader& rd) {
    if (w.size() < 12)
        rd.fail(
            "decl SPACE PARTITIONS ELEMS DTYPE COUNT BLOCKED SINGLE LOOPS OFFSETS "
            "PHYS NAME");
    nki_decl d;
    d.space = rd.space(w[1]);
    d.partitions = static_cast<std::uint32_t>(rd.count(w[2]));
    d.elems = static_cast<std::uint32_t>(rd.count(w[3]));
    d.type = rd.type(w[4]);
    d.count = static_cast<std::uint32_t>(rd.count(w[5]));
    d.blocked = rd.count(w[6]) != 0;
    {  // 0 or 1, and r after it for a tile DMAs rewrite whole
        std::string single = w[7];
        d.rewrite = !single.empty() && single.back() == 'r';
        if (d.rewrite) single.pop_back();
        d.single = rd.count(single) != 0;
    }
    d.loops = rd.counts(w[8]);
    if (w[9] != "-")  // OFFSET or PARTITION@OFFSET, each buffer
        for (const auto& place : rd.split(w[9], ',')) {
            const auto at = place.find('@');
            d.first_partitions.push_back(
                at == std::string::npos
                    ? 0
                    : static_cast<std::uint32_t>(rd.count(place.substr(0, at))));
            d.offsets.push_back(rd.count(at == std::string::npos ? place : place.substr(at + 1)));
        }
    for (const auto p : rd.counts(w[10]))
        d.phys.push_back(static_cast<std::uint32_t>(p));
    d.name = rest_after(line, 11);
    if (d.count == 0) rd.fail("a declaration of no tile");
    if (!d.offsets.empty() && d.phys.size() != d.count)
        rd.fail("a direct allocation needs a buffer for each tile");
    for (const auto p : d.phys)
        if (p >= d.offsets.size()) rd.fail("a tile's buffer out of range");
    for (const auto first : d.first_partitions)
        if (first > 0xffff) rd.fail("a first partition out of range");
    return d;
}

// if=L1,L2@LO:HI,...: the loops whose first iteration the operation runs in (L<id>) and the
// spans of iterations it runs in (L<id>@LO:HI).
void read_conditions(nki_op& op, const std::string& word, const reader& rd) {
    if (word.size() == 3) rd.fail("an empty if=");
    for (const auto& part : rd.split(word.substr(3), ',')) {
        const auto at = part.find('@');
        if (at == std::string::npos) {
            op.when.push_back(rd.loop_id(part));
            continue;
        }
        const auto colon = part.find(':', at);
        if (colon == std::string::npos) rd.fail("bad condition '" + part + "'");
        nki_span sp{rd.loop_id(part.substr(0, at)), rd.integer(part.substr(at + 1, colon - at - 1)),
                    rd.integer(part.substr(colon + 1))};
        if (sp.lo < 0) rd.fail("a span from a negative iteration '" + part + "'");
        if (sp.hi <= sp.lo) rd.fail("empty span '" + part + "'");
        op.spans.push_back(sp);
    }
}

// What an operation line names exists (tensors, declarations, its place) and its conditions
// are on loops around it (`open`).
void check_operation(const nki_op& op, const std::string& name, const nki_recording& r,
                     const std::vector<std::uint32_t>& open, const reader& rd) {
    if (op.kind == nki_op_kind::barrier && (name == "tile_barrier") == op.tiles.empty())
        rd.fail(name == "tile_barrier" ? "tile_barrier meets over a tile, not an HBM access"
                                       : "barrier meets over an HBM access (a tile: "
                                         "tile_barrier)");
    for (const auto& t : op.tiles)
        if (t.decl >= r.decls.size()) rd.fail("tile of an undeclared declaration");
    if ((op.kind == nki_op_kind::load || op.kind == nki_op_kind::load_add ||
         op.kind == nki_op_kind::store || (op.kind == nki_op_kind::barrier && op.tiles.empty()) ||
         op.kind == nki_op_kind::gather || op.kind == nki_op_kind::load_at ||
         op.kind == nki_op_kind::store_at || op.kind == nki_op_kind::hbm_dma ||
         op.kind == nki_op_kind::scatter) &&
        op.hbm.tensor >= r.tensors.size())
        rd.fail("access of an unknown HBM tensor");
    if (op.kind == nki_op_kind::hbm_dma && op.hbm2.tensor >= r.tensors.size())
        rd.fail("access of an unknown HBM tensor");
    if (op.kind == nki_op_kind::declare && op.loop >= r.decls.size())
        rd.fail("declare of an unknown declaration");
    std::vector<std::uint32_t> conditioned = op.when;
    for (const nki_span& sp : op.spans)
        conditioned.push_back(sp.loop);
    conditioned.insert(conditioned.end(), op.fresh.begin(), op.fresh.end());
    for (const std::uint32_t l : conditioned)
        if (std::find(open.begin(), open.end(), l) == open.end())
            rd.fail("a condition on L" + std::to_string(l) + ", not a loop around the operation");
}

// An operation line: NAME [if=...] OPERANDS... [at=PLACE].
nki_op read_operation(const std::vector<std::string>& w, const nki_recording& r,
                      const std::vector<std::uint32_t>& open, const reader& rd) {
    nki_op op;
    const auto* s = std::find_if(std::begin(op_names), std::end(op_names),
                                 [&](const op_syntax& o) { return w[0] == o.name; });
    if (s == std::end(op_names)) rd.fail("unknown operation '" + w[0] + "'");
    op.kind = s->kind;
    auto w_end = w.end();
    if (w.size() > 1 && w.back().rfind("at=", 0) == 0) {  // its place, last
        op.place = static_cast<std::uint32_t>(rd.count(w.back().substr(3)));
        if (op.place == 0 || op.place > r.places.size()) rd.fail("unknown place");
        --w_end;
    }
    std::size_t first = 1;
    if (w.size() > 1 && w[1].rfind("if=", 0) == 0) {
        read_conditions(op, w[1], rd);
        first = 2;
    }
    if (op.kind == nki_op_kind::print) {
        if (w.size() <= first) rd.fail("print needs a tile");
        op.tiles.push_back(rd.tile(w[first]));
    } else {
        read_operands(op, std::vector<std::string>(w.begin() + first, w_end), rd);
    }
    check_operation(op, w[0], r, open, rd);
    return op;
}

}  // namespace

nki_recording parse_recording(std::istream& in) {
    nki_recording r;
    std::string line;
    std::size_t n = 0;
    std::vector<std::uint32_t> open;
    bool header = false;
    while (std::getline(in, line)) {
        ++n;
        const reader rd(n);
        const auto w = words(line);
        if (w.empty() || w[0][0] == '#') continue;
        if (!header) {
            if (w.size() != 2 || w[0] != "trnsim-nki-recording" || w[1] != "1")
                rd.fail("expected 'trnsim-nki-recording 1'");
            header = true;
            continue;
        }
        if (w[0] == "style") {
            if (w.size() != 2) rd.fail("style takes nl or isa");
            r.style = w[1] == "isa" ? kernel_style::isa : kernel_style::nl;
        } else if (w[0] == "tensor") {
            r.tensors.push_back(read_tensor(w, line, rd));
        } else if (w[0] == "decl") {
            r.decls.push_back(read_decl(w, line, rd));
        } else if (w[0] == "loop") {
            // (the construct the kernel wrote, optional: the builder expands every one alike)
            static const std::set<std::string> constructs = {"affine", "sequential", "static",
                                                             "range", "compiled"};
            if (w.size() != 3 && !(w.size() == 4 && constructs.count(w[3])))
                rd.fail("loop L<id> TRIPS [affine|sequential|static|range|compiled]");
            nki_op op;
            op.kind = nki_op_kind::loop;
            op.loop = rd.loop_id(w[1]);
            op.trips = rd.count(w[2]);
            r.loops = std::max(r.loops, op.loop + 1);
            open.push_back(op.loop);
            r.ops.push_back(op);
        } else if (w[0] == "order") {
            if (w.size() != 2 || (w[1] != "kept" && w[1] != "free")) rd.fail("order kept|free");
            nki_op op;
            op.kind = nki_op_kind::order;
            op.keeps_order = w[1] == "kept";
            r.ops.push_back(op);
        } else if (w[0] == "iteration") {
            if (w.size() != 2) rd.fail("iteration TRIPS");
            nki_op op;
            op.kind = nki_op_kind::iteration;
            op.trips = rd.count(w[1]);
            r.ops.push_back(op);
        } else if (w[0] == "end") {
            if (w.size() != 2 || open.empty() || rd.loop_id(w[1]) != open.back())
                rd.fail("'end' does not close the innermost loop");
            nki_op op;
            op.kind = nki_op_kind::end;
            op.loop = open.back();
            open.pop_back();
            r.ops.push_back(op);
        } else if (w[0] == "place") {
            if (w.size() < 3 || rd.count(w[1]) != r.places.size() + 1)
                rd.fail("place N FILE:LINE, numbered from 1 in order");
            r.places.push_back(rest_after(line, 2));
        } else {
            r.ops.push_back(read_operation(w, r, open, rd));
        }
    }
    if (!header) throw std::invalid_argument("recording: empty");
    if (!open.empty()) throw std::invalid_argument("recording: a loop is not closed");
    return r;
}

}  // namespace trn
