// A version of the placement and its lookups (see shard_map.h).
#include "shard/shard_map.h"

#include <algorithm>

#include "core/common/slot.h"

namespace queen::sidecar::shard {

// slot_of(queue, partition), or the queue's one slot.
uint32_t ShardMap::slot_of(std::string_view queue, std::string_view partition) const {
    if (!single_slot.empty() && single_slot.count(std::string(queue)))
        return queen::slot_of(queue, "", slot_count);
    return queen::slot_of(queue, partition, slot_count);
}

// A stream is the partition of its name in the extension's reserved queue __queen_streams
// (queen.stream_create), and the shard's fence places it as that partition.
uint32_t ShardMap::stream_slot(std::string_view name) const {
    return slot_of("__queen_streams", name);
}

// Check the rows and index the shards by name.
bool build_map(const MapRows& rows, std::vector<std::string>* registry, ShardMap* out,
               std::string* why) {
    if (rows.slot_count < 1 || rows.slot_count > int64_t(queen::kMaxSlotCount) ||
        !queen::slot_count_valid(static_cast<uint32_t>(rows.slot_count))) {
        *why = "the router's slot_count " + std::to_string(rows.slot_count) +
               " is not a power of two in [1, 65536]";
        return false;
    }
    ShardMap m;
    m.version = rows.version;
    m.slot_count = static_cast<uint32_t>(rows.slot_count);
    m.slot_shard.assign(m.slot_count, -1);
    auto index_of = [&](const std::string& name) {
        auto it = std::find(registry->begin(), registry->end(), name);
        if (it != registry->end()) return static_cast<int>(it - registry->begin());
        registry->push_back(name);
        return static_cast<int>(registry->size() - 1);
    };
    std::unordered_set<std::string> known;
    for (const auto& sh : rows.shards) {
        known.insert(sh.first);
        index_of(sh.first);
    }
    for (const auto& sl : rows.slots) {
        if (sl.first < 0 || sl.first >= rows.slot_count) {
            *why = "the router's slot map names slot " + std::to_string(sl.first) +
                   " outside [0, " + std::to_string(rows.slot_count) + ")";
            return false;
        }
        if (!known.count(sl.second)) {
            *why = "slot " + std::to_string(sl.first) + " is mapped to unknown shard \"" +
                   sl.second + "\"";
            return false;
        }
        m.slot_shard[static_cast<std::size_t>(sl.first)] = index_of(sl.second);
    }
    for (uint32_t s = 0; s < m.slot_count; s++)
        if (m.slot_shard[s] < 0) {
            *why = "slot " + std::to_string(s) + " has no shard in the router's slot map";
            return false;
        }
    for (const auto& q : rows.placement)
        if (q.second) m.single_slot.insert(q.first);
    *out = std::move(m);
    return true;
}

}  // namespace queen::sidecar::shard
