// Typed fields of a simdjson DOM object, as the HTTP routes read them.
#pragma once

#include <simdjson.h>

#include <string>

namespace queen::sidecar {

// Read a string field of obj into out ("" when absent); false when present but not a string.
// present (optional) tells whether the field was there.
bool get_string(simdjson::dom::object obj, const char* key, std::string* out,
                bool* present = nullptr);

}  // namespace queen::sidecar
