// Hash runs, the in-memory half (see hash_runs.h).
#include "core/probe/hash_runs.h"

#include <algorithm>

namespace queen {

namespace {

// Little-endian loads and stores, whatever the platform (the bytes are stored on disk).
int64_t load64(const uint8_t* p) noexcept {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return static_cast<int64_t>(v);
}
uint32_t load32(const uint8_t* p) noexcept {
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
           static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}
void store(uint8_t* out, uint64_t v, int bytes) noexcept {
    for (int i = 0; i < bytes; i++) out[i] = static_cast<uint8_t>(v >> (8 * i));
}

// (key, offset) order; a functor so std::sort inlines it (a run of a million entries is sorted
// inside one push).
struct EntryLess {
    bool operator()(const RunEntry& a, const RunEntry& b) const noexcept {
        return a.key != b.key ? a.key < b.key : a.offset < b.offset;
    }
};

}  // namespace

// See hash_runs.h.
int64_t run_key(const Hash128& h) noexcept { return load64(h.b); }

// See hash_runs.h.
void sort_entries(RunEntry* entries, std::size_t n) noexcept {
    std::sort(entries, entries + n, EntryLess());
}

// See hash_runs.h.
std::size_t drop_purged(RunEntry* entries, std::size_t n, int64_t keep_from) noexcept {
    std::size_t k = 0;
    for (std::size_t i = 0; i < n; i++)
        if (entries[i].offset >= keep_from) entries[k++] = entries[i];
    return k;
}

// See hash_runs.h.
std::size_t chunk_end(const RunEntry* sorted, std::size_t n, std::size_t begin,
                      std::size_t target) noexcept {
    if (target == 0) target = 1;
    std::size_t end = std::min(n, begin + target);
    while (end < n && sorted[end].key == sorted[end - 1].key) end++;
    return end;
}

// See hash_runs.h.
void encode_chunk(const RunEntry* entries, std::size_t n, int64_t lo, uint8_t* out) noexcept {
    for (std::size_t i = 0; i < n; i++, out += kRunEntryBytes) {
        store(out, static_cast<uint64_t>(entries[i].key), 8);
        store(out + 8, static_cast<uint64_t>(entries[i].offset - lo), 4);
    }
}

// See hash_runs.h.
void decode_chunk(const uint8_t* data, std::size_t count, int64_t lo, RunEntry* out) noexcept {
    for (std::size_t i = 0; i < count; i++, data += kRunEntryBytes)
        out[i] = RunEntry{load64(data), lo + static_cast<int64_t>(load32(data + 8))};
}

// See hash_runs.h.
std::size_t chunk_find(const uint8_t* data, std::size_t count, int64_t key,
                       std::size_t* first) noexcept {
    std::size_t a = 0, b = count;
    while (a < b) {
        std::size_t m = a + (b - a) / 2;
        if (load64(data + m * kRunEntryBytes) < key) a = m + 1;
        else b = m;
    }
    *first = a;
    std::size_t e = a;
    while (e < count && load64(data + e * kRunEntryBytes) == key) e++;
    return e - a;
}

// See hash_runs.h.
int64_t chunk_offset(const uint8_t* data, std::size_t i, int64_t lo) noexcept {
    return lo + static_cast<int64_t>(load32(data + i * kRunEntryBytes + 8));
}

// See hash_runs.h.
int run_class(int64_t span, int64_t base) noexcept {
    if (base < 1) base = 1;
    int c = 0;
    for (int64_t limit = base * kRunFanout; span >= limit && c < 40; limit *= kRunFanout) c++;
    return c;
}

// See hash_runs.h: first an older run smaller than the one after it (so spans never grow
// towards the newest end, which the fan-out rule needs: a large run written after small ones,
// such as the first run after a long pause, would otherwise strand them), then the newest
// fan-out runs of one class.
bool runs_to_merge(const RunSpan* runs, std::size_t n, int64_t base, std::size_t* first,
                   std::size_t* last) noexcept {
    auto span = [&](std::size_t i) { return runs[i].hi - runs[i].lo + 1; };
    for (std::size_t i = n; i-- > 1;) {
        if (span(i - 1) < span(i) && runs[i].hi - runs[i - 1].lo + 1 <= kRunMaxSpan) {
            *first = i - 1;
            *last = i;
            return true;
        }
    }
    if (n < static_cast<std::size_t>(kRunFanout)) return false;
    std::size_t f = n - kRunFanout;
    int c = run_class(span(n - 1), base);
    for (std::size_t i = f; i < n; i++)
        if (run_class(span(i), base) != c) return false;
    if (runs[n - 1].hi - runs[f].lo + 1 > kRunMaxSpan) return false;
    *first = f;
    *last = n - 1;
    return true;
}

// See hash_runs.h.
bool runs_contiguous(const RunSpan* runs, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; i++) {
        if (runs[i].hi < runs[i].lo) return false;
        if (i > 0 && runs[i].lo != runs[i - 1].hi + 1) return false;
    }
    return true;
}

}  // namespace queen
