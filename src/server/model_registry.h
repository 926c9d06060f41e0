// The models one `gufo serve` offers (`-m` given several times, or every GGUF of
// `--models-dir`), each with its own scheduler, KV pool and prefix cache. The first is the
// default (a request that names no model gets it) and is loaded at start; the others load
// on first use, by the request that needs them (requests for a model being loaded wait for
// that load). At most `max_loaded` stay loaded, and before a load the least recently used
// are unloaded until the free memory covers the new model; a model in use by requests is
// freed when its last request ends (they hold it by shared_ptr). Each load is told how many
// models may share the device with it and how large the largest of those still to load are
// (LoadRoom), so that a pool sized from the free memory leaves the others theirs. A model
// that fails to load
// fails the requests that asked for it, not the server; the next request tries again.
// Tested by tests/unit/server/model_registry_test.cpp and tests/functional/models.test.mjs.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "server/generation.h"

namespace gufo::server {

struct ModelSource {
  std::string name;  // the id clients use
  std::string path;  // the GGUF file
};

// A loaded model and everything it owns (weights, backend, scheduler); served() is the view
// the routes use.
class LoadedModel {
 public:
  virtual ~LoadedModel() = default;
  virtual const ServedModel& served() const = 0;
};

// What a load may take of the device's memory, for a loader that sizes a pool from the free
// memory: 1 / `sharing` of what is left once `others_bytes` are set aside.
struct LoadRoom {
  // The models that may share the device from this load on, this one included:
  // min(max_loaded, models offered) minus those loaded now, at least 1.
  size_t sharing = 1;
  // The files of the sharing - 1 largest models not loaded now (their weights are still to
  // come), in bytes; 0 where a size is unknown.
  uint64_t others_bytes = 0;
};

struct RegistryOptions {
  size_t max_loaded = 3;
  // Bytes free for another model now (0: unknown, no check); the need is estimated from the
  // file's size.
  std::function<uint64_t()> free_memory;
};

class ModelRegistry {
 public:
  using Loader = std::function<Result<std::unique_ptr<LoadedModel>>(const ModelSource&, const LoadRoom& room)>;

  // `sources` must not be empty; names must be unique (checked by the caller's parsing).
  ModelRegistry(std::vector<ModelSource> sources, Loader loader, RegistryOptions options);

  bool offers(const std::string& name) const;
  const std::string& default_name() const { return slots_.front().source.name; }

  // The model named (empty: the default), loading it if needed. Errors: the load's, for a
  // model that is offered (an unknown name is the caller's 404).
  Result<std::shared_ptr<const LoadedModel>> acquire(const std::string& name);
  // The model if it is loaded now, without loading it.
  std::shared_ptr<const LoadedModel> loaded(const std::string& name) const;

  // The models loaded now (shutting down: each scheduler's last word).
  std::vector<std::shared_ptr<const LoadedModel>> loaded_models() const;

  struct Status {
    std::string name;
    bool loaded = false;
    int64_t n_ctx = 0;  // when loaded
  };
  std::vector<Status> list() const;

 private:
  struct Slot {
    ModelSource source;
    std::shared_ptr<const LoadedModel> model;
    bool loading = false;
    uint64_t last_used = 0;
  };
  Slot* find(const std::string& name);
  const Slot* find(const std::string& name) const;
  size_t make_room(const Slot& for_slot);                           // mutex held; returns the other models still loaded
  LoadRoom room_for(const Slot& slot, size_t others_loaded) const;  // mutex held

  Loader loader_;
  RegistryOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable loaded_;
  std::vector<Slot> slots_;
  uint64_t clock_ = 0;
};

}  // namespace gufo::server
