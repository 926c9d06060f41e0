// The conversations behind `previous_response_id` (OpenAI's Responses API), kept in memory:
// each stored response maps to its whole conversation as chat messages (earlier turns, its
// input, and its answer), so a follow-up sends only what is new. Bounded: the least
// recently used responses go first once there are more than `max_responses` or their
// messages take more than `max_bytes` of JSON text. Nothing survives a restart.
// Tested by tests/unit/server/responses_test.cpp.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace gufo::server {

class ResponseStore {
 public:
  explicit ResponseStore(size_t max_responses = 4096, size_t max_bytes = size_t{256} << 20)
      : max_responses_(max_responses), max_bytes_(max_bytes) {}

  void put(const std::string& id, nlohmann::ordered_json conversation);
  // The conversation, and the response becomes the most recently used; nullopt if unknown
  // (never stored, or evicted).
  std::optional<nlohmann::ordered_json> get(const std::string& id);
  size_t size() const;

 private:
  struct Entry {
    std::string id;
    nlohmann::ordered_json conversation;
    size_t bytes = 0;
  };
  void evict();

  size_t max_responses_;
  size_t max_bytes_;
  mutable std::mutex mutex_;
  std::list<Entry> entries_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  size_t bytes_ = 0;
};

}  // namespace gufo::server
