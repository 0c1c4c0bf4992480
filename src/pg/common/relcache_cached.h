// A per-backend cache of catalog lookups (relation OIDs, column numbers) that any relcache
// invalidation empties: DDL on queen's tables, DROP/CREATE EXTENSION, a restore. The direct
// paths (direct_write.cpp, stream_direct.cpp) keep their relations in one each.
//
// No lock is taken here. A lookup that an invalidation overtakes (the callback runs while the
// lookups accept invalidation messages) is not trusted: the generation it started from is gone,
// so the next call looks up again. A lookup that fails (ERROR) leaves the cache empty.
#pragma once
#include "pg/common/glue.h"

extern "C" {
#include "utils/inval.h"
}

namespace queen_pg {

template <class T>
class RelcacheCached {
public:
    // The cached lookups, or fill()'s fresh ones when an invalidation came since the last.
    const T* get(void (*fill)(T*)) {
        if (valid_) return &value_;
        if (!callback_) {
            CacheRegisterRelcacheCallback(&RelcacheCached::invalidate, PointerGetDatum(this));
            callback_ = true;
        }
        uint64 started = generation_;
        T fresh{};
        fill(&fresh);
        value_ = fresh;
        valid_ = generation_ == started;  // overtaken: use it this once, look up again next time
        return &value_;
    }

private:
    // Any relcache invalidation may be one of ours: forget all.
    static void invalidate(Datum self, Oid) {
        auto* c = reinterpret_cast<RelcacheCached*>(DatumGetPointer(self));
        c->valid_ = false;
        c->generation_++;
    }

    T value_{};
    uint64 generation_ = 0;
    bool valid_ = false, callback_ = false;
};

}  // namespace queen_pg
