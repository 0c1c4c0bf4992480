// queenbench: the load client of bench/run.sh.
//
// N threads, one libpq connection each. Thread t owns the partitions i with i % N == t (the
// shard-affine shape a sidecar gives: a partition is pushed by one client only, so pushes never
// queue on another client's row lock and a client knows its partitions' last offsets exactly).
// Each thread pushes batches of --batch messages (~--payload-bytes of JSON each) round-robin
// over its partitions for --warmup + --duration seconds, one push per transaction, and counts
// the pushes that complete inside the timed part. Each batch repeats --dups transactionIds
// this client pushed to the same partition in its last 10 pushes (so within any window >= a
// few seconds) at random positions; the rest are fresh. Every answer is checked: a repeat must
// come back `duplicate` with its original offset, a fresh one `queued` at the next offset.
// Prints one CSV line (see kCsvHeader); exit status 2 on a database error. With --latency-out
// FILE it also writes every call of the timed part to FILE, one line each: `end_s,ms` (the
// call's completion in seconds since the timed part began, its latency in milliseconds), in
// order of completion, header line first; unlike the CSV's p50/p99 (calls completing inside
// the timed part) it includes the calls still in flight when the timed part ends (end_s >
// --duration), so the slowest call of a run is never lost (bench/restart.sh).
//
// Variants (what one push sends):
//   plain       INSERT INTO bench.plain_msgs VALUES ($1,$2,$3::jsonb),... (batch rows, text params)
//   onconflict  the same into bench.oc_msgs ... ON CONFLICT (partition_id, txn) DO NOTHING
//   plref       SELECT * FROM plref.push(queue, partition, items jsonb)   (PL/pgSQL reference)
//   push        SELECT * FROM queen.push(queue, partition, items jsonb)
//   seg_full    SELECT * FROM queen.push_segment(id, hashes, segment, -1) (binary params)
//               (run.sh decides the session's queen.probe_cache through --conninfo options)
//   seg_vouch   the same with p_verified = this client's exact last offset of the partition
//               and, with --seg-window, p_window = the queue's window from resolve_partition
//               (a vouch is only sound for hashes never pushed at or below it: with --dups > 0
//               it vouches min(original offset of the repeats) - 1 instead)
#include <libpq-fe.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/common/hash.h"
#include "core/common/segment_codec.h"
#include "core/common/uuidv7.h"

namespace {

using Clock = std::chrono::steady_clock;

const char* const kCsvHeader =
    "variant,clients,partitions,batch,dups,pushes,messages,seconds,msgs_per_s,p50_ms,p99_ms,"
    "dups_expected,dups_seen,verdict_errors,client_cpu_pct,machine_busy_pct,"
    "cache_hits,cache_confirmed,cache_fallbacks,cache_rows_read";

enum class Variant { Plain, OnConflict, PlRef, Push, SegFull, SegVouch };

struct Options {
    std::string conninfo = "dbname=bench";
    std::string variant_name = "plain";
    std::string label;          // name printed in the CSV (default: the variant)
    Variant variant = Variant::Plain;
    int clients = 8;
    int partitions = 100;
    std::string prefix = "p";   // partition names: prefix + i
    long part_base = 0;         // integer partition ids of the baselines: part_base + i
    std::string queue = "bench";
    int batch = 100;
    int dups = 10;
    int payload_bytes = 256;
    double warmup = 2.0;
    double duration = 8.0;
    uint64_t seed = 42;
    bool header = false;
    bool seg_window = false;    // push_segment takes p_window: send the partition's window
    std::string latency_out;    // --latency-out: every timed call's completion and latency
};

// Print usage and exit.
[[noreturn]] void usage(const char* msg) {
    if (msg) std::fprintf(stderr, "queenbench: %s\n", msg);
    std::fprintf(stderr,
                 "usage: queenbench --variant plain|onconflict|plref|push|seg_full|seg_vouch\n"
                 "  [--conninfo STR] [--clients N] [--partitions N] [--prefix STR] [--part-base N]\n"
                 "  [--queue STR] [--batch N] [--dups N] [--payload-bytes N] [--warmup S]\n"
                 "  [--duration S] [--seed N] [--label STR] [--seg-window] [--header]\n"
                 "  [--latency-out FILE]\n");
    std::exit(1);
}

// Parse the command line into Options.
Options parse_args(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (a == "--header") {
            o.header = true;
            continue;
        }
        if (a == "--seg-window") {
            o.seg_window = true;
            continue;
        }
        if (i + 1 >= argc) usage(("missing value for " + a).c_str());
        std::string v = argv[++i];
        if (a == "--conninfo") o.conninfo = v;
        else if (a == "--variant") o.variant_name = v;
        else if (a == "--label") o.label = v;
        else if (a == "--clients") o.clients = std::stoi(v);
        else if (a == "--partitions") o.partitions = std::stoi(v);
        else if (a == "--prefix") o.prefix = v;
        else if (a == "--part-base") o.part_base = std::stol(v);
        else if (a == "--queue") o.queue = v;
        else if (a == "--batch") o.batch = std::stoi(v);
        else if (a == "--dups") o.dups = std::stoi(v);
        else if (a == "--payload-bytes") o.payload_bytes = std::stoi(v);
        else if (a == "--warmup") o.warmup = std::stod(v);
        else if (a == "--duration") o.duration = std::stod(v);
        else if (a == "--seed") o.seed = std::stoull(v);
        else if (a == "--latency-out") o.latency_out = v;
        else usage(("unknown option " + a).c_str());
    }
    static const std::pair<const char*, Variant> names[] = {
        {"plain", Variant::Plain},  {"onconflict", Variant::OnConflict},
        {"plref", Variant::PlRef},  {"push", Variant::Push},
        {"seg_full", Variant::SegFull}, {"seg_vouch", Variant::SegVouch}};
    bool found = false;
    for (auto& [n, v] : names)
        if (o.variant_name == n) {
            o.variant = v;
            found = true;
        }
    if (!found) usage("unknown variant");
    if (o.label.empty()) o.label = o.variant_name;
    if (o.clients < 1 || o.partitions < o.clients) usage("need 1 <= clients <= partitions");
    if (o.batch < 1 || o.dups < 0 || o.dups >= o.batch) usage("need 0 <= dups < batch");
    if (o.payload_bytes < 64) usage("payload-bytes must be >= 64");
    return o;
}

// Busy and total jiffies of the whole machine, from /proc/stat.
std::pair<uint64_t, uint64_t> machine_jiffies() {
    std::ifstream f("/proc/stat");
    std::string cpu;
    uint64_t v[8] = {0};
    f >> cpu >> v[0] >> v[1] >> v[2] >> v[3] >> v[4] >> v[5] >> v[6] >> v[7];
    uint64_t total = 0;
    for (uint64_t x : v) total += x;
    uint64_t idle = v[3] + v[4];
    return {total - idle, total};
}

// CPU seconds this process used so far (all threads).
double process_cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// A JSON object of exactly `bytes` bytes that looks like an order event; k varies the content.
std::string make_payload(int bytes, int thread, int k, std::mt19937_64& rng) {
    char head[256];
    std::snprintf(head, sizeof head,
                  "{\"event\":\"order.created\",\"orderId\":\"ord-%d-%06d\",\"customer\":{\"id\":%d,"
                  "\"tier\":\"gold\"},\"amount\":%d.%02d,\"currency\":\"EUR\",\"lines\":[{\"sku\":"
                  "\"SKU-%05d\",\"qty\":%d}],\"note\":\"",
                  thread, k, static_cast<int>(rng() % 100000), static_cast<int>(rng() % 5000),
                  static_cast<int>(rng() % 100), static_cast<int>(rng() % 100000),
                  static_cast<int>(1 + rng() % 9));
    std::string s = head;
    const std::string tail = "\"}";
    static const char letters[] = "abcdefghijklmnopqrstuvwxyz ";
    while (s.size() + tail.size() < static_cast<std::size_t>(bytes)) s += letters[rng() % 27];
    return s + tail;
}

// One partition as a client thread sees it, with a ring of its recent transactionIds.
struct Part {
    std::string name;
    long int_id = 0;          // baselines' integer id
    int64_t id = 0;           // queen partition id (binary path)
    int64_t last = -1;        // last offset known to this client (exact: no other client pushes here)
    int32_t window = 0;       // the queue's dedup window, sent with a vouch (p_window)
    uint64_t seq = 0;
    std::vector<std::string> hist_txn;
    std::vector<int64_t> hist_off;
    std::size_t hist_head = 0;
};

// One message of a batch.
struct Item {
    std::string txn;
    int payload = 0;          // index into the thread's payload pool
    bool repeat = false;
    int64_t orig_off = -1;    // the original's offset for a repeat (-1 when unknown)
};

// Everything the threads share.
struct Shared {
    Options opt;
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::atomic<bool> failed{false};
    Clock::time_point t_start, t_meas, t_end;
    std::mutex mu;
    // Totals over the timed part, merged by the threads at the end.
    uint64_t pushes = 0, dups_expected = 0, dups_seen = 0, verdict_errors = 0;
    // queen.probe_cache_stats() deltas over the timed part (push variant only).
    bool have_cache = false;
    uint64_t cache[4] = {0, 0, 0, 0};
    std::vector<double> latencies_ms;
    std::vector<std::pair<double, double>> trace;   // --latency-out: (end_s, ms) per call
    std::string error;
};

constexpr std::size_t kHistory = 1000;   // transactionIds remembered per partition (~10 pushes)

// A client thread: connect, prepare, then push until the end of the run.
class Worker {
public:
    Worker(Shared& sh, int t) : sh_(sh), opt_(sh.opt), t_(t), rng_(opt_.seed * 7919 + t) {}

    // The thread body.
    void run() {
        if (!connect_and_prepare()) {
            sh_.ready++;
            return;
        }
        sh_.ready++;
        while (!sh_.go.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        std::size_t next = 0;
        bool want_cache = opt_.variant == Variant::Push, cache_started = false;
        const bool trace_on = !opt_.latency_out.empty();
        uint64_t cache0[4] = {0, 0, 0, 0}, cache1[4] = {0, 0, 0, 0};
        while (!sh_.failed.load()) {
            auto now = Clock::now();
            if (now >= sh_.t_end) break;
            if (want_cache && !cache_started && now >= sh_.t_meas) {
                want_cache = cache_started = read_cache_stats(cache0);
            }
            Part& p = parts_[next++ % parts_.size()];
            auto t0 = Clock::now();
            PushStats st;
            if (!push_once(p, &st)) break;
            auto t1 = Clock::now();
            double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
            if (t1 >= sh_.t_meas && t1 <= sh_.t_end) {
                pushes_++;
                dups_expected_ += st.expected;
                dups_seen_ += st.seen;
                verdict_errors_ += st.errors;
                lat_.push_back(ms);
            }
            if (trace_on && t1 >= sh_.t_meas)
                trace_.emplace_back(std::chrono::duration<double>(t1 - sh_.t_meas).count(), ms);
        }
        bool cache_done = cache_started && !sh_.failed.load() && read_cache_stats(cache1);
        std::lock_guard<std::mutex> g(sh_.mu);
        if (cache_done) {
            sh_.have_cache = true;
            for (int i = 0; i < 4; i++) sh_.cache[i] += cache1[i] - cache0[i];
        }
        sh_.pushes += pushes_;
        sh_.dups_expected += dups_expected_;
        sh_.dups_seen += dups_seen_;
        sh_.verdict_errors += verdict_errors_;
        sh_.latencies_ms.insert(sh_.latencies_ms.end(), lat_.begin(), lat_.end());
        sh_.trace.insert(sh_.trace.end(), trace_.begin(), trace_.end());
    }

    ~Worker() {
        if (conn_) PQfinish(conn_);
    }

private:
    struct PushStats {
        uint64_t expected = 0, seen = 0, errors = 0;
    };

    // hits, confirmed, fallbacks, rows_read of queen.probe_cache_stats(); false if unavailable.
    bool read_cache_stats(uint64_t out[4]) {
        PGresult* r = PQexec(conn_, "SELECT hits, confirmed, fallbacks, rows_read FROM queen.probe_cache_stats()");
        bool ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
        for (int i = 0; ok && i < 4; i++) out[i] = std::strtoull(PQgetvalue(r, 0, i), nullptr, 10);
        PQclear(r);
        return ok;
    }

    // Record a database error and stop every thread.
    void fail(const std::string& what, PGresult* r) {
        std::lock_guard<std::mutex> g(sh_.mu);
        if (sh_.error.empty())
            sh_.error = what + ": " + (r ? PQresultErrorMessage(r) : PQerrorMessage(conn_));
        sh_.failed = true;
    }

    // Open the connection, build the payload pool, prepare the statement, resolve partitions.
    bool connect_and_prepare() {
        conn_ = PQconnectdb(opt_.conninfo.c_str());
        if (PQstatus(conn_) != CONNECTION_OK) {
            fail("connect", nullptr);
            return false;
        }
        for (int k = 0; k < 256; k++) payloads_.push_back(make_payload(opt_.payload_bytes, t_, k, rng_));
        for (int i = t_; i < opt_.partitions; i += opt_.clients) {
            Part p;
            p.name = opt_.prefix + std::to_string(i);
            p.int_id = opt_.part_base + i;
            p.hist_txn.reserve(kHistory);
            p.hist_off.reserve(kHistory);
            parts_.push_back(std::move(p));
        }
        std::string sql;
        int nparams = 0;
        const Oid* types = nullptr;
        static const Oid seg_types[] = {20, 17, 17, 20, 23};   // int8, bytea, bytea, int8, int4
        switch (opt_.variant) {
            case Variant::Plain:
            case Variant::OnConflict: {
                sql = opt_.variant == Variant::Plain ? "INSERT INTO bench.plain_msgs (partition_id, txn, payload) VALUES "
                                                     : "INSERT INTO bench.oc_msgs (partition_id, txn, payload) VALUES ";
                for (int i = 0; i < opt_.batch; i++) {
                    sql += i ? ",($1::int,$" : "($1::int,$";
                    sql += std::to_string(2 + 2 * i) + ",$" + std::to_string(3 + 2 * i) + "::jsonb)";
                }
                if (opt_.variant == Variant::OnConflict) sql += " ON CONFLICT (partition_id, txn) DO NOTHING";
                nparams = 1 + 2 * opt_.batch;
                break;
            }
            case Variant::PlRef:
                sql = "SELECT * FROM plref.push($1::text, $2::text, $3::jsonb)";
                nparams = 3;
                break;
            case Variant::Push:
                sql = "SELECT * FROM queen.push($1::text, $2::text, $3::jsonb)";
                nparams = 3;
                break;
            case Variant::SegFull:
            case Variant::SegVouch:
                sql = opt_.seg_window ? "SELECT * FROM queen.push_segment($1, $2, $3, $4, $5)"
                                      : "SELECT * FROM queen.push_segment($1, $2, $3, $4)";
                nparams = opt_.seg_window ? 5 : 4;
                types = seg_types;
                break;
        }
        PGresult* r = PQprepare(conn_, "push", sql.c_str(), nparams, types);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            fail("prepare", r);
            PQclear(r);
            return false;
        }
        PQclear(r);
        if (opt_.variant == Variant::SegFull || opt_.variant == Variant::SegVouch) {
            for (Part& p : parts_) {
                const char* vals[2] = {opt_.queue.c_str(), p.name.c_str()};
                r = PQexecParams(conn_,
                                 "SELECT partition_id, last_offset, dedup_window_seconds"
                                 "  FROM queen.resolve_partition($1, $2)",
                                 2, nullptr, vals, nullptr, nullptr, 0);
                if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
                    fail("resolve_partition", r);
                    PQclear(r);
                    return false;
                }
                p.id = std::strtoll(PQgetvalue(r, 0, 0), nullptr, 10);
                p.last = std::strtoll(PQgetvalue(r, 0, 1), nullptr, 10);
                p.window = static_cast<int32_t>(std::strtol(PQgetvalue(r, 0, 2), nullptr, 10));
                PQclear(r);
            }
        }
        return true;
    }

    // The next batch for partition p: fresh transactionIds plus repeats from its history.
    void make_batch(Part& p, std::vector<Item>* items) {
        items->assign(opt_.batch, Item());
        int want = opt_.dups;
        std::size_t hsize = p.hist_txn.size();
        int d = static_cast<int>(std::min<std::size_t>(want, hsize));
        // Positions of the repeats: a partial Fisher-Yates over the batch positions.
        pos_.resize(opt_.batch);
        for (int i = 0; i < opt_.batch; i++) pos_[i] = i;
        for (int i = 0; i < d; i++) std::swap(pos_[i], pos_[i + rng_() % (opt_.batch - i)]);
        // Which history entries: distinct, by rejection (d is tiny next to the history).
        picked_.clear();
        while (static_cast<int>(picked_.size()) < d) {
            std::size_t h = rng_() % hsize;
            if (std::find(picked_.begin(), picked_.end(), h) == picked_.end()) picked_.push_back(h);
        }
        for (int i = 0; i < d; i++) {
            Item& it = (*items)[pos_[i]];
            it.txn = p.hist_txn[picked_[i]];
            it.orig_off = p.hist_off[picked_[i]];
            it.repeat = true;
        }
        char buf[64];
        for (Item& it : *items) {
            it.payload = static_cast<int>(p.seq % payloads_.size());
            if (it.repeat) continue;
            // 36 characters, shaped like a UUID: client, partition, sequence.
            std::snprintf(buf, sizeof buf, "%08" PRIx64 "-%04x-%04x-%04x-%012" PRIx64, opt_.seed & 0xffffffffu,
                          t_ & 0xffff, static_cast<unsigned>(p.int_id & 0xffff), 0x7000u, p.seq);
            it.txn = buf;
            p.seq++;
        }
    }

    // Remember the fresh items of a batch (with their offsets when known).
    static void remember(Part& p, const std::vector<Item>& items, const std::vector<int64_t>& offs) {
        for (std::size_t i = 0; i < items.size(); i++) {
            if (items[i].repeat) continue;
            int64_t off = offs.empty() ? -1 : offs[i];
            if (p.hist_txn.size() < kHistory) {
                p.hist_txn.push_back(items[i].txn);
                p.hist_off.push_back(off);
            } else {
                p.hist_txn[p.hist_head] = items[i].txn;
                p.hist_off[p.hist_head] = off;
                p.hist_head = (p.hist_head + 1) % kHistory;
            }
        }
    }

    // The items as a JSON array for queen.push / plref.push.
    std::string items_json(const std::vector<Item>& items) const {
        std::string s;
        s.reserve(items.size() * (opt_.payload_bytes + 64));
        s += '[';
        for (std::size_t i = 0; i < items.size(); i++) {
            if (i) s += ',';
            s += "{\"transactionId\":\"";
            s += items[i].txn;
            s += "\",\"payload\":";
            s += payloads_[items[i].payload];
            s += '}';
        }
        s += ']';
        return s;
    }

    // Check an answer of one row per item (status, message_offset) against what was sent.
    void check_answer(PGresult* r, const std::vector<Item>& items, PushStats* st, std::vector<int64_t>* offs) {
        int n = PQntuples(r);
        int cs = PQfnumber(r, "status"), co = PQfnumber(r, "message_offset");
        offs->assign(items.size(), -1);
        if (n != static_cast<int>(items.size()) || cs < 0 || co < 0) {
            st->errors += items.size();
            return;
        }
        int64_t expect_next = -1;
        for (int i = 0; i < n; i++) {
            bool dup = std::strcmp(PQgetvalue(r, i, cs), "duplicate") == 0;
            int64_t off = PQgetisnull(r, i, co) ? -2 : std::strtoll(PQgetvalue(r, i, co), nullptr, 10);
            (*offs)[i] = off;
            const Item& it = items[i];
            if (it.repeat) st->expected++;
            if (dup) st->seen++;
            if (it.repeat) {
                if (!dup || (it.orig_off >= 0 && off != it.orig_off)) st->errors++;
            } else {
                if (dup) {
                    st->errors++;
                    continue;
                }
                if (expect_next >= 0 && off != expect_next) st->errors++;
                expect_next = off + 1;
            }
        }
    }

    // One push of one batch to partition p, in its own transaction; false on a database error.
    bool push_once(Part& p, PushStats* st) {
        make_batch(p, &items_);
        PGresult* r = nullptr;
        std::vector<int64_t> offs;
        switch (opt_.variant) {
            case Variant::Plain:
            case Variant::OnConflict: {
                std::string pid = std::to_string(p.int_id);
                vals_.assign(1 + 2 * items_.size(), nullptr);
                vals_[0] = pid.c_str();
                for (std::size_t i = 0; i < items_.size(); i++) {
                    vals_[1 + 2 * i] = items_[i].txn.c_str();
                    vals_[2 + 2 * i] = payloads_[items_[i].payload].c_str();
                }
                r = PQexecPrepared(conn_, "push", static_cast<int>(vals_.size()), vals_.data(), nullptr, nullptr, 0);
                if (PQresultStatus(r) != PGRES_COMMAND_OK) break;
                uint64_t inserted = std::strtoull(PQcmdTuples(r), nullptr, 10);
                uint64_t repeats = 0;
                for (const Item& it : items_) repeats += it.repeat;
                st->expected = repeats;
                st->seen = items_.size() - inserted;
                if (st->seen != (opt_.variant == Variant::Plain ? 0 : repeats)) st->errors++;
                PQclear(r);
                remember(p, items_, offs);
                return true;
            }
            case Variant::PlRef:
            case Variant::Push: {
                std::string json = items_json(items_);
                const char* vals[3] = {opt_.queue.c_str(), p.name.c_str(), json.c_str()};
                r = PQexecPrepared(conn_, "push", 3, vals, nullptr, nullptr, 0);
                if (PQresultStatus(r) != PGRES_TUPLES_OK) break;
                check_answer(r, items_, st, &offs);
                PQclear(r);
                remember(p, items_, offs);
                return true;
            }
            case Variant::SegFull:
            case Variant::SegVouch: {
                queen::SegmentBuilder sb;
                std::string hashes;
                hashes.reserve(items_.size() * queen::kHashBytes);
                int64_t lowest_orig = INT64_MAX;
                for (const Item& it : items_) {
                    queen::MessageView m{gen_.next(), queen::ContentType::Json, it.txn, payloads_[it.payload]};
                    sb.add(m);
                    queen::Hash128 h = queen::txn_hash(it.txn);
                    hashes.append(reinterpret_cast<const char*>(h.b), queen::kHashBytes);
                    if (it.repeat) lowest_orig = std::min(lowest_orig, it.orig_off);
                }
                const std::string& seg = sb.finish();
                int64_t verified = -1;
                if (opt_.variant == Variant::SegVouch)
                    verified = lowest_orig == INT64_MAX ? p.last : std::max<int64_t>(-1, lowest_orig - 1);
                uint64_t be_id = to_be64(static_cast<uint64_t>(p.id));
                uint64_t be_ver = to_be64(static_cast<uint64_t>(verified));
                uint32_t w = static_cast<uint32_t>(p.window);
                unsigned char be_win[4] = {static_cast<unsigned char>(w >> 24), static_cast<unsigned char>(w >> 16),
                                           static_cast<unsigned char>(w >> 8), static_cast<unsigned char>(w)};
                // The vouch names the window it was made for; the full probe sends none.
                const char* vals[5] = {reinterpret_cast<const char*>(&be_id), hashes.data(), seg.data(),
                                       reinterpret_cast<const char*>(&be_ver),
                                       verified >= 0 ? reinterpret_cast<const char*>(be_win) : nullptr};
                int lens[5] = {8, static_cast<int>(hashes.size()), static_cast<int>(seg.size()), 8, 4};
                int fmts[5] = {1, 1, 1, 1, 1};
                r = PQexecPrepared(conn_, "push", opt_.seg_window ? 5 : 4, vals, lens, fmts, 0);
                if (PQresultStatus(r) != PGRES_TUPLES_OK) break;
                check_answer(r, items_, st, &offs);
                for (std::size_t i = 0; i < items_.size(); i++)
                    if (!items_[i].repeat && offs[i] > p.last) p.last = offs[i];
                PQclear(r);
                remember(p, items_, offs);
                return true;
            }
        }
        fail("push (" + opt_.variant_name + ")", r);
        PQclear(r);
        return false;
    }

    // Host to network order for a binary int8 parameter.
    static uint64_t to_be64(uint64_t v) {
        uint64_t out;
        unsigned char* b = reinterpret_cast<unsigned char*>(&out);
        for (int i = 7; i >= 0; i--) {
            b[i] = static_cast<unsigned char>(v);
            v >>= 8;
        }
        return out;
    }

    Shared& sh_;
    const Options& opt_;
    int t_;
    std::mt19937_64 rng_;
    queen::UuidV7Generator gen_;
    PGconn* conn_ = nullptr;
    std::vector<std::string> payloads_;
    std::vector<Part> parts_;
    std::vector<Item> items_;
    std::vector<const char*> vals_;
    std::vector<int> pos_;
    std::vector<std::size_t> picked_;
    uint64_t pushes_ = 0, dups_expected_ = 0, dups_seen_ = 0, verdict_errors_ = 0;
    std::vector<double> lat_;
    std::vector<std::pair<double, double>> trace_;
};

// The q-quantile of a sample (sorted in place).
double quantile(std::vector<double>& v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    std::size_t i = static_cast<std::size_t>(q * (v.size() - 1) + 0.5);
    return v[std::min(i, v.size() - 1)];
}

}  // namespace

// Run one measurement and print its CSV line.
int main(int argc, char** argv) {
    Shared sh;
    sh.opt = parse_args(argc, argv);
    const Options& o = sh.opt;
    if (o.header) {
        std::printf("%s\n", kCsvHeader);
        return 0;
    }
    std::vector<std::unique_ptr<Worker>> workers;
    std::vector<std::thread> threads;
    for (int t = 0; t < o.clients; t++) workers.emplace_back(new Worker(sh, t));
    for (int t = 0; t < o.clients; t++) threads.emplace_back([&, t] { workers[t]->run(); });
    while (sh.ready.load() < o.clients) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (!sh.failed.load()) {
        sh.t_start = Clock::now();
        sh.t_meas = sh.t_start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.warmup));
        sh.t_end = sh.t_meas + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.duration));
        sh.go = true;
        std::this_thread::sleep_until(sh.t_meas);
    }
    double cpu0 = process_cpu_seconds();
    auto m0 = machine_jiffies();
    if (!sh.failed.load()) std::this_thread::sleep_until(sh.t_end);
    double cpu1 = process_cpu_seconds();
    auto m1 = machine_jiffies();
    sh.go = true;
    for (auto& th : threads) th.join();
    if (sh.failed.load()) {
        std::fprintf(stderr, "queenbench: %s\n", sh.error.c_str());
        return 2;
    }
    double secs = o.duration;
    uint64_t msgs = sh.pushes * static_cast<uint64_t>(o.batch);
    double busy = m1.second > m0.second ? 100.0 * (m1.first - m0.first) / (m1.second - m0.second) : 0;
    double ncpu = static_cast<double>(sysconf(_SC_NPROCESSORS_ONLN));
    double client_pct = 100.0 * (cpu1 - cpu0) / secs / ncpu;
    if (!o.latency_out.empty()) {
        std::sort(sh.trace.begin(), sh.trace.end());
        FILE* f = std::fopen(o.latency_out.c_str(), "w");
        if (!f) {
            std::fprintf(stderr, "queenbench: cannot write %s\n", o.latency_out.c_str());
            return 2;
        }
        std::fprintf(f, "end_s,ms\n");
        for (const auto& e : sh.trace) std::fprintf(f, "%.6f,%.3f\n", e.first, e.second);
        if (std::fclose(f) != 0) {
            std::fprintf(stderr, "queenbench: cannot write %s\n", o.latency_out.c_str());
            return 2;
        }
    }
    double p50 = quantile(sh.latencies_ms, 0.5), p99 = quantile(sh.latencies_ms, 0.99);
    std::string cache = ",,,";
    if (sh.have_cache) {
        char buf[128];
        std::snprintf(buf, sizeof buf, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, sh.cache[0], sh.cache[1],
                      sh.cache[2], sh.cache[3]);
        cache = buf;
    }
    std::printf("%s,%d,%d,%d,%d,%" PRIu64 ",%" PRIu64 ",%.2f,%.0f,%.2f,%.2f,%" PRIu64 ",%" PRIu64 ",%" PRIu64
                ",%.1f,%.1f,%s\n",
                o.label.c_str(), o.clients, o.partitions, o.batch, o.dups, sh.pushes, msgs, secs,
                msgs / secs, p50, p99, sh.dups_expected, sh.dups_seen, sh.verdict_errors, client_pct, busy,
                cache.c_str());
    return 0;
}
