#include "workloads/matmul/matmul.h"

#include <cmath>

#include "core/error.h"

namespace trn {

std::vector<param_doc> matmul_workload::params() const {
    return {
        {"variant", "tiled", "tiled | hoist_load | block_free_dimension | fully_optimized"},
        {"m", "4096", "rows of the result (multiple of TILE_M, x2048 for fully_optimized)"},
        {"k", "8192", "contraction size (multiple of TILE_K, x1024 for fully_optimized)"},
        {"n", "8192", "columns of the result (multiple of TILE_N, x1024 for blocked variants)"},
        {"dtype", "bfloat16", "operand and result type: bfloat16 | float16 | float32 | fp8"},
        {"perf_mode", "none", "none | double_row (fp8 at 2x, NeuronCore-v3 only)"},
        {"style", "nl", "nl (compiler-scheduled) | isa (program order)"},
    };
}

namespace {

// Blocking factors of the tutorial (in tiles).
struct blocking {
    std::uint64_t m = 1, n = 1, k = 1;
};

blocking blocks_of(const std::string& variant) {
    if (variant == "block_free_dimension") return {2, 2, 1};
    if (variant == "fully_optimized") return {16, 2, 8};
    return {};
}

}  // namespace

namespace {

// Throws a user_error when `bytes` per partition do not fit in what is left of SBUF.
void require_fit(const kernel_builder& kb, const std::string& variant, std::uint64_t bytes,
                 const char* what) {
    const std::uint64_t left = kb.sbuf_free();
    if (bytes > left)
        throw user_error("matmul " + variant + ": " + what + " need " + std::to_string(bytes) +
                         " bytes per partition, more than the " + std::to_string(left) +
                         " bytes of SBUF left (reduce k, or use another variant)");
}

}  // namespace

void check_matmul_shape(const kernel_builder& kb, const std::string& variant, const matmul_shape& s,
                        const std::array<const char*, 3>& names) {
    const auto& o = kb.opts();
    const blocking b = blocks_of(variant);
    auto need = [&](std::uint64_t v, std::uint64_t tile, std::uint64_t per, const char* name,
                    const char* tile_name) {
        const std::uint64_t unit = tile * per;
        if (v == 0 || v % unit != 0)
            throw user_error("matmul " + variant + ": " + name + "=" + std::to_string(v) +
                             " must be a multiple of " + std::to_string(unit) + " (" + tile_name +
                             "=" + std::to_string(tile) +
                             (per > 1 ? " x " + std::to_string(per) + " tiles per block" : "") +
                             ")");
    };
    need(s.m, o.pe_cols, b.m, names[0], "TILE_M = core.pe.cols");
    need(s.k, std::min(o.pe_rows, o.limits.partitions), b.k, names[1], "TILE_K = core.pe.rows");
    need(s.n, o.moving_max, b.n, names[2], "TILE_N = core.pe.moving_max");
}

namespace {

// Emits the tutorial's matmul variants into a builder (one object per program): result = lhsT^T
// rhs in tiles of the Tensor engine's shape, PSUM tiles of `res_psum` accumulating over K.
class matmul_emitter {
  public:
    matmul_emitter(kernel_builder& kb, const hbm_tensor& lhsT, const hbm_tensor& rhs,
                   const hbm_tensor& result, const matmul_shape& s, bool double_row)
        : m_kb(kb),
          m_lhsT(lhsT),
          m_rhs(rhs),
          m_result(result),
          m_s(s),
          m_double_row(double_row),
          m_in(lhsT.type),
          m_out(result.type) {
        const auto& o = kb.opts();
        m_TM = o.pe_cols;
        m_TK = std::min(o.pe_rows, o.limits.partitions);
        m_TN = o.moving_max;
        m_MT = s.m / m_TM;
        m_KT = s.k / m_TK;
        m_NT = s.n / m_TN;
        m_psum = kb.declare_tile("res_psum", mem_space::psum, m_TM, m_TN, dtype::float32);
    }

    // Loads both operands' tiles for every result tile.
    void tiled();
    // hoist_load, block_free_dimension: each block of lhsT tiles loaded once per row of blocks,
    // multiplied with every block of rhs tiles.
    void hoisted(const std::string& variant);
    // Blocks of M, N and K, the partial results accumulated in SBUF across K-blocks.
    void fully_optimized();

  private:
    operand lhsT_view(std::uint64_t kt, std::uint64_t m0, std::uint32_t width) const {
        return m_kb.view(m_lhsT, kt * m_TK * m_s.m + m0, m_TK, width, m_s.m);
    }
    operand rhs_view(std::uint64_t kt, std::uint64_t n0, std::uint32_t width) const {
        return m_kb.view(m_rhs, kt * m_TK * m_s.n + n0, m_TK, width, m_s.n);
    }
    operand result_view(std::uint64_t m0, std::uint64_t n0, std::uint32_t width) const {
        return m_kb.view(m_result, m0 * m_s.n + n0, m_TM, width, m_s.n);
    }

    kernel_builder& m_kb;
    const hbm_tensor &m_lhsT, &m_rhs, &m_result;
    matmul_shape m_s;
    bool m_double_row;
    dtype m_in, m_out;
    std::uint32_t m_TM = 0, m_TK = 0, m_TN = 0;
    std::uint64_t m_MT = 0, m_KT = 0, m_NT = 0;
    std::size_t m_psum = 0;
};

void matmul_emitter::tiled() {
    const std::size_t lt = m_kb.declare_tile("lhsT_tile", mem_space::sbuf, m_TK, m_TM, m_in);
    const std::size_t rt = m_kb.declare_tile("rhs_tile", mem_space::sbuf, m_TK, m_TN, m_in);
    const std::size_t st = m_kb.declare_tile("res_sb", mem_space::sbuf, m_TM, m_TN, m_out);
    for (std::uint64_t m = 0; m < m_MT; ++m)
        for (std::uint64_t n = 0; n < m_NT; ++n) {
            const tile ps = m_kb.next(m_psum);
            for (std::uint64_t k = 0; k < m_KT; ++k) {
                const tile l = m_kb.next(lt), r = m_kb.next(rt);
                m_kb.load(l, m_lhsT, lhsT_view(k, m * m_TM, m_TM));
                m_kb.load(r, m_rhs, rhs_view(k, n * m_TN, m_TN));
                m_kb.matmul(ps, l, r, k > 0, m_double_row);
            }
            const tile sb = m_kb.next(st);
            m_kb.copy(sb, ps);
            m_kb.store(m_result, result_view(m * m_TM, n * m_TN, m_TN), sb);
        }
}

void matmul_emitter::hoisted(const std::string& variant) {
    const blocking b = blocks_of(variant);
    const std::size_t st = m_kb.declare_tile("res_sb", mem_space::sbuf, m_TM, m_TN, m_out);
    // The compiler gives the hoisted operands one buffer count that fits them all.
    const std::uint64_t set = m_KT * ((b.m * m_TM + b.n * m_TN) * dtype_size(m_in) + 2 * 64);
    require_fit(m_kb, variant, set, "the hoisted lhsT and rhs tiles");
    const std::uint32_t bufs = m_kb.buffers_that_fit(set);
    std::vector<std::vector<std::size_t>> lts, rts;
    for (std::uint64_t bm = 0; bm < b.m; ++bm)
        lts.push_back(
            m_kb.declare_tile_array("lhsT_tiles", m_KT, mem_space::sbuf, m_TK, m_TM, m_in, bufs));
    for (std::uint64_t bn = 0; bn < b.n; ++bn)
        rts.push_back(
            m_kb.declare_tile_array("rhs_tiles", m_KT, mem_space::sbuf, m_TK, m_TN, m_in, bufs));
    for (std::uint64_t m2 = 0; m2 < m_MT / b.m; ++m2) {
        std::vector<std::vector<tile>> l(b.m);
        for (std::uint64_t bm = 0; bm < b.m; ++bm)
            for (std::uint64_t k = 0; k < m_KT; ++k) {
                l[bm].push_back(m_kb.next(lts[bm][k]));
                m_kb.load(l[bm][k], m_lhsT, lhsT_view(k, (m2 * b.m + bm) * m_TM, m_TM));
            }
        for (std::uint64_t n2 = 0; n2 < m_NT / b.n; ++n2) {
            std::vector<std::vector<tile>> r(b.n);
            for (std::uint64_t bn = 0; bn < b.n; ++bn)
                for (std::uint64_t k = 0; k < m_KT; ++k) {
                    r[bn].push_back(m_kb.next(rts[bn][k]));
                    m_kb.load(r[bn][k], m_rhs, rhs_view(k, (n2 * b.n + bn) * m_TN, m_TN));
                }
            for (std::uint64_t bm = 0; bm < b.m; ++bm)
                for (std::uint64_t bn = 0; bn < b.n; ++bn) {
                    const tile ps = m_kb.next(m_psum);
                    for (std::uint64_t k = 0; k < m_KT; ++k)
                        m_kb.matmul(ps, l[bm][k], r[bn][k], k > 0, m_double_row);
                    const tile sb = m_kb.next(st);
                    m_kb.copy(sb, ps);
                    m_kb.store(m_result,
                               result_view((m2 * b.m + bm) * m_TM, (n2 * b.n + bn) * m_TN, m_TN),
                               sb);
                }
        }
    }
}

void matmul_emitter::fully_optimized() {
    const std::string variant = "fully_optimized";
    // Blocks: BLOCK_M = 16 tiles, BLOCK_N = 2 tiles, BLOCK_K = 8 tiles. Loop n-block, then
    // K-blocks in sequence (rhs block loaded once per K-block), then m-blocks; partial results
    // accumulate in SBUF across K-blocks and are stored at the end.
    const blocking b = blocks_of(variant);
    const std::uint64_t BM = b.m * m_TM, BN = b.n * m_TN;
    const std::uint64_t NBM = m_s.m / BM, NBN = m_s.n / BN, NBK = m_KT / b.k;
    std::vector<std::size_t> res;  // one SBUF accumulator per (m-block, m-tile)
    for (std::uint64_t i = 0; i < NBM * b.m; ++i)
        res.push_back(m_kb.declare_tile("result_tiles[" + std::to_string(i) + "]", mem_space::sbuf,
                                        m_TM, static_cast<std::uint32_t>(BN), m_out, 1));
    const std::uint64_t set = b.k * (BN + BM) * dtype_size(m_in);
    require_fit(m_kb, variant, set, "a K-block of rhs and lhsT tiles");
    const std::uint32_t bufs = m_kb.buffers_that_fit(set);
    const auto rts = m_kb.declare_tile_array("rhs_tiles", b.k, mem_space::sbuf, m_TK,
                                             static_cast<std::uint32_t>(BN), m_in, bufs);
    const auto lts = m_kb.declare_tile_array("lhsT_tiles", b.k, mem_space::sbuf, m_TK,
                                             static_cast<std::uint32_t>(BM), m_in, bufs);
    for (std::uint64_t n2 = 0; n2 < NBN; ++n2) {
        std::vector<tile> acc;
        for (auto id : res) {
            acc.push_back(m_kb.next(id));
            m_kb.memset(acc.back(), 0.0f);
        }
        for (std::uint64_t k2 = 0; k2 < NBK; ++k2) {
            std::vector<tile> r;
            for (std::uint64_t bk = 0; bk < b.k; ++bk) {
                r.push_back(m_kb.next(rts[bk]));
                m_kb.load(r[bk], m_rhs,
                          rhs_view(k2 * b.k + bk, n2 * BN, static_cast<std::uint32_t>(BN)));
            }
            for (std::uint64_t m2 = 0; m2 < NBM; ++m2) {
                std::vector<tile> l;
                for (std::uint64_t bk = 0; bk < b.k; ++bk) {
                    l.push_back(m_kb.next(lts[bk]));
                    m_kb.load(l[bk], m_lhsT,
                              lhsT_view(k2 * b.k + bk, m2 * BM, static_cast<std::uint32_t>(BM)));
                }
                for (std::uint64_t bn = 0; bn < b.n; ++bn)
                    for (std::uint64_t bm = 0; bm < b.m; ++bm) {
                        const tile ps = m_kb.next(m_psum);
                        for (std::uint64_t bk = 0; bk < b.k; ++bk)
                            m_kb.matmul(ps, kernel_builder::slice(l[bk], bm * m_TM, m_TM),
                                        kernel_builder::slice(r[bk], bn * m_TN, m_TN), bk > 0,
                                        m_double_row);
                        const tile a = kernel_builder::slice(acc[m2 * b.m + bm], bn * m_TN, m_TN);
                        m_kb.tensor_tensor(a, ps, a, alu_op::add);
                    }
            }
        }
        for (std::uint64_t i = 0; i < acc.size(); ++i)
            m_kb.store(m_result, result_view(i * m_TM, n2 * BN, static_cast<std::uint32_t>(BN)),
                       acc[i]);
    }
}

}  // namespace

void emit_matmul(kernel_builder& kb, const std::string& variant, const hbm_tensor& lhsT,
                 const hbm_tensor& rhs, const hbm_tensor& result, const matmul_shape& s,
                 bool double_row) {
    check_matmul_shape(kb, variant, s);
    matmul_emitter e(kb, lhsT, rhs, result, s, double_row);
    if (variant == "tiled")
        e.tiled();
    else if (variant == "hoist_load" || variant == "block_free_dimension")
        e.hoisted(variant);
    else if (variant == "fully_optimized")
        e.fully_optimized();
    else
        throw user_error("matmul: unknown variant '" + variant +
                         "' (tiled, hoist_load, block_free_dimension, fully_optimized)");
}

std::vector<double> region_values(const hbm_region& r) {
    const auto bytes = region_initial_bytes(r);
    const std::size_t size = dtype_size(r.type);
    std::vector<double> v(r.bytes / size);
    for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = load_element(&bytes[i * size], r.type);
    return v;
}

std::vector<double> reference_matmul(const std::vector<double>& lhsT,
                                     const std::vector<double>& rhs, const matmul_shape& s) {
    std::vector<double> c(s.m * s.n, 0.0);
    for (std::uint64_t k = 0; k < s.k; ++k)
        for (std::uint64_t m = 0; m < s.m; ++m) {
            const double a = lhsT[k * s.m + m];
            double* row = &c[m * s.n];
            const double* b = &rhs[k * s.n];
            for (std::uint64_t n = 0; n < s.n; ++n)
                row[n] += a * b[n];
        }
    return c;
}

built_kernel matmul_workload::build(const workload_params& p, const config& cfg,
                                    const program_limits& limits) const {
    const std::string variant =
        p.text("variant", {"tiled", "hoist_load", "block_free_dimension", "fully_optimized"});
    const matmul_shape s{static_cast<std::uint64_t>(p.integer("m", 1, 1 << 20)),
                         static_cast<std::uint64_t>(p.integer("k", 1, 1 << 20)),
                         static_cast<std::uint64_t>(p.integer("n", 1, 1 << 20))};
    const dtype type = parse_dtype(p.text("dtype", {"bfloat16", "float16", "float32", "fp8"}));
    const bool double_row = p.text("perf_mode", {"none", "double_row"}) == "double_row";
    if (double_row && type != dtype::fp8_e4m3)
        throw user_error("matmul: perf_mode=double_row needs dtype=fp8");
    kernel_builder kb(
        kernel_builder::options(cfg, limits, parse_style(p.text("style", {"nl", "isa"}))));
    check_matmul_shape(kb, variant, s);
    const hbm_tensor lhsT = kb.input("lhsT", s.k * s.m, type, -1.0f, 1.0f, 11);
    const hbm_tensor rhs = kb.input("rhs", s.k * s.n, type, -1.0f, 1.0f, 12);
    const hbm_tensor result = kb.output("result", s.m * s.n, type);
    emit_matmul(kb, variant, lhsT, rhs, result, s, double_row);
    built_kernel k;
    k.pe_flops = kb.matmul_flops();
    k.prog = kb.finish();
    k.description = "matmul " + variant + " " + std::to_string(s.m) + "x" + std::to_string(s.k) +
                    "x" + std::to_string(s.n) + " " + dtype_name(type);
    const hbm_region rl = k.prog.regions[0], rr = k.prog.regions[1], ro = k.prog.regions[2];
    k.check = [rl, rr, ro, s, type](const hbm_reader& read) {
        const auto expected = reference_matmul(region_values(rl), region_values(rr), s);
        const bool exact = type == dtype::float32;
        // Results are rounded to the operand dtype; fp32 sums in another order than double.
        const double rtol = exact ? 1e-4 : (type == dtype::fp8_e4m3 ? 1.5e-1 : 1e-2);
        const double atol = exact ? 1e-4 : 1e-2 * std::sqrt(static_cast<double>(s.k));
        return compare_output(read(ro.offset, ro.bytes), type, expected, rtol, atol);
    };
    return k;
}

}  // namespace trn
