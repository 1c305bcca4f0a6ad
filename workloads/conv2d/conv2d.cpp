#include "workloads/conv2d/conv2d.h"

#include <algorithm>
#include <cmath>
#include <regex>

#include "core/error.h"
#include "core/units.h"
#include "workloads/builder/kernel_builder.h"
#include "workloads/matmul/matmul.h"

namespace trn {

std::vector<param_doc> conv2d_workload::params() const {
    return {
        {"variant", "row", "row (the measured CS149 kernel) | optimized | baseline"},
        {"batch", "1", "images"},
        {"in", "256", "input channels"},
        {"out", "256", "output channels"},
        {"filter", "3", "filter size K (K x K)"},
        {"h", "224", "image height"},
        {"w", "224", "image width"},
        {"dtype", "float16", "float16 | float32 | bfloat16"},
        {"pool", "1", "max-pool window and stride: 1 or 2"},
        {"style", "isa", "isa (program order, as the measured kernel) | nl"},
        {"case", "", "a named case, e.g. in128_out256_filter3x3_batch4_32x32_float32[_pool2]"},
        {"fleet", "", "cs149 | cs152: run every case of the fleet and print a table"},
    };
}

const std::vector<std::string>& conv2d_fleet(const std::string& name) {
    static const std::vector<std::string> cs149 = {
        "in256_out256_filter3x3_batch1_224x224_float32",
        "in256_out256_filter3x3_batch1_224x224_float16",
        "in256_out256_filter3x3_batch1_224x224_float32_pool2",
        "in256_out256_filter3x3_batch1_224x224_float16_pool2",
        "in256_out256_filter3x3_batch1_32x16_float32",
        "in256_out256_filter3x3_batch1_32x16_float16",
        "in256_out256_filter3x3_batch1_32x16_float32_pool2",
        "in256_out256_filter3x3_batch1_32x16_float16_pool2",
    };
    static const std::vector<std::string> cs152 = {
        "in128_out256_filter3x3_batch4_32x32_float32",
        "in128_out256_filter3x3_batch4_256x256_float16",
        "in256_out256_filter5x5_batch4_32x32_float32",
        "in128_out128_filter3x3_batch16_256x256_float16",
        "in128_out128_filter5x5_batch16_32x32_float16",
        "in128_out256_filter3x3_batch16_32x32_float32",
        "in128_out256_filter3x3_batch64_32x32_float16",
        "in128_out256_filter5x5_batch4_32x32_float32",
        "in128_out256_filter5x5_batch16_32x32_float16",
        "in256_out256_filter3x3_batch4_32x32_float32",
        "in256_out256_filter3x3_batch16_32x32_float16",
        "in256_out256_filter3x3_batch64_32x32_float16",
        "in256_out256_filter5x5_batch16_32x32_float16",
        "in256_out256_filter5x5_batch64_32x32_float16",
    };
    if (name == "cs149") return cs149;
    if (name == "cs152") return cs152;
    throw user_error("workload parameter 'fleet': '" + name + "' is not one of: cs149, cs152");
}

namespace {

// Parameters of one case name; throws user_error naming the expected form.
std::map<std::string, std::string> parse_case(const std::string& name) {
    static const std::regex re(
        R"(in(\d+)_out(\d+)_filter(\d+)x(\d+)_batch(\d+)_(\d+)x(\d+)_(float32|float16|bfloat16)(_pool(\d+))?)");
    std::smatch m;
    if (!std::regex_match(name, m, re) || m[3] != m[4])
        throw user_error("conv2d case '" + name +
                         "' is not of the form in{C}_out{C}_filter{K}x{K}_batch{B}_{H}x{W}_"
                         "{float32|float16|bfloat16}[_pool{p}]");
    return {{"in", m[1]},     {"out", m[2]},
            {"filter", m[3]}, {"batch", m[5]},
            {"h", m[6]},      {"w", m[7]},
            {"dtype", m[8]},  {"pool", m[10].matched ? std::string(m[10]) : "1"}};
}

struct conv_shape {
    std::uint64_t batch, cin, cout, k, h, w, pool;
    std::uint64_t oh() const { return h - k + 1; }
    std::uint64_t ow() const { return w - k + 1; }
    std::uint64_t ohp() const { return oh() / pool; }
    std::uint64_t owp() const { return ow() / pool; }
};

// Channel tiles: [first, first + size) of every partition-count tile.
std::vector<std::pair<std::uint32_t, std::uint32_t>> channel_tiles(std::uint64_t channels,
                                                                   std::uint32_t P) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> t;
    for (std::uint64_t c = 0; c < channels; c += P)
        t.emplace_back(static_cast<std::uint32_t>(c),
                       static_cast<std::uint32_t>(std::min<std::uint64_t>(P, channels - c)));
    return t;
}

// Builds the kernels; one object per program.
class conv_emitter {
  public:
    conv_emitter(kernel_builder& kb, const conv_shape& s, dtype type)
        : m_kb(kb), m_s(s), m_type(type) {
        const auto& o = kb.opts();
        m_P = std::min(o.pe_rows, o.limits.partitions);
        m_cols = o.pe_cols;
        m_moving = o.moving_max;
        m_ci = channel_tiles(s.cin, m_P);
        m_co = channel_tiles(s.cout, std::min(m_P, m_cols));
        m_x = kb.input("X", s.batch * s.cin * s.h * s.w, type, 0.0f, 1.0f, 41);
        m_wt = kb.input("W", s.cout * s.cin * s.k * s.k, type, 0.0f, 1.0f, 42);
        m_bias = kb.input("bias", s.cout, type, 0.0f, 50.0f, 43);
        m_out = kb.output("out", s.batch * s.cout * s.ohp() * s.owp(), type);
    }

    void row();
    void optimized();
    void baseline();

  private:
    std::uint64_t taps() const { return m_s.k * m_s.k; }
    std::size_t wt_index(std::size_t co, std::size_t ci, std::uint64_t i, std::uint64_t j) const {
        return ((co * m_ci.size() + ci) * m_s.k + i) * m_s.k + j;
    }
    // One (co, ci) block of W as it lies in HBM: co rows of ci*K*K contiguous elements.
    operand w_view(std::size_t co, std::size_t ci) const {
        const std::uint64_t kk = taps();
        return m_kb.view(m_wt, m_co[co].first * m_s.cin * kk + m_ci[ci].first * kk, m_co[co].second,
                         static_cast<std::uint32_t>(m_ci[ci].second * kk), m_s.cin * kk);
    }
    // Input rows [row, row + rows) of image b, in-channel tile ci: one partition per channel.
    operand x_view(std::uint64_t b, std::size_t ci, std::uint64_t row, std::uint64_t rows) const {
        return m_kb.view(m_x, ((b * m_s.cin + m_ci[ci].first) * m_s.h + row) * m_s.w,
                         m_ci[ci].second, static_cast<std::uint32_t>(rows * m_s.w), m_s.h * m_s.w);
    }
    // Pooled output rows [row, row + rows) of image b, out-channel tile co.
    operand out_view(std::uint64_t b, std::size_t co, std::uint64_t row, std::uint64_t rows) const {
        return m_kb.view(m_out, ((b * m_s.cout + m_co[co].first) * m_s.ohp() + row) * m_s.owp(),
                         m_co[co].second, static_cast<std::uint32_t>(rows * m_s.owp()),
                         m_s.ohp() * m_s.owp());
    }
    // Loads W block (co, ci) and transposes its K*K taps into `dst` tiles (ci x co).
    void transpose_taps(std::size_t co, std::size_t ci, std::size_t raw_decl, std::size_t psum_decl,
                        const std::vector<tile>& dst);
    // Declares one ci x co SBUF tile per (co, ci, tap) and fills them (weights once). With
    // `phase`, the raw weights and their PSUM tile are freed afterwards for later tiles to
    // reuse (which then wait for the transposes); the row kernel keeps them, as the measured
    // kernel (and its NKI version, workloads/nki/kernels/conv2d.py) declares them.
    std::vector<tile> prepare_weights(bool phase);
    std::vector<tile> load_biases();
    // PSUM row(s) -> pooled, biased SBUF row(s) -> stored: `rows` holds the p rows of one pooled
    // row (already copied to SBUF, each [cos, OW]); result goes to `dst` [cos, OWp].
    void pool_bias(const std::vector<tile>& rows, const tile& dst, const tile& bias);
    // Accumulates out-channel tile co's K*K taps of every in-channel tile into `ps`, in the order
    // (ci, i, j): the weights wt's, the moving operand moving(ci, i, j) (the input columns that
    // tap multiplies); the first matmul overwrites, the others add.
    template <typename Moving>
    void accumulate_taps(const tile& ps, const std::vector<tile>& wt, std::size_t co,
                         const Moving& moving);
    // The row kernels' loop nest: for each image, out-channel tile and pooled output row, each
    // row of the pool window (output row oh) computed in chunks of up to `chunk` columns into a
    // PSUM tile of `psum`, evicted into its SBUF row of `rows_sb`, then pooled into `pooled`,
    // biased and stored. per_row(b, co, oh) runs before each output row (its loads); chunk_of(ps,
    // b, co, oh, c0, n) issues the matmuls of columns [c0, c0 + n) into ps.
    template <typename PerRow, typename Chunk>
    void row_nest(const std::vector<tile>& bias, std::size_t psum, std::uint32_t chunk,
                  const std::vector<std::size_t>& rows_sb, std::size_t pooled,
                  const PerRow& per_row, const Chunk& chunk_of);

    kernel_builder& m_kb;
    conv_shape m_s;
    dtype m_type;
    std::uint32_t m_P, m_cols, m_moving;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> m_ci, m_co;
    hbm_tensor m_x, m_wt, m_bias, m_out;
};

void conv_emitter::transpose_taps(std::size_t co, std::size_t ci, std::size_t raw_decl,
                                  std::size_t psum_decl, const std::vector<tile>& dst) {
    const std::uint32_t cos = m_co[co].second, cs = m_ci[ci].second;
    tile raw = m_kb.next(raw_decl);
    raw = kernel_builder::partitions_of(raw, 0, cos);
    raw = kernel_builder::slice(raw, 0, static_cast<std::uint32_t>(cs * taps()));
    m_kb.load(raw, m_wt, w_view(co, ci));
    for (std::uint64_t i = 0; i < m_s.k; ++i)
        for (std::uint64_t j = 0; j < m_s.k; ++j) {
            // Tap (i, j) of every in-channel: every K*K-th element from i*K + j.
            tile tap = kernel_builder::slice(raw, static_cast<std::uint32_t>(i * m_s.k + j), 1);
            tap.op.elems = cs;
            tap.op.elem_stride = static_cast<std::uint32_t>(taps());
            tile ps = m_kb.next(psum_decl);
            ps = kernel_builder::partitions_of(kernel_builder::slice(ps, 0, cos), 0, cs);
            m_kb.transpose(ps, tap);
            m_kb.tensor_copy(dst[(i * m_s.k + j)], ps);
        }
}

std::vector<tile> conv_emitter::prepare_weights(bool phase) {
    std::vector<tile> wt;
    std::vector<std::size_t> decls;
    for (std::size_t co = 0; co < m_co.size(); ++co)
        for (std::size_t ci = 0; ci < m_ci.size(); ++ci)
            for (std::uint64_t t = 0; t < taps(); ++t) {
                decls.push_back(m_kb.declare_tile("wT", mem_space::sbuf, m_ci[ci].second,
                                                  m_co[co].second, m_type, 1));
                wt.push_back(m_kb.next(decls.back()));
            }
    if (phase) m_kb.begin_phase();
    const std::size_t raw = m_kb.declare_tile("w_raw", mem_space::sbuf, m_P,
                                              static_cast<std::uint32_t>(m_P * taps()), m_type);
    const std::size_t ps = m_kb.declare_tile("w_psum", mem_space::psum, m_P, m_P, dtype::float32);
    for (std::size_t co = 0; co < m_co.size(); ++co)
        for (std::size_t ci = 0; ci < m_ci.size(); ++ci)
            transpose_taps(co, ci, raw, ps,
                           std::vector<tile>(wt.begin() + wt_index(co, ci, 0, 0),
                                             wt.begin() + wt_index(co, ci, 0, 0) + taps()));
    if (phase) m_kb.end_phase();
    return wt;
}

std::vector<tile> conv_emitter::load_biases() {
    std::vector<tile> b;
    for (std::size_t co = 0; co < m_co.size(); ++co) {
        b.push_back(
            m_kb.next(m_kb.declare_tile("bias", mem_space::sbuf, m_co[co].second, 1, m_type, 1)));
        m_kb.load(b.back(), m_bias, m_kb.view(m_bias, m_co[co].first, m_co[co].second, 1, 1));
    }
    return b;
}

void conv_emitter::pool_bias(const std::vector<tile>& rows, const tile& dst, const tile& bias) {
    const auto OW = static_cast<std::uint32_t>(m_s.ow()),
               OWp = static_cast<std::uint32_t>(m_s.owp());
    if (m_s.pool == 1) {
        m_kb.tensor_scalar_open(dst, kernel_builder::slice(rows[0], 0, OW), alu_op::add, bias);
        return;
    }
    // 2x2 max: rows pairwise, then neighbouring columns (stride-2 views of the row).
    tile a = kernel_builder::slice(rows[0], 0, OW);
    m_kb.tensor_tensor(a, a, kernel_builder::slice(rows[1], 0, OW), alu_op::max);
    tile even = kernel_builder::slice(a, 0, 1), odd = kernel_builder::slice(a, 1, 1);
    even.op.elems = odd.op.elems = OWp;
    even.op.elem_stride = odd.op.elem_stride = 2;
    m_kb.tensor_tensor(dst, even, odd, alu_op::max);
    m_kb.tensor_scalar_open(dst, dst, alu_op::add, bias);
}

template <typename Moving>
void conv_emitter::accumulate_taps(const tile& ps, const std::vector<tile>& wt, std::size_t co,
                                   const Moving& moving) {
    bool first = true;
    for (std::size_t ci = 0; ci < m_ci.size(); ++ci)
        for (std::uint64_t i = 0; i < m_s.k; ++i)
            for (std::uint64_t j = 0; j < m_s.k; ++j) {
                m_kb.matmul(ps, wt[wt_index(co, ci, i, j)], moving(ci, i, j), !first);
                first = false;
            }
}

template <typename PerRow, typename Chunk>
void conv_emitter::row_nest(const std::vector<tile>& bias, std::size_t psum, std::uint32_t chunk,
                            const std::vector<std::size_t>& rows_sb, std::size_t pooled,
                            const PerRow& per_row, const Chunk& chunk_of) {
    const auto OW = static_cast<std::uint32_t>(m_s.ow());
    for (std::uint64_t b = 0; b < m_s.batch; ++b)
        for (std::size_t co = 0; co < m_co.size(); ++co) {
            const std::uint32_t cos = m_co[co].second;
            for (std::uint64_t r = 0; r < m_s.ohp(); ++r) {
                std::vector<tile> rows;
                for (std::uint64_t q = 0; q < m_s.pool; ++q) {
                    const std::uint64_t oh = r * m_s.pool + q;
                    per_row(b, co, oh);
                    tile row_sb = kernel_builder::partitions_of(m_kb.next(rows_sb[q]), 0, cos);
                    for (std::uint32_t c0 = 0; c0 < OW; c0 += chunk) {
                        const std::uint32_t n = std::min(chunk, OW - c0);
                        tile ps = kernel_builder::partitions_of(
                            kernel_builder::slice(m_kb.next(psum), 0, n), 0, cos);
                        chunk_of(ps, b, co, oh, c0, n);
                        m_kb.tensor_copy(kernel_builder::slice(row_sb, c0, n), ps);
                    }
                    rows.push_back(row_sb);
                }
                tile out = kernel_builder::partitions_of(m_kb.next(pooled), 0, cos);
                pool_bias(rows, out, bias[co]);
                m_kb.store(m_out, out_view(b, co, r, 1), out);
            }
        }
}

void conv_emitter::row() {
    const std::vector<tile> wt = prepare_weights(false);
    const std::vector<tile> bias = load_biases();
    const auto OW = static_cast<std::uint32_t>(m_s.ow()),
               OWp = static_cast<std::uint32_t>(m_s.owp());
    const auto W = static_cast<std::uint32_t>(m_s.w);
    // The measured kernel reaches ~90% MFU on trn2, so its 2664 row loads overlap the matmuls:
    // each (in-channel tile, filter row) has its own row buffer, and the PSUM tile of the next
    // row is not the one being evicted.
    std::vector<std::size_t> rowbuf;
    for (std::size_t ci = 0; ci < m_ci.size(); ++ci)
        for (std::uint64_t i = 0; i < m_s.k; ++i)
            rowbuf.push_back(
                m_kb.declare_tile("row_buf", mem_space::sbuf, m_ci[ci].second, W, m_type, 1));
    const std::uint32_t chunk = std::min(OW, m_moving);
    const std::size_t psum = m_kb.declare_tile("out_psum", mem_space::psum, std::min(m_P, m_cols),
                                               chunk, dtype::float32, 2);
    std::vector<std::size_t> rows_sb;
    for (std::uint64_t q = 0; q < m_s.pool; ++q)
        rows_sb.push_back(
            m_kb.declare_tile("out_row", mem_space::sbuf, std::min(m_P, m_cols), OW, m_type, 1));
    const std::size_t pooled =
        m_kb.declare_tile("pooled_row", mem_space::sbuf, std::min(m_P, m_cols), OWp, m_type, 1);
    std::vector<tile> loaded;
    row_nest(
        bias, psum, chunk, rows_sb, pooled,
        [&](std::uint64_t b, std::size_t, std::uint64_t oh) {
            loaded.clear();
            for (std::size_t ci = 0; ci < m_ci.size(); ++ci)
                for (std::uint64_t i = 0; i < m_s.k; ++i) {
                    loaded.push_back(m_kb.next(rowbuf[ci * m_s.k + i]));
                    m_kb.load(loaded.back(), m_x, x_view(b, ci, oh + i, 1));
                }
        },
        [&](const tile& ps, std::uint64_t, std::size_t co, std::uint64_t, std::uint32_t c0,
            std::uint32_t n) {
            accumulate_taps(ps, wt, co, [&](std::size_t ci, std::uint64_t i, std::uint64_t j) {
                return kernel_builder::slice(loaded[ci * m_s.k + i],
                                             static_cast<std::uint32_t>(c0 + j), n);
            });
        });
}

void conv_emitter::optimized() {
    const std::vector<tile> wt = prepare_weights(true);
    const std::vector<tile> bias = load_biases();
    const auto OW = static_cast<std::uint32_t>(m_s.ow()),
               OWp = static_cast<std::uint32_t>(m_s.owp());
    const auto W = static_cast<std::uint32_t>(m_s.w);
    const std::uint32_t copart = std::min(m_P, m_cols);
    if (W > m_moving || m_s.pool * W > m_moving) {  // too wide for whole rows: the row kernel
        row();
        return;
    }
    // R output rows per PSUM tile, computed over whole input rows (the W - OW extra columns
    // per row are discarded at eviction); R is a multiple of the pool window.
    std::uint64_t R = std::max<std::uint64_t>(1, m_moving / W);
    R -= R % m_s.pool;
    R = std::min<std::uint64_t>(R, m_s.ohp() * m_s.pool);
    const std::uint64_t in_rows = R + m_s.k - 1;
    std::vector<std::size_t> xblk;
    for (std::size_t ci = 0; ci < m_ci.size(); ++ci)
        xblk.push_back(m_kb.declare_tile("x_block", mem_space::sbuf, m_ci[ci].second,
                                         static_cast<std::uint32_t>(in_rows * W + m_s.k), m_type,
                                         2));
    const std::size_t psum = m_kb.declare_tile(
        "out_psum", mem_space::psum, copart, static_cast<std::uint32_t>(R * W), dtype::float32, 2);
    const std::size_t rows_sb = m_kb.declare_tile("out_rows", mem_space::sbuf, copart,
                                                  static_cast<std::uint32_t>(R * OW), m_type, 2);
    const std::size_t res =
        m_kb.declare_tile("pooled_rows", mem_space::sbuf, copart,
                          static_cast<std::uint32_t>(R / m_s.pool * OWp), m_type, 2);
    const std::uint64_t OHused = m_s.ohp() * m_s.pool;
    for (std::uint64_t b = 0; b < m_s.batch; ++b)
        for (std::uint64_t r0 = 0; r0 < OHused; r0 += R) {
            const std::uint64_t rows = std::min(R, OHused - r0);
            const std::uint64_t have = std::min(rows + m_s.k - 1, m_s.h - r0);
            std::vector<tile> x;
            for (std::size_t ci = 0; ci < m_ci.size(); ++ci) {
                x.push_back(m_kb.next(xblk[ci]));
                m_kb.load(kernel_builder::slice(x.back(), 0, static_cast<std::uint32_t>(have * W)),
                          m_x, x_view(b, ci, r0, have));
            }
            for (std::size_t co = 0; co < m_co.size(); ++co) {
                const std::uint32_t cos = m_co[co].second;
                const auto n = static_cast<std::uint32_t>(rows * W);
                tile ps = kernel_builder::partitions_of(
                    kernel_builder::slice(m_kb.next(psum), 0, n), 0, cos);
                accumulate_taps(ps, wt, co, [&](std::size_t ci, std::uint64_t i, std::uint64_t j) {
                    return kernel_builder::slice(x[ci], static_cast<std::uint32_t>(i * W + j), n);
                });
                const tile sb = kernel_builder::partitions_of(m_kb.next(rows_sb), 0, cos);
                for (std::uint64_t r = 0; r < rows; ++r)
                    m_kb.tensor_copy(
                        kernel_builder::slice(sb, static_cast<std::uint32_t>(r * OW), OW),
                        kernel_builder::slice(ps, static_cast<std::uint32_t>(r * W), OW));
                const tile out = kernel_builder::partitions_of(m_kb.next(res), 0, cos);
                for (std::uint64_t pr = 0; pr < rows / m_s.pool; ++pr) {
                    std::vector<tile> group;
                    for (std::uint64_t q = 0; q < m_s.pool; ++q)
                        group.push_back(kernel_builder::slice(
                            sb, static_cast<std::uint32_t>((pr * m_s.pool + q) * OW), OW));
                    pool_bias(group,
                              kernel_builder::slice(out, static_cast<std::uint32_t>(pr * OWp), OWp),
                              bias[co]);
                }
                m_kb.store(m_out, out_view(b, co, r0 / m_s.pool, rows / m_s.pool),
                           kernel_builder::slice(
                               out, 0, static_cast<std::uint32_t>(rows / m_s.pool * OWp)));
            }
        }
}

void conv_emitter::baseline() {
    // The handout's algorithm: for every output row and out-channel tile, reload the weights
    // and transpose their taps, reload every input row, then multiply.
    const std::vector<tile> bias = load_biases();
    const auto OW = static_cast<std::uint32_t>(m_s.ow()),
               OWp = static_cast<std::uint32_t>(m_s.owp());
    const auto W = static_cast<std::uint32_t>(m_s.w);
    const std::uint32_t copart = std::min(m_P, m_cols);
    std::vector<std::size_t> taps_decl;
    for (std::uint64_t t = 0; t < taps(); ++t)
        taps_decl.push_back(m_kb.declare_tile("wT", mem_space::sbuf, m_P, copart, m_type));
    const std::size_t raw = m_kb.declare_tile("w_raw", mem_space::sbuf, copart,
                                              static_cast<std::uint32_t>(m_P * taps()), m_type);
    const std::size_t wps =
        m_kb.declare_tile("w_psum", mem_space::psum, m_P, copart, dtype::float32);
    const std::size_t rowbuf = m_kb.declare_tile("row_buf", mem_space::sbuf, m_P, W, m_type);
    const std::uint32_t chunk = std::min(OW, m_moving);
    const std::size_t psum =
        m_kb.declare_tile("out_psum", mem_space::psum, copart, chunk, dtype::float32);
    std::vector<std::size_t> rows_sb;
    for (std::uint64_t q = 0; q < m_s.pool; ++q)
        rows_sb.push_back(m_kb.declare_tile("out_row", mem_space::sbuf, copart, OW, m_type));
    const std::size_t pooled =
        m_kb.declare_tile("pooled_row", mem_space::sbuf, copart, OWp, m_type);
    row_nest(
        bias, psum, chunk, rows_sb, pooled, [](std::uint64_t, std::size_t, std::uint64_t) {},
        [&](const tile& ps, std::uint64_t b, std::size_t co, std::uint64_t oh, std::uint32_t c0,
            std::uint32_t n) {
            const std::uint32_t cos = m_co[co].second;
            bool first = true;
            for (std::size_t ci = 0; ci < m_ci.size(); ++ci) {
                const std::uint32_t cs = m_ci[ci].second;
                std::vector<tile> wtaps;
                for (auto d : taps_decl)
                    wtaps.push_back(kernel_builder::partitions_of(
                        kernel_builder::slice(m_kb.next(d), 0, cos), 0, cs));
                transpose_taps(co, ci, raw, wps, wtaps);
                for (std::uint64_t i = 0; i < m_s.k; ++i) {
                    tile in = kernel_builder::partitions_of(m_kb.next(rowbuf), 0, cs);
                    m_kb.load(in, m_x, x_view(b, ci, oh + i, 1));
                    for (std::uint64_t j = 0; j < m_s.k; ++j) {
                        m_kb.matmul(
                            ps, wtaps[i * m_s.k + j],
                            kernel_builder::slice(in, static_cast<std::uint32_t>(c0 + j), n),
                            !first);
                        first = false;
                    }
                }
            }
        });
}

// out[b,c,i,j] = max over the pool window of bias[c] + sum X[b,ci,i+m,j+n] W[c,ci,m,n].
std::vector<double> reference(const conv_shape& s, const std::vector<double>& x,
                              const std::vector<double>& w, const std::vector<double>& bias,
                              dtype type) {
    std::vector<double> conv(s.batch * s.cout * s.oh() * s.ow());
    for (std::uint64_t b = 0; b < s.batch; ++b)
        for (std::uint64_t c = 0; c < s.cout; ++c) {
            double* o = &conv[(b * s.cout + c) * s.oh() * s.ow()];
            for (std::uint64_t p = 0; p < s.oh() * s.ow(); ++p)
                o[p] = 0;
            for (std::uint64_t ci = 0; ci < s.cin; ++ci)
                for (std::uint64_t m = 0; m < s.k; ++m)
                    for (std::uint64_t n = 0; n < s.k; ++n) {
                        const double wv = w[((c * s.cin + ci) * s.k + m) * s.k + n];
                        for (std::uint64_t i = 0; i < s.oh(); ++i) {
                            const double* xr = &x[((b * s.cin + ci) * s.h + i + m) * s.w + n];
                            double* orow = &o[i * s.ow()];
                            for (std::uint64_t j = 0; j < s.ow(); ++j)
                                orow[j] += wv * xr[j];
                        }
                    }
        }
    // The kernel rounds the convolution to the output dtype before pooling and adding the bias.
    std::vector<std::uint8_t> tmp(4);
    auto round = [&](double v) {
        store_element(tmp.data(), type, static_cast<float>(v));
        return static_cast<double>(load_element(tmp.data(), type));
    };
    std::vector<double> out(s.batch * s.cout * s.ohp() * s.owp());
    for (std::uint64_t b = 0; b < s.batch; ++b)
        for (std::uint64_t c = 0; c < s.cout; ++c)
            for (std::uint64_t i = 0; i < s.ohp(); ++i)
                for (std::uint64_t j = 0; j < s.owp(); ++j) {
                    double mx = -1e300;
                    for (std::uint64_t a = 0; a < s.pool; ++a)
                        for (std::uint64_t e = 0; e < s.pool; ++e)
                            mx = std::max(
                                mx,
                                round(conv[((b * s.cout + c) * s.oh() + i * s.pool + a) * s.ow() +
                                           j * s.pool + e]));
                    out[((b * s.cout + c) * s.ohp() + i) * s.owp() + j] = mx + bias[c];
                }
    return out;
}

}  // namespace

std::vector<std::map<std::string, std::string>> conv2d_workload::expand(
    const std::map<std::string, std::string>& given) const {
    auto fleet = given.find("fleet");
    if (fleet == given.end() || fleet->second.empty()) return {given};
    for (const char* k : {"case", "batch", "in", "out", "filter", "h", "w", "dtype", "pool"})
        if (given.count(k))
            throw user_error(std::string("conv2d: 'fleet' sets the shapes; do not also give '") +
                             k + "'");
    std::vector<std::map<std::string, std::string>> cases;
    for (const auto& name : conv2d_fleet(fleet->second)) {
        auto c = given;
        c.erase("fleet");
        c["case"] = name;
        cases.push_back(c);
    }
    return cases;
}

built_kernel conv2d_workload::build(const workload_params& p, const config& cfg,
                                    const program_limits& limits) const {
    std::map<std::string, std::string> shape;
    const std::string case_name = p.text("case");
    if (!case_name.empty()) {
        for (const char* k : {"batch", "in", "out", "filter", "h", "w", "dtype", "pool"})
            if (p.given(k))
                throw user_error(std::string("conv2d: 'case' sets the shape; do not also give '") +
                                 k + "'");
        shape = parse_case(case_name);
    }
    auto get = [&](const char* k, std::int64_t lo, std::int64_t hi) -> std::uint64_t {
        if (!shape.count(k)) return static_cast<std::uint64_t>(p.integer(k, lo, hi));
        const auto v = units::parse_whole<std::int64_t>(shape.at(k));  // from the case table
        if (!v || *v < lo || *v > hi)
            throw user_error("conv2d case '" + case_name + "': " + k + "=" + shape.at(k) +
                             " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) +
                             "]");
        return static_cast<std::uint64_t>(*v);
    };
    if (!p.text("fleet").empty())
        throw user_error("conv2d: 'fleet' runs several programs (the command line expands it)");
    conv_shape s;
    s.batch = get("batch", 1, 1 << 16);
    s.cin = get("in", 1, 1 << 16);
    s.cout = get("out", 1, 1 << 16);
    s.k = get("filter", 1, 64);
    s.h = get("h", 1, 1 << 16);
    s.w = get("w", 1, 1 << 16);
    s.pool = get("pool", 1, 2);
    const dtype type =
        parse_dtype(shape.count("dtype") ? shape.at("dtype")
                                         : p.text("dtype", {"float16", "float32", "bfloat16"}));
    const std::string variant = p.text("variant", {"row", "optimized", "baseline"});
    if (s.k > s.h || s.k > s.w)
        throw user_error("conv2d: filter " + std::to_string(s.k) + " is larger than the " +
                         std::to_string(s.h) + "x" + std::to_string(s.w) + " image");
    if (s.ohp() == 0 || s.owp() == 0) throw user_error("conv2d: the output is empty after pooling");
    kernel_builder kb(
        kernel_builder::options(cfg, limits, parse_style(p.text("style", {"isa", "nl"}))));
    if (s.w > kb.opts().limits.sbuf_partition_bytes / dtype_size(type) / 8)
        throw user_error("conv2d: image rows of " + std::to_string(s.w) +
                         " elements are too wide for the SBUF row buffers");
    conv_emitter e(kb, s, type);
    if (variant == "row")
        e.row();
    else if (variant == "optimized")
        e.optimized();
    else
        e.baseline();
    built_kernel k;
    k.pe_flops = kb.matmul_flops();
    k.prog = kb.finish();
    char desc[160];
    std::snprintf(desc, sizeof desc,
                  "conv2d %s in%llu_out%llu_filter%llux%llu_batch%llu_%llux%llu_%s%s",
                  variant.c_str(), (unsigned long long)s.cin, (unsigned long long)s.cout,
                  (unsigned long long)s.k, (unsigned long long)s.k, (unsigned long long)s.batch,
                  (unsigned long long)s.h, (unsigned long long)s.w, dtype_name(type),
                  s.pool == 2 ? "_pool2" : "");
    k.description = desc;
    const auto regions = k.prog.regions;
    k.check = [regions, s, type](const hbm_reader& read) {
        const auto expected = reference(s, region_values(regions[0]), region_values(regions[1]),
                                        region_values(regions[2]), type);
        // The handouts' tolerances: fp32 rtol 1e-4 (the sums run in another order than the
        // double reference), fp16 rtol 1e-2 / atol 1e-4; bf16, with 3 fewer mantissa bits than
        // fp16 and two roundings (conv, then + bias), rtol 2e-2.
        const double rtol = type == dtype::float32 ? 1e-4 : type == dtype::float16 ? 1e-2 : 2e-2;
        return compare_output(read(regions[3].offset, regions[3].bytes), type, expected, rtol,
                              type == dtype::float32 ? 1e-8 : 1e-4);
    };
    return k;
}

}  // namespace trn
