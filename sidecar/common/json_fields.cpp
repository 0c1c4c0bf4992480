// See json_fields.h.
#include "common/json_fields.h"

#include "common/json_writer.h"

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

// See json_fields.h.
std::string with_index(simdjson::dom::object o, int64_t idx) {
    std::string s = "{\"index\":";
    json_append_int(&s, idx);
    for (auto f : o) {
        if (f.key == "index") continue;
        s += ',';
        json_append_string(&s, f.key);
        s += ':';
        s += simdjson::minify(f.value);
    }
    s += '}';
    return s;
}

}  // namespace queen::sidecar
