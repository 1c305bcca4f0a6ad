#include "workloads/transpose/transpose.h"

#include "core/error.h"

namespace trn {

std::vector<param_doc> transpose_workload::params() const {
    return {
        {"m", "1024", "rows of the input (multiple of the tile, 128)"},
        {"n", "1024", "columns of the input (multiple of the tile, 128)"},
        {"dtype", "float32", "float32 | bfloat16 | float16"},
        {"style", "nl", "nl (compiler-scheduled) | isa (program order)"},
    };
}

void emit_transpose(kernel_builder& kb, const hbm_tensor& in, const hbm_tensor& out,
                    std::uint64_t rows, std::uint64_t cols, const std::string& what) {
    const auto& o = kb.opts();
    const std::uint32_t P = std::min(o.pe_rows, o.limits.partitions);
    const std::uint32_t F = std::min(P, o.pe_cols);
    if (rows % P != 0 || cols % F != 0)
        throw user_error(what + ": a " + std::to_string(rows) + " x " + std::to_string(cols) +
                         " transpose needs rows a multiple of " + std::to_string(P) +
                         " and columns a multiple of " + std::to_string(F) +
                         " (the Tensor engine's transpose tile)");
    // The tiles are declared in the body of the inner loop (over column tiles).
    const std::uint64_t trips = cols / F;
    const std::size_t tin =
        kb.declare_tile(in.name + "_tile", mem_space::sbuf, P, F, in.type, 0, trips);
    const std::size_t tps =
        kb.declare_tile(in.name + "_T_psum", mem_space::psum, F, P, dtype::float32, 0, trips);
    const std::size_t tout =
        kb.declare_tile(in.name + "_T_tile", mem_space::sbuf, F, P, out.type, 0, trips);
    for (std::uint64_t i = 0; i < rows / P; ++i)
        for (std::uint64_t j = 0; j < cols / F; ++j) {
            const tile a = kb.next(tin), t = kb.next(tps), b = kb.next(tout);
            kb.load(a, in, kb.view(in, i * P * cols + j * F, P, F, cols));
            kb.transpose(t, a);
            kb.copy(b, t);
            kb.store(out, kb.view(out, j * F * rows + i * P, F, P, rows), b);
        }
}

built_kernel transpose_workload::build(const workload_params& p, const config& cfg,
                                       const program_limits& limits) const {
    const auto m = static_cast<std::uint64_t>(p.integer("m", 1, 1 << 20));
    const auto n = static_cast<std::uint64_t>(p.integer("n", 1, 1 << 20));
    const dtype type = parse_dtype(p.text("dtype", {"float32", "bfloat16", "float16"}));
    kernel_builder kb(
        kernel_builder::options(cfg, limits, parse_style(p.text("style", {"nl", "isa"}))));
    const hbm_tensor in = kb.input("in", m * n, type, -1.0f, 1.0f, 21);
    const hbm_tensor out = kb.output("out", m * n, type);
    emit_transpose(kb, in, out, m, n, "transpose");
    built_kernel k;
    k.prog = kb.finish();
    k.description =
        "transpose " + std::to_string(m) + "x" + std::to_string(n) + " " + dtype_name(type);
    const hbm_region ri = k.prog.regions[0], ro = k.prog.regions[1];
    k.check = [ri, ro, m, n, type](const hbm_reader& read) {
        const auto bytes = region_initial_bytes(ri);
        const std::size_t s = dtype_size(type);
        std::vector<double> expected(m * n);
        for (std::uint64_t i = 0; i < m; ++i)
            for (std::uint64_t j = 0; j < n; ++j)
                expected[j * m + i] = load_element(&bytes[(i * n + j) * s], type);
        return compare_output(read(ro.offset, ro.bytes), type, expected, 0.0, 0.0);  // exact
    };
    return k;
}

}  // namespace trn
