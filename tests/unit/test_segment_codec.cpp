// Unit tests for src/core/common/segment_codec.h: the segment blob and transactionId validation.
// Every decode runs over memory that ends right before an inaccessible page, so a read past the
// end of a blob crashes the test instead of passing unnoticed.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/common/segment_codec.h"

namespace {

using queen::ContentType;
using queen::MessageView;
using queen::SegmentBuilder;
using queen::SegmentReader;
using queen::Uuid;

const char* const kBadMagic = "not a queen segment (bad magic)";
const char* const kBadVersion = "unsupported segment version";
const char* const kEntryTrunc = "segment entry truncated";
const char* const kTxnTrunc = "segment transactionId truncated";
const char* const kPayloadTrunc = "segment payload truncated";
const char* const kBadType = "unknown content type in segment";

// A message that owns its bytes.
struct Msg {
    Uuid id;
    ContentType type;
    std::string txn;
    std::string payload;
};

// An id whose bytes are seed, seed+1, ... (easy to spot in a hex dump).
Uuid id_of(uint8_t seed) {
    Uuid u;
    for (int i = 0; i < 16; i++) u.b[i] = static_cast<uint8_t>(seed + i);
    return u;
}

// The codec's view of an owned message.
MessageView view(const Msg& m) { return MessageView{m.id, m.type, m.txn, m.payload}; }

// Four messages covering every content type, empty txn, empty payload, NUL and high bytes.
std::vector<Msg> sample() {
    return {
        {id_of(0x10), ContentType::Json, "txn-0001", R"({"sku":"A-1","qty":2})"},
        {id_of(0x20), ContentType::Text, "", "hello"},
        {id_of(0x30), ContentType::Octet, "\xc3\xb1-\xc3\xa9", std::string("\0\x01\xff\0", 4)},
        {id_of(0x40), ContentType::Json, "x", ""},
    };
}

// Encode messages with SegmentBuilder.
std::string build(const std::vector<Msg>& ms) {
    SegmentBuilder b;
    for (const auto& m : ms) b.add(view(m));
    EXPECT_EQ(b.count(), ms.size());
    return b.finish();
}

// Offsets where each entry starts, plus the end offset last.
std::vector<std::size_t> entry_offsets(const std::vector<Msg>& ms) {
    std::vector<std::size_t> at = {queen::kSegmentHeaderBytes};
    for (const auto& m : ms)
        at.push_back(at.back() + queen::segment_entry_size(m.txn.size(), m.payload.size()));
    return at;
}

// Overwrite a little-endian u32 inside a blob.
void put_u32(std::string* s, std::size_t at, uint32_t v) {
    for (int i = 0; i < 4; i++) (*s)[at + i] = static_cast<char>(v >> (8 * i));
}

// Bytes placed so that the last one sits right before a PROT_NONE page.
class GuardedBytes {
public:
    explicit GuardedBytes(const std::string& bytes) : size_(bytes.size()) {
        const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
        const std::size_t data_pages = bytes.size() / page + 1;
        map_len_ = (data_pages + 1) * page;
        void* p =
            mmap(nullptr, map_len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
        base_ = static_cast<uint8_t*>(p);
        if (mprotect(base_ + data_pages * page, page, PROT_NONE) != 0)
            throw std::runtime_error("mprotect failed");
        data_ = base_ + data_pages * page - bytes.size();
        if (!bytes.empty()) std::memcpy(data_, bytes.data(), bytes.size());
    }
    ~GuardedBytes() { munmap(base_, map_len_); }
    GuardedBytes(const GuardedBytes&) = delete;
    GuardedBytes& operator=(const GuardedBytes&) = delete;

    uint8_t* data() { return data_; }
    std::size_t size() const { return size_; }

private:
    uint8_t* base_ = nullptr;
    uint8_t* data_ = nullptr;
    std::size_t map_len_ = 0;
    std::size_t size_;
};

// Everything a reader reports about a blob.
struct Decoded {
    uint32_t count = 0;
    std::vector<Msg> msgs;
    const char* error = nullptr;
    bool clean = false;
    bool views_in_bounds = true;
};

// True when [p, p+n) lies inside [lo, hi).
bool inside(const char* p, std::size_t n, const uint8_t* lo, const uint8_t* hi) {
    auto* q = reinterpret_cast<const uint8_t*>(p);
    return n == 0 || (q >= lo && q <= hi && n <= static_cast<std::size_t>(hi - q));
}

// Read a blob to its end, copying every entry (a bad view would fault on the guard page).
Decoded decode(const uint8_t* p, std::size_t n) {
    Decoded d;
    SegmentReader r(p, n);
    d.count = r.count();
    MessageView v;
    while (r.next(&v)) {
        if (!inside(v.txn.data(), v.txn.size(), p, p + n) ||
            !inside(v.payload.data(), v.payload.size(), p, p + n))
            d.views_in_bounds = false;
        d.msgs.push_back(Msg{v.id, v.type, std::string(v.txn), std::string(v.payload)});
    }
    EXPECT_FALSE(r.next(&v)) << "next() must stay false at the end";
    d.error = r.error();
    d.clean = r.at_clean_end();
    return d;
}

// Decode a copy of the bytes placed before a guard page.
Decoded decode_guarded(const std::string& bytes) {
    GuardedBytes g(bytes);
    return decode(g.data(), g.size());
}

// Field-by-field equality of two messages.
void expect_same(const Msg& got, const Msg& want) {
    EXPECT_TRUE(got.id == want.id);
    EXPECT_EQ(got.type, want.type);
    EXPECT_EQ(got.txn, want.txn);
    EXPECT_EQ(got.payload, want.payload);
}

// Build then read back: same messages, clean end, exact size.
TEST(Segment, RoundTrip) {
    auto ms = sample();
    std::string blob = build(ms);
    EXPECT_EQ(blob.size(), entry_offsets(ms).back());
    EXPECT_EQ(blob.size(), 8u + (25 + 8 + 21) + (25 + 0 + 5) + (25 + 5 + 4) + (25 + 1 + 0));
    Decoded d = decode_guarded(blob);
    EXPECT_EQ(d.count, 4u);
    EXPECT_EQ(d.error, nullptr);
    EXPECT_TRUE(d.clean);
    EXPECT_TRUE(d.views_in_bounds);
    ASSERT_EQ(d.msgs.size(), ms.size());
    for (std::size_t i = 0; i < ms.size(); i++) expect_same(d.msgs[i], ms[i]);
}

// The exact bytes of a one-message segment, and the raw writer agrees with the builder.
TEST(Segment, ExactEncoding) {
    Uuid id;
    for (int i = 0; i < 16; i++) id.b[i] = static_cast<uint8_t>(i);
    Msg m{id, ContentType::Json, "ab", "{}"};
    std::string want("QS\x01\x00\x01\x00\x00\x00", 8);
    want.append(reinterpret_cast<const char*>(id.b), 16);
    want.append(
        "\x01\x02\x00\x00\x00"
        "ab"
        "\x02\x00\x00\x00"
        "{}",
        13);
    EXPECT_EQ(queen::segment_entry_size(2, 2), 29u);
    EXPECT_EQ(build({m}), want);

    std::string raw(8 + queen::segment_entry_size(2, 2), '\xee');
    auto* p = reinterpret_cast<uint8_t*>(&raw[0]);
    uint8_t* after_header = queen::segment_write_header(p, 1);
    EXPECT_EQ(after_header, p + 8);
    uint8_t* end = queen::segment_write_entry(after_header, view(m));
    EXPECT_EQ(end, p + raw.size());
    EXPECT_EQ(raw, want);
}

// Counts are little-endian u32.
TEST(Segment, CountIsLittleEndian) {
    std::vector<Msg> ms;
    for (int i = 0; i < 258; i++)
        ms.push_back(
            {id_of(static_cast<uint8_t>(i)), ContentType::Text, "t" + std::to_string(i), "p"});
    std::string blob = build(ms);
    EXPECT_EQ(static_cast<uint8_t>(blob[4]), 0x02);
    EXPECT_EQ(static_cast<uint8_t>(blob[5]), 0x01);
    EXPECT_EQ(static_cast<uint8_t>(blob[6]), 0x00);
    EXPECT_EQ(static_cast<uint8_t>(blob[7]), 0x00);
    Decoded d = decode_guarded(blob);
    EXPECT_EQ(d.count, 258u);
    ASSERT_EQ(d.msgs.size(), 258u);
    EXPECT_EQ(d.msgs[257].txn, "t257");
    EXPECT_TRUE(d.clean);
}

// An empty segment is just the header, and reads as a clean end.
TEST(Segment, Empty) {
    SegmentBuilder b;
    std::string blob = b.finish();
    EXPECT_EQ(blob, std::string("QS\x01\x00\x00\x00\x00\x00", 8));
    Decoded d = decode_guarded(blob);
    EXPECT_EQ(d.count, 0u);
    EXPECT_TRUE(d.msgs.empty());
    EXPECT_EQ(d.error, nullptr);
    EXPECT_TRUE(d.clean);
}

// Every proper prefix of a valid segment is an error naming the truncated part; the complete
// entries before the cut are still returned, and nothing past the cut is read.
TEST(Segment, EveryTruncationDetected) {
    auto ms = sample();
    std::string blob = build(ms);
    auto at = entry_offsets(ms);
    for (std::size_t len = 0; len < blob.size(); len++) {
        SCOPED_TRACE("prefix length " + std::to_string(len));
        Decoded d = decode_guarded(blob.substr(0, len));
        EXPECT_FALSE(d.clean);
        EXPECT_TRUE(d.views_in_bounds);
        if (len < queen::kSegmentHeaderBytes) {
            EXPECT_STREQ(d.error, kBadMagic);
            EXPECT_EQ(d.count, 0u);
            EXPECT_TRUE(d.msgs.empty());
            continue;
        }
        std::size_t k = 0;
        while (at[k + 1] <= len) k++;
        const std::size_t rem = len - at[k];
        const char* want = rem < queen::kSegmentEntryOverhead                      ? kEntryTrunc
                           : rem < queen::kSegmentEntryOverhead + ms[k].txn.size() ? kTxnTrunc
                                                                                   : kPayloadTrunc;
        EXPECT_EQ(d.count, 4u);
        EXPECT_STREQ(d.error, want);
        ASSERT_EQ(d.msgs.size(), k);
        for (std::size_t i = 0; i < k; i++) expect_same(d.msgs[i], ms[i]);
    }
}

// Bytes after the last counted entry: every entry reads, no error, but not a clean end.
TEST(Segment, TrailingBytes) {
    auto ms = sample();
    Decoded d = decode_guarded(build(ms) + std::string(1, '\0'));
    EXPECT_EQ(d.msgs.size(), ms.size());
    EXPECT_EQ(d.error, nullptr);
    EXPECT_FALSE(d.clean);
}

// A count that disagrees with the entries present.
TEST(Segment, CountMismatch) {
    auto ms = sample();
    std::string blob = build(ms);

    std::string more = blob;
    put_u32(&more, 4, 5);
    Decoded d = decode_guarded(more);
    EXPECT_EQ(d.msgs.size(), 4u);
    EXPECT_STREQ(d.error, kEntryTrunc);
    EXPECT_FALSE(d.clean);

    std::string huge = blob;
    put_u32(&huge, 4, 0xffffffffu);
    d = decode_guarded(huge);
    EXPECT_EQ(d.count, 0xffffffffu);
    EXPECT_EQ(d.msgs.size(), 4u);
    EXPECT_STREQ(d.error, kEntryTrunc);
    EXPECT_FALSE(d.clean);

    std::string fewer = blob;
    put_u32(&fewer, 4, 3);
    d = decode_guarded(fewer);
    EXPECT_EQ(d.msgs.size(), 3u);
    EXPECT_EQ(d.error, nullptr);
    EXPECT_FALSE(d.clean);  // the fourth entry trails
}

// Wrong magic, version or flags are rejected before any entry is read.
TEST(Segment, BadHeader) {
    std::string blob = build(sample());
    struct Case {
        std::size_t at;
        char value;
        const char* want;
    } cases[] = {
        {0, 'X', kBadMagic}, {1, 'T', kBadMagic}, {0, 'q', kBadMagic},      {2, 0, kBadVersion},
        {2, 2, kBadVersion}, {3, 1, kBadVersion}, {3, '\x80', kBadVersion},
    };
    for (const auto& c : cases) {
        std::string bad = blob;
        bad[c.at] = c.value;
        Decoded d = decode_guarded(bad);
        EXPECT_STREQ(d.error, c.want) << "byte " << c.at;
        EXPECT_EQ(d.count, 0u);
        EXPECT_TRUE(d.msgs.empty());
        EXPECT_FALSE(d.clean);
    }
    Decoded d = decode(nullptr, 0);
    EXPECT_STREQ(d.error, kBadMagic);
    EXPECT_FALSE(d.clean);
}

// Content types other than 1..4 are rejected, in the first entry or a later one.
TEST(Segment, UnknownContentType) {
    auto ms = sample();
    std::string blob = build(ms);
    auto at = entry_offsets(ms);
    for (uint8_t type : {0, 5, 0x7f, 0xff}) {
        for (std::size_t k : {std::size_t{0}, std::size_t{2}}) {
            std::string bad = blob;
            bad[at[k] + 16] = static_cast<char>(type);
            Decoded d = decode_guarded(bad);
            EXPECT_STREQ(d.error, kBadType) << "type " << int(type) << " entry " << k;
            EXPECT_EQ(d.msgs.size(), k);
            EXPECT_FALSE(d.clean);
        }
    }
}

// Length fields that point past the end, including values that would overflow a naive sum.
TEST(Segment, BadLengths) {
    // header 8 | id 16 | type 1 | txn_len @25 | "abc" @29 | payload_len @32 | "xyz" @36 | end 39
    std::string blob = build({{id_of(1), ContentType::Text, "abc", "xyz"}});
    ASSERT_EQ(blob.size(), 39u);
    struct Case {
        std::size_t field;
        uint32_t value;
        const char* want;  // nullptr: reads, then trailing bytes
        std::size_t msgs;
    } cases[] = {
        {25, 0xffffffffu, kTxnTrunc, 0},
        {25, 0x80000000u, kTxnTrunc, 0},
        {25, 11, kTxnTrunc, 0},     // longer than what is left
        {25, 10, kTxnTrunc, 0},     // exactly what is left: no room for payload_len
        {25, 7, kTxnTrunc, 0},      // three bytes left for the 4-byte payload_len
        {25, 6, kPayloadTrunc, 0},  // payload_len then reads "\0xyz" as a huge length
        {32, 0xffffffffu, kPayloadTrunc, 0},
        {32, 0xfffffffdu, kPayloadTrunc, 0},
        {32, 4, kPayloadTrunc, 0},
        {32, 2, nullptr, 1},
    };
    for (const auto& c : cases) {
        std::string bad = blob;
        put_u32(&bad, c.field, c.value);
        Decoded d = decode_guarded(bad);
        if (c.want)
            EXPECT_STREQ(d.error, c.want) << "field " << c.field << " = " << c.value;
        else
            EXPECT_EQ(d.error, nullptr) << "field " << c.field << " = " << c.value;
        EXPECT_EQ(d.msgs.size(), c.msgs) << "field " << c.field << " = " << c.value;
        EXPECT_FALSE(d.clean);
        EXPECT_TRUE(d.views_in_bounds);
    }
}

// Random corruption and random cuts never read out of bounds, and a blob the reader calls clean
// really is a consistent segment.
TEST(Segment, RandomCorruptionStaysInBounds) {
    auto ms = sample();
    const std::string blob = build(ms);
    const uint32_t lengths[] = {0, 1, 3, 4, 25, 0x7fffffffu, 0x80000000u, 0xfffffffcu, 0xffffffffu};
    std::mt19937 rng(20240601);
    int clean = 0;
    for (int iter = 0; iter < 20000; iter++) {
        std::string bad = blob;
        const int edits = 1 + static_cast<int>(rng() % 3);
        for (int e = 0; e < edits; e++) {
            const std::size_t pos = rng() % bad.size();
            if (rng() % 2 == 0 || pos + 4 > bad.size())
                bad[pos] = static_cast<char>(rng());
            else
                put_u32(&bad, pos, lengths[rng() % (sizeof lengths / sizeof lengths[0])]);
        }
        if (rng() % 4 == 0) bad.resize(rng() % (bad.size() + 1));
        Decoded d = decode_guarded(bad);
        ASSERT_TRUE(d.views_in_bounds) << "iteration " << iter;
        if (d.clean) {
            clean++;
            ASSERT_EQ(d.error, nullptr);
            ASSERT_EQ(d.msgs.size(), d.count);
            std::size_t size = queen::kSegmentHeaderBytes;
            for (const auto& m : d.msgs)
                size += queen::segment_entry_size(m.txn.size(), m.payload.size());
            ASSERT_EQ(size, bad.size()) << "iteration " << iter;
        } else {
            ASSERT_TRUE(d.error != nullptr || d.msgs.size() == d.count) << "iteration " << iter;
        }
    }
    EXPECT_GT(clean, 0);  // some edits hit ids or payload bytes and stay valid
}

// ---- validate_txn_id ----

const char* const kCtl = "transactionId contains a control character";
const char* const kUtf8 = "transactionId is not valid UTF-8";
const char* const kLong = "transactionId is longer than 65535 bytes";

// Validate a byte string (embedded NULs included).
const char* validate(const std::string& s) { return queen::validate_txn_id(s); }

// Up to 65,535 bytes is fine; one more is not.
TEST(ValidateTxnId, Length) {
    EXPECT_EQ(queen::kMaxTxnBytes, 65535u);
    EXPECT_EQ(validate(std::string(65535, 'a')), nullptr);
    EXPECT_STREQ(validate(std::string(65536, 'a')), kLong);
    EXPECT_STREQ(validate(std::string(1 << 20, 'a')), kLong);
    std::string euros;
    for (int i = 0; i < 21845; i++) euros += "\xe2\x82\xac";  // U+20AC, 3 bytes: 65,535 bytes
    ASSERT_EQ(euros.size(), 65535u);
    EXPECT_EQ(validate(euros), nullptr);
    EXPECT_STREQ(validate(euros + "a"), kLong);
    EXPECT_EQ(validate(""), nullptr);
}

// C0 controls (0x00-0x1f) and DEL are rejected anywhere; other ASCII is fine.
TEST(ValidateTxnId, AsciiControls) {
    for (int c = 0; c < 128; c++) {
        std::string s = "ab" + std::string(1, static_cast<char>(c)) + "cd";
        if (c < 0x20 || c == 0x7f)
            EXPECT_STREQ(validate(s), kCtl) << "byte " << c;
        else
            EXPECT_EQ(validate(s), nullptr) << "byte " << c;
    }
    EXPECT_STREQ(validate("\x01"), kCtl);
    EXPECT_STREQ(validate("txn\x1f"), kCtl);
    EXPECT_STREQ(validate("\x7f"), kCtl);
    EXPECT_STREQ(validate(std::string("a\0b", 3)), kCtl);
    EXPECT_STREQ(validate("tab\there"), kCtl);
    EXPECT_STREQ(validate("line\n"), kCtl);
}

// C1 controls U+0080..U+009F (e.g. U+0085 NEL) are rejected; U+00A0 and above are fine.
TEST(ValidateTxnId, C1Controls) {
    for (int cp = 0x80; cp <= 0x9f; cp++) {
        std::string s = "x";
        s += static_cast<char>(0xc0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3f));
        EXPECT_STREQ(validate(s), kCtl) << "U+" << std::hex << cp;
    }
    EXPECT_STREQ(validate("\xc2\x85"), kCtl);
    EXPECT_STREQ(validate("next\xc2\x85line"), kCtl);
    EXPECT_EQ(validate("\xc2\xa0"), nullptr);  // U+00A0 no-break space
    EXPECT_EQ(validate("\xc2\xbf"), nullptr);  // U+00BF
}

// Malformed UTF-8 of every kind is rejected.
TEST(ValidateTxnId, InvalidUtf8) {
    const std::vector<std::string> bad = {
        "\x80",                  // lone continuation byte
        "a\xbf",                 // lone continuation after ASCII
        "\xc3",                  // truncated 2-byte
        "\xe2\x82",              // truncated 3-byte
        "\xf0\x9f\x98",          // truncated 4-byte
        "\xc3\x28",              // bad continuation
        "\xe2\x28\xa1",          // bad continuation in 3-byte
        "\xf0\x9f\x28\x80",      // bad continuation in 4-byte
        "\xc0\xaf",              // overlong '/'
        "\xc1\xbf",              // overlong
        "\xe0\x80\xaf",          // overlong 3-byte
        "\xe0\x9f\xbf",          // overlong 3-byte (U+07FF)
        "\xf0\x80\x80\xaf",      // overlong 4-byte
        "\xf0\x8f\xbf\xbf",      // overlong 4-byte (U+FFFF)
        "\xed\xa0\x80",          // surrogate U+D800
        "\xed\xbf\xbf",          // surrogate U+DFFF
        "\xf4\x90\x80\x80",      // U+110000
        "\xf5\x80\x80\x80",      // lead byte past U+10FFFF
        "\xf8\x88\x80\x80\x80",  // 5-byte form
        "\xfc\x84\x80\x80\x80\x80",
        "\xfe",
        "\xff",
        "ok-then-\xff",
    };
    for (const auto& s : bad)
        EXPECT_STREQ(validate(s), kUtf8) << "accepted bytes of length " << s.size();
}

// Ordinary text in any script is accepted, up to the last code point.
TEST(ValidateTxnId, OrdinaryUnicode) {
    const std::vector<std::string> good = {
        "txn-0001",
        "0189d1e2-3f4a-7b5c-8d6e-7f8091a2b3c4",
        "order 42 / user@example ~!#$%^&*()_+{}|:\"<>?",
        "\xc3\xb1\x61nd\xc3\xba-42",                         // ñandú-42
        "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",              // 日本語
        "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82",  // Привет
        "\xf0\x9f\x98\x80",                                  // U+1F600 emoji
        "\xed\x9f\xbf",                                      // U+D7FF, just below the surrogates
        "\xee\x80\x80",                                      // U+E000, just above them
        "\xef\xbf\xbf",                                      // U+FFFF
        "\xf0\x90\x80\x80",                                  // U+10000
        "\xf4\x8f\xbf\xbf",                                  // U+10FFFF
        "\xe2\x80\xa8",                                      // U+2028 (not C0/C1: accepted)
    };
    for (const auto& s : good) EXPECT_EQ(validate(s), nullptr) << s;
}

}  // namespace
