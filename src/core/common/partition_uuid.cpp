// The partition id <-> UUID text mapping (see partition_uuid.h).
#include "core/common/partition_uuid.h"

namespace queen {

namespace {
constexpr std::string_view kPrefix = "00000000-0000-8000-8000-";
}

// The prefix, then the id in 12 lower-case hex digits (zero-padded).
std::string partition_uuid(int64_t id) {
    if (id < 0 || id >= (int64_t(1) << 48)) return std::string();
    static const char digits[] = "0123456789abcdef";
    std::string out(kPrefix);
    for (int shift = 44; shift >= 0; shift -= 4) out.push_back(digits[(id >> shift) & 15]);
    return out;
}

// The prefix exactly, then 12 hex digits; the value is what those digits say.
bool partition_of_uuid(std::string_view text, int64_t* id) noexcept {
    if (text.size() != 36 || text.substr(0, kPrefix.size()) != kPrefix) return false;
    int64_t v = 0;
    for (char c : text.substr(kPrefix.size())) {
        int d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return false;
        v = v * 16 + d;
    }
    *id = v;
    return true;
}

}  // namespace queen
