// Push body parsing (json_scan: checked in one pass, payloads kept as sent) and layer 1.
#include "push/push_request.h"

#include <functional>
#include <vector>

#include "core/common/segment_codec.h"
#include "common/json_scan.h"

namespace queen::sidecar {

// Both limits from their rows of the settings table.
ParseLimits parse_limits(const Settings& st) {
    ParseLimits pl;
    pl.max_items = st.max_items;
    pl.max_payload_bytes = st.max_payload_bytes;
    return pl;
}

// The rules every name shares: bounded and printable (the layer 1 key uses \x1f as separator).
static const char* validate_chars(std::string_view name) noexcept {
    if (name.size() > 512) return "is longer than 512 bytes";
    for (unsigned char c : name)
        if (c < 0x20 || c == 0x7f) return "contains a control character";
    return nullptr;
}

// A partition name: non-empty, and validate_chars's rules.
const char* validate_name(std::string_view name) noexcept {
    if (name.empty()) return "must not be empty";
    return validate_chars(name);
}

// A queue name: "" is a name like any other (the broker accepts queue(""), wire facts §3.1).
const char* validate_queue_name(std::string_view name) noexcept {
    if (const char* why = validate_chars(name)) return why;
    if (name.substr(0, 8) == "__queen_")
        return "is reserved (names starting with __queen_ are queen's own)";
    return nullptr;
}

namespace {

// What the scan of one item found: the first occurrence of each field the push uses.
struct ItemScan {
    bool object = false;
    bool has_queue = false, has_partition = false, has_payload = false, has_txn = false;
    json::Value queue, partition, payload, txn;
};

// Which field a key names (escape-aware), or -1.
int field_of(const json::Value& key) {
    static const std::string_view names[] = {"queue", "partition", "payload", "transactionId"};
    if (!key.escaped) {
        const std::string_view k = key.text();
        for (int i = 0; i < 4; i++)
            if (k == names[i]) return i;
        return -1;
    }
    std::string tmp;
    json::unescape(key, &tmp);
    for (int i = 0; i < 4; i++)
        if (tmp == names[i]) return i;
    return -1;
}

// One element of the items array; depth = containers open around it.
void scan_item(json::Cursor& c, int depth, ItemScan* it) {
    if (c.peek() != '{') {
        json::Value v;
        c.value(&v, depth);
        return;
    }
    it->object = true;
    c.consume('{');
    if (c.consume('}')) return;
    for (;;) {
        json::Value key, v;
        if (c.peek() != '"') {
            c.fail("expected a string key");
            return;
        }
        if (!c.string(&key) || !c.expect(':') || !c.value(&v, depth + 1)) return;
        switch (field_of(key)) {
            case 0:
                if (!it->has_queue) it->queue = v, it->has_queue = true;
                break;
            case 1:
                if (!it->has_partition) it->partition = v, it->has_partition = true;
                break;
            case 2:
                if (!it->has_payload) it->payload = v, it->has_payload = true;
                break;
            case 3:
                if (!it->has_txn) it->txn = v, it->has_txn = true;
                break;
            default:
                break;
        }
        if (c.consume(',')) continue;
        c.expect('}');
        return;
    }
}

// The items array (cursor at '['); depth = containers open around it.
void scan_items(json::Cursor& c, int depth, std::vector<ItemScan>* items) {
    c.consume('[');
    if (c.consume(']')) return;
    for (;;) {
        items->emplace_back();
        scan_item(c, depth + 1, &items->back());
        if (!c.ok()) return;
        if (c.consume(',')) continue;
        c.expect(']');
        return;
    }
}

// A checked string field as bytes.
void decode(const json::Value& v, std::string* out) {
    if (v.escaped)
        json::unescape(v, out);
    else
        out->assign(v.begin, v.end);
}

// A thread's reusable scan buffer.
std::vector<ItemScan>& thread_items() {
    thread_local std::vector<ItemScan> items;
    return items;
}

}  // namespace

// Two phases, so errors come in the documented order: first the whole body is checked as
// JSON (any malformation anywhere: 400 naming no item), then the item count (413), then each
// item in order (400/413 naming it).
Status parse_push_body(std::string_view body, const ParseLimits& limits,
                       queen::UuidV7Generator& gen, PushRequest* out, int64_t* bad_index) {
    *bad_index = -1;
    out->items.clear();
    std::vector<ItemScan>& items = thread_items();
    items.clear();
    json::Cursor c(body.data(), body.data() + body.size());
    // 0: an object with an array "items"; 1: "items" missing; 2: "items" not an array;
    // 3: a bare array; 4: anything else.
    int shape = 4;
    const char first = c.peek();
    if (c.at_end()) {
        c.fail("empty body");
    } else if (first == '{') {
        shape = 1;
        c.consume('{');
        if (!c.consume('}')) {
            for (;;) {
                json::Value key, v;
                if (c.peek() != '"') {
                    c.fail("expected a string key");
                    break;
                }
                if (!c.string(&key) || !c.expect(':')) break;
                if (shape == 1 && json::string_equals(key, "items")) {
                    if (c.peek() == '[') {
                        shape = 0;
                        scan_items(c, 1, &items);
                    } else {
                        shape = 2;
                        c.value(&v, 1);
                    }
                } else {
                    c.value(&v, 1);
                }
                if (!c.ok()) break;
                if (c.consume(',')) continue;
                c.expect('}');
                break;
            }
        }
    } else if (first == '[') {
        shape = 3;
        scan_items(c, 0, &items);
    } else {
        json::Value v;
        c.value(&v, 0);
    }
    if (c.ok() && !c.at_end()) c.fail("unexpected text after the JSON value");
    if (!c.ok()) return Status(StatusCode::BadRequest, std::string("malformed JSON: ") + c.error());
    if (shape == 1) return Status(StatusCode::BadRequest, "items is missing");
    if (shape == 2) return Status(StatusCode::BadRequest, "items must be an array");
    if (shape == 4)
        return Status(StatusCode::BadRequest, "body must be an object with an items array");
    const std::size_t n = items.size();
    if (static_cast<int64_t>(n) > limits.max_items)
        return Status(StatusCode::TooLarge, "too many items: " + std::to_string(n) + " > " +
                                                std::to_string(limits.max_items));
    out->items.resize(n);
    uint64_t now = queen::unix_ms_now();
    for (std::size_t idx = 0; idx < n; idx++) {
        *bad_index = static_cast<int64_t>(idx);
        const ItemScan& sc = items[idx];
        PushItem& it = out->items[idx];
        if (!sc.object) return Status(StatusCode::BadRequest, "item must be an object");
        if (sc.has_queue && sc.queue.kind != json::Kind::String)
            return Status(StatusCode::BadRequest, "queue must be a string");
        if (!sc.has_queue) return Status(StatusCode::BadRequest, "queue is missing");
        decode(sc.queue, &it.queue);
        if (const char* why = validate_queue_name(it.queue))
            return Status(StatusCode::BadRequest, std::string("queue ") + why);
        if (sc.has_partition) {
            if (sc.partition.kind != json::Kind::String)
                return Status(StatusCode::BadRequest, "partition must be a string");
            decode(sc.partition, &it.partition);
            if (const char* why = validate_name(it.partition))
                return Status(StatusCode::BadRequest, std::string("partition ") + why);
        } else {
            it.partition = "Default";
        }
        if (!sc.has_payload) return Status(StatusCode::BadRequest, "payload is missing");
        // A string payload keeps its quotes: the span of a string value excludes them.
        if (sc.payload.kind == json::Kind::String)
            it.payload.assign(sc.payload.begin - 1, sc.payload.end + 1);
        else
            json::minify(sc.payload, &it.payload);
        if (static_cast<int64_t>(it.payload.size()) > limits.max_payload_bytes)
            return Status(
                StatusCode::TooLarge,
                "payload is larger than " + std::to_string(limits.max_payload_bytes) + " bytes");
        it.id = gen.next(now);
        if (sc.has_txn) {
            if (sc.txn.kind != json::Kind::String)
                return Status(StatusCode::BadRequest, "transactionId must be a string");
            decode(sc.txn, &it.txn);
            if (const char* why = queen::validate_txn_id(it.txn))
                return Status(StatusCode::BadRequest, why);
        }
        if (it.txn.empty()) {
            // A new message: its identity is its own id (never the body's bytes).
            char idbuf[37];
            queen::uuid_to_text(it.id, idbuf);
            it.txn.assign(idbuf, 36);
        }
        it.hash = queen::txn_hash(it.txn);
    }
    *bad_index = -1;
    return Status::ok();
}

// First-wins on queue \x1f partition \x1f transactionId (names and ids hold no control
// characters, so this is equality of the three). An open-addressing table of item indexes
// keyed by the transactionId's hash mixed with the names: no per-item allocation.
void apply_layer1(PushRequest* req) {
    const std::size_t n = req->items.size();
    std::size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    thread_local std::vector<int32_t> table;
    table.assign(cap, -1);
    const std::hash<std::string_view> hs;
    for (std::size_t i = 0; i < n; i++) {
        PushItem& it = req->items[i];
        const uint64_t h = it.hash.prefix() ^ (hs(it.queue) * 0x9e3779b97f4a7c15ULL) ^
                           (hs(it.partition) * 0xc2b2ae3d27d4eb4fULL);
        std::size_t slot = static_cast<std::size_t>(h ^ (h >> 29)) & (cap - 1);
        it.leader = -1;
        for (;;) {
            const int32_t j = table[slot];
            if (j < 0) {
                table[slot] = static_cast<int32_t>(i);
                break;
            }
            const PushItem& o = req->items[static_cast<std::size_t>(j)];
            if (o.hash == it.hash && o.txn == it.txn && o.queue == it.queue &&
                o.partition == it.partition) {
                it.leader = j;
                break;
            }
            slot = (slot + 1) & (cap - 1);
        }
    }
}

}  // namespace queen::sidecar
