// Where a forward's GPU time goes, by kind of node (GUFO_CUDA_PROFILE=1): device events around
// every node of eager forwards (CUDA graphs are off while profiling), summed per kind ("mat_mul
// Q4_K x1", "attention", ...) and printed as a table to stderr when the backend goes away.
// The events serialize nothing extra, but the forward's launches become visible one by one;
// use it to see the split, not the total. Tested by hand (gufo bench with the variable set).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "backend/cuda/compat.cuh"

namespace gufo::cuda {

class NodeProfile {
 public:
  ~NodeProfile();
  // Marks the start of a node of `kind` (the previous node, if any, ends here).
  void mark(const std::string& kind, gpu::stream_t stream);
  // Ends the forward: waits for its events and adds their times to the totals.
  void finish(gpu::stream_t stream);

 private:
  struct Total {
    double ms = 0.0;
    long count = 0;
  };
  std::vector<std::pair<std::string, gpu::event_t>> marks_;
  std::vector<gpu::event_t> free_events_;
  std::map<std::string, Total> totals_;
};

}  // namespace gufo::cuda
