// The sidecar's memo of each queue's encryption flag and dedupBy (issue 27): what its pushes must
// do before they reach SQL (seal the payloads; carry a content identity). Filled from
// queen.queue_modes, trusted for ttl_ms (the partition memo's --meta-ttl-ms), forgotten at
// once when this sidecar configures the queue or when the extension refuses a push as not
// sealed (22QE1). A stale entry can only cost a refused push, never plaintext in an encrypted
// queue: the extension checks every push under the partition row lock (docs/encryption.md).
//
// Locking: one mutex, a leaf (nothing is called while it is held). Bounded: past kMaxEntries
// queues it starts again empty (a lookup costs one round trip for the queues of a push).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace queen::sidecar::crypto {

// What a push to a queue must do. A queue that does not exist yet has the defaults.
struct QueueMode {
    bool encrypted = false;
    bool by_content = false;
};

class QueueModes {
public:
    static constexpr std::size_t kMaxEntries = 100000;

    explicit QueueModes(int64_t ttl_ms) : ttl_ms_(ttl_ms) {}
    // Set the TTL (before serving).
    void set_ttl_ms(int64_t ttl_ms) { ttl_ms_ = ttl_ms; }
    QueueModes(const QueueModes&) = delete;
    QueueModes& operator=(const QueueModes&) = delete;

    // A fresh entry (put less than ttl_ms before now_mono) copied to *out.
    bool get(const std::string& queue, int64_t now_mono, QueueMode* out) const;
    // Insert or replace queue's entry.
    void put(const std::string& queue, QueueMode mode, int64_t now_mono);
    // Forget one queue (configured here, or a push refused as not sealed).
    void forget(const std::string& queue);
    std::size_t size() const;

private:
    struct Entry {
        QueueMode mode;
        int64_t put_mono = 0;
    };
    int64_t ttl_ms_;
    mutable std::mutex mu_;
    std::unordered_map<std::string, Entry> map_;
};

}  // namespace queen::sidecar::crypto
