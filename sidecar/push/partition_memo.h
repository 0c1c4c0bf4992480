// The flusher's partition metadata memo: (queue \x1f partition) -> what queen.resolve_partition
// answered (id, window, last_offset, txns_start), so a flush resolves only partitions it has not
// met lately. Bounded by bytes: every entry is charged what glibc's malloc really hands out for
// it (map node, key, bucket share; tests/sidecar/test_partition_memo.cpp checks the charge
// against mallinfo2), and over the budget the least recently used entries are dropped (a dropped
// entry only costs a re-resolve, batched with the flush's other misses). An entry older than
// ttl_ms is not answered (the window may have changed; see docs/sidecar.md).
//
// Locking: one mutex, a leaf (no other lock is taken while it is held, no call goes out).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "push/push_store.h"

namespace queen::sidecar {

class PartitionMemo {
public:
    PartitionMemo(int64_t budget_bytes, int64_t ttl_ms);
    PartitionMemo(const PartitionMemo&) = delete;
    PartitionMemo& operator=(const PartitionMemo&) = delete;

    // A fresh entry for key (fetched less than ttl_ms before now_mono): copies it to *out and
    // marks it recently used. *first_hit (optional): whether this is the entry's first hit
    // since it was put (the partition's second flush in the entry's lifetime).
    bool get(const std::string& key, int64_t now_mono, PartitionMeta* out,
             bool* first_hit = nullptr);
    // Any entry for key, fresh or past its TTL (copied to *out; recency unchanged): the
    // partition id it had, to ask the block cache whether it holds the partition.
    bool peek(const std::string& key, PartitionMeta* out) const;
    // Insert or replace key's entry, then evict least recently used entries down to the budget.
    void put(const std::string& key, const PartitionMeta& meta, int64_t now_mono);
    // Forget everything (a partition vanished, or a restore moved offsets back).
    void clear();

    // What the entries cost the allocator now (nodes, keys, bucket array).
    int64_t bytes() const;
    std::size_t size() const;
    uint64_t evictions() const;
    int64_t budget_bytes() const { return budget_; }

    // What glibc's malloc takes for one entry with a key of key_len bytes (node and key; the
    // bucket array is charged by its real size).
    static int64_t entry_bytes(std::size_t key_len);

private:
    struct Node {
        PartitionMeta meta;
        int64_t fetched_mono = 0;
        uint32_t hits = 0;  // since put (fits the node's padding: no extra allocator bytes)
        Node* prev = nullptr;  // toward the most recently used
        Node* next = nullptr;  // toward the least recently used
        const std::string* key = nullptr;  // the map's own key (nodes never move)
    };
    void unlink(Node* n);
    void push_front(Node* n);
    int64_t bucket_bytes() const;

    const int64_t budget_;
    const int64_t ttl_ms_;
    mutable std::mutex mu_;
    std::unordered_map<std::string, Node> map_;
    Node* head_ = nullptr;  // most recently used
    Node* tail_ = nullptr;  // least recently used
    int64_t node_bytes_ = 0;
    uint64_t evictions_ = 0;
};

}  // namespace queen::sidecar
