// The working memory of one dedup view call, kept from call to call: a bump arena
// (std::pmr::memory_resource) the call's containers draw from. Nothing is freed during a call
// (a deallocation only gives back the newest block); reset() ends the call and keeps the
// chunks, up to a bound, for the next one, so a backend that drives views call after call
// reuses the same pages instead of handing megabytes back to malloc (which trims or unmaps
// them) and faulting them in again. It is one object's memory policy: malloc's settings, and
// every other allocation of the process, stay as they are.
//
// Not thread-safe (one backend, one call at a time). Every block is aligned to
// alignof(std::max_align_t), whatever the caller asks, as malloc's would be.
#pragma once
#include "core/common/firewall.h"

#include <cstddef>
#include <memory_resource>
#include <vector>

namespace queen::dedup {

class WorkArena : public std::pmr::memory_resource {
public:
    // keep_bytes: the most reset() keeps for the next call; first_chunk: the first chunk's
    // size (later ones double, up to kMaxChunk, or hold one larger block exactly).
    explicit WorkArena(std::size_t keep_bytes, std::size_t first_chunk = std::size_t(1) << 20);
    ~WorkArena() override;
    WorkArena(const WorkArena&) = delete;
    WorkArena& operator=(const WorkArena&) = delete;

    // End the call: every block handed out is dead; the chunks are kept, in their order, while
    // their total stays within keep_bytes, the rest freed.
    void reset() noexcept;
    // Free every chunk (the backend went idle).
    void release() noexcept;
    // Bytes of the chunks held.
    std::size_t held() const noexcept { return held_; }
    // Bytes handed out since the last reset (alignment included, given-back blocks not).
    std::size_t used() const noexcept { return used_; }
    std::size_t chunks() const noexcept { return chunks_.size(); }

    static constexpr std::size_t kMaxChunk = std::size_t(16) << 20;

private:
    void* do_allocate(std::size_t bytes, std::size_t align) override;
    void do_deallocate(void* p, std::size_t bytes, std::size_t align) override;
    bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }

    struct Chunk {
        char* base;
        std::size_t size;
    };
    std::size_t keep_;
    std::size_t first_;
    std::vector<Chunk> chunks_;  // the chunks held, in the order the call fills them
    std::size_t cur_ = 0;        // the chunk being filled
    std::size_t off_ = 0;        // its first free byte
    std::size_t held_ = 0;
    std::size_t used_ = 0;
};

}  // namespace queen::dedup
