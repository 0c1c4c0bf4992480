// queen.read(queue, partition, from_offset, limit): messages back out of their segments, and
// queen.probe_cache_stats(). Reads take no locks beyond AccessShare on the tables.
#include "core/common/segment_codec.h"
#include "pg/storage/log_scan.h"
#include "pg/probe/partition_probe.h"
#include "pg/queue/read.h"

extern "C" {
#include "utils/jsonb.h"
PG_FUNCTION_INFO_V1(queen_read_v1);
PG_FUNCTION_INFO_V1(queen_probe_cache_stats_v1);
PG_FUNCTION_INFO_V1(queen_probe_index_stats_v1);
PG_FUNCTION_INFO_V1(queen_probe_runs_stats_v1);
}

namespace queen_pg {

static SPIPlanPtr plan_partition_id;

// The id of an existing partition (queen.partition_id raises 42704 otherwise).
static int64 existing_partition(text* queue, text* partition) {
    Oid types[2] = {TEXTOID, TEXTOID};
    Datum args[2] = {PointerGetDatum(queue), PointerGetDatum(partition)};
    SPIPlanPtr plan = spi_plan(&plan_partition_id, "SELECT queen.partition_id($1, $2)", 2, types);
    if (SPI_execute_plan(plan, args, nullptr, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
        elog(ERROR, "queen: partition lookup failed");
    bool isnull;
    return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

// A stored payload as jsonb: jsonb as itself, JSON text parsed, text as a JSON string,
// octets as a hex string (declared in read.h).
Datum payload_jsonb(const queen::MessageView& m) {
    if (m.type == queen::ContentType::Jsonb) {
        Jsonb* j = static_cast<Jsonb*>(palloc(VARHDRSZ + m.payload.size()));
        SET_VARSIZE(j, VARHDRSZ + m.payload.size());
        memcpy(VARDATA(j), m.payload.data(), m.payload.size());
        return JsonbPGetDatum(j);
    }
    if (m.type == queen::ContentType::Json) {
        char* s = pnstrdup(m.payload.data(), m.payload.size());
        return DirectFunctionCall1(jsonb_in, CStringGetDatum(s));
    }
    JsonbValue v;
    v.type = jbvString;
    if (m.type == queen::ContentType::Text) {
        v.val.string.val = const_cast<char*>(m.payload.data());
        v.val.string.len = (int) m.payload.size();
    } else {
        static const char digits[] = "0123456789abcdef";
        char* hex = static_cast<char*>(palloc(2 * m.payload.size() + 3));
        hex[0] = '\\';
        hex[1] = 'x';
        for (size_t i = 0; i < m.payload.size(); i++) {
            unsigned char c = (unsigned char) m.payload[i];
            hex[2 + 2 * i] = digits[c >> 4];
            hex[3 + 2 * i] = digits[c & 15];
        }
        v.val.string.val = hex;
        v.val.string.len = (int) (2 * m.payload.size() + 2);
    }
    return JsonbPGetDatum(JsonbValueToJsonb(&v));
}

// Emit the messages of one segment row at offsets >= from, up to *left of them.
static void emit_segment(ReturnSetInfo* rsinfo, const LogRow* row, int64 pid, int64 from,
                         int64* left) {
    queen::SegmentReader reader(row->blob, row->blob_len);
    queen::MessageView m;
    int64 at = row->base_offset;
    while (*left > 0 && reader.next(&m)) {
        if (at >= from) {
            Datum values[5];
            bool nulls[5] = {false, false, false, false, false};
            pg_uuid_t* id = static_cast<pg_uuid_t*>(palloc(sizeof(pg_uuid_t)));
            memcpy(id->data, m.id.b, UUID_LEN);
            values[0] = Int64GetDatum(at);
            values[1] = UUIDPGetDatum(id);
            values[2] = PointerGetDatum(cstring_to_text_with_len(m.txn.data(), (int) m.txn.size()));
            values[3] = payload_jsonb(m);
            values[4] = TimestampTzGetDatum(row->created_at);
            tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
            (*left)--;
        }
        at++;
    }
    if (reader.error() != nullptr)
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                        errmsg("queen.log_segments row (" INT64_FORMAT ", " INT64_FORMAT "): %s", pid,
                               row->base_offset, reader.error())));
}

}  // namespace queen_pg

using namespace queen_pg;

// queen.read(p_queue, p_partition, p_from_offset, p_limit).
extern "C" Datum queen_read_v1(PG_FUNCTION_ARGS) {
    for (int i = 0; i < 4; i++)
        if (PG_ARGISNULL(i)) QUEEN_BAD_INPUT("queen.read arguments must not be NULL");
    int64 from = PG_GETARG_INT64(2);
    int32 limit = PG_GETARG_INT32(3);
    if (from < 0) QUEEN_BAD_INPUT("p_from_offset must be >= 0, not " INT64_FORMAT, from);
    if (limit < 0) QUEEN_BAD_INPUT("p_limit must be >= 0, not %d", limit);

    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "queen: SPI_connect failed");
    int64 pid = existing_partition(PG_GETARG_TEXT_PP(0), PG_GETARG_TEXT_PP(1));
    Storage st;
    storage_lookup(&st);
    Snapshot snap = GetActiveSnapshot();
    int64 left = limit;
    LogRow first;
    int64 after = from - 1;
    if (left > 0 && log_row_at(&st, true, pid, from, snap, &first)) {
        emit_segment(rsinfo, &first, pid, from, &left);
        after = first.end_offset;
    }
    if (left > 0) {
        LogScan scan;
        LogRow row;
        log_scan_begin(&scan, &st, true, pid, after, snap);
        while (left > 0 && log_scan_next(&scan, &row)) emit_segment(rsinfo, &row, pid, from, &left);
        log_scan_end(&scan);
    }
    SPI_finish();
    return (Datum) 0;
}

// queen.probe_cache_stats(): this backend's probe cache counters.
extern "C" Datum queen_probe_cache_stats_v1(PG_FUNCTION_ARGS) {
    TupleDesc desc;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
        elog(ERROR, "queen: return type must be a row type");
    ProbeCacheStats s;
    int parts;
    int64 bytes;
    probe_cache_stats(&s, &parts, &bytes);
    Datum values[6] = {Int32GetDatum(parts), Int64GetDatum(bytes), Int64GetDatum(s.hits),
                       Int64GetDatum(s.confirmed), Int64GetDatum(s.fallbacks),
                       Int64GetDatum(s.rows_read)};
    bool nulls[6] = {false, false, false, false, false, false};
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

// queen.probe_index_stats(): how many of this backend's probes went through the hash index.
extern "C" Datum queen_probe_index_stats_v1(PG_FUNCTION_ARGS) {
    ProbeCacheStats s;
    int parts;
    int64 bytes;
    probe_cache_stats(&s, &parts, &bytes);
    PG_RETURN_INT64(s.index_probes);
}

// queen.probe_runs_stats(): how many of this backend's probes went through the hash runs.
extern "C" Datum queen_probe_runs_stats_v1(PG_FUNCTION_ARGS) {
    ProbeCacheStats s;
    int parts;
    int64 bytes;
    probe_cache_stats(&s, &parts, &bytes);
    PG_RETURN_INT64(s.runs_probes);
}
