// The segment encoding: every message of one push in one blob (one queen.log_segments row).
//
//   header : 'Q' 'S' version(=1) flags(=0)  u32 count              (8 bytes)
//   entry  : id[16]  content_type(u8)  u32 txn_len  txn[txn_len]
//            u32 payload_len  payload[payload_len]                  (25 + txn + payload bytes)
//
// Integers are little-endian. The sidecar builds this exact blob and hands it to
// queen.push_segment(), which stores it unchanged when every message survives the probe.
// Content types make room for octet and text streams next to JSON.
#pragma once
#include "core/common/firewall.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/common/uuidv7.h"

namespace queen {

// Json is JSON text; Jsonb is PostgreSQL's own binary jsonb container, written only by the
// extension's SQL push (it saves a text round trip) and never accepted from clients.
enum class ContentType : uint8_t { Json = 1, Text = 2, Octet = 3, Jsonb = 4 };

inline constexpr std::size_t kSegmentHeaderBytes = 8;
inline constexpr std::size_t kSegmentEntryOverhead = 16 + 1 + 4 + 4;
inline constexpr uint32_t kMaxTxnBytes = 65535;

struct MessageView {
    Uuid id;
    ContentType type;
    std::string_view txn;
    std::string_view payload;
};

// Bytes one entry takes.
inline std::size_t segment_entry_size(std::size_t txn_len, std::size_t payload_len) noexcept {
    return kSegmentEntryOverhead + txn_len + payload_len;
}

// Write the header at p; returns the position after it.
uint8_t* segment_write_header(uint8_t* p, uint32_t count) noexcept;
// Write one entry at p; returns the position after it. The caller sized the buffer.
uint8_t* segment_write_entry(uint8_t* p, const MessageView& m) noexcept;

// Convenience for C++ callers (sidecar, tests): append entries to a std::string.
class SegmentBuilder {
public:
    SegmentBuilder();
    void add(const MessageView& m);
    uint32_t count() const noexcept { return count_; }
    // The finished blob (header count patched in).
    const std::string& finish();

private:
    std::string buf_;
    uint32_t count_ = 0;
};

// Iterates a blob, checking every bound; never reads past the end.
class SegmentReader {
public:
    SegmentReader(const uint8_t* data, std::size_t len) noexcept;
    // nullptr when the header is valid, else a reason.
    const char* error() const noexcept { return error_; }
    uint32_t count() const noexcept { return count_; }
    // The next entry; false at the end or on a malformed entry (then error() says why).
    bool next(MessageView* out) noexcept;
    // True when every entry was read and nothing trails.
    bool at_clean_end() const noexcept { return !error_ && read_ == count_ && pos_ == len_; }

private:
    const uint8_t* data_;
    std::size_t len_;
    std::size_t pos_ = 0;
    uint32_t count_ = 0;
    uint32_t read_ = 0;
    const char* error_ = nullptr;
};

// nullptr when a transactionId is acceptable (at most 65,535 bytes, valid UTF-8, no C0/C1
// control characters and no DEL), else the reason as a constant string.
const char* validate_txn_id(std::string_view txn) noexcept;

}  // namespace queen
