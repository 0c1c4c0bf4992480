// Parsing a push body and dedup layer 1 (first-wins inside one request on
// queue \x1f partition \x1f transactionId). Pure: no I/O, no shared state; fuzzed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/hash.h"
#include "core/common/uuidv7.h"
#include "common/status.h"
#include "settings/settings.h"

namespace queen::sidecar {

// The parser's limits. No defaults of its own: built by parse_limits from a parsed Settings
// (--max-items, --max-payload-bytes); tests build it from Settings() or set both fields.
struct ParseLimits {
    int64_t max_items;
    int64_t max_payload_bytes;
};

// The push parser's item and payload limits from the settings.
ParseLimits parse_limits(const Settings& st);

// One item of a push request, owned.
struct PushItem {
    std::string queue;
    std::string partition;  // "Default" when absent
    std::string txn;        // the transactionId (its own message id's text when absent or empty)
    std::string payload;    // minified JSON text
    queen::Uuid id{};       // the id this item gets if it is stored
    queen::Hash128 hash{};  // txn_hash(txn)
    int32_t leader = -1;    // layer 1: index of the first item with the same key, -1 if this is it
};

struct PushRequest {
    std::vector<PushItem> items;
};

// Parse {"items":[...]} (a bare array is accepted too). An item without a transactionId (or
// with "") is a new message every time, as in Queen and in queen.push: its transactionId is
// its own message id's text (so two byte-identical bodies store two messages; a lost commit
// of such an item is still found by its message id, see flusher.h). On error returns BadRequest or
// TooLarge and sets *bad_index to the offending item (-1 when the body itself is wrong).
// Ids come from gen at time now_ms.
Status parse_push_body(std::string_view body, const ParseLimits& limits,
                       queen::UuidV7Generator& gen, PushRequest* out, int64_t* bad_index);

// Layer 1: mark every later item with an already-seen queue\x1fpartition\x1ftxn key as a
// follower of the first one (its `leader`).
void apply_layer1(PushRequest* req);

// Checks a partition name: non-empty, at most 512 bytes, no control characters.
const char* validate_name(std::string_view name) noexcept;

// Checks a queue name: at most 512 bytes, no control characters ("" is accepted, as the broker
// accepts it), and not one of the names starting with
// "__queen_" that queen's own modules keep (the extension refuses them with 42501; refusing
// them here keeps that error inside the one request that sent the name).
const char* validate_queue_name(std::string_view name) noexcept;

}  // namespace queen::sidecar
