// Bucket codec of dedup views' keyed state; see dedup_bucket.h.
#include "core/views/bucket.h"

#include <cstring>

#include "core/views/bytes.h"

namespace queen::dedup {

using bytes::get_i64;
using bytes::get_u32;

namespace {
constexpr std::size_t kHeader = 8;
}  // namespace

// FNV-1a, 64 bit.
uint32_t bucket_of(std::string_view key, uint32_t n) noexcept {
    uint64_t h = 14695981039346656037ull;
    for (unsigned char c : key) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return n == 0 ? 0 : (uint32_t) (h % n);
}

// Views into the state's strings.
PackedState pack_state(const KeyState& s, bool has_payload, bool has_rowtime) noexcept {
    PackedState p;
    p.key = s.row.key;
    p.kind = (uint8_t) s.kind;
    p.has_payload = has_payload;
    p.has_rowtime = has_rowtime;
    if (has_payload) p.payload = s.row.payload;
    p.rowtime = has_rowtime ? s.row.rowtime : 0;
    p.written_at = s.written_at;
    p.partition = s.row.partition;
    p.offset = s.row.offset;
    return p;
}

// Copies the entry's strings.
KeyState unpack_state(const PackedState& p) {
    KeyState s;
    s.kind = (StateKind) p.kind;
    s.row.key.assign(p.key.data(), p.key.size());
    s.row.payload.assign(p.payload.data(), p.payload.size());
    s.row.rowtime = p.rowtime;
    s.row.partition.assign(p.partition.data(), p.partition.size());
    s.row.offset = p.offset;
    s.written_at = p.written_at;
    return s;
}

// Start a bucket with its header.
BucketWriter::BucketWriter() { buf_.assign("QB\x01\x00\x00\x00\x00\x00", kHeader); }

// kind, flags, key, [payload], rowtime, written_at, partition, offset.
std::size_t BucketWriter::entry_size(const PackedState& s) noexcept {
    return 2 + 4 + s.key.size() + (s.has_payload ? 4 + s.payload.size() : 0) + 8 + 8 + 4 +
           s.partition.size() + 8;
}

// Append one state: its size is known up front, so the buffer grows once.
void BucketWriter::add(const PackedState& s) {
    size_t at = buf_.size();
    buf_.resize(at + entry_size(s));
    char* p = &buf_[at];
    auto i64 = [&p](int64_t v) { bytes::put_i64(p, v); };
    auto str = [&p](std::string_view v) { bytes::put_str(p, v); };
    *p++ = (char) s.kind;
    *p++ = (char) ((s.has_payload ? 1 : 0) | (s.has_rowtime ? 2 : 0));
    str(s.key);
    if (s.has_payload) str(s.payload);
    i64(s.rowtime);
    i64(s.written_at);
    str(s.partition);
    i64(s.offset);
    count_++;
}

// Copy an entry's bytes.
void BucketWriter::add_raw(std::string_view entry) {
    buf_.append(entry.data(), entry.size());
    count_++;
}

// Patch the count into the header and hand the bytes over.
std::string BucketWriter::take() {
    for (int i = 0; i < 4; i++) buf_[4 + i] = (char) ((count_ >> (8 * i)) & 0xff);
    return std::move(buf_);
}

// Check the header.
BucketReader::BucketReader(const uint8_t* data, std::size_t len) noexcept : data_(data), len_(len) {
    if (len < kHeader || data[0] != 'Q' || data[1] != 'B' || data[2] != 1 || data[3] != 0) {
        error_ = "not a dedup state bucket";
        return;
    }
    count_ = get_u32(data + 4);
    pos_ = kHeader;
}

// n more bytes, or an error.
bool BucketReader::take(std::size_t n, const uint8_t** p) noexcept {
    if (len_ - pos_ < n) {
        error_ = "truncated dedup state bucket";
        return false;
    }
    *p = data_ + pos_;
    pos_ += n;
    return true;
}

// The next entry.
bool BucketReader::next(PackedState* out) noexcept {
    if (error_ != nullptr) return false;
    if (read_ == count_) {
        if (pos_ != len_) error_ = "trailing bytes after the last dedup state entry";
        return false;
    }
    size_t start = pos_;
    const uint8_t* p;
    auto str = [&](std::string_view* s) {
        if (!take(4, &p)) return false;
        uint32_t n = get_u32(p);
        if (!take(n, &p)) return false;
        *s = std::string_view(reinterpret_cast<const char*>(p), n);
        return true;
    };
    if (!take(2, &p)) return false;
    out->kind = p[0];
    uint8_t flags = p[1];
    if (out->kind < 1 || out->kind > 3 || (flags & ~3) != 0) {
        error_ = "bad dedup state entry kind or flags";
        return false;
    }
    out->has_payload = (flags & 1) != 0;
    out->has_rowtime = (flags & 2) != 0;
    if (!str(&out->key)) return false;
    if (read_ > 0 && !(last_key_ < out->key)) {
        error_ = "dedup state keys out of order";
        return false;
    }
    out->payload = std::string_view();
    if (out->has_payload && !str(&out->payload)) return false;
    if (!take(16, &p)) return false;
    out->rowtime = get_i64(p);
    out->written_at = get_i64(p + 8);
    if (!str(&out->partition)) return false;
    if (!take(8, &p)) return false;
    out->offset = get_i64(p);
    last_key_ = out->key;
    raw_ = std::string_view(reinterpret_cast<const char*>(data_ + start), pos_ - start);
    read_++;
    return true;
}

// One pass over both, in key order.
const char* merge_bucket(std::string_view old, const std::vector<PackedState>& repl,
                         std::string* out) {
    for (size_t i = 1; i < repl.size(); i++)
        if (!(repl[i - 1].key < repl[i].key)) return "dedup state replacements out of order";
    BucketWriter w;
    size_t bytes = old.size() + 8;
    for (const PackedState& s : repl) bytes += BucketWriter::entry_size(s);
    w.reserve(bytes);
    size_t j = 0;
    if (!old.empty()) {
        BucketReader r(reinterpret_cast<const uint8_t*>(old.data()), old.size());
        PackedState e;
        while (r.next(&e)) {
            while (j < repl.size() && repl[j].key < e.key) w.add(repl[j++]);
            if (j < repl.size() && repl[j].key == e.key)
                w.add(repl[j++]);
            else
                w.add_raw(r.raw());
        }
        if (r.error() != nullptr) return r.error();
    }
    while (j < repl.size()) w.add(repl[j++]);
    *out = w.take();
    return nullptr;
}

}  // namespace queen::dedup
