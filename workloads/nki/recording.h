#pragma once
#include <array>
#include <cstdint>
#include <istream>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "program/program.h"
#include "workloads/builder/kernel_builder.h"

namespace trn {

// An NKI kernel as the frontend (workloads/nki/python) records it: HBM tensors, tile
// declarations and operations in program order, each loop body recorded once with its indices
// symbolic. Operands are affine in the loop indices; expanding the loops is the builder's work
// (expand_recording). The text form (docs/nki.md, "The recording") is how the frontend hands
// a recording over and how tests compare one.

// c + sum of coef * (index of loop `loop`), each index counting 0, 1, ... trips - 1.
struct nki_affine {
    std::int64_t c = 0;
    std::vector<std::pair<std::uint32_t, std::int64_t>> terms;  // (loop id, coefficient)
    std::int64_t at(const std::vector<std::int64_t>& index) const {
        std::int64_t v = c;
        for (const auto& [loop, coef] : terms)
            v += coef * index[loop];
        return v;
    }
};

// Part of an instance of a tile declaration: `back` instances before the latest one (0: the
// latest), logical tile `block` of it (0 without block dimensions), partitions [p0, p0 + pc),
// elements f0, f0 + es, ... (fc of them; es is the operand's element stride).
// An indirect view (NKI's .indirect(), recorded as <view>~<index>~<extent>): fc elements a row
// from the `extent` columns f0, f0 + es, ... at the offsets in tile `index`.
struct nki_tile_ref {
    std::uint32_t decl = 0, back = 0;
    nki_affine block, p0, f0;
    std::uint32_t pc = 0, fc = 0, es = 1;
    std::uint32_t extent = 0;  // 0: a direct part
    std::shared_ptr<const nki_tile_ref> index;
};

// rows x elems of an HBM tensor: row r starts at element first + r * row_stride (0: a
// broadcast of one row).
struct nki_hbm_ref {
    std::uint32_t tensor = 0;
    nki_affine first;
    std::uint32_t rows = 0, elems = 0;
    std::uint64_t row_stride = 0;
};

struct nki_tensor {
    std::string name;
    bool input = false;
    dtype type = dtype::float32;
    std::uint64_t elems = 0;
};

// A tile declaration: `count` logical tiles (its block dimensions) of partitions x elems.
struct nki_decl {
    std::string name;
    mem_space space = mem_space::sbuf;
    std::uint32_t partitions = 0, elems = 0;
    dtype type = dtype::float32;
    std::uint32_t count = 1;
    bool blocked = false;  // has block dimensions: a logical tile is taken at its first use
    bool single = false;   // keeps one buffer (runs once, or carries state)
    bool rewrite = false;  // DMAs rewrite its tiles (nki_op::rewrite): at least
                           // compiler.nl_rewrite_buffers buffers
    std::vector<std::uint64_t> loops;    // trip counts of the NKI loops around it, outermost first
    std::vector<std::uint64_t> offsets;  // direct allocation: the byte offset of each buffer
    std::vector<std::uint32_t> first_partitions;  // ... and its first partition
    std::vector<std::uint32_t> phys;              // ... and each logical tile's buffer among them
};

// `Ln@lo:hi` in an operation's `if=`: it runs in iterations lo .. hi - 1 of loop Ln (the part
// of a folded loop whose iterations recorded it, as a mask cut their tiles).
struct nki_span {
    std::uint32_t loop = 0;
    std::int64_t lo = 0, hi = 0;
    bool operator==(const nki_span& o) const { return loop == o.loop && lo == o.lo && hi == o.hi; }
};

enum class nki_op_kind : std::uint8_t {
    loop,  // the body up to the matching end runs `trips` times
    end,
    // `iteration TRIPS`: an iteration of a loop of TRIPS iterations the recording unrolled
    // begins, or that loop has ended (the compiler's scheduling bodies: loop_iteration)
    iteration,
    // `order kept` / `order free`: an nl.no_reorder block (or loop) begins (keeps_order) or
    // ends; the compiler's scheduler keeps program order inside (set_reorder)
    order,
    declare,  // a new instance of a declaration
    load,
    load_add,  // `load_add T H`: T += H by a DMA read-add-write (nisa.dma_copy's dst_rmw_op)
    store,
    copy,
    matmul,
    matmul_mx,  // `matmul_mx DST STATIONARY MOVING STATIONARY_SCALE MOVING_SCALE ACC`
    transpose,
    print,        // values only: no instruction
    instruction,  // any instruction of the ISA (core/isa.h): `ins ENGINE OPCODE field=value...`
    barrier,      // `barrier ENGINE H...` or `tile_barrier ENGINE TILE`: nisa.core_barrier on
                  // that engine over an HBM tensor, or over a tile of this core
    sendrecv,     // `sendrecv DST SRC`: nisa.sendrecv (the other core's src into dst)
    gather,       // `gather T H INDEX`: an indirect load, row p of T from H's row INDEX[p]
    load_at,      // `load_at T H OFFSET`: a load from H moved at run time by OFFSET's value
    store_at,     // `store_at H T OFFSET`: a store to H moved at run time by OFFSET's value
    dma,          // `dma DST SRC`: a DMA between two SBUF tiles
    hbm_dma,      // `hbm_dma H... H...`: a DMA from HBM (hbm2) to HBM (hbm)
    scatter,      // `scatter H T INDEX`: an indirect store, row p of T to H's row INDEX[p]
};

struct nki_op {
    nki_op_kind kind = nki_op_kind::print;
    std::uint32_t loop = 0;           // loop, end: the loop's id; declare: the declaration
    std::uint64_t trips = 0;          // loop
    std::vector<std::uint32_t> when;  // runs only when every one of these loops is at index 0
    std::vector<nki_span> spans;      // ... and each of these loops' index is in its span
    std::vector<nki_tile_ref> tiles;  // dst first, then the sources in the builder call's order
    nki_hbm_ref hbm;   // load(_add,_at), gather: the source; store(_at), hbm_dma: the
                       // destination; barrier: its tensor
    nki_hbm_ref hbm2;  // hbm_dma: the source
    alu_op alu0 = alu_op::bypass, alu1 = alu_op::bypass;
    engine_kind engine = engine_kind::dve;
    // instruction: the compiler picks its engine (ENGINE "either": a tensor_scalar the kernel
    // leaves to it, kernel_builder::instruction_either)
    bool either = false;
    act_func func = act_func::identity;
    float imm0 = 0, imm1 = 0;
    // matmul: adds to dst unless every loop of `fresh` is at index 0 (accumulate = 1: always;
    // 0 with `fresh` empty: never).
    bool accumulate = false;
    bool double_row = false;    // matmul: the fp8 double-row mode (NeuronCore-v3)
    std::uint8_t priority = 0;  // load(_add), store: the DMA's quality-of-service level
    bool bits = false;          // load: the tensor's bytes as the tile's dtype (no cast)
    bool transpose = false;     // load: a DMA transpose, T[c, r] = H[r, c] (`transpose`)
    // load, load_at, gather, dma: the DMA rewrites dst's logical tile (all the kernel reads of
    // it before its next write), into its next copy (the compiler's, nki_decl::rewrite)
    bool rewrite = false;
    // load, load_add, store, dma: which transfer of one DMA split into one a run (part=N, N
    // from 1 for the second; dma_transfer::part)
    std::uint8_t part = 0;
    // an engine instruction (ins, copy, ...): continues the one before it on its engine, one
    // instruction of several runs a partition written as one a run (`cont`; flag::continues)
    bool cont = false;
    bool keeps_order = false;  // order: `order kept`
    std::vector<std::uint32_t> fresh;
    // instruction: its opcode and flags, and which of `tiles` is each of its tile fields (dst,
    // src0, src1, src2, dst1; -1: none)
    opcode code = opcode::tensor_copy;
    std::uint16_t flags = 0;
    float imm2 = 0, imm3 = 0;
    std::array<std::int8_t, 5> slots{-1, -1, -1, -1, -1};
    std::uint32_t place = 0;  // one plus its index in the recording's places (0: none)
};

struct nki_recording {
    kernel_style style = kernel_style::nl;
    std::vector<nki_tensor> tensors;
    std::vector<nki_decl> decls;
    std::vector<nki_op> ops;
    std::uint32_t loops = 0;          // loop ids are 0 .. loops - 1
    std::vector<std::string> places;  // the kernel's source lines ("FILE:LINE") ops came from
};

// Reads a recording's text form; a malformed one throws std::invalid_argument naming the line.
nki_recording parse_recording(std::istream& in);

// An error of the operation at index `op` of the recording (its kernel line is the frontend's).
class nki_op_error : public std::runtime_error {
  public:
    nki_op_error(std::size_t op, const std::string& what) : std::runtime_error(what), m_op(op) {}
    std::size_t op() const { return m_op; }

  private:
    std::size_t m_op;
};

// The recording cannot be expanded as it is: loop `loop` must be recorded unrolled (a phase
// of the builder would begin or end inside one of its iterations).
class nki_unroll_request : public std::runtime_error {
  public:
    explicit nki_unroll_request(std::uint32_t loop)
        : std::runtime_error("loop L" + std::to_string(loop) + " must be unrolled"), m_loop(loop) {}
    std::uint32_t loop() const { return m_loop; }

  private:
    std::uint32_t m_loop;
};

// Builds the recording with `kb` (a builder of the recording's style) and returns the program.
// Contract: the builder calls, in order, are those of running the kernel with every loop
// unrolled: HBM tensors first, then each operation once per iteration of its loops (those with
// `when` only in the first iteration of the loops it names), a declaration's buffers planned
// (plan_buffers) before its first instance, declarations whose lifetimes do not overlap in
// phases of their own (begin_phase / end_phase), a line's repeated declarations (a family) and
// blocks used one per iteration taking one declaration's buffers in turn, and, when a phase
// does not fit even with one buffer per tile, tiles whose lifetimes do not overlap sharing
// reservations (reserve / declare_tile_in) instead of phases. An error of the builder or of the
// recording throws nki_op_error naming the operation; nki_unroll_request asks for a loop unrolled.
program expand_recording(const nki_recording& r, kernel_builder& kb);

}  // namespace trn
