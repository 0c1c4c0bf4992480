// libFuzzer target: the push body parser, layer 1 and the JSON writer must never crash, leak or
// read out of bounds on any input, and the parser must agree with the reference parser (the
// first, simdjson-based one: reference_push_parser.h) on every input: same verdict, same error
// kind and item, same items. Build and run: make sidecar-fuzz (clang, ASan + UBSan).
//
// Known, intended differences (not reported): simdjson refuses numbers it cannot represent
// (beyond 64-bit integers or doubles) although they are valid JSON, which the sidecar now
// accepts; and a payload is kept as sent minus whitespace instead of being re-serialized, so
// payloads are compared after re-serializing both with simdjson.
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "core/common/segment_codec.h"
#include "common/json_writer.h"
#include "push/push_request.h"
#include "reference_push_parser.h"

namespace {

// Stop with a message (libFuzzer saves the input).
[[noreturn]] void mismatch(const char* what) {
    std::fprintf(stderr, "push_request_fuzz: %s\n", what);
    __builtin_trap();
}

// A payload re-serialized by simdjson ("" when it does not parse).
std::string canonical(const std::string& payload) {
    static simdjson::dom::parser parser;
    simdjson::padded_string padded(payload);
    simdjson::dom::element el;
    if (parser.parse(padded).get(el)) return std::string();
    return simdjson::minify(el);
}

// Whether the reference refused a number that the new parser may accept.
bool reference_number_refusal(const queen::sidecar::Status& s) {
    const std::string& m = s.message();
    return m.find("number") != std::string::npos || m.find("NUMBER") != std::string::npos ||
           m.find("integer") != std::string::npos || m.find("BIGINT") != std::string::npos;
}

}  // namespace

// One input: parse with both parsers, compare, mark leaders, render what a reply would contain.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static queen::UuidV7Generator gen(1);
    queen::sidecar::ParseLimits lim;
    lim.max_items = 1000;
    lim.max_payload_bytes = 1 << 20;  // above -max_len: payload sizes are not compared
    queen::sidecar::PushRequest req, ref;
    int64_t bad = -1, ref_bad = -1;
    std::string_view body(reinterpret_cast<const char*>(data), size);
    queen::sidecar::Status s = queen::sidecar::parse_push_body(body, lim, gen, &req, &bad);
    queen::sidecar::Status r =
        queen::sidecar::reference::parse_push_body(body, lim, gen, &ref, &ref_bad);
    if (!s.is_ok()) {
        if (r.is_ok()) mismatch("the reference accepted a body the parser refused");
        if (s.code() != r.code() || bad != ref_bad) {
            // A number only the reference refused may let the parser get further.
            if (!(reference_number_refusal(r) && ref_bad < 0))
                mismatch("both refused, but for different kinds or items");
        }
        std::string err = queen::sidecar::json_error_body(s.message(), "bad_request", bad);
        if (err.empty() || bad >= static_cast<int64_t>(size) + 1) __builtin_trap();
        return 0;
    }
    if (!r.is_ok()) {
        if (!reference_number_refusal(r)) mismatch("the parser accepted a body the reference refused");
    } else {
        if (req.items.size() != ref.items.size()) mismatch("item counts differ");
        for (std::size_t i = 0; i < req.items.size(); i++) {
            const auto& a = req.items[i];
            const auto& b = ref.items[i];
            if (a.queue != b.queue || a.partition != b.partition) mismatch("names differ");
            // A given transactionId must match; an item without one is a new message on
            // each side, its transactionId its own message id's text (the two parses draw
            // different ids from the generator).
            auto own_id = [](const queen::sidecar::PushItem& it) {
                char t[37];
                queen::uuid_to_text(it.id, t);
                return it.txn == std::string_view(t, 36);
            };
            if (own_id(a) && own_id(b)) {
                if (!(a.hash == queen::txn_hash(a.txn)) || !(b.hash == queen::txn_hash(b.txn)))
                    mismatch("an id-less item's hash is not its transactionId's");
            } else if (a.txn != b.txn || !(a.hash == b.hash)) {
                mismatch("transactionIds differ");
            }
            if (canonical(a.payload) != b.payload) mismatch("payloads differ");
        }
    }
    queen::sidecar::apply_layer1(&req);
    std::string out;
    for (std::size_t i = 0; i < req.items.size(); i++) {
        const auto& it = req.items[i];
        if (it.leader >= static_cast<int32_t>(i)) __builtin_trap();  // a leader always comes first
        if (queen::validate_txn_id(it.txn) != nullptr) __builtin_trap();
        queen::sidecar::json_append_string(&out, it.txn);
        queen::sidecar::json_append_string(&out, it.queue);
        queen::sidecar::json_append_string(&out, it.partition);
    }
    return 0;
}
