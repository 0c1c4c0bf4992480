// Content identity on an encrypted queue (issue 27, docs/encryption.md). A queue with
// dedupBy "content" identifies an item pushed without a transactionId by its payload: in
// plaintext the extension hashes the payload's jsonb text ("content:<xxh3_128 hex>",
// src/pg/queue/push_sql.cpp). An encrypted payload reaches the extension as an envelope whose
// ciphertext differs every time, so the sidecar computes the identity instead, from the same
// canonical text (so exactly the payloads that are duplicates in plaintext are duplicates here),
// with a keyed hash (an unkeyed hash of a plaintext stored beside it would let anyone who reads
// the table test guesses of a payload), and puts it in the envelope's "cid".
#pragma once

#include <string>
#include <string_view>

#include "crypto/key_ring.h"

namespace queen::sidecar::crypto {

// The text PostgreSQL prints for json::jsonb of a JSON text (JsonbToCString): object keys
// sorted by length, then bytes, a repeated key keeping its last value; ", " and ": "
// separators; strings with escapes decoded and re-escaped as escape_json does; numbers as
// numeric_out prints them (exponents applied, the display scale kept, "-0" as "0"). False when
// json is not one valid JSON value (json_scan's rules: the extension's payload check) or holds
// a number jsonb cannot (an exponent beyond +-1000).
bool jsonb_canonical_text(std::string_view json, std::string* out);

// The content identity of a canonical text under key k: the first 16 bytes of
// HMAC-SHA-256(k.content_key, canonical), as 32 lower-case hex digits.
std::string content_id(const PayloadKey& k, std::string_view canonical);

}  // namespace queen::sidecar::crypto
