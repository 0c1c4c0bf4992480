// One version of a sharded cluster's placement as the router database states it
// (docs/scale-out.md): the shards (name, conninfo), which shard owns each slot, and which queues
// keep all their partitions on one slot. Pure data and lookups; reading it from the router is
// directory.h's job. A shard is known by its index in the directory's registry of names, which
// only grows, so an index read from one version stays valid in every later one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace queen::sidecar::shard {

struct ShardMap {
    int64_t version = -1;
    uint32_t slot_count = 0;
    std::vector<int> slot_shard;                // slot -> shard index (-1: no owner)
    std::unordered_set<std::string> single_slot;  // queues placed whole on slot_of(queue, "")

    // The slot of a partition: slot_of(queue, partition), or slot_of(queue, "") for a queue
    // placed whole on one slot.
    uint32_t slot_of(std::string_view queue, std::string_view partition) const;
    // The slot of a Durable Stream: that of its partition, (__queen_streams, name).
    uint32_t stream_slot(std::string_view name) const;
    // The shard index owning a slot (-1 when the map names none).
    int owner(uint32_t slot) const {
        return slot < slot_shard.size() ? slot_shard[slot] : -1;
    }
};

// The rows the router answers, as read (directory.cpp) and as the unit tests give them.
struct MapRows {
    int64_t version = -1;
    int64_t slot_count = 0;
    std::vector<std::pair<std::string, std::string>> shards;  // (name, conninfo)
    std::vector<std::pair<int64_t, std::string>> slots;       // (slot, shard name)
    std::vector<std::pair<std::string, bool>> placement;      // (queue, single_slot)
};

// Build a ShardMap from the router's rows; names are looked up (and new ones appended) in
// *registry, whose positions are the shard indexes. Fails (returns false, *why) on a slot count
// that is not a power of two, a slot out of range or missing, or a slot naming an unknown shard.
bool build_map(const MapRows& rows, std::vector<std::string>* registry, ShardMap* out,
               std::string* why);

}  // namespace queen::sidecar::shard
