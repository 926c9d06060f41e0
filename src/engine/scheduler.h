// The serving engine: continuous batching over one model, one backend and one paged KV
// cache, on a thread of its own. Requests join the running batch and leave it at token
// boundaries. Every step evaluates one token for each decoding sequence plus prompt segments
// of sequences still in prefill, up to a token budget, so long prompts never stall running
// decodes. Prompt segments are the budget less one row per other sequence, and end at
// multiples of that length (counted from position 0): a segment always fits beside the
// decodes, and a sequence is cut the same way whatever else is running.
//
// KV blocks come from a KvBlockPool: a new request first reuses the cached blocks of the
// longest matching prefix (prefix cache), then takes fresh ones for the rest of its prompt;
// it waits while the pool cannot hold its prompt. When a decoding sequence needs a block and
// none is left, the most recently admitted sequence is preempted: its blocks go back and it
// is recomputed later from its tokens (generated ones included), with its sampler state kept.
// A decoding sequence that asks for speculative decoding (RequestOptions::spec) adds its
// drafts as rows after its token, from the budget left once prompt segments are planned and
// from blocks that are free (a draft never preempts); its rows are sampled in turn, and the
// keys and values of drafts not kept are overwritten later (the fill level moves back; the
// prefix cache only ever registers kept tokens).
// A failed step fails only the sequences in that step's batch; a lost device (ErrorKind::
// DeviceLost) fails every request, and new ones are refused.
// Slots, as llama.cpp's server has them (gufo serve's /slots routes): slot k is backend
// sequence k of n_parallel. A slot remembers the context of the last generation that ran in it,
// whose keys and values the prefix cache keeps until they are evicted, and a request may ask
// for a slot (RequestOptions::slot; it waits while the slot is busy). Saving a slot writes its
// context and the keys and values still cached for it to a session file (engine/session_file.h);
// restoring reads one into fresh blocks and caches them, so the next request with that context
// starts after it; erasing forgets the context and drops its cached blocks. Each waits until
// the slot is idle, then runs on the engine thread between steps (scheduler_slots.cpp).
// Tested by tests/unit/engine/scheduler_test.cpp and slots_test.cpp.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "core/result.h"
#include "engine/constraint.h"
#include "engine/kv_blocks.h"
#include "engine/model.h"
#include "engine/request.h"
#include "engine/session_file.h"
#include "engine/stats.h"
#include "grammar/token_matcher.h"
#include "model/graph.h"
#include "model/hparams.h"
#include "tokenizer/tokenizer.h"

namespace gufo::engine {

struct SchedulerOptions {
  int32_t n_parallel = 4;  // sequences decoding at once
  int64_t n_ctx = 4096;    // positions per sequence (prompt + generated)
  // Positions in the whole pool. 0: on a device backend, what 90% of its free memory holds
  // after a reserve for activations (NOTE(kv_pool)), times kv_memory_share; on the CPU,
  // n_ctx * n_parallel.
  int64_t kv_tokens = 0;
  int32_t block_size = 16;    // positions per KV block (a power of two)
  int32_t step_tokens = 512;  // token budget of one step (decode rows + prompt segments)
  int32_t max_queue = 64;     // requests waiting beyond n_parallel; more are refused
  bool prefix_cache = true;
  DType cache_type = DType::F16;
  // With kv_tokens 0 on a device backend: the share of that 90% this model's pool takes, in
  // (0, 1], after kv_memory_kept bytes more are set aside. `gufo serve` with several models
  // gives each load 1 / (the models that may still share the device, this one included) and
  // keeps the weights of those still to load, so the first does not take the memory of the rest.
  double kv_memory_share = 1.0;
  uint64_t kv_memory_kept = 0;
};

// DeviceLost: the backend's device failed; nothing will run again in this process.
enum class SubmitStatus { Accepted, QueueFull, TooLong, Invalid, ShuttingDown, DeviceLost };

struct Submission {
  SubmitStatus status = SubmitStatus::Accepted;
  std::string message;   // why it was refused
  RequestHandle handle;  // when accepted
};

class Scheduler {
 public:
  static Result<std::unique_ptr<Scheduler>> create(const Model& model, backend::Backend& backend,
                                                   const tokenizer::Tokenizer& tokenizer, SchedulerOptions options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues one generation per element of `choices` (OpenAI's n), all from `prompt`; one
  // handle streams the events of all of them, tagged with the choice's index, and cancels
  // them together. Refused as a whole when the queue cannot take them all, the prompt
  // cannot fit the context, or the engine is stopping.
  Submission submit(const std::vector<int32_t>& prompt, const std::vector<RequestOptions>& choices);
  // Queues one embedding per input: its tokens run through the model like a prompt, in the
  // same continuous batch as generations but in forward calls of their own that return the
  // final normalized hidden state, which `pooling` (mean, cls or last) reduces to one vector
  // per input. The handle's final event per input (choice = its index) carries the vector,
  // unnormalized. Mean and cls need every row, so only last pooling reuses cached prefixes.
  // A batch of inputs takes one place in the queue (it holds no more than their tokens), and
  // is refused as a whole like submit().
  Submission submit_embeddings(const std::vector<std::vector<int32_t>>& inputs, model::Pooling pooling);
  // Stops taking requests, cancels every queued and running one (each gets its final
  // event) and joins the engine thread.
  void shutdown();

  struct SlotState {
    int32_t id = 0;
    bool busy = false;      // a sequence runs in it
    int32_t n_context = 0;  // tokens of the context it remembers
  };
  Result<std::vector<SlotState>> slots();
  struct SlotTransfer {
    int32_t n_tokens = 0;  // the context saved or restored
    int32_t n_kv = 0;      // positions of it whose keys and values went with it
    uint64_t n_bytes = 0;  // the file's size
    double ms = 0;         // on the engine thread
  };
  // Errors: Invalid for a slot id out of range or a file that is not a session of this model
  // and build (the message names the file); OutOfMemory when the pool has no room now.
  Result<SlotTransfer> save_slot(int32_t slot, const std::string& path, const SessionIdentity& identity);
  Result<SlotTransfer> restore_slot(int32_t slot, const std::string& path, const SessionIdentity& identity);
  Result<int32_t> erase_slot(int32_t slot);  // the tokens of the context it forgot

  const SchedulerOptions& options() const { return options_; }
  EngineStats stats() const;
  // Why the backend's device was lost ("" while it works): then every request fails.
  std::string device_failure() const;

 private:
  struct Sequence;
  struct Part;  // a sequence's rows in one step
  Scheduler(const Model& model, backend::Backend& backend, const tokenizer::Tokenizer& tokenizer,
            SchedulerOptions options, std::unique_ptr<backend::KvCache> cache);
  void loop();
  void take_submissions(std::unique_lock<std::mutex>& lock);
  void drop_cancelled();
  void admit();
  bool ensure_block(Sequence& seq);
  void preempt_newest();
  void step();
  // One forward over `parts` (all generations, or all embeddings); false when the device
  // was lost, which fails every request.
  bool run_parts(const std::vector<Part>& parts, model::GraphOutput output);
  void pool_rows(Sequence& seq, size_t n_rows, const float* rows);  // n_rows hidden states
  Submission enqueue(std::vector<std::unique_ptr<Sequence>> seqs, int64_t prompt_tokens, int32_t queue_places);
  void fail_after_device_loss(const std::string& message);
  // Adds drafts to the decode parts of `parts` from `budget` rows (RequestOptions::spec).
  void add_drafts(std::vector<Part>& parts, int64_t budget);
  // Appends a decoding sequence's drafts for this step to its tokens, or picks its shadow
  // draft when its policy decodes plainly.
  struct Proposal {
    int32_t appended = 0;
    double lookup_seconds = 0;  // what its policy weighs and EngineStats::draft_seconds sums
  };
  Proposal propose_drafts(Sequence& seq, int64_t budget);
  // Takes free blocks until the sequence's hold `positions` or none is left; the positions held.
  int64_t grow_blocks(Sequence& seq, int64_t positions);
  // Gives back blocks past the one its next token goes to (they held refused drafts).
  void release_spare_blocks(Sequence& seq);
  // Samples a decoding sequence's rows in turn while its drafts are the tokens drawn; the step's
  // time when it says what the drafts cost (no prompt rows beside them), for its policy.
  void verify_drafts(Sequence& seq, const float* rows, size_t width, std::optional<double> seconds);
  // Samples the next token from `logits` and takes it (take_token). False when the token ended
  // the sequence (it is gone then).
  bool emit_token(Sequence& seq, const float* logits);
  // Appends a sampled token (none: the grammar allows nothing) and sends its text; finishes
  // the sequence at an end token, a stop string, max_tokens or the context's end. False then.
  bool take_token(Sequence& seq, std::optional<int32_t> token, std::span<const float> logits);
  std::optional<int32_t> next_token(Sequence& seq, std::span<const float> logits);
  void finish(Sequence& seq, StopReason reason);
  void fail(Sequence& seq, const std::string& message);
  void release(Sequence& seq, bool keep_cached);
  void remove_running(Sequence& seq);
  bool caches_blocks(const Sequence& seq) const;
  void register_full_blocks(Sequence& seq);
  // A released sequence's partial last block, for a later prompt that continues the same way.
  void register_tail_block(const Sequence& seq);
  void publish_occupancy();
  // Slots (scheduler_slots.cpp): work for the engine thread, run once `slot` is idle (-1: at
  // once), and what it runs.
  template <class T>
  T on_engine_thread(int32_t slot, std::function<T()> work);
  void run_slot_tasks();
  void cancel_slot_tasks();
  // A sequence runs in `slot`, or one that ran there waits to go on (preempted).
  bool slot_busy(int32_t slot) const;
  // The free slot an admitted sequence takes: the one it asks for, else the last freed that no
  // waiting sequence asks for; end() when the one it asks for is busy.
  std::vector<int32_t>::iterator slot_for(const Sequence& seq);
  Status check_slot(int32_t slot) const;
  Result<SlotTransfer> save_slot_now(int32_t slot, const std::string& path, const SessionIdentity& identity);
  Result<SlotTransfer> restore_slot_now(int32_t slot, const std::string& path, const SessionIdentity& identity);
  // Caches the restored context's blocks (its keys and values written) and gives them back.
  void cache_restored(std::span<const int32_t> tokens, int32_t n_kv, const std::vector<int32_t>& blocks);
  // The leading tokens of `slot`'s context that another slot's context shares.
  int64_t shared_with_other_slots(int32_t slot) const;
  // The vocabulary as a token trie for constrained decoding, built by the first request that
  // needs it (on its own thread, not the engine's) and shared by all after.
  std::shared_ptr<const grammar::TokenTrie> token_trie();
  // The mask cache of `grammar` over this vocabulary, shared by all its generations.
  std::shared_ptr<grammar::MaskCache> mask_cache(const std::shared_ptr<const grammar::Grammar>& grammar);

  const Model* model_;
  backend::Backend* backend_;
  const tokenizer::Tokenizer* tokenizer_;
  SchedulerOptions options_;
  std::unique_ptr<backend::KvCache> cache_;
  KvBlockPool pool_;
  std::vector<int32_t> end_tokens_;
  ThinkTokens think_tokens_;
  std::once_flag trie_once_;
  std::shared_ptr<const grammar::TokenTrie> token_trie_;
  std::mutex mask_caches_mutex_;
  // The grammar is kept too, so that its address is not reused while its entry stands.
  std::map<const grammar::Grammar*,
           std::pair<std::shared_ptr<const grammar::Grammar>, std::shared_ptr<grammar::MaskCache>>>
      mask_caches_;

  // Engine thread only.
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;  // admission order
  std::vector<int32_t> free_slots_;                 // backend sequence ids
  std::vector<float> masked_logits_;                // a constrained sequence's logits, masked
  // Per slot: its last generation's tokens and how it ended (stop_note), for its session file.
  struct SlotContext {
    std::vector<int32_t> tokens;
    std::string note;
  };
  std::vector<SlotContext> slot_context_;
  struct SlotTask {
    int32_t slot;                // -1: any time
    std::function<void()> run;   // on the engine thread
    std::function<void()> drop;  // instead, when the engine stops first
  };
  std::vector<SlotTask> slot_tasks_;  // waiting for their slots

  // Shared with submitters (mutex_).
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Sequence>> submitted_;
  std::vector<SlotTask> submitted_tasks_;
  int32_t n_slot_tasks_ = 0;  // submitted and not yet run or dropped (at most kMaxSlotTasks)
  int32_t n_queued_ = 0;      // sequences in submitted_ + waiting_
  int32_t queue_places_ = 0;  // the places they take (Sequence::holds_queue_place)
  bool stopping_ = false;
  std::string device_failure_;  // set when the backend lost its device: nothing more runs
  EngineStats stats_;

  std::thread thread_;
};

}  // namespace gufo::engine
