// The reference rate scripts/bench compares the model's with: one SC_THREAD waking N times on
// `wait(1, SC_NS)`, SystemC's cheapest timed wake-up, timed inside the program around sc_start.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <systemc>

// One thread that waits 1 ns, `m_wakeups` times.
class ticker : public sc_core::sc_module {
  public:
    SC_HAS_PROCESS(ticker);
    ticker(const sc_core::sc_module_name& name, long wakeups)
        : sc_core::sc_module(name), m_wakeups(wakeups) {
        SC_THREAD(run);
    }

  private:
    void run() {
        for (long i = 0; i < m_wakeups; ++i)
            wait(1, sc_core::SC_NS);
    }
    long m_wakeups;
};

// usage: systemc_rate [WAKEUPS] (default 5000000, at least 1); prints one JSON line:
// {"wakeups": N, "seconds": S, "rate": N / S}. Exit status 2 for a bad argument.
int sc_main(int argc, char* argv[]) {
    long wakeups = 5000000;
    if (argc > 2) {
        std::fprintf(stderr, "systemc_rate: error: usage: systemc_rate [WAKEUPS]\n");
        return 2;
    }
    if (argc == 2) {
        char* end = nullptr;
        errno = 0;
        wakeups = std::strtol(argv[1], &end, 10);
        if (end == argv[1] || *end != '\0' || errno != 0 || wakeups < 1) {
            std::fprintf(stderr,
                         "systemc_rate: error: WAKEUPS '%s' is not a whole number of at least "
                         "1\n",
                         argv[1]);
            return 2;
        }
    }
    sc_core::sc_report_handler::set_actions("/IEEE_Std_1666/deprecated", sc_core::SC_DO_NOTHING);
    ticker t("ticker", wakeups);
    const auto start = std::chrono::steady_clock::now();
    sc_core::sc_start();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("{\"wakeups\": %ld, \"seconds\": %.6f, \"rate\": %.1f}\n", wakeups, seconds,
                wakeups / seconds);
    return 0;
}
