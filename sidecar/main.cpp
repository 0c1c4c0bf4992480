// queen-sidecar: load the settings (settings/settings.h), build the parts from them
// (app/daemon.h), serve, and shut down in stages on signals.
//
// Signals: SIGTERM and SIGINT are blocked in every thread and taken by one signal thread
// (sigtimedwait), so they are seen whatever the event loop is doing.
//   first signal   stop accepting, finish and answer in-flight requests, exit 0;
//   second signal  exit at once with 128 + signal (nothing more is answered);
//   drain deadline (--drain-timeout-ms after the first signal, plus 1 s for the rest of the
//                  shutdown) the process exits with status 1 whatever is still running.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <thread>

#include "app/daemon.h"
#include "common/clock.h"
#include "common/log.h"
#include "settings/settings.h"

using namespace queen::sidecar;

namespace {
// What the shutdown after the drain (stopping the parts) may take on top of --drain-timeout-ms
// before the process exits with status 1. Not a setting: the operator's knob is the drain.
constexpr int64_t kShutdownGraceMs = 1000;

// Wait for SIGTERM/SIGINT and run the shutdown stages described above. on_first is called once
// (it must only post work); `done` is set by main when the orderly shutdown has finished.
void signal_thread(sigset_t set, int64_t drain_timeout_ms, std::function<void(int)> on_first,
                   const std::atomic<bool>* done) {
    int sig = 0;
    while ((sig = sigwaitinfo(&set, nullptr)) < 0) {
    }
    QLOG_INFO("signal %d: draining (a second signal exits at once; deadline %lld ms)", sig,
              static_cast<long long>(drain_timeout_ms));
    on_first(sig);
    const int64_t grace_ms = drain_timeout_ms + kShutdownGraceMs;
    // sigtimedwait takes a relative timespec; the time itself is read from the one clock.
    timespec ts{static_cast<time_t>(grace_ms / 1000), static_cast<long>(grace_ms % 1000) * 1000000};
    const SystemClock& clock = SystemClock::instance();
    const int64_t start = clock.mono_ms();
    for (;;) {
        int s2 = sigtimedwait(&set, nullptr, &ts);
        if (s2 > 0) {
            QLOG_WARN("second signal %d: exiting now", s2);
            std::_Exit(128 + s2);
        }
        const int64_t elapsed = clock.mono_ms() - start;
        if (elapsed >= grace_ms) break;
        const int64_t left = grace_ms - elapsed;
        ts = {static_cast<time_t>(left / 1000), static_cast<long>(left % 1000) * 1000000};
    }
    if (done->load()) return;
    QLOG_ERROR("drain deadline passed with work still running: exiting with status 1");
    std::_Exit(1);
}
}  // namespace

// Build everything from the settings, serve until a signal, drain, exit.
int main(int argc, char** argv) {
    Settings st;
    SettingsRequest request = SettingsRequest::Run;
    Status s = load_settings(argc, argv, &st, &request);
    if (request == SettingsRequest::Help) {
        std::fputs(settings_help().c_str(), stdout);
        return 0;
    }
    if (request == SettingsRequest::Markdown) {
        std::fputs(settings_markdown().c_str(), stdout);
        return 0;
    }
    if (request == SettingsRequest::PrintRoutes) {
        std::fputs(route_listing(st).c_str(), stdout);
        return 0;
    }
    if (!s.is_ok()) {
        QLOG_ERROR("queen-sidecar: %s", s.message().c_str());
        return 2;
    }
    LogFormat lf = LogFormat::Text;
    parse_log_format(st.log_format, &lf);
    log_configure(lf);
    // Before any thread exists: every thread inherits the mask, only signal_thread takes them.
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
    std::signal(SIGPIPE, SIG_IGN);

    if (st.clock_offset_ms) {
        SystemClock::instance().set_wall_offset_ms(st.clock_offset_ms);
        QLOG_WARN("TEST ONLY: the sidecar's wall clock is shifted by %lld ms",
                  static_cast<long long>(st.clock_offset_ms));
    }
    Daemon daemon(st);
    std::string host;
    uint16_t bound = 0;
    s = daemon.listen(&host, &bound);
    if (!s.is_ok()) {
        QLOG_ERROR("queen-sidecar: %s", s.message().c_str());
        return 1;
    }
    daemon.start();
    std::atomic<bool> shutdown_done{false};
    std::thread(signal_thread, sigs, st.drain_timeout_ms,
                std::function<void(int)>([&](int) { daemon.begin_drain(); }), &shutdown_done)
        .detach();

    QLOG_INFO("queen-sidecar ready: listening on %s:%u (pool %lld, dedup cache %s, %lld MiB)",
              host.c_str(), static_cast<unsigned>(bound), static_cast<long long>(st.pool_size),
              daemon.cache_enabled() ? "on" : "off", static_cast<long long>(st.dedup_cache_mb));
    // Every effective setting, after the ready line (scripts take the first "127.0.0.1:" of the
    // log for the bound port).
    QLOG_INFO("queen-sidecar settings: %s", settings_effective(st).c_str());

    daemon.run();
    daemon.stop();
    shutdown_done = true;
    std::_Exit(0);  // the signal thread is still parked in sigtimedwait
}
