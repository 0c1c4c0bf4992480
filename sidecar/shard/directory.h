// The sidecar's view of a sharded cluster (queen-sidecar --router): the current ShardMap read
// from the router database (queen.shards(), queen.slot_map(), queen.map_version(),
// queen.slot_count(), queen.queue_placement(), one REPEATABLE READ snapshot), re-read when
// queen.map_version() changes (polled every refresh_ms on a thread of its own) and at once when
// a shard refuses a slot it does not own (55Q01, refresh_after). Also which slot each partition
// id lives in (learned from every resolve through the sharded backends: partition ids are
// unique across shards), so calls that name only an id (cache loads, outcome lookups) reach
// the shard that holds it.
//
// Locking. mu_ guards map_, registry_ and conninfos_; pid_mu_ guards pid_slot_; load_mu_ is
// held across a whole read from the router (one read at a time; it guards router_). Order:
// load_mu_ before mu_; mu_ and pid_mu_ are leaves (nothing is called out while they are held,
// never both at once). Readers take a shared_ptr copy of the map under mu_ and use it unlocked.
#pragma once

#include <libpq-fe.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "db/pg_options.h"
#include "shard/shard_map.h"

namespace queen::sidecar::shard {

class Directory {
public:
    // cs: the router connection's settings; refresh_ms: --router-refresh-ms.
    Directory(std::string router_conninfo, const pg::ConnSettings& cs, int64_t refresh_ms);
    ~Directory();
    Directory(const Directory&) = delete;
    Directory& operator=(const Directory&) = delete;

    // Read the map from the router now (blocking); on failure the previous map stays.
    Status load();
    // Install a map from rows (what load does after reading them; tests call it directly).
    Status install(const MapRows& rows);
    // The current map (nullptr before the first successful load).
    std::shared_ptr<const ShardMap> map() const;
    // A shard refused a slot as not its own while the map of version `seen` was used: read the
    // map again unless a newer version is already in (then nothing is read).
    Status refresh_after(int64_t seen);

    // A shard's name and connection string (index from a ShardMap).
    std::string name(int shard) const;
    std::string conninfo(int shard) const;

    // Remember / look up the slot of a partition id.
    void note_pid(int64_t pid, uint32_t slot);
    bool pid_slot(int64_t pid, uint32_t* slot) const;

    // The router's connection string.
    const std::string& router_conninfo() const { return router_conninfo_; }
    // Something that changes the map without changing its version (a queue's placement) is
    // being written: the poller reads the whole map on its next few rounds.
    void reload_soon() { force_rounds_.store(3); }

    // The poller: every refresh_ms, read queen.map_version() and the map when it changed.
    void start();
    void stop();
    // How many times the map was read (metrics and tests).
    int64_t loads() const { return loads_.load(); }

private:
    Status read_rows(MapRows* rows);        // load_mu_ held
    Status read_version(int64_t* version);  // load_mu_ held
    Status ensure_router();                 // load_mu_ held
    void poll_loop();

    std::string router_conninfo_;
    pg::ConnSettings conn_settings_;
    int64_t refresh_ms_;

    std::mutex load_mu_;
    PGconn* router_ = nullptr;

    mutable std::mutex mu_;
    std::shared_ptr<const ShardMap> map_;
    std::vector<std::string> registry_;   // shard index -> name (only grows)
    std::vector<std::string> conninfos_;  // shard index -> conninfo (the latest read)

    mutable std::mutex pid_mu_;
    std::unordered_map<int64_t, uint32_t> pid_slot_;

    std::atomic<int64_t> loads_{0};
    std::atomic<int> force_rounds_{0};
    std::mutex stop_mu_;
    std::condition_variable stop_cv_;
    bool stopping_ = false;
    std::thread poller_;
};

}  // namespace queen::sidecar::shard
