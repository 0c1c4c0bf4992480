// An in-memory model of the extension's contract for the sidecar's tests: resolve_partition,
// push_segments (probe in (GREATEST(p_verified, txns_start - 1), last_offset] within the window,
// first-wins, contiguous offsets for survivors, one hashes row per segment), the cache's two
// reads, retention and window changes. It also runs the full-window probe beside every narrowed
// one and counts any disagreement: a vouch that would have let a duplicate in. Hints
// (p_hints) are checked like the extension does (22023 for a malformed one), each hinted
// original is confirmed against the stored row (in the window, same hash), and one that does
// not confirm sends the segment to the full probe (hint_fallbacks).
#pragma once

#include <cstring>
#include <map>
#include <set>
#include <string_view>
#include <mutex>
#include <string>
#include <vector>

#include "push/push_store.h"
#include "common/clock.h"
#include "core/common/hash.h"
#include "core/common/segment_codec.h"
#include "core/probe/vouch_hints.h"

namespace queen::sidecar::testing {

class FakeStore {
public:
    explicit FakeStore(const Clock& clock) : clock_(clock) {}

    struct Part {
        int64_t id = 0;
        int32_t window_s = 3600;
        int64_t last = -1;
        int64_t txns_start = 0;
        std::vector<TxnRow> txns;            // ascending base
        std::map<int64_t, queen::Uuid> ids;  // offset -> message id
    };

    // Find or create.
    Part& part(const std::string& q, const std::string& p) {
        std::string key = q + '\x1f' + p;
        auto it = by_name_.find(key);
        if (it != by_name_.end()) return parts_[it->second];
        int64_t id = static_cast<int64_t>(parts_.size()) + 100;
        by_name_[key] = id;
        Part& np = parts_[id];
        np.id = id;
        auto w = windows_.find(q);
        if (w != windows_.end()) np.window_s = w->second;
        return np;
    }

    // Whether the partition exists (without creating it).
    bool has(const std::string& q, const std::string& p) {
        std::lock_guard<std::recursive_mutex> lk(mu_);
        return by_name_.count(q + '\x1f' + p) > 0;
    }

    Status resolve(std::string_view q, std::string_view p, PartitionMeta* out) {
        std::lock_guard<std::recursive_mutex> lk(mu_);
        if (down) return Status(StatusCode::Unavailable, "down");
        calls_resolve++;
        Part& pt = part(std::string(q), std::string(p));
        if (moving_.count(pt.id)) return moving_refusal();
        out->pid = pt.id;
        out->window_s = pt.window_s;
        out->last_offset = pt.last;
        out->txns_start = pt.txns_start;
        return Status::ok();
    }

    // Earliest in-window offset of h with offset > from (the probe), or -1.
    int64_t probe(const Part& pt, const queen::Hash128& h, int64_t from, int64_t now) const {
        if (pt.window_s <= 0) return -1;
        int64_t best = -1;
        for (const TxnRow& r : pt.txns) {
            if (r.end <= from || r.created_ms < now - int64_t(pt.window_s) * 1000) continue;
            for (int64_t i = 0; i <= r.end - r.base; i++) {
                if (std::memcmp(r.hashes.data() + i * 16, h.b, 16) == 0) {
                    int64_t off = r.base + i;
                    if (off > from && (best < 0 || off < best)) best = off;
                }
            }
        }
        return best;
    }

    // push_segments_named: named segments' partitions found or created, the push, and their
    // metadata after it, all as one step (one transaction in the extension).
    Status push_named(const std::vector<SegmentIn>& segs, const std::vector<PartitionName>& names,
                      std::vector<std::vector<EntryOut>>* out, std::vector<PartitionMeta>* metas) {
        std::lock_guard<std::recursive_mutex> lk(mu_);
        if (down) return Status(StatusCode::Unavailable, "down");
        calls_named++;
        for (const SegmentIn& sg : segs)
            if (sg.pid < 0) {
                named_lookups++;
                break;
            }
        std::vector<SegmentIn> known = segs;
        std::vector<std::string> created;  // rolled back with the call when it fails
        for (std::size_t i = 0; i < known.size(); i++)
            if (known[i].pid < 0) {
                const std::string q(names[i].queue), p(names[i].partition);
                if (!has(q, p)) created.push_back(q + '\x1f' + p);
                known[i].pid = part(q, p).id;
            }
        Status s = push(known, out);
        if (!s.is_ok() && !last_committed_) {  // rolled back: so is the creation
            for (const std::string& key : created) {
                parts_.erase(by_name_[key]);
                by_name_.erase(key);
            }
            return s;
        }
        metas->assign(segs.size(), PartitionMeta{});
        for (std::size_t i = 0; i < segs.size(); i++) {
            if (segs[i].pid >= 0) continue;
            const Part& pt = parts_[known[i].pid];
            (*metas)[i].pid = pt.id;
            (*metas)[i].window_s = pt.window_s;
            (*metas)[i].last_offset = pt.last;
            (*metas)[i].txns_start = pt.txns_start;
        }
        return Status::ok();
    }

    Status push(const std::vector<SegmentIn>& segs, std::vector<std::vector<EntryOut>>* out) {
        std::lock_guard<std::recursive_mutex> lk(mu_);
        last_committed_ = false;
        if (down) return Status(StatusCode::Unavailable, "down");
        calls_push++;
        for (const SegmentIn& sg : segs)
            if (moving_.count(sg.pid)) return moving_refusal();  // the whole call rolls back
        if (lose_before_commit > 0) {  // sent, then the connection broke: nothing written
            lose_before_commit--;
            return Status(StatusCode::Unknown, "connection lost before COMMIT");
        }
        // The extension refuses a payload holding the marker: the whole call rolls back.
        for (const SegmentIn& sg : segs) {
            queen::SegmentReader rd(reinterpret_cast<const uint8_t*>(sg.segment->data()),
                                    sg.segment->size());
            queen::MessageView mv;
            while (rd.next(&mv))
                if (!reject_payload.empty() &&
                    std::string_view(mv.payload).find(reject_payload) != std::string_view::npos)
                    return Status(StatusCode::BadRequest, "payload is not valid JSON", "22P02");
        }
        // Like the extension's vouch_check: a vouch above the stored log is refused (22023).
        for (const SegmentIn& sg : segs) {
            const Part& pt = parts_.at(sg.pid);
            if (sg.verified > pt.last)
                return Status(StatusCode::BadRequest,
                              "p_verified " + std::to_string(sg.verified) +
                                  " is above the last offset " + std::to_string(pt.last) +
                                  " of partition id " + std::to_string(sg.pid),
                              "22023");
        }
        for (const SegmentIn& sg : segs) {
            if (!sg.hints || sg.hints->empty()) continue;
            std::vector<queen::VouchHint> hs(sg.hints->size() / queen::kHintBytes + 1);
            std::size_t bad = 0;
            const char* why = queen::hints_decode(
                reinterpret_cast<const uint8_t*>(sg.hints->data()), sg.hints->size(),
                sg.hashes->size() / 16, sg.verified, hs.data(), &bad);
            if (why) return Status(StatusCode::BadRequest, std::string("segment: ") + why, "22023");
        }
        Status st = push_locked(segs, out);
        if (!st.is_ok()) return st;
        last_committed_ = true;
        if (lose_after_commit > 0) {  // committed, then the answer was lost
            lose_after_commit--;
            out->clear();
            return Status(StatusCode::Unknown, "connection lost after COMMIT");
        }
        if (!unknown_status_txn.empty()) {
            for (std::size_t s = 0; s < segs.size(); s++) {
                queen::SegmentReader rd(reinterpret_cast<const uint8_t*>(segs[s].segment->data()),
                                        segs[s].segment->size());
                queen::MessageView mv;
                for (std::size_t i = 0; rd.next(&mv); i++)
                    if (mv.txn == unknown_status_txn) (*out)[s][i].status = EntryStatus::Unknown;
            }
        }
        return Status::ok();
    }

    // The outcome lookup: ids stored above `after`.
    Status find_ids(int64_t pid, int64_t after, const std::vector<queen::Uuid>& ids,
                    std::vector<int64_t>* offs) {
        std::lock_guard<std::recursive_mutex> lk(mu_);
        if (down) return Status(StatusCode::Unavailable, "down");
        calls_find++;
        if (fail_finds > 0) {
            fail_finds--;
            return Status(StatusCode::Unavailable, "down");
        }
        offs->assign(ids.size(), -1);
        const Part& pt = parts_.at(pid);
        for (auto it = pt.ids.upper_bound(after); it != pt.ids.end(); ++it)
            for (std::size_t i = 0; i < ids.size(); i++)
                if (it->second == ids[i]) (*offs)[i] = it->first;
        return Status::ok();
    }

    // A restore from an older backup: pid's log ends at `last` again (rows above it are gone).
    void restore_to(int64_t pid, int64_t last) {
        std::lock_guard<std::recursive_mutex> lk(mu_);
        Part& pt = parts_.at(pid);
        pt.last = last;
        pt.ids.erase(pt.ids.upper_bound(last), pt.ids.end());
        std::vector<TxnRow> keep;
        for (const TxnRow& r : pt.txns)
            if (r.end <= last) keep.push_back(r);
        pt.txns.swap(keep);
    }

    // How many stored copies of txn partition pid holds (anywhere in its log).
    int copies(int64_t pid, const std::string& txn) {
        std::lock_guard<std::recursive_mutex> lk(mu_);
        const queen::Hash128 h = queen::txn_hash(txn);
        int n = 0;
        for (const TxnRow& r : parts_.at(pid).txns)
            for (std::size_t i = 0; i + 16 <= r.hashes.size(); i += 16)
                n += std::memcmp(r.hashes.data() + i, h.b, 16) == 0;
        return n;
    }

    int lose_before_commit = 0;
    int lose_after_commit = 0;
    int fail_finds = 0;
    std::string reject_payload;
    std::string unknown_status_txn;
    int calls_push = 0, calls_find = 0;
    int calls_moving = 0;  // calls refused with 55Q02

    // A sharded cluster's fence on a slot being moved: pushes and resolves touching partition
    // id pid are refused with 55Q02 (nothing written) while on (any thread may call this).
    void set_moving(int64_t pid, bool on) {
        std::lock_guard<std::recursive_mutex> lk(mu_);
        if (on)
            moving_.insert(pid);
        else
            moving_.erase(pid);
    }

private:
    // What a fenced shard answers (ShardedBackend hands it on at once).
    Status moving_refusal() {
        calls_moving++;
        return Status(StatusCode::Unavailable, "a slot is being moved; retry", "55Q02");
    }
    std::set<int64_t> moving_;

    Status push_locked(const std::vector<SegmentIn>& segs,
                       std::vector<std::vector<EntryOut>>* out) {
        out->assign(segs.size(), {});
        const int64_t now = clock_.wall_ms();
        for (std::size_t s = 0; s < segs.size(); s++) {
            Part& pt = parts_.at(segs[s].pid);
            queen::SegmentReader rd(reinterpret_cast<const uint8_t*>(segs[s].segment->data()),
                                    segs[s].segment->size());
            std::vector<queen::MessageView> msgs;
            queen::MessageView mv;
            while (rd.next(&mv)) msgs.push_back(mv);
            if (!rd.at_clean_end() || segs[s].hashes->size() != msgs.size() * 16)
                return Status(StatusCode::BadRequest, "bad segment");
            // Like the extension's p_window check: a vouch made under a smaller window is
            // ignored (the queue's window is read under the row lock).
            int64_t verified = pt.window_s > segs[s].window_s ? -1 : segs[s].verified;
            // Hints go with the vouch; all confirmed -> the hinted messages are duplicates of
            // their originals, else the full probe.
            std::map<std::string, int64_t> hinted;  // hash -> confirmed original
            const std::string* hb = segs[s].hints;
            if (verified >= 0 && pt.window_s > 0 && hb && !hb->empty()) {
                hinted_pushes++;
                bool ok = true;
                for (std::size_t k = 0; k + queen::kHintBytes <= hb->size(); k += queen::kHintBytes) {
                    const auto* p = reinterpret_cast<const uint8_t*>(hb->data()) + k;
                    uint32_t idx = 0;
                    uint64_t off = 0;
                    for (int i = 0; i < 4; i++) idx = (idx << 8) | p[i];
                    for (int i = 0; i < 8; i++) off = (off << 8) | p[4 + i];
                    const char* h = segs[s].hashes->data() + std::size_t(idx) * 16;
                    bool found = false;
                    for (const TxnRow& r : pt.txns)
                        if (int64_t(off) >= r.base && int64_t(off) <= r.end &&
                            int64_t(off) >= pt.txns_start &&
                            r.created_ms >= now - int64_t(pt.window_s) * 1000 &&
                            std::memcmp(r.hashes.data() + (int64_t(off) - r.base) * 16, h, 16) == 0)
                            found = true;
                    if (!found) ok = false;
                    hinted[std::string(h, 16)] = int64_t(off);
                }
                if (!ok) {
                    hint_fallbacks++;
                    hinted.clear();
                    verified = -1;
                }
            }
            const int64_t from = std::max(verified, pt.txns_start - 1);
            if (verified >= 0) vouched_pushes++;
            TxnRow row;
            row.base = pt.last + 1;
            row.created_ms = now;
            std::map<std::string, std::size_t> first;  // hash -> index in this call
            auto& res = (*out)[s];
            for (std::size_t i = 0; i < msgs.size(); i++) {
                queen::Hash128 h =
                    queen::hash_at(reinterpret_cast<const uint8_t*>(segs[s].hashes->data()), i);
                if (h != queen::txn_hash(msgs[i].txn))
                    return Status(StatusCode::BadRequest, "hash mismatch");
                EntryOut e;
                e.created_ms = now;
                std::string key(reinterpret_cast<const char*>(h.b), 16);
                auto hint = hinted.find(key);
                int64_t off = hint != hinted.end() ? hint->second : probe(pt, h, from, now);
                int64_t full = probe(pt, h, pt.txns_start - 1, now);
                if (off != full) unsound_vouches++;
                auto f = first.find(key);
                if (off >= 0) {
                    e.status = EntryStatus::Duplicate;
                    e.offset = off;
                    e.id = pt.ids.count(off) ? pt.ids[off] : queen::Uuid{};
                } else if (f != first.end() && pt.window_s > 0) {  // window 0: no folding
                    e = res[f->second];
                    e.status = EntryStatus::Duplicate;
                } else {
                    first[key] = i;
                    e.status = EntryStatus::Queued;
                    e.offset = ++pt.last;
                    e.id = msgs[i].id;
                    pt.ids[e.offset] = e.id;
                    row.hashes.append(reinterpret_cast<const char*>(h.b), 16);
                }
                res.push_back(e);
            }
            if (!row.hashes.empty()) {
                row.end = pt.last;
                pt.txns.push_back(row);
            }
        }
        return Status::ok();
    }

public:

    Status load_window(int64_t pid, int64_t window_s, int64_t* last, std::vector<TxnRow>* rows) {
        std::lock_guard<std::recursive_mutex> lk(mu_);
        if (down || fail_loads) return Status(StatusCode::Unavailable, "down");
        calls_window++;
        const Part& pt = parts_.at(pid);
        *last = pt.last;
        const int64_t now = clock_.wall_ms();
        for (const TxnRow& r : pt.txns)
            if (r.created_ms >= now - window_s * 1000) rows->push_back(r);
        return Status::ok();
    }

    Status load_range(int64_t pid, int64_t lo, int64_t hi, std::vector<TxnRow>* rows) {
        std::lock_guard<std::recursive_mutex> lk(mu_);
        if (down || fail_loads || fail_ranges) return Status(StatusCode::Unavailable, "down");
        calls_range++;
        range_rows_read_last = 0;
        const Part& pt = parts_.at(pid);
        for (const TxnRow& r : pt.txns)
            if (r.base >= lo && r.base <= hi) {
                rows->push_back(r);
                range_rows_read_last++;
            }
        return Status::ok();
    }

    // Purge the hashes of rows created before cutoff_ms (advancing txns_start), like run_retention.
    void retention(int64_t cutoff_ms) {
        std::lock_guard<std::recursive_mutex> lk(mu_);
        for (auto& [id, pt] : parts_) {
            while (!pt.txns.empty() && pt.txns.front().created_ms < cutoff_ms) {
                pt.txns_start = pt.txns.front().end + 1;
                pt.txns.erase(pt.txns.begin());
            }
        }
    }

    // /configure's window for queue q (every partition of it).
    void set_window(const std::string& q, int32_t w) {
        std::lock_guard<std::recursive_mutex> lk(mu_);
        windows_[q] = w;
        for (auto& [key, id] : by_name_)
            if (key.compare(0, q.size() + 1, q + '\x1f') == 0) parts_[id].window_s = w;
    }

    // Append a raw row as if another writer pushed it (hashes of txns), returning its base;
    // created_ms: its created_at (default: the clock; later models issue 28's monotone stamp
    // after the database's clock stepped back).
    int64_t external_push(int64_t pid, const std::vector<std::string>& txns,
                          int64_t created_ms = -1) {
        std::lock_guard<std::recursive_mutex> lk(mu_);
        Part& pt = parts_.at(pid);
        TxnRow r;
        r.base = pt.last + 1;
        r.created_ms = created_ms < 0 ? clock_.wall_ms() : created_ms;
        for (const auto& t : txns) {
            queen::Hash128 h = queen::txn_hash(t);
            r.hashes.append(reinterpret_cast<const char*>(h.b), 16);
            pt.ids[++pt.last] = queen::Uuid{};
        }
        r.end = pt.last;
        pt.txns.push_back(r);
        return r.base;
    }

    Part& by_id(int64_t id) { return parts_.at(id); }

    bool down = false;
    bool fail_loads = false;
    bool fail_ranges = false;
    int calls_resolve = 0, calls_window = 0, calls_range = 0;
    int calls_named = 0;  // push_named calls (first contact folded into the push)
    int named_lookups = 0;  // of those, calls that named a partition (a metadata lookup)
    int64_t range_rows_read_last = 0;
    int64_t unsound_vouches = 0;
    int64_t vouched_pushes = 0;
    int64_t hinted_pushes = 0;   // segments whose hints were looked at
    int64_t hint_fallbacks = 0;  // of those, sent to the full probe (a hint did not confirm)

private:
    const Clock& clock_;
    std::recursive_mutex mu_;  // push_named runs resolve and push as one step
    bool last_committed_ = false;  // the last push() wrote (even if its answer was then lost)
    std::map<int64_t, Part> parts_;
    std::map<std::string, int64_t> by_name_;
    std::map<std::string, int32_t> windows_;
};

// A PushStore over a FakeStore.
class FakeBackend final : public PushStore {
public:
    explicit FakeBackend(FakeStore& s) : s_(s) {}
    Status resolve_partition(std::string_view q, std::string_view p, PartitionMeta* out) override {
        return s_.resolve(q, p, out);
    }
    Status push_segments(const std::vector<SegmentIn>& segs,
                         std::vector<std::vector<EntryOut>>* out) override {
        return s_.push(segs, out);
    }
    Status push_segments_named(const std::vector<SegmentIn>& segs,
                               const std::vector<PartitionName>& names,
                               std::vector<std::vector<EntryOut>>* out,
                               std::vector<PartitionMeta>* metas) override {
        return s_.push_named(segs, names, out, metas);  // hints checked and used by push()
    }
    Status load_window(int64_t pid, int64_t w, int64_t* last, std::vector<TxnRow>* rows) override {
        return s_.load_window(pid, w, last, rows);
    }
    Status load_range(int64_t pid, int64_t lo, int64_t hi, std::vector<TxnRow>* rows) override {
        return s_.load_range(pid, lo, hi, rows);
    }
    Status find_ids(int64_t pid, int64_t after, const std::vector<queen::Uuid>& ids,
                    std::vector<int64_t>* offs) override {
        return s_.find_ids(pid, after, ids, offs);
    }

private:
    FakeStore& s_;
};

}  // namespace queen::sidecar::testing
