// Decrypting the payloads of an answer before it leaves the sidecar (issue 27,
// docs/encryption.md): the leased pop's and the dead-letter listing's
// {"messages":[{..., "data": <payload>, ...}], ...}, as PostgreSQL wrote them. Each message's
// payload that is an envelope is replaced in place by the plaintext it seals; nothing else of
// the answer is touched (its text is spliced, not re-serialized).
#pragma once

#include <string>
#include <string_view>

#include "crypto/envelope.h"

namespace queen::sidecar::crypto {

// What opening an answer's payloads found.
struct AnswerOpen {
    int opened = 0;           // envelopes replaced by their plaintext
    int broken = 0;           // envelopes that do not open: data null + decryptionError
    int key_unknown = 0;      // envelopes of a key this sidecar does not hold (left as stored)
    std::string unknown_kid;  // the first such envelope's key id
};

// The member a message carries when its envelope does not open, after its "data": null.
inline constexpr std::string_view kDecryptionError = "\"decryptionError\":\"decryption_failed\"";

// Open messages[i].<field> of answer, each under its message's "queue" member, else the
// answer's top-level "queue". An opened payload becomes its plaintext; a Broken one becomes
// null followed by kDecryptionError; a KeyUnknown one stays (the caller refuses the answer).
// *out gets the answer with those changes (the same text when nothing was an envelope). False
// when answer is not a JSON object (nothing opened; *out untouched).
bool open_answer(const KeyRing& ring, std::string_view answer, std::string_view field,
                 std::string* out, AnswerOpen* st);

// One stored payload of queue appended to out as a reader gets it: as stored, its plaintext,
// or (Broken) null followed by `,` kDecryptionError (so it must be the value of the last
// member written so far). Returns the kind found (KeyUnknown: nothing appended).
OpenKind append_opened(const KeyRing& ring, std::string_view queue, std::string_view stored,
                       std::string* out, std::string* kid);

}  // namespace queen::sidecar::crypto
