// Change block codec; see dedup_changes.h.
#include "core/views/changes.h"

#include <cstring>

#include "core/views/bytes.h"

namespace queen::dedup {

using bytes::get_i64;
using bytes::get_u32;


// Start a block with its header, after `prefix` zero bytes.
template <class Str>
BasicChangeBlockWriter<Str>::BasicChangeBlockWriter(std::size_t prefix,
                                                    const typename Str::allocator_type& alloc)
    : buf_(alloc), prefix_(prefix) {
    buf_.assign(prefix, '\0');
    buf_.append("QC\x01\x00\x00\x00\x00\x00", 8);
}

// Append one change: its size is known up front, so the buffer grows once and the fields are
// written in place.
template <class Str>
void BasicChangeBlockWriter<Str>::add(const PackedChange& c) {
    size_t at = buf_.size();
    buf_.resize(at + 2 + 4 + c.key.size() + 4 + c.payload.size() + 8 + 4 + c.partition.size() + 8);
    char* p = &buf_[at];
    auto i64 = [&p](int64_t v) { bytes::put_i64(p, v); };
    auto str = [&p](std::string_view v) { bytes::put_str(p, v); };
    *p++ = (char) c.kind;
    *p++ = (char) ((c.key_null ? 1 : 0) | (c.rowtime_null ? 2 : 0));
    str(c.key);
    str(c.payload);
    i64(c.rowtime);
    str(c.partition);
    i64(c.offset);
    count_++;
}

// Patch the count into the header.
template <class Str>
const Str& BasicChangeBlockWriter<Str>::finish() {
    for (int i = 0; i < 4; i++) buf_[prefix_ + 4 + i] = (char) ((count_ >> (8 * i)) & 0xff);
    return buf_;
}

template class BasicChangeBlockWriter<std::string>;
template class BasicChangeBlockWriter<std::pmr::string>;

// Check the header.
ChangeBlockReader::ChangeBlockReader(const uint8_t* data, std::size_t len) noexcept
    : data_(data), len_(len) {
    if (len < 8 || data[0] != 'Q' || data[1] != 'C' || data[2] != 1) {
        error_ = "not a change block";
        return;
    }
    count_ = get_u32(data + 4);
    pos_ = 8;
}

// n more bytes, or an error.
bool ChangeBlockReader::take(std::size_t n, const uint8_t** p) noexcept {
    if (len_ - pos_ < n) {
        error_ = "truncated change block";
        return false;
    }
    *p = data_ + pos_;
    pos_ += n;
    return true;
}

// The next change.
bool ChangeBlockReader::next(PackedChange* out) noexcept {
    if (error_ != nullptr || read_ == count_) return false;
    const uint8_t* p;
    std::string_view* strs[3] = {&out->key, &out->payload, &out->partition};
    if (!take(2, &p)) return false;
    if (p[0] > 2 || p[1] > 3) {
        error_ = "bad change kind or flags";
        return false;
    }
    out->kind = p[0];
    out->key_null = p[1] & 1;
    out->rowtime_null = p[1] & 2;
    for (int i = 0; i < 3; i++) {
        if (!take(4, &p)) return false;
        uint32_t n = get_u32(p);
        if (!take(n, &p)) return false;
        *strs[i] = std::string_view((const char*) p, n);
        if (i == 1) {
            if (!take(8, &p)) return false;
            out->rowtime = get_i64(p);
        }
    }
    if (!take(8, &p)) return false;
    out->offset = get_i64(p);
    read_++;
    return true;
}

// Unquote a JSON string (escapes \" \\ \/ \b \f \n \r \t \uXXXX, surrogate pairs included).
std::string json_scalar_text(std::string_view j, bool* is_null) {
    *is_null = j == "null";
    if (*is_null) return std::string();
    if (j.size() < 2 || j.front() != '"' || j.back() != '"') return std::string(j);
    std::string out;
    auto hex4 = [&](size_t at, uint32_t* v) {
        if (at + 4 > j.size() - 1) return false;
        *v = 0;
        for (size_t k = at; k < at + 4; k++) {
            char c = j[k];
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0) return false;
            *v = *v << 4 | (uint32_t) d;
        }
        return true;
    };
    auto utf8 = [&](uint32_t cp) {
        if (cp < 0x80) {
            out.push_back((char) cp);
        } else if (cp < 0x800) {
            out.push_back((char) (0xc0 | cp >> 6));
            out.push_back((char) (0x80 | (cp & 0x3f)));
        } else if (cp < 0x10000) {
            out.push_back((char) (0xe0 | cp >> 12));
            out.push_back((char) (0x80 | ((cp >> 6) & 0x3f)));
            out.push_back((char) (0x80 | (cp & 0x3f)));
        } else {
            out.push_back((char) (0xf0 | cp >> 18));
            out.push_back((char) (0x80 | ((cp >> 12) & 0x3f)));
            out.push_back((char) (0x80 | ((cp >> 6) & 0x3f)));
            out.push_back((char) (0x80 | (cp & 0x3f)));
        }
    };
    for (size_t i = 1; i + 1 < j.size(); i++) {
        char c = j[i];
        if (c != '\\' || i + 2 >= j.size()) {
            out.push_back(c);
            continue;
        }
        char e = j[++i];
        switch (e) {
            case 'b': out.push_back('\b'); break;
            case 'f': out.push_back('\f'); break;
            case 'n': out.push_back('\n'); break;
            case 'r': out.push_back('\r'); break;
            case 't': out.push_back('\t'); break;
            case 'u': {
                uint32_t cp, lo;
                if (!hex4(i + 1, &cp)) {
                    out.push_back(e);
                    break;
                }
                i += 4;
                if (cp >= 0xd800 && cp < 0xdc00 && i + 6 < j.size() && j[i + 1] == '\\' &&
                    j[i + 2] == 'u' && hex4(i + 3, &lo) && lo >= 0xdc00 && lo < 0xe000) {
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                    i += 6;
                }
                utf8(cp);
                break;
            }
            default: out.push_back(e);  // \" \\ \/
        }
    }
    return out;
}

}  // namespace queen::dedup
