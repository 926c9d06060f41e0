// ResponseStore (see response_store.h).
#include "server/response_store.h"

#include "server/json_text.h"

namespace gufo::server {

void ResponseStore::put(const std::string& id, nlohmann::ordered_json conversation) {
  const size_t bytes = dump(conversation).size();
  std::lock_guard lock(mutex_);
  if (const auto found = index_.find(id); found != index_.end()) {
    bytes_ -= found->second->bytes;
    entries_.erase(found->second);
    index_.erase(found);
  }
  entries_.push_front(Entry{.id = id, .conversation = std::move(conversation), .bytes = bytes});
  index_[id] = entries_.begin();
  bytes_ += bytes;
  evict();
}

std::optional<nlohmann::ordered_json> ResponseStore::get(const std::string& id) {
  std::lock_guard lock(mutex_);
  const auto found = index_.find(id);
  if (found == index_.end()) return std::nullopt;
  entries_.splice(entries_.begin(), entries_, found->second);
  return found->second->conversation;
}

size_t ResponseStore::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

// The newest entry always stays, even when it alone is over the byte bound.
void ResponseStore::evict() {
  while (entries_.size() > 1 && (entries_.size() > max_responses_ || bytes_ > max_bytes_)) {
    bytes_ -= entries_.back().bytes;
    index_.erase(entries_.back().id);
    entries_.pop_back();
  }
}

}  // namespace gufo::server
