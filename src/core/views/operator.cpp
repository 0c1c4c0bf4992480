// The Deduplicate state machine; see dedup_operator.h and docs/dedup-views.md for the rules.
#include "core/views/operator.h"

#include <algorithm>

namespace queen::dedup {

// Mini-batch size is checked only when mini-batch is on, for every variant.
const char* validate(const Options& o) noexcept {
    if (o.mini_batch && o.mini_batch_size <= 0) return kMiniBatchSizeMessage;
    if (o.ttl < 0) return "stateTtlMs must be >= 0";
    return nullptr;
}

// Flink's short row-kind names.
const char* change_kind_name(ChangeKind k) noexcept {
    switch (k) {
        case ChangeKind::Insert: return "+I";
        case ChangeKind::UpdateBefore: return "-U";
        case ChangeKind::UpdateAfter: return "+U";
    }
    return "?";
}

// A key's stored state, or nullptr.
const KeyState* StateMap::find(const std::string& key) const {
    auto it = states_.find(key);
    if (it != states_.end()) return &it->second.state;
    if (base_ == nullptr) return nullptr;
    auto b = base_->find(key);
    return b == base_->end() ? nullptr : &b->second;
}

// A key's stored state and whether it is the base's.
const KeyState* StateMap::find(const std::string& key, bool* in_base) const {
    auto it = states_.find(key);
    *in_base = false;
    if (it != states_.end()) return &it->second.state;
    if (base_ == nullptr) return nullptr;
    auto b = base_->find(key);
    if (b == base_->end()) return nullptr;
    *in_base = true;
    return &b->second;
}

// Loaded, or in the base (a base state is as the store holds it).
bool StateMap::loaded(const std::string& key, Loaded* out) const {
    auto it = states_.find(key);
    if (it != states_.end()) {
        if (it->second.was_loaded && out != nullptr) *out = it->second.loaded;
        return it->second.was_loaded;
    }
    if (base_ == nullptr) return false;
    auto b = base_->find(key);
    if (b == base_->end()) return false;
    if (out != nullptr) *out = Loaded{b->second.kind, b->second.row.rowtime, b->second.locator};
    return true;
}

// Load a persisted state without marking it dirty.
void StateMap::load(const KeyState& s) {
    Slot& sl = states_[s.row.key];
    sl.state = s;
    sl.was_loaded = true;
    sl.loaded = Loaded{s.kind, s.row.rowtime, s.locator};
}

// The slot a write goes to; a new one records what the base held for the key.
StateMap::Slot& StateMap::slot_for_write(const std::string& key) {
    auto [it, fresh] = states_.try_emplace(key);
    if (fresh) {
        if (base_ != nullptr) {
            auto b = base_->find(key);
            if (b != base_->end()) {
                it->second.was_loaded = true;
                it->second.loaded = Loaded{b->second.kind, b->second.row.rowtime, b->second.locator};
            }
        }
    }
    if (!it->second.dirty) {
        it->second.dirty = true;
        dirty_order_.push_back(&*it);
    }
    return it->second;
}

// Write a state and remember the key as dirty.
void StateMap::put(const KeyState& s) { slot_for_write(s.row.key).state = s; }

// Write a key's state in place (its strings reuse their storage).
void StateMap::put(StateKind kind, const Row& r, int64_t now) {
    KeyState& s = slot_for_write(r.key).state;
    s.kind = kind;
    s.row = r;
    s.written_at = now;
    s.locator = 0;
}

// Forget which keys were written.
void StateMap::clear_dirty() {
    for (Entry* e : dirty_order_) e->second.dirty = false;
    dirty_order_.clear();
}

// The state as the operator reads it: absent when expired (last_write + ttl <= now). Reads never
// refresh. Rowtime keep-first candidates have no TTL (the watermark clears them).
const KeyState* Deduplicator::live(const StateMap& st, const std::string& key, int64_t now,
                                   bool* in_base) const {
    bool b = false;
    const KeyState* s = st.find(key, &b);
    if (in_base != nullptr) *in_base = b;
    if (s == nullptr) return nullptr;
    if (o_.ttl > 0 && s->kind != StateKind::Candidate && s->written_at + o_.ttl <= now)
        return nullptr;
    return s;
}

// The rows apply_row drops without reading: a proctime keep-first key with live state (its
// flag is never rewritten), a rowtime keep-first key whose live fired marker stays (a row that is
// not late is ignored; a late one is counted, so not ignored here).
bool Deduplicator::ignores(const KeyState& s, int64_t rowtime, int64_t now) const {
    if (o_.mini_batch || o_.keep != Keep::First) return false;
    if (o_.ttl > 0 && s.kind != StateKind::Candidate && s.written_at + o_.ttl <= now) return false;
    if (o_.order == Order::Proctime) return true;
    if (!insert_only_first() || s.kind != StateKind::Fired) return false;
    return !(has_wm_ && rowtime < wm_);
}

// Write a key's state at processing time now (this is what (re)starts its TTL).
void Deduplicator::write(StateMap& st, StateKind kind, const Row& r, int64_t now) {
    st.put(kind, r, now);
}

// Flink's updateDeduplicateResult: with either flag, +I for a first row, else [-U prev] +U cur;
// with both flags off, a bare +U.
void Deduplicator::emit_result(const KeyState* prev, const Row& cur,
                               ChangeOut out) const {
    if (o_.update_before || o_.generate_insert) {
        if (prev == nullptr) {
            out.push_back({ChangeKind::Insert, cur});
        } else {
            if (o_.update_before) out.push_back({ChangeKind::UpdateBefore, prev->row});
            out.push_back({ChangeKind::UpdateAfter, cur});
        }
    } else {
        out.push_back({ChangeKind::UpdateAfter, cur});
    }
}

// A -U of prev: a base state is referred to (the base stays unchanged while the caller consumes
// the changes), any other is copied (the write that follows may overwrite it in place).
Change Deduplicator::before(const KeyState* prev, bool in_base) {
    if (in_base) return Change{ChangeKind::UpdateBefore, Row{}, &prev->row};
    return Change{ChangeKind::UpdateBefore, prev->row};
}

// emit_result for a row that is kept, with its state write between the change of prev (copied
// before the write may overwrite it) and the change of r (which may take `take` over).
void Deduplicator::write_kept_and_emit(const KeyState* prev, bool prev_in_base, const Row& r,
                                       int64_t now, StateMap& st, ChangeOut out,
                                       Row* take) {
    ChangeKind k = ChangeKind::UpdateAfter;
    if (o_.update_before || o_.generate_insert) {
        if (prev == nullptr)
            k = ChangeKind::Insert;
        else if (o_.update_before)
            out.push_back(before(prev, prev_in_base));
    }
    write(st, StateKind::Kept, r, now);
    out.push_back({k, take ? std::move(*take) : Row(r)});
}

// Flink's isDuplicate: no previous row, or keep-last and prev <= cur (a tie: the later arrival
// wins), or keep-first and cur < prev (strict: a tie keeps the incumbent).
bool Deduplicator::replaces(const Row* prev, const Row& cur) const {
    if (prev == nullptr) return true;
    if (o_.keep == Keep::Last) return prev->rowtime <= cur.rowtime;
    return cur.rowtime < prev->rowtime;
}

// Proctime keep-last for one row (also the once-per-key step of its mini-batch flush).
void Deduplicator::proctime_last(const Row& r, int64_t now, StateMap& st,
                                 ChangeOut out, Row* take) {
    if (!o_.update_before && !o_.generate_insert) {  // no state at all
        out.push_back({ChangeKind::UpdateAfter, r});
        return;
    }
    bool in_base;
    const KeyState* prev = live(st, r.key, now, &in_base);
    if (prev == nullptr) {
        write(st, StateKind::Kept, r, now);
        out.push_back({ChangeKind::Insert, r});
        return;
    }
    // identical-row suppression: content equality, only without a TTL. The -U copy is taken
    // before the write below replaces (and may overwrite in place) the previous row.
    bool same = o_.ttl == 0 && prev->row.payload == r.payload;
    if (!same && o_.update_before) out.push_back(before(prev, in_base));
    write(st, StateKind::Kept, r, now);  // rewritten on every row: idle-based TTL
    if (!same) out.push_back({ChangeKind::UpdateAfter, take ? std::move(*take) : Row(r)});
}

// One row without mini-batch.
void Deduplicator::apply_row(const Row& r, int64_t now, StateMap& st, ChangeOut out,
                             Row* take) {
    if (o_.order == Order::Proctime) {
        if (o_.keep == Keep::First) {
            // the flag is written once, on the first row; flags ignored: always +I
            if (live(st, r.key, now) != nullptr) return;
            write(st, StateKind::Kept, r, now);
            out.push_back({ChangeKind::Insert, take ? std::move(*take) : Row(r)});
        } else {
            proctime_last(r, now, st, out, take);
        }
        return;
    }
    if (o_.keep == Keep::Last) {
        // rowtime keep-last: eager; state written only when the row is kept
        bool in_base;
        const KeyState* prev = live(st, r.key, now, &in_base);
        if (!replaces(prev ? &prev->row : nullptr, r)) return;
        write_kept_and_emit(prev, in_base, r, now, st, out, take);
        return;
    }
    // rowtime keep-first, insert-only: late rows dropped, fired keys ignored, earliest candidate
    if (has_wm_ && r.rowtime < wm_) {
        late_++;
        return;
    }
    const KeyState* s = live(st, r.key, now);
    if (s != nullptr && s->kind == StateKind::Fired) return;
    if (s != nullptr && s->kind == StateKind::Candidate && !(r.rowtime < s->row.rowtime)) return;
    write(st, StateKind::Candidate, r, now);
}

// Route a row: straight to the operator, or into the bundle (flushed when full).
void Deduplicator::process(const Row& r, int64_t now, StateMap& st, ChangeOut out) {
    if (!o_.mini_batch) {
        apply_row(r, now, st, out);
        return;
    }
    bundle_.push_back(r);
    if ((int64_t) bundle_.size() >= o_.mini_batch_size) flush(now, st, out);
}

// The same, letting the change emitted for r take r over.
void Deduplicator::process_taking(Row& r, int64_t now, StateMap& st, ChangeOut out) {
    if (!o_.mini_batch) {
        apply_row(r, now, st, out, &r);
        return;
    }
    bundle_.push_back(std::move(r));
    if ((int64_t) bundle_.size() >= o_.mini_batch_size) flush(now, st, out);
}

// Finish the bundle: keys in order of first appearance, each key's rows in arrival order.
void Deduplicator::flush(int64_t now, StateMap& st, ChangeOut out) {
    if (bundle_.empty()) return;
    std::vector<std::string> keys;
    std::unordered_map<std::string, std::vector<const Row*>> rows;
    for (const Row& r : bundle_) {
        auto& v = rows[r.key];
        if (v.empty()) keys.push_back(r.key);
        v.push_back(&r);
    }
    for (const std::string& k : keys) {
        const std::vector<const Row*>& v = rows[k];
        if (o_.order == Order::Proctime) {
            if (o_.keep == Keep::First) {
                // first row of the key in the bundle, then the per-row rule: +I only
                if (live(st, k, now) != nullptr) continue;
                write(st, StateKind::Kept, *v.front(), now);
                out.push_back({ChangeKind::Insert, *v.front()});
            } else {
                proctime_last(*v.back(), now, st, out);  // one net change per key
            }
            continue;
        }
        // rowtime, both keeps: the retracting function
        const KeyState* s = live(st, k, now);
        KeyState prev;
        bool has_prev = s != nullptr;
        if (has_prev) prev = *s;
        if (o_.compact_changes) {
            // reduce the bundle to its winner, then at most one change; write only when kept
            const Row* win = v.front();
            for (size_t i = 1; i < v.size(); i++)
                if (replaces(win, *v[i])) win = v[i];
            if (!replaces(has_prev ? &prev.row : nullptr, *win)) continue;
            emit_result(has_prev ? &prev : nullptr, *win, out);
            write(st, StateKind::Kept, *win, now);
            continue;
        }
        // replay every row in arrival order, full chain; state written on every bundle
        for (const Row* r : v) {
            if (!replaces(has_prev ? &prev.row : nullptr, *r)) continue;
            emit_result(has_prev ? &prev : nullptr, *r, out);
            prev.kind = StateKind::Kept;
            prev.row = *r;
            has_prev = true;
        }
        write(st, StateKind::Kept, prev.row, now);
    }
    bundle_.clear();
}

// Flush first, then advance the watermark and release the candidates it passes.
void Deduplicator::watermark(int64_t wm, int64_t now, StateMap& st, ChangeOut out) {
    flush(now, st, out);
    if (!has_wm_ || wm > wm_) {
        wm_ = wm;
        has_wm_ = true;
    }
    if (!insert_only_first()) return;
    std::vector<const KeyState*> due;
    for (const auto& kv : st.all())
        if (kv.second.state.kind == StateKind::Candidate && kv.second.state.row.rowtime <= wm_)
            due.push_back(&kv.second.state);
    std::sort(due.begin(), due.end(), [](const KeyState* a, const KeyState* b) {
        if (a->row.arrival != b->row.arrival) return a->row.arrival < b->row.arrival;
        return a->row.key < b->row.key;
    });
    std::vector<Row> fire;
    fire.reserve(due.size());
    for (const KeyState* s : due) fire.push_back(s->row);
    for (const Row& r : fire) {
        out.push_back({ChangeKind::Insert, r});
        write(st, StateKind::Fired, r, now);  // the marker: written once, TTL from now
    }
}

// Restore the scalar state and bundle persisted by the caller.
void Deduplicator::restore(bool has_wm, int64_t wm, int64_t late, std::vector<Row> bundle) {
    has_wm_ = has_wm;
    wm_ = has_wm ? wm : std::numeric_limits<int64_t>::min();
    late_ = late;
    bundle_ = std::move(bundle);
}

}  // namespace queen::dedup
