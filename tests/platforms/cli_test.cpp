// End-to-end tests of the `sim` command line: exit statuses, error messages, outputs.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "support/run_sim.h"

namespace fs = std::filesystem;
using trn::testing::run_sim;

namespace {

// A scratch directory per test, removed afterwards.
class cli : public ::testing::Test {
  protected:
    void SetUp() override {
        char tmpl[] = "/tmp/trnsim-cli-XXXXXX";
        m_dir = ::mkdtemp(tmpl);
    }
    void TearDown() override { fs::remove_all(m_dir); }

    std::string file(const std::string& name, const std::string& text) const {
        const std::string path = m_dir + "/" + name;
        std::ofstream(path) << text;
        return path;
    }
    std::string path(const std::string& name) const { return m_dir + "/" + name; }
    static nlohmann::json load_json(const std::string& p) {
        std::ifstream in(p);
        return nlohmann::json::parse(in);
    }
    static std::string read(const std::string& p) {
        std::ifstream in(p);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }

    std::string m_dir;
};

const std::string trn1 = std::string(SOURCE_DIR) + "/configs/trn1.yaml";

TEST_F(cli, help_and_listings_succeed) {
    auto r = run_sim("--help");
    EXPECT_EQ(r.status, 0);
    EXPECT_NE(r.output.find("--workload"), std::string::npos);
    EXPECT_NE(r.output.find("Exit status"), std::string::npos);
    r = run_sim("--list-params");
    EXPECT_EQ(r.status, 0);
    for (const char* key : {"core.hbm.bandwidth", "core.dma.engines", "core.dma.queues"})
        EXPECT_NE(r.output.find(key), std::string::npos) << key;
    r = run_sim("--list-workloads");
    EXPECT_EQ(r.status, 0);
    EXPECT_NE(r.output.find("vector_add"), std::string::npos);
}

TEST_F(cli, config_found_by_name_or_path) {
    EXPECT_EQ(run_sim("--config trn1 --workload vector_add --param n=1024 -q").status, 0);
    EXPECT_EQ(run_sim("--config trn2.yaml --workload vector_add --param n=1024 -q").status, 0);
    EXPECT_EQ(run_sim("--config " + trn1 + " --workload vector_add --param n=1024 -q").status, 0);
    auto r = run_sim("--config trn9 --workload vector_add");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("trn9"), std::string::npos);
    EXPECT_NE(r.output.find("trn1"), std::string::npos);  // lists what exists
}

TEST_F(cli, usage_errors_exit_2) {
    EXPECT_EQ(run_sim("--workload vector_add").status, 2);  // no config
    EXPECT_EQ(run_sim("--config trn1").status, 2);          // no workload
    EXPECT_EQ(run_sim("--config trn1 --workload vector_add --bogus").status, 2);
    auto r = run_sim("--config trn1 --workload nope");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("vector_add"), std::string::npos);  // lists the valid ones
}

TEST_F(cli, an_option_with_a_message_placeholder_is_rejected_not_hung_on) {
    // Boost would loop forever formatting the error for this token (found by fuzzing).
    auto r = run_sim("'--lis%canonical_option%' json");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("unrecognised option '--lis%canonical_option%'"), std::string::npos)
        << r.output;
    // A value may contain the characters.
    r = run_sim("--config trn1 --workload vector_add -q --stats-out '" +
                path("a%canonical_option%") + "'");
    EXPECT_EQ(r.status, 0) << r.output;
}

TEST_F(cli, unknown_config_key_names_key_and_file_line) {
    std::string text = read(trn1);
    text.replace(text.find("  hbm:\n"), 7, "  hbm2:\n    bandwidth: 1GB/s\n  hbm:\n");
    const std::string cfg = file("bad.yaml", text);
    auto r = run_sim("--config " + cfg + " --workload vector_add");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("core.hbm2.bandwidth"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("bad.yaml:"), std::string::npos) << r.output;
}

TEST_F(cli, a_config_starts_from_a_base_and_says_so) {
    // The same machine three ways: a file with a base, and --set on the generation's config.
    const std::string fast =
        file("fast.yaml", "base: trn2\nname: trn2-fast\ncore:\n  hbm:\n    bandwidth: 725GB/s\n");
    auto a = run_sim("--config " + fast + " --workload vector_add --stats-out " + path("a.json"));
    auto b = run_sim(
        "--config trn2 --workload vector_add --set core.hbm.bandwidth=725GB/s "
        "--stats-out " +
        path("b.json"));
    ASSERT_EQ(a.status, 0) << a.output;
    ASSERT_EQ(b.status, 0) << b.output;
    const auto ja = load_json(path("a.json")), jb = load_json(path("b.json"));
    EXPECT_EQ(ja["total_time_ns"], jb["total_time_ns"]);
    // The header names the base and the overrides.
    EXPECT_NE(a.output.find("on trn2-fast (" + fast + ", base "), std::string::npos) << a.output;
    EXPECT_NE(b.output.find("with --set core.hbm.bandwidth=725GB/s"), std::string::npos)
        << b.output;
    // The effective configuration, and where each value came from, is in the stats, without
    // the machine's folders: the given file by its name, a file of configs/ by its name.
    EXPECT_EQ(ja["config"]["core"]["hbm"]["bandwidth"], "725GB/s");
    EXPECT_EQ(ja["run"]["config"], "fast.yaml");
    EXPECT_EQ(ja["config_origin"]["core"]["hbm"]["bandwidth"], "fast.yaml:5");
    EXPECT_EQ(ja["config_origin"]["core"]["pe"]["rows"].get<std::string>().rfind("trn2.yaml:", 0),
              0u);
    EXPECT_EQ(jb["run"]["config"], "trn2.yaml");
    EXPECT_EQ(jb["config_origin"]["core"]["hbm"]["bandwidth"], "--set core.hbm.bandwidth=725GB/s");
    // A base in another folder: relative to the given file's folder.
    std::filesystem::create_directories(path("mine"));
    std::filesystem::create_directories(path("shared"));
    file("shared/wide.yaml", "base: trn2\ncore:\n  pe:\n    cols: 256\n");
    const std::string mine = file("mine/m.yaml", "base: ../shared/wide.yaml\nname: mine\n");
    auto c = run_sim("--config " + mine + " --workload vector_add --stats-out " + path("c.json"));
    ASSERT_EQ(c.status, 0) << c.output;
    const auto jc = load_json(path("c.json"));
    EXPECT_EQ(jc["config_origin"]["name"], "m.yaml:2");
    EXPECT_EQ(jc["config_origin"]["core"]["pe"]["cols"], "../shared/wide.yaml:4");
    EXPECT_EQ(jc["config_origin"]["core"]["pe"]["rows"].get<std::string>().rfind("trn2.yaml:", 0),
              0u);
    // --list-params shows that configuration, not the defaults.
    auto l = run_sim("--list-params --config " + fast + " --set core.dma.engines=8");
    EXPECT_EQ(l.status, 0) << l.output;
    EXPECT_NE(l.output.find("725GB/s"), std::string::npos) << l.output;
    EXPECT_NE(l.output.find("from: --set core.dma.engines=8"), std::string::npos) << l.output;
}

TEST_F(cli, every_configured_dma_engine_takes_a_share_of_each_transfer) {
    double busiest[2] = {};
    for (int i = 0; i < 2; ++i) {
        const std::string out = path("e" + std::to_string(i) + ".json");
        auto r = run_sim(
            "--config trn1 --workload vector_add --param variant=stream "
            "--param n=256000 --param free_dim=2000 --quiet --set core.dma.engines=" +
            std::string(i ? "32" : "16") + " --stats-out " + out);
        ASSERT_EQ(r.status, 0) << r.output;
        busiest[i] = load_json(out)["dma"]["busiest_engine_ns"].get<double>();
    }
    // 32 engines take 4 partitions of each transfer where 16 take 8: half the busiest load.
    EXPECT_NEAR(busiest[1], busiest[0] / 2, busiest[0] * 1e-6);
}

TEST_F(cli, the_runtime_of_the_sdk_named_sets_the_launch_cost) {
    // runtime.sdk 2024 and earlier pay core.launch_overhead_2024; later ones core.launch_overhead
    // (the default SDK, 2025); the kernel itself takes the same time under either.
    const char* sdks[] = {"", " --set runtime.sdk=2025", " --set runtime.sdk=2024",
                          " --set runtime.sdk=2019"};
    double launch[4] = {}, body[4] = {};
    for (int i = 0; i < 4; ++i) {
        const std::string out = path("sdk" + std::to_string(i) + ".json");
        auto r = run_sim(
            "--config trn1 --workload vector_add --param n=4096 --quiet "
            "--set core.launch_overhead=5us --set core.launch_overhead_2024=17us" +
            std::string(sdks[i]) + " --stats-out " + out);
        ASSERT_EQ(r.status, 0) << r.output;
        const auto j = load_json(out);
        launch[i] = j["launch_overhead_ns"].get<double>();
        body[i] = j["total_time_ns"].get<double>() - launch[i];
    }
    EXPECT_DOUBLE_EQ(launch[0], 5000);
    EXPECT_DOUBLE_EQ(launch[1], 5000);
    EXPECT_DOUBLE_EQ(launch[2], 17000);
    EXPECT_DOUBLE_EQ(launch[3], 17000);
    for (double b : body)
        EXPECT_DOUBLE_EQ(b, body[0]);
    auto r = run_sim("--config trn1 --workload vector_add --set runtime.sdk=2018");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("runtime.sdk"), std::string::npos) << r.output;
}

// The sum of the leaves of a stats subtree whose names end in _ns (but `except`).
double sum_ns(const nlohmann::json& tree, const std::string& except = "") {
    double total = 0;
    for (const auto& [k, v] : tree.items())
        if (v.is_number() && k.size() > 3 && k.compare(k.size() - 3, 3, "_ns") == 0 && k != except)
            total += v.get<double>();
    return total;
}

TEST_F(cli, stats_say_what_limits_the_kernel) {
    struct {
        const char* args;
        const char* bound;  // the critical path's largest part
        const char* limit;  // what would save most, were it free
    } cases[] = {
        // Tensor-engine bound (fp32 matmuls, 95% busy).
        {"--config trn1 --workload matmul --param variant=fully_optimized --param m=2048 "
         "--param k=1024 --param n=1024",
         "pe", "pe"},
        // 25600 tiny tiles in a loop too long to unroll: each load waits for the DMA latency.
        {"--config trn1 --workload vector_add", "dma fixed latency", "dma fixed latency"},
        // The lab's ffnn, tiled matmuls: strided rows, HBM page activations and the DMA engines
        // both nearly saturated, so only freeing the data movement as a whole would help.
        {"--config trn1 --workload ffnn", "hbm", "data movement (hbm activations)"},
    };
    for (const auto& c : cases) {
        const std::string out = path("s.json");
        auto r = run_sim(std::string(c.args) + " --stats-out " + out);
        ASSERT_EQ(r.status, 0) << r.output;
        const auto j = load_json(out);
        const auto& cp = j["critical_path"];
        EXPECT_EQ(cp["bound"].get<std::string>(), c.bound) << c.args;
        EXPECT_EQ(j["limit"]["by"].get<std::string>(), c.limit) << c.args;
        EXPECT_NE(r.output.find(std::string("bound by         ") + c.limit + ": freed"),
                  std::string::npos)
            << r.output;
        EXPECT_NE(r.output.find(std::string("critical path    ") + c.bound + " "),
                  std::string::npos)
            << r.output;
        // The path covers the kernel time, split with nothing lost or counted twice.
        const double total = j["total_time_ns"].get<double>();
        EXPECT_NEAR(cp["total_ns"].get<double>(), total, total * 1e-9) << c.args;
        EXPECT_NEAR(sum_ns(cp, "total_ns"), total, total * 1e-6) << c.args;
        // Per DMA engine, the busy times add up to the total; every HBM channel is listed.
        double dma_busy = 0;
        for (const auto& [k, v] : j["dma"]["engines"].items())
            dma_busy += v["busy_ns"].get<double>();
        EXPECT_NEAR(dma_busy, j["dma"]["engine_busy_ns"].get<double>(), 1e-6 * (1 + dma_busy));
        EXPECT_EQ(j["hbm"]["channels"].size(), 8u);
        // Per opcode and per semaphore, an engine's busy and wait times add up.
        for (const char* e : {"pe", "dve", "act", "sp"}) {
            const auto& eng = j["engines"][e];
            double busy = 0;
            if (eng.contains("opcodes"))
                for (const auto& [op, v] : eng["opcodes"].items())
                    busy += v["busy_ns"].get<double>();
            EXPECT_NEAR(busy, eng["busy_ns"].get<double>(), 1e-6 * (1 + busy)) << e;
            if (eng.contains("stall_on")) {
                EXPECT_LE(sum_ns(eng["stall_on"]), eng["stall_semaphore_ns"].get<double>() + 1e-3)
                    << e;
            }
        }
    }
    // conv2d on trn2: the DMA latency lies on most of the critical path, but freeing the
    // Tensor engine saves more; the summary says both. Where they agree it says nothing more.
    auto w = run_sim("--config trn2 --workload conv2d");
    EXPECT_NE(w.output.find("bound by         pe: freed"), std::string::npos) << w.output;
    EXPECT_NE(w.output.find("what-if          dma fixed latency, "), std::string::npos) << w.output;
    EXPECT_NE(w.output.find("; pe up to "), std::string::npos) << w.output;
    w = run_sim(std::string(cases[0].args));
    EXPECT_EQ(w.output.find("what-if"), std::string::npos) << w.output;
    // Faster HBM does not help a kernel bound by page activations, and the summary says why.
    auto r = run_sim("--config trn1 --workload ffnn --set core.hbm.bandwidth=820GB/s");
    EXPECT_NE(r.output.find("set by page activations, not bandwidth"), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("bound by         data movement (hbm activations)"), std::string::npos)
        << r.output;
}

TEST_F(cli, a_config_without_a_base_gives_every_key) {
    const std::string partial = file("partial.yaml",
                                     "name: partial\ncore:\n  hbm:\n"
                                     "    bandwidth: 1TB/s\n");
    auto r = run_sim("--config " + partial + " --workload vector_add");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find(partial + ": the config gives no value for"), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("base: trn2"), std::string::npos) << r.output;
    const std::string loop = file("loop.yaml", "base: loop\n");
    r = run_sim("--config " + loop + " --workload vector_add");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("includes itself"), std::string::npos) << r.output;
    const std::string nobase = file("nobase.yaml", "base: trn9\n");
    r = run_sim("--config " + nobase + " --workload vector_add");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("nobase.yaml:1: base config 'trn9' not found"), std::string::npos)
        << r.output;
}

TEST_F(cli, bad_unit_and_range_name_the_key) {
    auto r = run_sim("--config trn1 --workload vector_add --set core.hbm.bandwidth=600GB");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("core.hbm.bandwidth"), std::string::npos) << r.output;
    r = run_sim("--config trn1 --workload vector_add --set core.dma.engines=0");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("core.dma.engines"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("range"), std::string::npos) << r.output;
    r = run_sim("--config trn1 --workload vector_add --set core.nothing=1");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("core.nothing"), std::string::npos) << r.output;
}

TEST_F(cli, malformed_yaml_names_file_and_line) {
    const std::string cfg = file("broken.yaml", "core:\n  hbm:\n    bandwidth: [1,\n  x: }\n");
    auto r = run_sim("--config " + cfg + " --workload vector_add");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("broken.yaml:"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("malformed YAML"), std::string::npos) << r.output;
}

TEST_F(cli, workload_parameter_errors) {
    auto r = run_sim("--config trn1 --workload vector_add --param rows=3");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("row_chunk"), std::string::npos) << r.output;  // lists valid ones
    r = run_sim("--config trn1 --workload vector_add --param variant=tiled --param row_chunk=256");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("number of partitions 256 exceed architecture limitation of 128"),
              std::string::npos)
        << r.output;
    r = run_sim("--config trn1 --workload vector_add --param variant=naive");  // n = 25600
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("exceed architecture limitation of 128"), std::string::npos);
    r = run_sim("--config trn1 --workload vector_add --param n=1000 --param variant=stream");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("n=1000"), std::string::npos) << r.output;
    r = run_sim("--config trn1 --workload vector_add --param n=many");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("'n'"), std::string::npos) << r.output;
}

TEST_F(cli, sbuf_allocation_that_does_not_fit) {
    // Three 128 x 20000 fp32 tiles need 240 KB per partition: more than 192 KiB even at one
    // buffer each.
    auto r = run_sim(
        "--config trn1 --workload vector_add --param variant=stream "
        "--param n=2560000 --param free_dim=20000");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("does not fit"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("_tile'"), std::string::npos) << r.output;  // names the tile
}

TEST_F(cli, functional_mode_passes_and_alloc_bad_fails_with_status_1) {
    const std::string stats = path("s.json");
    auto r = run_sim(
        "--config trn1 --workload vector_add --param variant=direct_alloc "
        "--param n=256000 --functional --stats-out " +
        stats);
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(load_json(stats)["functional"]["passed"], 1);
    r = run_sim(
        "--config trn1 --workload vector_add --param variant=alloc_bad "
        "--param n=256000 --functional --stats-out " +
        stats);
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_EQ(load_json(stats)["functional"]["passed"], 0);
    EXPECT_GT(load_json(stats)["functional"]["mismatches"].get<double>(), 0);
}

TEST_F(cli, stats_contract_keys_present) {
    const std::string stats = path("s.json");
    ASSERT_EQ(run_sim("--config trn2 --workload vector_add --param n=4096 -q --stats-out " + stats)
                  .status,
              0);
    const auto j = load_json(stats);
    EXPECT_GT(j["total_time_ns"].get<double>(), 0);
    EXPECT_TRUE(j.contains("mfu_pct"));
    EXPECT_EQ(j["dma"]["transfers"], 3 * 4096);  // tiled, row_chunk 1: 3 transfers per element
    EXPECT_EQ(j["dma"]["bytes"], 3 * 4096 * 4);
    EXPECT_EQ(j["hbm"]["read_bytes"], 2 * 4096 * 4);
    EXPECT_EQ(j["hbm"]["write_bytes"], 4096 * 4);
    for (const char* e : {"dve", "act", "pool", "sp"}) {
        EXPECT_TRUE(j["engines"][e].contains("busy_ns")) << e;
        EXPECT_TRUE(j["engines"][e].contains("instructions")) << e;
    }
    EXPECT_EQ(j["engines"]["dve"]["instructions"], 4096);
}

TEST_F(cli, stats_are_deterministic) {
    const std::string a = path("a.json"), b = path("b.json");
    const std::string args =
        "--config trn1 --workload vector_add --param variant=stream --param free_dim=20 -q ";
    ASSERT_EQ(run_sim(args + "--stats-out " + a).status, 0);
    ASSERT_EQ(run_sim(args + "--stats-out " + b).status, 0);
    EXPECT_EQ(read(a), read(b));
}

TEST_F(cli, a_kernel_built_while_it_runs_times_exactly_as_one_built_whole) {
    // A driver's kernel streams (program_stream) and its activity log is summed as it runs;
    // TRNSIM_WHOLE_PROGRAM=1 builds it whole first and keeps every record.
    // (M1 and the default conv2d are long enough for the activity log to be summed as it runs)
    for (const std::string args :
         {"--config trn1 --workload matmul --param variant=tiled",
          "--config trn2 --workload conv2d",
          "--config trn1 --workload matmul --param variant=tiled --param m=512 --param k=1024 "
          "--param n=1024",
          "--config trn2 --workload conv2d --param h=32 --param w=32 --param in=128 --param "
          "out=128 --param pool=2",
          "--config trn2 --workload ffnn --param matmul=block_free_dimension --param n=256 "
          "--param d=512 --param h=1024 --param c=1024",
          "--config trn2 --workload transpose --param style=isa",
          "--config trn1 --workload vector_add --param variant=stream --param free_dim=20"}) {
        const std::string a = path("a.json"), b = path("b.json");
        ASSERT_EQ(run_sim(args + " -q --stats-out " + a).status, 0) << args;
        ASSERT_EQ(run_sim("env TRNSIM_WHOLE_PROGRAM=1 " + std::string(SIM_PATH) + " " + args +
                              " -q --stats-out " + b,
                          false)
                      .status,
                  0)
            << args;
        EXPECT_EQ(read(a), read(b)) << args;
    }
}

TEST_F(cli, transfers_timed_as_a_whole_time_as_their_chunks_one_by_one) {
    // Without a timeline (or functional data) a DMA queue books a transfer's chunks on its
    // engines itself; with one, each engine serves its chunk (and draws it): the same times.
    for (const std::string args :
         {"--config trn1 --workload vector_add --param variant=stream --param free_dim=20",
          "--config trn2 --workload conv2d --param h=32 --param w=32 --param in=128 --param "
          "out=128 --param pool=2",
          "--config trn2 --workload transpose --param style=isa",
          "--config trn1 --workload matmul --param variant=tiled --param m=512 --param k=1024 "
          "--param n=1024 --set chip.active_cores=2"}) {
        const std::string a = path("a.json"), b = path("b.json");
        ASSERT_EQ(run_sim(args + " -q --stats-out " + a).status, 0) << args;
        ASSERT_EQ(run_sim(args + " -q --stats-out " + b + " --timeline " + path("t.json")).status,
                  0)
            << args;
        EXPECT_EQ(read(a), read(b)) << args;
    }
}

TEST_F(cli, a_long_trace_whose_engine_idles_early_times_as_its_whole_log) {
    // The Scalar engine's last instruction waits, early, for the Sync engine's 100th; 80000
    // records later the step it leads to names one the log's summaries dropped long before.
    std::string text =
        "trnsim-trace 3\nhbm_bytes 1048576\nqueues 1\n"
        "act activation dst=sbuf[0:128]@60000:2xfloat32 "
        "src0=sbuf[0:128]@60008:2xfloat32\n"
        "act activation dst=sbuf[0:128]@60016:2xfloat32 "
        "src0=sbuf[0:128]@60024:2xfloat32 wait=sp>=100\n";
    for (int i = 0; i < 40000; ++i)
        text += "q0 dma dst=sbuf[0:128]@0:2xfloat32 src=hbm[0:128]@" +
                std::to_string((i % 64) * 1024) + "/8:2xfloat32\nsp dma_trigger queue=0\n";
    const std::string trace = file("long.trace", text), a = path("a.json"), b = path("b.json");
    ASSERT_EQ(run_sim("--config trn1 --trace " + trace + " -q --stats-out " + a).status, 0);
    ASSERT_EQ(run_sim("env TRNSIM_WHOLE_PROGRAM=1 " + std::string(SIM_PATH) +
                          " --config trn1 --trace " + trace + " -q --stats-out " + b,
                      false)
                  .status,
              0);
    EXPECT_EQ(read(a), read(b));
}

TEST_F(cli, a_trace_with_a_race_is_rejected_naming_both_lines) {
    // Line 5 writes the SBUF bytes the load of line 4 writes, with no wait on q0: sim checks a
    // hand-written trace for races before it runs it (neuron_core::check).
    const std::string text =
        "trnsim-trace 1\nhbm_bytes 65536\nqueues 1\n"
        "q0 dma dst=sbuf[0:128]@0:16xfloat32 src=hbm[0:128]@0/64:16xfloat32\n"
        "dve memset dst=sbuf[0:128]@0:16xfloat32\nsp dma_trigger queue=0\n";
    const auto r = run_sim("--config trn1 --trace " + file("race.trace", text) + " -q");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("race: "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("race.trace:5 (dve instruction 0"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("race.trace:4 (q0 transfer 0)"), std::string::npos) << r.output;
}

TEST_F(cli, dumped_trace_runs_to_identical_timing) {
    const std::string trace = path("k.trace"), a = path("a.json"), b = path("b.json");
    ASSERT_EQ(run_sim("--config trn2 --workload vector_add --param variant=stream --param "
                      "layout=strided --param style=isa --param free_dim=50 -q --dump-trace " +
                      trace + " --stats-out " + a)
                  .status,
              0);
    ASSERT_EQ(run_sim("--config trn2 --trace " + trace + " -q --stats-out " + b).status, 0);
    auto ja = load_json(a), jb = load_json(b);
    ja.erase("run");
    jb.erase("run");
    EXPECT_EQ(ja, jb);
}

// A kernel unlike every point its generation was fitted to (calibration/coverage.json) is said
// so at the end of the summary: a GpSimd-only program is unlike all of them, a matmul driver
// like the tutorial's.
TEST_F(cli, a_kernel_unlike_every_fitted_point_is_said_so) {
    std::string text =
        "trnsim-trace 8\nhbm_bytes 4096\nqueues 1\n"
        "q0 dma dst=sbuf[0:1]@0:512xfloat32 src=hbm[0:1]@0/0:512xfloat32\n"
        "sp dma_trigger queue=0\n";
    for (int i = 0; i < 16; ++i)
        text += "pool iota dst=sbuf[0:128]@4096:512xfloat32 imm=" + std::to_string(i) + "\n";
    auto r = run_sim("--config trn1 --trace " + file("pool.trace", text));
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("calibration      unlike every fitted trn1 point: 100% of its engine "
                            "time on pool (10% or more of none)"),
              std::string::npos)
        << r.output;
    auto m = run_sim("--config trn1 --workload matmul");
    ASSERT_EQ(m.status, 0) << m.output;
    EXPECT_EQ(m.output.find("unlike every fitted"), std::string::npos) << m.output;
}

TEST_F(cli, malformed_trace_names_file_and_line) {
    const std::string t = file("bad.trace",
                               "trnsim-trace 1\nhbm_bytes 4096\nqueues 1\n"
                               "dve tensor_tensor alu=add dst=sbuf[0:1]@0:1xfloat32 "
                               "src0=sbuf[0:1]@0:1xfloat33\n");
    auto r = run_sim("--config trn1 --trace " + t);
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("bad.trace:4:"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("float33"), std::string::npos) << r.output;
}

TEST_F(cli, deadlock_is_reported_with_who_waits_on_what) {
    // dve waits for the transfer that sp triggers only after dve finished: a cycle.
    const std::string t =
        file("cycle.trace",
             "trnsim-trace 1\nhbm_bytes 4096\nqueues 1\n"
             "q0 dma dst=sbuf[0:1]@0:1xfloat32 src=hbm[0:1]@0/4:1xfloat32\n"
             "dve tensor_copy dst=sbuf[0:1]@64:1xfloat32 src0=sbuf[0:1]@0:1xfloat32 wait=q0>=1\n"
             "sp dma_trigger queue=0 wait=dve>=1\n");
    auto r = run_sim("--config trn1 --trace " + t);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("deadlock"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("dve instruction 0 waits for q0>=1"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("sp instruction 0 waits for dve>=1"), std::string::npos) << r.output;
}

TEST_F(cli, unreachable_wait_is_rejected_before_running) {
    const std::string t = file("never.trace",
                               "trnsim-trace 1\nhbm_bytes 4096\nqueues 0\n"
                               "dve memset dst=sbuf[0:1]@0:1xfloat32 wait=act>=1\n");
    auto r = run_sim("--config trn1 --trace " + t);
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("deadlock"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("act>=1"), std::string::npos) << r.output;
}

TEST_F(cli, stats_out_is_written_atomically_and_not_on_error) {
    const std::string stats = path("s.json");
    auto r = run_sim("--config trn1 --workload vector_add --param n=bad --stats-out " + stats);
    EXPECT_EQ(r.status, 2);
    EXPECT_FALSE(fs::exists(stats));
    r = run_sim("--config trn1 --workload vector_add --param n=2048 -q --stats-out " +
                path("missing-dir/s.json"));
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("missing-dir"), std::string::npos) << r.output;
}

TEST_F(cli, every_output_path_is_checked_before_the_run) {
    for (const char* flag : {"--stats-out", "--timeline", "--dump-trace"}) {
        // The workload would fail only while being built: the bad path is found first.
        auto r = run_sim(
            "--config trn1 --workload vector_add --param variant=stream --param free_dim=3 -q " +
            std::string(flag) + " " + path("missing-dir/out"));
        EXPECT_EQ(r.status, 2) << flag;
        EXPECT_NE(r.output.find("cannot write"), std::string::npos) << flag << r.output;
        EXPECT_EQ(r.output.find("must be a multiple"), std::string::npos) << flag << r.output;
        r = run_sim("--config trn1 --workload vector_add -q " + std::string(flag) + " " + m_dir);
        EXPECT_EQ(r.status, 2) << flag;
        EXPECT_NE(r.output.find("is a directory"), std::string::npos) << flag << r.output;
    }
}

TEST_F(cli, a_failed_write_is_an_error_and_leaves_no_file) {
    for (const char* flag : {"--stats-out", "--timeline", "--dump-trace"}) {
        // /dev/full accepts the open and fails every write (ENOSPC), as a full disk does.
        auto r = run_sim("--config trn1 --workload vector_add --param variant=stream -q " +
                         std::string(flag) + " /dev/full");
        EXPECT_EQ(r.status, 2) << flag;
        EXPECT_NE(r.output.find("error writing '/dev/full'"), std::string::npos) << r.output;
    }
    // Outputs that are not regular files are written in place.
    auto r = run_sim(
        "--config trn1 --workload vector_add --param variant=stream -q "
        "--stats-out /dev/null --timeline /dev/null --dump-trace /dev/null");
    EXPECT_EQ(r.status, 0) << r.output;
}

TEST_F(cli, a_terminated_run_leaves_no_partial_outputs) {
    const std::string stats = path("s.json"), tl = path("t.json");
    const std::string cmd = std::string(SIM_PATH) +
                            " --config trn1 --workload vector_add --param n=25600000 "
                            "--param variant=tiled --param row_chunk=128 -q --stats-out " +
                            stats + " --timeline " + tl +
                            " & pid=$!; sleep 0.5; kill -TERM $pid; "
                            "wait $pid; echo status=$?";
    FILE* pipe = ::popen(("bash -c '" + cmd + "'").c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    char buf[256] = {};
    std::string out;
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;)
        out.append(buf, n);
    ::pclose(pipe);
    EXPECT_NE(out.find("status=143"), std::string::npos) << out;  // killed by SIGTERM
    for (const auto& e : fs::directory_iterator(m_dir))
        ADD_FAILURE() << "left behind: " << e.path();
}

TEST_F(cli, fleet_runs_every_case_in_one_process) {
    const std::string csv = path("fleet.csv");
    auto r = run_sim("--config trn1 --workload conv2d --param fleet=cs149 --stats-out " + csv);
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("latency us"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("in256_out256_filter3x3_batch1_32x16_float16_pool2"), std::string::npos)
        << r.output;
    std::ifstream in(csv);
    std::string line;
    std::vector<std::string> lines;
    while (std::getline(in, line))
        lines.push_back(line);
    ASSERT_EQ(lines.size(), 9u);  // header + 8 cases
    EXPECT_EQ(lines[0], "case,latency_us,mfu_pct,pe_busy_pct,dma_bytes");
    // The same case alone gives the same latency as inside the fleet.
    const std::string one = path("one.json");
    ASSERT_EQ(run_sim("--config trn1 --workload conv2d -q --param "
                      "case=in256_out256_filter3x3_batch1_32x16_float16_pool2 --stats-out " +
                      one)
                  .status,
              0);
    const double alone = load_json(one)["total_time_us"].get<double>();
    const std::string& last = lines.back();
    const double in_fleet = std::stod(last.substr(last.find(',') + 1));
    EXPECT_NEAR(in_fleet, alone, 1e-3 * alone);
    r = run_sim("--config trn1 --workload conv2d --param fleet=cs149 --timeline " + path("t.json"));
    EXPECT_EQ(r.status, 2);
}

TEST_F(cli, generated_config_doc_is_current) {
    auto r = run_sim("--list-params --format markdown");
    ASSERT_EQ(r.status, 0);
    EXPECT_EQ(r.output, read(std::string(SOURCE_DIR) + "/docs/config.md"))
        << "docs/config.md is stale: run scripts/gen-docs";
}

TEST_F(cli, generated_instructions_doc_is_current) {
    auto r = run_sim("--list-instructions --format markdown");
    ASSERT_EQ(r.status, 0);
    EXPECT_EQ(r.output, read(std::string(SOURCE_DIR) + "/docs/instructions.md"))
        << "docs/instructions.md is stale: run scripts/gen-docs";
    r = run_sim("--list-instructions");
    ASSERT_EQ(r.status, 0);
    EXPECT_NE(r.output.find("activation_reduce (trace format 3+)"), std::string::npos);
    EXPECT_NE(r.output.find("max(MIN_II, N) + MIN_II cycles"), std::string::npos);
    EXPECT_EQ(run_sim("--list-instructions --format json").status, 2);
}

TEST_F(cli, timeline_has_a_track_per_engine_and_queue_without_overlaps) {
    const std::string tl = path("t.json");
    ASSERT_EQ(run_sim("--config trn1 --workload vector_add --param variant=stream "
                      "--param free_dim=20 -q --timeline " +
                      tl)
                  .status,
              0);
    const auto j = load_json(tl);
    std::map<int, std::string> names;
    std::map<int, std::vector<std::pair<double, double>>> slices;
    for (const auto& e : j["traceEvents"]) {
        if (e["ph"] == "M" && e["name"] == "thread_name")
            names[e["tid"]] = e["args"]["name"];
        else if (e["ph"] == "X")
            slices[e["tid"]].push_back({e["ts"].get<double>(), e["dur"].get<double>()});
    }
    std::set<std::string> have;
    for (const auto& [tid, n] : names)
        have.insert(n);
    // A counter of DMA bytes in flight that returns to zero.
    double last = -1;
    std::size_t counters = 0;
    for (const auto& e : j["traceEvents"])
        if (e["ph"] == "C") {
            EXPECT_EQ(e["name"], "dma bytes in flight");
            last = e["args"]["value"].get<double>();
            EXPECT_GE(last, 0);
            ++counters;
        }
    EXPECT_GT(counters, 0u);
    EXPECT_EQ(last, 0);
    for (const char* t : {"dve", "act", "pool", "sp", "dma q0", "dma0", "critical path"})
        EXPECT_TRUE(have.count(t)) << t;
    for (auto& [tid, s] : slices) {
        std::sort(s.begin(), s.end());
        for (std::size_t i = 1; i < s.size(); ++i)
            EXPECT_LE(s[i - 1].first + s[i - 1].second, s[i].first + 1e-6) << names[tid];
        // The critical path covers the kernel: launch to the last completion, without gaps.
        if (names[tid] == "critical path") {
            EXPECT_NEAR(s.front().first, 0, 1e-6);
            for (std::size_t i = 1; i < s.size(); ++i)
                EXPECT_NEAR(s[i - 1].first + s[i - 1].second, s[i].first, 1e-3);
        }
    }
}

}  // namespace

namespace {

// A streaming kernel (vector_add stream, 3 MB per iteration) on `cores` cores of a chip at once:
// the stats of the run.
nlohmann::json chip_run(const std::string& config, int cores, const std::string& extra,
                        const std::string& out) {
    auto r = run_sim("--config " + config +
                     " --workload vector_add --param variant=stream --param n=2560000 "
                     "--param free_dim=2000 --quiet --set chip.active_cores=" +
                     std::to_string(cores) + " " + extra + " --stats-out " + out);
    EXPECT_EQ(r.status, 0) << r.output;
    std::ifstream in(out);
    return nlohmann::json::parse(in);
}

TEST_F(cli, cores_of_a_stack_share_it_and_other_stacks_do_not_slow_them) {
    // trn2, static descriptors: one core alone draws its stack through its pair's 32 DMA
    // engines; the two cores of a stack share both, so each streams at about half the rate;
    // the other stacks' cores do not slow them.
    const std::string dge = "--set core.dma.hardware_dge=false";
    const auto one = chip_run("trn2", 1, dge, path("one.json"));
    const auto two = chip_run("trn2", 2, dge, path("two.json"));
    const auto eight = chip_run("trn2", 8, dge, path("eight.json"));
    const double t1 = one["total_time_ns"], t2 = two["total_time_ns"], t8 = eight["total_time_ns"];
    EXPECT_GT(t2, 1.5 * t1);
    EXPECT_NEAR(t8, t2, t2 * 0.01);
    EXPECT_EQ(eight["chip"]["active_cores"].get<int>(), 8);
    for (int s = 0; s < 4; ++s) {  // each stack below its 750 GB/s, both cores' bytes on it
        const auto& st = eight["chip"]["stacks"]["s" + std::to_string(s)];
        EXPECT_LE(st["bandwidth_gbps"].get<double>(), 750.0);
        EXPECT_EQ(st["bytes"].get<double>(),
                  2 * eight["cores"]["c0"]["dma"]["bytes"].get<double>());
    }
    // trn1: a stack per core, so two cores run as fast as one
    const auto t1_one = chip_run("trn1", 1, "", path("t1one.json"));
    const auto t1_two = chip_run("trn1", 2, "", path("t1two.json"));
    EXPECT_EQ(t1_two["total_time_ns"].get<double>(), t1_one["total_time_ns"].get<double>());
    EXPECT_EQ(t1_two["cores"]["c1"]["hbm"]["read_bytes"].get<double>(),
              t1_one["hbm"]["read_bytes"].get<double>());
}

TEST_F(cli, a_chip_timeline_has_a_track_group_per_core) {
    auto r = run_sim(
        "--config trn2 --workload vector_add --param variant=stream --param n=256000 "
        "--param free_dim=2000 --quiet --set chip.active_cores=2 --timeline " +
        path("tl.json"));
    ASSERT_EQ(r.status, 0) << r.output;
    const auto tl = load_json(path("tl.json"));
    std::map<int, std::string> groups;
    std::map<int, int> slices;
    for (const auto& e : tl["traceEvents"]) {
        if (e["name"] == "process_name") groups[e["pid"].get<int>()] = e["args"]["name"];
        if (e["ph"] == "X") ++slices[e["pid"].get<int>()];
    }
    EXPECT_EQ(groups, (std::map<int, std::string>{{1, "NeuronCore 0"}, {2, "NeuronCore 1"}}));
    EXPECT_GT(slices[1], 0);
    EXPECT_EQ(slices[1], slices[2]);  // the same program on each
}

TEST_F(cli, an_instruction_of_a_later_neuroncore_says_so) {
    const std::string trace = file("topk.trace",
                                   "trnsim-trace 3\nhbm_bytes 8192\nqueues 1\n"
                                   "region a 0 4096 bfloat16 input 0 1 1\n"
                                   "q0 dma dst=sbuf[0:32]@0:64xbfloat16 "
                                   "src=hbm[0:32]@0/128:64xbfloat16\n"
                                   "sp dma_trigger queue=0\n"
                                   "pool topk dst=sbuf[0:32]@1024:2xbfloat16 "
                                   "dst1=sbuf[0:32]@2048:2xuint32 src0=sbuf[0:32]@0:64xbfloat16 "
                                   "imm=500 imm1=20 wait=q0>=1\n"
                                   "pool core_barrier imm=1 wait=pool>=1\n");
    auto r = run_sim("--config trn1 --trace " + trace);
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("topk runs on NeuronCore-v3 and newer (this core is v2"),
              std::string::npos)
        << r.output;
    r = run_sim("--config trn2 --quiet --trace " + trace);  // a core alone passes its barrier
    EXPECT_EQ(r.status, 0) << r.output;
}

TEST_F(cli, chip_keys_are_checked) {
    auto r = run_sim("--config trn1 --workload vector_add --set chip.active_cores=3");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("chip.active_cores (3) exceeds the chip's chip.cores (2)"),
              std::string::npos)
        << r.output;
    r = run_sim("--config trn2 --workload vector_add --functional --set chip.active_cores=2");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("takes no --functional"), std::string::npos) << r.output;
    r = run_sim("--config trn2 --workload vector_add --set chip.cores_per_stack=3");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("not a whole number of stacks"), std::string::npos) << r.output;
}

}  // namespace

// The verdict names what would speed a kernel up most, on kernels whose answer is known: the
// matmul tutorial's steps (M1-M3 data movement, M4 the Tensor engine, trn1), the course's tiled
// vector_add (V1: each tile waits for the DMA latency), and the measured trn2 conv2d, which keeps
// the Tensor engine 90% busy while its critical path runs mostly through DMA latency.
TEST_F(cli, bound_by_names_what_would_speed_the_kernel_up_most) {
    const std::string tutorial =
        "--config trn1 --workload matmul --param m=4096 --param k=8192 --param n=8192 "
        "--param dtype=bfloat16 --param variant=";
    const std::pair<std::string, std::string> cases[] = {
        {tutorial + "tiled", "data movement (hbm activations)"},
        {tutorial + "hoist_load", "data movement (hbm activations)"},
        {tutorial + "block_free_dimension", "data movement (hbm activations)"},
        {tutorial + "fully_optimized", "pe"},
        {"--config trn1 --workload vector_add --param variant=tiled --param row_chunk=1",
         "dma fixed latency"},
        {"--config trn2 --workload conv2d --param dtype=float16", "pe"},
        {"--config trn2 --workload conv2d --param dtype=float32", "pe"},
    };
    for (const auto& [args, limit] : cases) {
        const std::string out = path("l.json");
        auto r = run_sim(args + " --quiet --stats-out " + out);
        ASSERT_EQ(r.status, 0) << r.output;
        EXPECT_EQ(load_json(out)["limit"]["by"].get<std::string>(), limit) << args;
    }
    // The estimate against reruns with each resource made (nearly) free: the trn2 conv2d in
    // fp16 gains most from a free Tensor engine, and at most what the estimate says.
    const std::string conv = "--config trn2 --workload conv2d --param dtype=float16 --quiet";
    const auto time_with = [&](const std::string& sets) {
        const std::string out = path("t.json");
        auto r = run_sim(conv + " " + sets + " --stats-out " + out);
        EXPECT_EQ(r.status, 0) << r.output;
        return load_json(out);
    };
    const auto base = time_with("");
    const double t = base["total_time_ns"].get<double>();
    const double pe_free =
        time_with("--set core.pe.clock=100GHz --set core.pe.latency=0")["total_time_ns"];
    const double latency_free = time_with("--set core.dma.fixed_latency=0ns")["total_time_ns"];
    const double data_free = time_with(
        "--set core.dma.fixed_latency=0ns --set core.dma.descriptor_cost=0ns "
        "--set core.dma.engine_bandwidth=100000B/ns --set core.hbm.bandwidth=1000TB/s "
        "--set core.hbm.activate_time=0ns")["total_time_ns"];
    EXPECT_LT(pe_free, latency_free);
    EXPECT_LT(pe_free, data_free);
    EXPECT_LE(100.0 * (t - pe_free) / t, base["limit"]["saving_pct"].get<double>() + 0.5);
}

// A C++ driver's program is attributed per step (the builder names each: "load rhs_tile",
// "matmul res_psum"): --annotate lists them, the steps whose work costs most first; their
// critical-path times add up to the kernel time; timeline slices name their step.
TEST_F(cli, annotate_attributes_a_drivers_time_to_its_steps) {
    const std::string stats = path("a.json"), tl = path("a.tl.json");
    auto r = run_sim(
        "--config trn1 --workload matmul --param m=4096 --param k=8192 --param n=8192 "
        "--param dtype=bfloat16 --param variant=tiled --annotate --stats-out " +
        stats + " --timeline " + tl);
    ASSERT_EQ(r.status, 0) << r.output;
    const auto at = r.output.find("line by line");
    ASSERT_NE(at, std::string::npos) << r.output;
    const std::string table = r.output.substr(at);
    // the first row: the moving tiles' loads (the kernel's data movement bound)
    const auto first = table.find('\n', table.find("line or step"));
    EXPECT_NE(table.substr(first, table.find('\n', first + 1) - first).find("load rhs_tile"),
              std::string::npos)
        << table;
    const auto j = load_json(stats);
    double sum = 0;
    for (const auto& [k, v] : j["lines"].items())
        if (v.is_object()) sum += v["critical_path_ns"].get<double>();
    const double total = j["total_time_ns"].get<double>();
    EXPECT_NEAR(sum, total, 0.01 * total);
    EXPECT_EQ(j["lines"]["load_rhs_tile"]["dma_transfers"].get<double>(), 32768);
    EXPECT_EQ(j["lines"]["matmul_res_psum"]["engines"]["pe"]["instructions"].get<double>(), 32768);
    // The wait column is the longest of a line's engines' waits, never past the kernel time;
    // the sum over engines (wait_ns) may be.
    for (const auto& [k, v] : j["lines"].items()) {
        if (!v.is_object() || !v.contains("engines")) continue;
        double most = 0;
        for (const auto& [e, ev] : v["engines"].items())
            most = std::max(most, ev["wait_ns"].get<double>());
        EXPECT_EQ(v["wait_most_ns"].get<double>(), most) << k;
        EXPECT_LE(most, total) << k;
    }
    std::ifstream f(tl);
    const std::string timeline((std::istreambuf_iterator<char>(f)), {});
    EXPECT_NE(timeline.find("\"line\":\"matmul res_psum\""), std::string::npos);
    EXPECT_NE(timeline.find("\"line\":\"load rhs_tile\""), std::string::npos);
}

// Places whose stats keys would collide (a folder-less key equal to another's "_2", folders
// only) each get a key of their own: no place is lost, nothing is added twice.
TEST_F(cli, colliding_places_get_keys_of_their_own) {
    const std::string dumped = path("d.trace"), renamed = path("r.trace"), stats = path("r.json");
    ASSERT_EQ(
        run_sim("--config trn1 --workload vector_add --param n=1024 --quiet --dump-trace " + dumped)
            .status,
        0);
    std::ifstream in(dumped);
    std::ofstream out(renamed);
    const char* const names[] = {"p:1", "q/p:1", "p_1_2", "foo/", "bar/"};
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);) {
        const auto at = line.find(" at=");
        if (at != std::string::npos) line = line.substr(0, at) + " at=" + names[n++ % 5];
        out << line << "\n";
    }
    out.close();
    auto r = run_sim("--config trn1 --trace " + renamed + " --annotate --stats-out " + stats);
    ASSERT_EQ(r.status, 0) << r.output;
    const auto lines = load_json(stats)["lines"];
    std::set<std::string> places;
    for (const auto& [k, v] : lines.items())
        if (v.is_object()) places.insert(v["place"].get<std::string>());
    EXPECT_EQ(places, (std::set<std::string>{"(none)", "p:1", "q/p:1", "p_1_2", "foo/", "bar/"}));
}

// NeuronCore-v4's background transpose (core.pe.background_transpose, trn3): a long chain of
// Tensor-engine transposes runs in two lanes, "close to double performance" (hardware-facts 1f);
// off (trn1, trn2), one lane. 64 fp32 transposes of one loaded tile into PSUM banks in turn.
TEST_F(cli, background_transposes_double_a_chain_of_transposes) {
    std::string trace =
        "trnsim-trace 3\nhbm_bytes 65536\nqueues 1\nregion in 0 65536 float32 input -1 1 21\n"
        "sp dma_trigger queue=0\n"
        "q0 dma dst=sbuf[0:128]@0:128xfloat32 src=hbm[0:128]@0/512:128xfloat32\n";
    for (int i = 0; i < 64; ++i)
        trace +=
            "pe transpose dst=psum[0:128]@" + std::to_string((i % 8) * 2048 + (i / 8 % 4) * 512) +
            ":128xfloat32 src0=sbuf[0:128]@0:128xfloat32" + (i == 0 ? " wait=q0>=1" : "") + "\n";
    const std::string t = file("chain.trace", trace);
    const auto pe_path = [&](const std::string& sets) {
        const std::string out = path("chain.json");
        auto r = run_sim("--config trn3 --trace " + t + " --quiet --stats-out " + out + sets);
        EXPECT_EQ(r.status, 0) << r.output;
        return load_json(out)["critical_path"]["pe_ns"].get<double>();
    };
    const double one_lane = pe_path(" --set core.pe.background_transpose=false");
    const double two_lanes = pe_path("");
    EXPECT_GT(one_lane / two_lanes, 1.8);
    EXPECT_LE(one_lane / two_lanes, 2.0 + 1e-9);
    // the lanes' overlap counts once in the Tensor engine's busy time; the background lane has
    // a timeline track of its own
    const std::string out = path("chain.json"), tl = path("chain.tl.json");
    ASSERT_EQ(
        run_sim("--config trn3 --trace " + t + " --quiet --stats-out " + out + " --timeline " + tl)
            .status,
        0);
    EXPECT_LE(load_json(out)["engines"]["pe"]["utilisation_pct"].get<double>(), 100.0);
    std::ifstream f(tl);
    const std::string timeline((std::istreambuf_iterator<char>(f)), {});
    EXPECT_NE(timeline.find("\"pe background\""), std::string::npos);
}

// nisa.reciprocal on the Vector engine costs core.dve.reciprocal_cycles an element (the
// reference's 8 on trn2, trn1's calibrated value; docs/results.md), at least MIN_II.
TEST_F(cli, the_vector_engines_reciprocal_costs_its_cycles_an_element) {
    const std::string t =
        file("recip.trace",
             "trnsim-trace 9\nhbm_bytes 262144\nqueues 1\n"
             "region in 0 262144 float32 input -1 1 21\n"
             "sp dma_trigger queue=0\n"
             "q0 dma dst=sbuf[0:128]@0:512xfloat32 src=hbm[0:128]@0/2048:512xfloat32\n"
             "dve reciprocal dst=sbuf[0:128]@2048:512xfloat32 src0=sbuf[0:128]@0:512xfloat32 "
             "wait=q0>=1\n");
    const auto dve_ns = [&](const std::string& options) {
        const std::string out = path("recip.json");
        auto r = run_sim("--trace " + t + " --quiet --stats-out " + out + " " + options);
        EXPECT_EQ(r.status, 0) << r.output;
        return load_json(out)["engines"]["dve"]["busy_ns"].get<double>();
    };
    EXPECT_NEAR(dve_ns("--config trn2"), 8 * 512 / 0.96, 0.01);
    EXPECT_NEAR(dve_ns("--config trn1 --set core.dve.reciprocal_cycles=3"), 3 * 512 / 1.12, 0.01);
    EXPECT_NEAR(dve_ns("--config trn1 --set core.dve.reciprocal_cycles=0.1"), 64 / 1.12, 0.01);
}

// nc_matmul's is_stationary_onezero / is_moving_onezero (trace format 9): an fp32 operand the
// kernel declares ones and zeros takes half the Tensor engine's passes, so one declared operand
// halves an fp32 matmul (4 passes of 512 + 64 cycles to 2) and two leave one pass of 512; a
// bf16 matmul and a transpose of bf16 do not change; a version-8 trace may not say it.
TEST_F(cli, operands_declared_ones_and_zeros_halve_the_fp32_passes) {
    // the Tensor engine's busy time for one instruction (status 0), or sim's message (status 2)
    const auto run = [&](const std::string& name, const std::string& ins, int version = 9,
                         int status = 0, const std::string& engine = "pe") {
        const std::string t =
            file(name + ".trace", "trnsim-trace " + std::to_string(version) +
                                      "\nhbm_bytes 2097152\nqueues 1\n"
                                      "region in 0 2097152 float32 input -1 1 21\n"
                                      "sp dma_trigger queue=0\n"
                                      "q0 dma dst=sbuf[0:128]@0:1024xfloat32 "
                                      "src=hbm[0:128]@0/4096:1024xfloat32\n" +
                                      engine + " " + ins + " wait=q0>=1\n");
        const std::string out = path(name + ".json");
        auto r = run_sim("--config trn1 --trace " + t + " --quiet --stats-out " + out);
        EXPECT_EQ(r.status, status) << r.output;
        return std::pair{
            r.status == 0 ? load_json(out)["engines"]["pe"]["busy_ns"].get<double>() : -1.0,
            r.output};
    };
    const auto matmul = [](const char* dtype, const char* flags) {
        return std::string("matmul dst=psum[0:128]@0:512xfloat32 src0=sbuf[0:128]@0:128x") + dtype +
               " src1=sbuf[0:128]@0:512x" + dtype + (*flags ? " flags=" : "") + flags;
    };
    EXPECT_NEAR(run("plain", matmul("float32", "")).first, 4 * 576 / 2.8, 0.01);
    EXPECT_NEAR(run("stationary", matmul("float32", "stationary_onezero")).first, 2 * 576 / 2.8,
                0.01);
    EXPECT_NEAR(run("moving", matmul("float32", "acc|moving_onezero")).first, 2 * 576 / 2.8, 0.01);
    // (each pass still an fp32 pass, with its overhead)
    EXPECT_NEAR(run("both", matmul("float32", "stationary_onezero|moving_onezero")).first,
                576 / 2.8, 0.01);
    EXPECT_NEAR(run("bf16", matmul("bfloat16", "stationary_onezero")).first, 512 / 2.8, 0.01);
    const std::string transpose =
        "transpose dst=psum[0:128]@0:128xfloat32 src0=sbuf[0:128]@0:128xfloat32";
    const double plain = run("t_plain", transpose).first;
    EXPECT_NEAR(run("t_identity", transpose + " flags=moving_onezero").first, plain / 2, 0.01);
    // NeuronCore-v3's transpose mode moves the input's bits: the identity takes no part
    const auto trn2 = [&](const std::string& name, const std::string& ins) {
        const std::string t = file(name + ".trace",
                                   "trnsim-trace 9\nhbm_bytes 2097152\nqueues 1\n"
                                   "sp dma_trigger queue=0\n"
                                   "q0 dma dst=sbuf[0:128]@0:128xfloat32 "
                                   "src=hbm[0:128]@0/512:128xfloat32\npe " +
                                       ins + " wait=q0>=1\n");
        const std::string out = path(name + ".json");
        auto r = run_sim("--config trn2 --trace " + t + " --quiet --stats-out " + out);
        EXPECT_EQ(r.status, 0) << r.output;
        return load_json(out)["engines"]["pe"]["busy_ns"].get<double>();
    };
    EXPECT_EQ(trn2("t2_plain", transpose),
              trn2("t2_identity", transpose + " flags=moving_onezero"));
    const std::string v8 = run("v8", matmul("float32", "stationary_onezero"), 8, 2).second;
    EXPECT_NE(v8.find("unknown flag 'stationary_onezero'"), std::string::npos) << v8;
    const std::string t = run("t_stationary", transpose + " flags=stationary_onezero", 9, 2).second;
    EXPECT_NE(t.find("does not apply to transpose"), std::string::npos) << t;
    const std::string dve =
        run("t_dve",
            "transpose dst=sbuf[0:32]@4096:32xfloat32 src0=sbuf[0:32]@0:32xfloat32 "
            "flags=moving_onezero",
            9, 2, "dve")
            .second;
    EXPECT_NE(dve.find("are the Tensor engine's"), std::string::npos) << dve;
}

// NeuronCore-v4's matmuls into the whole PSUM (core.psum.tile_banks 8) and into bf16 PSUM
// (core.pe.bf16_psum): one instruction of 8192 bf16 or 4096 fp32 moving columns, in the matmul
// formula's cycles, max(min(64, M), N) = N at 2.4 GHz; refused before NeuronCore-v4, naming the
// key.
TEST_F(cli, nc_v4_matmuls_span_the_whole_psum_in_bf16_or_fp32) {
    const auto trace_of = [&](const char* dtype, int n) {
        return file(std::string("wide_") + dtype + ".trace",
                    "trnsim-trace 3\nhbm_bytes 2097152\nqueues 1\n"
                    "region in 0 2097152 bfloat16 input -1 1 21\n"
                    "sp dma_trigger queue=0\n"
                    "q0 dma dst=sbuf[0:128]@0:8192xbfloat16 src=hbm[0:128]@0/16384:8192xbfloat16\n"
                    "pe matmul dst=psum[0:128]@0:" +
                        std::to_string(n) + "x" + dtype +
                        " src0=sbuf[0:128]@0:128xbfloat16 src1=sbuf[0:128]@0:" + std::to_string(n) +
                        "xbfloat16 wait=q0>=1\n");
    };
    const std::string bf16 = trace_of("bfloat16", 8192), fp32 = trace_of("float32", 4096);
    for (const auto& [t, n] : {std::pair{bf16, 8192}, std::pair{fp32, 4096}}) {
        const std::string out = path("wide.json");
        auto r = run_sim("--config trn3 --trace " + t + " --quiet --stats-out " + out);
        ASSERT_EQ(r.status, 0) << r.output;
        const auto pe = load_json(out)["engines"]["pe"];
        EXPECT_EQ(pe["instructions"].get<int>(), 1);
        EXPECT_NEAR(pe["busy_ns"].get<double>(), n / 2.4, 0.01) << n;
    }
    auto r = run_sim("--config trn2 --trace " + bf16 + " --quiet");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("core.pe.bf16_psum"), std::string::npos) << r.output;
    r = run_sim("--config trn2 --trace " + fp32 + " --quiet");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("core.psum.tile_banks=1"), std::string::npos) << r.output;
    // trn3, 8192 fp32 columns: 32 KiB a partition, more than the 8 banks
    r = run_sim("--config trn3 --trace " + trace_of("float32", 8192) + " --quiet");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("of a psum partition of 16384 bytes"), std::string::npos) << r.output;
}

// A DMA read-add-write into SBUF (op=add): its rows at core.dma.rmw_rate of a copy's rate, the
// same rate on NeuronCore-v4 (trn3), half before (trn2): the DMA engines' busy time against the
// same transfer as a copy.
TEST_F(cli, dma_read_add_writes_run_at_the_copy_rate_from_nc_v4_at_half_before) {
    const auto engines_busy = [&](const std::string& config, bool rmw) {
        const std::string t =
            file("rmw.trace", std::string("trnsim-trace 3\nhbm_bytes 1048576\nqueues 1\n") +
                                  "region in 0 1048576 float32 input -1 1 3\n"
                                  "sp dma_trigger queue=0\n"
                                  "q0 dma dst=sbuf[0:128]@0:2048xfloat32 "
                                  "src=hbm[0:128]@0/8192:2048xfloat32" +
                                  (rmw ? " op=add" : "") + "\n");
        const std::string out = path("rmw.json");
        auto r = run_sim("--config " + config + " --trace " + t + " --quiet --stats-out " + out);
        EXPECT_EQ(r.status, 0) << r.output;
        return load_json(out)["dma"]["engine_busy_ns"].get<double>();
    };
    EXPECT_NEAR(engines_busy("trn3", true) / engines_busy("trn3", false), 1.0, 1e-9);
    EXPECT_NEAR(engines_busy("trn2", true) / engines_busy("trn2", false), 2.0, 1e-9);
    EXPECT_NEAR(engines_busy("trn1", true) / engines_busy("trn1", false), 2.0, 1e-9);
}

// NeuronCore-v4's DMA quality of service (core.dma.priority_levels): two equal transfers over
// all 16 engines, q0 rung 9 ns before q1. Both of level 0, q0 finishes first; q0 of level 2 is
// held, so q1 takes the engines first and finishes when q0 did before (9 ns later: its ring),
// and q0 after it. Refused on trn2 naming the key.
TEST_F(cli, a_dma_of_a_lower_priority_waits_for_the_engines_and_needs_nc_v4) {
    const auto trace_of = [&](int level) {
        return file("qos.trace",
                    "trnsim-trace 5\nhbm_bytes 4194304\nqueues 2\n"
                    "region in 0 4194304 float32 input -1 1 3\n"
                    "q0 dma dst=sbuf[0:128]@0:4096xfloat32 src=hbm[0:128]@0/16384:4096xfloat32" +
                        (level ? " priority=" + std::to_string(level) : std::string()) +
                        "\nq1 dma dst=sbuf[0:128]@16384:4096xfloat32 "
                        "src=hbm[0:128]@2097152/16384:4096xfloat32\n"
                        "sp dma_trigger queue=0\nsp dma_trigger queue=1\n"
                        "pool tensor_copy dst=sbuf[0:128]@65536:1xfloat32 "
                        "src0=sbuf[0:128]@0:1xfloat32 wait=q0>=1\n"
                        "dve tensor_copy dst=sbuf[0:128]@65540:1xfloat32 "
                        "src0=sbuf[0:128]@16384:1xfloat32 wait=q1>=1\n");
    };
    // when the waits for q0 and q1 were released (each engine's stall on its queue)
    const auto done = [&](int level) {
        const std::string out = path("qos.json");
        auto r =
            run_sim("--config trn3 --trace " + trace_of(level) + " --quiet --stats-out " + out);
        EXPECT_EQ(r.status, 0) << r.output;
        const auto j = load_json(out)["engines"];
        return std::pair{j["pool"]["stall_on"]["q0_ns"].get<double>(),
                         j["dve"]["stall_on"]["q1_ns"].get<double>()};
    };
    const auto [q0_first, q1_second] = done(0);
    EXPECT_LT(q0_first, q1_second);
    const auto [q0_held, q1_ahead] = done(2);
    EXPECT_NEAR(q1_ahead, q0_first + 9.0, 1e-3);  // the sp engine's trigger time
    EXPECT_GT(q0_held, q1_ahead);
    EXPECT_NEAR(q0_held, q1_second + 9.0, 1e-3);
    const auto r = run_sim("--config trn2 --trace " + trace_of(2) + " --quiet");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("core.dma.priority_levels"), std::string::npos) << r.output;
}

// A transfer of level 0 held behind one of level 1 in its queue (a queue starts its transfers
// in order) starts as soon as that one does, as if rung then: it is not left to wait, as the
// lower level does, for engines that another queue's later level-0 transfer has taken.
TEST_F(cli, a_level_0_transfer_held_behind_a_lower_one_starts_with_it) {
    const std::string t =
        file("behind.trace",
             "trnsim-trace 5\nhbm_bytes 8388608\nqueues 2\n"
             "region in 0 8388608 float32 input -1 1 3\n"
             "q0 dma dst=sbuf[0:128]@0:4096xfloat32 src=hbm[0:128]@0/16384:4096xfloat32 "
             "priority=1\n"
             "q0 dma dst=sbuf[0:128]@49152:16xfloat32 src=hbm[0:128]@4194304/64:16xfloat32\n"
             "q1 dma dst=sbuf[0:128]@16384:4096xfloat32 "
             "src=hbm[0:128]@2097152/16384:4096xfloat32\n"
             "sp dma_trigger queue=0\nsp dma_trigger queue=0\n"
             "pool memset dst=sbuf[0:128]@100000:2048xfloat32 imm=0\n"
             "sp dma_trigger queue=1 wait=pool>=1\n"  // after q0's first transfer has started
             "dve tensor_copy dst=sbuf[0:128]@65540:1xfloat32 src0=sbuf[0:128]@49152:1xfloat32 "
             "wait=q0>=2\n"
             "act tensor_copy dst=sbuf[0:128]@65548:1xfloat32 src0=sbuf[0:128]@16384:1xfloat32 "
             "wait=q1>=1\n");
    const std::string out = path("behind.json");
    auto r = run_sim("--config trn3 --trace " + t + " --quiet --stats-out " + out);
    ASSERT_EQ(r.status, 0) << r.output;
    const auto j = load_json(out)["engines"];
    const double small = j["dve"]["stall_on"]["q0_ns"].get<double>(),
                 big = j["act"]["stall_on"]["q1_ns"].get<double>();
    EXPECT_LT(small, big);
}

// NeuronCore-v4's tensor indirection (core.sbuf.indirect): a gather of 64 columns of 2048 by the
// Scalar engine, timed as the direct access of 64 columns it reads (model choice), the offsets'
// read riding along; refused before NeuronCore-v4 naming the key.
TEST_F(cli, an_indirect_gather_takes_the_time_of_its_columns_and_needs_nc_v4) {
    const auto trace_of = [&](bool indirect) {
        return file("ti.trace",
                    std::string("trnsim-trace 4\nhbm_bytes 1048576\nqueues 1\n"
                                "region in 0 1048576 float32 input -1 1 3\n"
                                "sp dma_trigger queue=0\n"
                                "q0 dma dst=sbuf[0:128]@0:2048xfloat32 "
                                "src=hbm[0:128]@0/8192:2048xfloat32\n"
                                "act activation func=exp dst=sbuf[0:128]@16384:64xfloat32 "
                                "src0=sbuf[0:128]@0:64xfloat32 wait=q0>=1") +
                        (indirect ? " src0_index=sbuf[0:128]@20480:4xint32 src0_extent=2048" : "") +
                        "\n");
    };
    const auto act_busy = [&](bool indirect) {
        const std::string out = path("ti.json");
        auto r =
            run_sim("--config trn3 --trace " + trace_of(indirect) + " --quiet --stats-out " + out);
        EXPECT_EQ(r.status, 0) << r.output;
        return load_json(out)["engines"]["act"]["busy_ns"].get<double>();
    };
    EXPECT_GT(act_busy(false), 0.0);
    EXPECT_EQ(act_busy(true), act_busy(false));
    const auto r = run_sim("--config trn2 --trace " + trace_of(true) + " --quiet");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("core.sbuf.indirect=false"), std::string::npos) << r.output;
}

// NeuronCore-v4's MX matmul (core.pe.mx): x4-packed operands (moved into SBUF as their uint32
// bits) with their scales, in the bf16 formula's cycles of the packed sizes, max(min(64, M), N)
// at 2.4 GHz: four times the contraction of a bf16 matmul in the same time; refused before
// NeuronCore-v4 naming the key, and a scale short of its data's partitions refused by name.
TEST_F(cli, mx_matmuls_contract_four_times_the_partitions_in_the_bf16_cycles) {
    const auto trace_of = [&](const std::string& scale_rows) {
        return file(
            "mx.trace",
            "trnsim-trace 3\nhbm_bytes 1048576\nqueues 2\n"
            "region in 0 1048576 uint32 input 0 1000 3\n"
            "sp dma_trigger queue=0\nsp dma_trigger queue=0\nsp dma_trigger queue=1\n"
            "q0 dma dst=sbuf[0:128]@0:128xfloat8_e4m3fn_x4 src=hbm[0:128]@0/512:128xuint32\n"
            "q0 dma dst=sbuf[0:128]@512:512xfloat8_e4m3fn_x4 "
            "src=hbm[0:128]@65536/2048:512xuint32\n"
            "q1 dma dst=sbuf[0:128]@4096:512xuint8 src=hbm[0:128]@524288/512:512xuint8\n"
            "pe matmul_mx dst=psum[0:128]@0:512xfloat32 "
            "src0=sbuf[0:128]@0:128xfloat8_e4m3fn_x4 src1=sbuf[0:128]@512:512xfloat8_e4m3fn_x4 "
            "src2=sbuf[0:" +
                scale_rows +
                "]@4096:128xuint8 src3=sbuf[0:128]@4096:512xuint8 "
                "wait=q0>=2,q1>=1\n");
    };
    const std::string t = trace_of("128"), out = path("mx.json");
    auto r = run_sim("--config trn3 --trace " + t + " --quiet --stats-out " + out);
    ASSERT_EQ(r.status, 0) << r.output;
    const auto stats = load_json(out);
    EXPECT_EQ(stats["engines"]["pe"]["instructions"].get<int>(), 1);
    EXPECT_NEAR(stats["engines"]["pe"]["busy_ns"].get<double>(), 512 / 2.4, 0.01);
    r = run_sim("--config trn2 --trace " + t + " --quiet");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("core.pe.mx=false"), std::string::npos) << r.output;
    r = run_sim("--config trn3 --trace " + trace_of("96") + " --quiet");  // 100 rows needed
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("spans at least [100, 128]"), std::string::npos) << r.output;
}
