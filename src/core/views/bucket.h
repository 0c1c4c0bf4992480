// The packed form of one bucket of a dedup view's keyed state: the states of every key that
// hashes to the bucket (bucket_of), stored as one queen.dedup_state_buckets row, so that a call
// rewrites one row per bucket it touches instead of one row per key.
//   header: 'Q' 'B' version(=1) 0  u32 count
//   entry:  u8 kind (1 kept, 2 candidate, 3 fired)  u8 flags (1 payload present, 2 rowtime present)
//           u32 key_len key  [u32 payload_len payload when flag 1]  i64 rowtime  i64 written_at
//           u32 part_len part  i64 offset
// Integers little-endian; keys strictly ascending (bytewise), so a bucket's bytes depend only on
// its states. The payload is opaque here (the glue stores jsonb's binary form).
#pragma once
#include "core/common/firewall.h"

#include "core/views/operator.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace queen::dedup {

// One key's state as a bucket holds it (views into the bucket's bytes or the caller's strings).
struct PackedState {
    std::string_view key;
    uint8_t kind = 1;
    bool has_payload = false;  // false: SQL NULL (markers keep no payload)
    bool has_rowtime = false;  // false: SQL NULL (views without a rowtime field)
    std::string_view payload;
    int64_t rowtime = 0;
    int64_t written_at = 0;
    std::string_view partition;
    int64_t offset = 0;
};

// The bucket of a key among n (n >= 1): FNV-1a (64 bit) of its bytes, modulo n. Stable across
// builds and platforms: it decides which row holds a key.
uint32_t bucket_of(std::string_view key, uint32_t n) noexcept;

// A state's packed form: payload and rowtime present as the flags say.
PackedState pack_state(const KeyState& s, bool has_payload, bool has_rowtime) noexcept;
// The state a packed entry holds (arrival 0, locator 0: neither is stored).
KeyState unpack_state(const PackedState& p);

// Appends states (keys strictly ascending) to a bucket.
class BucketWriter {
public:
    BucketWriter();
    void add(const PackedState& s);
    // Append one entry exactly as another bucket holds it (bytes from BucketReader::raw).
    void add_raw(std::string_view entry);
    void reserve(std::size_t bytes) { buf_.reserve(bytes); }
    std::string take();  // the finished bucket, its count patched in (the writer is spent)
    uint32_t count() const { return count_; }
    // The packed size of one entry.
    static std::size_t entry_size(const PackedState& s) noexcept;

private:
    std::string buf_;
    uint32_t count_ = 0;
};

// Reads a bucket, checking every bound, the kinds and flags, that keys ascend strictly and that
// nothing follows the last entry.
class BucketReader {
public:
    BucketReader(const uint8_t* data, std::size_t len) noexcept;
    const char* error() const noexcept { return error_; }  // nullptr when fine so far
    uint32_t count() const noexcept { return count_; }
    bool next(PackedState* out) noexcept;  // false at the end or on a malformed bucket
    std::string_view raw() const noexcept { return raw_; }  // the bytes of the entry next() gave

private:
    bool take(std::size_t n, const uint8_t** p) noexcept;
    const uint8_t* data_;
    std::size_t len_, pos_ = 0;
    uint32_t count_ = 0, read_ = 0;
    std::string_view raw_, last_key_;
    const char* error_ = nullptr;
};

// A bucket with the entries of `old` (a bucket's bytes; empty: no entries) where each state of
// `repl` (keys strictly ascending) replaces the entry of its key or is added. Unchanged
// entries are copied as they are. nullptr, or the error that `old` or `repl` gives.
const char* merge_bucket(std::string_view old, const std::vector<PackedState>& repl,
                         std::string* out);

}  // namespace queen::dedup
