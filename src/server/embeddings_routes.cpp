// POST /v1/embeddings (see http_server.h): OpenAI's request and response shapes around the
// engine's embeddings (engine/scheduler.h, submit_embeddings). Text inputs are tokenized as
// llama.cpp does (special tokens parsed; BOS and EOS when the vocabulary asks for them);
// token-id inputs are taken as they are.
#include <httplib.h>

#include <memory>
#include <string>
#include <vector>

#include "server/access_log.h"
#include "server/data_sink.h"
#include "server/embeddings_request.h"
#include "server/embeddings_response.h"
#include "server/generation.h"
#include "server/http_server.h"
#include "server/json_text.h"

namespace gufo::server {

namespace {

std::vector<int32_t> input_tokens(const EmbeddingInput& input, const tokenizer::Tokenizer& tokenizer) {
  if (const auto* ids = std::get_if<std::vector<int32_t>>(&input)) return *ids;
  const tokenizer::Vocab& vocab = tokenizer.vocab();
  std::vector<int32_t> tokens;
  if (vocab.add_bos && vocab.bos_id >= 0) tokens.push_back(vocab.bos_id);
  const std::vector<int32_t> body = tokenizer.encode(std::get<std::string>(input), /*parse_special=*/true);
  tokens.insert(tokens.end(), body.begin(), body.end());
  if (vocab.add_eos && vocab.eos_id >= 0) tokens.push_back(vocab.eos_id);
  return tokens;
}

// The vectors as one JSON object, once every input is done; spaces before it while waiting
// find out whether the client is still there.
bool write_embeddings(httplib::DataSink& sink, const ServedModel& model, const EmbeddingsRequest& request,
                      const engine::RequestHandle& handle, int64_t prompt_tokens) {
  std::vector<std::vector<float>> vectors(request.inputs.size());
  bool cancelled = false;  // by shutdown: some inputs have no vector
  const std::optional<std::string> error = pump_events(
      handle, static_cast<int32_t>(request.inputs.size()), [&] { return write_all(sink, " "); },
      [&](engine::RequestEvent& event) {
        if (event.kind != engine::RequestEvent::Kind::Done) return true;
        if (event.reason == engine::StopReason::Cancelled) {
          cancelled = true;
        } else {
          vectors[static_cast<size_t>(event.choice)] = unit_embedding(event.embedding, request.dimensions);
        }
        return true;
      });
  if (!error) return false;
  if (!error->empty() || cancelled) {
    write_all(sink, dump(generation_failed(cancelled ? "cancelled: the server is shutting down" : *error).body()));
  } else {
    write_all(sink, dump(embeddings_json(model.name, vectors, request.base64, prompt_tokens)));
  }
  sink.done();
  return true;
}

}  // namespace

void HttpServer::embeddings(const httplib::Request& req, httplib::Response& res) {
  const std::string route = "/v1/embeddings";
  const auto fail = [&](const ApiError& error) { reply_error(res, route, error); };
  std::optional<GenerationBody> body = read_generation_body(req, res, route, ErrorShape::OpenAI, false);
  if (!body) return;
  const ServedModel* model = body->model;
  if (model->pooling != model::Pooling::Mean && model->pooling != model::Pooling::Cls &&
      model->pooling != model::Pooling::Last) {
    return fail(bad_request("the model '" + model->name + "' pools with '" +
                                std::string(model::pooling_name(model->pooling)) +
                                "', which gives no embeddings (serve it with --pooling mean, cls or last)",
                            "model", "model_not_supported"));
  }
  auto parsed =
      parse_embeddings_request(body->json, EmbeddingsLimits{.n_vocab = model->n_vocab, .n_embd = model->n_embd});
  if (auto* error = std::get_if<ApiError>(&parsed)) return fail(*error);
  auto request = std::make_shared<const EmbeddingsRequest>(std::get<EmbeddingsRequest>(std::move(parsed)));

  std::vector<std::vector<int32_t>> inputs;
  int64_t prompt_tokens = 0;
  for (const EmbeddingInput& input : request->inputs) {
    inputs.push_back(input_tokens(input, *model->tokenizer));
    prompt_tokens += static_cast<int64_t>(inputs.back().size());
  }
  auto submitted = accepted_or_error(model->scheduler->submit_embeddings(inputs, model->pooling), "input");
  if (auto* error = std::get_if<ApiError>(&submitted)) return fail(*error);
  const engine::RequestHandle handle = std::get<engine::RequestHandle>(submitted);
  if (std::optional<ApiError> failed = early_failure(handle)) return fail(*failed);

  current_access_record().prompt_tokens = prompt_tokens;
  counters_.count(route, 200);
  res.status = 200;
  res.set_chunked_content_provider("application/json", [=, holder = body->holder](size_t, httplib::DataSink& sink) {
    return write_embeddings(sink, *model, *request, handle, prompt_tokens);
  });
}

}  // namespace gufo::server
