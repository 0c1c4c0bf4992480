// libFuzzer target: the push body parser, layer 1 and the JSON writer must never crash, leak or
// read out of bounds on any input. Build and run: make sidecar-fuzz (clang, ASan + UBSan).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/segment_codec.h"
#include "json_writer.h"
#include "push_request.h"

// One input: parse with small limits, mark leaders, and render what a reply would contain.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static queen::UuidV7Generator gen(1);
    queen::sidecar::ParseLimits lim;
    lim.max_items = 1000;
    lim.max_payload_bytes = 1 << 16;
    queen::sidecar::PushRequest req;
    int64_t bad = -1;
    std::string_view body(reinterpret_cast<const char*>(data), size);
    queen::sidecar::Status s = queen::sidecar::parse_push_body(body, lim, gen, &req, &bad);
    if (!s.is_ok()) {
        std::string err = queen::sidecar::json_error_body(s.message(), bad);
        if (err.empty() || bad >= static_cast<int64_t>(size) + 1) __builtin_trap();
        return 0;
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
