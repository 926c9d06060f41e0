// Model loading and Session evaluation (see model.h).
#include "engine/model.h"

#include <string>

#include "model/decoder.h"

namespace gufo::engine {

Result<std::unique_ptr<Model>> Model::load(const std::string& path, backend::Backend& backend) {
  GUFO_ASSIGN_OR_RETURN(gguf::File file, gguf::File::open(path));
  std::unique_ptr<Model> model(new Model(std::move(file)));
  GUFO_ASSIGN_OR_RETURN(model->hparams_, model::load_hparams(model->file_));
  GUFO_ASSIGN_OR_RETURN(model->weights_, model::WeightTable::from_gguf(model->file_));
  // A one-token graph names every tensor the forward pass reads and checks their shapes.
  GUFO_ASSIGN_OR_RETURN(model::Graph graph, model->build_graph({.n_tokens = 1, .n_outputs = 1}));
  for (const model::Node& node : graph.nodes) {
    if (!backend.supports(node)) {
      const std::string what = node.op == model::Op::Weight
                                   ? "tensor '" + node.name + "' of type " + std::string(dtype_name(node.weight->type))
                                   : "node " + node.name;
      return Error{path + ": the " + std::string(backend.name()) + " backend cannot run " + what,
                   ErrorKind::Unsupported};
    }
  }
  if (Status prepared = backend.prepare_weights(graph); !prepared.ok()) {
    return Error{path + ": " + prepared.error().message, prepared.error().kind};
  }
  return model;
}

Result<model::Graph> Model::build_graph(model::BatchShape shape) const {
  return model::build_decoder(hparams_, weights_, shape);
}

Result<Session> Session::create(const Model& model, backend::Backend& backend, int64_t n_ctx, DType cache_type) {
  const model::HParams& hp = model.hparams();
  if (n_ctx < 1 || n_ctx > hp.n_ctx_train) {
    return Error{"context of " + std::to_string(n_ctx) + " tokens: the model allows 1.." +
                 std::to_string(hp.n_ctx_train)};
  }
  GUFO_ASSIGN_OR_RETURN(
      std::unique_ptr<backend::KvCache> cache,
      backend.create_kv_cache(
          {.n_layer = hp.n_layer, .n_embd_kv = hp.n_embd_kv(), .n_ctx = n_ctx, .n_seq = 1, .type = cache_type}));
  return Session(model, backend, std::move(cache));
}

Status Session::run(std::span<const int32_t> tokens, bool all_logits, const backend::ForwardOutputs& outputs) {
  if (tokens.empty()) return Error{"eval: no tokens"};
  if (n_past_ + static_cast<int64_t>(tokens.size()) > cache_->spec().n_ctx) {
    return Error{"context full: " + std::to_string(n_past_) + " + " + std::to_string(tokens.size()) +
                 " tokens exceed the context of " + std::to_string(cache_->spec().n_ctx)};
  }
  const backend::Batch batch = backend::Batch::sequence(tokens, n_past_, all_logits);
  GUFO_ASSIGN_OR_RETURN(
      model::Graph graph,
      model_->build_graph({.n_tokens = batch.n_tokens(), .n_outputs = static_cast<int64_t>(batch.output_rows.size())}));
  GUFO_RETURN_IF_ERROR(backend_->forward(graph, batch, *cache_, outputs));
  n_past_ += static_cast<int32_t>(tokens.size());
  return {};
}

Result<std::vector<float>> Session::eval(std::span<const int32_t> tokens, bool all_logits) {
  const size_t n_rows = all_logits ? tokens.size() : 1;
  std::vector<float> logits(n_rows * static_cast<size_t>(model_->hparams().n_vocab));
  GUFO_RETURN_IF_ERROR(run(tokens, all_logits, {.logits = logits, .argmax = {}}));
  return logits;
}

Result<int32_t> Session::eval_greedy(std::span<const int32_t> tokens) {
  int32_t token = 0;
  GUFO_RETURN_IF_ERROR(run(tokens, false, {.logits = {}, .argmax = std::span<int32_t>(&token, 1)}));
  return token;
}

void Session::rewind(int32_t n) {
  if (n < 0 || n > n_past_) return;
  cache_->truncate(0, n);
  n_past_ = n;
}

Status Session::save_positions(int32_t n, const backend::KvCache::LayerSink& sink) const {
  if (n < 0 || n > n_past_) {
    return Error{"session: " + std::to_string(n) + " positions to save; it holds " + std::to_string(n_past_)};
  }
  return cache_->read_positions(0, n, sink);
}

Status Session::restore_positions(int32_t n, const backend::KvCache::LayerSource& source) {
  n_past_ = 0;
  cache_->truncate(0, 0);
  GUFO_RETURN_IF_ERROR(cache_->write_positions(0, n, source));
  n_past_ = n;
  return {};
}

}  // namespace gufo::engine
