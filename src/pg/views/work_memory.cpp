// The dedup views' working memory per backend: one arena (src/core/views/work_arena.h) that a
// call's Run draws every container from and that is emptied, not freed, when the call ends. A
// backend that drives views call after call so reuses the same pages (a 10,000-row keep-last
// call builds ~10 MB of rows, changes, state slots and the packed changelog) instead of
// handing them back to malloc, which trims or unmaps them, and faulting them in again on the
// next call. malloc's own settings are left alone: they are the whole process's.
//
// Bounds: after a call the arena keeps at most kKeepBytes (a larger call's extra chunks are
// freed when it ends); a backend that has run no views call for kIdleUsecs frees the arena at
// its next transaction end. An ERROR frees nothing by itself: the Run's reset callback
// (functions.cpp) deletes the Run, then ends its use here, so the chunks stay owned by the
// arena (no leak) and the next call reuses them.
//
// Locks: none (backend-local memory).
#include "core/views/work_arena.h"
#include "pg/views/view_call.h"

extern "C" {
#include "access/xact.h"
#include "utils/timestamp.h"
}

namespace queen_pg::dv {

namespace {

constexpr size_t kKeepBytes = size_t(64) << 20;
constexpr TimestampTz kIdleUsecs = 60 * USECS_PER_SEC;

queen::dedup::WorkArena* g_arena = nullptr;
bool g_in_use = false;          // a call is drawing from the arena
TimestampTz g_last_end = 0;     // when the last call ended
bool g_registered = false;

// Transaction end: a backend whose last views call is long past gives the arena back.
void idle_release(XactEvent ev, void*) {
    if (ev != XACT_EVENT_COMMIT && ev != XACT_EVENT_ABORT && ev != XACT_EVENT_PARALLEL_COMMIT &&
        ev != XACT_EVENT_PARALLEL_ABORT)
        return;
    if (g_arena == nullptr || g_in_use || g_arena->held() == 0) return;
    if (GetCurrentTimestamp() - g_last_end >= kIdleUsecs) g_arena->release();
}

}  // namespace

// The backend's arena, emptied, when no call holds it; else the default resource.
std::pmr::memory_resource* work_memory_begin() {
    if (g_arena == nullptr) {
        g_arena = new (std::nothrow) queen::dedup::WorkArena(kKeepBytes);
        if (g_arena == nullptr) return std::pmr::get_default_resource();
    }
    if (!g_registered) {
        RegisterXactCallback(idle_release, nullptr);
        g_registered = true;
    }
    if (g_in_use) return std::pmr::get_default_resource();
    g_in_use = true;
    g_arena->reset();
    return g_arena;
}

// The call is over: keep the arena's chunks (within kKeepBytes) for the next one.
void work_memory_end(std::pmr::memory_resource* mem) {
    if (g_arena == nullptr || mem != g_arena) return;
    g_arena->reset();
    g_in_use = false;
    g_last_end = GetCurrentTimestamp();
}

}  // namespace queen_pg::dv
