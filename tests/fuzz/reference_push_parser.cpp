// The reference push parser (see reference_push_parser.h): the sidecar's parser before
// json_scan replaced it, apart from its namespace and two later rules of the parser: a decoded
// zero byte in any string (only \u0000 can produce one) refuses the body, as PostgreSQL does,
// and an absent transactionId is derived from the body (derived_txn).
#include "reference_push_parser.h"

#include <simdjson.h>

#include "core/common/segment_codec.h"
#include "core/common/uuidv7.h"

namespace queen::sidecar::reference {

namespace {

// A thread's reusable parser (simdjson parsers are not thread-safe, and reuse saves allocation).
simdjson::dom::parser& thread_parser() {
    thread_local simdjson::dom::parser p;
    return p;
}

// Read an optional string field; BadRequest when present but not a string.
Status optional_string(simdjson::dom::object obj, const char* key, std::string_view* out,
                       bool* present) {
    auto f = obj[key];
    if (f.error() == simdjson::NO_SUCH_FIELD) {
        *present = false;
        return Status::ok();
    }
    if (f.error()) return Status(StatusCode::BadRequest, std::string(key) + " is unreadable");
    std::string_view sv;
    if (f.get(sv) != simdjson::SUCCESS)
        return Status(StatusCode::BadRequest, std::string(key) + " must be a string");
    *out = sv;
    *present = true;
    return Status::ok();
}

// Whether any string (key or value) under e holds a zero byte once decoded.
bool holds_zero_byte(simdjson::dom::element e) {
    switch (e.type()) {
        case simdjson::dom::element_type::STRING: {
            std::string_view sv;
            return !e.get(sv) && sv.find('\0') != std::string_view::npos;
        }
        case simdjson::dom::element_type::ARRAY: {
            simdjson::dom::array arr;
            if (e.get(arr)) return false;
            for (simdjson::dom::element c : arr)
                if (holds_zero_byte(c)) return true;
            return false;
        }
        case simdjson::dom::element_type::OBJECT: {
            simdjson::dom::object obj;
            if (e.get(obj)) return false;
            for (auto kv : obj)
                if (kv.key.find('\0') != std::string_view::npos || holds_zero_byte(kv.value))
                    return true;
            return false;
        }
        default:
            return false;
    }
}

}  // namespace

// Parse and validate every item; the first bad item stops parsing.
Status parse_push_body(std::string_view body, const ParseLimits& limits,
                       queen::UuidV7Generator& gen, PushRequest* out, int64_t* bad_index) {
    *bad_index = -1;
    out->items.clear();
    simdjson::padded_string padded(body.data(), body.size());
    simdjson::dom::element root;
    auto err = thread_parser().parse(padded).get(root);
    if (err)
        return Status(StatusCode::BadRequest,
                      std::string("malformed JSON: ") + simdjson::error_message(err));
    if (holds_zero_byte(root))
        return Status(StatusCode::BadRequest, "malformed JSON: \\u0000 cannot be stored");
    simdjson::dom::array items;
    if (root.is_object()) {
        simdjson::dom::object o;
        if (root.get(o)) return Status(StatusCode::BadRequest, "body must be an object");
        auto f = o["items"];
        if (f.error()) return Status(StatusCode::BadRequest, "items is missing");
        if (f.get(items)) return Status(StatusCode::BadRequest, "items must be an array");
    } else if (root.get(items)) {
        return Status(StatusCode::BadRequest, "body must be an object with an items array");
    }
    std::size_t n = items.size();
    if (static_cast<int64_t>(n) > limits.max_items)
        return Status(StatusCode::TooLarge, "too many items: " + std::to_string(n) + " > " +
                                                std::to_string(limits.max_items));
    out->items.reserve(n);
    uint64_t now = queen::unix_ms_now();
    int64_t idx = 0;
    for (simdjson::dom::element el : items) {
        *bad_index = idx;
        simdjson::dom::object obj;
        if (el.get(obj)) return Status(StatusCode::BadRequest, "item must be an object");
        PushItem it;
        std::string_view sv;
        bool present = false;
        Status s = optional_string(obj, "queue", &sv, &present);
        if (!s.is_ok()) return s;
        if (!present) return Status(StatusCode::BadRequest, "queue is missing");
        if (const char* why = validate_queue_name(sv))
            return Status(StatusCode::BadRequest, std::string("queue ") + why);
        it.queue.assign(sv);
        s = optional_string(obj, "partition", &sv, &present);
        if (!s.is_ok()) return s;
        if (present) {
            if (const char* why = validate_name(sv))
                return Status(StatusCode::BadRequest, std::string("partition ") + why);
            it.partition.assign(sv);
        } else {
            it.partition = "Default";
        }
        auto payload = obj["payload"];
        if (payload.error() == simdjson::NO_SUCH_FIELD)
            return Status(StatusCode::BadRequest, "payload is missing");
        if (payload.error()) return Status(StatusCode::BadRequest, "payload is unreadable");
        it.payload = simdjson::minify(payload.value_unsafe());
        if (static_cast<int64_t>(it.payload.size()) > limits.max_payload_bytes)
            return Status(
                StatusCode::TooLarge,
                "payload is larger than " + std::to_string(limits.max_payload_bytes) + " bytes");
        it.id = gen.next(now);
        s = optional_string(obj, "transactionId", &sv, &present);
        if (!s.is_ok()) return s;
        if (present) {
            if (const char* why = queen::validate_txn_id(sv))
                return Status(StatusCode::BadRequest, why);
            it.txn.assign(sv);
        }
        if (it.txn.empty()) {  // a new message: its transactionId is its own id's text
            char idbuf[37];
            queen::uuid_to_text(it.id, idbuf);
            it.txn.assign(idbuf, 36);
        }
        it.hash = queen::txn_hash(it.txn);
        out->items.push_back(std::move(it));
        idx++;
    }
    *bad_index = -1;
    return Status::ok();
}

}  // namespace queen::sidecar::reference
