// See json_fields.h.
#include "common/json_fields.h"

namespace queen::sidecar {

// Read a string field of obj into out ("" when absent); false when present but not a string.
bool get_string(simdjson::dom::object obj, const char* key, std::string* out, bool* present) {
    auto f = obj[key];
    if (present) *present = !f.error();
    if (f.error()) return true;
    std::string_view sv;
    if (f.get(sv)) return false;
    out->assign(sv);
    return true;
}

}  // namespace queen::sidecar
