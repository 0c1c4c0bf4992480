// What the dedup view glue shares between its files: one call's C++ state (Run), the view row
// as read under its lock, and the steps of a call, each in the file of its concept:
//   functions.cpp     SQL entry points and driving one call (view lock, pending bundle,
//                     offsets, view row)
//   input.cpp         reading the source partitions' new messages in merge order
//   state_store.cpp   the keyed state: buckets of queen.dedup_state_buckets, candidates,
//                     the backend's cache of both, when to write a delta or fold them
//   state_deltas.cpp  the state's delta rows (read, write, delete)
//   changelog.cpp     the packed changelog and the call's result rows
//   work_memory.cpp   the backend's working memory a call's Run draws from
//   common.cpp        SPI column and datum helpers
// None of this is visible outside the dedup glue (namespace queen_pg::dv).
#pragma once
#include "core/views/bucket.h"
#include "core/views/merge.h"
#include "core/views/operator.h"
#include "core/views/state_cache.h"
#include "pg/common/glue.h"

#include <memory_resource>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace queen_pg::dv {

using queen::dedup::Change;
using queen::dedup::Deduplicator;
using queen::dedup::KeyState;
using queen::dedup::MergeItem;
using queen::dedup::Options;
using queen::dedup::Row;
using queen::dedup::StateMap;

enum class Mode { Advance, Watermark, Flush };

// One bucket of the view's state as the table held it when this call read it (or as this
// call wrote it): its bytes (src/core/views/bucket.h), whether its row exists, its tuple id.
using BucketRow = queen::dedup::CachedBucket;

// Everything C++ of one call, on the heap; deleted by a memory-context callback when the call
// errors out (no C++ object lives on the stack across a PostgreSQL call). A step that needs a
// C++ container across an SPI statement keeps it here (the scratch members below), never on
// its own stack or behind a raw `new`: an ERROR then frees it with the run.
// Every container of the run draws from `mem`, the backend's working memory for one call
// (work_memory.cpp): kept from call to call, so a call does not hand its megabytes back to
// malloc and fault them in again. What outlives the call (the states and buckets moved into the
// backend's cache, the operator's pending bundle) is held in plain std::strings and
// std::vectors, which the run's containers only hold by value: moving them out is safe.
struct Run {
    std::pmr::memory_resource* mem;      // first: every container below draws from it
    Options opts;
    Deduplicator* op = nullptr;
    StateMap st{mem};
    std::pmr::vector<Row> input{mem};    // candidate messages, per partition in offset order
    std::pmr::vector<MergeItem> items{mem};        // their merge keys
    std::pmr::vector<std::string> part_names{mem}; // partition index -> name
    std::pmr::vector<int64_t> part_ids{mem};       // partition index -> id
    std::pmr::vector<std::string> keys{mem};       // distinct keys whose state the backend's copy lacks
    std::pmr::vector<std::string> table_keys{mem}; // the keys read from the table
    std::pmr::unordered_map<uint32_t, BucketRow> read_buckets{mem};     // buckets read from the table
    std::pmr::unordered_map<uint32_t, BucketRow> written_buckets{mem};  // buckets this call wrote
    bool cache_valid = false;            // the backend's copy is the view's state (its base)
    uint32_t nbuckets = 1;               // the view's state_buckets (after a regrouping: the new count)
    int64_t new_keys = 0;                // keys this call stored that the table did not have
    bool regrouped = false;              // this call spread the state over more buckets
    bool deltas_read = false;            // delta_states / delta_keys hold the view's delta rows
    // each delta key's newest state, as views into the delta rows' bytes (which live in the
    // call's SPI memory until SPI_finish), and the delta keys by bucket
    std::pmr::unordered_map<std::string_view, queen::dedup::PackedState> delta_states{mem};
    std::pmr::unordered_map<uint32_t, std::pmr::vector<std::string_view>> delta_keys{mem};
    int32 state_deltas = 0;              // the view's delta rows after this call
    int64 delta_states_count = 0;        // the states they hold
    std::pmr::vector<Row> merged{mem};   // the rows this call consumes, in merge order
    std::pmr::vector<char> flag{mem};    // merged[i]'s RowFlag
    std::pmr::vector<int> merged_part{mem};  // merged[i]'s partition index
    std::pmr::vector<char> input_flag{mem};
    TimestampTz now = 0;                 // the call's processing time
    std::pmr::vector<Change> out{mem};
    std::pmr::string block{mem};         // VARHDRSZ bytes of room, then the packed changelog block
    std::pmr::vector<std::string> labels{mem};  // display keys of out
    // scratch of single steps, alive across their SPI statements
    std::pmr::vector<Row> pending{mem};          // load_pending: the persisted bundle before restore
    std::pmr::vector<uint32_t> to_load{mem};     // load_buckets: the buckets it reads
    std::pmr::vector<std::string> cand_keys{mem};  // load_candidates: released candidates' keys
    std::pmr::vector<int64_t> cand_arrivals{mem};  //   and their arrivals
    std::pmr::vector<uint32_t> write_order{mem};   // write_states: written buckets in ascending order
    std::string delta_bytes;             // write_delta_row: the packed delta row
    Run(const Options& o, std::pmr::memory_resource* m) : mem(m), opts(o), op(new Deduplicator(o)) {}
    ~Run() { delete op; }
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;
};

// What the call knows of a consumed row before the operator runs.
enum RowFlag : char {
    kRowNew = 0,      // its key is not in the backend's copy of the state
    kRowNoRowtime,    // a rowtime view's row without an integer rowtime: skipped, counted
    kRowIgnored,      // the operator would drop it unread (Deduplicator::ignores): skipped
    kRowInBase,       // its key's state is in the backend's copy
};

// The view row as read under its lock.
struct ViewRow {
    int64 id;
    char* queue;
    Datum key_path;      // text[]
    Datum rowtime_path;  // text[] or 0
    bool has_rowtime_path;
    bool has_wm;
    int64 wm;
    int64 late;
    int64 next_seq;
    int64 consumed;  // messages consumed before this call: the arrival number of the next one
    bool has_token;
    int64 token;     // state_token: which write of the view's state the table holds
    int32 nbuckets;  // state_buckets
    int64 state_keys;  // keys stored (a key's state is never removed, only overwritten)
    int32 state_deltas;  // delta rows not folded into the buckets yet
    int64 delta_states;  // the states they hold
};

// ---- common.cpp ----
// A text (or jsonb: its binary container) column of the current SPI row as (pointer,
// length); false when NULL.
bool col_text(HeapTuple tup, TupleDesc desc, int col, const char** p, int* len);
// A varlena datum (bytea, or jsonb from the bytes of its container) holding s.
Datum varlena_datum(const std::string& s);
// A jsonb datum from the bytes of its container.
Datum jsonb_datum(const std::string& s);
// An int8 column (0 when NULL, *isnull set).
int64 col_int8(HeapTuple tup, TupleDesc desc, int col, bool* isnull);
// A tuple id as a locator (block << 16 | offset; never 0 for a real tuple).
uint64 pack_tid(ItemPointer t);
// A tid column as a locator (0 when NULL).
uint64 col_tid(HeapTuple tup, TupleDesc desc, int col);
// A one-dimensional array of the given element type from datums (nulls may be nullptr).
Datum make_array(Datum* elems, bool* nulls, int n, Oid type);
// A text datum of a string's bytes.
Datum text_datum(const std::string& s);
// A Row from SPI columns key, payload, rowtime, partition, offset starting at `c`.
void row_from(HeapTuple t, TupleDesc d, int c, Row* r, queen_pg::CxxError* err);

// ---- input.cpp ----
// Read up to max_rows unconsumed messages into run->merged (see the file).
void read_input(Run* run, const ViewRow* v, int32 max_rows, queen_pg::CxxError* err);

// ---- state_store.cpp ----
// Make the backend's copy of the view's state, when valid, the state map's base.
void load_cached(Run* run, const ViewRow* v);
// Load the stored state of run->keys (their whole buckets) that the base lacks.
void load_states(Run* run, const ViewRow* v, queen_pg::CxxError* err);
// Load the rowtime keep-first candidates a watermark up to wm releases.
void load_candidates(Run* run, const ViewRow* v, int64 wm, queen_pg::CxxError* err);
// Persist every state the operator wrote (and the candidates' index); first spread the state
// over more buckets when its keys outgrow them (run->nbuckets, run->new_keys tell the result).
void write_states(Run* run, const ViewRow* v);
// After the call's writes: the backend's copy holds the state as of `token`.
void store_cached(Run* run, const ViewRow* v, int64 token);

// ---- work_memory.cpp ----
// The working memory for one call's Run: the backend's arena, emptied, or the default resource
// when the arena is taken (a call inside a call) or cannot be made. Pair with
// work_memory_end(), also on an ERROR, after the Run is deleted.
std::pmr::memory_resource* work_memory_begin();
// The call that drew from `mem` is over (its Run deleted): the arena keeps its chunks, within
// its bound, for the next call.
void work_memory_end(std::pmr::memory_resource* mem);

// ---- state_deltas.cpp ----
// Read the view's delta rows once (run->delta_states, run->delta_keys); replaces the last SPI
// result.
void read_deltas(Run* run, const ViewRow* v, queen_pg::CxxError* err);
// Insert delta row `seq` holding a bytea datum of a packed bucket.
void write_delta(const ViewRow* v, int32 seq, Datum bytes);
// Delete the view's `n` delta rows.
void delete_deltas(const ViewRow* v, int32 n);

// ---- changelog.cpp ----
// Append the emitted changes to the changelog and return them as the call's rows.
void write_changelog(Run* run, const ViewRow* v, ReturnSetInfo* rsinfo, int64* next_seq);

}  // namespace queen_pg::dv
