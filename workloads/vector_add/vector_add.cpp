#include "workloads/vector_add/vector_add.h"

#include "core/error.h"
#include "workloads/builder/kernel_builder.h"

namespace trn {

std::vector<param_doc> vector_add_workload::params() const {
    return {
        {"variant", "tiled",
         "tiled | stream | naive | direct_alloc | alloc_bad (naive needs n <= partitions)"},
        {"n", "25600", "vector length"},
        {"row_chunk", "1", "tiled: rows per tile (at most the partition count)"},
        {"free_dim", "2", "stream: elements per partition per tile (direct_alloc: 1000)"},
        {"layout", "contiguous",
         "stream: contiguous (tile m is one block) | strided (tile m is a column slice)"},
        {"buffers", "4", "direct_alloc, alloc_bad: physical buffers per tensor"},
        {"style", "nl", "nl (compiler-scheduled) | isa (program order, one buffer per tile)"},
        {"dtype", "float32", "element type: float32 | bfloat16 | float16"},
    };
}

namespace {

void require_divides(std::uint64_t n, std::uint64_t by, const std::string& what) {
    if (by == 0 || n % by != 0)
        throw user_error("vector_add: n=" + std::to_string(n) + " must be a multiple of " + what +
                         " (" + std::to_string(by) + ")");
}

}  // namespace

bool vector_add_workload::may_stream(const workload_params& p) const {
    const std::string variant =
        p.text("variant", {"tiled", "stream", "naive", "direct_alloc", "alloc_bad"});
    return variant != "direct_alloc" && variant != "alloc_bad";
}

namespace {

// The golden check of out = a + b over n elements of `type` (the sum rounded to it).
std::function<check_result(const hbm_reader&)> sum_check(const hbm_region& ra, const hbm_region& rb,
                                                         const hbm_region& ro, dtype type,
                                                         std::uint64_t n) {
    return [ra, rb, ro, type, n](const hbm_reader& read) {
        const auto va = region_initial_bytes(ra), vb = region_initial_bytes(rb);
        std::vector<double> expected(n);
        const std::size_t s = dtype_size(type);
        std::vector<std::uint8_t> rounded(s);
        for (std::uint64_t i = 0; i < n; ++i) {
            const double sum = static_cast<double>(load_element(&va[i * s], type)) +
                               load_element(&vb[i * s], type);
            store_element(rounded.data(), type, static_cast<float>(sum));
            expected[i] = load_element(rounded.data(), type);
        }
        const bool fp32 = type == dtype::float32;
        return compare_output(read(ro.offset, ro.bytes), type, expected, fp32 ? 1e-5 : 1e-2,
                              fp32 ? 1e-8 : 1e-4);
    };
}

}  // namespace

built_kernel vector_add_workload::build(const workload_params& p, const config& cfg,
                                        const program_limits& limits) const {
    const std::string variant =
        p.text("variant", {"tiled", "stream", "naive", "direct_alloc", "alloc_bad"});
    const auto n = static_cast<std::uint64_t>(p.integer("n", 1, 1ll << 32));
    const dtype type = parse_dtype(p.text("dtype", {"float32", "bfloat16", "float16"}));
    const kernel_style style = parse_style(p.text("style", {"nl", "isa"}));
    const bool direct = variant == "direct_alloc" || variant == "alloc_bad";
    const auto free_dim = static_cast<std::uint32_t>(
        direct && !p.given("free_dim") ? 1000 : p.integer("free_dim", 1, 1 << 20));
    const std::string layout = p.text("layout", {"contiguous", "strided"});

    kernel_builder kb(kernel_builder::options(cfg, limits, style));
    const std::uint32_t P = kb.partitions();
    const hbm_tensor a = kb.input("a", n, type, 0.0f, 1.0f, 1);
    const hbm_tensor b = kb.input("b", n, type, 0.0f, 1.0f, 2);
    const hbm_tensor out = kb.output("out", n, type);

    // One (rows x elems) tile per tensor per iteration; view(t, m) gives iteration m's HBM slice.
    std::uint32_t rows = 0, elems = 0;
    std::uint64_t iterations = 0;
    std::function<operand(const hbm_tensor&, std::uint64_t)> view;
    std::size_t ta, tb, tr;
    // The tiles are declared in the body of the loop over the iterations (whose trip count
    // decides whether the compiler unrolls it).
    auto declare = [&](std::uint32_t buffers) {
        ta = kb.declare_tile("a_tile", mem_space::sbuf, rows, elems, type, buffers, iterations);
        tb = kb.declare_tile("b_tile", mem_space::sbuf, rows, elems, type, buffers, iterations);
        tr = kb.declare_tile("res_tile", mem_space::sbuf, rows, elems, type, buffers, iterations);
    };
    if (variant == "naive") {
        if (n > 0xffffffffull) throw user_error("vector_add: n is too large for naive");
        rows = static_cast<std::uint32_t>(n);
        elems = 1;
        iterations = 1;
        view = [&](const hbm_tensor& t, std::uint64_t) { return kb.view(t, 0, rows, 1, 1); };
        declare(1);
    } else if (variant == "tiled") {
        rows = static_cast<std::uint32_t>(p.integer("row_chunk", 1, 1 << 20));
        elems = 1;
        require_divides(n, rows, "row_chunk");
        iterations = n / rows;
        view = [&](const hbm_tensor& t, std::uint64_t m) {
            return kb.view(t, m * rows, rows, 1, 1);
        };
        declare(0);
    } else {
        rows = P;
        elems = free_dim;
        if (layout == "strided" && !direct) {
            require_divides(n, P, "the partition count");
            const std::uint64_t cols = n / P;
            // n / P columns per partition, a whole number of free_dim slices each.
            require_divides(n, std::uint64_t{P} * free_dim, "partitions x free_dim");
            iterations = cols / free_dim;
            view = [&, cols](const hbm_tensor& t, std::uint64_t m) {
                return kb.view(t, m * free_dim, P, free_dim, cols);
            };
        } else {
            require_divides(n, std::uint64_t{P} * free_dim, "partitions x free_dim");
            iterations = n / (std::uint64_t{P} * free_dim);
            view = [&](const hbm_tensor& t, std::uint64_t m) {
                return kb.view(t, m * P * free_dim, P, free_dim, free_dim);
            };
        }
        if (direct) {
            const auto buffers = static_cast<std::uint32_t>(p.integer("buffers", 1, 1024));
            const std::uint64_t span = std::uint64_t{buffers} * free_dim * dtype_size(type);
            const bool bad = variant == "alloc_bad";
            ta = kb.declare_tile_at("a_tile", mem_space::sbuf, rows, elems, type, 0, buffers);
            tb = kb.declare_tile_at("b_tile", mem_space::sbuf, rows, elems, type, bad ? 0 : span,
                                    buffers);
            tr = kb.declare_tile_at("res_tile", mem_space::sbuf, rows, elems, type,
                                    bad ? 0 : 2 * span, buffers);
        } else {
            declare(0);
        }
    }

    for (std::uint64_t m = 0; m < iterations; ++m) {
        const tile at = kb.next(ta), bt = kb.next(tb), rt = kb.next(tr);
        kb.load(at, a, view(a, m));
        kb.load(bt, b, view(b, m));
        kb.tensor_tensor(rt, at, bt, alu_op::add);
        kb.store(out, view(out, m), rt);
    }

    built_kernel k;
    k.prog = kb.finish();
    k.warnings = kb.races();
    k.description = "vector_add " + variant + " n=" + std::to_string(n) + " " + dtype_name(type);
    const hbm_region ra = k.prog.regions[0], rb = k.prog.regions[1], ro = k.prog.regions[2];
    k.check = sum_check(ra, rb, ro, type, n);
    return k;
}

}  // namespace trn
