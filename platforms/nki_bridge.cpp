// The in-process bridge of the NKI frontend (Python module `_trnsim`): the kernel builder the
// C++ drivers use, and the platform that runs what it builds. Python records a kernel's tile
// operations through these calls; buffers, rotation and semaphores are decided here, in C++.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/timeline.h"
#include "core/trace.h"
#include "platforms/neuron_core.h"
#include "platforms/run_setup.h"
#include "workloads/builder/kernel_builder.h"
#include "workloads/registry.h"

namespace py = pybind11;

// libsystemc refers to sc_main (its own main() calls it); in a Python process nothing calls it.
extern "C" __attribute__((visibility("default"))) int sc_main(int, char**) {
    return 2;
}

namespace {

// One NeuronCore built from a config; SystemC elaborates once per process, so there is one.
class platform {
  public:
    platform(const std::string& config_name, const std::vector<std::string>& sets, bool functional)
        : m_cfg(registry()), m_functional(functional) {
        if (s_exists)
            throw trn::user_error(
                "one trnsim platform per process: SystemC elaborates once (run another "
                "config in another process)");
        m_path = trn::resolve_config(config_name);
        trn::load_config(m_cfg, m_path, sets);
        m_core = std::make_unique<trn::neuron_core>("core", m_cfg, functional);
        trn::kernel_builder::options(m_cfg, m_core->limits(), trn::kernel_style::nl);
        s_exists = true;
    }

    std::string path() const { return m_path; }
    std::string name() const { return m_cfg.text("name"); }
    trn::program_limits limits() const { return m_core->limits(); }
    std::int64_t integer(const std::string& key) const { return m_cfg.integer(key); }
    std::uint64_t size(const std::string& key) const { return m_cfg.size(key); }
    double real(const std::string& key) const { return m_cfg.real(key); }

    trn::kernel_builder builder(trn::kernel_style style) const {
        return trn::kernel_builder(trn::kernel_builder::options(m_cfg, m_core->limits(), style));
    }

    // A C++ driver's program, for comparisons with the frontend.
    trn::program build_workload(const std::string& name,
                                const std::map<std::string, std::string>& params) const {
        const trn::workload& w = trn::find_workload(name);
        return w.build(trn::workload_params(w.name(), w.params(), params), m_cfg, m_core->limits())
            .prog;
    }

    // What run() checks before it simulates (the limits, what each engine can execute).
    void check(const trn::program& p) const { m_core->check(p); }

    // Runs `p` to completion; returns the stats tree as JSON text. Optional timeline and trace.
    std::string run(const trn::program& p, const std::string& description,
                    const std::string& timeline_path, const std::string& trace_path) {
        m_cfg.check_all_read();
        if (!trace_path.empty()) trn::write_trace_file(trace_path, p);
        trn::timeline tl;
        {
            py::gil_scoped_release unlocked;
            m_core->load(p);
            m_core->set_timeline(timeline_path.empty() ? nullptr : &tl);
            m_core->run();
            m_core->set_timeline(nullptr);
        }
        if (!timeline_path.empty()) tl.write(timeline_path);
        trn::stats_tree stats;
        m_core->report(stats);
        stats.add_text("run.kernel", description, "what ran");
        stats.add_text("run.config", m_path, "config file");
        trn::add_config_stats(stats, m_cfg);
        m_last = stats.to_json().dump(2);
        m_last_stats = std::move(stats);
        return m_last;
    }

    void print_summary(const std::string& description) const {
        trn::print_summary(m_last_stats, description, trn::describe_config(m_cfg));
    }

    // The bytes of a region after a functional run.
    py::bytes read_region(const trn::program& p, const std::string& region) {
        if (!m_functional) throw trn::user_error("read_region needs a functional platform");
        const trn::hbm_region& r = find_region(p, region);
        const auto bytes = m_core->read_hbm(r.offset, r.bytes);
        return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    }

    static const trn::hbm_region& find_region(const trn::program& p, const std::string& name) {
        for (const auto& r : p.regions)
            if (r.name == name) return r;
        throw trn::user_error("the program has no HBM region '" + name + "'");
    }

  private:
    static trn::param_registry& registry() {
        static trn::param_registry r = [] {
            trn::param_registry reg;
            trn::declare_platform_params(reg);
            return reg;
        }();
        return r;
    }
    static inline bool s_exists = false;
    trn::config m_cfg;
    bool m_functional;
    std::string m_path;
    std::unique_ptr<trn::neuron_core> m_core;
    std::string m_last;
    trn::stats_tree m_last_stats;
};

std::size_t engine_instructions(const trn::program& p, trn::engine_kind e) {
    return p.engines[std::size_t(e)].size();
}

}  // namespace

PYBIND11_MODULE(_trnsim, m) {
    ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
    m.doc() = "trnsim's kernel builder and platform, for the NKI frontend";
    py::register_exception<trn::user_error>(m, "UserError", PyExc_ValueError);

    py::enum_<trn::mem_space>(m, "mem_space")
        .value("hbm", trn::mem_space::hbm)
        .value("sbuf", trn::mem_space::sbuf)
        .value("psum", trn::mem_space::psum);
    py::enum_<trn::dtype>(m, "dtype")
        .value("float32", trn::dtype::float32)
        .value("bfloat16", trn::dtype::bfloat16)
        .value("float16", trn::dtype::float16)
        .value("fp8_e4m3", trn::dtype::fp8_e4m3)
        .value("int32", trn::dtype::int32);
    py::enum_<trn::alu_op>(m, "alu_op")
        .value("bypass", trn::alu_op::bypass)
        .value("add", trn::alu_op::add)
        .value("subtract", trn::alu_op::subtract)
        .value("multiply", trn::alu_op::multiply)
        .value("max", trn::alu_op::max)
        .value("min", trn::alu_op::min);
    {
        py::enum_<trn::act_func> funcs(m, "act_func");
        for (const auto f : trn::all_act_funcs)
            funcs.value(trn::act_func_name(f), f);
    }
    py::enum_<trn::engine_kind>(m, "engine")
        .value("pe", trn::engine_kind::pe)
        .value("dve", trn::engine_kind::dve)
        .value("act", trn::engine_kind::act)
        .value("pool", trn::engine_kind::pool)
        .value("sp", trn::engine_kind::sp);
    py::enum_<trn::kernel_style>(m, "style")
        .value("nl", trn::kernel_style::nl)
        .value("isa", trn::kernel_style::isa);

    py::class_<trn::hbm_tensor>(m, "HbmTensor")
        .def_readonly("name", &trn::hbm_tensor::name)
        .def_readonly("elems", &trn::hbm_tensor::elems)
        .def_readonly("offset", &trn::hbm_tensor::offset);
    py::class_<trn::operand>(m, "Operand")
        .def_readonly("offset", &trn::operand::offset)
        .def_readonly("row_stride", &trn::operand::row_stride)
        .def_readonly("partitions", &trn::operand::partitions)
        .def_readonly("elems", &trn::operand::elems)
        .def_readonly("partition", &trn::operand::partition);
    py::class_<trn::tile>(m, "Tile")
        .def_readonly("buffer", &trn::tile::buffer)
        .def_readonly("op", &trn::tile::op);

    py::class_<trn::program>(m, "Program")
        .def("instruction_count", &trn::program::instruction_count)
        .def("transfer_count", &trn::program::transfer_count)
        .def("engine_instructions", &engine_instructions)
        .def("write_trace", [](const trn::program& p, const std::string& path) {
            trn::write_trace_file(path, p);
        });

    py::class_<trn::tile_request>(m, "TileRequest")
        .def(py::init([](trn::mem_space space, std::uint64_t bytes, std::size_t count, bool single,
                         std::vector<std::uint64_t> loops) {
            return trn::tile_request{space, bytes, count, single, std::move(loops)};
        }));

    using kb = trn::kernel_builder;
    py::class_<kb>(m, "KernelBuilder")
        .def("partitions", &kb::partitions)
        .def("input", &kb::input)
        .def("output", &kb::output)
        .def("view", &kb::view)
        .def("declare_tile", &kb::declare_tile, py::arg("name"), py::arg("space"),
             py::arg("partitions"), py::arg("elems"), py::arg("type"), py::arg("buffers") = 0,
             py::arg("loop_trips") = 0)
        .def("declare_tile_at", &kb::declare_tile_at)
        .def("declare_tile_array", &kb::declare_tile_array, py::arg("name"), py::arg("count"),
             py::arg("space"), py::arg("partitions"), py::arg("elems"), py::arg("type"),
             py::arg("buffers") = 0, py::arg("loop_trips") = 0)
        .def("buffers_that_fit", &kb::buffers_that_fit, py::arg("bytes"), py::arg("loop_trips") = 0)
        .def("races", &kb::races)
        .def("sbuf_free", &kb::sbuf_free)
        .def("plan_buffers", &kb::plan_buffers)
        .def("next", &kb::next)
        .def_static("slice", &kb::slice)
        .def_static("strided", &kb::strided)
        .def_static("partitions_of", &kb::partitions_of)
        .def("load", &kb::load)
        .def("store", &kb::store)
        .def("tensor_tensor", &kb::tensor_tensor)
        .def("tensor_scalar", &kb::tensor_scalar, py::arg("dst"), py::arg("a"), py::arg("op"),
             py::arg("imm"), py::arg("on") = trn::engine_kind::dve,
             py::arg("op1") = trn::alu_op::bypass, py::arg("imm1") = 0.0f)
        .def("tensor_scalar_ap", &kb::tensor_scalar_ap, py::arg("dst"), py::arg("src"),
             py::arg("op"), py::arg("scalar"), py::arg("on") = trn::engine_kind::dve,
             py::arg("op1") = trn::alu_op::bypass, py::arg("imm1") = 0.0f)
        .def("tensor_copy", &kb::tensor_copy)
        .def("copy", &kb::copy)
        .def("memset", &kb::memset)
        .def("activation", &kb::activation, py::arg("dst"), py::arg("src"), py::arg("func"),
             py::arg("scale") = 1.0f, py::arg("on") = trn::engine_kind::act,
             py::arg("bias") = static_cast<const trn::tile*>(nullptr))
        .def("iota", &kb::iota)
        .def("scalar_tensor_tensor", &kb::scalar_tensor_tensor)
        .def("tensor_tensor_scan", &kb::tensor_tensor_scan)
        .def("tensor_reduce", &kb::tensor_reduce)
        .def("max8", &kb::max8)
        .def("find_index8", &kb::find_index8)
        .def("matmul", &kb::matmul)
        .def("transpose", &kb::transpose)
        .def("begin_phase", &kb::begin_phase)
        .def("end_phase", &kb::end_phase)
        .def("matmul_flops", &kb::matmul_flops)
        .def("finish", &kb::finish);

    py::class_<platform>(m, "Platform")
        .def(py::init<const std::string&, const std::vector<std::string>&, bool>(),
             py::arg("config"), py::arg("sets") = std::vector<std::string>{},
             py::arg("functional") = false)
        .def_property_readonly("path", &platform::path)
        .def_property_readonly("name", &platform::name)
        .def("partitions", [](const platform& p) { return p.limits().partitions; })
        .def("sbuf_partition_bytes",
             [](const platform& p) { return p.limits().sbuf_partition_bytes; })
        .def("psum_partition_bytes",
             [](const platform& p) { return p.limits().psum_partition_bytes; })
        .def("integer", &platform::integer)
        .def("size", &platform::size)
        .def("real", &platform::real)
        .def("builder", &platform::builder)
        .def("build_workload", &platform::build_workload)
        .def("run", &platform::run, py::arg("program"), py::arg("description") = "",
             py::arg("timeline") = "", py::arg("trace") = "")
        .def("check", &platform::check)
        .def("print_summary", &platform::print_summary)
        .def("read_region", &platform::read_region);

    m.def("region_initial_bytes", [](const trn::program& p, const std::string& name) {
        const auto bytes = trn::region_initial_bytes(platform::find_region(p, name));
        return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    });
}
