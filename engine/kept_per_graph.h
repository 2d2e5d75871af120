// What a cache keeps about each of the graphs worked on at once (a batch's
// threads: a few), brought up to date from a graph's edit log when next
// asked for rather than computed again after every rewrite: the analyses'
// shapes and regions (analysis/analysis_cache.h), an ONNX model's element
// types (dialects/onnx/validate_onnx.h).
#ifndef GRAFT_ENGINE_KEPT_PER_GRAPH_H_
#define GRAFT_ENGINE_KEPT_PER_GRAPH_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "engine/graph.h"

namespace graft {

template <typename T>
class KeptPerGraph {
 public:
  // What is kept of one graph: `value` as of `version` of `graph`. `mu` is
  // the holder's, to use `value` from one thread at a time.
  struct Entry {
    const Graph* graph = nullptr;
    uint64_t version = 0;
    std::unique_ptr<T> value;
    std::recursive_mutex mu;
  };

  explicit KeptPerGraph(size_t capacity) : capacity_(capacity) {}

  // The entry of `graph` as of its version now, locked by `lock` (the
  // caller may hold it while it uses the value, or let it go): the one kept
  // for it brought up to date by `update(T&, touched)` (the nodes edited
  // since, sorted, each once), or a value from `make()` where none is kept
  // or the graph's edit log does not reach back to it (another graph at the
  // same address, an edit of unknown reach). The `capacity` graphs asked
  // about last are kept.
  template <typename Make, typename Update>
  std::shared_ptr<Entry> For(const Graph& graph,
                             std::unique_lock<std::recursive_mutex>* lock,
                             Make&& make, Update&& update) {
    std::shared_ptr<Entry> entry;
    {
      std::lock_guard<std::mutex> recent_lock(mu_);
      for (auto it = recent_.begin(); it != recent_.end(); ++it) {
        if ((*it)->graph != &graph) continue;
        entry = *it;
        recent_.erase(it);
        break;
      }
      if (entry == nullptr) {
        entry = std::make_shared<Entry>();
        entry->graph = &graph;
      }
      recent_.push_back(entry);
      if (recent_.size() > capacity_) recent_.erase(recent_.begin());
    }
    // brought up to date under its own lock, not the cache's: a holder of
    // one graph's entry may ask about another graph meanwhile
    *lock = std::unique_lock<std::recursive_mutex>(entry->mu);
    std::vector<NodeId> touched;
    if (entry->value == nullptr || !graph.EditsSince(entry->version, &touched)) {
      entry->value = make();
    } else if (!touched.empty()) {
      std::sort(touched.begin(), touched.end());
      touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
      update(*entry->value, std::move(touched));
    }
    entry->version = graph.version();
    return entry;
  }

 private:
  const size_t capacity_;
  std::mutex mu_;
  std::vector<std::shared_ptr<Entry>> recent_;  // the latest last
};

}  // namespace graft

#endif  // GRAFT_ENGINE_KEPT_PER_GRAPH_H_
