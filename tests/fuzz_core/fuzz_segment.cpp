// libFuzzer target: the segment decoder (queen::SegmentReader) and the transactionId check
// (queen::validate_txn_id) on arbitrary bytes, as the extension's binary push meets them.
// Build and run: make fuzz-core (clang, ASan + UBSan); make fuzz-core-regress replays the seeds.
//
// Checked on every input:
//   - the reader never reads out of bounds (ASan) and every view it hands out lies in the input;
//   - it stops with an error, or after exactly count() entries; an error is sticky;
//   - validate_txn_id agrees with an independent table-driven UTF-8 check (Unicode 3-7);
//   - the entries that pass are re-encoded with SegmentBuilder, and that blob decodes to the
//     same views with nothing trailing; when every entry passed and the input ended cleanly,
//     the re-encoding is the input byte for byte.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/segment_codec.h"

// Abort with a message libFuzzer shows next to the reproducer.
#define FUZZ_CHECK(cond)                                                                         \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            std::fprintf(stderr, "fuzz_segment: check failed: %s (line %d)\n", #cond, __LINE__); \
            __builtin_trap();                                                                    \
        }                                                                                        \
    } while (0)

namespace {

// Reference check written from Unicode's table of well-formed UTF-8 byte sequences (3-7),
// plus queen's rule: no C0 controls, no DEL, no C1 controls (U+0080..U+009F), at most 65,535
// bytes. True when the id is acceptable.
bool reference_txn_ok(std::string_view s) {
    if (s.size() > queen::kMaxTxnBytes) return false;
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    std::size_t n = s.size(), i = 0;
    while (i < n) {
        unsigned char c = p[i];
        // Allowed range of the second byte, and how many bytes the sequence takes.
        unsigned lo = 0x80, hi = 0xbf;
        std::size_t len;
        if (c <= 0x7f) {
            if (c < 0x20 || c == 0x7f) return false;
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            len = 2;
            if (c == 0xc2) lo = 0xa0;  // U+0080..U+009F are C1 controls
        } else if (c == 0xe0) {
            len = 3;
            lo = 0xa0;
        } else if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef) {
            len = 3;
        } else if (c == 0xed) {
            len = 3;
            hi = 0x9f;  // no surrogates
        } else if (c == 0xf0) {
            len = 4;
            lo = 0x90;
        } else if (c >= 0xf1 && c <= 0xf3) {
            len = 4;
        } else if (c == 0xf4) {
            len = 4;
            hi = 0x8f;
        } else {
            return false;
        }
        if (n - i < len) return false;
        if (p[i + 1] < lo || p[i + 1] > hi) return false;
        for (std::size_t k = 2; k < len; k++)
            if (p[i + k] < 0x80 || p[i + k] > 0xbf) return false;
        i += len;
    }
    return true;
}

// True when view v lies inside [base, base + len).
bool inside(std::string_view v, const uint8_t* base, std::size_t len) {
    auto b = reinterpret_cast<std::uintptr_t>(base);
    auto d = reinterpret_cast<std::uintptr_t>(v.data());
    if (v.empty()) return true;  // an empty view may point anywhere; it is never read
    return d >= b && v.size() <= len && d - b <= len - v.size();
}

// Same id, type and bytes.
bool same(const queen::MessageView& a, const queen::MessageView& b) {
    return std::memcmp(a.id.b, b.id.b, 16) == 0 && a.type == b.type && a.txn == b.txn &&
           a.payload == b.payload;
}

}  // namespace

// One input.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // The transactionId check on the raw bytes, against the reference.
    std::string_view raw(reinterpret_cast<const char*>(data), size);
    FUZZ_CHECK((queen::validate_txn_id(raw) == nullptr) == reference_txn_ok(raw));

    queen::SegmentReader reader(data, size);
    if (reader.error() != nullptr) {
        queen::MessageView m;
        FUZZ_CHECK(!reader.next(&m));
        FUZZ_CHECK(!reader.at_clean_end());
        return 0;
    }
    std::vector<queen::MessageView> all, kept;
    queen::MessageView m;
    while (reader.next(&m)) {
        FUZZ_CHECK(inside(m.txn, data, size));
        FUZZ_CHECK(inside(m.payload, data, size));
        FUZZ_CHECK(m.type == queen::ContentType::Json || m.type == queen::ContentType::Text ||
                   m.type == queen::ContentType::Octet || m.type == queen::ContentType::Jsonb);
        all.push_back(m);
        bool ok = queen::validate_txn_id(m.txn) == nullptr;
        FUZZ_CHECK(ok == reference_txn_ok(m.txn));
        if (ok) kept.push_back(m);
    }
    FUZZ_CHECK(all.size() <= reader.count());
    // Stopped early only with a reason; a stopped reader stays stopped.
    FUZZ_CHECK((all.size() == reader.count()) == (reader.error() == nullptr));
    FUZZ_CHECK(!reader.next(&m));
    if (reader.error() != nullptr) FUZZ_CHECK(!reader.at_clean_end());

    // Round trip of the survivors.
    queen::SegmentBuilder builder;
    for (const auto& k : kept) builder.add(k);
    const std::string& blob = builder.finish();
    FUZZ_CHECK(builder.count() == kept.size());
    const auto* bdata = reinterpret_cast<const uint8_t*>(blob.data());
    queen::SegmentReader again(bdata, blob.size());
    FUZZ_CHECK(again.error() == nullptr);
    FUZZ_CHECK(again.count() == kept.size());
    for (const auto& k : kept) {
        FUZZ_CHECK(again.next(&m));
        FUZZ_CHECK(same(m, k));
    }
    FUZZ_CHECK(!again.next(&m));
    FUZZ_CHECK(again.at_clean_end());
    if (reader.at_clean_end() && kept.size() == all.size())
        FUZZ_CHECK(blob.size() == size && std::memcmp(blob.data(), data, size) == 0);
    return 0;
}
