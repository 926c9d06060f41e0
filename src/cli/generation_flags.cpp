// Flags and model loading shared by `gufo run` and `gufo chat` (see generation_flags.h).
#include "cli/generation_flags.h"

#include "cli/default_model.h"

namespace gufo::cli {

void add_sampler_flags(CLI::App& app, engine::SamplerParams& params) {
  app.add_option("--temp", params.temperature, "temperature (0: greedy)");
  app.add_option("--top-k", params.top_k, "top-k (0: off)");
  app.add_option("--top-p", params.top_p, "top-p (1: off)");
  app.add_option("--min-p", params.min_p, "min-p (0: off)");
  app.add_option("--repeat-penalty", params.repeat_penalty, "repetition penalty (1: off)");
  app.add_option("--presence-penalty", params.presence_penalty, "presence penalty (0: off)");
  app.add_option("--frequency-penalty", params.frequency_penalty, "frequency penalty (0: off)");
  app.add_option("--repeat-last-n", params.penalty_last_n, "tokens the penalties look back on");
  app.add_option("-s,--seed", params.seed, "random seed (same seed, same output)");
}

Result<GenerationModel> load_generation_model(const std::string& model_path, ChosenBackend& chosen) {
  GUFO_ASSIGN_OR_RETURN(const std::string path, model_or_default(model_path));
  GenerationModel loaded;
  GUFO_ASSIGN_OR_RETURN(loaded.model, load_model(chosen, path));
  GUFO_ASSIGN_OR_RETURN(tokenizer::Tokenizer tok, tokenizer::Tokenizer::load(loaded.model->file()));
  if (tok.vocab().n_vocab() > loaded.model->hparams().n_vocab) {
    return Error{path + ": the tokenizer has " + std::to_string(tok.vocab().n_vocab()) + " tokens but the model only " +
                 std::to_string(loaded.model->hparams().n_vocab)};
  }
  loaded.tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(tok));
  return loaded;
}

}  // namespace gufo::cli
