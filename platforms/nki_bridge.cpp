// The in-process bridge of the NKI frontend (Python module `_trnsim`): the platform, which builds
// a kernel's recording into a program with the kernel builder the C++ drivers use (buffers,
// rotation and semaphores are decided there, in C++) and runs it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/timeline.h"
#include "isa/semantics.h"
#include "platforms/chip.h"
#include "platforms/neuron_core.h"
#include "platforms/run_setup.h"
#include "program/trace.h"
#include "workloads/builder/kernel_builder.h"
#include "workloads/nki/recording.h"
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
    platform(const std::string& config_name, const std::vector<std::string>& sets, bool functional,
             const std::string& how)
        : m_cfg(registry()), m_functional(functional) {
        if (s_exists)
            throw trn::user_error(
                "one trnsim platform per process: SystemC elaborates once (run another "
                "config in another process)");
        m_path = load_checked(m_cfg, config_name, sets, how);
        // On a chip whose cores share HBM stacks (trn2) the platform is the first stack's two
        // cores, so that a kernel's SPMD instances can run on both (nl.nc(2), LNC=2); a kernel
        // of one core runs on the first, its partner idle, as a one-core platform.
        const auto shape = trn::chip_shape::of(m_cfg);
        if (shape.cores_per_stack >= 2) {
            m_chip = std::make_unique<trn::chip>("chip", m_cfg, functional, 2, true);
            m_core = &m_chip->core(0);
        } else {
            m_own_core = std::make_unique<trn::neuron_core>("core", m_cfg, functional);
            m_core = m_own_core.get();
            // (TRNSIM_WHOLE_PROGRAM=1: every activity record kept, as sim does, for checking)
            if (std::getenv("TRNSIM_WHOLE_PROGRAM")) m_core->keep_whole_log();
        }
        trn::kernel_builder::options(m_cfg, m_core->limits(), trn::kernel_style::nl);
        s_exists = true;
    }

    std::string path() const { return m_path; }
    std::string name() const { return m_cfg.text("name"); }
    trn::program_limits limits() const { return m_core->limits(); }
    std::int64_t integer(const std::string& key) const { return m_cfg.integer(key); }
    std::uint64_t size(const std::string& key) const { return m_cfg.size(key); }
    double real(const std::string& key) const { return m_cfg.real(key); }
    bool boolean(const std::string& key) const { return m_cfg.boolean(key); }

    // A kernel's recording (its text form, workloads/nki/recording.h) built into a program:
    // (program, the races of tiles the kernel placed itself, matmul flops, the build's notes).
    py::tuple build_recording(const std::string& text) const {
        std::istringstream in(text);
        const trn::nki_recording r = trn::parse_recording(in);
        trn::kernel_builder kb(trn::kernel_builder::options(m_cfg, m_core->limits(), r.style));
        // the platform's rules at each operation's line (the frontend keeps no copy of them)
        const trn::neuron_core* core = m_core;
        kb.set_entry_checks(
            {[core](trn::engine_kind e, const trn::instruction& ins) { core->check_alone(e, ins); },
             [core](const trn::dma_transfer& t) { core->check_alone(t); }});
        trn::program p = trn::expand_recording(r, kb);
        return py::make_tuple(std::move(p), kb.races(), kb.matmul_flops(), kb.notes());
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

    // How the kernel was compiled, as its flags said (neuronx-cc's, NEURON_CC_FLAGS and
    // additional_compile_opt): `hardware_dge` -1 for the config's core.dma.hardware_dge, else
    // 0 (--disable-dge) or 1; `applied` the flags that set something, `ignored` the others.
    struct compile_flags {
        int hardware_dge = -1;
        std::string applied, ignored;
    };

    // Runs `p` to completion; returns the stats tree as JSON text. Optional timeline and trace.
    std::string run(const trn::program& p, const std::string& description,
                    const std::string& timeline_path, const std::string& trace_path,
                    const compile_flags& flags) {
        m_cfg.check_all_read();
        if (!trace_path.empty()) trn::write_trace_file(trace_path, p);
        return simulate(description, timeline_path, flags, false, [&] {
            if (m_chip) m_chip->alone();
            m_core->load(p);
        });
    }

    void print_summary(const std::string& description) const {
        trn::print_summary(
            m_last_stats, description,
            trn::describe_config(m_cfg) +
                (m_last_compiled_with.empty() ? "" : ", compiled with " + m_last_compiled_with));
        trn::print_coverage_note(m_last_stats, m_cfg);
        if (m_last_on_chip)
            trn::print_chip_summary(m_last_stats,
                                    static_cast<std::size_t>(m_last_stats.get("chip.active_cores")),
                                    m_chip->shape().cores_per_stack);
    }

    // The physical cores one kernel's instances can run on at once (2 on trn2, else 1).
    std::size_t cores() const { return m_chip ? m_chip->active() : 1; }

    // Runs programs[c] on core c, all at once (a kernel's SPMD instances on the two cores of
    // an HBM stack); returns the chip's stats as JSON text.
    std::string run_cores(const std::vector<const trn::program*>& programs,
                          const std::string& description, const std::string& timeline_path,
                          const compile_flags& flags) {
        if (!m_chip || programs.size() > m_chip->active())
            throw trn::user_error("this platform runs a kernel on at most " +
                                  std::to_string(cores()) + " physical NeuronCore(s) at once");
        return simulate(description, timeline_path, flags, true, [&] { m_chip->load(programs); });
    }

    // A run's stats, with what ran, how it was compiled and on which configuration, kept as
    // the last run's (for print_summary); returns them as JSON text.
    const std::string& keep(trn::stats_tree stats, const std::string& description, bool chip,
                            const compile_flags& flags) {
        stats.add_text("run.kernel", description, "what ran");
        stats.add_text("run.compiled_with", flags.applied,
                       "the kernel's compiler flags that set something in the model (its "
                       "NEURON_CC_FLAGS and additional_compile_opt; docs/nki.md)");
        stats.add_text("run.flags_not_modelled", flags.ignored,
                       "the kernel's compiler flags the model takes no setting from");
        m_last_compiled_with = flags.applied;
        std::map<std::string, trn::config_override> overrides;
        if (flags.hardware_dge >= 0)  // (the run's DMA descriptors, as the kernel's flags said)
            overrides["core.dma.hardware_dge"] = {flags.hardware_dge ? "true" : "false",
                                                  "the kernel's compiler flags: " + flags.applied};
        trn::add_config_stats(stats, m_cfg, overrides);
        m_last = stats.to_json().dump(2);
        m_last_stats = std::move(stats);
        m_last_on_chip = chip;
        return m_last;
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

    // The checks the constructor makes of a configuration (its file, its keys and values, the
    // --set overrides, its cores), without building the platform: what configure() says at
    // once, as sim says it.
    static void check_config(const std::string& config_name, const std::vector<std::string>& sets,
                             const std::string& how) {
        trn::config cfg(registry());
        load_checked(cfg, config_name, sets, how);
    }

  private:
    // What run() and run_cores() share: load() loads the program(s), which run to the end on
    // the chip (`on_chip`) or the first core, with a timeline written to `timeline_path` when
    // given; returns the stats as JSON text (keep()).
    std::string simulate(const std::string& description, const std::string& timeline_path,
                         const compile_flags& flags, bool on_chip,
                         const std::function<void()>& load) {
        m_cfg.check_all_read();
        trn::timeline tl;
        trn::timeline* recording = timeline_path.empty() ? nullptr : &tl;
        trn::stats_tree stats;
        {
            py::gil_scoped_release unlocked;
            set_hardware_dge(flags);
            load();
            stats = on_chip ? trn::simulate(*m_chip, recording) : trn::simulate(*m_core, recording);
        }
        if (recording) tl.write(timeline_path);
        return keep(std::move(stats), description, on_chip, flags);
    }

    // Every core's transfers as the kernel's flags say (else the config's default).
    void set_hardware_dge(const compile_flags& flags) {
        const bool on =
            flags.hardware_dge < 0 ? m_cfg.boolean("core.dma.hardware_dge") : flags.hardware_dge;
        if (m_chip)
            for (std::size_t c = 0; c < m_chip->active(); ++c)
                m_chip->core(c).set_hardware_dge(on);
        else
            m_core->set_hardware_dge(on);
    }

    // Loads the config `config_name` names (and `sets`) into `cfg` as the platform takes it;
    // returns its file. Throws user_error naming what is wrong.
    static std::string load_checked(trn::config& cfg, const std::string& config_name,
                                    const std::vector<std::string>& sets, const std::string& how) {
        std::string path = trn::resolve_config(config_name);
        trn::load_config(cfg, path, sets, how);
        if (const auto active = trn::chip_shape::of(cfg).active; active > 1)
            throw trn::user_error("chip.active_cores " + std::to_string(active) +
                                  ": NKI kernels run on one core yet (several cores at once: "
                                  "sim's drivers and traces)");
        return path;
    }

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
    std::unique_ptr<trn::chip> m_chip;
    std::unique_ptr<trn::neuron_core> m_own_core;
    trn::neuron_core* m_core = nullptr;
    bool m_last_on_chip = false;  // the last run was on several cores
    std::string m_last_compiled_with;
    std::string m_last;
    trn::stats_tree m_last_stats;
};

// One instruction's values by the model's functional engines (isa/semantics.h), for the tests
// that hold the frontend's numpy twins to them. `fields`: the trace's alu, alu1, func (names),
// imm..imm3 (numbers) and flags ("rev0|rev1"); `operands`: slot name -> (partitions, elements,
// dtype name), contiguous SBUF tiles; `inputs`: slot name -> its packed bytes. Returns
// {"dst": bytes, "dst1": bytes}.
py::dict execute_instruction(
    const std::string& name, const py::dict& fields,
    const std::map<std::string, std::tuple<std::uint32_t, std::uint32_t, std::string>>& operands,
    const std::map<std::string, py::bytes>& inputs) {
    trn::instruction ins;
    auto named = [&](const auto& all, auto name_of, const std::string& what, const std::string& v) {
        for (const auto x : all)
            if (v == name_of(x)) return x;
        throw trn::user_error("no " + what + " '" + v + "'");
    };
    ins.op = named(trn::all_opcodes, trn::opcode_name, "opcode", name);
    for (const auto& [key, value] : fields) {
        const std::string k = py::str(key);
        if (k == "alu" || k == "alu1")
            (k == "alu" ? ins.alu : ins.alu1) =
                named(trn::all_alu_ops, trn::alu_name, "alu op", py::str(value));
        else if (k == "func")
            ins.func = named(trn::all_act_funcs, trn::act_func_name, "function", py::str(value));
        else if (k == "imm" || k == "imm1" || k == "imm2" || k == "imm3")
            (k == "imm"    ? ins.imm
             : k == "imm1" ? ins.imm1
             : k == "imm2" ? ins.imm2
                           : ins.imm3) = value.cast<float>();
        else if (k == "flags") {
            std::stringstream in(py::str(value).cast<std::string>());
            for (std::string f; std::getline(in, f, '|');)
                if (!f.empty())
                    ins.flags |= named(
                                     trn::all_flags, [](const trn::flag_info& i) { return i.name; },
                                     "flag", f)
                                     .bit;
        } else
            throw trn::user_error("no field '" + k + "'");
    }
    const std::map<std::string, trn::operand_slot> slots = {
        {"dst", trn::operand_slot::dst},   {"src0", trn::operand_slot::src0},
        {"src1", trn::operand_slot::src1}, {"src2", trn::operand_slot::src2},
        {"dst1", trn::operand_slot::dst1}, {"src3", trn::operand_slot::src3}};
    for (const auto& [slot, shape] : operands) {
        const auto at = slots.find(slot);
        if (at == slots.end()) throw trn::user_error("no operand '" + slot + "'");
        trn::operand& o = ins.at(at->second);
        o.partitions = std::get<0>(shape);
        o.elems = std::get<1>(shape);
        o.type = trn::parse_dtype(std::get<2>(shape));
    }
    auto bytes_of = [&](const char* slot) {
        const auto it = inputs.find(slot);
        if (it == inputs.end()) return std::vector<std::uint8_t>();
        const std::string b = it->second;
        return std::vector<std::uint8_t>(b.begin(), b.end());
    };
    const auto s0 = bytes_of("src0"), s1 = bytes_of("src1"), s2 = bytes_of("src2");
    std::vector<std::uint8_t> d, d1;
    std::vector<float> regs;
    trn::execute_alu(ins, s0, s1, s2, d, d1, &regs);
    py::dict out;
    out["dst"] = py::bytes(reinterpret_cast<const char*>(d.data()), d.size());
    out["dst1"] = py::bytes(reinterpret_cast<const char*>(d1.data()), d1.size());
    return out;
}

}  // namespace

PYBIND11_MODULE(_trnsim, m) {
    ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
    m.doc() = "trnsim's platform and kernel builder, for the NKI frontend";
    py::register_exception<trn::user_error>(m, "UserError", PyExc_ValueError);
    // An error of one operation of a recording: args (its index, the message).
    static py::exception<trn::nki_op_error> recording_error(m, "RecordingError", PyExc_ValueError);
    // A loop of a recording to record unrolled: args (its loop id,).
    static py::exception<trn::nki_unroll_request> unroll_request(m, "UnrollRequest",
                                                                 PyExc_RuntimeError);
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const trn::nki_op_error& e) {
            const py::tuple args = py::make_tuple(e.op(), e.what());
            PyErr_SetObject(recording_error.ptr(), args.ptr());
        } catch (const trn::nki_unroll_request& e) {
            const py::tuple args = py::make_tuple(e.loop());
            PyErr_SetObject(unroll_request.ptr(), args.ptr());
        }
    });

    py::class_<trn::program>(m, "Program")
        .def("instruction_count", &trn::program::instruction_count)
        .def("transfer_count", &trn::program::transfer_count)
        .def("write_trace", [](const trn::program& p, const std::string& path) {
            trn::write_trace_file(path, p);
        });

    py::class_<platform::compile_flags>(m, "CompileFlags")
        .def(py::init<>())
        .def_readwrite("hardware_dge", &platform::compile_flags::hardware_dge)
        .def_readwrite("applied", &platform::compile_flags::applied)
        .def_readwrite("ignored", &platform::compile_flags::ignored);
    py::class_<platform>(m, "Platform")
        .def(py::init<const std::string&, const std::vector<std::string>&, bool,
                      const std::string&>(),
             py::arg("config"), py::arg("sets") = std::vector<std::string>{},
             py::arg("functional") = false, py::arg("how") = "--set")
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
        .def("boolean", &platform::boolean)
        .def("build_recording", &platform::build_recording)
        .def("build_workload", &platform::build_workload)
        .def("run", &platform::run, py::arg("program"), py::arg("description") = "",
             py::arg("timeline") = "", py::arg("trace") = "",
             py::arg("flags") = platform::compile_flags{})
        .def("check", &platform::check)
        .def("cores", &platform::cores)
        .def("run_cores", &platform::run_cores, py::arg("programs"), py::arg("description") = "",
             py::arg("timeline") = "", py::arg("flags") = platform::compile_flags{})
        .def("print_summary", &platform::print_summary)
        .def("read_region", &platform::read_region);

    m.def("execute_instruction", &execute_instruction, py::arg("opcode"), py::arg("fields"),
          py::arg("operands"), py::arg("inputs"));
    m.def("check_config", &platform::check_config, py::arg("config"),
          py::arg("sets") = std::vector<std::string>{}, py::arg("how") = "--set");
    m.def("region_initial_bytes", [](const trn::program& p, const std::string& name) {
        const auto bytes = trn::region_initial_bytes(platform::find_region(p, name));
        return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    });
}
