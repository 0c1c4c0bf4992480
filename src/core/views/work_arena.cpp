// A dedup view call's working memory; see work_arena.h.
#include "core/views/work_arena.h"

#include <new>

namespace queen::dedup {

namespace {

// p rounded up to a multiple of a (a power of two).
std::size_t align_up(std::size_t p, std::size_t a) { return (p + a - 1) & ~(a - 1); }

constexpr std::size_t kAlign = alignof(std::max_align_t);

}  // namespace

// No chunk until the first block is asked for.
WorkArena::WorkArena(std::size_t keep_bytes, std::size_t first_chunk)
    : keep_(keep_bytes), first_(first_chunk < 4096 ? 4096 : first_chunk) {}

// Frees every chunk.
WorkArena::~WorkArena() { release(); }

// The next block: in the chunk being filled, else the next held chunk with room, else a new
// chunk (twice the last one, at most kMaxChunk, or the block's size when larger).
void* WorkArena::do_allocate(std::size_t bytes, std::size_t align) {
    if (align < kAlign) align = kAlign;
    if (bytes == 0) bytes = 1;
    for (; cur_ < chunks_.size(); cur_++, off_ = 0) {
        std::size_t base = reinterpret_cast<std::size_t>(chunks_[cur_].base);
        std::size_t at = align_up(base + off_, align) - base;
        if (at <= chunks_[cur_].size && chunks_[cur_].size - at >= bytes) {
            used_ += at + bytes - off_;
            off_ = at + bytes;
            return chunks_[cur_].base + at;
        }
    }
    std::size_t size = chunks_.empty() ? first_ : chunks_.back().size * 2;
    if (size > kMaxChunk) size = kMaxChunk;
    std::size_t need = align_up(bytes, kAlign) + (align > kAlign ? align : 0);
    if (size < need) size = align_up(need, 4096);
    chunks_.reserve(chunks_.size() + 1);  // may throw before the chunk exists: nothing to undo
    char* base = static_cast<char*>(::operator new(size));
    chunks_.push_back({base, size});
    held_ += size;
    cur_ = chunks_.size() - 1;
    std::size_t at = align_up(reinterpret_cast<std::size_t>(base), align) -
                     reinterpret_cast<std::size_t>(base);
    used_ += at + bytes;
    off_ = at + bytes;
    return base + at;
}

// Only the newest block goes back (a container that grows its last allocation in place is
// rare; the rest waits for reset()).
void WorkArena::do_deallocate(void* p, std::size_t bytes, std::size_t /*align*/) {
    if (cur_ >= chunks_.size() || bytes == 0) return;
    char* c = static_cast<char*>(p);
    const Chunk& ch = chunks_[cur_];
    if (c >= ch.base && c + bytes == ch.base + off_) {
        std::size_t back = off_ - (std::size_t) (c - ch.base);
        off_ -= back;
        used_ -= back;
    }
}

// Keep the chunks in order while their total fits keep_; free the rest.
void WorkArena::reset() noexcept {
    std::size_t kept = 0, total = 0;
    for (; kept < chunks_.size() && total + chunks_[kept].size <= keep_; kept++)
        total += chunks_[kept].size;
    for (std::size_t i = kept; i < chunks_.size(); i++) ::operator delete(chunks_[i].base);
    chunks_.resize(kept);
    held_ = total;
    cur_ = 0;
    off_ = 0;
    used_ = 0;
}

// Free everything.
void WorkArena::release() noexcept {
    for (const Chunk& c : chunks_) ::operator delete(c.base);
    chunks_.clear();
    chunks_.shrink_to_fit();
    held_ = 0;
    cur_ = 0;
    off_ = 0;
    used_ = 0;
}

}  // namespace queen::dedup
