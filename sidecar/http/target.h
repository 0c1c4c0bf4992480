// A request target's parts: the one place the sidecar splits "path?query", finds a query
// parameter and percent-decodes a URL component (both HTTP surfaces use these).
#pragma once

#include <string>

namespace queen::sidecar {

// Split a request target at its first '?': *path gets what is before it (the whole target
// when there is none), *query what is after it (empty when there is none). Neither part is
// decoded: decode path segments with url_decode, parameters with query_param.
void split_target(const std::string& target, std::string* path, std::string* query);

// Percent-decoding of a URL component ('+' stays '+'); false on a bad escape.
bool url_decode(const std::string& in, std::string* out);

// The first value of key in a raw query "a=1&b=2" (the value percent-decoded; "" for a bare
// "key"); false when key is absent or its value has a bad escape.
bool query_param(const std::string& query, const std::string& key, std::string* out);

}  // namespace queen::sidecar
