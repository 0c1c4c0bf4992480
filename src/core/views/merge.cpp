// k-way merge of partition runs; see dedup_merge.h.
#include "core/views/merge.h"

#include <queue>

namespace queen::dedup {

// Heads of every partition run in a priority queue keyed by (created_at, name, partition).
std::vector<size_t> merge_order(const MergeItem* items, size_t n, const std::string* names,
                                size_t nparts, size_t limit) {
    std::vector<std::vector<size_t>> runs(nparts);
    for (size_t i = 0; i < n; i++) runs[items[i].partition].push_back(i);
    std::vector<size_t> pos(nparts, 0);
    auto later = [&](int a, int b) {  // true when run a's head goes after run b's head
        const MergeItem& x = items[runs[a][pos[a]]];
        const MergeItem& y = items[runs[b][pos[b]]];
        if (x.created_at != y.created_at) return x.created_at > y.created_at;
        if (names[a] != names[b]) return names[a] > names[b];
        return a > b;
    };
    std::priority_queue<int, std::vector<int>, decltype(later)> heads(later);
    for (size_t p = 0; p < runs.size(); p++)
        if (!runs[p].empty()) heads.push((int) p);
    std::vector<size_t> out;
    while (!heads.empty() && out.size() < limit) {
        int p = heads.top();
        heads.pop();
        out.push_back(runs[p][pos[p]]);
        if (++pos[p] < runs[p].size()) heads.push(p);
    }
    return out;
}

// The vector form.
std::vector<size_t> merge_order(const std::vector<MergeItem>& items,
                                const std::vector<std::string>& names, size_t limit) {
    return merge_order(items.data(), items.size(), names.data(), names.size(), limit);
}

}  // namespace queen::dedup
