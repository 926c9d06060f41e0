// Scheduler (see scheduler.h).
#include "engine/scheduler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <numeric>
#include <optional>
#include <utility>

#include "engine/draft_policy.h"
#include "engine/ngram_draft.h"

namespace gufo::engine {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// log-softmax of the raw logits (before penalties and temperature, as OpenAI reports them)
// for the chosen token and the `top` most probable ones.
TokenLogprob logprobs_of(std::span<const float> logits, int32_t token, int32_t top) {
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l - max_logit));
  const float log_z = max_logit + static_cast<float>(std::log(sum));
  TokenLogprob out{.token = token, .logprob = logits[static_cast<size_t>(token)] - log_z, .top = {}};
  if (top > 0) {
    std::vector<int32_t> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    const size_t k = std::min(ids.size(), static_cast<size_t>(top));
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(), [&](int32_t a, int32_t b) {
      return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] ||
             (logits[static_cast<size_t>(a)] == logits[static_cast<size_t>(b)] && a < b);
    });
    for (size_t i = 0; i < k; ++i) out.top.emplace_back(ids[i], logits[static_cast<size_t>(ids[i])] - log_z);
  }
  return out;
}

// NOTE(kv_pool): on a device backend the pool is what 90% of the free memory holds once the
// activations of a full step are set aside (a generous estimate: a dozen rows of n_embd and
// three of the FFN width per token, plus the logits), so --ctx and --parallel limit each
// sequence and their count, not the pool; more blocks keep more prefixes cached.
int64_t default_kv_tokens(const model::HParams& hp, const backend::Backend& backend, const SchedulerOptions& options) {
  const int64_t floor_tokens = options.n_ctx * options.n_parallel;
  if (!backend.capabilities().device_memory) return floor_tokens;
  const int64_t ffn = std::max(hp.n_ff, hp.n_ff_exp * std::max<int64_t>(1, hp.n_expert_used));
  const uint64_t per_step_token = static_cast<uint64_t>(12 * hp.n_embd + 3 * ffn) * sizeof(float);
  const uint64_t reserve = (uint64_t{512} << 20) + static_cast<uint64_t>(options.step_tokens) * per_step_token +
                           static_cast<uint64_t>(options.n_parallel) * static_cast<uint64_t>(hp.n_vocab) * 8 +
                           options.kv_memory_kept;
  const backend::KvCacheSpec spec{.n_layer = hp.n_layer, .n_embd_kv = hp.n_embd_kv(), .type = options.cache_type};
  // NOTE(kv_pool): positions are int32 and block ids too; 2^24 positions is far past any pool.
  const int64_t fits =
      backend::kv_pool_tokens(spec, backend.memory(), reserve, 0.9 * options.kv_memory_share, int64_t{1} << 24);
  return std::max(fits, options.n_ctx);  // too little memory: one context, and the allocation says so
}

}  // namespace

struct Scheduler::Sequence {
  Sequence(const tokenizer::Tokenizer& tokenizer, std::vector<int32_t> prompt, RequestOptions opts)
      : options(std::move(opts)),
        tokens(std::move(prompt)),
        n_prompt(static_cast<int32_t>(tokens.size())),
        sampler(options.sampler),
        detokenizer(tokenizer) {
    for (int32_t t : tokens) sampler.accept(t);
  }

  void send(RequestEvent event) {
    event.choice = choice;
    channel->push(std::move(event));
  }

  RequestHandle channel;
  int32_t choice = 0;
  RequestOptions options;
  std::vector<int32_t> tokens;  // the prompt, then every generated token
  int32_t n_prompt;
  int32_t n_computed = 0;       // positions whose keys and values are in the cache
  std::vector<int32_t> blocks;  // KV blocks for positions 0.., in order
  int32_t n_registered = 0;     // leading blocks known to the prefix cache
  int32_t cached_tokens = -1;   // prompt tokens reused at first admission
  int32_t slot = -1;            // backend sequence id while running
  Sampler sampler;
  tokenizer::Detokenizer detokenizer;
  std::string pending;       // decoded text held back (it may begin a stop string)
  std::string matched_stop;  // the stop string that ended it, if one did
  std::vector<TokenLogprob> pending_logprobs;
  int32_t n_generated = 0;
  // Embeddings only: how the rows pool, and the pooled rows so far (mean: their sum, in
  // position order, so chunking and batch-mates never change it).
  std::optional<model::Pooling> pooling;
  std::vector<double> pooled;
  std::optional<Constraint> constraint;  // options.grammar, as the engine applies it
  // Speculative decoding (options.spec): the draft length by measured cost, the drafts at the
  // end of `tokens` during a step (not kept yet), and what a plain step's lookup would have
  // drafted (-1: nothing), which says how often drafts would be kept.
  std::optional<DraftPolicy> policy;
  int32_t n_drafts = 0;
  int32_t shadow = -1;
  int32_t drafted = 0;
  int32_t accepted = 0;
  // Whether this sequence counts as a place in the queue while it waits: each generation does;
  // of an embedding batch only its last input, so that the batch takes one place however long.
  bool holds_queue_place = true;
  Clock::time_point submitted_at = Clock::now();
  Clock::time_point last_token_at;
};

struct Scheduler::Part {
  Sequence* seq;
  int32_t begin;  // positions begin..end-1 of seq's tokens
  int32_t end;
  bool decode = false;  // the row of a generated token (and its drafts), not a prompt's

  // The positions whose output rows the sequence needs from this part: the last token's
  // (its logits pick the next token) once the part reaches it, and each draft's after it;
  // for an embedding, the rows its pooling reads.
  std::vector<int32_t> output_positions() const {
    const auto n = static_cast<int32_t>(seq->tokens.size());
    std::vector<int32_t> positions;
    if (seq->n_drafts > 0) {
      for (int32_t pos = n - 1 - seq->n_drafts; pos < n; ++pos) positions.push_back(pos);
    } else if (seq->pooling == model::Pooling::Mean) {
      for (int32_t pos = begin; pos < end; ++pos) positions.push_back(pos);
    } else if (seq->pooling == model::Pooling::Cls) {
      if (begin == 0) positions.push_back(0);
    } else if (end == n) {
      positions.push_back(n - 1);
    }
    return positions;
  }
};

void Scheduler::pool_rows(Sequence& seq, size_t n_rows, const float* rows) {
  const size_t n_embd = seq.pooled.size();
  for (size_t r = 0; r < n_rows; ++r) {
    const float* row = rows + r * n_embd;
    for (size_t i = 0; i < n_embd; ++i) seq.pooled[i] += static_cast<double>(row[i]);  // one row for cls, last
  }
}

Result<std::unique_ptr<Scheduler>> Scheduler::create(const Model& model, backend::Backend& backend,
                                                     const tokenizer::Tokenizer& tokenizer, SchedulerOptions options) {
  const model::HParams& hp = model.hparams();
  if (options.n_parallel < 1 || options.n_parallel > 1024) {
    return Error{"parallel sequences must be 1..1024, not " + std::to_string(options.n_parallel)};
  }
  if (options.n_ctx < 2 || options.n_ctx > hp.n_ctx_train) {
    return Error{"context of " + std::to_string(options.n_ctx) + " tokens: the model allows 2.." +
                 std::to_string(hp.n_ctx_train)};
  }
  if (!(options.kv_memory_share > 0.0 && options.kv_memory_share <= 1.0)) {
    return Error{"the KV pool's share of device memory must be in (0, 1], not " +
                 std::to_string(options.kv_memory_share)};
  }
  if (options.kv_tokens == 0) options.kv_tokens = default_kv_tokens(hp, backend, options);
  if (options.kv_tokens < options.n_ctx) {
    return Error{"a KV pool of " + std::to_string(options.kv_tokens) + " tokens cannot hold one context of " +
                 std::to_string(options.n_ctx)};
  }
  if (options.step_tokens < 1) return Error{"step token budget must be >= 1"};
  if (options.max_queue < 0) return Error{"queue length must be >= 0"};
  const int64_t n_blocks = (options.kv_tokens + options.block_size - 1) / options.block_size;
  GUFO_ASSIGN_OR_RETURN(std::unique_ptr<backend::KvCache> cache,
                        backend.create_kv_cache({.n_layer = hp.n_layer,
                                                 .n_embd_kv = hp.n_embd_kv(),
                                                 .n_ctx = options.n_ctx,
                                                 .n_seq = options.n_parallel,
                                                 .type = options.cache_type,
                                                 .block_size = options.block_size,
                                                 .n_blocks = n_blocks}));
  return std::unique_ptr<Scheduler>(new Scheduler(model, backend, tokenizer, options, std::move(cache)));
}

Scheduler::Scheduler(const Model& model, backend::Backend& backend, const tokenizer::Tokenizer& tokenizer,
                     SchedulerOptions options, std::unique_ptr<backend::KvCache> cache)
    : model_(&model),
      backend_(&backend),
      tokenizer_(&tokenizer),
      options_(options),
      cache_(std::move(cache)),
      pool_(static_cast<int32_t>(cache_->spec().n_blocks), options.block_size),
      end_tokens_(end_of_generation_tokens(tokenizer.vocab())) {
  for (int32_t s = options_.n_parallel - 1; s >= 0; --s) free_slots_.push_back(s);
  slot_context_.resize(static_cast<size_t>(options_.n_parallel));
  think_tokens_ = think_tokens(tokenizer.vocab());
  stats_.kv_blocks_total = pool_.n_blocks();
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() { shutdown(); }

Submission Scheduler::submit(const std::vector<int32_t>& prompt, const std::vector<RequestOptions>& choices) {
  const int64_t n = static_cast<int64_t>(prompt.size());
  if (n < 1) return {SubmitStatus::TooLong, "the prompt has no tokens", nullptr};
  if (n + 1 > options_.n_ctx) {
    return {SubmitStatus::TooLong,
            "the prompt has " + std::to_string(n) + " tokens; the context holds " + std::to_string(options_.n_ctx) +
                " (prompt and at least one generated token)",
            nullptr};
  }
  if (choices.empty()) return {SubmitStatus::TooLong, "no choices asked for", nullptr};
  for (const RequestOptions& choice : choices) {
    if (choice.slot < -1 || choice.slot >= options_.n_parallel) {
      return {SubmitStatus::Invalid,
              "slot " + std::to_string(choice.slot) + ": the engine's slots are 0.." +
                  std::to_string(options_.n_parallel - 1) + " (-1: any)",
              nullptr};
    }
    if (choice.slot >= 0 && choices.size() > 1) {
      return {SubmitStatus::Invalid, "a slot holds one generation; ask for one choice (n = 1) with it", nullptr};
    }
    const SpecChoice& spec = choice.spec;
    if (spec.mode == SpecMode::Draft) {
      return {SubmitStatus::Invalid, "speculative decoding with a draft model is not served; spec ngram is", nullptr};
    }
    if (spec.mode != SpecMode::None && (spec.draft_max < 1 || spec.draft_max > kMaxDraftTokens)) {
      return {SubmitStatus::Invalid, "draft_max must be 1.." + std::to_string(kMaxDraftTokens), nullptr};
    }
    if (spec.mode != SpecMode::None && (spec.draft_min < 0 || spec.draft_min > spec.draft_max)) {
      return {SubmitStatus::Invalid, "draft_min must be 0..draft_max (" + std::to_string(spec.draft_max) + ")",
              nullptr};
    }
  }
  RequestHandle handle = std::make_shared<RequestChannel>();
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (size_t i = 0; i < choices.size(); ++i) {
    seqs.push_back(std::make_unique<Sequence>(*tokenizer_, prompt, choices[i]));
    const SpecChoice& spec = choices[i].spec;
    if (spec.mode == SpecMode::Ngram) seqs.back()->policy.emplace(spec.draft_min, spec.draft_max);
    seqs.back()->channel = handle;
    seqs.back()->choice = static_cast<int32_t>(i);
    if (choices[i].grammar) {
      seqs.back()->constraint.emplace(choices[i].grammar, token_trie(), think_tokens_, choices[i].free_thinking,
                                      choices[i].thinking_open, mask_cache(choices[i].grammar));
    }
  }
  const auto count = static_cast<int32_t>(seqs.size());
  return enqueue(std::move(seqs), n, count);
}

Submission Scheduler::submit_embeddings(const std::vector<std::vector<int32_t>>& inputs, model::Pooling pooling) {
  if (pooling != model::Pooling::Mean && pooling != model::Pooling::Cls && pooling != model::Pooling::Last) {
    return {SubmitStatus::Invalid,
            "pooling '" + std::string(model::pooling_name(pooling)) + "' gives no embedding (mean, cls or last do)",
            nullptr};
  }
  if (inputs.empty()) return {SubmitStatus::Invalid, "no inputs to embed", nullptr};
  RequestHandle handle = std::make_shared<RequestChannel>();
  std::vector<std::unique_ptr<Sequence>> seqs;
  int64_t n_tokens = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int64_t n = static_cast<int64_t>(inputs[i].size());
    const std::string which = inputs.size() == 1 ? "the input" : "input " + std::to_string(i);
    if (n < 1) return {SubmitStatus::Invalid, which + " has no tokens", nullptr};
    if (n > options_.n_ctx) {
      return {SubmitStatus::TooLong,
              which + " has " + std::to_string(n) + " tokens; the context holds " + std::to_string(options_.n_ctx),
              nullptr};
    }
    RequestOptions options;
    options.max_tokens = 0;
    options.use_prefix_cache = pooling == model::Pooling::Last;
    seqs.push_back(std::make_unique<Sequence>(*tokenizer_, inputs[i], options));
    seqs.back()->channel = handle;
    seqs.back()->choice = static_cast<int32_t>(i);
    seqs.back()->pooling = pooling;
    seqs.back()->pooled.assign(static_cast<size_t>(model_->hparams().n_embd), 0.0);
    seqs.back()->holds_queue_place = i + 1 == inputs.size();
    n_tokens += n;
  }
  return enqueue(std::move(seqs), n_tokens, 1);
}

Submission Scheduler::enqueue(std::vector<std::unique_ptr<Sequence>> seqs, int64_t prompt_tokens,
                              int32_t queue_places) {
  RequestHandle handle = seqs.front()->channel;
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return {SubmitStatus::ShuttingDown, "the server is shutting down", nullptr};
    if (!device_failure_.empty()) return {SubmitStatus::DeviceLost, device_failure_, nullptr};
    if (queue_places_ + stats_.running + queue_places > options_.n_parallel + options_.max_queue) {
      return {SubmitStatus::QueueFull,
              "the server is busy: " + std::to_string(stats_.running) + " sequences running and " +
                  std::to_string(n_queued_) + " waiting",
              nullptr};
    }
    n_queued_ += static_cast<int32_t>(seqs.size());
    queue_places_ += queue_places;
    stats_.prompt_tokens += static_cast<uint64_t>(prompt_tokens);
    for (auto& seq : seqs) submitted_.push_back(std::move(seq));
  }
  wake_.notify_one();
  return {SubmitStatus::Accepted, "", handle};
}

void Scheduler::shutdown() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

EngineStats Scheduler::stats() const {
  std::lock_guard lock(mutex_);
  EngineStats stats = stats_;
  // NOTE(scheduler): the loop publishes its counts once a step; a request submitted since is
  // waiting already (a server's drain reads these counts, and its stream may have answered).
  stats.waiting = n_queued_;
  return stats;
}

void Scheduler::loop() {
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, std::chrono::milliseconds(running_.empty() && !waiting_.empty() ? 10 : 1000), [&] {
        return stopping_ || !submitted_.empty() || !submitted_tasks_.empty() || !running_.empty() ||
               !slot_tasks_.empty();
      });
      if (stopping_) break;
      take_submissions(lock);
    }
    drop_cancelled();
    run_slot_tasks();
    admit();
    if (!running_.empty()) step();
    publish_occupancy();
  }
  // Shutting down: every request still here gets its final event.
  {
    std::unique_lock lock(mutex_);
    take_submissions(lock);
  }
  cancel_slot_tasks();
  while (!running_.empty()) finish(*running_.back(), StopReason::Cancelled);
  while (!waiting_.empty()) {
    waiting_.front()->send(RequestEvent::done(StopReason::Cancelled, waiting_.front()->n_prompt, 0, 0));
    waiting_.pop_front();
  }
  publish_occupancy();
}

void Scheduler::take_submissions(std::unique_lock<std::mutex>&) {
  while (!submitted_.empty()) {
    waiting_.push_back(std::move(submitted_.front()));
    submitted_.pop_front();
  }
  for (SlotTask& task : submitted_tasks_) slot_tasks_.push_back(std::move(task));
  submitted_tasks_.clear();
}

void Scheduler::drop_cancelled() {
  for (size_t i = 0; i < running_.size();) {
    if (running_[i]->channel->cancelled()) {
      finish(*running_[i], StopReason::Cancelled);  // removes it from running_
    } else {
      ++i;
    }
  }
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if ((*it)->channel->cancelled()) {
      {
        std::lock_guard lock(mutex_);
        --n_queued_;
        queue_places_ -= (*it)->holds_queue_place ? 1 : 0;
        ++stats_.requests_cancelled;
      }
      (*it)->send(RequestEvent::done(StopReason::Cancelled, (*it)->n_prompt, 0, (*it)->n_generated));
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
}

void Scheduler::admit() {
  const int32_t block = options_.block_size;
  for (auto it = waiting_.begin(); it != waiting_.end() && !free_slots_.empty();) {
    Sequence& seq = **it;
    // A sequence that asks for a slot waits while it is busy; the ones behind it go on.
    const auto slot_at = slot_for(seq);
    if (slot_at == free_slots_.end()) {
      ++it;
      continue;
    }
    const int64_t n_tokens = static_cast<int64_t>(seq.tokens.size());
    std::vector<int32_t> shared;
    std::optional<KvBlockPool::Tail> tail;  // a cached partial block that continues `shared`
    // The last token is always evaluated: its logits pick the next one.
    if (options_.prefix_cache && seq.options.use_prefix_cache) {
      shared = pool_.acquire_prefix(seq.tokens, n_tokens - 1);
      const int64_t at = static_cast<int64_t>(shared.size()) * block;
      if (at < n_tokens - 1) {
        const std::span<const int32_t> rest(seq.tokens.data() + at, static_cast<size_t>(n_tokens - 1 - at));
        tail = pool_.find_tail(shared.empty() ? -1 : shared.back(), rest);
      }
    }
    const int64_t needed =
        (n_tokens + block - 1) / block - static_cast<int64_t>(shared.size()) - (tail.has_value() ? 1 : 0);
    // The tail is one of the available blocks; once taken, it is not.
    const int64_t available = pool_.n_available() - (tail.has_value() ? 1 : 0);
    // Running sequences keep one block in reserve each for their next decode steps.
    const int64_t reserve = static_cast<int64_t>(running_.size());
    if (needed > available - reserve && !(running_.empty() && needed <= available)) {
      pool_.release(shared);
      break;
    }
    const int32_t tail_tokens = tail.has_value() ? tail->n_tokens : 0;
    if (tail.has_value()) {
      pool_.take_tail(*tail);
      shared.push_back(tail->block);
    }
    seq.blocks = std::move(shared);
    seq.n_registered = static_cast<int32_t>(seq.blocks.size()) - (tail_tokens > 0 ? 1 : 0);
    seq.n_computed = seq.n_registered * block + tail_tokens;
    for (int64_t i = 0; i < needed; ++i) seq.blocks.push_back(*pool_.allocate());
    const bool first_admission = seq.cached_tokens < 0;
    if (first_admission) seq.cached_tokens = std::min(seq.n_computed, seq.n_prompt);
    seq.slot = *slot_at;
    free_slots_.erase(slot_at);
    const Status assigned = cache_->set_blocks(seq.slot, seq.blocks, seq.n_computed);
    std::unique_ptr<Sequence> owned = std::move(*it);
    it = waiting_.erase(it);
    {
      std::lock_guard lock(mutex_);
      --n_queued_;
      queue_places_ -= owned->holds_queue_place ? 1 : 0;
      ++stats_.running;
      if (first_admission) stats_.cached_prompt_tokens += static_cast<uint64_t>(owned->cached_tokens);
    }
    running_.push_back(std::move(owned));
    if (!assigned.ok()) fail(*running_.back(), assigned.error().message);
  }
}

bool Scheduler::slot_busy(int32_t slot) const {
  if (std::find(free_slots_.begin(), free_slots_.end(), slot) == free_slots_.end()) return true;
  return std::any_of(waiting_.begin(), waiting_.end(), [slot](const std::unique_ptr<Sequence>& seq) {
    return seq->options.slot == slot && seq->cached_tokens >= 0;  // admitted once: preempted
  });
}

std::vector<int32_t>::iterator Scheduler::slot_for(const Sequence& seq) {
  if (seq.options.slot >= 0) return std::find(free_slots_.begin(), free_slots_.end(), seq.options.slot);
  const auto wanted = [this](int32_t slot) {
    return std::any_of(waiting_.begin(), waiting_.end(),
                       [slot](const std::unique_ptr<Sequence>& other) { return other->options.slot == slot; });
  };
  for (auto it = free_slots_.end(); it != free_slots_.begin();) {
    --it;
    if (!wanted(*it)) return it;
  }
  return free_slots_.end() - 1;
}

void Scheduler::preempt_newest() {
  std::unique_ptr<Sequence> seq = std::move(running_.back());
  running_.pop_back();
  release(*seq, true);
  seq->n_computed = 0;
  seq->n_registered = 0;
  std::fill(seq->pooled.begin(), seq->pooled.end(), 0.0);
  free_slots_.push_back(seq->slot);
  seq->slot = -1;
  {
    std::lock_guard lock(mutex_);
    ++n_queued_;
    queue_places_ += seq->holds_queue_place ? 1 : 0;
    --stats_.running;
    ++stats_.preemptions;
  }
  waiting_.push_front(std::move(seq));
}

std::string Scheduler::device_failure() const {
  std::lock_guard lock(mutex_);
  return device_failure_;
}

void Scheduler::fail_after_device_loss(const std::string& message) {
  {
    // From here submit() refuses; what was submitted before is failed with the rest.
    std::unique_lock lock(mutex_);
    device_failure_ = message;
    take_submissions(lock);
  }
  while (!running_.empty()) fail(*running_.back(), message);
  while (!waiting_.empty()) {
    {
      std::lock_guard lock(mutex_);
      --n_queued_;
      queue_places_ -= waiting_.front()->holds_queue_place ? 1 : 0;
      ++stats_.requests_failed;
    }
    waiting_.front()->send(RequestEvent::failure(message));
    waiting_.pop_front();
  }
}

void Scheduler::step() {
  const int64_t block = options_.block_size;
  // Prompt segments leave room for every other sequence's decode row, so a segment always
  // fits the step beside them (a prompt is never starved by running decodes).
  const int64_t segment = std::max<int64_t>(1, options_.step_tokens - (options_.n_parallel - 1));
  // Each sequence's next segment: one token when decoding, else the prompt up to the next
  // multiple of the step budget. Blocks first, in admission order; a sequence that cannot
  // get its block preempts the newest one (perhaps itself).
  std::vector<Part> planned;
  for (size_t i = 0; i < running_.size(); ++i) {
    Sequence& seq = *running_[i];
    const int32_t begin = seq.n_computed;
    const int32_t end = static_cast<int32_t>(
        std::min<int64_t>(static_cast<int64_t>(seq.tokens.size()), (begin / segment + 1) * segment));
    bool preempted_self = false;
    while (static_cast<int64_t>(seq.blocks.size()) * block < end) {
      const std::optional<int32_t> fresh = pool_.allocate();
      if (fresh) {
        seq.blocks.push_back(*fresh);
        continue;
      }
      preempted_self = running_.size() - 1 == i;
      preempt_newest();
      if (preempted_self) break;
    }
    if (preempted_self) break;
    // A decode part: the last token only (a recomputation after preemption may also run one
    // row at a time, in the middle of the generated tokens).
    const bool decode = begin + 1 == static_cast<int32_t>(seq.tokens.size()) && begin >= seq.n_prompt;
    planned.push_back({&seq, begin, end, decode});
  }
  // Decode rows first, then prompt segments in admission order, within the budget (the
  // first part always goes, so a lone long segment still runs).
  std::stable_partition(planned.begin(), planned.end(), [](const Part& p) { return p.end - p.begin == 1; });
  std::vector<Part> parts;
  int64_t budget = options_.step_tokens;
  for (const Part& p : planned) {
    const int64_t n = p.end - p.begin;
    if (!parts.empty() && n > budget) continue;
    parts.push_back(p);
    budget -= n;
  }
  if (parts.empty()) return;
  add_drafts(parts, budget);
  // Generations want logits, embeddings the hidden state: one forward call each.
  std::vector<Part> generating;
  std::vector<Part> embedding;
  for (const Part& p : parts) (p.seq->pooling ? embedding : generating).push_back(p);
  if (!generating.empty() && !run_parts(generating, model::GraphOutput::Logits)) return;
  if (!embedding.empty()) run_parts(embedding, model::GraphOutput::Hidden);
}

void Scheduler::add_drafts(std::vector<Part>& parts, int64_t budget) {
  double seconds = 0.0;
  for (Part& p : parts) {
    if (!p.decode || !p.seq->policy) continue;
    const Proposal proposal = propose_drafts(*p.seq, budget);
    seconds += proposal.lookup_seconds;
    p.end += proposal.appended;
    budget -= proposal.appended;
  }
  std::lock_guard lock(mutex_);
  stats_.draft_seconds += seconds;
}

Scheduler::Proposal Scheduler::propose_drafts(Sequence& seq, int64_t budget) {
  const auto n = static_cast<int64_t>(seq.tokens.size());
  const int32_t wanted = seq.policy->next_length();
  const Clock::time_point start = Clock::now();
  if (wanted == 0) {
    // Plain, but what the lookup would have drafted still says how often drafts are kept.
    const std::vector<int32_t> guess = ngram_draft(seq.tokens, 1);
    seq.shadow = guess.empty() ? -1 : guess[0];
    const double seconds = seconds_between(start, Clock::now());
    seq.policy->record_proposal(1, seconds);
    return {.appended = 0, .lookup_seconds = seconds};
  }
  // Room in the context and in the step, and no row past the last token to generate.
  const int64_t length =
      std::min<int64_t>({wanted, options_.n_ctx - n, budget, int64_t{seq.options.max_tokens} - seq.n_generated - 1});
  if (length <= 0) return {};
  std::vector<int32_t> drafts = ngram_draft(seq.tokens, static_cast<int32_t>(length));
  const double seconds = seconds_between(start, Clock::now());
  seq.policy->record_proposal(static_cast<int32_t>(length), seconds);
  // Only blocks that are free: a draft never preempts.
  const int64_t held = grow_blocks(seq, n + static_cast<int64_t>(drafts.size()));
  drafts.resize(static_cast<size_t>(std::clamp<int64_t>(held - n, 0, static_cast<int64_t>(drafts.size()))));
  seq.tokens.insert(seq.tokens.end(), drafts.begin(), drafts.end());
  seq.n_drafts = static_cast<int32_t>(drafts.size());
  return {.appended = seq.n_drafts, .lookup_seconds = seconds};
}

int64_t Scheduler::grow_blocks(Sequence& seq, int64_t positions) {
  const int64_t block = options_.block_size;
  while (static_cast<int64_t>(seq.blocks.size()) * block < positions) {
    const std::optional<int32_t> fresh = pool_.allocate();
    if (!fresh) break;
    seq.blocks.push_back(*fresh);
  }
  return static_cast<int64_t>(seq.blocks.size()) * block;
}

void Scheduler::release_spare_blocks(Sequence& seq) {
  // The next step writes position n_computed; blocks past its block held refused drafts.
  const size_t needed = static_cast<size_t>(seq.n_computed / options_.block_size) + 1;
  if (seq.blocks.size() <= needed) return;
  pool_.release(std::span<const int32_t>(seq.blocks).subspan(needed));
  seq.blocks.resize(needed);
}

void Scheduler::verify_drafts(Sequence& seq, const float* rows, size_t width, std::optional<double> seconds) {
  const std::vector<int32_t> drafts(seq.tokens.end() - seq.n_drafts, seq.tokens.end());
  seq.tokens.resize(seq.tokens.size() - drafts.size());
  seq.n_drafts = 0;
  const auto first = static_cast<int32_t>(seq.tokens.size());  // the first draft's position
  // Counted before a token may end the sequence: its final event reports them, and a client
  // that has that event sees the engine's counts updated.
  seq.drafted += static_cast<int32_t>(drafts.size());
  {
    std::lock_guard lock(mutex_);
    stats_.drafted_tokens += drafts.size();
    ++stats_.draft_steps;
  }
  const auto n_vocab = static_cast<size_t>(model_->hparams().n_vocab);
  size_t kept = 0;
  for (;;) {
    // In the cache: the last token and the drafts kept so far.
    seq.n_computed = first + static_cast<int32_t>(kept);
    const std::span<const float> logits(rows + kept * width, n_vocab);
    const std::optional<int32_t> token = next_token(seq, logits);
    const bool is_draft = token && kept < drafts.size() && *token == drafts[kept];
    if (is_draft) {
      ++seq.accepted;
      std::lock_guard lock(mutex_);
      ++stats_.accepted_tokens;
    }
    if (!take_token(seq, token, logits)) return;  // it ended (and is gone)
    if (!is_draft) break;
    ++kept;
  }
  if (seconds) {
    seq.policy->record(static_cast<int32_t>(drafts.size()), static_cast<int32_t>(kept), *seconds);
  } else {
    seq.policy->record_untimed(static_cast<int32_t>(drafts.size()), static_cast<int32_t>(kept));
  }
  register_full_blocks(seq);
  release_spare_blocks(seq);
}

bool Scheduler::run_parts(const std::vector<Part>& parts, model::GraphOutput output) {
  // A failure fails the sequences of this batch (their cache is in an unknown state), or
  // every request when the device is gone.
  const auto fail_parts = [&](const Error& error) {
    if (error.kind == ErrorKind::DeviceLost) {
      fail_after_device_loss("the device failed: " + error.message);
      return false;
    }
    for (const Part& p : parts) fail(*p.seq, error.message);
    return true;
  };

  backend::Batch batch;
  std::vector<std::vector<int32_t>> outputs;  // each part's output positions
  int64_t prefill_rows = 0;
  for (const Part& p : parts) {
    if (Status s = cache_->set_blocks(p.seq->slot, p.seq->blocks, p.seq->n_computed); !s.ok()) {
      return fail_parts(s.error());
    }
    const int32_t first_row = static_cast<int32_t>(batch.tokens.size());
    for (int32_t pos = p.begin; pos < p.end; ++pos) {
      batch.tokens.push_back(p.seq->tokens[static_cast<size_t>(pos)]);
      batch.positions.push_back(pos);
      batch.seq_ids.push_back(p.seq->slot);
    }
    outputs.push_back(p.output_positions());
    for (int32_t pos : outputs.back()) batch.output_rows.push_back(first_row + pos - p.begin);
    if (!p.decode) prefill_rows += p.end - p.begin;
  }
  Result<model::Graph> graph = model_->build_graph(
      {.n_tokens = batch.n_tokens(), .n_outputs = static_cast<int64_t>(batch.output_rows.size()), .output = output});
  if (!graph.ok()) return fail_parts(graph.error());
  const model::HParams& hp = model_->hparams();
  const auto width = static_cast<size_t>(output == model::GraphOutput::Logits ? hp.n_vocab : hp.n_embd);
  std::vector<float> values(batch.output_rows.size() * width);
  const Clock::time_point start = Clock::now();
  if (Status s = backend_->forward(*graph, batch, *cache_, {.logits = values, .argmax = {}}); !s.ok()) {
    return fail_parts(s.error());
  }
  const double elapsed = seconds_between(start, Clock::now());
  {
    std::lock_guard lock(mutex_);
    const double share = static_cast<double>(prefill_rows) / static_cast<double>(batch.n_tokens());
    stats_.prefill_tokens += static_cast<uint64_t>(prefill_rows);
    stats_.decode_tokens += static_cast<uint64_t>(batch.n_tokens() - prefill_rows);
    stats_.prefill_seconds += elapsed * share;
    stats_.decode_seconds += elapsed * (1.0 - share);
  }
  // NOTE(spec): a draft policy times its steps by the whole forward; one that also ran prompt
  // rows says little about what drafts cost, so then it only counts what was kept.
  const std::optional<double> timing = prefill_rows == 0 ? std::optional<double>(elapsed) : std::nullopt;
  const float* rows = values.data();
  for (size_t i = 0; i < parts.size(); ++i) {
    const Part& p = parts[i];
    Sequence& seq = *p.seq;
    const size_t n_rows = outputs[i].size();
    if (seq.n_drafts > 0) {
      verify_drafts(seq, rows, width, timing);
      rows += n_rows * width;
      continue;
    }
    seq.n_computed = p.end;
    register_full_blocks(seq);
    if (seq.pooling) {
      pool_rows(seq, n_rows, rows);
      if (p.end == static_cast<int32_t>(seq.tokens.size())) finish(seq, StopReason::EndOfGeneration);
    } else if (n_rows == 1) {
      const int32_t shadow = std::exchange(seq.shadow, -1);
      if (emit_token(seq, rows) && p.decode && seq.policy) {
        if (shadow >= 0) seq.policy->record_shadow(seq.tokens.back() == shadow);
        if (timing) seq.policy->record(0, 0, *timing);
      }
    }
    rows += n_rows * width;
  }
  return true;
}

bool Scheduler::caches_blocks(const Sequence& seq) const {
  // Mean and cls embeddings never start from cached blocks: theirs would only push out
  // prefixes that generations reuse.
  return options_.prefix_cache && (!seq.pooling || seq.pooling == model::Pooling::Last);
}

void Scheduler::register_full_blocks(Sequence& seq) {
  if (!caches_blocks(seq)) return;
  const int32_t block = options_.block_size;
  while ((seq.n_registered + 1) * block <= seq.n_computed) {
    const int32_t i = seq.n_registered;
    const std::span<const int32_t> tokens(seq.tokens.data() + static_cast<size_t>(i) * block, block);
    pool_.register_full(seq.blocks[static_cast<size_t>(i)], i > 0 ? seq.blocks[static_cast<size_t>(i) - 1] : -1,
                        tokens);
    ++seq.n_registered;
  }
}

void Scheduler::register_tail_block(const Sequence& seq) {
  const int32_t block = options_.block_size;
  const int32_t i = seq.n_registered;
  const int32_t n = seq.n_computed - i * block;
  if (!caches_blocks(seq) || n <= 0 || n >= block || static_cast<size_t>(i) >= seq.blocks.size()) return;
  const std::span<const int32_t> tokens(seq.tokens.data() + static_cast<size_t>(i) * block, static_cast<size_t>(n));
  pool_.register_tail(seq.blocks[static_cast<size_t>(i)], i > 0 ? seq.blocks[static_cast<size_t>(i) - 1] : -1, tokens);
}

std::shared_ptr<const grammar::TokenTrie> Scheduler::token_trie() {
  std::call_once(trie_once_, [this] { token_trie_ = vocabulary_trie(*tokenizer_, end_tokens_); });
  return token_trie_;
}

std::shared_ptr<grammar::MaskCache> Scheduler::mask_cache(const std::shared_ptr<const grammar::Grammar>& grammar) {
  constexpr size_t kMaxCaches = 16;  // NOTE(grammar): beyond that, all are dropped at once
  std::shared_ptr<const grammar::TokenTrie> trie = token_trie();
  std::lock_guard lock(mask_caches_mutex_);
  auto it = mask_caches_.find(grammar.get());
  if (it == mask_caches_.end()) {
    if (mask_caches_.size() >= kMaxCaches) mask_caches_.clear();  // generations running keep theirs
    it = mask_caches_
             .emplace(grammar.get(), std::make_pair(grammar, std::make_shared<grammar::MaskCache>(grammar, trie)))
             .first;
  }
  return it->second.second;
}

// The next token: drawn from the logits, or, under a grammar, from those it allows.
std::optional<int32_t> Scheduler::next_token(Sequence& seq, std::span<const float> logits) {
  if (!seq.constraint) return seq.sampler.sample(logits);
  return seq.constraint->sample(seq.sampler, logits, masked_logits_);
}

bool Scheduler::emit_token(Sequence& seq, const float* logits_row) {
  const std::span<const float> logits(logits_row, static_cast<size_t>(model_->hparams().n_vocab));
  return take_token(seq, next_token(seq, logits), logits);
}

bool Scheduler::take_token(Sequence& seq, std::optional<int32_t> next, std::span<const float> logits) {
  if (!next) {
    // NOTE(grammar): no token of the vocabulary continues the grammar here; the answer ends
    // as if it had run out of tokens, never in a loop.
    finish(seq, StopReason::Length);
    return false;
  }
  const int32_t token = *next;
  seq.sampler.accept(token);
  seq.tokens.push_back(token);
  ++seq.n_generated;
  const Clock::time_point now = Clock::now();
  {
    std::lock_guard lock(mutex_);
    ++stats_.completion_tokens;
    if (seq.n_generated == 1) {
      stats_.time_to_first_token.observe(seconds_between(seq.submitted_at, now));
    } else {
      stats_.inter_token_latency.observe(seconds_between(seq.last_token_at, now));
    }
  }
  seq.last_token_at = now;
  if (seq.options.top_logprobs >= 0)
    seq.pending_logprobs.push_back(logprobs_of(logits, token, seq.options.top_logprobs));

  if (std::find(end_tokens_.begin(), end_tokens_.end(), token) != end_tokens_.end()) {
    finish(seq, StopReason::EndOfGeneration);
    return false;
  }
  Result<std::string> piece = seq.detokenizer.push(token);
  if (!piece.ok()) {
    fail(seq, piece.error().message);
    return false;
  }
  seq.pending += *piece;
  size_t found = 0;
  const size_t safe = stop_safe_prefix(seq.pending, seq.options.stop, found);
  if (found != std::string::npos) {
    seq.matched_stop = std::string(stop_string_at(seq.pending, found, seq.options.stop));
    seq.pending.resize(found);
    finish(seq, StopReason::StopString);
    return false;
  }
  RequestEvent event = RequestEvent::text_of(seq.pending.substr(0, safe), std::move(seq.pending_logprobs));
  seq.pending_logprobs.clear();
  seq.pending.erase(0, safe);
  if (!event.text.empty() || !event.logprobs.empty()) seq.send(std::move(event));
  if (seq.n_generated >= seq.options.max_tokens) {
    finish(seq, StopReason::Length);
    return false;
  }
  if (static_cast<int64_t>(seq.tokens.size()) >= options_.n_ctx) {
    finish(seq, StopReason::ContextFull);
    return false;
  }
  return true;
}

void Scheduler::release(Sequence& seq, bool keep_cached) {
  if (keep_cached) {
    register_full_blocks(seq);
    register_tail_block(seq);
  }
  pool_.release(seq.blocks);
  seq.blocks.clear();
}

void Scheduler::finish(Sequence& seq, StopReason reason) {
  if (reason != StopReason::StopString) seq.pending += seq.detokenizer.finish();
  release(seq, true);
  {
    // Counters first, so a client that has its final event sees them updated.
    std::lock_guard lock(mutex_);
    --stats_.running;
    if (reason == StopReason::Cancelled) {
      ++stats_.requests_cancelled;
    } else {
      ++stats_.requests_ok;
    }
    stats_.kv_blocks_used = pool_.n_used();
    stats_.kv_blocks_cached = pool_.n_cached();
  }
  if (!seq.pending.empty() || !seq.pending_logprobs.empty()) {
    seq.send(RequestEvent::text_of(std::move(seq.pending), std::move(seq.pending_logprobs)));
  }
  RequestEvent done = RequestEvent::done(reason, seq.n_prompt, std::max(seq.cached_tokens, 0), seq.n_generated);
  done.drafted_tokens = seq.drafted;
  done.accepted_tokens = seq.accepted;
  done.stop_string = std::move(seq.matched_stop);
  if (seq.pooling && reason != StopReason::Cancelled) {
    const double count = seq.pooling == model::Pooling::Mean ? static_cast<double>(seq.n_prompt) : 1.0;
    for (double v : seq.pooled) done.embedding.push_back(static_cast<float>(v / count));
  }
  seq.send(std::move(done));
  // The slot remembers the context whose blocks the prefix cache now has (generations only).
  if (!seq.pooling && caches_blocks(seq)) {
    slot_context_[static_cast<size_t>(seq.slot)] = {.tokens = std::move(seq.tokens), .note = stop_note(reason)};
  }
  remove_running(seq);
}

void Scheduler::fail(Sequence& seq, const std::string& message) {
  release(seq, false);
  {
    std::lock_guard lock(mutex_);
    --stats_.running;
    ++stats_.requests_failed;
    stats_.kv_blocks_used = pool_.n_used();
  }
  seq.send(RequestEvent::failure(message));
  slot_context_[static_cast<size_t>(seq.slot)] = {};
  remove_running(seq);
}

void Scheduler::remove_running(Sequence& seq) {
  free_slots_.push_back(seq.slot);
  const auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& s) { return s.get() == &seq; });
  running_.erase(it);  // destroys seq
}

void Scheduler::publish_occupancy() {
  std::lock_guard lock(mutex_);
  stats_.waiting = n_queued_;
  stats_.kv_blocks_used = pool_.n_used();
  stats_.kv_blocks_cached = pool_.n_cached();
}

}  // namespace gufo::engine
