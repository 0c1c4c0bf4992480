// Holding pipelined producer appends behind their predecessor (see streams_hold.h).
#include "streams/hold.h"

#include <algorithm>

namespace queen::sidecar::streams {

// Count an append of t's epoch as queued.
void ProducerHold::admit(Track& t, int64_t seq) {
    t.frontier = std::max(t.frontier, seq);
    t.inflight++;
    t.peak = std::max(t.peak, t.inflight);
}

// Let the held appends that follow t's frontier go (in seq order), each raising it.
void ProducerHold::release_following(Track& t, std::vector<uint64_t>* out) {
    while (!t.held.empty() && t.held.front().seq <= t.frontier + 1) {
        const Held h = t.held.front();
        t.held.erase(t.held.begin());
        held_key_.erase(h.id);
        n_held_--;
        held_bytes_ -= h.bytes;
        admit(t, h.seq);
        out->push_back(h.id);
    }
}

bool ProducerHold::arrive(const std::string& key, int64_t epoch, int64_t seq, int64_t bytes,
                          int64_t now_ms, uint64_t id, std::vector<uint64_t>* released,
                          bool* next) {
    *next = false;
    auto it = tracks_.find(key);
    if (it == tracks_.end()) {
        if (tracks_.size() >= lim_.max_producers) forget_idle();
        Track& t = tracks_[key];
        t.epoch = epoch;
        t.frontier = seq;
        t.inflight = 1;
        return false;
    }
    Track& t = it->second;
    if (epoch < t.epoch) {  // a fenced epoch: the extension answers it
        t.inflight++;
        return false;
    }
    if (epoch > t.epoch) {  // a new epoch: what was held of the old one goes now
        t.frontier = INT64_MAX - 1;
        release_following(t, released);
        t.epoch = epoch;
        t.frontier = seq;
        t.inflight++;
        return false;
    }
    const bool gap = seq > t.frontier + 1;
    if (!gap) {  // in order, or a repeat
        *next = seq == t.frontier + 1;
        admit(t, seq);
        release_following(t, released);
        return false;
    }
    if (t.inflight == 0) {  // nothing of it in flight to wait for: the extension answers now
        t.inflight++;       // (frontier unchanged: it will not apply)
        return false;
    }
    if (lim_.hold_ms <= 0 || t.held.size() >= lim_.per_producer || n_held_ >= lim_.max_items ||
        held_bytes_ + bytes > lim_.max_bytes) {
        t.inflight++;  // over a bound: queued as it is (frontier unchanged: it will not apply)
        return false;
    }
    auto pos = std::upper_bound(t.held.begin(), t.held.end(), seq,
                                [](int64_t s, const Held& h) { return s < h.seq; });
    t.held.insert(pos, Held{seq, id, bytes});
    held_key_[id] = key;
    n_held_++;
    held_bytes_ += bytes;
    deadlines_.push({now_ms + lim_.hold_ms, id});
    return true;
}

void ProducerHold::finished(const std::string& key, int64_t epoch, int64_t applied_seq) {
    auto it = tracks_.find(key);
    if (it == tracks_.end() || it->second.inflight == 0) return;
    Track& t = it->second;
    // Nothing of it queued any more: the extension's word is the frontier from now on (an
    // append of the frontier that was refused, e.g. after another sidecar wrote, no longer
    // keeps later ones waiting).
    if (--t.inflight == 0) {  // a burst ended
        t.last_peak = t.peak;
        t.peak = 0;
    }
    if (t.inflight == 0 && t.held.empty() && applied_seq >= 0 && epoch == t.epoch)
        t.frontier = applied_seq;
}

int64_t ProducerHold::last_depth(const std::string& key) const {
    auto it = tracks_.find(key);
    // a producer pipelining without pause never reaches 0 in flight: its current burst counts
    return it == tracks_.end() ? 0 : std::max(it->second.last_peak, it->second.peak);
}

void ProducerHold::expired(int64_t now_ms, std::vector<uint64_t>* out) {
    while (!deadlines_.empty() && deadlines_.top().first <= now_ms) {
        const uint64_t id = deadlines_.top().second;
        deadlines_.pop();
        auto k = held_key_.find(id);
        if (k == held_key_.end()) continue;  // released already
        Track& t = tracks_[k->second];
        int64_t seq = 0;
        for (const Held& h : t.held)
            if (h.id == id) seq = h.seq;
        // its predecessor did not come: queue it (the extension answers it) with the held ones
        // before it, in seq order, and those that follow it
        t.frontier = std::max(t.frontier, seq - 1);
        release_following(t, out);
    }
}

int64_t ProducerHold::next_deadline() {
    while (!deadlines_.empty() && !held_key_.count(deadlines_.top().second))
        deadlines_.pop();  // released before its deadline
    return deadlines_.empty() ? -1 : deadlines_.top().first;
}

void ProducerHold::release_all(std::vector<uint64_t>* out) {
    for (auto& [key, t] : tracks_) {
        t.frontier = INT64_MAX - 1;
        release_following(t, out);
    }
    deadlines_ = {};
}

// Forget the producers with nothing queued or held (they are tracked again when they write).
void ProducerHold::forget_idle() {
    for (auto it = tracks_.begin(); it != tracks_.end();)
        it = it->second.inflight == 0 && it->second.held.empty() ? tracks_.erase(it) : ++it;
}

// The producer hold's limits from the settings.
HoldLimits stream_hold_limits(const Settings& st) {
    HoldLimits h{};
    h.hold_ms = st.stream_producer_cache ? st.stream_hold_ms : 0;
    h.per_producer = static_cast<std::size_t>(st.stream_hold_per_producer);
    h.max_items = static_cast<std::size_t>(st.stream_hold_max_items);
    h.max_bytes = st.stream_hold_max_bytes;
    h.max_producers = static_cast<std::size_t>(st.stream_hold_max_producers);
    return h;
}

}  // namespace queen::sidecar::streams
