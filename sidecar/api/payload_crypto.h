// Payload encryption on Queen's wire (issue 27, docs/encryption.md): what the routes call so that
// every payload of an encrypted queue is sealed before it reaches SQL (push, parking, both
// transaction forms) and opened before it is answered (leased pops, queen's own read, the DLQ).
// The keys and the queue modes memo are ApiContext::crypto (crypto/crypto_context.h); the
// envelope, sealing and opening are crypto/'s. The extension refuses any unsealed payload of an
// encrypted queue (22QE1), so a stale memo here costs a refused request, never plaintext at rest.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "api/api_context.h"
#include "consume/transaction_wire.h"
#include "db/pg_connection.h"
#include "http/message.h"

namespace queen::sidecar {

// POST /api/v1/push: seal the payloads of the job's encrypted queues (modes from the memo; the
// misses looked up first on a SQL worker), then hand the job to the maintenance gate. Without
// a key nothing is sealed (the extension then refuses an encrypted queue's items: 503
// encryption_key_missing). An item refused as unsealed (a stale memo) forgets its queue's mode,
// so the client's next try is sealed.
void seal_push(ApiContext& cx, std::shared_ptr<PushJob> job, std::shared_ptr<Reply> reply);

// The broker-form transaction body with the payloads of its encrypted queues sealed (queues:
// the push items' queues).
Status seal_wire_body(ApiContext& cx, PgConnection& pg, const std::vector<std::string>& queues,
                      const std::string& body, std::string* out);
// queen.transaction's operations with their push items sealed where the queue is encrypted.
Status seal_sql_ops(ApiContext& cx, PgConnection& pg, std::vector<SqlOp>* ops);
// After a failed transaction: true when it was refused as unsealed (22QE1) while this sidecar
// holds a key; the queues' modes are then forgotten and the caller sends it once more.
bool refused_unsealed(ApiContext& cx, const Status& s, const std::vector<std::string>& queues);

// A leased pop's answer (from queen.pop through b) with its envelopes opened. False when one is
// sealed under a key this sidecar does not hold: the pop's leases are then released (ack
// status "retry": nothing counted, the messages stay where they are) and *refusal is the 503
// to answer (encryption_key_missing / encryption_key_unknown).
bool open_pop_answer(ApiContext& cx, SqlRoute& b, std::string* body, HttpResponse* refusal);
// The DLQ listing's answer with its envelopes opened (a 503 as above for a key not held).
HttpResponse open_dlq_answer(ApiContext& cx, HttpResponse r);
// The admin message routes' answers (issue 29) with their "payload" envelopes opened: the
// browser's {"messages": [...]} or (single) one message's object (a 503 as above for a key
// not held).
HttpResponse open_admin_answer(ApiContext& cx, HttpResponse r, bool single);
// queen's own read: one stored payload of queue appended as the reader gets it; false (and
// *refusal) when it is sealed under a key not held here.
bool append_read_payload(ApiContext& cx, const std::string& queue, const std::string& stored,
                         std::string* out, HttpResponse* refusal);

// POST /api/v1/configure: the 503 encryption_key_missing for options asking for encryption on
// a sidecar without a key (nothing is configured), else nothing.
bool refuse_unkeyed_configure(ApiContext& cx, bool asks_encryption, HttpResponse* refusal);

}  // namespace queen::sidecar
