// queen-sidecar-loadgen: the load client of the issue-3 benchmark (bench/sidecar/run.sh).
//
// Two modes, one workload: requests of --batch messages (~--payload-bytes JSON payloads) to one
// of --partitions partitions each, --dup-pct of every request being repeats of transactionIds
// that an earlier, already answered request of the same partition stored.
//   --mode http  single-threaded epoll client, --connections keep-alive HTTP/1.1 connections
//                spread over one or more sidecars (--target a:p[,b:p]); POST /api/v1/push.
//   --mode sql   --connections threads, one libpq connection each, calling
//                queen.push_segment(id, hashes, segment, -1) with binary parameters (the
//                direct path); thread t owns the partitions p % connections == t.
//   --mode insert the plain-INSERT baseline of issue 8: like sql, but each request is one
//                autocommit `INSERT INTO bench.plain_msgs (partition_id, txn, payload) VALUES
//                ($1,$2,$3::jsonb),...` (no index, no deduplication; repeats are not checked).
// --rate M (http): open loop at M messages/s (M / batch requests/s on a fixed schedule, sent on
// whichever connection is idle); latency then counts from the scheduled send time, so a
// schedule the server falls behind shows up in p99 instead of being hidden (no coordinated
// omission).
// Every answer is checked item by item: a repeat must come back `duplicate`, a fresh id
// `queued`; anything else counts as a mismatch (reported, and the exit code is 3).
//
// Timing: --warmup seconds unrecorded, then --duration seconds recorded (requests completed in
// the window count; latency = send start to last response byte). CPU: at the window's two
// ends the utime+stime of --cpu-pids and of every child of --cpu-children-of (the postmaster:
// backends, walwriter, ...) is read from /proc/<pid>/stat; the machine's busy share from
// /proc/stat; our own from getrusage. Output: one line of key=value pairs on stdout.
//
// Threads: http mode has one thread; sql mode has one per connection plus main, which only
// sleeps and samples CPU. Shared state in sql mode: a few atomics and, per thread, its own
// partitions and latency vector (read by main after join). No locks.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/common/hash.h"
#include "core/common/segment_codec.h"
#include "core/common/uuidv7.h"

namespace {

struct Options {
    std::string mode = "http";
    std::vector<std::pair<std::string, int>> targets;  // http
    std::string conninfo;                              // sql
    int connections = 32;
    int partitions = 100;
    int batch = 100;
    int payload_bytes = 256;
    int dup_pct = 10;
    double warmup = 3, duration = 10;
    std::string queue = "bench";
    std::string part_prefix = "p";
    std::string run_tag = "r";
    uint64_t seed = 1;
    bool sequential = false;    // http: partitions in order (0, 1, 2, ...) instead of at random
    int64_t max_requests = 0;   // http: stop issuing after this many (0 = no cap)
    double rate = 0;            // http: messages/s on a fixed schedule (0 = closed loop)
    std::vector<int> cpu_pids;
    int cpu_children_of = 0;
};

// Monotonic seconds.
double now_s() {
    using namespace std::chrono;
    return duration_cast<duration<double>>(steady_clock::now().time_since_epoch()).count();
}

[[noreturn]] void die(const std::string& msg) {
    std::fprintf(stderr, "loadgen: %s\n", msg.c_str());
    std::exit(2);
}

// Parse flags of the form --name value.
Options parse_args(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; i++) {
        std::string k = argv[i];
        if (i + 1 >= argc) die("missing value for " + k);
        std::string v = argv[++i];
        if (k == "--mode") o.mode = v;
        else if (k == "--target") {
            std::size_t pos = 0;
            while (pos < v.size()) {
                std::size_t comma = v.find(',', pos);
                if (comma == std::string::npos) comma = v.size();
                std::string t = v.substr(pos, comma - pos);
                std::size_t colon = t.rfind(':');
                if (colon == std::string::npos) die("bad --target " + t);
                o.targets.emplace_back(t.substr(0, colon), std::atoi(t.c_str() + colon + 1));
                pos = comma + 1;
            }
        } else if (k == "--conninfo") o.conninfo = v;
        else if (k == "--connections") o.connections = std::atoi(v.c_str());
        else if (k == "--partitions") o.partitions = std::atoi(v.c_str());
        else if (k == "--batch") o.batch = std::atoi(v.c_str());
        else if (k == "--payload-bytes") o.payload_bytes = std::atoi(v.c_str());
        else if (k == "--dup-pct") o.dup_pct = std::atoi(v.c_str());
        else if (k == "--warmup") o.warmup = std::atof(v.c_str());
        else if (k == "--duration") o.duration = std::atof(v.c_str());
        else if (k == "--queue") o.queue = v;
        else if (k == "--part-prefix") o.part_prefix = v;
        else if (k == "--run-tag") o.run_tag = v;
        else if (k == "--seed") o.seed = std::strtoull(v.c_str(), nullptr, 10);
        else if (k == "--sequential") o.sequential = v == "1";
        else if (k == "--max-requests") o.max_requests = std::atoll(v.c_str());
        else if (k == "--rate") o.rate = std::atof(v.c_str());
        else if (k == "--cpu-pids") {
            std::size_t pos = 0;
            while (pos < v.size()) {
                std::size_t comma = v.find(',', pos);
                if (comma == std::string::npos) comma = v.size();
                int pid = std::atoi(v.substr(pos, comma - pos).c_str());
                if (pid > 0) o.cpu_pids.push_back(pid);
                pos = comma + 1;
            }
        } else if (k == "--cpu-children-of") o.cpu_children_of = std::atoi(v.c_str());
        else die("unknown flag " + k);
    }
    if (o.mode != "http" && o.mode != "sql" && o.mode != "insert")
        die("--mode is http, sql or insert");
    if (o.mode == "http" && o.targets.empty()) die("--target is required in http mode");
    if (o.connections < 1 || o.partitions < 1 || o.batch < 1) die("bad sizes");
    if (o.run_tag.size() > 12) die("--run-tag is at most 12 characters");
    return o;
}

// ---- CPU accounting ----

// utime+stime (seconds) of the watched processes: {listed pids, children of the parent}.
std::pair<double, double> watched_cpu_seconds(const Options& o) {
    static const double tck = static_cast<double>(sysconf(_SC_CLK_TCK));
    double listed = 0, children = 0;
    DIR* d = opendir("/proc");
    if (!d) return {-1, -1};
    while (dirent* de = readdir(d)) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
        int pid = std::atoi(de->d_name);
        char path[64], buf[1024];
        std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
        int fd = open(path, O_RDONLY);
        if (fd < 0) continue;
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0) continue;
        buf[n] = 0;
        const char* p = std::strrchr(buf, ')');  // the command name may hold spaces
        if (!p) continue;
        // Fields after ") ": state ppid pgrp session tty tpgid flags minflt cminflt majflt
        // cmajflt utime stime (fields 3..15).
        char state;
        long ppid;
        unsigned long long f[11];
        if (std::sscanf(p + 2, "%c %ld %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
                        &state, &ppid, &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7],
                        &f[8], &f[9], &f[10]) != 13)
            continue;
        const double t = static_cast<double>(f[9] + f[10]) / tck;
        if (std::find(o.cpu_pids.begin(), o.cpu_pids.end(), pid) != o.cpu_pids.end())
            listed += t;
        else if (o.cpu_children_of > 0 && (ppid == o.cpu_children_of || pid == o.cpu_children_of))
            children += t;
    }
    closedir(d);
    return {listed, children};
}

// (busy, total) jiffies of the whole machine from /proc/stat.
std::pair<double, double> machine_jiffies() {
    FILE* f = std::fopen("/proc/stat", "r");
    if (!f) return {0, 0};
    unsigned long long v[10] = {};
    int got = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                          &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
    std::fclose(f);
    if (got < 8) return {0, 0};
    double total = 0;
    for (int i = 0; i < 8; i++) total += static_cast<double>(v[i]);
    double idle = static_cast<double>(v[3] + v[4]);
    return {total - idle, total};
}

// Our own CPU seconds.
double self_cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

struct CpuSample {
    double listed = 0, children = 0, self = 0, busy = 0, total = 0;
};

// One CPU sample.
CpuSample sample_cpu(const Options& o) {
    CpuSample s;
    auto [l, c] = watched_cpu_seconds(o);
    s.listed = l;
    s.children = c;
    s.self = self_cpu_seconds();
    auto [b, t] = machine_jiffies();
    s.busy = b;
    s.total = t;
    return s;
}

// ---- the workload ----

// One partition's generator state: names, a counter for fresh ids, and the ring of ids that
// earlier answered requests stored (where repeats come from).
struct Partition {
    std::string name;
    uint64_t counter = 0;
    std::vector<std::string> history;  // ring
    std::size_t history_next = 0;
};

// One request's items: transactionIds and which ones are repeats.
struct Batch {
    int part = 0;
    std::vector<std::string> txns;
    std::vector<uint8_t> repeat;
    int repeats = 0;
};

constexpr std::size_t kHistory = 1000;

// Makes requests and remembers what was stored.
class Workload {
public:
    Workload(const Options& o, uint64_t seed) : o_(o), rng_(seed) {
        for (int i = 0; i < o.partitions; i++) {
            Partition p;
            p.name = o.part_prefix + std::to_string(i);
            parts_.push_back(std::move(p));
        }
        // A pool of payloads of random printable text, so segments compress like real data.
        std::uniform_int_distribution<int> ch(0, 61);
        static const char alnum[] =
            "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
        for (int i = 0; i < 1024; i++) {
            std::string s = "{\"kind\":\"bench\",\"seq\":" + std::to_string(i) + ",\"data\":\"";
            while (static_cast<int>(s.size()) < o.payload_bytes - 2) s.push_back(alnum[ch(rng_)]);
            s += "\"}";
            payloads_.push_back(std::move(s));
        }
    }

    // The next batch for partition `part`.
    void make(int part, Batch* b) {
        Partition& p = parts_[static_cast<std::size_t>(part)];
        b->part = part;
        b->txns.resize(static_cast<std::size_t>(o_.batch));
        b->repeat.assign(static_cast<std::size_t>(o_.batch), 0);
        b->repeats = 0;
        const int want = o_.batch * o_.dup_pct / 100;
        for (int i = 0; i < o_.batch; i++) {
            // Repeats at random positions, `want` of them when the history allows.
            const int left = o_.batch - i;
            const bool rep = !p.history.empty() && b->repeats < want &&
                             static_cast<int>(rng_() % static_cast<uint64_t>(left)) <
                                 want - b->repeats;
            if (rep) {
                b->txns[i] = p.history[rng_() % p.history.size()];
                b->repeat[i] = 1;
                b->repeats++;
            } else {
                char buf[64];
                std::snprintf(buf, sizeof buf, "%s-%04d-%0*llu", o_.run_tag.c_str(), part,
                              static_cast<int>(30 - o_.run_tag.size()),
                              static_cast<unsigned long long>(p.counter++));
                b->txns[i] = buf;
            }
        }
    }

    // An answered batch: its fresh ids are stored now and may be repeated.
    void stored(const Batch& b) {
        Partition& p = parts_[static_cast<std::size_t>(b.part)];
        for (std::size_t i = 0; i < b.txns.size(); i++) {
            if (b.repeat[i]) continue;
            if (p.history.size() < kHistory) {
                p.history.push_back(b.txns[i]);
            } else {
                p.history[p.history_next] = b.txns[i];
                p.history_next = (p.history_next + 1) % kHistory;
            }
        }
    }

    // A payload for item i.
    const std::string& payload(std::size_t i) const { return payloads_[i % payloads_.size()]; }
    const Partition& part(int i) const { return parts_[static_cast<std::size_t>(i)]; }
    uint64_t rand() { return rng_(); }

private:
    const Options& o_;
    std::mt19937_64 rng_;
    std::vector<Partition> parts_;
    std::vector<std::string> payloads_;
};

// Results of the timed window.
struct Tally {
    uint64_t requests = 0, messages = 0, queued = 0, duplicate = 0, mismatches = 0, errors = 0;
    std::vector<double> latency_ms;
    // Add another thread's tally.
    void merge(const Tally& t) {
        requests += t.requests;
        messages += t.messages;
        queued += t.queued;
        duplicate += t.duplicate;
        mismatches += t.mismatches;
        errors += t.errors;
        latency_ms.insert(latency_ms.end(), t.latency_ms.begin(), t.latency_ms.end());
    }
};

// Check answer statuses (in item order) against the batch; counts into t when `count`.
void check_statuses(const Batch& b, const std::vector<uint8_t>& dup, Tally* t, bool count) {
    if (dup.size() != b.txns.size()) {
        if (count) t->errors++;
        return;
    }
    for (std::size_t i = 0; i < dup.size(); i++) {
        if (count) (dup[i] ? t->duplicate : t->queued)++;
        if (dup[i] != b.repeat[i] && count) t->mismatches++;
    }
}

// ---- http mode ----

// One keep-alive connection and its current request.
struct Conn {
    int fd = -1;
    std::string out;
    std::size_t sent = 0;
    std::string in;
    std::size_t header_end = 0;
    std::size_t content_length = 0;
    int status = 0;
    double started = 0;
    Batch batch;
    bool busy = false;
};

// The request text for a batch.
void build_http(const Options& o, Workload& w, const Batch& b, std::string* out) {
    static thread_local std::string body;
    body.clear();
    body += "{\"items\":[";
    const std::string& pname = w.part(b.part).name;
    for (std::size_t i = 0; i < b.txns.size(); i++) {
        if (i) body.push_back(',');
        body += "{\"queue\":\"";
        body += o.queue;
        body += "\",\"partition\":\"";
        body += pname;
        body += "\",\"transactionId\":\"";
        body += b.txns[i];
        body += "\",\"payload\":";
        body += w.payload(static_cast<std::size_t>(w.rand()));
        body.push_back('}');
    }
    body += "]}";
    out->clear();
    out->reserve(body.size() + 160);
    *out += "POST /api/v1/push HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Content-Length: ";
    *out += std::to_string(body.size());
    *out += "\r\n\r\n";
    *out += body;
}

// Statuses of a push answer in item order (1 = duplicate).
bool parse_push_answer(const char* p, std::size_t n, std::vector<uint8_t>* dup) {
    dup->clear();
    static const char key[] = "\"status\":\"";
    const char* end = p + n;
    while (p < end) {
        const char* s = static_cast<const char*>(memmem(p, static_cast<std::size_t>(end - p), key,
                                                        sizeof key - 1));
        if (!s) break;
        s += sizeof key - 1;
        if (end - s >= 6 && std::memcmp(s, "queued", 6) == 0)
            dup->push_back(0);
        else if (end - s >= 9 && std::memcmp(s, "duplicate", 9) == 0)
            dup->push_back(1);
        else
            return false;
        p = s;
    }
    return true;
}

// Open a non-blocking TCP connection.
int connect_to(const std::string& host, int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) die("bad host " + host);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
        die("connect " + host + ":" + std::to_string(port) + ": " + std::strerror(errno));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

// The epoll client.
// Print one run's figures as key=value pairs; exit code 3 when any answer was wrong.
int report(const char* mode, Tally& tally, const CpuSample& c0, const CpuSample& c1,
           const Options& o) {
    std::sort(tally.latency_ms.begin(), tally.latency_ms.end());
    auto pct = [&](double q) {
        if (tally.latency_ms.empty()) return 0.0;
        std::size_t i = static_cast<std::size_t>(q * static_cast<double>(tally.latency_ms.size() - 1));
        return tally.latency_ms[i];
    };
    const double cpu = (c1.listed - c0.listed) + (c1.children - c0.children);
    const double busy_share = c1.total > c0.total ? (c1.busy - c0.busy) / (c1.total - c0.total) : 0;
    std::printf(
        "mode=%s requests=%llu messages=%llu msgs_per_s=%.0f p50_ms=%.2f p99_ms=%.2f "
        "queued=%llu duplicate=%llu mismatches=%llu errors=%llu cpu_s=%.2f "
        "cpu_s_per_M=%.2f listed_cpu_s=%.2f pg_cpu_s=%.2f loadgen_cpu_s=%.2f machine_busy=%.3f "
        "duration=%.2f\n",
        mode,
        static_cast<unsigned long long>(tally.requests),
        static_cast<unsigned long long>(tally.messages),
        static_cast<double>(tally.messages) / o.duration, pct(0.5), pct(0.99),
        static_cast<unsigned long long>(tally.queued),
        static_cast<unsigned long long>(tally.duplicate),
        static_cast<unsigned long long>(tally.mismatches),
        static_cast<unsigned long long>(tally.errors), cpu,
        tally.messages ? cpu / (static_cast<double>(tally.messages) / 1e6) : 0.0,
        c1.listed - c0.listed, c1.children - c0.children, c1.self - c0.self, busy_share,
        o.duration);
    return tally.mismatches || tally.errors ? 3 : 0;
}

int run_http(const Options& o) {
    Workload w(o, o.seed);
    std::vector<Conn> conns(static_cast<std::size_t>(o.connections));
    int ep = epoll_create1(0);
    for (std::size_t i = 0; i < conns.size(); i++) {
        const auto& t = o.targets[i % o.targets.size()];
        conns[i].fd = connect_to(t.first, t.second);
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
        ev.data.u64 = i;
        epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
    }
    const double t0 = now_s(), t_begin = t0 + o.warmup, t_end = t_begin + o.duration;
    bool window_open = false, window_closed = false;
    CpuSample c0, c1;
    Tally tally;
    std::vector<uint8_t> dup;
    int busy = 0;
    int printed_errors = 0;
    int64_t issued = 0;

    // Open loop: the next scheduled send time and the connections waiting for it.
    const double slot_s = o.rate > 0 ? static_cast<double>(o.batch) / o.rate : 0;
    double next_slot = t0;
    std::vector<std::size_t> idle;
    // Start the next request on c (if still issuing).
    auto issue = [&](Conn& c, double now) {
        if (now >= t_end || (o.max_requests > 0 && issued >= o.max_requests)) return;
        if (slot_s > 0) {
            if (now < next_slot) {
                idle.push_back(static_cast<std::size_t>(&c - conns.data()));
                return;
            }
            now = next_slot;  // latency counts from the scheduled time
            next_slot += slot_s;
        }
        const int part = o.sequential ? static_cast<int>(issued % o.partitions)
                                      : static_cast<int>(w.rand() % static_cast<uint64_t>(o.partitions));
        issued++;
        w.make(part, &c.batch);
        build_http(o, w, c.batch, &c.out);
        c.sent = 0;
        c.in.clear();
        c.header_end = 0;
        c.content_length = 0;
        c.status = 0;
        c.started = now;
        c.busy = true;
        busy++;
    };
    // Write what the socket takes.
    auto pump_out = [&](Conn& c) {
        while (c.busy && c.sent < c.out.size()) {
            ssize_t n = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
            if (n > 0) {
                c.sent += static_cast<std::size_t>(n);
            } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                return;
            } else {
                die(std::string("send: ") + std::strerror(errno));
            }
        }
    };
    // Read what is there; true when a full response arrived.
    auto pump_in = [&](Conn& c) -> bool {
        char buf[65536];
        for (;;) {
            ssize_t n = recv(c.fd, buf, sizeof buf, 0);
            if (n > 0) {
                c.in.append(buf, static_cast<std::size_t>(n));
                continue;
            }
            if (n == 0) die("the server closed a connection");
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            die(std::string("recv: ") + std::strerror(errno));
        }
        if (!c.header_end) {
            std::size_t he = c.in.find("\r\n\r\n");
            if (he == std::string::npos) return false;
            c.header_end = he + 4;
            c.status = std::atoi(c.in.c_str() + 9);
            std::string head = c.in.substr(0, he);
            for (auto& ch : head) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
            std::size_t cl = head.find("content-length:");
            if (cl == std::string::npos) die("response without Content-Length");
            c.content_length = std::strtoull(head.c_str() + cl + 15, nullptr, 10);
        }
        return c.in.size() >= c.header_end + c.content_length;
    };

    double now = now_s();
    for (auto& c : conns) {
        issue(c, now);
        pump_out(c);
    }
    std::vector<epoll_event> evs(conns.size());
    while (busy > 0 || (slot_s > 0 && now < t_end)) {
        int wait_ms = 100;
        if (slot_s > 0 && !idle.empty())
            // at least 1 ms: a shorter wait would spin this process on the cores the server
            // needs; slots that fall due meanwhile go out together, each timed from its slot
            wait_ms = std::max(1, static_cast<int>(std::ceil((next_slot - now_s()) * 1000.0)));
        int n = epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), wait_ms);
        now = now_s();
        while (slot_s > 0 && !idle.empty() && now >= next_slot && now < t_end) {
            Conn& ic = conns[idle.back()];
            idle.pop_back();
            issue(ic, now);
            pump_out(ic);
        }
        if (!window_open && now >= t_begin) {
            window_open = true;
            c0 = sample_cpu(o);
        }
        if (window_open && !window_closed && now >= t_end) {
            window_closed = true;
            c1 = sample_cpu(o);
        }
        if (now > t_end + 60) die("requests still unanswered 60 s after the window");
        for (int k = 0; k < n; k++) {
            Conn& c = conns[evs[k].data.u64];
            if (!c.busy) continue;
            if (evs[k].events & EPOLLOUT) pump_out(c);
            if (!(evs[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) continue;
            if (!pump_in(c)) continue;
            now = now_s();
            const bool count = c.started >= t_begin && now <= t_end;
            busy--;
            c.busy = false;
            if (c.status != 201) {
                if (count) tally.errors++;
                if (++printed_errors <= 5)
                    std::fprintf(stderr, "loadgen: HTTP %d: %.200s\n", c.status,
                                 c.in.c_str() + c.header_end);
            } else {
                if (!parse_push_answer(c.in.data() + c.header_end, c.content_length, &dup)) {
                    if (count) tally.errors++;
                } else {
                    check_statuses(c.batch, dup, &tally, count);
                    w.stored(c.batch);
                }
                if (count) {
                    tally.requests++;
                    tally.messages += c.batch.txns.size();
                    tally.latency_ms.push_back((now - c.started) * 1000.0);
                }
            }
            issue(c, now);
            pump_out(c);
        }
    }
    if (!window_closed) c1 = sample_cpu(o);
    for (auto& c : conns) close(c.fd);
    close(ep);
    // Report.
    return report("http", tally, c0, c1, o);
}

// ---- sql mode ----

// Big-endian int8.
void put_be64(char* out, int64_t v) {
    uint64_t u = static_cast<uint64_t>(v);
    for (int i = 7; i >= 0; i--) *out++ = static_cast<char>(u >> (8 * i));
}

// One client thread: owns partitions p % connections == t, pushes one segment per request.
void sql_client(const Options& o, int t, const std::vector<int64_t>& pids, double t_begin,
                double t_end, Tally* tally, std::atomic<bool>* failed) {
    PGconn* c = PQconnectdb(o.conninfo.c_str());
    if (PQstatus(c) != CONNECTION_OK) {
        std::fprintf(stderr, "loadgen: %s", PQerrorMessage(c));
        failed->store(true);
        return;
    }
    const bool insert = o.mode == "insert";
    std::string ins = "INSERT INTO bench.plain_msgs (partition_id, txn, payload) VALUES ";
    for (int i = 0; i < o.batch; i++)
        ins += (i ? "," : "") + std::string("($") + std::to_string(3 * i + 1) + "::int,$" +
               std::to_string(3 * i + 2) + ",$" + std::to_string(3 * i + 3) + "::jsonb)";
    const Oid types[4] = {20, 17, 17, 20};
    PGresult* pr = insert ? PQprepare(c, "push", ins.c_str(), 3 * o.batch, nullptr)
                          : PQprepare(c, "push",
                                      "SELECT status = 'duplicate' FROM queen.push_segment($1, $2, $3, $4)",
                                      4, types);
    if (PQresultStatus(pr) != PGRES_COMMAND_OK) {
        std::fprintf(stderr, "loadgen: prepare: %s", PQerrorMessage(c));
        failed->store(true);
        PQclear(pr);
        PQfinish(c);
        return;
    }
    PQclear(pr);
    std::vector<int> mine;
    for (int p = t; p < o.partitions; p += o.connections) mine.push_back(p);
    if (mine.empty()) {
        PQfinish(c);
        return;
    }
    Workload w(o, o.seed * 1000003 + static_cast<uint64_t>(t));
    queen::UuidV7Generator gen;
    Batch b;
    std::vector<uint8_t> dup;
    std::string hashes;
    char pidbuf[8], verbuf[8];
    put_be64(verbuf, -1);
    for (;;) {
        const double start = now_s();
        if (start >= t_end) break;
        const int part = mine[w.rand() % mine.size()];
        w.make(part, &b);
        if (insert) {
            std::vector<std::string> vals;
            vals.reserve(3 * b.txns.size());
            for (std::size_t i = 0; i < b.txns.size(); i++) {
                vals.push_back(std::to_string(part));
                vals.push_back(b.txns[i]);
                vals.push_back(w.payload(static_cast<std::size_t>(w.rand())));
            }
            std::vector<const char*> pv;
            for (const auto& x : vals) pv.push_back(x.c_str());
            PGresult* r = PQexecPrepared(c, "push", static_cast<int>(pv.size()), pv.data(), nullptr,
                                         nullptr, 0);
            const double end = now_s();
            const bool count = start >= t_begin && end <= t_end;
            if (PQresultStatus(r) != PGRES_COMMAND_OK) {
                if (count) tally->errors++;
                std::fprintf(stderr, "loadgen: insert: %s", PQerrorMessage(c));
                PQclear(r);
                if (PQstatus(c) != CONNECTION_OK) break;
                continue;
            }
            PQclear(r);
            w.stored(b);
            if (count) {
                tally->requests++;
                tally->messages += b.txns.size();
                tally->queued += b.txns.size();
                tally->latency_ms.push_back((end - start) * 1000.0);
            }
            continue;
        }
        queen::SegmentBuilder sb;
        hashes.clear();
        const uint64_t ms = queen::unix_ms_now();
        for (std::size_t i = 0; i < b.txns.size(); i++) {
            const std::string& payload = w.payload(static_cast<std::size_t>(w.rand()));
            sb.add(queen::MessageView{gen.next(ms), queen::ContentType::Json, b.txns[i], payload});
            queen::Hash128 h = queen::txn_hash(b.txns[i]);
            hashes.append(reinterpret_cast<const char*>(h.b), queen::kHashBytes);
        }
        const std::string& seg = sb.finish();
        put_be64(pidbuf, pids[static_cast<std::size_t>(part)]);
        const char* v[4] = {pidbuf, hashes.data(), seg.data(), verbuf};
        const int len[4] = {8, static_cast<int>(hashes.size()), static_cast<int>(seg.size()), 8};
        const int fmt[4] = {1, 1, 1, 1};
        PGresult* r = PQexecPrepared(c, "push", 4, v, len, fmt, 1);
        const double end = now_s();
        const bool count = start >= t_begin && end <= t_end;
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            if (count) tally->errors++;
            std::fprintf(stderr, "loadgen: push: %s", PQerrorMessage(c));
            PQclear(r);
            if (PQstatus(c) != CONNECTION_OK) break;
            continue;
        }
        dup.clear();
        for (int i = 0; i < PQntuples(r); i++) dup.push_back(PQgetvalue(r, i, 0)[0] ? 1 : 0);
        PQclear(r);
        check_statuses(b, dup, tally, count);
        w.stored(b);
        if (count) {
            tally->requests++;
            tally->messages += b.txns.size();
            tally->latency_ms.push_back((end - start) * 1000.0);
        }
    }
    PQfinish(c);
}

// The direct-SQL client: resolve partitions, then one thread per connection.
int run_sql(const Options& o) {
    PGconn* c = PQconnectdb(o.conninfo.c_str());
    if (PQstatus(c) != CONNECTION_OK) die(PQerrorMessage(c));
    std::vector<int64_t> pids;
    for (int p = 0; p < o.partitions; p++) {
        std::string name = o.part_prefix + std::to_string(p);
        const char* v[2] = {o.queue.c_str(), name.c_str()};
        PGresult* r = PQexecParams(
            c, "SELECT partition_id FROM queen.resolve_partition($1, $2)", 2, nullptr, v,
            nullptr, nullptr, 0);
        if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
            die(std::string("resolve_partition: ") + PQerrorMessage(c));
        pids.push_back(std::strtoll(PQgetvalue(r, 0, 0), nullptr, 10));
        PQclear(r);
    }
    PQfinish(c);
    const double t0 = now_s(), t_begin = t0 + o.warmup, t_end = t_begin + o.duration;
    std::vector<Tally> tallies(static_cast<std::size_t>(o.connections));
    std::atomic<bool> failed{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < o.connections; t++)
        threads.emplace_back(sql_client, std::cref(o), t, std::cref(pids), t_begin, t_end,
                             &tallies[static_cast<std::size_t>(t)], &failed);
    auto sleep_until = [](double t) {
        double d = t - now_s();
        if (d > 0) std::this_thread::sleep_for(std::chrono::duration<double>(d));
    };
    sleep_until(t_begin);
    CpuSample c0 = sample_cpu(o);
    sleep_until(t_end);
    CpuSample c1 = sample_cpu(o);
    for (auto& th : threads) th.join();
    if (failed.load()) die("a client failed");
    Tally tally;
    for (auto& t : tallies) tally.merge(t);
    return report(o.mode.c_str(), tally, c0, c1, o);
}

}  // namespace

// Parse flags and run the chosen mode.
int main(int argc, char** argv) {
    Options o = parse_args(argc, argv);
    return o.mode == "http" ? run_http(o) : run_sql(o);  // sql and insert
}
