// The serving engine's slots (engine/scheduler.h, "Slots"): save, restore and erase a slot's
// context, on the engine thread between steps, once the slot is idle.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>
#include <memory>

#include "engine/scheduler.h"

namespace gufo::engine {

namespace {

// Slot actions waiting at once, per slot of the engine: each holds its caller's thread (an
// HTTP worker), so beyond this they are refused rather than queued.
constexpr int32_t kSlotTasksPerSlot = 2;

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

uint64_t file_bytes(const std::string& path) {
  std::error_code failed;
  const uintmax_t size = std::filesystem::file_size(path, failed);
  return failed ? 0 : static_cast<uint64_t>(size);
}

}  // namespace

template <class T>
T Scheduler::on_engine_thread(int32_t slot, std::function<T()> work) {
  auto promise = std::make_shared<std::promise<T>>();
  std::future<T> done = promise->get_future();
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return Error{"the engine is shutting down", ErrorKind::Unavailable};
    if (n_slot_tasks_ >= kSlotTasksPerSlot * options_.n_parallel) {
      return Error{"too many slot actions wait already; try again", ErrorKind::Unavailable};
    }
    ++n_slot_tasks_;
    submitted_tasks_.push_back(
        SlotTask{.slot = slot,
                 // The counts published before the answer, so its caller sees them changed.
                 .run =
                     [this, promise, work = std::move(work)] {
                       T result = work();
                       publish_occupancy();
                       promise->set_value(std::move(result));
                     },
                 .drop =
                     [promise] {
                       promise->set_value(Error{"the engine is shutting down", ErrorKind::Unavailable});
                     }});
  }
  wake_.notify_one();
  return done.get();
}

void Scheduler::run_slot_tasks() {
  // In order of arrival, each once its slot is idle; a task's own work never makes one busy.
  for (auto it = slot_tasks_.begin(); it != slot_tasks_.end();) {
    if (it->slot >= 0 && slot_busy(it->slot)) {
      ++it;
      continue;
    }
    SlotTask task = std::move(*it);
    it = slot_tasks_.erase(it);
    {
      std::lock_guard lock(mutex_);
      --n_slot_tasks_;
    }
    task.run();
  }
}

void Scheduler::cancel_slot_tasks() {
  for (SlotTask& task : slot_tasks_) task.drop();
  std::lock_guard lock(mutex_);
  n_slot_tasks_ -= static_cast<int32_t>(slot_tasks_.size());
  slot_tasks_.clear();
}

Status Scheduler::check_slot(int32_t slot) const {
  if (slot < 0 || slot >= options_.n_parallel) {
    return Error{"slot " + std::to_string(slot) + ": the engine's slots are 0.." +
                 std::to_string(options_.n_parallel - 1)};
  }
  if (!options_.prefix_cache) {
    return Error{"slots keep their contexts in the prefix cache, which this engine runs without",
                 ErrorKind::Unsupported};
  }
  return {};
}

Result<std::vector<Scheduler::SlotState>> Scheduler::slots() {
  return on_engine_thread<Result<std::vector<SlotState>>>(-1, [this]() -> Result<std::vector<SlotState>> {
    std::vector<SlotState> states(static_cast<size_t>(options_.n_parallel));
    for (int32_t k = 0; k < options_.n_parallel; ++k) {
      states[static_cast<size_t>(k)] = {
          .id = k,
          .busy = slot_busy(k),
          .n_context = static_cast<int32_t>(slot_context_[static_cast<size_t>(k)].tokens.size())};
    }
    return states;
  });
}

Result<Scheduler::SlotTransfer> Scheduler::save_slot(int32_t slot, const std::string& path,
                                                     const SessionIdentity& identity) {
  GUFO_RETURN_IF_ERROR(check_slot(slot));
  return on_engine_thread<Result<SlotTransfer>>(slot, [&] { return save_slot_now(slot, path, identity); });
}

Result<Scheduler::SlotTransfer> Scheduler::restore_slot(int32_t slot, const std::string& path,
                                                        const SessionIdentity& identity) {
  GUFO_RETURN_IF_ERROR(check_slot(slot));
  return on_engine_thread<Result<SlotTransfer>>(slot, [&] { return restore_slot_now(slot, path, identity); });
}

Result<int32_t> Scheduler::erase_slot(int32_t slot) {
  GUFO_RETURN_IF_ERROR(check_slot(slot));
  return on_engine_thread<Result<int32_t>>(slot, [this, slot]() -> Result<int32_t> {
    SlotContext& context = slot_context_[static_cast<size_t>(slot)];
    const auto n = static_cast<int32_t>(context.tokens.size());
    // What other slots' contexts share stays: erasing one slot takes nothing of another's.
    pool_.forget(context.tokens, shared_with_other_slots(slot));
    context = {};
    return n;
  });
}

int64_t Scheduler::shared_with_other_slots(int32_t slot) const {
  const std::vector<int32_t>& tokens = slot_context_[static_cast<size_t>(slot)].tokens;
  int64_t shared = 0;
  for (size_t k = 0; k < slot_context_.size(); ++k) {
    if (static_cast<int32_t>(k) == slot) continue;
    const std::vector<int32_t>& other = slot_context_[k].tokens;
    const size_t n = std::min(tokens.size(), other.size());
    const auto common = std::mismatch(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(n), other.begin());
    shared = std::max<int64_t>(shared, common.first - tokens.begin());
  }
  return shared;
}

Result<Scheduler::SlotTransfer> Scheduler::save_slot_now(int32_t slot, const std::string& path,
                                                         const SessionIdentity& identity) {
  const auto start = std::chrono::steady_clock::now();
  const SlotContext& context = slot_context_[static_cast<size_t>(slot)];
  const std::vector<int32_t>& tokens = context.tokens;
  if (tokens.empty()) return Error{"slot " + std::to_string(slot) + " holds no context to save"};
  // The keys and values still cached for it: its full blocks, then a tail that continues them.
  const int64_t n_tokens = static_cast<int64_t>(tokens.size());
  std::vector<int32_t> blocks = pool_.acquire_prefix(tokens, n_tokens - 1);
  int64_t n_kv = static_cast<int64_t>(blocks.size()) * options_.block_size;
  if (n_kv < n_tokens - 1) {
    const std::span<const int32_t> rest(tokens.data() + n_kv, static_cast<size_t>(n_tokens - 1 - n_kv));
    if (const std::optional<KvBlockPool::Tail> tail = pool_.find_tail(blocks.empty() ? -1 : blocks.back(), rest)) {
      pool_.hold_tail(*tail);
      blocks.push_back(tail->block);
      n_kv += tail->n_tokens;
    }
  }
  Status saved = cache_->set_blocks(slot, blocks, static_cast<int32_t>(n_kv));
  if (saved.ok()) {
    const SessionKv kv{
        .spec = cache_->spec(),
        .n_filled = n_kv,
        .read = [this, slot](int32_t n,
                             const backend::KvCache::LayerSink& sink) { return cache_->read_positions(slot, n, sink); },
        .write = nullptr};
    saved = save_session(path, kv, SessionState{.tokens = tokens, .generator = "", .note = context.note}, identity);
  }
  (void)cache_->set_blocks(slot, {}, 0);
  pool_.release(blocks);
  if (!saved.ok()) return saved.error();
  return SlotTransfer{.n_tokens = static_cast<int32_t>(n_tokens),
                      .n_kv = static_cast<int32_t>(n_kv),
                      .n_bytes = file_bytes(path),
                      .ms = ms_since(start)};
}

Result<Scheduler::SlotTransfer> Scheduler::restore_slot_now(int32_t slot, const std::string& path,
                                                            const SessionIdentity& identity) {
  const auto start = std::chrono::steady_clock::now();
  const int32_t block = options_.block_size;
  std::vector<int32_t> blocks;
  const SessionKv kv{.spec = cache_->spec(),
                     .n_filled = 0,
                     .read = nullptr,
                     .write = [&](int32_t n, const backend::KvCache::LayerSource& source) -> Status {
                       const int64_t needed = (n + block - 1) / block;
                       // Running sequences keep a block each for their next tokens, as admission leaves them.
                       const int64_t room = pool_.n_available() - static_cast<int64_t>(running_.size());
                       if (needed > room) {
                         return Error{path + ": " + std::to_string(n) + " positions; the KV pool has room for " +
                                          std::to_string(std::max<int64_t>(room, 0) * block) + " now",
                                      ErrorKind::OutOfMemory};
                       }
                       for (int64_t i = 0; i < needed; ++i) blocks.push_back(*pool_.allocate());
                       GUFO_RETURN_IF_ERROR(cache_->set_blocks(slot, blocks, 0));
                       return cache_->write_positions(slot, n, source);
                     }};
  Result<LoadedSession> loaded = load_session(path, kv, identity);
  (void)cache_->set_blocks(slot, {}, 0);
  if (!loaded) {
    pool_.release(blocks);  // never registered: they are free again
    return loaded.error();
  }
  cache_restored(loaded->state.tokens, loaded->n_kv, blocks);
  const SlotTransfer transfer{.n_tokens = static_cast<int32_t>(loaded->state.tokens.size()),
                              .n_kv = loaded->n_kv,
                              .n_bytes = loaded->n_bytes,
                              .ms = ms_since(start)};
  slot_context_[static_cast<size_t>(slot)] = {.tokens = std::move(loaded->state.tokens),
                                              .note = std::move(loaded->state.note)};
  return transfer;
}

void Scheduler::cache_restored(std::span<const int32_t> tokens, int32_t n_kv, const std::vector<int32_t>& blocks) {
  const auto block = static_cast<size_t>(options_.block_size);
  const auto n_full = static_cast<size_t>(n_kv) / block;
  // Each block follows the one cached before it: where the prefix cache had some of these
  // blocks already, the chain goes on from those (and the restored copies are freed). Those
  // are held meanwhile and given back with the rest, as recently used as the restored ones.
  const std::vector<int32_t> had = pool_.acquire_prefix(tokens, n_kv);
  int32_t previous = -1;
  size_t i = 0;
  for (; i < n_full; ++i) {
    previous = pool_.register_full(blocks[i], previous, tokens.subspan(i * block, block));
    if (previous < 0) break;
  }
  if (const size_t rest = static_cast<size_t>(n_kv) - n_full * block; i == n_full && rest > 0) {
    pool_.register_tail(blocks[n_full], previous, tokens.subspan(n_full * block, rest));
  }
  pool_.release(blocks);
  pool_.release(had);  // after the chain's later blocks: evicted after them
}

}  // namespace gufo::engine
