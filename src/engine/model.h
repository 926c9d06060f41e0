// A model ready to run: the mmap'd GGUF, its hyper-parameters and weight views, checked once
// at load (every tensor the architecture needs, with the right shape and a type the backend
// reads) so bad files fail before any heavy work; then the backend prepares the weights
// (backend.h, prepare_weights). Tested by tests/unit/model/forward_test.cpp.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/result.h"
#include "gguf/file.h"
#include "model/graph.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace gufo::engine {

class Model {
 public:
  static Result<std::unique_ptr<Model>> load(const std::string& path, backend::Backend& backend);

  const gguf::File& file() const { return file_; }
  const model::HParams& hparams() const { return hparams_; }
  const model::WeightTable& weights() const { return weights_; }
  Result<model::Graph> build_graph(model::BatchShape shape) const;

 private:
  Model(gguf::File file) : file_(std::move(file)) {}
  gguf::File file_;
  model::HParams hparams_;
  model::WeightTable weights_;
};

// A model with one backend and one KV cache: evaluates tokens in order and returns logits.
class Session {
 public:
  Session(const Model& model, backend::Backend& backend, std::unique_ptr<backend::KvCache> cache)
      : model_(&model), backend_(&backend), cache_(std::move(cache)) {}
  static Result<Session> create(const Model& model, backend::Backend& backend, int64_t n_ctx,
                                DType cache_type = DType::F16);

  // Evaluates `tokens` at positions n_past().. as one batch; logits [n_rows, n_vocab] for the
  // last token, or for every token when all_logits.
  Result<std::vector<float>> eval(std::span<const int32_t> tokens, bool all_logits);
  // The same, returning only the greedy next token (argmax of the last row's logits, ties to
  // the lower id), which a device backend computes without copying the logits back.
  Result<int32_t> eval_greedy(std::span<const int32_t> tokens);
  int32_t n_past() const { return n_past_; }
  int64_t context_size() const { return cache_->spec().n_ctx; }
  // Forgets positions >= n (n <= n_past()).
  void rewind(int32_t n);
  // Saving and restoring (engine/session_file.h): the keys and values of positions [0, n)
  // (n <= n_past()) a layer at a time, and back; a restore sets n_past() to n, or to 0 when
  // it fails partway.
  const backend::KvCacheSpec& cache_spec() const { return cache_->spec(); }
  Status save_positions(int32_t n, const backend::KvCache::LayerSink& sink) const;
  Status restore_positions(int32_t n, const backend::KvCache::LayerSource& source);

 private:
  Status run(std::span<const int32_t> tokens, bool all_logits, const backend::ForwardOutputs& outputs);

  const Model* model_;
  backend::Backend* backend_;
  std::unique_ptr<backend::KvCache> cache_;
  int32_t n_past_ = 0;
};

}  // namespace gufo::engine
