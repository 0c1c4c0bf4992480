// Flink's Deduplicate operator as a pure state machine (no PostgreSQL): the four variants
// (proctime/rowtime x keep-first/keep-last), the generateUpdateBefore / generateInsert flags,
// mini-batch bundles (with compact changes), idle-state TTL on a processing-time clock that the
// caller supplies, and the watermark-released rowtime keep-first form with its late rows.
//
// The caller owns persistence: it loads the keyed states the next rows need into a StateMap,
// drives the operator, and writes back the keys the map marks dirty. The operator's own
// scalar state (watermark, late-row count, the pending bundle) is exposed for the same purpose.
// Time values are opaque int64 in one unit (the glue uses microseconds); ttl uses that unit.
#pragma once
#include "core/common/firewall.h"

#include <cstdint>
#include <limits>
#include <memory_resource>
#include <string>
#include <unordered_map>
#include <vector>

namespace queen::dedup {

enum class Order : uint8_t { Proctime, Rowtime };
enum class Keep : uint8_t { First, Last };

struct Options {
    Order order = Order::Proctime;
    Keep keep = Keep::First;
    bool update_before = false;   // generateUpdateBefore
    bool generate_insert = true;  // table.exec.deduplicate.insert-update-after-sensitive-enabled
    bool mini_batch = false;
    int64_t mini_batch_size = -1;  // table.exec.mini-batch.size (Flink's default is -1)
    bool compact_changes = false;  // table.exec.deduplicate.mini-batch.compact-changes-enabled
    int64_t ttl = 0;               // table.exec.state.ttl; 0 = no TTL
};

// Flink's validation message for a mini-batch size <= 0.
inline constexpr const char* kMiniBatchSizeMessage =
    "table.exec.mini-batch.size should be greater than 0.";

// nullptr when the options are valid, else the message to raise (size checked only when
// mini-batch is enabled, for every variant).
const char* validate(const Options& o) noexcept;

// One input row. `key` is the state key (the glue uses the key's canonical JSON text);
// `payload` is compared for proctime identical-row suppression (content, not row kind).
struct Row {
    std::string key;
    std::string payload;
    int64_t rowtime = 0;
    std::string partition;  // where the row came from (carried into the changelog)
    int64_t offset = 0;
    int64_t arrival = 0;  // position in the view's consumption order (the caller numbers rows)
};

enum class StateKind : uint8_t { Kept = 1, Candidate = 2, Fired = 3 };

// The state of one key: Kept (the row last kept: keep-last, retracting keep-first, proctime
// keep-first's flag), Candidate (rowtime keep-first's pending first row; never expires), Fired
// (rowtime keep-first's marker; row unused).
struct KeyState {
    StateKind kind = StateKind::Kept;
    Row row;
    int64_t written_at = 0;
    uint64_t locator = 0;  // where the caller's store holds it (0: unknown); the operator ignores it
};

enum class ChangeKind : uint8_t { Insert, UpdateBefore, UpdateAfter };

// "+I", "-U", "+U".
const char* change_kind_name(ChangeKind k) noexcept;

struct Change {
    ChangeKind kind;
    Row row;
    // When set, the change's row is *ref and `row` is unused: a -U of a state the StateMap's
    // base holds (not copied). The caller keeps the base unchanged until it has consumed the
    // changes.
    const Row* ref = nullptr;
    const Row& get() const { return ref != nullptr ? *ref : row; }
};

// Where the operator appends its changes: a std::vector<Change> of any allocator (the glue's
// draws from its call's working memory, src/core/views/work_arena.h), held by reference.
class ChangeOut {
public:
    template <class Alloc>
    ChangeOut(std::vector<Change, Alloc>& v) : vec_(&v), push_(&push_into<Alloc>) {}  // NOLINT
    void push_back(Change&& c) { push_(vec_, std::move(c)); }

private:
    template <class Alloc>
    static void push_into(void* v, Change&& c) {
        static_cast<std::vector<Change, Alloc>*>(v)->push_back(std::move(c));
    }
    void* vec_;
    void (*push_)(void*, Change&&);
};

// Keyed state with a record of what changed. Absent keys read as no state.
class StateMap {
public:
    // What a stored key was when the caller's store gave it (loaded, or in the base).
    struct Loaded {
        StateKind kind;
        int64_t rowtime;
        uint64_t locator;
    };
    // One key the map holds itself (loaded or written): its state, whether it was written since
    // the last clear_dirty(), and what the store held for it (a loaded key, or a base key
    // written over; was_loaded false for a key new to the store).
    struct Slot {
        KeyState state;
        bool dirty = false;
        bool was_loaded = false;
        Loaded loaded{StateKind::Kept, 0, 0};
    };
    using Entry = std::pair<const std::string, Slot>;
    using Slots = std::pmr::unordered_map<std::string, Slot>;

    // The map's own slots and dirty list draw from `mem` (default: the default resource, i.e.
    // operator new); it must outlive the map.
    explicit StateMap(std::pmr::memory_resource* mem = std::pmr::get_default_resource())
        : states_(mem), dirty_order_(mem) {}

    // The stored state of a key, expired or not; nullptr when absent (written, else loaded,
    // else the base).
    const KeyState* find(const std::string& key) const;
    // The same, telling whether the state is the base's (*in_base).
    const KeyState* find(const std::string& key, bool* in_base) const;
    // Load a stored state (not marked dirty).
    void load(const KeyState& s);
    // Whether a key was loaded (it exists in the caller's store: loaded, or in the base), and
    // what it was then (into *out when given).
    bool loaded(const std::string& key, Loaded* out = nullptr) const;
    // States the caller's store holds, read in place beneath the loaded and written ones (the
    // glue's per-backend cache); the map must outlive this StateMap's use and stay unchanged.
    // all() does not include them.
    void set_base(const std::unordered_map<std::string, KeyState>* base) { base_ = base; }
    // The base (nullptr when none).
    const std::unordered_map<std::string, KeyState>* base() const { return base_; }
    // The base's state of a key, or nullptr.
    const KeyState* base_find(const std::string& key) const {
        if (base_ == nullptr) return nullptr;
        auto b = base_->find(key);
        return b == base_->end() ? nullptr : &b->second;
    }
    // Whether the base holds a key.
    bool in_base(const std::string& key) const { return base_ != nullptr && base_->count(key) != 0; }
    // A written or loaded state, for the caller to record where it stored it; nullptr if none.
    KeyState* find_own(const std::string& key) {
        auto it = states_.find(key);
        return it == states_.end() ? nullptr : &it->second.state;
    }
    // Whether a key was written since the last clear_dirty().
    bool is_dirty(const std::string& key) const {
        auto it = states_.find(key);
        return it != states_.end() && it->second.dirty;
    }
    // Write a state (marked dirty).
    void put(const KeyState& s);
    // Write a key's state in place (marked dirty): kind, a copy of row r, written_at now.
    void put(StateKind kind, const Row& r, int64_t now);
    // Every state the map holds itself (for watermark firing and tests).
    const Slots& all() const { return states_; }
    // Keys written since the last clear_dirty(), in first-write order (entries of all(): stable
    // while no key is added).
    const std::pmr::vector<Entry*>& dirty() const { return dirty_order_; }
    void clear_dirty();
    // Room for n keys of the map's own (no rehash while they are written).
    void reserve(size_t n) { states_.reserve(n); }

private:
    // The slot of a key about to be written: created (noting what the base held) if new.
    Slot& slot_for_write(const std::string& key);
    Slots states_;
    std::pmr::vector<Entry*> dirty_order_;
    const std::unordered_map<std::string, KeyState>* base_ = nullptr;
};

class Deduplicator {
public:
    // The options must have passed validate().
    explicit Deduplicator(const Options& o) : o_(o) {}

    // One arriving row at processing time `now`. Without mini-batch it is applied at once;
    // with mini-batch it joins the bundle, which flushes when it holds mini_batch_size rows.
    void process(const Row& r, int64_t now, StateMap& st, ChangeOut out);
    // The same, but the change emitted for r may take r's contents over (r is left valid but
    // unspecified, except its offset and arrival).
    void process_taking(Row& r, int64_t now, StateMap& st, ChangeOut out);
    // Flush the pending bundle (a checkpoint, close, or before a watermark).
    void flush(int64_t now, StateMap& st, ChangeOut out);
    // Flush the bundle, advance the watermark to max(current, wm), and fire the rowtime
    // keep-first candidates of `st` with rowtime <= watermark, in the arrival order of the
    // candidate rows (a strictly earlier replacement takes its own arrival's position).
    void watermark(int64_t wm, int64_t now, StateMap& st, ChangeOut out);

    bool has_watermark() const { return has_wm_; }
    int64_t current_watermark() const { return wm_; }
    int64_t late_rows() const { return late_; }
    const std::vector<Row>& bundle() const { return bundle_; }
    // Restore persisted scalar state and the pending bundle.
    void restore(bool has_wm, int64_t wm, int64_t late, std::vector<Row> bundle);
    // True when a row of a key whose state is `s` (and stays so until the row: true of the
    // states this predicate accepts) would change nothing and emit nothing at processing time
    // now, whatever its payload: proctime keep-first with live state, or rowtime keep-first's
    // live fired marker for a row that is not late. Never with mini-batch. The caller may then
    // skip the row (it still counts as consumed).
    bool ignores(const KeyState& s, int64_t rowtime, int64_t now) const;
    // True when this view uses the watermark-released (insert-only) rowtime keep-first form.
    bool insert_only_first() const {
        return o_.order == Order::Rowtime && o_.keep == Keep::First && !o_.mini_batch;
    }

private:
    const KeyState* live(const StateMap& st, const std::string& key, int64_t now,
                         bool* in_base = nullptr) const;
    // The -U change of prev (a reference to it when it is the base's).
    static Change before(const KeyState* prev, bool in_base);
    void write(StateMap& st, StateKind kind, const Row& r, int64_t now);
    // updateDeduplicateResult: +I / [-U] +U / bare +U.
    void emit_result(const KeyState* prev, const Row& cur, ChangeOut out) const;
    // isDuplicate: whether cur replaces prev under the rowtime rule.
    bool replaces(const Row* prev, const Row& cur) const;
    void write_kept_and_emit(const KeyState* prev, bool prev_in_base, const Row& r, int64_t now,
                             StateMap& st, ChangeOut out, Row* take);
    // take: the caller's own copy of r (the same object) that the last change it emits may
    // take over, or nullptr (r is copied).
    void apply_row(const Row& r, int64_t now, StateMap& st, ChangeOut out,
                   Row* take = nullptr);
    void proctime_last(const Row& r, int64_t now, StateMap& st, ChangeOut out,
                       Row* take = nullptr);

    Options o_;
    bool has_wm_ = false;
    int64_t wm_ = std::numeric_limits<int64_t>::min();
    int64_t late_ = 0;
    std::vector<Row> bundle_;
};

}  // namespace queen::dedup
