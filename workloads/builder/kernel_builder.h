#pragma once
#include <array>
#include <functional>
#include <initializer_list>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/params.h"
#include "engines/cost_table.h"
#include "program/program.h"
#include "program/program_stream.h"

namespace trn {

// How the kernel was written: `nl` kernels go through the compiler, which rotates loop-local
// tiles over several physical buffers and spreads DMA triggers over the Sync (loads) and Scalar
// (stores) engines; `isa` kernels run in program order with one buffer per declared tile and
// every DMA triggered from the Sync engine.
enum class kernel_style { nl, isa };
kernel_style parse_style(const std::string& s);

struct builder_options {
    kernel_style style = kernel_style::nl;
    program_limits limits;
    std::uint32_t nl_buffers = 4;
    std::uint32_t nl_rewrite_buffers = 2;
    std::uint64_t nl_unroll_limit = 4096;  // longest loop the middle-end unrolls (nl)
    std::uint64_t isa_unroll_limit = 64;   // longest loop the backend unrolls (isa)
    std::uint32_t pe_rows = 128;           // TILE_K: contraction size of one matmul
    std::uint32_t pe_cols = 128;           // TILE_M: stationary free size
    std::uint32_t moving_max = 512;        // TILE_N: moving free size
    std::uint64_t psum_bank_bytes = 2048;
    // The compiler's estimate of each engine's work (cost table of hardware-facts 2): what
    // copy() balances.
    int isa_version = 2;
    double min_ii = 64;
    double reciprocal_cycles = 8;  // core.dve.reciprocal_cycles
    double dve_clock_ghz = 1.12, act_clock_ghz = 1.4, pool_clock_ghz = 1.4;
    double trigger_ns = 9;  // a DMA trigger's engine time
    // SBUF share for the transposes the compiler hoists (the NKI frontend's nl.matmul).
    double hoist_sbuf_share = 0.25;
    // compiler.hoist_loads: the NKI frontend decides it (_ops.hoisted_load) and records the
    // hoisted loads in their loops' first iterations, which the builder expands as written
    bool hoist_loads = true;
    // The compiler's instruction scheduler (style nl): how many instructions and transfers it
    // may hold back to place later ones first (0: program order; options() reads
    // compiler.schedule_window), and its estimate of a transfer: dma_fixed_ns plus its bytes
    // at dma_bytes_per_ns, the transfers one after another.
    std::uint32_t schedule_window = 0;
    std::uint64_t schedule_unroll_limit = 2;  // (loop_iteration)
    double dma_fixed_ns = 1000, dma_bytes_per_ns = 200;
};

struct hbm_tensor {
    std::size_t id = 0;
    std::string name;
    std::uint64_t offset = 0;
    std::uint64_t elems = 0;
    dtype type = dtype::float32;
};

// A tile declaration of a whole kernel, for plan_buffers(): `count` tiles declared together
// (e.g. the block dimensions of an NKI tensor) of `bytes` per partition each.
struct tile_request {
    mem_space space = mem_space::sbuf;
    std::uint64_t bytes = 0;
    std::size_t count = 1;
    bool single = false;  // one buffer whatever the style (state carried across a sequential loop)
    std::vector<std::uint64_t> loops;  // trip counts of the loops around it, outermost first
};

// A logical tile: one instance of a declared tile, living in one physical buffer.
struct tile {
    std::size_t buffer = 0;
    operand op;
    // An indirect view (tensor indirection, program/program.h's indirection): `op` is the view,
    // element i of each row the tile's column offset(i) of `extent` from op's first, the offsets
    // in `index` (of buffer `index_buffer`). extent 0: a direct tile.
    std::uint32_t extent = 0;
    std::size_t index_buffer = 0;
    operand index;
};

// The NKI-like kernel API: tensors in HBM, tiles in SBUF/PSUM, DMA loads and stores, engine
// instructions. It allocates physical buffers, derives every semaphore wait from the data
// dependencies (read-after-write, write-after-read, write-after-write) and emits a program.
// Contract: every error in a kernel's shapes or allocation throws user_error naming the tile
// and the limit; on-chip dependencies are tracked per region of a buffer (partitions x the bytes
// an operand spans), so accesses to disjoint parts of one tile are not ordered; HBM dependencies
// are tracked per tensor, and two stores to one tensor are taken to write disjoint ranges (of
// one DMA priority level they go to the same queue, which keeps their order; a level above 0
// has queues of its own: queue_for). A builder constructed
// while a program_stream builds (program_stream::producing()) streams: it emits each instruction
// and transfer into that stream as it goes (without their waits when the stream counts), and
// finish() returns the program without them.
class kernel_builder {
  public:
    static void declare_params(param_registry& r);
    static builder_options options(const config& cfg, const program_limits& limits,
                                   kernel_style style);
    explicit kernel_builder(const builder_options& opt);

    const builder_options& opts() const { return m_opt; }
    // Calls `observer` (process-wide, from whatever builder is running) each time a program
    // being built passes another `step` instructions and transfers, with the count so far: how
    // a command shows progress on, and warns about, a kernel that grows huge.
    static constexpr std::uint64_t default_growth_step = 1u << 20;
    static void on_growth(std::function<void(std::uint64_t)> observer,
                          std::uint64_t step = default_growth_step);
    std::uint32_t partitions() const { return m_opt.limits.partitions; }

    hbm_tensor input(const std::string& name, std::uint64_t elems, dtype type, float lo, float hi,
                     std::uint32_t seed);
    hbm_tensor output(const std::string& name, std::uint64_t elems, dtype type);
    // rows x elems of a tensor: row r starts at element first + r * row_stride.
    operand view(const hbm_tensor& t, std::uint64_t first, std::uint32_t rows, std::uint32_t elems,
                 std::uint64_t row_stride) const;

    // A tile declaration. buffers = 0 lets the style decide (policy_buffers; fewer if
    // SBUF is short; isa: 1). Instances rotate over the buffers.
    // loop_trips: the trip count of the innermost loop the tile is declared in (0: not in a
    // loop, or not said).
    std::size_t declare_tile(const std::string& name, mem_space space, std::uint32_t partitions,
                             std::uint32_t elems, dtype type, std::uint32_t buffers = 0,
                             std::uint64_t loop_trips = 0);
    // Direct allocation at a byte offset of partitions [first_partition, + partitions),
    // `buffers` consecutive buffers.
    std::size_t declare_tile_at(const std::string& name, mem_space space, std::uint32_t partitions,
                                std::uint32_t elems, dtype type, std::uint64_t offset,
                                std::uint32_t buffers, std::uint32_t first_partition = 0);
    // Memory that declarations with lifetimes apart take in turn: `buffers` buffers of `bytes`
    // per partition (a declaration of its own, never used as a tile). declare_tile_in() puts a
    // declaration in a reservation's first `buffers` buffers, `offset` bytes into each: their
    // dependencies are the reservation's, so a tile placed there waits for the accesses of those
    // before it that overlap it.
    std::size_t reserve(const std::string& name, mem_space space, std::uint64_t bytes,
                        std::uint32_t buffers);
    std::size_t declare_tile_in(const std::string& name, std::size_t reservation,
                                std::uint32_t partitions, std::uint32_t elems, dtype type,
                                std::uint32_t buffers, std::uint64_t offset = 0);
    // count declarations of the same tile that share one buffer count (the largest up to the
    // style's that lets all of them fit), e.g. the K/128 tiles of a hoisted operand.
    std::vector<std::size_t> declare_tile_array(const std::string& name, std::size_t count,
                                                mem_space space, std::uint32_t partitions,
                                                std::uint32_t elems, dtype type,
                                                std::uint32_t buffers = 0,
                                                std::uint64_t loop_trips = 0);
    // The compiler's buffer count for a tile declared in a loop of `loop_trips` iterations
    // (0: outside loops): nl: compiler.nl_buffers, isa: 1; in a loop, nl_buffers (at most the
    // trip count) if the style's compiler unrolls it (trips <= compiler.nl_unroll_limit or
    // compiler.isa_unroll_limit), else 1.
    std::uint32_t policy_buffers(std::uint64_t loop_trips) const;
    // The instances of a declaration the compiler unrolls, from the trip counts of the loops
    // around it (outermost first): the innermost loop, times the next ones out while the
    // product stays within the style's unroll limit (an unrolled inner loop makes its parent's
    // body straight-line code, which is unrolled in turn); single-trip loops are no loops.
    // 0 when there is no loop.
    std::uint64_t unrolled_trips(const std::vector<std::uint64_t>& loops) const;
    // The style's buffer count (policy_buffers), lowered until `bytes` per
    // partition per buffer (a group of tiles declared together) fits in what is left of SBUF.
    std::uint32_t buffers_that_fit(std::uint64_t bytes, std::uint64_t loop_trips = 0) const;
    // `bytes` rounded up to a buffer's alignment in `space` (a PSUM bank, or 64 bytes of SBUF).
    std::uint64_t aligned_bytes(mem_space space, std::uint64_t bytes) const;
    std::uint64_t sbuf_free() const { return m_opt.limits.sbuf_partition_bytes - m_sbuf_used; }
    std::uint64_t psum_free() const { return m_opt.limits.psum_partition_bytes - m_psum_used; }
    // What the build decided that a user should hear (a rotation reduced to fit), in order.
    void note(const std::string& what) { m_notes.push_back(what); }
    const std::vector<std::string>& notes() const { return m_notes; }
    // The buffer count of each of a kernel's declarations, decided together before any is
    // declared (a frontend that knows the whole kernel): `single` ones get 1; each other one
    // at most policy_buffers(unrolled_trips(loops)). In each of SBUF and PSUM they share the
    // largest count (capped by each one's policy) that lets all of them fit in what is left (at
    // least 1: declaring then reports what does not fit), and what is still left raises the
    // smallest single tiles (count 1) first, each up to its policy (tile arrays, operands hoisted
    // together, keep the shared count).
    std::vector<std::uint32_t> plan_buffers(const std::vector<tile_request>& requests) const;
    tile next(std::size_t decl);
    // Part of a tile: elems [first, first + count) of every partition, or partitions
    // [first, first + count). Dependencies stay those of the whole buffer.
    static tile slice(const tile& t, std::uint32_t first, std::uint32_t count);
    // Every `step`-th element of t's free dimension from `first`, `count` of them (a strided
    // view, such as one filter tap of a [P, Cin x K x K] weight tile).
    static tile strided(const tile& t, std::uint32_t first, std::uint32_t count,
                        std::uint32_t step);
    static tile partitions_of(const tile& t, std::uint32_t first, std::uint32_t count);
    // Part of a whole tile `t` (as next() returns it): partitions [p0, p0 + pc), elements f0,
    // f0 + elem_stride, ... (fc of them), with `elem_stride` the operand's element stride.
    static tile part(const tile& t, std::uint32_t p0, std::uint32_t pc, std::uint32_t f0,
                     std::uint32_t fc, std::uint32_t elem_stride);

    // A DMA's `priority` is its quality-of-service level (dma_transfer::priority; 0 the highest).
    // `offset`: a [1, 1] tile whose value moves the HBM side at run time (NKI's scalar_offset):
    // the transfer waits for it to be written, and is timed on `src` as given (the model does
    // not read the offset's value).
    void load(const tile& dst, const hbm_tensor& t, const operand& src, std::uint8_t priority = 0,
              const tile* offset = nullptr);
    // dst += src by a DMA read-add-write (in fp32; bf16 or fp32, both the same): it reads dst
    // as well as src, and costs its rows' copy time over core.dma.rmw_rate.
    // An indirect load (software DGE): row p of dst from the row of `t` that element p of the
    // [P, 1] tile `index` names, triggered from the GpSimd engine after `index` is written. The
    // transfer is timed on `src`, the rows as if the indices were 0, 1, ... (the model does
    // not read the indices' values).
    void gather(const tile& dst, const hbm_tensor& t, const operand& src, const tile& index);
    void load_add(const tile& dst, const hbm_tensor& t, const operand& src,
                  std::uint8_t priority = 0);
    // dst[c, r] = src[r, c] by one DMA transpose (nl.load_transpose2d, nisa.dma_transpose):
    // dst's partitions are src's elements, its elements src's rows (dst's dtype: the DMA casts);
    // its rows cost their copy time over core.dma.transpose_rate.
    void load_transposed(const tile& dst, const hbm_tensor& t, const operand& src,
                         std::uint8_t priority = 0);
    void store(const hbm_tensor& t, const operand& dst, const tile& src, std::uint8_t priority = 0,
               const tile* offset = nullptr);
    // A DMA between two SBUF tiles (nisa.dma_copy of on-chip operands), of equal partitions and
    // elements a partition (dst's dtype: the DMA casts); triggered from the Sync engine on the
    // queue of dst's buffer (a model choice).
    void sbuf_dma(const tile& dst, const tile& src);
    // The next transfer (load, store, sbuf_dma, ...) is part `part` of one DMA whose access
    // pattern has several runs a partition, split into one transfer a run
    // (dma_transfer::part); the transfers after it are parts 0 again.
    void next_transfer_part(std::uint8_t part) { m_part = part; }
    // The next engine instruction continues the one before it on its engine (flag::continues):
    // one instruction of several runs a partition, written as one a run.
    void next_instruction_continues() { m_continues = true; }
    // A DMA from HBM tensor `st` (its part `src`) to `dt` (`dst`), of equal rows and elements a
    // row (nisa.dma_copy between HBM tensors); triggered from the Sync engine on dt's queue.
    void hbm_dma(const hbm_tensor& dt, const operand& dst, const hbm_tensor& st,
                 const operand& src);
    // An indirect store (a scatter): row p of `src` into the row of tensor `t` that element p
    // of `index` names, timed on the rows `dst` (as gather's loads); described by the GpSimd
    // engine's software DGE, after index is written.
    void scatter(const hbm_tensor& t, const operand& dst, const tile& src, const tile& index);
    // nisa.core_barrier on `on` over HBM tensor `t`: it waits for this core's accesses of t
    // so far (its stores, so that the other cores see them), and this core's later accesses of
    // t wait for it (so that they see the other cores' writes).
    void core_barrier(engine_kind on, const hbm_tensor& t);
    // nisa.core_barrier over a tile of this core (AWS's kernels pass one; the reference asks
    // for shared HBM): the cores meet as above, after this core's accesses of the tile so far
    // and before its later ones.
    void core_barrier(engine_kind on, const tile& t);
    // nisa.sendrecv: this core's src tile to the other core's dst, the other's src into this
    // dst, then the two meet (a core_barrier on the Sync engine). Timed as a DMA of src into
    // this core's own dst (the exchange is symmetric), on the last DMA queue; dst's later
    // readers wait for the meeting.
    void sendrecv(const tile& dst, const tile& src);
    void tensor_tensor(const tile& dst, const tile& a, const tile& b, alu_op op,
                       engine_kind on = engine_kind::dve);
    // dst = (a <op> imm) <op1> imm1 (op1 bypass: one operation).
    void tensor_scalar(const tile& dst, const tile& a, alu_op op, float imm,
                       engine_kind on = engine_kind::dve, alu_op op1 = alu_op::bypass,
                       float imm1 = 0);
    void tensor_copy(const tile& dst, const tile& a, engine_kind on = engine_kind::dve);
    // dst = src on the engine the compiler picks (a copy whose engine the kernel leaves open,
    // nki.isa engine=unknown): in an nl kernel, the Vector or the Scalar engine (an identity
    // activation; on NeuronCore-v4 its own tensor_copy) by compiler_engine; in an isa kernel,
    // the Vector engine. GpSimd is not a candidate: its copy cost is a guess, and on NC-v2 it
    // shares the Vector engine's SBUF port.
    void copy(const tile& dst, const tile& src);
    // The engine the compiler picks between the Vector and the Scalar engine for one
    // instruction (as on_dve or on_act): the one where it costs less (cost table at the
    // engine's clock: the tile's shape and dtypes decide), and at equal cost the one with less
    // estimated work so far.
    engine_kind compiler_engine(const instruction& on_dve, const instruction& on_act) const;
    // tensor_scalar_ap as a kernel that leaves the engine to the compiler writes it
    // (nisa.tensor_scalar without engine=): on the engine compiler_engine picks. Contract: an
    // operation both engines run (multiply or add; the Scalar engine's scale and bias) on
    // floating-point data.
    void tensor_scalar_open(const tile& dst, const tile& src, alu_op op, const tile& scalar);
    // instruction_op on the engine compiler_engine picks for `ins` (an instruction both engines
    // run the same way, as a tensor_scalar of arithmetic operations: nki.isa engine=unknown).
    void instruction_either(instruction ins, const tile& dst, const tile& src0,
                            const tile* src1 = nullptr, const tile* src2 = nullptr);
    // The estimated engine time of the instructions placed on `e` so far, in ns.
    double estimated_ns(engine_kind e) const { return m_estimated_ns[std::size_t(e)]; }
    void memset(const tile& dst, float value, engine_kind on = engine_kind::dve);
    // dst = func(src * scale + bias[p, 0]) on the Scalar engine (bias: a [P, 1] tile, or none).
    void activation(const tile& dst, const tile& src, act_func func, float scale = 1.0f,
                    engine_kind on = engine_kind::act, const tile* bias = nullptr);
    // dst = (src <op> scalar[p, 0]) <op1> imm1, one scalar per partition.
    void tensor_scalar_ap(const tile& dst, const tile& src, alu_op op, const tile& scalar,
                          engine_kind on = engine_kind::dve, alu_op op1 = alu_op::bypass,
                          float imm1 = 0);
    // dst = (a <op0> imm) <op1> b, on the Vector engine.
    void scalar_tensor_tensor(const tile& dst, const tile& a, alu_op op0, float imm, alu_op op1,
                              const tile& b);
    // dst[p, i] = (a[p, i] <op0> dst[p, i-1]) <op1> b[p, i], from `initial`: a scan along the
    // free axis on the Vector engine.
    void tensor_tensor_scan(const tile& dst, const tile& a, const tile& b, float initial,
                            alu_op op0, alu_op op1);
    // dst[p, i] = offset + partition_step * p + i, on the GpSimd engine.
    void iota(const tile& dst, float offset, float partition_step);
    // dst[p, 0..7]: the 8 largest of src[p, :]; indices: where those values first occur.
    void max8(const tile& dst, const tile& src);
    void find_index8(const tile& dst, const tile& src, const tile& values);
    void tensor_reduce(const tile& dst, const tile& src, alu_op op,
                       engine_kind on = engine_kind::dve);
    // dst (PSUM, M x N) = stationary[K, M]^T x moving[K, N], added to dst when `accumulate`.
    // An MX matmul (NeuronCore-v4): x4-packed fp8/fp4 stationary and moving tiles with their
    // scales (uint8 or fp8_e8m0, 4 partitions of each 32), into PSUM.
    void matmul_mx(const tile& dst, const tile& stationary, const tile& moving,
                   const tile& stationary_scale, const tile& moving_scale, bool accumulate);
    // `onezero`: flag::stationary_onezero and/or flag::moving_onezero, the kernel's declaration
    // that those operands hold only ones and zeros (fewer fp32 passes).
    void matmul(const tile& dst, const tile& stationary, const tile& moving, bool accumulate,
                bool double_row = false, std::uint16_t onezero = 0);
    // dst (PSUM, F x P) = src (SBUF, P x F) transposed on the Tensor engine; `onezero`
    // flag::moving_onezero when the kernel declares its identity ones and zeros.
    void transpose(const tile& dst, const tile& src, std::uint16_t onezero = 0);
    // Any engine instruction (core/isa.h): `ins` (opcode, operations, immediates, flags) with
    // its operands taken from the tiles given (null: none; no dst only for an opcode without
    // one, which then writes nothing); waits derived as for the others.
    // Contract: the operands are what the opcode declares; the program's validation checks.
    void instruction_op(engine_kind on, instruction ins, const tile* dst, const tile* src0,
                        const tile* src1 = nullptr, const tile* src2 = nullptr,
                        const tile* dst1 = nullptr);
    // The kernel source line ("FILE:LINE", "" for none) the next instructions and transfers
    // come from, kept in the program's sources (trace format 3's at=); by its id (place_id,
    // 0 for none) where it is set often.
    void set_place(const std::string& place) { set_place(place.empty() ? 0 : place_id(place)); }
    void set_place(std::uint32_t id) { m_place = id; }
    // Checks of each engine instruction and DMA transfer as it is built (the NKI frontend's:
    // the platform's rules, named at the kernel's line); each throws user_error. They run while
    // check_entries(true): the recording's expansion checks each operation's first expansion.
    struct entry_checks {
        std::function<void(engine_kind, const instruction&)> instruction;
        std::function<void(const dma_transfer&)> transfer;
    };
    void set_entry_checks(entry_checks checks) { m_checks = std::move(checks); }
    void check_entries(bool on) { m_checking = on && m_checks.instruction && m_checks.transfer; }
    std::uint32_t place_id(const std::string& place) { return m_prog.sources.intern(place); }
    double matmul_flops() const { return m_flops; }

    // The compiler's instruction scheduling (style nl, compiler.schedule_window above 0), for a
    // frontend that says where its loops' iterations begin: on, the scheduler may place an
    // instruction or DMA trigger before earlier ones it does not depend on, within one body
    // (loop_iteration); off (the default: a driver writes each engine's order itself), every
    // entry keeps program order from here.
    void set_reorder(bool on);
    // An iteration of a loop of `trips` iterations begins, or the loop has ended: past
    // compiler.schedule_unroll_limit trips the compiler keeps the loop, and schedules one
    // iteration's body at a time (no entry moves across this point); a shorter loop is
    // unrolled into the body around it.
    void loop_iteration(std::uint64_t trips) {
        if (trips > m_opt.schedule_unroll_limit) drain();
    }

    // Phases: tiles declared after begin_phase() are freed by end_phase(), so a later phase can
    // reuse their SBUF and PSUM. A buffer placed in freed memory first waits for everything the
    // freed buffers' users did (their dependency states are inherited), and a freed tile
    // declaration must not be used again.
    void begin_phase();
    void end_phase();

    program finish();
    // After finish(): the races of a kernel that placed tiles itself (declare_tile_at), each
    // naming the two accesses (program/race_check.h); empty otherwise.
    const std::vector<std::string>& races() const { return m_races; }

  private:
    struct decl {
        std::string name;
        operand shape;
        std::vector<std::size_t> buffers;    // physical buffer ids
        std::vector<std::uint64_t> offsets;  // byte offset of each buffer in every partition
        std::size_t next = 0;
        std::uint64_t reserved = 0;  // a reservation: its bytes per partition per buffer
    };
    // Part of a buffer: partitions [p0, p1) x bytes [lo, hi) of each (an HBM tensor: all of it).
    struct region {
        std::uint32_t p0 = 0, p1 = ~0u;
        std::uint64_t lo = 0, hi = ~std::uint64_t{0};
        bool overlaps(const region& o) const {
            return p0 < o.p1 && o.p0 < p1 && lo < o.hi && o.lo < hi;
        }
        bool covers(const region& o) const {
            return p0 <= o.p0 && o.p1 <= p1 && lo <= o.lo && o.hi <= hi;
        }
    };
    // An access still to be waited for: the completion `done` that releases `where`.
    struct access_rec {
        region where;
        sem_wait done;
    };
    // Dependency state of a buffer or HBM tensor: its latest writes and reads by region, no
    // older ones a newer write covers (that write waited for them, and semaphores only grow).
    struct dep_state {
        std::vector<access_rec> writers, readers;
    };
    // A buffer or HBM tensor (its entry in m_deps) and the region an instruction touches.
    struct touch {
        std::size_t dep;
        region where;
    };
    static region region_of(const operand& op);
    // A core_barrier on `on` after this core's accesses of `data` so far, before its later ones.
    void meet(engine_kind on, const touch& data);
    // The region a tile operand may touch (all of an indirect view's indexed tile).
    static region region_of(const tile& t) {
        if (!t.extent) return region_of(t.op);
        operand whole = t.op;
        whole.elems = t.extent;
        return region_of(whole);
    }
    // Adds access `a` to `recs` (raising an entry of the same semaphore and region); past a
    // bound, merges them into one entry per semaphore over their regions' hull (a superset).
    static void note(std::vector<access_rec>& recs, const access_rec& a);
    // Adds every access of `from` to `into` as an access of everything (freed memory).
    static void absorb(std::vector<access_rec>& into, const std::vector<access_rec>& from);
    std::size_t new_buffer();
    // A declaration of that name and tile shape, without buffers yet.
    static decl tile_decl(const std::string& name, mem_space space, std::uint32_t partitions,
                          std::uint32_t elems, dtype type, std::uint32_t first_partition = 0);
    // Adds declaration d with `buffers` new buffers from byte `at`, `stride` apart: its id.
    std::size_t push_decl(decl d, std::uint64_t at, std::uint64_t stride, std::uint32_t buffers);
    std::uint64_t allocate(mem_space space, std::uint64_t bytes, const std::string& name,
                           std::uint32_t buffers, bool may_shrink, std::uint32_t& granted);
    void check_tile(const std::string& name, std::uint32_t partitions, std::uint32_t elems) const;
    // Emits `ins` on `issuer`'s stream with the waits its data dependencies need: it reads the
    // `read_count` regions at `reads` and writes `write`, and signals `done` when complete:
    // a queue's semaphore reaching `done_value`, an engine's reaching the count of the
    // instructions emitted on it (done_value unused); it waits only for accesses whose regions
    // overlap its own.
    // `in_order_writes`: the issuer's own earlier writes to `write` are ordered by the hardware
    // (PSUM accumulation), so no wait on its own semaphore is needed for them. `also`: one more
    // wait the instruction needs.
    // With a schedule window (scheduling()), an entry is held back and emitted later, in the
    // order the scheduler picks.
    void issue(engine_kind issuer, instruction&& ins, sem_id done, std::uint32_t done_value,
               const touch* reads, std::size_t read_count, const touch* writes,
               std::size_t write_count, bool in_order_writes = false,
               const sem_wait* also = nullptr);
    // issue() now, in program order from here.
    void emit(engine_kind issuer, instruction&& ins, sem_id done, std::uint32_t done_value,
              const touch* reads, std::size_t read_count, const touch* writes,
              std::size_t write_count, bool in_order_writes, const sem_wait* also);
    // The waits an entry's accesses need now (unfiltered), into `need`.
    void needed_waits(const touch* reads, std::size_t read_count, const touch* writes,
                      std::size_t write_count, bool in_order_writes, sem_id done,
                      const sem_wait* also, std::vector<sem_wait>& need) const;

    // The scheduler: a list scheduler over a window of held-back entries, which places each
    // entry as early as its estimated start allows (the engines' and the DMA's estimated
    // times, the cost table's), never before an entry it conflicts with (an overlapping access
    // that writes, a transfer of the same queue).
    struct held {
        std::uint64_t seq = 0;
        engine_kind issuer = engine_kind::sp;
        instruction ins;
        sem_id done = 0;
        std::uint32_t done_value = 0;  // (a queue's; an engine's is counted at emission)
        std::vector<touch> reads, writes;
        bool in_order_writes = false;
        bool has_also = false;
        sem_wait also{0, 0};
        std::uint32_t place = 0;
        std::uint64_t transfer_bytes = 0;  // a trigger's transfer
        std::uint32_t blockers = 0;        // held entries before it that it conflicts with
        std::vector<std::uint64_t> after;  // held entries after it that conflict with it
        std::vector<held> continued;       // its continuation runs (flag::continues)
        bool ready_known = false;
        double ready_ns = 0;  // when its dependencies on emitted entries are done (estimate)
    };
    bool schedules() const { return m_opt.schedule_window > 0 && m_opt.style == kernel_style::nl; }
    // (none once the kernel places tiles itself: declare_tile_at)
    bool scheduling() const { return schedules() && m_reorder && !m_direct; }
    bool conflicts(const held& earlier, const held& later) const;  // (with their continuations)
    bool conflicts_one(const held& earlier, const held& later) const;
    void hold(held h);
    void emit_one();  // the held entry the scheduler picks
    void emit_held(held& h);
    void drain();  // every held entry
    double finish_ns(const sem_wait& w) const;
    double ready_ns(held& h);  // when h's dependencies on emitted entries are done (estimate)
    void record_finish(sem_id s, std::uint32_t value, double ns);
    bool m_reorder = false;
    bool m_reordered = false;  // scheduling was on at some point (the counting build's path)
    std::uint64_t m_seq = 0;
    std::uint64_t m_next_transfer_bytes = 0;  // (transfer() to issue())
    std::unordered_map<std::uint64_t, held> m_held;
    std::vector<std::uint64_t> m_held_order;       // the held entries' seq, in program order
    std::array<double, engine_count> m_free_ns{};  // each engine's estimated time
    double m_dma_free_ns = 0;
    // Each semaphore's estimated completion times, its last finish_ring values.
    static constexpr std::uint32_t finish_ring = 1u << 12;
    std::vector<std::vector<double>> m_finish;
    std::vector<std::uint32_t> m_finish_count;
    void engine_op(engine_kind on, instruction ins, std::initializer_list<const tile*> reads,
                   const tile& dst, bool in_order_writes = false, const tile* dst1 = nullptr);
    // Sets the newest entry of a stream's place list (count entries long) to the current place.
    void placed(std::vector<std::uint32_t>& ids, std::size_t count);
    std::uint32_t m_place = 0;  // the current place's id in the program's sources (0: none)
    entry_checks m_checks;
    bool m_checking = false;
    // A driver's steps: an instruction or transfer built while no place is set gets the place
    // "<what> <tile or tensor>" ("load lhsT_tile", "matmul res_psum", "store result"), so that a
    // C++ driver's program is attributed per step as a kernel's is per line. step_place() is
    // the id of a step (cached by kind, (opcode, load or store) and declaration or tensor).
    // (`what` a C string: the name is made only when a step is first seen)
    std::uint32_t step_place(std::uint32_t kind, std::size_t id, const char* what,
                             const std::string& name);
    std::uint32_t buffer_step(std::uint32_t kind, const char* what, std::size_t buffer);
    class step_scope;
    std::unordered_map<std::uint64_t, std::uint32_t> m_steps;
    std::vector<std::size_t> m_buffer_decl;  // each buffer's declaration (m_decls index)
    std::uint32_t m_barriers = 0;            // core_barrier instructions issued
    std::size_t queue_for(const hbm_tensor& t, std::uint8_t priority = 0);
    // The estimated engine time of `ins` on `e` (cost table at the engine's clock), and its
    // addition to e's total.
    double cost_ns(engine_kind e, const instruction& ins) const;
    void estimate(engine_kind e, const instruction& ins);
    void dma(bool is_load, const hbm_tensor& t, const operand& hbm_side, const tile& chip,
             alu_op rmw, std::uint8_t priority, const tile* offset = nullptr,
             bool transpose = false);
    // gather (is_load) and scatter: chip's rows from or to the rows of t `index` names, timed
    // on hbm_side's rows, triggered from the GpSimd engine once index is written.
    void indirect_dma(bool is_load, const hbm_tensor& t, const operand& hbm_side, const tile& chip,
                      const tile& index);
    // Appends transfer `t` to queue q and rings it from `by` (reading `from`, and `into` too
    // for a read-add-write, `also_read` when given; writing `into`): its number in the queue
    // (the queue's semaphore reaches it when the transfer is done).
    std::uint32_t transfer(std::size_t q, const dma_transfer& t, engine_kind by, const touch& from,
                           const touch& into, const touch* also_read = nullptr);

    builder_options m_opt;
    cost_table m_costs;
    program_stream* m_stream;  // where entries go when it streams (else into m_prog)
    std::array<std::size_t, engine_count> m_emitted{};  // instructions per engine
    std::vector<std::size_t> m_transfers;               // transfers per DMA queue
    std::uint8_t m_part = 0;                            // next_transfer_part
    bool m_continues = false;                           // next_instruction_continues
    std::array<double, engine_count> m_estimated_ns{};
    std::vector<engine_kind> m_queue_trigger;  // per DMA queue: who rang for its last transfer
    program m_prog;
    std::uint64_t m_grown = 0;  // instructions and transfers issued
    void grew();
    std::vector<decl> m_decls;
    std::vector<std::size_t> m_buffer_dep;  // physical buffer -> its entry in m_deps
    std::vector<dep_state> m_deps;          // one per buffer and per HBM tensor
    std::vector<bool> m_dep_is_hbm;
    std::vector<std::size_t> m_tensor_dep;  // HBM tensor id -> its entry in m_deps
    // (tensor id << 8 | DMA level above 0) -> its queue (queue_for)
    std::unordered_map<std::uint64_t, std::size_t> m_level_queue;
    std::vector<std::vector<std::uint32_t>> m_waited;  // [issuer][sem] highest value waited
    std::vector<sem_wait> m_need;                      // scratch of issue()
    std::uint64_t m_sbuf_used = 0, m_psum_used = 0, m_hbm_used = 0;
    double m_flops = 0;
    struct phase {
        std::uint64_t sbuf_used, psum_used;
        std::size_t first_decl, first_buffer;
    };
    std::vector<phase> m_phases;
    dep_state m_freed;  // union of the dependency states of freed buffers
    std::vector<bool> m_decl_freed;
    bool m_direct = false;  // a tile was placed by the kernel (declare_tile_at)
    std::vector<std::string> m_races;
    std::vector<std::string> m_notes;
};

}  // namespace trn
