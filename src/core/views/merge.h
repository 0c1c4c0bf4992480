// The deterministic merge order in which a dedup view consumes the partitions of its source
// queue (this order is what "proctime" means over a log). Each partition's messages stay in
// offset order; among the partitions' next messages the one with the smallest
// (created_at, partition name) goes first. The same visible log always merges the same way.
#pragma once
#include "core/common/firewall.h"

#include <cstdint>
#include <string>
#include <vector>

namespace queen::dedup {

// One candidate message: its partition (index into the caller's partition list, whose names
// break created_at ties), its offset and the creation time of its segment.
struct MergeItem {
    int partition;
    int64_t offset;
    int64_t created_at;
};

// Merge per-partition runs (each already in offset order) into consumption order, at most
// `limit` items; returns indexes into `items`. `names[p]` is partition p's name.
std::vector<size_t> merge_order(const std::vector<MergeItem>& items,
                                const std::vector<std::string>& names, size_t limit);
// The same over n items and nparts partitions' names, as plain arrays.
std::vector<size_t> merge_order(const MergeItem* items, size_t n, const std::string* names,
                                size_t nparts, size_t limit);

}  // namespace queen::dedup
