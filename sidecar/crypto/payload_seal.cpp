// Sealing a request's payloads (see payload_seal.h): objects are rebuilt member by member from
// the request's own text, only the payload member replaced.
#include "crypto/payload_seal.h"

#include <vector>

#include "common/json_scan.h"
#include "crypto/content_id.h"
#include "crypto/envelope.h"

namespace queen::sidecar::crypto {

namespace {

// One member of an object, as written in the request.
struct Member {
    json::Value key, value;
    // The value's full text (a string's with its quotes).
    std::string_view raw() const {
        if (value.kind == json::Kind::String)
            return std::string_view(value.begin - 1,
                                    static_cast<std::size_t>(value.end - value.begin) + 2);
        return value.text();
    }
    std::string_view raw_key() const {
        return std::string_view(key.begin - 1, static_cast<std::size_t>(key.end - key.begin) + 2);
    }
};

// The members of the object at the cursor; false when it is not a well-formed object.
bool members_of(json::Cursor& c, int depth, std::vector<Member>* out) {
    out->clear();
    if (!c.expect('{')) return false;
    if (c.consume('}')) return true;
    for (;;) {
        Member m;
        if (c.peek() != '"' || !c.string(&m.key) || !c.expect(':') || !c.value(&m.value, depth + 1))
            return false;
        out->push_back(m);
        if (c.consume(',')) continue;
        return c.expect('}');
    }
}

// The member named key, or nullptr.
const Member* find(const std::vector<Member>& ms, std::string_view key) {
    for (const Member& m : ms)
        if (json::string_equals(m.key, key)) return &m;
    return nullptr;
}

// A string member's bytes ("" when absent or not a string).
std::string string_of(const Member* m) {
    if (m == nullptr || m->value.kind != json::Kind::String) return std::string();
    std::string s;
    if (m->value.escaped)
        json::unescape(m->value, &s);
    else
        s.assign(m->value.begin, m->value.end);
    return s;
}

// The object of members ms, as written, with its payload member (if any) replaced by
// "payload": sealed (sealed empty: the members as they are).
void rebuild(const std::vector<Member>& ms, const std::string& sealed, std::string* out) {
    out->push_back('{');
    bool first = true;
    for (const Member& m : ms) {
        if (!sealed.empty() && json::string_equals(m.key, "payload")) continue;
        if (!first) out->push_back(',');
        first = false;
        out->append(m.raw_key()).push_back(':');
        out->append(m.raw());
    }
    if (!sealed.empty()) {
        if (!first) out->push_back(',');
        out->append("\"payload\":").append(sealed);
    }
    out->push_back('}');
}

// The sealed form of an item's payload member (absent: JSON null, as the SQL stores it).
Status seal_member(const KeyRing& ring, std::string_view queue, const Member* payload,
                   bool with_cid, std::string* sealed) {
    std::string text = "null";
    if (payload != nullptr && payload->value.kind == json::Kind::String)
        text = std::string(payload->raw());
    else if (payload != nullptr)
        json::minify(payload->value, &text);
    return seal_json(ring, queue, text, with_cid, sealed);
}

}  // namespace

// The content identity from the canonical text, then the envelope.
Status seal_json(const KeyRing& ring, std::string_view queue, std::string_view payload,
                 bool with_cid, std::string* out) {
    std::string cid;
    if (with_cid) {
        std::string canonical;
        if (!jsonb_canonical_text(payload, &canonical))
            return Status(StatusCode::BadRequest,
                          "payload cannot be given a content identity (not JSON jsonb accepts)");
        cid = content_id(ring.current(), canonical);
    }
    return seal_payload(ring, queue, payload, cid, out);
}

// Each item object of the array, its payload sealed.
Status seal_items(const KeyRing& ring, std::string_view queue, QueueMode mode,
                  std::string_view items, std::string* out) {
    json::Cursor c(items.data(), items.data() + items.size());
    if (!c.expect('[')) return Status(StatusCode::BadRequest, "items must be an array");
    out->assign("[");
    std::vector<Member> ms;
    bool first = true;
    while (!c.consume(']')) {
        if (!first && !c.expect(',')) return Status(StatusCode::BadRequest, "items: malformed");
        if (!first) out->push_back(',');
        first = false;
        if (c.peek() != '{') {
            json::Value v;
            if (!c.value(&v, 1)) return Status(StatusCode::BadRequest, "items: malformed");
            out->append(v.kind == json::Kind::String
                            ? std::string_view(v.begin - 1, v.text().size() + 2)
                            : v.text());
            continue;
        }
        if (!members_of(c, 1, &ms)) return Status(StatusCode::BadRequest, "items: malformed");
        const Member* payload = find(ms, "payload");
        const Member* txn = find(ms, "transactionId");
        if (payload == nullptr) {  // queen.push refuses it, as it would in plaintext
            rebuild(ms, std::string(), out);
            continue;
        }
        const bool with_cid =
            mode.by_content && (txn == nullptr || txn->value.kind == json::Kind::Null);
        std::string sealed;
        Status s = seal_member(ring, queue, payload, with_cid, &sealed);
        if (!s.is_ok()) return s;
        rebuild(ms, sealed, out);
    }
    out->push_back(']');
    return Status::ok();
}

// The operations, push items of encrypted queues rebuilt with sealed payloads.
Status seal_wire_transaction(const KeyRing& ring,
                             const std::function<QueueMode(const std::string&)>& mode_of,
                             std::string_view body, std::string* out) {
    const Status bad(StatusCode::BadRequest, "operations must be a non-empty array");
    json::Cursor top(body.data(), body.data() + body.size());
    std::vector<Member> tm;
    if (!members_of(top, 0, &tm)) return bad;
    const Member* ops = find(tm, "operations");
    if (ops == nullptr || ops->value.kind != json::Kind::Array) return bad;
    out->assign("{\"operations\":[");
    json::Cursor c(ops->value.begin, ops->value.end);
    c.consume('[');
    std::vector<Member> om, im;
    bool first = true;
    while (!c.consume(']')) {
        if (!first && !c.expect(',')) return bad;
        if (!first) out->push_back(',');
        first = false;
        json::Cursor peek = c;
        json::Value whole;
        if (!peek.value(&whole, 2)) return bad;
        if (whole.kind != json::Kind::Object) {
            c = peek;
            out->append(whole.kind == json::Kind::String
                            ? std::string_view(whole.begin - 1, whole.text().size() + 2)
                            : whole.text());
            continue;
        }
        if (!members_of(c, 2, &om)) return bad;
        const Member* items = find(om, "items");
        if (string_of(find(om, "type")) != "push" || items == nullptr ||
            items->value.kind != json::Kind::Array) {
            out->append(whole.text());
            continue;
        }
        // {"type":"push","items":[...]} with each item of an encrypted queue rebuilt
        out->append("{\"type\":\"push\",\"items\":[");
        json::Cursor ic(items->value.begin, items->value.end);
        ic.consume('[');
        bool ifirst = true;
        while (!ic.consume(']')) {
            if (!ifirst && !ic.expect(',')) return bad;
            if (!ifirst) out->push_back(',');
            ifirst = false;
            json::Cursor ipeek = ic;
            json::Value item;
            if (!ipeek.value(&item, 4)) return bad;
            const std::string_view item_raw =
                item.kind == json::Kind::String
                    ? std::string_view(item.begin - 1, item.text().size() + 2)
                    : item.text();
            if (item.kind != json::Kind::Object) {
                ic = ipeek;
                out->append(item_raw);
                continue;
            }
            if (!members_of(ic, 4, &im)) return bad;
            const Member* q = find(im, "queue");
            const QueueMode mode = q != nullptr && q->value.kind == json::Kind::String
                                       ? mode_of(string_of(q))
                                       : QueueMode();
            if (!mode.encrypted) {
                out->append(item_raw);
                continue;
            }
            std::string sealed;
            Status s =
                seal_member(ring, string_of(q), find(im, "payload"), mode.by_content, &sealed);
            if (!s.is_ok()) return s;
            rebuild(im, sealed, out);
        }
        out->append("]}");
    }
    out->append("]}");
    return Status::ok();
}

}  // namespace queen::sidecar::crypto
