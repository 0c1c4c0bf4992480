// Maintenance mode under --router (see maintenance_shards.h). Each call runs on one SQL worker
// with that worker's connections to the shards, one statement (one transaction) per shard at a
// time; nothing here holds a lock.
#include "api/maintenance_shards.h"

#include <simdjson.h>

#include <cstdio>
#include <string_view>
#include <vector>

#include "api/api_util.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "db/pg_connection.h"

namespace queen::sidecar {

namespace {

// An int64 member of an answer object (0 when absent or not a number).
int64_t int_of(simdjson::dom::object o, const char* key) {
    int64_t v = 0;
    if (o[key].get(v)) return 0;
    return v;
}

// A string member (empty when absent or null).
std::string str_of(simdjson::dom::object o, const char* key) {
    std::string_view v;
    if (o[key].get(v)) return std::string();
    return std::string(v);
}

// Microseconds since the epoch of a jsonb timestamptz text ("2026-12-07T21:01:05.152265+00:00";
// the offset is the session's, which may differ between shards); false when it is not one.
bool iso_us(const std::string& t, int64_t* out) {
    int y, mo, d, h, mi, sec, n = 0;
    if (std::sscanf(t.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6)
        return false;
    std::size_t i = static_cast<std::size_t>(n);
    int64_t frac = 0, scale = 1000000;
    if (i < t.size() && t[i] == '.') {
        for (i++; i < t.size() && t[i] >= '0' && t[i] <= '9'; i++)
            if (scale > 1) frac += (t[i] - '0') * (scale /= 10);
    }
    int64_t off = 0;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) {
        int oh = 0, om = 0, os = 0;
        const int got = std::sscanf(t.c_str() + i + 1, "%2d:%2d:%2d", &oh, &om, &os);
        if (got < 1) return false;
        off = (t[i] == '-' ? -1 : 1) * (oh * 3600 + om * 60 + os);
    }
    // days from 1970-01-01 of the civil date (H. Hinnant's algorithm)
    const int yy = y - (mo <= 2);
    const int era = (yy >= 0 ? yy : yy - 399) / 400;
    const int yoe = yy - era * 400;
    const int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    const int64_t days = static_cast<int64_t>(era) * 146097 + doe - 719468;
    *out = ((days * 86400 + h * 3600 + mi * 60 + sec) - off) * 1000000 + frac;
    return true;
}

// Keep in *best the earlier (or later) of two timestamptz texts by their instant.
void keep(std::string* best, const std::string& t, bool earliest) {
    if (t.empty()) return;
    int64_t a = 0, b = 0;
    if (best->empty() || !iso_us(*best, &b) || !iso_us(t, &a)) {
        if (best->empty()) *best = t;
        return;
    }
    if (earliest ? a < b : a > b) *best = t;
}

// A jsonb statement on one shard, its answer parsed into *o (parser owns it).
Status call_obj(SqlRoute& b, int shard, const char* name, const char* sql, int n,
                const char* const* v, bool read_only, simdjson::dom::parser& parser,
                std::string* text, simdjson::dom::object* o) {
    bool null = false;
    Status s = b.on_shard(shard, [&](PgConnection& pg) {
        return pg.call_json(name, sql, n, v, read_only, text, &null);
    });
    if (!s.is_ok()) return s;
    if (null || parser.parse(*text).get(*o))
        return Status(StatusCode::Internal, "shard " + b.shard_name(shard) +
                                                " answered something that is not a JSON object");
    return Status::ok();
}

// The switches' session advisory lock on the map's first shard (one key: "queen maintenance
// switch"); pg_advisory_lock waits, bounded by the session's lock_timeout (--pg-lock-timeout-ms).
constexpr const char* kLockSql =
    "SELECT to_jsonb(true) FROM pg_catalog.pg_advisory_lock(7310575183665250305)";
constexpr const char* kUnlockSql =
    "SELECT to_jsonb(pg_catalog.pg_advisory_unlock(7310575183665250305))";

// The router's map could not be read: no shard is known.
HttpResponse no_map() {
    return error_response(
        Status(StatusCode::Unavailable, "the router's shard map could not be read; retry"));
}

}  // namespace

HttpResponse shards_maintenance_status(SqlRoute& b, bool* any_on) {
    *any_on = false;
    std::vector<int> list;
    b.shard_list(&list);
    if (list.empty()) return no_map();
    bool on = false;
    int64_t parked = 0, queues = 0, parts = 0;
    std::string oldest, changed;
    std::string per = "[";
    simdjson::dom::parser parser;
    for (std::size_t k = 0; k < list.size(); k++) {
        std::string text;
        simdjson::dom::object o;
        Status s = call_obj(b, list[k], "queen_maint_status", "SELECT queen.maintenance_status()",
                            0, nullptr, true, parser, &text, &o);
        if (!s.is_ok()) return error_response(s);
        bool m = false;
        if (o["maintenanceMode"].get(m)) m = false;
        on |= m;
        const int64_t n = int_of(o, "bufferedMessages");
        parked += n;
        simdjson::dom::object st;
        if (!o["bufferStats"].get(st)) {
            queues += int_of(st, "queues");
            parts += int_of(st, "partitions");
            // compared as instants (each shard's text carries its own session's offset)
            keep(&oldest, str_of(st, "oldestParkedAt"), true);
            keep(&changed, str_of(st, "changedAt"), false);
        }
        if (k) per += ',';
        per += "{\"shard\":";
        json_append_string(&per, b.shard_name(list[k]));
        per += m ? ",\"maintenanceMode\":true" : ",\"maintenanceMode\":false";
        per += ",\"bufferedMessages\":";
        json_append_int(&per, n);
        per += '}';
    }
    per += ']';
    *any_on = on;
    HttpResponse r;
    std::string& out = r.body;
    out = on ? "{\"maintenanceMode\":true" : "{\"maintenanceMode\":false";
    out += ",\"popMaintenanceMode\":false,\"bufferedMessages\":";
    json_append_int(&out, parked);
    out += ",\"bufferHealthy\":true,\"bufferStats\":{\"parkedMessages\":";
    json_append_int(&out, parked);
    out += ",\"queues\":";
    json_append_int(&out, queues);
    out += ",\"partitions\":";
    json_append_int(&out, parts);
    out += ",\"oldestParkedAt\":";
    if (oldest.empty()) out += "null";
    else json_append_string(&out, oldest);
    out += ",\"changedAt\":";
    if (changed.empty()) out += "null";
    else json_append_string(&out, changed);
    out += "},\"shards\":";
    out += per;
    out += '}';
    return r;
}

HttpResponse shards_set_maintenance(SqlRoute& b, bool enabled) {
    std::vector<int> list;
    b.shard_list(&list);
    if (list.empty()) return no_map();
    // Switches through any sidecar run one at a time: a session advisory lock on the map's
    // first shard, held across the fan-out (released at the end, or by the session's end if this
    // sidecar dies). So two opposite switches sent at once leave every shard as the later one
    // says, and a 200 means every shard holds this value. The first shard unreachable: no lock,
    // but then its switch fails too and no switch answers 200.
    const int lock_shard = list.front();
    bool locked = false;
    {
        std::string out;
        bool null = false;
        Status s = b.on_shard(lock_shard, [&](PgConnection& pg) {
            return pg.call_json("queen_maint_lock", kLockSql, 0, nullptr, false, &out, &null);
        });
        if (s.is_ok()) locked = true;
        else if (s.code() != StatusCode::ShardUnavailable && s.code() != StatusCode::Unknown)
            return error_response(s);  // e.g. lock_timeout: another switch holds it; nothing done
    }
    const char* v[] = {enabled ? "true" : "false"};
    int64_t left = 0, delivered = 0, duplicates = 0;
    std::vector<std::string> done, failed;
    std::string per = "[";
    bool retry_after = false;
    simdjson::dom::parser parser;
    // Every shard is asked even after one failed: each switch that can apply does, so the
    // answer names exactly what is left and a repeat has only that left to do.
    for (std::size_t k = 0; k < list.size(); k++) {
        const std::string name = b.shard_name(list[k]);
        std::string text;
        simdjson::dom::object o;
        Status s = call_obj(b, list[k], "queen_maint_set", "SELECT queen.set_maintenance($1::boolean)",
                            1, v, false, parser, &text, &o);
        if (s.sqlstate() == "55Q01")  // the drain pushed to a slot this shard no longer owns
            s = Status(StatusCode::Conflict,
                       "shard " + name + " holds parked messages of a slot it no longer owns (moved "
                       "while maintenance mode was on): move the slot back to " + name +
                       ", switch off, then move it again");
        if (k) per += ',';
        per += "{\"shard\":";
        json_append_string(&per, name);
        if (!s.is_ok()) {
            const PublicError pe = public_error(s);
            QLOG_WARN("maintenance switch %s on shard %s failed: %s", enabled ? "on" : "off",
                      name.c_str(), s.message().c_str());
            retry_after |= s.code() == StatusCode::ShardUnavailable || pe.http == 503;
            failed.push_back(name + " (" + pe.code + ": " + pe.message + ")");
            per += ",\"switched\":false,\"error\":";
            json_append_string(&per, pe.message);
            per += ",\"code\":";
            json_append_string(&per, pe.code);
            per += '}';
            continue;
        }
        const int64_t n = int_of(o, "bufferedMessages"), d = int_of(o, "delivered"),
                      u = int_of(o, "duplicates");
        left += n;
        delivered += d;
        duplicates += u;
        done.push_back(name);
        per += ",\"switched\":true,\"bufferedMessages\":";
        json_append_int(&per, n);
        per += ",\"delivered\":";
        json_append_int(&per, d);
        per += ",\"duplicates\":";
        json_append_int(&per, u);
        per += '}';
    }
    per += ']';
    if (locked) {
        std::string out;
        bool null = false;
        b.on_shard(lock_shard, [&](PgConnection& pg) {
             return pg.call_json("queen_maint_unlock", kUnlockSql, 0, nullptr, false, &out, &null);
         }).ignore();  // a broken session released it already
    }
    auto join = [](const std::vector<std::string>& xs) {
        std::string s;
        for (const auto& x : xs) s += (s.empty() ? "" : ", ") + x;
        return s.empty() ? std::string("none") : s;
    };
    const std::string total = std::to_string(list.size());
    HttpResponse r;
    std::string& out = r.body;
    if (!failed.empty()) {
        // Never a 200 for a switch that did not apply everywhere.
        r.status = 503;
        const std::string msg =
            std::string("maintenance mode switched ") + (enabled ? "on" : "off") + " on " +
            std::to_string(done.size()) + " of " + total + " shards (" + join(done) +
            "), not on " + join(failed) + "; repeat the same request to finish the switch" +
            (enabled ? "" : " (nothing is lost: a shard not switched off keeps its parked messages)");
        out = json_error_body(msg, error_code_text(ErrorCode::MaintenancePartial));
        out.pop_back();  // the closing brace: the per-shard results follow
        out += ",\"maintenanceMode\":";
        out += enabled ? "true" : "false";
        out += ",\"delivered\":";
        json_append_int(&out, delivered);
        out += ",\"duplicates\":";
        json_append_int(&out, duplicates);
        out += ",\"shards\":";
        out += per;
        out += '}';
        if (retry_after) r.headers.emplace_back("Retry-After", "1");
        QLOG_WARN("answered 503 maintenance_partial: %s", msg.c_str());
        return r;
    }
    out = enabled ? "{\"maintenanceMode\":true" : "{\"maintenanceMode\":false";
    out += ",\"bufferedMessages\":";
    json_append_int(&out, left);
    out += ",\"bufferHealthy\":true,\"message\":";
    json_append_string(
        &out, enabled ? "Maintenance mode enabled on every shard (" + total +
                            "): pushes are parked in PostgreSQL until it is disabled"
                      : "Maintenance mode disabled on every shard (" + total + "): " +
                            std::to_string(delivered + duplicates) + " parked messages delivered");
    out += ",\"delivered\":";
    json_append_int(&out, delivered);
    out += ",\"duplicates\":";
    json_append_int(&out, duplicates);
    out += ",\"shards\":";
    out += per;
    out += '}';
    return r;
}

bool shards_maintenance_enabled(SqlRoute& b, bool* read) {
    *read = false;
    std::vector<int> list;
    b.shard_list(&list);
    bool on = false;
    for (int sh : list) {
        std::string out;
        bool null = false;
        Status s = b.on_shard(sh, [&](PgConnection& pg) {
            return pg.call_json("queen_maint_enabled", "SELECT to_jsonb(queen.maintenance_enabled())",
                                0, nullptr, true, &out, &null);
        });
        if (!s.is_ok()) continue;
        *read = true;
        if (out == "true") {
            on = true;
            break;
        }
    }
    return on;
}

}  // namespace queen::sidecar
