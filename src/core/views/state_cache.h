// A per-process cache of dedup views' keyed state, so that a backend that advances a view
// call after call reads its keys' state from memory instead of from queen.dedup_state.
//
// Validity is decided by the caller with a token: every call that persists a view's state
// also writes a token into the view's row that no other write of that row ever carries (the
// glue uses the writing transaction's full id), and stores the states it wrote and read here
// under that token. The next call reads the row's token under the view lock; the cache is used
// only when the tokens are equal, i.e. when no other session (and no rollback) has changed the
// state since. Absent keys are not "no state": the caller looks them up in the table.
// Entries hold states exactly as the table gives them back (see the glue's normalisation).
//
// The table keeps a view's states in buckets (src/core/views/bucket.h): the cache also holds
// buckets (their bytes as the table holds them), and the glue stores a key's state only
// together with its whole bucket. So a key that a cached bucket does not hold has no state,
// and a call rewrites a cached bucket without reading it.
#pragma once
#include "core/common/firewall.h"

#include "core/views/operator.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

namespace queen::dedup {

// One bucket of a view as the table holds it: its bytes, whether its row exists, and where
// (the glue's tuple id; 0 unknown).
struct CachedBucket {
    std::string bytes;
    bool exists = false;
    uint64_t locator = 0;
};

class StateCache {
public:
    explicit StateCache(size_t limit_bytes) : limit_(limit_bytes) {}

    // The cached states of view `id` when they are valid for `token`, else nullptr (and
    // whatever was cached for the view under another token is dropped).
    const std::unordered_map<std::string, KeyState>* lookup(int64_t id, int64_t token);
    // Start storing the states of view `id` as of `token`: keeps the view's entries when they
    // were valid for `from` (the token the call started from, `has_from` false when none),
    // drops them otherwise.
    void begin(int64_t id, bool has_from, int64_t from, int64_t token);
    // Store one state of the view begun last; false when the byte limit is hit (the view's
    // entries are then dropped: the caller stops storing until the next begin()).
    bool put(int64_t id, const KeyState& s);
    bool put(int64_t id, KeyState&& s);  // the same, taking the state over
    // Store one bucket of the view begun last (false, the view dropped, at the byte limit).
    bool put_bucket(int64_t id, uint32_t bucket, CachedBucket&& b);
    // Forget the view's buckets, keeping its states (the glue repacked them into new buckets
    // and stores every one of those next).
    void drop_buckets(int64_t id);
    // A bucket of the view as stored, or nullptr (not cached). Valid until the next change.
    const CachedBucket* bucket(int64_t id, uint32_t bucket) const;
    // Forget one view / everything (an aborted transaction may have stored states its
    // rollback undoes).
    void drop(int64_t id);
    void clear();
    size_t bytes() const { return bytes_; }
    size_t keys(int64_t id) const;

private:
    struct View {
        int64_t token = 0;
        size_t bytes = 0;
        std::unordered_map<std::string, KeyState> states;
        std::unordered_map<uint32_t, CachedBucket> buckets;
    };
    static size_t cost(const KeyState& s) {
        return 2 * s.row.key.size() + s.row.payload.size() + s.row.partition.size() + 128;
    }
    static size_t cost(const CachedBucket& b) { return b.bytes.size() + 64; }
    bool account(int64_t id, View& v, size_t c, size_t old);
    size_t limit_;
    size_t bytes_ = 0;
    std::unordered_map<int64_t, View> views_;
};

}  // namespace queen::dedup
