// Durable Streams append load generator (a measurement tool, not a test): idempotent producer
// appends over HTTP/1.1 keep-alive to any Durable Streams server (queen's sidecar or the
// reference server), with plain blocking sockets, one thread per connection.
//
//   streamsbench --port P --prefix NAME --mode single|pipeline|multi [--producers N]
//                [--streams S] [--window W] [--seconds T] [--body BYTES]
//
//   single    one producer, one append at a time (seq 0, 1, 2, ...)
//   pipeline  one producer with W appends in flight over W connections, sent in seq order;
//             an out-of-order answer (409, the server saw seq k+1 before k) is resent
//   multi     N producers over S streams (producer i writes stream i % S), one append at a
//             time each; an append answered other than 200 is sent again with the same seq
//   dup       one producer applies seq 0 once, then repeats it (every answer a 204 duplicate)
// Creates the streams first (PUT). Prints one line:
//   mode=... appends=N seconds=T rate=R p50_us=X p99_us=Y retries=Z errors=E codes=STATUS:N,...
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

int g_port = 0;
std::string g_prefix = "bench";

// One keep-alive connection: send a request, read one answer (status + headers + body).
struct Conn {
    int fd = -1;
    std::string buf;

    bool open() {
        fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<uint16_t>(g_port));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    }
    bool send_all(const std::string& s) {
        std::size_t off = 0;
        while (off < s.size()) {
            ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
            if (n <= 0) return false;
            off += static_cast<std::size_t>(n);
        }
        return true;
    }
    // The status code of the next answer (-1 on a broken connection). Bodies are framed by
    // Content-Length or chunked encoding; an answer without either (204, 304) has none.
    int read_answer() {
        for (;;) {
            std::size_t end = buf.find("\r\n\r\n");
            if (end != std::string::npos) {
                int status = std::atoi(buf.c_str() + 9);
                std::string head = buf.substr(0, end);
                for (auto& c : head) c = static_cast<char>(std::tolower(c));
                std::size_t cl = head.find("content-length:");
                if (head.find("transfer-encoding: chunked") != std::string::npos) {
                    std::size_t pos = end + 4;
                    bool complete = false;
                    for (;;) {
                        std::size_t eol = buf.find("\r\n", pos);
                        if (eol == std::string::npos) break;
                        std::size_t n = std::strtoul(buf.c_str() + pos, nullptr, 16);
                        if (buf.size() < eol + 2 + n + 2) break;
                        pos = eol + 2 + n + 2;
                        if (n == 0) {
                            complete = true;
                            break;
                        }
                    }
                    if (complete) {
                        buf.erase(0, pos);
                        return status;
                    }
                } else {
                    std::size_t len =
                        cl == std::string::npos ? 0 : std::strtoul(head.c_str() + cl + 15, nullptr, 10);
                    if (buf.size() >= end + 4 + len) {
                        buf.erase(0, end + 4 + len);
                        return status;
                    }
                }
            }
            char tmp[16384];
            ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
            if (n <= 0) return -1;
            buf.append(tmp, static_cast<std::size_t>(n));
        }
    }
    ~Conn() {
        if (fd >= 0) ::close(fd);
    }
};

std::string stream_path(int s) { return "/v1/stream/" + g_prefix + "-" + std::to_string(s); }

std::string put_request(int s) {
    return "PUT " + stream_path(s) +
           " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n"
           "Content-Length: 0\r\n\r\n";
}

std::string append_request(int s, const std::string& producer, int64_t seq,
                           const std::string& body) {
    std::string r = "POST " + stream_path(s) +
                    " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n"
                    "Producer-Id: " +
                    producer + "\r\nProducer-Epoch: 0\r\nProducer-Seq: " + std::to_string(seq) +
                    "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    r += body;
    return r;
}

struct Result {
    std::vector<int64_t> lat_us;
    int64_t retries = 0, errors = 0;
    std::map<int, int64_t> codes;  // non-success answers by status (-1: connection broke)
};

}  // namespace

int main(int argc, char** argv) {
    std::string mode = "single";
    int producers = 1, streams = 1, window = 8, body_bytes = 64;
    double seconds = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string k = argv[i], v = argv[i + 1];
        if (k == "--port") g_port = std::atoi(v.c_str());
        else if (k == "--prefix") g_prefix = v;
        else if (k == "--mode") mode = v;
        else if (k == "--producers") producers = std::atoi(v.c_str());
        else if (k == "--streams") streams = std::atoi(v.c_str());
        else if (k == "--window") window = std::atoi(v.c_str());
        else if (k == "--seconds") seconds = std::atof(v.c_str());
        else if (k == "--body") body_bytes = std::atoi(v.c_str());
    }
    if (mode != "multi") producers = 1, streams = 1;
    const std::string body(static_cast<std::size_t>(body_bytes), 'x');
    {
        Conn c;
        if (!c.open()) return std::fprintf(stderr, "cannot connect\n"), 1;
        for (int s = 0; s < streams; s++) {
            c.send_all(put_request(s));
            int st = c.read_answer();
            if (st != 201 && st != 200) return std::fprintf(stderr, "PUT: %d\n", st), 1;
        }
    }
    const auto t0 = Clock::now();
    const auto stop_at = t0 + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(seconds));
    std::vector<Result> results;
    std::vector<std::thread> threads;
    if (mode == "pipeline") {
        // W connections; seq k goes out on connection k % W only after seq k-1 went out.
        std::mutex mu;
        std::condition_variable cv;
        int64_t next_send = 0;
        bool stopping = false;
        results.resize(static_cast<std::size_t>(window));
        for (int t = 0; t < window; t++) {
            threads.emplace_back([&, t] {
                Conn c;
                if (!c.open()) return;
                Result& r = results[static_cast<std::size_t>(t)];
                for (int64_t seq = t;; seq += window) {
                    {
                        std::unique_lock<std::mutex> lk(mu);
                        cv.wait(lk, [&] { return next_send == seq || stopping; });
                        if (stopping || Clock::now() >= stop_at) {
                            stopping = true;
                            cv.notify_all();
                            return;
                        }
                    }
                    auto s0 = Clock::now();
                    bool sent = c.send_all(append_request(0, "p0", seq, body));
                    {
                        std::lock_guard<std::mutex> lk(mu);
                        next_send = seq + 1;
                        cv.notify_all();
                    }
                    int st = sent ? c.read_answer() : -1;
                    while (st == 409) {  // arrived before its predecessor: send it again
                        r.retries++;
                        std::this_thread::sleep_for(std::chrono::microseconds(200));
                        if (!c.send_all(append_request(0, "p0", seq, body))) break;
                        st = c.read_answer();
                    }
                    if (st == 200 || st == 204)
                        r.lat_us.push_back(std::chrono::duration_cast<std::chrono::microseconds>(
                                               Clock::now() - s0)
                                               .count());
                    else
                        r.errors++, r.codes[st]++;
                }
            });
        }
    } else {
        results.resize(static_cast<std::size_t>(producers));
        for (int p = 0; p < producers; p++) {
            threads.emplace_back([&, p] {
                Conn c;
                if (!c.open()) return;
                Result& r = results[static_cast<std::size_t>(p)];
                const std::string id = "p" + std::to_string(p);
                const bool dup = mode == "dup";
                if (dup) {
                    c.send_all(append_request(0, id, 0, body));
                    if (c.read_answer() != 200) r.errors++;
                }
                // seq advances only past an applied append: after any other answer the same
                // seq is sent again (advancing would open a gap, and every later append of the
                // producer would be a 409)
                for (int64_t seq = 0; Clock::now() < stop_at;) {
                    auto s0 = Clock::now();
                    int st = c.send_all(append_request(p % streams, id, dup ? 0 : seq, body))
                                 ? c.read_answer()
                                 : -1;
                    if (st == (dup ? 204 : 200)) {
                        r.lat_us.push_back(std::chrono::duration_cast<std::chrono::microseconds>(
                                               Clock::now() - s0)
                                               .count());
                        seq++;
                    } else {
                        r.errors++, r.codes[st]++;
                    }
                    if (st < 0) return;
                }
            });
        }
    }
    for (auto& t : threads) t.join();
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    std::vector<int64_t> all;
    int64_t retries = 0, errors = 0;
    for (auto& r : results) {
        all.insert(all.end(), r.lat_us.begin(), r.lat_us.end());
        retries += r.retries;
        errors += r.errors;
    }
    std::sort(all.begin(), all.end());
    std::map<int, int64_t> codes;
    for (auto& r : results)
        for (auto& kv : r.codes) codes[kv.first] += kv.second;
    // non-success answers by status, e.g. "409:3,-1:1" (-1: the connection broke), "-": none
    std::string codes_s;
    for (auto& kv : codes)
        codes_s += (codes_s.empty() ? "" : ",") + std::to_string(kv.first) + ":" +
                   std::to_string(kv.second);
    if (codes_s.empty()) codes_s = "-";
    auto pct = [&](double q) {
        return all.empty() ? 0 : all[std::min(all.size() - 1, static_cast<std::size_t>(q * all.size()))];
    };
    std::printf("mode=%s producers=%d streams=%d appends=%zu seconds=%.2f rate=%.0f p50_us=%lld "
                "p99_us=%lld retries=%lld errors=%lld codes=%s\n",
                mode.c_str(), producers, streams, all.size(), secs, all.size() / secs,
                static_cast<long long>(pct(0.50)), static_cast<long long>(pct(0.99)),
                static_cast<long long>(retries), static_cast<long long>(errors), codes_s.c_str());
    return 0;
}
