#include "workloads/ffnn/ffnn.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "workloads/matmul/matmul.h"
#include "workloads/transpose/transpose.h"

namespace trn {

std::vector<param_doc> ffnn_workload::params() const {
    return {
        {"kernel", "predict", "predict (forward, then argmax) | forward (probabilities only)"},
        {"matmul", "tiled", "tiled | hoist_load | block_free_dimension | fully_optimized"},
        {"n", "2048", "samples (rows of X)"},
        {"d", "4096", "inputs per sample"},
        {"h", "8192", "hidden units"},
        {"c", "2048", "classes (8 to 16384)"},
        {"style", "nl", "nl (compiler-scheduled) | isa (program order)"},
    };
}

namespace {

// Free-size chunk of the row-wise kernels: at most this many fp32 per partition per tile.
constexpr std::uint32_t chunk_elems = 2048;

// out[rows, cols] = act(in + bias) with bias (one value per column) broadcast over the rows:
// the lab's bias_add_act with relu. Rows go to partitions, columns in chunks.
void bias_relu(kernel_builder& kb, const hbm_tensor& in, const hbm_tensor& bias,
               const hbm_tensor& out, std::uint64_t rows, std::uint64_t cols) {
    const std::uint32_t P = kb.partitions();
    const auto F = static_cast<std::uint32_t>(std::min<std::uint64_t>(cols, chunk_elems));
    if (cols % F != 0)
        throw user_error("ffnn: h=" + std::to_string(cols) + " must be a multiple of " +
                         std::to_string(F));
    // The bias, broadcast to every partition (a DMA with row stride 0), loaded once.
    const std::size_t bt = kb.declare_tile(bias.name + "_bcast", mem_space::sbuf, P,
                                           static_cast<std::uint32_t>(cols), dtype::float32, 1);
    const tile b = kb.next(bt);
    kb.load(b, bias, kb.view(bias, 0, P, static_cast<std::uint32_t>(cols), 0));
    const std::size_t xt =
        kb.declare_tile(in.name + "_tile", mem_space::sbuf, P, F, dtype::float32);
    const std::size_t yt =
        kb.declare_tile(out.name + "_tile", mem_space::sbuf, P, F, dtype::float32);
    for (std::uint64_t r = 0; r < rows / P; ++r)
        for (std::uint64_t j = 0; j < cols / F; ++j) {
            const tile x = kb.next(xt), y = kb.next(yt);
            kb.load(x, in, kb.view(in, r * P * cols + j * F, P, F, cols));
            kb.tensor_tensor(x, x, kernel_builder::slice(b, static_cast<std::uint32_t>(j * F), F),
                             alu_op::add);
            kb.activation(y, x, act_func::relu);
            kb.store(out, kb.view(out, r * P * cols + j * F, P, F, cols), y);
        }
}

// probs = softmax(in + bias) by rows, and with `predict` the argmax of each row.
void bias_softmax(kernel_builder& kb, const hbm_tensor& in, const hbm_tensor& bias,
                  const hbm_tensor& probs, const hbm_tensor* pred, std::uint64_t rows,
                  std::uint64_t cols) {
    const std::uint32_t P = kb.partitions();
    const auto C = static_cast<std::uint32_t>(cols);
    const std::size_t bt =
        kb.declare_tile(bias.name + "_bcast", mem_space::sbuf, P, C, dtype::float32, 1);
    const tile b = kb.next(bt);
    kb.load(b, bias, kb.view(bias, 0, P, C, 0));
    const std::size_t zt = kb.declare_tile("z_tile", mem_space::sbuf, P, C, dtype::float32);
    const std::size_t mt = kb.declare_tile("row_max", mem_space::sbuf, P, 1, dtype::float32);
    const std::size_t st = kb.declare_tile("row_sum", mem_space::sbuf, P, 1, dtype::float32);
    const std::size_t t8 = kb.declare_tile("top8", mem_space::sbuf, P, 8, dtype::float32);
    const std::size_t i8 = kb.declare_tile("index8", mem_space::sbuf, P, 8, dtype::int32);
    for (std::uint64_t r = 0; r < rows / P; ++r) {
        const tile z = kb.next(zt), mx = kb.next(mt), sum = kb.next(st);
        kb.load(z, in, kb.view(in, r * P * cols, P, C, cols));
        kb.tensor_tensor(z, z, b, alu_op::add);
        kb.tensor_reduce(mx, z, alu_op::max);
        kb.tensor_scalar_ap(z, z, alu_op::subtract, mx);
        kb.activation(z, z, act_func::exp);
        kb.tensor_reduce(sum, z, alu_op::add);
        kb.activation(sum, sum, act_func::reciprocal);
        kb.tensor_scalar_open(z, z, alu_op::multiply, sum);
        kb.store(probs, kb.view(probs, r * P * cols, P, C, cols), z);
        if (pred) {
            const tile top = kb.next(t8), idx = kb.next(i8);
            kb.max8(top, z);
            kb.find_index8(idx, z, top);
            kb.store(*pred, kb.view(*pred, r * P, P, 1, 1), kernel_builder::slice(idx, 0, 1));
        }
    }
}

}  // namespace

namespace {

// The golden check of the network's forward pass on the program's inputs: the probabilities
// P within 1e-3 (relative) and, when `predict`, every predicted class.
std::function<check_result(const hbm_reader&)> forward_check(std::vector<hbm_region> regions,
                                                             std::uint64_t N, std::uint64_t D,
                                                             std::uint64_t H, std::uint64_t C,
                                                             bool predict) {
    return [regions, N, D, H, C, predict](const hbm_reader& read) {
        auto find = [&](const std::string& n) {
            return *std::find_if(regions.begin(), regions.end(),
                                 [&](const hbm_region& r) { return r.name == n; });
        };
        const auto X = region_values(find("X")), w1v = region_values(find("W1")),
                   b1v = region_values(find("b1")), w2v = region_values(find("W2")),
                   b2v = region_values(find("b2"));
        // X^T laid out [D, N] for the shared reference.
        std::vector<double> xt(D * N);
        for (std::uint64_t i = 0; i < N; ++i)
            for (std::uint64_t j = 0; j < D; ++j)
                xt[j * N + i] = X[i * D + j];
        auto hidden = reference_matmul(xt, w1v, {N, D, H});
        for (std::uint64_t i = 0; i < N; ++i)
            for (std::uint64_t j = 0; j < H; ++j)
                hidden[i * H + j] = std::max(0.0, hidden[i * H + j] + b1v[j]);
        std::vector<double> ht(H * N);
        for (std::uint64_t i = 0; i < N; ++i)
            for (std::uint64_t j = 0; j < H; ++j)
                ht[j * N + i] = hidden[i * H + j];
        auto logits = reference_matmul(ht, w2v, {N, H, C});
        std::vector<double> pr(N * C);
        std::vector<double> classes(N);
        for (std::uint64_t i = 0; i < N; ++i) {
            double mx = -1e300, sum = 0;
            std::uint64_t arg = 0;
            for (std::uint64_t j = 0; j < C; ++j) {
                const double v = logits[i * C + j] + b2v[j];
                if (v > mx) {
                    mx = v;
                    arg = j;
                }
            }
            for (std::uint64_t j = 0; j < C; ++j)
                sum += std::exp(logits[i * C + j] + b2v[j] - mx);
            for (std::uint64_t j = 0; j < C; ++j)
                pr[i * C + j] = std::exp(logits[i * C + j] + b2v[j] - mx) / sum;
            classes[i] = static_cast<double>(arg);
        }
        const hbm_region rp = find("P");
        check_result res =
            compare_output(read(rp.offset, rp.bytes), dtype::float32, pr, 1e-3, 1e-6);
        if (predict && res.passed) {
            const hbm_region rc = find("predictions");
            check_result cls =
                compare_output(read(rc.offset, rc.bytes), dtype::int32, classes, 0.0, 0.0);
            if (!cls.passed) {
                cls.detail = "predicted classes: " + cls.detail;
                return cls;
            }
            res.detail += "; all " + std::to_string(N) + " predicted classes match";
        }
        return res;
    };
}

}  // namespace

built_kernel ffnn_workload::build(const workload_params& p, const config& cfg,
                                  const program_limits& limits) const {
    const bool predict = p.text("kernel", {"predict", "forward"}) == "predict";
    const std::string variant =
        p.text("matmul", {"tiled", "hoist_load", "block_free_dimension", "fully_optimized"});
    const auto N = static_cast<std::uint64_t>(p.integer("n", 1, 1 << 20));
    const auto D = static_cast<std::uint64_t>(p.integer("d", 1, 1 << 20));
    const auto H = static_cast<std::uint64_t>(p.integer("h", 1, 1 << 20));
    const auto C = static_cast<std::uint64_t>(p.integer("c", 8, 16384));
    kernel_builder kb(
        kernel_builder::options(cfg, limits, parse_style(p.text("style", {"nl", "isa"}))));
    check_matmul_shape(kb, variant, {N, D, H}, {"n", "d", "h"});
    check_matmul_shape(kb, variant, {N, H, C}, {"n", "h", "c"});
    const dtype f32 = dtype::float32;
    const float w1 = 1.0f / std::sqrt(static_cast<float>(D)), w2 = 1.0f / std::sqrt(float(H));
    const hbm_tensor x = kb.input("X", N * D, f32, 0.0f, 1.0f, 31);
    const hbm_tensor W1 = kb.input("W1", D * H, f32, -w1, w1, 32);
    const hbm_tensor b1 = kb.input("b1", H, f32, -0.1f, 0.1f, 33);
    const hbm_tensor W2 = kb.input("W2", H * C, f32, -w2, w2, 34);
    const hbm_tensor b2 = kb.input("b2", C, f32, -0.1f, 0.1f, 35);
    const hbm_tensor xT = kb.output("XT", D * N, f32);
    const hbm_tensor h_pre = kb.output("H_pre", N * H, f32);
    const hbm_tensor h = kb.output("H", N * H, f32);
    const hbm_tensor hT = kb.output("HT", H * N, f32);
    const hbm_tensor z = kb.output("Z", N * C, f32);
    const hbm_tensor probs = kb.output("P", N * C, f32);
    const hbm_tensor pred = kb.output("predictions", N, dtype::int32);

    // Each kernel of the lab is a phase: its SBUF and PSUM are free for the next.
    auto phase = [&](auto&& emit) {
        kb.begin_phase();
        emit();
        kb.end_phase();
    };
    phase([&] { emit_transpose(kb, x, xT, N, D, "ffnn transpose of X"); });
    phase([&] { emit_matmul(kb, variant, xT, W1, h_pre, {N, D, H}); });
    phase([&] { bias_relu(kb, h_pre, b1, h, N, H); });
    phase([&] { emit_transpose(kb, h, hT, N, H, "ffnn transpose of H"); });
    phase([&] { emit_matmul(kb, variant, hT, W2, z, {N, H, C}); });
    phase([&] { bias_softmax(kb, z, b2, probs, predict ? &pred : nullptr, N, C); });

    built_kernel k;
    k.pe_flops = kb.matmul_flops();
    k.prog = kb.finish();
    k.description = std::string("ffnn ") + (predict ? "predict" : "forward") +
                    " matmul=" + variant + " n=" + std::to_string(N) + " d=" + std::to_string(D) +
                    " h=" + std::to_string(H) + " c=" + std::to_string(C);
    k.check = forward_check(k.prog.regions, N, D, H, C, predict);
    return k;
}

}  // namespace trn
