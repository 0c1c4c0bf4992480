// The partition metadata memo (byte-bounded LRU with a TTL) and the flusher's batch resolution
// of memo misses (one resolve_partitions call per flush, a bad name failing alone).
#include <gtest/gtest.h>
#include <malloc.h>

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "fake_store.h"
#include "malloc_probe.h"
#include "push/flusher.h"
#include "push/partition_memo.h"
#include "push/push_request.h"

namespace queen::sidecar {
namespace {

using testing::FakeBackend;
using testing::FakeStore;

PartitionMeta meta_of(int64_t pid) {
    PartitionMeta m;
    m.pid = pid;
    m.window_s = 60;
    m.last_offset = pid * 10;
    return m;
}

std::string key_of(int i) { return "queue-name\x1fpartition-" + std::to_string(i); }

TEST(PartitionMemo, AnswersFreshEntriesAndExpiresThemAfterTheTtl) {
    PartitionMemo memo(1 << 20, 30000);
    PartitionMeta m;
    EXPECT_FALSE(memo.get("q\x1fp", 0, &m));
    memo.put("q\x1fp", meta_of(7), 1000);
    ASSERT_TRUE(memo.get("q\x1fp", 30999, &m));
    EXPECT_EQ(m.pid, 7);
    EXPECT_EQ(m.last_offset, 70);
    EXPECT_FALSE(memo.get("q\x1fp", 31000, &m)) << "30 s old: resolved again";
    memo.put("q\x1fp", meta_of(8), 31000);  // a refresh replaces, never duplicates
    ASSERT_TRUE(memo.get("q\x1fp", 31001, &m));
    EXPECT_EQ(m.pid, 8);
    EXPECT_EQ(memo.size(), 1u);
}

TEST(PartitionMemo, EvictsTheLeastRecentlyUsedOverItsBudget) {
    const int64_t per = PartitionMemo::entry_bytes(key_of(0).size());
    // Room for about 100 entries beside the bucket array.
    PartitionMemo memo(per * 100 + 4096, 1 << 30);
    for (int i = 0; i < 100; i++) memo.put(key_of(i), meta_of(i), 0);
    ASSERT_LE(memo.bytes(), memo.budget_bytes());
    PartitionMeta m;
    ASSERT_TRUE(memo.get(key_of(0), 1, &m));  // 0 becomes the most recently used
    for (int i = 100; i < 300; i++) {
        memo.put(key_of(i), meta_of(i), 2);
        EXPECT_LE(memo.bytes(), memo.budget_bytes()) << "after inserting " << i;
    }
    EXPECT_GT(memo.evictions(), 100u);
    EXPECT_FALSE(memo.get(key_of(1), 3, &m)) << "the least recently used went first";
    EXPECT_TRUE(memo.get(key_of(299), 3, &m)) << "the newest stays";
    // 0 was touched before 200 newer entries arrived: gone by now; 250..299 are all there.
    for (int i = 250; i < 300; i++) EXPECT_TRUE(memo.get(key_of(i), 3, &m)) << i;
    memo.clear();
    EXPECT_EQ(memo.size(), 0u);
    EXPECT_EQ(memo.bytes(), 0);
}

TEST(PartitionMemo, AnEntryLargerThanTheBudgetStillServesItsFlush) {
    PartitionMemo memo(64, 1 << 30);
    memo.put(key_of(1), meta_of(1), 0);
    PartitionMeta m;
    EXPECT_TRUE(memo.get(key_of(1), 0, &m));
    memo.put(key_of(2), meta_of(2), 0);
    EXPECT_FALSE(memo.get(key_of(1), 0, &m));
    EXPECT_EQ(memo.size(), 1u);
}

using testing::allocated_bytes;
using testing::kSanitized;

// The memo's charge against what glibc really handed out, for short (inline) and long keys.
void expect_honest_charge(const std::string& prefix) {
    if (kSanitized) GTEST_SKIP() << "mallinfo2 is meaningless under a sanitizer";
    const int64_t before = allocated_bytes();
    auto memo = std::make_unique<PartitionMemo>(int64_t(1) << 40, 1 << 30);
    const int64_t with_object = allocated_bytes();
    for (int i = 0; i < 200000; i++) memo->put(prefix + std::to_string(i), meta_of(i), 0);
    const int64_t grown = allocated_bytes() - with_object;
    const double ratio = static_cast<double>(memo->bytes()) / static_cast<double>(grown);
    EXPECT_GT(ratio, 0.97) << "charged " << memo->bytes() << " B, malloc grew " << grown << " B";
    EXPECT_LT(ratio, 1.03) << "charged " << memo->bytes() << " B, malloc grew " << grown << " B";
    memo.reset();
    EXPECT_LT(allocated_bytes() - before, 4096) << "everything is given back";
}

TEST(PartitionMemo, ChargeMatchesTheAllocatorShortKeys) { expect_honest_charge("q\x1fp"); }
TEST(PartitionMemo, ChargeMatchesTheAllocatorLongKeys) {
    expect_honest_charge("a-rather-long-queue-name\x1f" "tenant-partition-");
}

// A backend over the fake store that counts batch calls and refuses one partition name like
// the extension refuses bad input (22023), failing the whole batch that names it.
class BatchBackend final : public PushStore {
public:
    explicit BatchBackend(FakeStore& s) : inner_(s) {}
    Status resolve_partition(std::string_view q, std::string_view p, PartitionMeta* out) override {
        if (p == "bad") return Status(StatusCode::BadRequest, "partition refused", "22023");
        return inner_.resolve_partition(q, p, out);
    }
    Status resolve_partitions(const std::vector<PartitionName>& names,
                              std::vector<PartitionMeta>* out) override {
        batches++;
        batch_sizes.push_back(names.size());
        return PushStore::resolve_partitions(names, out);  // all or nothing, like one statement
    }
    Status push_segments(const std::vector<SegmentIn>& segs,
                         std::vector<std::vector<EntryOut>>* out) override {
        pushes++;
        return inner_.push_segments(segs, out);
    }
    Status push_segments_named(const std::vector<SegmentIn>& segs,
                               const std::vector<PartitionName>& names,
                               std::vector<std::vector<EntryOut>>* out,
                               std::vector<PartitionMeta>* metas) override {
        named_pushes++;
        for (std::size_t i = 0; i < segs.size(); i++)
            if (segs[i].pid < 0 && names[i].partition == "bad")
                return Status(StatusCode::BadRequest, "partition refused", "22023");
        return inner_.push_segments_named(segs, names, out, metas);
    }
    Status load_window(int64_t pid, int64_t w, int64_t* last, std::vector<TxnRow>* rows) override {
        return inner_.load_window(pid, w, last, rows);
    }
    Status load_range(int64_t pid, int64_t lo, int64_t hi, std::vector<TxnRow>* rows) override {
        return inner_.load_range(pid, lo, hi, rows);
    }
    Status find_ids(int64_t pid, int64_t after, const std::vector<queen::Uuid>& ids,
                    std::vector<int64_t>* offs) override {
        return inner_.find_ids(pid, after, ids, offs);
    }
    int batches = 0, pushes = 0, named_pushes = 0;
    std::vector<std::size_t> batch_sizes;

private:
    FakeBackend inner_;
};

// A flusher over the fake store through a BatchBackend, driven by run_once.
struct Rig {
    explicit Rig(const FlusherConfig& fc = flusher_config(Settings()))
        : store(clock), backend(store), cache(cache_config(Settings()), clock),
          flusher(fc, {}, cache, metrics, clock) {}
    std::tuple<FakeStore&, BatchBackend&, Metrics&, Flusher&> parts() {
        return {store, backend, metrics, flusher};
    }
    ManualClock clock;
    FakeStore store;
    BatchBackend backend;
    Metrics metrics;
    BlockCache cache;
    Flusher flusher;
};

struct Answered {
    std::vector<ItemAnswer> answers;
    bool done = false;
};

// One single-item job to (queue, partition); its answers land in *a.
// With twice = true the request carries the item twice (a layer-1 follower: its handling
// depends on the window, so the partition is resolved before the push).
std::shared_ptr<PushJob> job_for(const std::string& q, const std::string& p,
                                 queen::UuidV7Generator& gen, Answered* a, bool twice = false) {
    auto job = std::make_shared<PushJob>();
    PushItem it;
    it.queue = q;
    it.partition = p;
    it.id = gen.next(1700000000000);
    it.txn = queen::uuid_to_string(it.id);
    it.payload = "{\"n\":1}";
    it.hash = queen::txn_hash(it.txn);
    job->req.items.push_back(it);
    if (twice) {
        it.id = gen.next(1700000000000);
        job->req.items.push_back(it);
    }
    apply_layer1(&job->req);
    job->done = [a](PushJob& j) {
        a->answers = j.answers;
        a->done = true;
    };
    return job;
}

TEST(FlusherResolution, FirstContactsAreFoldedIntoThePush) {
    Rig rig;
    auto [store, backend, metrics, flusher] = rig.parts();
    queen::UuidV7Generator gen(1);
    std::vector<Answered> a(40);
    for (int i = 0; i < 40; i++) flusher.submit(job_for("q", "p" + std::to_string(i), gen, &a[i]));
    ASSERT_TRUE(flusher.run_once(backend));
    EXPECT_EQ(backend.batches, 0) << "nothing resolved before the push";
    EXPECT_EQ(backend.named_pushes, 1) << "40 new partitions, one statement";
    EXPECT_EQ(backend.pushes, 0);
    for (int i = 0; i < 40; i++) {
        ASSERT_TRUE(a[i].done) << i;
        EXPECT_FALSE(a[i].answers[0].failed) << i;
        EXPECT_EQ(a[i].answers[0].status, EntryStatus::Queued) << i;
        EXPECT_EQ(a[i].answers[0].offset, 0) << i;
    }
    EXPECT_EQ(metrics.partitions_resolved.load(), 40u);
    EXPECT_EQ(metrics.memo_entries.load(), 40);
    EXPECT_EQ(metrics.memo_bytes.load(), flusher.memo().bytes());
    // Memoised from the push's answer (last_offset 0 now): the next flush resolves nothing;
    // met once so far, the partitions are not hydrated for it: one named call naming none
    // (unvouched, no probe cache). The third is a plain push, the cache hydrating and
    // vouching from then on.
    std::vector<Answered> b(40), b3(40);
    for (int i = 0; i < 40; i++) flusher.submit(job_for("q", "p" + std::to_string(i), gen, &b[i]));
    while (flusher.run_once(backend)) {
    }
    EXPECT_EQ(backend.batches, 0);
    EXPECT_EQ(backend.named_pushes, 2);
    EXPECT_EQ(backend.pushes, 0);
    EXPECT_EQ(rig.cache.hydrations(), 0u);
    for (int i = 0; i < 40; i++) EXPECT_EQ(b[i].answers[0].offset, 1) << i;
    const int64_t vouched = store.vouched_pushes;
    for (int i = 0; i < 40; i++) flusher.submit(job_for("q", "p" + std::to_string(i), gen, &b3[i]));
    while (flusher.run_once(backend)) {
    }
    EXPECT_EQ(backend.named_pushes, 2);
    EXPECT_EQ(backend.pushes, 1);
    EXPECT_EQ(store.vouched_pushes - vouched, 40);
    for (int i = 0; i < 40; i++) EXPECT_EQ(b3[i].answers[0].offset, 2) << i;
    EXPECT_EQ(store.unsound_vouches, 0);
    // A repeat of the first message of p0 is answered with its original.
    Answered again;
    auto dup = job_for("q", "p0", gen, &again);
    dup->req.items[0].txn = queen::uuid_to_string(a[0].answers[0].id);
    dup->req.items[0].hash = queen::txn_hash(dup->req.items[0].txn);
    flusher.submit(dup);
    while (flusher.run_once(backend)) {
    }
    ASSERT_TRUE(again.done);
    EXPECT_EQ(again.answers[0].status, EntryStatus::Duplicate);
    EXPECT_EQ(again.answers[0].offset, 0);
}

TEST(FlusherResolution, WindowDependentMissesAreResolvedInOneCall) {
    Rig rig;
    auto [store, backend, metrics, flusher] = rig.parts();
    queen::UuidV7Generator gen(5);
    std::vector<Answered> a(30);
    for (int i = 0; i < 30; i++)
        flusher.submit(job_for("q", "p" + std::to_string(i), gen, &a[i], /*twice=*/i % 3 == 0));
    ASSERT_TRUE(flusher.run_once(backend));
    ASSERT_EQ(backend.batch_sizes.size(), 1u);
    EXPECT_EQ(backend.batch_sizes[0], 10u) << "the 10 partitions with a layer-1 follower";
    EXPECT_EQ(backend.named_pushes, 1) << "the other 20 named inside the one push";
    for (int i = 0; i < 30; i++) {
        ASSERT_TRUE(a[i].done) << i;
        EXPECT_FALSE(a[i].answers[0].failed) << i;
        EXPECT_EQ(a[i].answers[0].status, EntryStatus::Queued) << i;
        if (i % 3 == 0) {
            EXPECT_EQ(a[i].answers[1].status, EntryStatus::Duplicate) << i;
            EXPECT_EQ(a[i].answers[1].offset, 0) << i;
        }
    }
}

TEST(FlusherResolution, ABadNameInTheBatchFailsAlone) {
    Rig rig;
    auto [store, backend, metrics, flusher] = rig.parts();
    queen::UuidV7Generator gen(2);
    const char* parts[] = {"a", "b", "bad", "c", "d"};
    for (bool twice : {true, false}) {  // resolved before the push / named inside it
        std::vector<Answered> a(5);
        const std::string q = twice ? "q1" : "q2";
        for (int i = 0; i < 5; i++) flusher.submit(job_for(q, parts[i], gen, &a[i], twice));
        while (flusher.run_once(backend)) {
        }
        for (int i = 0; i < 5; i++) {
            ASSERT_TRUE(a[i].done) << i;
            if (i == 2) {
                EXPECT_TRUE(a[i].answers[0].failed);
                EXPECT_EQ(a[i].answers[0].error.code(), StatusCode::BadRequest);
                EXPECT_EQ(a[i].answers[0].error.sqlstate(), "22023");
            } else {
                EXPECT_FALSE(a[i].answers[0].failed) << parts[i] << " twice=" << twice;
                EXPECT_EQ(a[i].answers[0].status, EntryStatus::Queued) << parts[i];
            }
        }
        if (twice) {
            EXPECT_EQ(backend.batches, 6) << "the refused batch, then one per partition";
        }
    }
}

TEST(FlusherResolution, ALostAnswerOfANamedPushIsLookedUp) {
    FlusherConfig fc = flusher_config(Settings());
    fc.resolve_retry_ms = 0;
    Rig rig(fc);
    auto [store, backend, metrics, flusher] = rig.parts();
    queen::UuidV7Generator gen(6);
    for (int lose_after : {1, 0}) {
        const std::string q = "lost" + std::to_string(lose_after);
        store.lose_after_commit = lose_after;
        store.lose_before_commit = 1 - lose_after;
        std::vector<Answered> a(3);
        for (int i = 0; i < 3; i++) flusher.submit(job_for(q, "p" + std::to_string(i), gen, &a[i]));
        while (flusher.run_once(backend)) {
        }
        for (int i = 0; i < 3; i++) {
            ASSERT_TRUE(a[i].done);
            EXPECT_FALSE(a[i].answers[0].failed) << "lose_after=" << lose_after;
            EXPECT_EQ(a[i].answers[0].status, EntryStatus::Queued);
            EXPECT_EQ(a[i].answers[0].offset, 0) << "stored once";
        }
        PartitionMeta m;
        for (int i = 0; i < 3; i++) {
            ASSERT_TRUE(store.resolve(q, "p" + std::to_string(i), &m).is_ok());
            EXPECT_EQ(m.last_offset, 0) << "written once";
        }
    }
}

TEST(FlusherResolution, PostgreSQLDownFailsTheMissesWithAPassingReason) {
    Rig rig;
    auto [store, backend, metrics, flusher] = rig.parts();
    queen::UuidV7Generator gen(3);
    store.down = true;
    for (bool twice : {true, false}) {
        std::vector<Answered> a(3);
        for (int i = 0; i < 3; i++)
            flusher.submit(job_for("q", "p" + std::to_string(i), gen, &a[i], twice));
        ASSERT_TRUE(flusher.run_once(backend));
        for (int i = 0; i < 3; i++) {
            ASSERT_TRUE(a[i].done);
            EXPECT_TRUE(a[i].answers[0].failed);
            EXPECT_EQ(a[i].answers[0].error.code(), StatusCode::Unavailable);
        }
    }
    EXPECT_EQ(backend.batches, 1) << "not split: splitting cannot help";
    EXPECT_EQ(backend.named_pushes, 1);
}

TEST(FlusherResolution, TheMemoStaysWithinItsBudgetOverManyPartitions) {
    FlusherConfig fc = flusher_config(Settings());
    fc.memo_bytes = 64 << 10;
    Rig rig(fc);
    auto [store, backend, metrics, flusher] = rig.parts();
    queen::UuidV7Generator gen(4);
    std::vector<Answered> a(5000);
    for (int i = 0; i < 5000; i++) {
        flusher.submit(job_for("q", "p" + std::to_string(i), gen, &a[i]));
        if (i % 64 == 63) {
            while (flusher.run_once(backend)) {
            }
            ASSERT_LE(flusher.memo().bytes(), fc.memo_bytes) << i;
        }
    }
    while (flusher.run_once(backend)) {
    }
    EXPECT_LE(flusher.memo().bytes(), fc.memo_bytes);
    EXPECT_GT(flusher.memo().evictions(), 3000u);
    for (int i = 0; i < 5000; i++) EXPECT_FALSE(a[i].answers[0].failed) << i;
}

// Which misses go by name: a partition the memo has evicted (met too long ago) goes by name
// like a first contact (no block cache read for it: PostgreSQL's full probe over its in-window
// rows decides, in the same call); one whose memo entry only expired while the block cache
// still holds it is resolved first, so the cache vouches (and the probe reads nothing).
TEST(FlusherResolution, AnEvictedMissGoesByNameAnExpiredCachedOneIsResolved) {
    FlusherConfig fc = flusher_config(Settings());
    fc.memo_bytes = 1;  // every entry is evicted by the next one: each flush misses
    Rig rig(fc);
    auto [store, backend, metrics, flusher] = rig.parts();
    queen::UuidV7Generator gen(9);
    std::vector<Answered> a(2), b(2), c(1), d(1);
    for (int i = 0; i < 2; i++) flusher.submit(job_for("q", "p" + std::to_string(i), gen, &a[i]));
    while (flusher.run_once(backend)) {
    }
    EXPECT_EQ(backend.named_pushes, 1) << "first contact: by name";
    EXPECT_EQ(backend.batches, 0);
    for (int i = 0; i < 2; i++) flusher.submit(job_for("q", "p" + std::to_string(i), gen, &b[i]));
    while (flusher.run_once(backend)) {
    }
    EXPECT_EQ(backend.named_pushes, 2) << "evicted from the memo: by name again";
    EXPECT_EQ(backend.batches, 0);
    for (int i = 0; i < 2; i++) {
        EXPECT_EQ(b[i].answers[0].status, EntryStatus::Queued);
        EXPECT_EQ(b[i].answers[0].offset, 1);
    }
    // p0, p1, then p0 again (the memo's one entry, p1's, was a hit in the second flush)
    EXPECT_EQ(metrics.partitions_named.load(), 3u);
    EXPECT_EQ(store.unsound_vouches, 0);

    // The production memo: q/h is memoised and cached (its second flush is still unvouched,
    // met once before; the third hydrates its entry);
    // once the memo entry is past its TTL, the miss is resolved first and vouched for.
    Rig rig2;
    auto [store2, backend2, metrics2, flusher2] = rig2.parts();
    std::vector<Answered> e(3);
    for (int i = 0; i < 3; i++) {
        flusher2.submit(job_for("q", "h", gen, &e[i]));
        while (flusher2.run_once(backend2)) {
        }
    }
    EXPECT_EQ(backend2.named_pushes, 2);
    EXPECT_EQ(rig2.cache.hydrations(), 1u);
    rig2.clock.advance(flusher_config(Settings()).meta_ttl_ms + 1);
    const int64_t vouched = store2.vouched_pushes;
    flusher2.submit(job_for("q", "h", gen, &c[0]));
    while (flusher2.run_once(backend2)) {
    }
    EXPECT_EQ(backend2.named_pushes, 2) << "expired but cached: resolved first";
    EXPECT_EQ(backend2.batches, 1);
    EXPECT_EQ(store2.vouched_pushes - vouched, 1);
    EXPECT_EQ(c[0].answers[0].offset, 3);
    // Forget the cache entry (as after an eviction): the next expired miss goes by name.
    PartitionMeta m;
    ASSERT_TRUE(backend2.resolve_partition("q", "h", &m).is_ok());
    rig2.cache.forget(m.pid);
    rig2.clock.advance(flusher_config(Settings()).meta_ttl_ms + 1);
    flusher2.submit(job_for("q", "h", gen, &d[0]));
    while (flusher2.run_once(backend2)) {
    }
    EXPECT_EQ(backend2.named_pushes, 3) << "expired and not cached: by name";
    EXPECT_EQ(d[0].answers[0].offset, 4);
    EXPECT_EQ(store2.unsound_vouches, 0);
}

// The second flush of a partition skips the cache only while its log is small: with 4,096
// retained messages or more, the full probe of an unvouched push would read more than the
// hydration that lets the cache vouch from then on.
TEST(FlusherResolution, ALargePartitionIsHydratedOnItsSecondFlush) {
    for (int n : {4095, 4097}) {
        Rig rig;
        auto [store, backend, metrics, flusher] = rig.parts();
        queen::UuidV7Generator gen(12);
        std::vector<Answered> a(static_cast<std::size_t>(n)), b(1);
        for (int i = 0; i < n; i++) flusher.submit(job_for("q", "big", gen, &a[i]));
        while (flusher.run_once(backend)) {
        }
        ASSERT_EQ(a[n - 1].answers[0].offset, n - 1);
        const int64_t vouched = store.vouched_pushes;
        flusher.submit(job_for("q", "big", gen, &b[0]));
        while (flusher.run_once(backend)) {
        }
        EXPECT_EQ(b[0].answers[0].offset, n);
        const bool small = n - 1 < 4096;  // last_offset - txns_start
        EXPECT_EQ(rig.cache.hydrations(), small ? 0u : 1u) << n;
        EXPECT_EQ(store.vouched_pushes - vouched, small ? 0 : 1) << n;
        EXPECT_EQ(backend.named_pushes, small ? 2 : 1) << n;
        EXPECT_EQ(store.unsound_vouches, 0);
    }
}

}  // namespace
}  // namespace queen::sidecar
