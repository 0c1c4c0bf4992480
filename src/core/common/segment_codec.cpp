// Segment encoding and decoding, and transactionId validation.
#include "core/common/segment_codec.h"

#include <cstring>

namespace queen {

// Store a little-endian u32.
static uint8_t* put_u32(uint8_t* p, uint32_t v) noexcept {
    p[0] = static_cast<uint8_t>(v);
    p[1] = static_cast<uint8_t>(v >> 8);
    p[2] = static_cast<uint8_t>(v >> 16);
    p[3] = static_cast<uint8_t>(v >> 24);
    return p + 4;
}

// Load a little-endian u32.
static uint32_t get_u32(const uint8_t* p) noexcept {
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
           static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

// Header: magic, version, flags, count.
uint8_t* segment_write_header(uint8_t* p, uint32_t count) noexcept {
    p[0] = 'Q';
    p[1] = 'S';
    p[2] = 1;
    p[3] = 0;
    return put_u32(p + 4, count);
}

// One entry: id, content type, txn, payload.
uint8_t* segment_write_entry(uint8_t* p, const MessageView& m) noexcept {
    std::memcpy(p, m.id.b, 16);
    p += 16;
    *p++ = static_cast<uint8_t>(m.type);
    p = put_u32(p, static_cast<uint32_t>(m.txn.size()));
    if (!m.txn.empty()) std::memcpy(p, m.txn.data(), m.txn.size());
    p += m.txn.size();
    p = put_u32(p, static_cast<uint32_t>(m.payload.size()));
    if (!m.payload.empty()) std::memcpy(p, m.payload.data(), m.payload.size());
    return p + m.payload.size();
}

// Start with an empty header.
SegmentBuilder::SegmentBuilder() : buf_(kSegmentHeaderBytes, '\0') {}

// Append one entry.
void SegmentBuilder::add(const MessageView& m) {
    std::size_t at = buf_.size();
    buf_.resize(at + segment_entry_size(m.txn.size(), m.payload.size()));
    segment_write_entry(reinterpret_cast<uint8_t*>(&buf_[at]), m);
    count_++;
}

// Patch the header with the final count.
const std::string& SegmentBuilder::finish() {
    segment_write_header(reinterpret_cast<uint8_t*>(&buf_[0]), count_);
    return buf_;
}

// Check the header.
SegmentReader::SegmentReader(const uint8_t* data, std::size_t len) noexcept : data_(data), len_(len) {
    if (len < kSegmentHeaderBytes || data[0] != 'Q' || data[1] != 'S') {
        error_ = "not a queen segment (bad magic)";
        return;
    }
    if (data[2] != 1 || data[3] != 0) {
        error_ = "unsupported segment version";
        return;
    }
    count_ = get_u32(data + 4);
    pos_ = kSegmentHeaderBytes;
}

// Decode the next entry with bounds checks.
bool SegmentReader::next(MessageView* out) noexcept {
    if (error_ || read_ >= count_) return false;
    if (len_ - pos_ < kSegmentEntryOverhead) {
        error_ = "segment entry truncated";
        return false;
    }
    const uint8_t* p = data_ + pos_;
    std::memcpy(out->id.b, p, 16);
    uint8_t type = p[16];
    if (type < 1 || type > 4) {
        error_ = "unknown content type in segment";
        return false;
    }
    out->type = static_cast<ContentType>(type);
    uint32_t tlen = get_u32(p + 17);
    std::size_t at = pos_ + 21;
    if (tlen > len_ - at || len_ - at - tlen < 4) {
        error_ = "segment transactionId truncated";
        return false;
    }
    out->txn = std::string_view(reinterpret_cast<const char*>(data_ + at), tlen);
    at += tlen;
    uint32_t plen = get_u32(data_ + at);
    at += 4;
    if (plen > len_ - at) {
        error_ = "segment payload truncated";
        return false;
    }
    out->payload = std::string_view(reinterpret_cast<const char*>(data_ + at), plen);
    pos_ = at + plen;
    read_++;
    return true;
}

// Length, UTF-8 well-formedness, and no control characters (C0, DEL, C1).
const char* validate_txn_id(std::string_view s) noexcept {
    if (s.size() > kMaxTxnBytes) return "transactionId is longer than 65535 bytes";
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    std::size_t n = s.size(), i = 0;
    while (i < n) {
        unsigned char c = p[i];
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7f) return "transactionId contains a control character";
            i++;
            continue;
        }
        std::size_t len;
        uint32_t cp;
        if ((c & 0xe0) == 0xc0) {
            len = 2;
            cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3;
            cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            len = 4;
            cp = c & 0x07;
        } else {
            return "transactionId is not valid UTF-8";
        }
        if (i + len > n) return "transactionId is not valid UTF-8";
        for (std::size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xc0) != 0x80) return "transactionId is not valid UTF-8";
            cp = cp << 6 | (p[i + k] & 0x3f);
        }
        static const uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min_cp[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return "transactionId is not valid UTF-8";
        if (cp >= 0x80 && cp <= 0x9f) return "transactionId contains a control character";
        i += len;
    }
    return nullptr;
}

}  // namespace queen
