// The encryption guard (see push_encryption.h). Cheap by construction: a text payload (the
// binary path's content type json, the parked pushes) is checked by its first 29 bytes; a jsonb
// payload (queen.push) by four key lookups in its container. Nothing is read from any table:
// the flag comes with the partition row lock (storage/partition_lock.cpp, step 7).
#include "pg/queue/push_encryption.h"

#include "core/common/envelope_shape.h"
#include "core/common/segment_codec.h"

extern "C" {
#include "fmgr.h"
#include "utils/builtins.h"
PG_FUNCTION_INFO_V1(queen_payload_is_envelope_v1);
}

namespace queen_pg {

// The string value of key in an object container, or false.
static bool container_string(JsonbContainer* c, std::string_view key, std::string_view* out) {
    JsonbValue v;
    if (getKeyJsonValueFromContainer(c, key.data(), (uint32)key.size(), &v) == nullptr ||
        v.type != jbvString)
        return false;
    *out = std::string_view(v.val.string.val, (size_t)v.val.string.len);
    return true;
}

// True when a jsonb container is an envelope object: "$enc" names this version and kid, iv and
// ct are strings (their contents are the sidecar's to check when it decrypts).
static bool container_is_envelope(JsonbContainer* c) {
    if (!JsonContainerIsObject(c)) return false;
    std::string_view s;
    return container_string(c, queen::kEnvelopeMarker, &s) && s == queen::kEnvelopeVersion &&
           container_string(c, "kid", &s) && container_string(c, "iv", &s) &&
           container_string(c, "ct", &s);
}

// True when one message's payload is an envelope, in either stored form.
static bool message_is_envelope(const queen::MessageView& m) {
    if (m.type == queen::ContentType::Json) return queen::is_envelope_text(m.payload);
    if (m.type == queen::ContentType::Jsonb)
        return container_is_envelope(
            reinterpret_cast<JsonbContainer*>(const_cast<char*>(m.payload.data())));
    return false;  // text and octets are never envelopes
}

// See push_encryption.h.
void encryption_guard(const PushBatch* b) {
    for (int i = 0; i < b->n; i++) {
        if (message_is_envelope(b->msgs[i])) continue;
        ereport(ERROR,
                (errcode(QUEEN_SQLSTATE_NOT_ENVELOPE),
                 errmsg("message %d: the queue is encrypted and this payload is not an encryption "
                        "envelope",
                        i),
                 errhint("Push to an encrypted queue through a sidecar that holds the queue's key "
                         "(QUEEN_ENCRYPTION_KEY); see docs/encryption.md.")));
    }
}

// See push_encryption.h.
char* envelope_content_txn(JsonbContainer* payload, int i, int* len) {
    std::string_view cid;
    if (!container_is_envelope(payload) || !container_string(payload, "cid", &cid) ||
        !queen::is_content_id(cid))
        ereport(ERROR,
                (errcode(QUEEN_SQLSTATE_NOT_ENVELOPE),
                 errmsg("item %d: the queue is encrypted and dedups by content, and this payload "
                        "is not an encryption envelope carrying its content identity (cid)",
                        i),
                 errhint("Push to an encrypted queue through a sidecar that holds the queue's key "
                         "(QUEEN_ENCRYPTION_KEY); see docs/encryption.md.")));
    char* id = static_cast<char*>(palloc(8 + queen::kContentIdHex + 1));
    memcpy(id, "content:", 8);
    memcpy(id + 8, cid.data(), queen::kContentIdHex);
    id[8 + queen::kContentIdHex] = '\0';
    *len = (int)(8 + queen::kContentIdHex);
    return id;
}

}  // namespace queen_pg

// queen.payload_is_envelope(text) -> boolean: the guard's test of a payload's text form (the
// maintenance park's check, sql/modules/70_maintenance.sql). Internal.
extern "C" Datum queen_payload_is_envelope_v1(PG_FUNCTION_ARGS) {
    text* t = PG_GETARG_TEXT_PP(0);
    PG_RETURN_BOOL(queen::is_envelope_text(std::string_view(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t))));
}
