// POST /api/v1/transaction's wire: the body's operations (the reference shape, queue on each
// item, or queen.transaction's own, queue on the operation) translated into queen.transaction's
// argument, and its result put back in the shape of the request.
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace queen::sidecar {

// One operation in queen.transaction's own shape (queue and partition on the operation).
struct SqlOp {
    bool push = true;
    std::string queue, partition = "Default", txn, group = "__QUEUE_MODE__";
    int64_t pid = -1;     // an ack by partitionId: names are looked up on the worker
    std::string items;    // push: the JSON array handed to queen.push
};

// Where each answer of a reference-shaped operation comes from.
struct RefOp {
    bool push = true;
    std::vector<std::pair<std::size_t, std::size_t>> items;  // push: (sql op, position)
    std::size_t sql = 0;                                      // ack: its sql op
};

// Translate the body's operations into SqlOps (one per (queue, partition) of a push) and
// RefOps (where each answer comes from); a BadRequest names the operation and item at fault.
Status translate_ops(simdjson::dom::array ops, std::vector<SqlOp>* sql, std::vector<RefOp>* ref);

// The argument of queen.transaction for the SQL-shaped operations.
std::string sql_ops_json(const std::vector<SqlOp>& sql);

// Put queen.transaction's results back in the shape of the request's operations.
Status reassemble(const std::string& result, const std::vector<SqlOp>& sql,
                  const std::vector<RefOp>& ref, std::string* out);

}  // namespace queen::sidecar
