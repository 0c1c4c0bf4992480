// Hash runs (issue 28, 0.4.0): a partition's stored hashes kept sorted by key on disk, so a probe
// of a window too large to read costs a few index descents per message, with no cache. This file
// is the in-memory half: the key of a hash, the encoding of one chunk of a run (the bytes of one
// queen.log_hash_runs row), the lookup inside a chunk, the cut of a sorted run into chunks, the
// merge of runs and the tiering policy that says which runs to merge. PostgreSQL access lives in
// src/pg/storage/hash_runs_store.cpp and src/pg/probe/runs_probe.cpp.
//
// A run covers an offset range [lo, hi] of its partition: it holds one entry (key, offset) for
// every hash stored in a row whose base_offset lies in that range when the run was built. Runs
// only narrow: every candidate a run names is confirmed against the stored row (the same whole
// 16-byte hash at that offset, inside the window, above the floor), so a stale entry (a row
// deleted or whose hashes retention dropped since) costs a row read, never a verdict. What a run
// must never do is miss a hash of a row in its range: runs are built from committed rows only,
// under the partition lock, and no row is ever written into a range a run covers (offsets only
// grow).
#pragma once
#include "core/common/firewall.h"

#include <cstddef>
#include <cstdint>

#include "core/common/hash.h"

namespace queen {

// One entry of a run: the key of a stored hash and its offset.
struct RunEntry {
    int64_t key;
    int64_t offset;
};

// One run of a partition, as the directory lists it.
struct RunSpan {
    int64_t lo;
    int64_t hi;
};

// Bytes of one encoded entry: the key (8, little-endian) and offset - lo (4, little-endian).
constexpr std::size_t kRunEntryBytes = 12;
// Entries per chunk row: 160 x 12 = 1,920 bytes, so a row stays under PostgreSQL's 2 kB TOAST
// threshold and is read inline.
constexpr std::size_t kRunChunkEntries = 160;
// Largest span of one run: offsets are stored as 32-bit deltas from its lo.
constexpr int64_t kRunMaxSpan = INT32_MAX;
// The tiering fan-out: runs of one size class are merged once this many sit side by side.
constexpr int kRunFanout = 4;

// The key of a hash: its first 8 bytes read little-endian, as a signed integer (the chunk rows'
// key_hi column is a bigint and sorts signed).
int64_t run_key(const Hash128& h) noexcept;

// Sort n entries by (key, offset), in place (no allocation: callable from PostgreSQL glue).
void sort_entries(RunEntry* entries, std::size_t n) noexcept;

// Drop the entries with offset < keep_from (purged), in place, keeping the order. Returns how many
// are left.
std::size_t drop_purged(RunEntry* entries, std::size_t n, int64_t keep_from) noexcept;

// The end of the chunk starting at `begin` of n sorted entries: about `target` entries, moved on
// past any entries equal to the last key, so a key never straddles two chunks and every chunk's
// last key (its key_hi) is unique within the run.
std::size_t chunk_end(const RunEntry* sorted, std::size_t n, std::size_t begin,
                      std::size_t target) noexcept;

// Encode n entries of a run starting at `lo` (every offset in [lo, lo + kRunMaxSpan]) into
// out[n * kRunEntryBytes].
void encode_chunk(const RunEntry* entries, std::size_t n, int64_t lo, uint8_t* out) noexcept;

// Entries of an encoded chunk of `len` bytes, or -1 when the length is not a whole number.
inline int64_t chunk_entries(std::size_t len) noexcept {
    return len % kRunEntryBytes == 0 ? static_cast<int64_t>(len / kRunEntryBytes) : -1;
}

// Decode a chunk of `count` entries (chunk_entries) into out[count].
void decode_chunk(const uint8_t* data, std::size_t count, int64_t lo, RunEntry* out) noexcept;

// The entries with `key` in a chunk of `count` entries: *first is the index of the first one
// (binary search), the result how many there are (0: none). cut at chunk_end, so the first chunk
// whose key_hi >= key holds them all.
std::size_t chunk_find(const uint8_t* data, std::size_t count, int64_t key,
                       std::size_t* first) noexcept;

// The offset of entry i of a chunk of a run starting at `lo`.
int64_t chunk_offset(const uint8_t* data, std::size_t i, int64_t lo) noexcept;

// The size class of a run covering `span` offsets, runs being built every `base` offsets: 0 below
// base * fanout, then one more per factor of the fan-out.
int run_class(int64_t span, int64_t base) noexcept;

// The tiering policy over a partition's n runs (ascending, contiguous): the index range
// [*first, *last] of adjacent runs to merge into one, or false. First, an older run smaller than
// the run right after it is merged with it (spans stay non-increasing towards the newest end);
// then the newest kRunFanout runs, when they share one size class, become one run of the next
// class. A merge never produces a run spanning more than kRunMaxSpan offsets. Applied until it
// says false, it keeps about (fan-out - 1) runs per size class.
bool runs_to_merge(const RunSpan* runs, std::size_t n, int64_t base, std::size_t* first,
                   std::size_t* last) noexcept;

// True when the n runs (ascending) are contiguous: each starts right after the one before.
bool runs_contiguous(const RunSpan* runs, std::size_t n) noexcept;

}  // namespace queen
