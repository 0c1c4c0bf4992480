// queen-sidecar-cache-memory: what the block cache really holds, measured from the process.
// Fills a BlockCache through its real paths (first contact, then commits of 100 hashes) with
// --partitions x --hashes-per hashes and prints, as key=value pairs: the cache's own figure
// (resident_bytes), the allocator's (mallinfo2: in-use chunks + mmapped blocks) and the
// resident set (/proc/self/statm) grown meanwhile, each per resident hash. A measurement, not a
// test (tests/sidecar/test_cache_ops.cpp holds the checked bound).
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "push/block_cache.h"

using namespace queen::sidecar;

namespace {
// A loader with nothing in any window: every partition is new.
class EmptyLoader final : public CacheLoader {
public:
    Status load_window(int64_t, int64_t, int64_t* last, std::vector<TxnRow>*) override {
        *last = -1;
        return Status::ok();
    }
    Status load_range(int64_t, int64_t, int64_t, std::vector<TxnRow>*) override {
        return Status::ok();
    }
};

// Resident set size in bytes.
int64_t rss_bytes() {
    std::ifstream f("/proc/self/statm");
    long long size = 0, res = 0;
    f >> size >> res;
    return static_cast<int64_t>(res) * sysconf(_SC_PAGESIZE);
}

// In-use bytes according to glibc.
int64_t malloc_bytes() {
    struct mallinfo2 mi = mallinfo2();
    return static_cast<int64_t>(mi.uordblks + mi.hblkhd);
}
}  // namespace

// --partitions P --hashes-per H [--budget-mb M]
int main(int argc, char** argv) {
    int64_t parts = 10, per = 1000000, budget_mb = 16384;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--partitions")) parts = std::atoll(argv[i + 1]);
        if (!std::strcmp(argv[i], "--hashes-per")) per = std::atoll(argv[i + 1]);
        if (!std::strcmp(argv[i], "--budget-mb")) budget_mb = std::atoll(argv[i + 1]);
    }
    ManualClock clock;
    CacheConfig cfg = cache_config(Settings());
    cfg.budget_bytes = budget_mb << 20;
    malloc_trim(0);
    const int64_t rss0 = rss_bytes(), mal0 = malloc_bytes();
    auto t0 = std::chrono::steady_clock::now();
    {
        BlockCache cache(cfg, clock);
        EmptyLoader loader;
        std::vector<queen::Hash128> hs;
        uint64_t n = 0;
        for (int64_t p = 1; p <= parts; p++) {
            PartitionMeta m;
            m.pid = p;
            m.window_s = 3600;
            queen::Hash128 probe = queen::txn_hash("probe");
            cache.verified_for(m, &probe, 1, loader);
            for (int64_t done = 0; done < per;) {
                const int64_t k = std::min<int64_t>(100, per - done);
                hs.clear();
                for (int64_t i = 0; i < k; i++) hs.push_back(queen::txn_hash(std::to_string(n++)));
                cache.on_commit(p, done, hs.data(), hs.size(), 1700000000000);
                done += k;
            }
        }
        const double secs =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const int64_t hashes = cache.resident_hashes();
        const int64_t counted = cache.resident_bytes();
        const int64_t mal = malloc_bytes() - mal0, rss = rss_bytes() - rss0;
        std::printf(
            "partitions=%lld hashes_per=%lld resident_hashes=%lld counted_bytes=%lld "
            "malloc_bytes=%lld rss_bytes=%lld counted_per_hash=%.2f malloc_per_hash=%.2f "
            "rss_per_hash=%.2f counted_over_malloc=%.3f fill_seconds=%.2f\n",
            static_cast<long long>(parts), static_cast<long long>(per),
            static_cast<long long>(hashes), static_cast<long long>(counted),
            static_cast<long long>(mal), static_cast<long long>(rss),
            static_cast<double>(counted) / static_cast<double>(hashes),
            static_cast<double>(mal) / static_cast<double>(hashes),
            static_cast<double>(rss) / static_cast<double>(hashes),
            static_cast<double>(counted) / static_cast<double>(mal), secs);
    }
    return 0;
}
