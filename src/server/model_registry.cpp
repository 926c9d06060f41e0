// ModelRegistry (see model_registry.h).
#include "server/model_registry.h"

#include <algorithm>
#include <functional>

#include <filesystem>
#include <system_error>

namespace gufo::server {

ModelRegistry::ModelRegistry(std::vector<ModelSource> sources, Loader loader, RegistryOptions options)
    : loader_(std::move(loader)), options_(std::move(options)) {
  for (ModelSource& source : sources) {
    Slot slot;
    slot.source = std::move(source);
    slots_.push_back(std::move(slot));
  }
}

ModelRegistry::Slot* ModelRegistry::find(const std::string& name) {
  if (name.empty()) return &slots_.front();
  for (Slot& slot : slots_) {
    if (slot.source.name == name) return &slot;
  }
  return nullptr;
}

const ModelRegistry::Slot* ModelRegistry::find(const std::string& name) const {
  return const_cast<ModelRegistry*>(this)->find(name);
}

bool ModelRegistry::offers(const std::string& name) const { return find(name) != nullptr; }

std::shared_ptr<const LoadedModel> ModelRegistry::loaded(const std::string& name) const {
  std::lock_guard lock(mutex_);
  const Slot* slot = find(name);
  return slot == nullptr ? nullptr : slot->model;
}

std::vector<std::shared_ptr<const LoadedModel>> ModelRegistry::loaded_models() const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<const LoadedModel>> out;
  for (const Slot& slot : slots_) {
    if (slot.model) out.push_back(slot.model);
  }
  return out;
}

std::vector<ModelRegistry::Status> ModelRegistry::list() const {
  std::lock_guard lock(mutex_);
  std::vector<Status> out;
  out.reserve(slots_.size());
  for (const Slot& slot : slots_) {
    out.push_back({.name = slot.source.name,
                   .loaded = slot.model != nullptr,
                   .n_ctx = slot.model ? slot.model->served().n_ctx : 0});
  }
  return out;
}

// Unloads the least recently used models (never the one about to load) while there are too
// many, or while the free memory does not cover the new model's file.
size_t ModelRegistry::make_room(const Slot& for_slot) {
  std::error_code ec;
  const uint64_t need = std::filesystem::file_size(for_slot.source.path, ec);
  const auto short_of_memory = [&] {
    if (!options_.free_memory || ec) return false;
    const uint64_t free = options_.free_memory();
    return free != 0 && free < need;
  };
  for (;;) {
    size_t n_loaded = 0;
    Slot* oldest = nullptr;
    for (Slot& slot : slots_) {
      if (!slot.model || &slot == &for_slot) continue;
      ++n_loaded;
      if (oldest == nullptr || slot.last_used < oldest->last_used) oldest = &slot;
    }
    if (oldest == nullptr || (n_loaded < options_.max_loaded && !short_of_memory())) return n_loaded;
    oldest->model.reset();  // freed now, or when its last request ends
  }
}

LoadRoom ModelRegistry::room_for(const Slot& slot, size_t others_loaded) const {
  LoadRoom room;
  const size_t at_once = std::min(options_.max_loaded, slots_.size());
  room.sharing = at_once > others_loaded ? at_once - others_loaded : 1;
  std::vector<uint64_t> waiting;  // the files of the models not loaded (nor loading) now
  for (const Slot& other : slots_) {
    if (&other == &slot || other.model || other.loading) continue;
    std::error_code ec;
    const uint64_t bytes = std::filesystem::file_size(other.source.path, ec);
    waiting.push_back(ec ? 0 : bytes);
  }
  std::sort(waiting.begin(), waiting.end(), std::greater<>());
  for (size_t i = 0; i + 1 < room.sharing && i < waiting.size(); ++i) room.others_bytes += waiting[i];
  return room;
}

Result<std::shared_ptr<const LoadedModel>> ModelRegistry::acquire(const std::string& name) {
  std::unique_lock lock(mutex_);
  Slot* slot = find(name);
  if (slot == nullptr) return Error{"no model '" + name + "' here"};
  loaded_.wait(lock, [&] { return !slot->loading; });
  slot->last_used = ++clock_;
  if (slot->model) return slot->model;
  slot->loading = true;
  const LoadRoom room = room_for(*slot, make_room(*slot));
  const ModelSource source = slot->source;
  lock.unlock();
  Result<std::unique_ptr<LoadedModel>> loaded = loader_(source, room);
  lock.lock();
  slot->loading = false;
  loaded_.notify_all();
  if (!loaded.ok()) return Error{"model '" + source.name + "' could not be loaded: " + loaded.error().message};
  slot->model = std::shared_ptr<const LoadedModel>(std::move(loaded).value());
  return slot->model;
}

}  // namespace gufo::server
