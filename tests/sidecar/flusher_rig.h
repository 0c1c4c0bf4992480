// One sidecar's cache and flusher over a FakeBackend on a shared FakeStore, flushed by hand
// (run_once) so the flusher tests decide every step.
#pragma once

#include "fake_store.h"
#include "push/block_cache.h"
#include "push/flusher.h"

namespace queen::sidecar::testing {

struct FlusherRig {
    FlusherRig(FakeStore& store, const Clock& clock, CacheConfig cc = cache_config(Settings()),
               FlusherConfig fc = flusher_config(Settings()))
        : backend(store), cache(cc, clock), flusher(fc, {}, cache, metrics, clock) {}
    FakeBackend backend;
    Metrics metrics;
    BlockCache cache;
    Flusher flusher;
    // Flush until nothing is ready.
    void drain() {
        while (flusher.run_once(backend)) {
        }
    }
};

}  // namespace queen::sidecar::testing
