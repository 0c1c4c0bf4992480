// The router's map as the sidecar holds it (see directory.h for the locking protocol).
#include "shard/directory.h"

#include <chrono>

#include "common/log.h"
#include "db/pg_wire.h"

namespace queen::sidecar::shard {

namespace {
// The reads of one snapshot (constant statements, no parameters).
constexpr const char* kShardsSql = "SELECT name::text, conninfo::text FROM queen.shards()";
constexpr const char* kSlotsSql = "SELECT slot::int8::text, shard::text FROM queen.slot_map()";
constexpr const char* kVersionSql = "SELECT queen.map_version()::int8::text";
constexpr const char* kCountSql = "SELECT queen.slot_count()::int8::text";
constexpr const char* kPlacementSql =
    "SELECT queue::text, single_slot FROM queen.queue_placement()";

// A text result of `sql` (tuples expected); Unavailable when the router cannot be asked.
Status run(PGconn* c, const char* sql, pg::ResultGuard* g) {
    g->r = PQexec(c, sql);
    if (PQresultStatus(g->r) == PGRES_TUPLES_OK || PQresultStatus(g->r) == PGRES_COMMAND_OK)
        return Status::ok();
    const std::string st = pg::sqlstate(g->r);
    return Status(pg::connection_broken(c, st) ? StatusCode::Unavailable : StatusCode::Internal,
                  "router: " + pg::failure_text(c, g->r, true), st);
}

// A decimal text value.
bool to_int(const char* s, int64_t* out) {
    char* end = nullptr;
    *out = std::strtoll(s, &end, 10);
    return end && *end == '\0' && end != s;
}
}  // namespace

Directory::Directory(std::string router_conninfo, const pg::ConnSettings& cs, int64_t refresh_ms)
    : router_conninfo_(std::move(router_conninfo)),
      conn_settings_(cs),
      refresh_ms_(refresh_ms) {}

Directory::~Directory() {
    stop();
    if (router_) PQfinish(router_);
}

// A live connection to the router (reconnected when broken).
Status Directory::ensure_router() {
    if (router_ && PQstatus(router_) == CONNECTION_OK) return Status::ok();
    if (router_) PQfinish(router_);
    router_ = nullptr;
    const pg::ConnOptions opts =
        pg::connection_options(pg::ConnKind::Router, router_conninfo_, conn_settings_);
    std::string err;
    router_ = pg::connect(opts.keys(), opts.values(), &err);
    if (!router_) return Status(StatusCode::Unavailable, "router: " + err);
    return Status::ok();
}

// The five reads in one REPEATABLE READ snapshot, so the version matches the map read with it.
Status Directory::read_rows(MapRows* rows) {
    Status s = ensure_router();
    if (!s.is_ok()) return s;
    pg::ResultGuard begin;
    s = run(router_, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", &begin);
    if (!s.is_ok()) return s;
    auto body = [&]() -> Status {
        pg::ResultGuard v, n, sh, sl, pl;
        Status st = run(router_, kVersionSql, &v);
        if (st.is_ok()) st = run(router_, kCountSql, &n);
        if (st.is_ok()) st = run(router_, kShardsSql, &sh);
        if (st.is_ok()) st = run(router_, kSlotsSql, &sl);
        if (st.is_ok()) st = run(router_, kPlacementSql, &pl);
        if (!st.is_ok()) return st;
        if (PQntuples(v.r) != 1 || PQntuples(n.r) != 1 || !to_int(PQgetvalue(v.r, 0, 0), &rows->version) ||
            !to_int(PQgetvalue(n.r, 0, 0), &rows->slot_count))
            return Status(StatusCode::Internal, "router: map_version/slot_count gave no value");
        for (int i = 0; i < PQntuples(sh.r); i++)
            rows->shards.emplace_back(PQgetvalue(sh.r, i, 0), PQgetvalue(sh.r, i, 1));
        for (int i = 0; i < PQntuples(sl.r); i++) {
            int64_t slot = -1;
            if (!to_int(PQgetvalue(sl.r, i, 0), &slot))
                return Status(StatusCode::Internal, "router: slot_map gave a bad slot");
            rows->slots.emplace_back(slot, PQgetvalue(sl.r, i, 1));
        }
        for (int i = 0; i < PQntuples(pl.r); i++)
            rows->placement.emplace_back(PQgetvalue(pl.r, i, 0),
                                         PQgetvalue(pl.r, i, 1)[0] == 't');
        return Status::ok();
    };
    s = body();
    pg::ResultGuard end;
    Status e = run(router_, s.is_ok() ? "COMMIT" : "ROLLBACK", &end);
    return s.is_ok() ? e : s;
}

// queen.map_version() alone (the poller's cheap check).
Status Directory::read_version(int64_t* version) {
    Status s = ensure_router();
    if (!s.is_ok()) return s;
    pg::ResultGuard g;
    s = run(router_, kVersionSql, &g);
    if (!s.is_ok()) return s;
    if (PQntuples(g.r) != 1 || !to_int(PQgetvalue(g.r, 0, 0), version))
        return Status(StatusCode::Internal, "router: map_version gave no value");
    return Status::ok();
}

// Read and install.
Status Directory::load() {
    std::lock_guard<std::mutex> lk(load_mu_);
    MapRows rows;
    Status s = read_rows(&rows);
    if (!s.is_ok()) return s;
    return install(rows);
}

// Check the rows, then swap the new map in (conninfos follow the registry's indexes).
Status Directory::install(const MapRows& rows) {
    auto m = std::make_shared<ShardMap>();
    std::string why;
    std::lock_guard<std::mutex> lk(mu_);
    std::vector<std::string> reg = registry_;
    if (!build_map(rows, &reg, m.get(), &why)) return Status(StatusCode::Internal, "router: " + why);
    registry_ = std::move(reg);
    conninfos_.resize(registry_.size());
    for (const auto& sh : rows.shards)
        for (std::size_t i = 0; i < registry_.size(); i++)
            if (registry_[i] == sh.first) conninfos_[i] = sh.second;
    if (!map_ || map_->version != m->version)
        QLOG_INFO("shard map version %lld: %zu shards, %u slots",
                  static_cast<long long>(m->version), rows.shards.size(), m->slot_count);
    map_ = std::move(m);
    loads_++;
    return Status::ok();
}

std::shared_ptr<const ShardMap> Directory::map() const {
    std::lock_guard<std::mutex> lk(mu_);
    return map_;
}

// One reader at a time: whoever waited on load_mu_ sees the map the first one read.
Status Directory::refresh_after(int64_t seen) {
    std::lock_guard<std::mutex> lk(load_mu_);
    {
        std::lock_guard<std::mutex> m(mu_);
        if (map_ && map_->version > seen) return Status::ok();
    }
    MapRows rows;
    Status s = read_rows(&rows);
    if (!s.is_ok()) return s;
    return install(rows);
}

std::string Directory::name(int shard) const {
    std::lock_guard<std::mutex> lk(mu_);
    return shard >= 0 && static_cast<std::size_t>(shard) < registry_.size() ? registry_[shard]
                                                                             : "?";
}

std::string Directory::conninfo(int shard) const {
    std::lock_guard<std::mutex> lk(mu_);
    return shard >= 0 && static_cast<std::size_t>(shard) < conninfos_.size() ? conninfos_[shard]
                                                                              : std::string();
}

void Directory::note_pid(int64_t pid, uint32_t slot) {
    if (pid < 0) return;
    std::lock_guard<std::mutex> lk(pid_mu_);
    pid_slot_[pid] = slot;
}

bool Directory::pid_slot(int64_t pid, uint32_t* slot) const {
    std::lock_guard<std::mutex> lk(pid_mu_);
    auto it = pid_slot_.find(pid);
    if (it == pid_slot_.end()) return false;
    *slot = it->second;
    return true;
}

void Directory::start() {
    if (refresh_ms_ > 0 && !poller_.joinable()) poller_ = std::thread([this] { poll_loop(); });
}

void Directory::stop() {
    {
        std::lock_guard<std::mutex> lk(stop_mu_);
        stopping_ = true;
    }
    stop_cv_.notify_all();
    if (poller_.joinable()) poller_.join();
}

// Compare versions; read the whole map only when it moved (or none is loaded yet).
void Directory::poll_loop() {
    std::unique_lock<std::mutex> lk(stop_mu_);
    while (!stop_cv_.wait_for(lk, std::chrono::milliseconds(refresh_ms_), [&] { return stopping_; })) {
        lk.unlock();
        int64_t have = -1;
        if (auto m = map()) have = m->version;
        {
            std::lock_guard<std::mutex> ll(load_mu_);
            int64_t v = -1;
            Status s = read_version(&v);
            const bool forced = force_rounds_.load() > 0;
            if (forced) force_rounds_--;
            if (s.is_ok() && (v != have || forced)) {
                MapRows rows;
                s = read_rows(&rows);
                if (s.is_ok()) s = install(rows);
            }
            if (!s.is_ok()) QLOG_WARN("shard map refresh: %s", s.message().c_str());
        }
        lk.lock();
    }
}

}  // namespace queen::sidecar::shard
