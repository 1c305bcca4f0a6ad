#include "core/output_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace trn {

namespace {

// Temporary files not yet committed, for the signal handler (fixed slots: a handler may not
// allocate). A run has a handful of outputs at once.
constexpr std::size_t max_pending = 16;
std::array<std::atomic<const char*>, max_pending> g_pending{};
std::atomic<bool> g_handlers{false};

extern "C" void remove_pending_and_reraise(int sig) {
    for (auto& slot : g_pending)
        if (const char* p = slot.load()) ::unlink(p);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

void install_handlers() {
    if (g_handlers.exchange(true)) return;
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        struct sigaction sa {};
        sa.sa_handler = remove_pending_and_reraise;
        sigemptyset(&sa.sa_mask);
        struct sigaction old {};
        // Keep a handler someone else installed, and an ignored signal ignored.
        if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_DFL)
            sigaction(sig, &sa, nullptr);
    }
}

void track(const std::string& tmp, bool on) {
    for (auto& slot : g_pending) {
        const char* expected = on ? nullptr : tmp.c_str();
        if (slot.compare_exchange_strong(expected, on ? tmp.c_str() : nullptr)) return;
    }
}

std::string reason() {
    return errno ? std::string(": ") + std::strerror(errno) : std::string();
}

}  // namespace

output_file::output_file(std::string path) : m_path(std::move(path)) {
    if (m_path.empty()) throw user_error("an output file name is empty");
    struct stat st {};
    const bool special = ::stat(m_path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
    if (special && S_ISDIR(st.st_mode))
        throw user_error("cannot write '" + m_path + "': it is a directory");
    if (!special) {
        m_tmp = m_path + ".tmp." + std::to_string(::getpid());
        install_handlers();
        track(m_tmp, true);
    }
    errno = 0;
    m_out.open(special ? m_path : m_tmp, std::ios::binary | std::ios::trunc);
    if (!m_out) {
        const std::string why = reason();
        if (!m_tmp.empty()) track(m_tmp, false);
        throw user_error("cannot write '" + m_path + "'" + why);
    }
}

output_file::~output_file() {
    if (m_done || m_tmp.empty()) return;
    m_out.close();
    std::remove(m_tmp.c_str());
    track(m_tmp, false);
}

void output_file::commit() {
    errno = 0;
    m_out.flush();
    m_out.close();
    if (!m_out) throw user_error("error writing '" + m_path + "'" + reason());
    if (!m_tmp.empty() && std::rename(m_tmp.c_str(), m_path.c_str()) != 0)
        throw user_error("cannot write '" + m_path + "'" + reason());
    if (!m_tmp.empty()) track(m_tmp, false);
    m_done = true;
}

void write_file_atomically(const std::string& path, const std::string& text) {
    output_file out(path);
    out.stream() << text;
    out.commit();
}

}  // namespace trn
