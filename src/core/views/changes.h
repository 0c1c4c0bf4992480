// The packed form of one call's changes, stored as one queen.dedup_change_blocks row:
//   header: 'Q' 'C' version(=1) 0  u32 count
//   change: u8 kind (0 +I, 1 -U, 2 +U)  u8 flags (1 key NULL, 2 rowtime NULL)
//           u32 key_len key  u32 payload_len payload  i64 rowtime  u32 part_len part  i64 offset
// Integers little-endian. The payload is opaque here (the glue stores jsonb's binary form).
#pragma once
#include "core/common/firewall.h"

#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <string>
#include <string_view>

namespace queen::dedup {

struct PackedChange {
    uint8_t kind;
    bool key_null;
    bool rowtime_null;
    std::string_view key;
    std::string_view payload;
    int64_t rowtime;
    std::string_view partition;
    int64_t offset;
};

// Appends changes to a block. With a prefix, the buffer starts with that many zero bytes before
// the block (room for a caller's header, e.g. a varlena length word, so the block need not be
// copied to sit behind one); finish() and take() return them too, the block is what follows.
// Str is the buffer: std::string, or std::pmr::string drawing from the allocator given.
template <class Str>
class BasicChangeBlockWriter {
public:
    explicit BasicChangeBlockWriter(std::size_t prefix = 0,
                                    const typename Str::allocator_type& alloc = {});
    void add(const PackedChange& c);
    void reserve(std::size_t bytes) { buf_.reserve(bytes); }
    const Str& finish();  // the block with its count patched in
    Str take() {          // the finished block, moved out (the writer is spent)
        finish();
        return std::move(buf_);
    }
    uint32_t count() const { return count_; }

private:
    Str buf_;
    std::size_t prefix_;
    uint32_t count_ = 0;
};

using ChangeBlockWriter = BasicChangeBlockWriter<std::string>;
using PmrChangeBlockWriter = BasicChangeBlockWriter<std::pmr::string>;
extern template class BasicChangeBlockWriter<std::string>;
extern template class BasicChangeBlockWriter<std::pmr::string>;

// Reads a block, checking every bound.
class ChangeBlockReader {
public:
    ChangeBlockReader(const uint8_t* data, std::size_t len) noexcept;
    const char* error() const noexcept { return error_; }  // nullptr when fine so far
    uint32_t count() const noexcept { return count_; }
    bool next(PackedChange* out) noexcept;  // false at the end or on a malformed block

private:
    bool take(std::size_t n, const uint8_t** p) noexcept;
    const uint8_t* data_;
    std::size_t len_, pos_ = 0;
    uint32_t count_ = 0, read_ = 0;
    const char* error_ = nullptr;
};

// The text of a JSON scalar as PostgreSQL's `#>> '{}'` gives it: a JSON string unquoted and
// unescaped, any other JSON text as it is. Sets *is_null for JSON null.
std::string json_scalar_text(std::string_view json, bool* is_null);

}  // namespace queen::dedup
