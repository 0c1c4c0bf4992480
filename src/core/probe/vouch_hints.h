// Vouch hints: the wire form of "message i of this segment is a repeat whose earliest in-window
// occurrence is offset o (at or below p_verified)", sent beside a vouch by a caller that knows
// the window (the sidecar's block cache). The extension confirms each hinted original against
// the stored row and otherwise falls back to the full probe, so a hint only narrows work.
//
// Blob: 12 bytes per hint, big-endian: uint32 message index, int64 offset; indexes strictly
// ascending. Pure C++ (no postgres.h).
#pragma once
#include "core/common/firewall.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace queen {

inline constexpr std::size_t kHintBytes = 12;

struct VouchHint {
    uint32_t index = 0;
    int64_t offset = -1;
};

// Append one hint to blob.
void hint_append(std::string* blob, uint32_t index, int64_t offset);

// Decode and check a hint blob for a segment of `count` messages vouched up to `verified`.
// Returns nullptr and fills out[0..len/12) when valid, else a static message naming the rule
// and *bad_at the hint at fault: the length is a multiple of 12, indexes are below count and
// strictly ascending, offsets are >= 0 and <= verified.
const char* hints_decode(const uint8_t* blob, std::size_t len, std::size_t count,
                         int64_t verified, VouchHint* out, std::size_t* bad_at);

}  // namespace queen
