// Typed fields of a simdjson DOM object, as the HTTP routes read them.
#pragma once

#include <simdjson.h>

#include <string>

namespace queen::sidecar {

// Read a string field of obj into out ("" when absent); false when present but not a string.
// present (optional) tells whether the field was there.
bool get_string(simdjson::dom::object obj, const char* key, std::string* out,
                bool* present = nullptr);

// An answer object's text with its "index" member replaced by idx (the other members as they
// were, minified): an item's answer from one part of a split request, renumbered for the whole.
std::string with_index(simdjson::dom::object o, int64_t idx);

}  // namespace queen::sidecar
