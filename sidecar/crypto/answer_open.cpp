// Opening an answer's payloads (see answer_open.h): one scan of the top object, one of each
// message, then the text copied with the payload spans replaced.
#include "crypto/answer_open.h"

#include <vector>

#include "common/json_scan.h"

namespace queen::sidecar::crypto {

namespace {

// A string value's bytes.
std::string decoded(const json::Value& v) {
    std::string s;
    if (v.escaped)
        json::unescape(v, &s);
    else
        s.assign(v.begin, v.end);
    return s;
}

// One object's members at the cursor (at '{'): calls fn(key, value) for each; false when it is
// not a well-formed object.
template <typename Fn>
bool each_member(json::Cursor& c, int depth, Fn fn) {
    if (!c.expect('{')) return false;
    if (c.consume('}')) return true;
    for (;;) {
        json::Value key, v;
        if (c.peek() != '"' || !c.string(&key) || !c.expect(':') || !c.value(&v, depth + 1))
            return false;
        fn(key, v);
        if (c.consume(',')) continue;
        return c.expect('}');
    }
}

// One replacement of the answer's text: [begin, end) becomes text.
struct Splice {
    const char* begin;
    const char* end;
    std::string text;
};

}  // namespace

// The top object's "queue" and "messages", then each message's queue and field.
bool open_answer(const KeyRing& ring, std::string_view answer, std::string_view field,
                 std::string* out, AnswerOpen* st) {
    const char* const end = answer.data() + answer.size();
    json::Cursor top(answer.data(), end);
    std::string top_queue;
    json::Value messages;
    bool has_messages = false;
    if (!each_member(top, 0, [&](const json::Value& k, const json::Value& v) {
            if (json::string_equals(k, "queue") && v.kind == json::Kind::String)
                top_queue = decoded(v);
            else if (json::string_equals(k, "messages") && v.kind == json::Kind::Array)
                messages = v, has_messages = true;
        }))
        return false;
    std::vector<Splice> splices;
    if (has_messages) {
        json::Cursor c(messages.begin, messages.end);
        c.consume('[');
        bool first = true;
        while (!c.consume(']')) {
            if (!first && !c.expect(',')) return false;
            first = false;
            if (c.peek() != '{') {  // not a message object: skip it
                json::Value skip;
                if (!c.value(&skip, 2)) return false;
                continue;
            }
            std::string queue = top_queue;
            json::Value payload;
            bool has_payload = false;
            if (!each_member(c, 1, [&](const json::Value& k, const json::Value& v) {
                    if (json::string_equals(k, "queue") && v.kind == json::Kind::String)
                        queue = decoded(v);
                    else if (json::string_equals(k, field))
                        payload = v, has_payload = true;
                }))
                return false;
            if (!has_payload || payload.kind != json::Kind::Object) continue;
            std::string plain;
            const OpenResult r = open_payload(ring, queue, payload.text(), &plain);
            switch (r.kind) {
                case OpenKind::NotEnvelope:
                    break;
                case OpenKind::Opened:
                    st->opened++;
                    splices.push_back({payload.begin, payload.end, std::move(plain)});
                    break;
                case OpenKind::Broken:
                    st->broken++;
                    splices.push_back(
                        {payload.begin, payload.end, "null," + std::string(kDecryptionError)});
                    break;
                case OpenKind::KeyUnknown:
                    if (st->key_unknown++ == 0) st->unknown_kid = r.kid;
                    break;
            }
        }
    }
    out->clear();
    out->reserve(answer.size());
    const char* at = answer.data();
    for (const Splice& s : splices) {
        out->append(at, static_cast<std::size_t>(s.begin - at));
        out->append(s.text);
        at = s.end;
    }
    out->append(at, static_cast<std::size_t>(end - at));
    return true;
}

// One payload as a reader gets it (see answer_open.h).
OpenKind append_opened(const KeyRing& ring, std::string_view queue, std::string_view stored,
                       std::string* out, std::string* kid) {
    std::string plain;
    const OpenResult r = open_payload(ring, queue, stored, &plain);
    switch (r.kind) {
        case OpenKind::NotEnvelope:
            out->append(stored);
            break;
        case OpenKind::Opened:
            out->append(plain);
            break;
        case OpenKind::Broken:
            out->append("null,").append(kDecryptionError);
            break;
        case OpenKind::KeyUnknown:
            *kid = r.kid;
            break;
    }
    return r.kind;
}

}  // namespace queen::sidecar::crypto
