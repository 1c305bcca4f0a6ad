#include "program/trace.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/output_file.h"
#include "core/units.h"
#include "isa/opcode_row.h"

namespace trn {

std::string format_operand(const operand& op) {
    std::ostringstream os;
    os << mem_space_name(op.space) << '[' << op.partition << ':'
       << std::uint64_t{op.partition} + op.partitions << "]@" << op.offset;
    if (op.space == mem_space::hbm) os << '/' << op.row_stride;
    os << ':' << op.elems << 'x' << dtype_name(op.type);
    if (op.elem_stride != 1) os << '~' << op.elem_stride;
    return os.str();
}

namespace {

std::string format_float(float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
    return buf;
}

std::string format_waits(const wait_list& waits) {
    std::string out;
    for (const auto& w : waits)
        out +=
            (out.empty() ? " wait=" : ",") + semaphore_name(w.sem) + ">=" + std::to_string(w.value);
    return out;
}

// " at=FILE:LINE", with bytes that would end the field or start a comment (space, #, %, and
// control bytes) as %XX; "" for no place.
std::string format_place(const std::string& place) {
    if (place.empty()) return "";
    std::string out = " at=";
    for (const char c : place) {
        const auto u = static_cast<unsigned char>(c);
        if (u <= ' ' || c == '#' || c == '%' || u == 0x7f) {
            char buf[4];
            std::snprintf(buf, sizeof buf, "%%%02X", u);
            out += buf;
        } else {
            out += c;
        }
    }
    return out;
}

}  // namespace

void write_trace(std::ostream& out, const program& p) {
    out << "trnsim-trace " << trace_format_version << "\n";
    out << "# streams: pe dve act pool sp (engines), q<N> (DMA queues); docs/trace-format.md\n";
    out << "hbm_bytes " << p.hbm_bytes << "\n";
    out << "queues " << p.queues.size() << "\n";
    for (const auto& r : p.regions) {
        out << "region " << r.name << ' ' << r.offset << ' ' << r.bytes << ' '
            << dtype_name(r.type);
        if (r.input)
            out << " input " << format_float(r.lo) << ' ' << format_float(r.hi) << ' ' << r.seed;
        else
            out << " output";
        out << "\n";
    }
    for (std::size_t q = 0; q < p.queues.size(); ++q)
        for (std::size_t i = 0; i < p.queues[q].size(); ++i) {
            const auto& t = p.queues[q][i];
            out << 'q' << q << " dma dst=" << format_operand(t.dst)
                << " src=" << format_operand(t.src);
            if (t.rmw != alu_op::bypass) out << " op=" << alu_name(t.rmw);
            if (t.transpose) out << " transpose";
            if (t.priority != 0) out << " priority=" << unsigned{t.priority};
            if (t.part != 0) out << " part=" << unsigned{t.part};
            out << format_place(p.sources.of_queue(q, i)) << "\n";
        }
    for (auto e : all_engines) {
        for (std::size_t i = 0; i < p.engines[std::size_t(e)].size(); ++i) {
            const auto& ins = p.engines[std::size_t(e)][i];
            out << engine_name(e) << ' ' << opcode_name(ins.op);
            if (ins.op == opcode::dma_trigger) {
                out << " queue=" << ins.queue;
            } else {
                if (ins.alu != alu_op::bypass) out << " alu=" << alu_name(ins.alu);
                if (ins.dst.valid()) out << " dst=" << format_operand(ins.dst);
                if (ins.src0.valid()) out << " src0=" << format_operand(ins.src0);
                if (ins.src1.valid()) out << " src1=" << format_operand(ins.src1);
                if (ins.src2.valid()) out << " src2=" << format_operand(ins.src2);
                if (ins.src3.valid()) out << " src3=" << format_operand(ins.src3);
                if (ins.dst1.valid()) out << " dst1=" << format_operand(ins.dst1);
                for (const auto& t : ins.indirect)
                    out << ' ' << operand_slot_name(t.slot) << "_index=" << format_operand(t.index)
                        << ' ' << operand_slot_name(t.slot) << "_extent=" << t.extent;
                if (ins.imm != 0) out << " imm=" << format_float(ins.imm);
                if (ins.alu1 != alu_op::bypass) out << " alu1=" << alu_name(ins.alu1);
                if (ins.imm1 != 0) out << " imm1=" << format_float(ins.imm1);
                if (ins.imm2 != 0) out << " imm2=" << format_float(ins.imm2);
                if (ins.imm3 != 0) out << " imm3=" << format_float(ins.imm3);
                if (ins.func != act_func::identity) out << " func=" << act_func_name(ins.func);
                if (ins.flags) {
                    const char* sep = " flags=";
                    for (const auto& f : all_flags)
                        if (ins.flags & f.bit) {
                            out << sep << f.name;
                            sep = "|";
                        }
                }
            }
            out << format_waits(ins.waits) << format_place(p.sources.of_engine(e, i)) << "\n";
        }
    }
}

void write_trace_file(const std::string& path, const program& p) {
    output_file file(path);
    write_trace(file.stream(), p);
    file.commit();
}

namespace {

// Parses one trace line; every error names the file and line.
class line_parser {
  public:
    line_parser(const std::string& name, std::size_t line)
        : m_where(name + ":" + std::to_string(line)) {}

    [[noreturn]] void fail(const std::string& what) const {
        throw user_error(m_where + ": " + what);
    }

    std::uint64_t number(const std::string& s, const char* what) const {
        const auto v = units::parse_whole<std::uint64_t>(s);
        if (!v) fail(std::string("bad ") + what + " '" + s + "'");
        return *v;
    }

    // number(), which must fit in T (a field of the program's compact types).
    template <typename T>
    T number_of(const std::string& s, const char* what) const {
        const std::uint64_t v = number(s, what);
        if (v > std::numeric_limits<T>::max())
            fail(std::string(what) + " " + s + " is too large (at most " +
                 std::to_string(std::numeric_limits<T>::max()) + ")");
        return static_cast<T>(v);
    }

    // A finite float: NaN and infinities are rejected, subnormals (which the writer can
    // produce) are read back exactly (std::stof would throw on their underflow).
    // `infinite`: "inf" and "-inf", as written, are read too (an immediate such as a mask's
    // fill value); NaN and values too large for a float never are.
    float real(const std::string& s, const char* what, bool infinite = false) const {
        if (s.empty() || std::isspace(static_cast<unsigned char>(s[0])))
            fail(std::string("bad ") + what + " '" + s + "'");
        if (infinite && (s == "inf" || s == "-inf"))
            return s[0] == '-' ? -std::numeric_limits<float>::infinity()
                               : std::numeric_limits<float>::infinity();
        char* end = nullptr;
        errno = 0;
        const float v = std::strtof(s.c_str(), &end);
        if (end != s.c_str() + s.size()) fail(std::string("bad ") + what + " '" + s + "'");
        if (!std::isfinite(v) || (errno == ERANGE && std::fabs(v) > 1.0f))
            fail(std::string(what) + " '" + s + "' is not a finite float" +
                 (infinite ? " (or inf, -inf)" : ""));
        return v;
    }

    dtype type(const std::string& s) const {
        try {
            return parse_dtype(s);
        } catch (const user_error& e) {
            fail(e.what());
        }
    }

    // space[p0:p1]@offset[/stride]:elemsxdtype
    operand parse_operand(const std::string& s) const {
        operand op;
        auto lb = s.find('['), colon = s.find(':'), rb = s.find(']'), at = s.find('@');
        if (lb == std::string::npos || rb == std::string::npos || at != rb + 1 ||
            colon == std::string::npos || colon > rb)
            fail("bad operand '" + s + "' (expected space[p0:p1]@offset:elemsxdtype)");
        std::string space = s.substr(0, lb);
        if (space == "hbm")
            op.space = mem_space::hbm;
        else if (space == "sbuf")
            op.space = mem_space::sbuf;
        else if (space == "psum")
            op.space = mem_space::psum;
        else
            fail("bad memory '" + space + "' in operand '" + s + "' (hbm, sbuf or psum)");
        const auto p0 =
            number_of<decltype(op.partition)>(s.substr(lb + 1, colon - lb - 1), "first partition");
        const auto p1 =
            number_of<std::uint32_t>(s.substr(colon + 1, rb - colon - 1), "end partition");
        if (p1 <= p0) fail("empty partition range in operand '" + s + "'");
        op.partition = p0;
        op.partitions = p1 - p0;
        auto colon2 = s.find(':', at);
        if (colon2 == std::string::npos) fail("operand '" + s + "' has no :elemsxdtype");
        std::string off = s.substr(at + 1, colon2 - at - 1);
        auto slash = off.find('/');
        if (op.space == mem_space::hbm) {
            if (slash == std::string::npos) fail("HBM operand '" + s + "' needs offset/stride");
            op.row_stride = number(off.substr(slash + 1), "row stride");
            off = off.substr(0, slash);
        } else if (slash != std::string::npos) {
            fail("only HBM operands take a row stride: '" + s + "'");
        }
        op.offset = number(off, "offset");
        std::string shape = s.substr(colon2 + 1);
        auto x = shape.find('x');
        if (x == std::string::npos) fail("operand '" + s + "' needs elemsxdtype");
        op.elems = number_of<decltype(op.elems)>(shape.substr(0, x), "element count");
        std::string tname = shape.substr(x + 1);
        const auto tilde = tname.find('~');
        if (tilde != std::string::npos) {
            op.elem_stride =
                number_of<decltype(op.elem_stride)>(tname.substr(tilde + 1), "element stride");
            if (op.elem_stride == 0) fail("element stride 0 in operand '" + s + "'");
            tname = tname.substr(0, tilde);
        }
        op.type = type(tname);
        return op;
    }

    wait_list parse_waits(const std::string& s, const std::map<std::string, sem_id>& sems) const {
        wait_list out;
        std::stringstream ss(s);
        std::string item;
        while (std::getline(ss, item, ',')) {
            auto ge = item.find(">=");
            if (ge == std::string::npos) fail("bad wait '" + item + "' (expected name>=value)");
            auto it = sems.find(item.substr(0, ge));
            if (it == sems.end())
                fail("unknown semaphore '" + item.substr(0, ge) +
                     "' (pe, dve, act, pool, sp or q<N> below the declared queue count)");
            out.push_back(
                {it->second, number_of<std::uint32_t>(item.substr(ge + 2), "wait value")});
        }
        return out;
    }

  private:
    std::string m_where;
};

const std::map<std::string, opcode>& opcodes() {
    static const std::map<std::string, opcode> m = [] {
        std::map<std::string, opcode> out;
        for (const opcode o : all_opcodes)
            out[opcode_name(o)] = o;
        return out;
    }();
    return m;
}

// The fields each opcode takes (besides wait= and at=, which every instruction may have): the
// ones core/isa.h declares for it, in trace format `version`. Any other field is an error rather
// than silently dropped.
bool field_allowed(opcode op, const std::string& k, int version) {
    if (version < info(op).since) return false;
    // version 1 had no bias on activation and no start on iota
    if (version < 2 &&
        ((k == "src1" && op == opcode::activation) || (k == "imm" && op == opcode::iota)))
        return false;
    for (const auto& f : all_fields)
        if (k == f.name) return version >= f.since && (info(op).fields & f.bit);
    return false;
}

// A tensor indirection's field (SLOT_index or SLOT_extent): its operand slot, and whether it is
// the index.
std::optional<std::pair<operand_slot, bool>> indirection_key(const std::string& k) {
    for (std::size_t i = 0; i < operand_slot_count; ++i) {
        const std::string slot = operand_slot_name(static_cast<operand_slot>(i));
        if (k == slot + "_index") return std::pair{static_cast<operand_slot>(i), true};
        if (k == slot + "_extent") return std::pair{static_cast<operand_slot>(i), false};
    }
    return std::nullopt;
}

indirection& indirection_for(instruction& ins, operand_slot slot) {
    for (auto& t : ins.indirect)
        if (t.slot == slot) return t;
    ins.indirect.push_back(indirection{slot, 0, operand{}});
    return ins.indirect.back();
}

// Which opcodes take which flag: their rows'.
bool flag_applies(opcode op, std::uint16_t bit) {
    // (cont: any instruction its engine costs by its elements, the cost table's)
    if (bit == flag::continues) return !row(op).costs.empty();
    return (row(op).flags & bit) != 0;
}

const std::map<std::string, alu_op>& alus() {
    static const std::map<std::string, alu_op> m = [] {
        std::map<std::string, alu_op> out;
        for (const alu_op a : all_alu_ops)
            out[alu_name(a)] = a;
        return out;
    }();
    return m;
}

constexpr const char* dma_syntax =
    "expected 'q<N> dma dst=OPERAND src=OPERAND [op=add] [transpose] [priority=N] [part=N] "
    "[at=FILE:LINE]'";

// "%XX" escapes of format_place undone.
std::string parse_place(const std::string& v, const line_parser& lp) {
    std::string out;
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (v[i] != '%') {
            out += v[i];
            continue;
        }
        const auto hex = [](char c) {
            return std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                   : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                   : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                                                               : -1;
        };
        if (i + 2 >= v.size() || hex(v[i + 1]) < 0 || hex(v[i + 2]) < 0)
            lp.fail("bad escape in at='" + v + "' (%XX, two hex digits)");
        out += static_cast<char>(hex(v[i + 1]) * 16 + hex(v[i + 2]));
        i += 2;
    }
    if (out.empty()) lp.fail("empty at=");
    return out;
}

}  // namespace

namespace {

// std::getline with a bound: a trace line is at most a few hundred bytes, and a file without
// newlines (a device such as /dev/zero) must not be read into memory forever.
constexpr std::size_t max_trace_line = 1 << 16;

bool read_line(std::istream& in, std::string& line, const std::string& name, std::size_t lineno) {
    line.clear();
    std::istream::sentry ok(in, true);
    if (!ok) return false;
    std::streambuf* buf = in.rdbuf();
    for (;;) {
        const int c = buf->sbumpc();
        if (c == std::char_traits<char>::eof()) {
            in.setstate(std::ios::eofbit);
            return !line.empty();
        }
        if (c == '\n') return true;
        if (c == '\0')
            throw user_error(name + ":" + std::to_string(lineno) +
                             ": NUL byte: not a trace text file");
        if (line.size() == max_trace_line)
            throw user_error(name + ":" + std::to_string(lineno) + ": line longer than " +
                             std::to_string(max_trace_line) + " bytes");
        line.push_back(static_cast<char>(c));
    }
}

}  // namespace

namespace {

// Reads a trace line by line into a program (read_trace's contract); each kind of line is a
// method, every error naming the file and line.
class trace_reader {
  public:
    explicit trace_reader(const std::string& name) : m_origin(std::make_shared<program_origin>()) {
        m_origin->file = name;
        for (auto e : all_engines) {
            m_sems[engine_name(e)] = semaphore_of_engine(e);
            m_engines[engine_name(e)] = e;
        }
    }

    // One line's words (after its comment is cut), the first line being the header.
    void line(const std::vector<std::string>& tok, const line_parser& lp, std::size_t lineno) {
        if (!m_header) return header(tok, lp);
        const std::string& head = tok[0];
        if (head == "hbm_bytes") {
            if (tok.size() != 2 || m_have_hbm_bytes) lp.fail("expected one 'hbm_bytes N' line");
            m_have_hbm_bytes = true;
            m_p.hbm_bytes = lp.number(tok[1], "byte count");
        } else if (head == "queues") {
            queues(tok, lp);
        } else if (head == "region") {
            region(tok, lp, lineno);
        } else if (head.size() > 1 && head[0] == 'q' && std::isdigit(head[1])) {
            transfer(tok, lp, lineno);
        } else if (m_engines.count(head)) {
            instruction_line(tok, lp, lineno);
        } else {
            lp.fail("unknown line kind '" + head +
                    "' (hbm_bytes, queues, region, q<N>, pe, dve, act, pool, sp)");
        }
    }

    // The program read, once every line has been.
    program finish(const std::string& name) {
        if (!m_header)
            throw user_error(name + ": empty trace (no 'trnsim-trace " +
                             std::to_string(trace_format_version) + "' header)");
        m_p.origin = std::move(m_origin);
        if (!m_p.sources.empty()) {
            auto any = [](const std::vector<std::uint32_t>& v) {
                return std::any_of(v.begin(), v.end(), [](std::uint32_t x) { return x != 0; });
            };
            for (std::size_t e = 0; e < engine_count; ++e)
                if (any(m_engine_places[e])) m_p.sources.engines[e] = std::move(m_engine_places[e]);
            m_p.sources.queues.resize(m_p.queues.size());
            for (std::size_t q = 0; q < m_p.queues.size(); ++q)
                if (any(m_queue_places[q])) m_p.sources.queues[q] = std::move(m_queue_places[q]);
        }
        return std::move(m_p);
    }

  private:
    void header(const std::vector<std::string>& tok, const line_parser& lp) {
        if (tok.size() != 2 || tok[0] != "trnsim-trace")
            lp.fail("not a trnsim trace (first line must be 'trnsim-trace " +
                    std::to_string(trace_format_version) + "')");
        const auto v = lp.number(tok[1], "version");
        if (v < 1 || v > static_cast<std::uint64_t>(trace_format_version))
            lp.fail("trace format version " + tok[1] + " is not supported (this build reads " +
                    "1 to " + std::to_string(trace_format_version) + ")");
        m_version = static_cast<int>(v);
        m_tok_version = tok[1];
        m_header = true;
    }

    // Fails unless the trace's version is at least `since`: `what` is not in it.
    void since(int version, const std::string& what, const line_parser& lp) const {
        if (m_version < version) lp.fail(what + " is not in trace format version " + m_tok_version);
    }

    // A place's id in the program's sources, one-based (added if new).
    std::uint32_t intern(const std::string& place) {
        auto [it, fresh] = m_place_ids.emplace(place, 0);
        if (fresh) {
            m_p.sources.names.push_back(place);
            it->second = static_cast<std::uint32_t>(m_p.sources.names.size());
        }
        return it->second;
    }

    void queues(const std::vector<std::string>& tok, const line_parser& lp) {
        if (tok.size() != 2 || m_have_queues) lp.fail("expected one 'queues N' line");
        auto n = lp.number(tok[1], "queue count");
        if (n > 4096) lp.fail("queue count " + tok[1] + " is implausible");
        m_p.queues.resize(n);
        m_origin->queue_lines.resize(n);
        m_queue_places.resize(n);
        for (std::size_t q = 0; q < n; ++q)
            m_sems["q" + std::to_string(q)] = semaphore_of_queue(q);
        m_have_queues = true;
    }

    void region(const std::vector<std::string>& tok, const line_parser& lp, std::size_t lineno) {
        if (tok.size() < 6) lp.fail("expected 'region NAME OFFSET BYTES DTYPE input|output'");
        hbm_region r;
        r.name = tok[1];
        r.offset = lp.number(tok[2], "offset");
        r.bytes = lp.number(tok[3], "byte count");
        r.type = lp.type(tok[4]);
        if (tok[5] == "input") {
            if (tok.size() != 9) lp.fail("expected 'region ... input LO HI SEED'");
            r.input = true;
            r.lo = lp.real(tok[6], "lower bound");
            r.hi = lp.real(tok[7], "upper bound");
            r.seed = lp.number_of<std::uint32_t>(tok[8], "seed");
        } else if (tok[5] != "output" || tok.size() != 6) {
            lp.fail("region kind must be 'input LO HI SEED' or 'output'");
        }
        m_p.regions.push_back(r);
        m_origin->region_lines.push_back(lineno);
    }

    // q<N> dma dst=.. src=.. then, in this order and each optional, op=, transpose, priority=,
    // part=, at=
    void transfer(const std::vector<std::string>& tok, const line_parser& lp, std::size_t lineno) {
        const std::string& head = tok[0];
        if (!m_have_queues) lp.fail("a 'queues N' line must come before the transfers");
        auto q = lp.number(head.substr(1), "queue");
        if (q >= m_p.queues.size())
            lp.fail("queue " + head + " is beyond the declared " +
                    std::to_string(m_p.queues.size()) + " queues");
        std::size_t k = 4;
        const auto optional = [&](const char* key) -> std::optional<std::string> {
            if (k == tok.size() || tok[k].rfind(key, 0) != 0) return std::nullopt;
            return tok[k++].substr(std::strlen(key));
        };
        if (tok.size() < 4 || tok[1] != "dma" || tok[2].rfind("dst=", 0) != 0 ||
            tok[3].rfind("src=", 0) != 0)
            lp.fail(dma_syntax);
        dma_transfer t{lp.parse_operand(tok[2].substr(4)), lp.parse_operand(tok[3].substr(4))};
        const auto op = optional("op=");
        const bool transpose = k < tok.size() && tok[k] == "transpose";
        if (transpose) ++k;
        const auto priority = optional("priority="), part = optional("part="), at = optional("at=");
        if (k != tok.size()) lp.fail(dma_syntax);
        if (op) {
            since(3, "op=", lp);
            auto a = alus().find(*op);
            if (a == alus().end()) lp.fail("unknown alu op '" + *op + "'");
            if (a->second != alu_op::add)
                lp.fail("a DMA read-add-write adds: op=add, not op=" + *op);
            t.rmw = a->second;
        }
        if (transpose) {
            since(10, "transpose", lp);
            t.transpose = true;
        }
        if (priority) {
            since(5, "priority=", lp);
            t.priority = lp.number_of<std::uint8_t>(*priority, "priority");
        }
        if (part) {
            since(8, "part=", lp);
            t.part = lp.number_of<std::uint8_t>(*part, "part");
        }
        m_p.queues[q].push_back(t);
        m_origin->queue_lines[q].push_back(lineno);
        std::uint32_t place = 0;
        if (at) {
            since(3, "at=", lp);
            place = intern(parse_place(*at, lp));
        }
        m_queue_places[q].push_back(place);
    }

    void instruction_line(const std::vector<std::string>& tok, const line_parser& lp,
                          std::size_t lineno) {
        const std::string& head = tok[0];
        if (tok.size() < 2) lp.fail("expected an opcode after '" + head + "'");
        auto oc = opcodes().find(tok[1]);
        if (oc == opcodes().end()) lp.fail("unknown opcode '" + tok[1] + "'");
        instruction ins;
        ins.op = oc->second;
        since(info(ins.op).since, "opcode '" + tok[1] + "'", lp);
        std::uint32_t place = 0;
        bool has_queue = false;
        std::set<std::string> seen;
        for (std::size_t i = 2; i < tok.size(); ++i) {
            auto eq = tok[i].find('=');
            if (eq == std::string::npos) lp.fail("expected key=value, got '" + tok[i] + "'");
            std::string k = tok[i].substr(0, eq), v = tok[i].substr(eq + 1);
            if (!seen.insert(k).second) lp.fail("field '" + k + "' given twice");
            field(ins, k, v, lp, place, has_queue);
        }
        for (const auto& t : ins.indirect) {
            const std::string slot = operand_slot_name(t.slot);
            if (!t.index.valid() || t.extent == 0)
                lp.fail("an indirect " + slot + " needs both " + slot + "_index=OPERAND and " +
                        slot + "_extent=N");
        }
        if (ins.op == opcode::dma_trigger && !has_queue) lp.fail("dma_trigger needs queue=N");
        if ((info(ins.op).fields & field::dst) && !ins.dst.valid())
            lp.fail(std::string(opcode_name(ins.op)) + " needs dst=OPERAND");
        // Before version 3 a wider tensor_reduce dst received the whole row's reduction in
        // each element; version 3 reduces a group of the row into each.
        if (ins.op == opcode::tensor_reduce && m_version < 3 && ins.dst.elems != 1)
            lp.fail("a tensor_reduce dst of " + std::to_string(ins.dst.elems) +
                    " elements broadcast the row's reduction before trace format version 3, "
                    "which reduces groups: give dst 1 element (and copy it), or write "
                    "version 3");
        // Version 1's iota numbered the elements across partitions: p * elems + i.
        if (ins.op == opcode::iota && m_version < 2) ins.imm1 = static_cast<float>(ins.dst.elems);
        m_p.engines[std::size_t(m_engines.at(head))].push_back(std::move(ins));
        m_origin->engine_lines[std::size_t(m_engines.at(head))].push_back(lineno);
        m_engine_places[std::size_t(m_engines.at(head))].push_back(place);
    }

    // One key=value field of an instruction.
    void field(instruction& ins, const std::string& k, const std::string& v, const line_parser& lp,
               std::uint32_t& place, bool& has_queue) {
        static const std::set<std::string> known = [] {
            std::set<std::string> out{"wait", "at"};
            for (const auto& f : all_fields)
                out.insert(f.name);
            return out;
        }();
        const auto indirect_key = known.count(k) ? std::nullopt : indirection_key(k);
        if (indirect_key) {  // (tensor indirection)
            since(4, k + "=", lp);
            const auto [slot, is_index] = *indirect_key;
            if (!field_allowed(ins.op, operand_slot_name(slot), m_version))
                lp.fail("field '" + k + "' does not apply to " + opcode_name(ins.op));
            indirection& t = indirection_for(ins, slot);
            if (is_index)
                t.index = lp.parse_operand(v);
            else
                t.extent = lp.number_of<std::uint32_t>(v, "extent");
            return;
        }
        if (!known.count(k)) lp.fail("unknown field '" + k + "'");
        if (k == "at") {
            since(3, "at=", lp);
            place = intern(parse_place(v, lp));
            return;
        }
        // (from version 8 any costed instruction takes flags=cont: flag_applies)
        if (k != "wait" && !(k == "flags" && m_version >= 8) &&
            !field_allowed(ins.op, k, m_version))
            lp.fail("field '" + k + "' does not apply to " + opcode_name(ins.op) +
                    (field_allowed(ins.op, k, trace_format_version)
                         ? " in trace format version " + std::to_string(m_version)
                         : std::string()));
        static const std::map<std::string, operand_slot> slots = {
            {"dst", operand_slot::dst},   {"src0", operand_slot::src0},
            {"src1", operand_slot::src1}, {"src2", operand_slot::src2},
            {"src3", operand_slot::src3}, {"dst1", operand_slot::dst1}};
        if (const auto slot = slots.find(k); slot != slots.end())
            ins.at(slot->second) = lp.parse_operand(v);
        else if (k == "imm")
            ins.imm = lp.real(v, "immediate", true);
        else if (k == "imm1")
            ins.imm1 = lp.real(v, "immediate", true);
        else if (k == "imm2")
            ins.imm2 = lp.real(v, "immediate", true);
        else if (k == "imm3")
            ins.imm3 = lp.real(v, "immediate", true);
        else if (k == "alu1")
            ins.alu1 = alu_of(v, lp);
        else if (k == "queue") {
            ins.queue = lp.number_of<std::uint16_t>(v, "queue");
            has_queue = true;
        } else if (k == "alu")
            ins.alu = alu_of(v, lp);
        else if (k == "wait")
            ins.waits = lp.parse_waits(v, m_sems);
        else if (k == "func")
            ins.func = func_of(v, lp);
        else if (k == "flags")
            ins.flags |= flags_of(ins.op, v, lp);
        else
            lp.fail("unknown field '" + k + "'");
    }

    alu_op alu_of(const std::string& v, const line_parser& lp) const {
        auto a = alus().find(v);
        if (a == alus().end()) lp.fail("unknown alu op '" + v + "'");
        since(alu_since(a->second), "alu op '" + v + "'", lp);
        return a->second;
    }

    act_func func_of(const std::string& v, const line_parser& lp) const {
        std::optional<act_func> found;
        std::string names;
        for (auto f : all_act_funcs) {
            if (v == act_func_name(f)) found = f;
            names += (names.empty() ? "" : ", ") + std::string(act_func_name(f));
        }
        if (!found) lp.fail("unknown activation function '" + v + "' (" + names + ")");
        since(act_func_since(*found), "activation function '" + v + "'", lp);
        return *found;
    }

    // flags=a|b: the bits of the flags named, each known in this version and applying to `op`.
    std::uint16_t flags_of(opcode op, const std::string& v, const line_parser& lp) const {
        std::uint16_t bits = 0;
        std::stringstream fs(v);
        for (std::string f; std::getline(fs, f, '|');) {
            const flag_info* hit = nullptr;
            std::string names;
            for (const auto& fi : all_flags) {
                if (f == fi.name && m_version >= fi.since) hit = &fi;
                if (m_version >= fi.since)
                    names += (names.empty() ? "" : ", ") + std::string(fi.name);
            }
            if (!hit)
                lp.fail("unknown flag '" + f + "' (" + names + " in trace format " + "version " +
                        m_tok_version + ")");
            if (!flag_applies(op, hit->bit))
                lp.fail("flag '" + f + "' does not apply to " + opcode_name(op));
            bits |= hit->bit;
        }
        return bits;
    }

    program m_p;
    std::shared_ptr<program_origin> m_origin;
    std::map<std::string, sem_id> m_sems;
    std::map<std::string, engine_kind> m_engines;
    bool m_header = false, m_have_queues = false, m_have_hbm_bytes = false;
    int m_version = trace_format_version;
    std::string m_tok_version;
    // each entry's place (sources' id, 0: none), kept in the program only if any has one
    std::array<std::vector<std::uint32_t>, engine_count> m_engine_places;
    std::vector<std::vector<std::uint32_t>> m_queue_places;
    std::map<std::string, std::uint32_t> m_place_ids;  // a place's id in p.sources, one-based
};

}  // namespace

program read_trace(std::istream& in, const std::string& name) {
    trace_reader reader(name);
    std::string line;
    std::size_t lineno = 0;
    while (read_line(in, line, name, lineno + 1)) {
        ++lineno;
        auto hash = line.find('#');
        if (hash != std::string::npos) line.erase(hash);
        std::istringstream ls(line);
        std::vector<std::string> tok;
        for (std::string t; ls >> t;)
            tok.push_back(t);
        if (!tok.empty()) reader.line(tok, line_parser(name, lineno), lineno);
    }
    return reader.finish(name);
}

program read_trace_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw user_error("cannot read trace file '" + path + "'");
    return read_trace(in, path);
}

}  // namespace trn
