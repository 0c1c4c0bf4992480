// The consuming routes' statements (constant text, parameters only), shared by the one-server
// routes (consume_api.cpp) and their sharded forms (consume_shards.cpp): each is prepared by
// name on a connection, so a name always stands for the same text.
#pragma once

namespace queen::sidecar::consume_sql {

constexpr const char* kPopName = "queen_wire_pop";
constexpr const char* kPop =
    "SELECT queen.pop($1::text, $2::text, $3::text, $4::int, $5::int, $6::text, $7::text)";
constexpr const char* kAckName = "queen_wire_ack";
constexpr const char* kAck = "SELECT queen.ack_messages($1::jsonb, $2::text)";
constexpr const char* kRenewName = "queen_wire_renew";
constexpr const char* kRenew = "SELECT queen.renew_lease($1::text, $2::int)";
constexpr const char* kDeleteQueueName = "queen_wire_delete_queue";
constexpr const char* kDeleteQueue = "SELECT queen.delete_queue($1::text)";
constexpr const char* kDeleteGroupName = "queen_wire_delete_group";
constexpr const char* kDeleteGroup = "SELECT queen.delete_consumer_group($1::text, $2::boolean)";
constexpr const char* kDlqName = "queen_wire_dlq";
constexpr const char* kDlq = "SELECT queen.dlq_messages($1::text, $2::text, $3::int, $4::int)";
// GET /api/v1/dlq with the admin filters (issue 29): queue, group, partition, from, to, limit,
// offset (sql/modules/92_admin_messages.sql).
constexpr const char* kAdminDlqName = "queen_admin_dlq";
constexpr const char* kAdminDlq =
    "SELECT queen.admin_dlq($1::text, $2::text, $3::text, $4::text, $5::text, $6::int, $7::int)";
// --router, before an ack batch spanning shards is applied anywhere: 42501 when one of these
// partition ids is of a queue reserved for queen's modules (queen.ack_messages' own first check).
constexpr const char* kAckGuardName = "queen_wire_ack_guard";
constexpr const char* kAckGuard =
    "SELECT NULL::jsonb FROM queen.reserved_queue_guard(ARRAY(SELECT q.name "
    "FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id "
    "WHERE p.id = ANY ($1::bigint[])))";

}  // namespace queen::sidecar::consume_sql
