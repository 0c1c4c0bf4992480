// The push store: what the flush workers (push/flusher.h) and the block cache's loads
// (push/block_cache.h) need from PostgreSQL, and nothing else: resolving partitions, pushing
// segments (by id or by name), looking up message ids after a lost answer, the cache's two
// reads, cancelling, the vouch epoch and the durability barrier. The non-push calls go through
// db/sql_route.h instead. Implementations: db/pg_connection.h (one server, libpq),
// shard/sharded_backend.h (a sharded cluster); tests use an in-memory model of the
// extension's contract (tests/sidecar/fake_store.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/common/uuidv7.h"
#include "common/status.h"

namespace queen::sidecar {

// What queen.resolve_partition returns (memoised, see partition_memo.h).
struct PartitionMeta {
    int64_t pid = -1;
    int32_t window_s = 3600;
    int64_t last_offset = -1;
    int64_t txns_start = 0;
};

// One queen.log_segments row's hashes side.
struct TxnRow {
    int64_t base = 0;
    int64_t end = -1;        // inclusive
    int64_t created_ms = 0;  // Unix ms
    std::string hashes;      // 16 bytes per message, offset order
};

// The cache's two reads.
class CacheLoader {
public:
    virtual ~CacheLoader() = default;
    // Every hash-carrying log_segments row of pid created within the last window_s seconds (now() on the server),
    // ascending by base_offset, plus the partition's last_offset, all from one snapshot.
    virtual Status load_window(int64_t pid, int64_t window_s, int64_t* last_offset,
                               std::vector<TxnRow>* rows) = 0;
    // The hash-carrying log_segments rows of pid whose base_offset lies in [lo, hi], ascending.
    virtual Status load_range(int64_t pid, int64_t lo, int64_t hi, std::vector<TxnRow>* rows) = 0;
};

// One segment of a push_segments call.
struct SegmentIn {
    int64_t pid = -1;
    const std::string* hashes = nullptr;   // 16 x count bytes
    const std::string* segment = nullptr;  // segment_codec blob
    int64_t verified = -1;                 // p_verified
    int32_t window_s = 0;                  // p_window: the window the vouch assumed
    const std::string* hints = nullptr;    // p_hint(s): core/vouch_hints.h blob (null/empty: none)
};

// Unknown: SQL answered a status string the sidecar does not know; it fails closed (the item is
// answered `error`, never guessed to be a duplicate).
enum class EntryStatus : uint8_t { Queued = 0, Duplicate = 1, Unknown = 2 };

// One answer row.
struct EntryOut {
    EntryStatus status = EntryStatus::Queued;
    queen::Uuid id{};
    int64_t offset = -1;
    // The created_at the push stamped its rows with, or later (>= the rows' created_at): issue
    // 28's monotone stamp can be ahead of the database's clock after it stepped back, so this
    // is greatest(clock_timestamp(), queen.push_last_stamp()).
    int64_t created_ms = 0;
    // The database's clock after the push (clock_timestamp(): a lower bound of its now()), what
    // the block cache takes as the database's time; -1: not known apart from created_ms, which
    // then serves as both (the two agree unless a stamp ran ahead of the clock).
    int64_t clock_ms = -1;
};

// A (queue, partition) pair to resolve.
struct PartitionName {
    std::string_view queue, partition;
};

// Everything a flush worker does with its connection (one per worker; not thread-safe except
// cancel).
class PushStore : public CacheLoader {
public:
    // queen.resolve_partition(queue, partition).
    virtual Status resolve_partition(std::string_view queue, std::string_view partition,
                                     PartitionMeta* out) = 0;
    // queen.resolve_partitions: out[i] answers names[i]; missing partitions (and queues) are
    // created. One statement in the real backend; this default resolves them one at a time.
    virtual Status resolve_partitions(const std::vector<PartitionName>& names,
                                      std::vector<PartitionMeta>* out) {
        out->assign(names.size(), PartitionMeta{});
        for (std::size_t i = 0; i < names.size(); i++) {
            Status s = resolve_partition(names[i].queue, names[i].partition, &(*out)[i]);
            if (!s.is_ok()) return s;
        }
        return Status::ok();
    }
    // One transaction pushing every segment (out[i] answers segs[i], one EntryOut per entry);
    // returns only after COMMIT. StatusCode::Unknown when the call was sent but its answer was
    // lost (it may or may not have committed); Unavailable when nothing was sent.
    virtual Status push_segments(const std::vector<SegmentIn>& segs,
                                 std::vector<std::vector<EntryOut>>* out) = 0;
    // push_segments where a segment with pid < 0 names its partition instead (names[i], one
    // per segment; ignored for the others): those are resolved (created when missing) inside
    // the same transaction. (*metas)[i] is the
    // metadata of each named segment i as of the commit (last_offset includes this push).
    // The real backend sends one statement (queen.push_segments_named); this default resolves,
    // pushes, and resolves again (for the in-memory model used by tests).
    virtual Status push_segments_named(const std::vector<SegmentIn>& segs,
                                       const std::vector<PartitionName>& names_of,
                                       std::vector<std::vector<EntryOut>>* out,
                                       std::vector<PartitionMeta>* metas) {
        std::vector<SegmentIn> known = segs;
        std::vector<PartitionName> names;
        std::vector<std::size_t> pos;
        for (std::size_t i = 0; i < segs.size(); i++)
            if (segs[i].pid < 0) {
                names.push_back(names_of[i]);
                pos.push_back(i);
            }
        std::vector<PartitionMeta> got;
        Status s = resolve_partitions(names, &got);
        if (!s.is_ok()) return s;
        for (std::size_t k = 0; k < pos.size(); k++) known[pos[k]].pid = got[k].pid;
        s = push_segments(known, out);
        if (!s.is_ok()) return s;
        s = resolve_partitions(names, &got);
        if (!s.is_ok()) return Status(StatusCode::Unknown, "pushed, but its metadata was lost");
        metas->assign(segs.size(), PartitionMeta{});
        for (std::size_t k = 0; k < pos.size(); k++) (*metas)[pos[k]] = got[k];
        return Status::ok();
    }
    // Read-only outcome check: for each ids[i], the offset at which it is stored in partition
    // pid among the segment rows' message ids with base_offset > after, else -1 (the libpq backend also looks
    // at every row created in the last 2 minutes: a last_offset memoised before a restore
    // moved the log back must not hide what a lost call wrote).
    virtual Status find_ids(int64_t pid, int64_t after, const std::vector<queen::Uuid>& ids,
                            std::vector<int64_t>* offsets) = 0;
    // Ask the server to cancel whatever statement is running (any thread may call it; a
    // no-op when idle or not connected).
    virtual void cancel() {}
    // Failover (db/pg_session.h): the history epoch under which the next push's vouches
    // were computed (a backend whose session meets a newer one sends no vouch made under an
    // older one), and a barrier making what this session saw committed durable (ok when the
    // backend has nothing to wait for).
    virtual void set_vouch_epoch(uint64_t /*epoch*/) {}
    // The process's history epoch as the sessions saw it (db/pg_session.h: +1 at every change
    // of timeline a session met); a store that cannot fail over stays at 0.
    virtual uint64_t history_epoch() { return 0; }
    virtual Status durability_barrier(int64_t /*timeout_ms*/) { return Status::ok(); }
};

}  // namespace queen::sidecar
