// Embeddings through the continuous-batching engine (Scheduler::submit_embeddings) on a tiny
// converted model (f32 weights and cache). The oracle is the model's own final hidden state,
// computed here in one plain forward of the whole input (a GraphOutput::Hidden graph) and
// pooled by the definition of each pooling. Whatever the engine does to a sequence (prompts
// cut into small steps, batch-mates generating beside it, preemption, a cached prefix), the
// pooled vector must be those same bits.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "engine/scheduler.h"
#include "gguf/file.h"
#include "model/hparams.h"
#include "tests/unit/common/tiny_model.h"
#include "tests/unit/engine/requests.h"

namespace gufo::engine {
namespace {

using namespace std::chrono_literals;
using model::Pooling;

std::vector<int32_t> tokens_of(int n, int salt) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) t[static_cast<size_t>(i)] = (i * 29 + salt * 13 + 5) % 250 + 4;
  return t;
}

class EmbeddingTest : public test::EngineTest {
 protected:
  // The final hidden state of every token of `tokens`, in one forward on a fresh cache. The
  // backend runs one forward at a time: call it only while no scheduler is computing.
  std::vector<std::vector<float>> hidden_rows(const std::vector<int32_t>& tokens) {
    const model::HParams& hp = tiny.model->hparams();
    const auto n = static_cast<int64_t>(tokens.size());
    auto cache = tiny.cpu.create_kv_cache(
        {.n_layer = hp.n_layer, .n_embd_kv = hp.n_embd_kv(), .n_ctx = n, .n_seq = 1, .type = DType::F32});
    EXPECT_TRUE(cache.ok());
    auto graph = tiny.model->build_graph({.n_tokens = n, .n_outputs = n, .output = model::GraphOutput::Hidden});
    EXPECT_TRUE(graph.ok()) << graph.error().message;
    std::vector<float> values(static_cast<size_t>(n * hp.n_embd));
    const Status s =
        tiny.cpu.forward(*graph, backend::Batch::sequence(tokens, 0, true), **cache, {.logits = values, .argmax = {}});
    EXPECT_TRUE(s.ok()) << s.error().message;
    std::vector<std::vector<float>> rows;
    for (int64_t r = 0; r < n; ++r) {
      rows.emplace_back(values.begin() + r * hp.n_embd, values.begin() + (r + 1) * hp.n_embd);
    }
    return rows;
  }

  // Pooling by its definition: the mean of the rows (summed in position order), the first
  // row, or the last.
  std::vector<float> expected(const std::vector<int32_t>& tokens, Pooling pooling) {
    const std::vector<std::vector<float>> rows = hidden_rows(tokens);
    if (pooling == Pooling::Cls) return rows.front();
    if (pooling == Pooling::Last) return rows.back();
    std::vector<double> sum(rows.front().size(), 0.0);
    for (const auto& row : rows) {
      for (size_t i = 0; i < row.size(); ++i) sum[i] += static_cast<double>(row[i]);
    }
    std::vector<float> mean;
    for (double v : sum) mean.push_back(static_cast<float>(v / static_cast<double>(rows.size())));
    return mean;
  }

  // Every input's vector, by input index; fails the test on an error.
  static std::vector<RequestEvent> collect(const RequestHandle& handle, size_t n) {
    std::vector<RequestEvent> done(n);
    for (size_t seen = 0; seen < n;) {
      std::optional<RequestEvent> e = handle->next(30s);
      if (!e) {
        ADD_FAILURE() << "timed out";
        break;
      }
      if (e->kind == RequestEvent::Kind::Error) {
        ADD_FAILURE() << e->error;
        break;
      }
      if (e->kind == RequestEvent::Kind::Done) {
        done[static_cast<size_t>(e->choice)] = *e;
        ++seen;
      }
    }
    return done;
  }
};

TEST_F(EmbeddingTest, EachPoolingGivesItsDefinitionOverTheHiddenStates) {
  auto s = make({.n_parallel = 2, .n_ctx = 128, .block_size = 4});
  const std::vector<std::vector<int32_t>> inputs = {tokens_of(1, 1), tokens_of(9, 2), tokens_of(40, 3)};
  for (Pooling pooling : {Pooling::Mean, Pooling::Cls, Pooling::Last}) {
    Submission sub = s->submit_embeddings(inputs, pooling);
    ASSERT_EQ(sub.status, SubmitStatus::Accepted) << sub.message;
    const std::vector<RequestEvent> done = collect(sub.handle, inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      EXPECT_EQ(done[i].embedding, expected(inputs[i], pooling)) << model::pooling_name(pooling) << " input " << i;
      EXPECT_EQ(done[i].prompt_tokens, static_cast<int32_t>(inputs[i].size()));
      EXPECT_EQ(done[i].completion_tokens, 0);
    }
  }
  EXPECT_EQ(s->stats().kv_blocks_used, 0);
}

TEST_F(EmbeddingTest, SmallStepsPreemptionAndGenerationsBesideChangeNoBit) {
  const std::vector<std::vector<int32_t>> inputs = {tokens_of(37, 4), tokens_of(23, 5), tokens_of(30, 6)};
  std::vector<std::vector<float>> want_mean,
      want_last;  // now: the generation below keeps the backend busy
  for (const auto& input : inputs) {
    want_mean.push_back(expected(input, Pooling::Mean));
    want_last.push_back(expected(input, Pooling::Last));
  }
  // Prompts in 3-token steps, 64 positions for three sequences of up to 37, a generation
  // decoding beside them. Embeddings take all their blocks when admitted, so only the growing
  // generation preempts, and only if the embeddings came in before it had grown: tried until
  // a preemption is seen (the vectors are checked every time).
  RequestOptions greedy;
  greedy.max_tokens = 20;
  greedy.sampler.temperature = 0.0f;
  uint64_t preemptions = 0;
  for (int attempt = 0; attempt < 20 && preemptions == 0; ++attempt) {
    auto s =
        make({.n_parallel = 3, .n_ctx = 64, .kv_tokens = 64, .block_size = 4, .step_tokens = 5, .prefix_cache = false});
    Submission generation = s->submit(tokens_of(12, 7), {greedy});
    for (Pooling pooling : {Pooling::Mean, Pooling::Last}) {
      Submission sub = s->submit_embeddings(inputs, pooling);
      ASSERT_EQ(sub.status, SubmitStatus::Accepted) << sub.message;
      const std::vector<RequestEvent> done = collect(sub.handle, inputs.size());
      for (size_t i = 0; i < inputs.size(); ++i) {
        EXPECT_EQ(done[i].embedding, (pooling == Pooling::Mean ? want_mean : want_last)[i])
            << model::pooling_name(pooling) << " input " << i;
      }
    }
    preemptions = s->stats().preemptions;
    generation.handle->cancel();
  }
  EXPECT_GT(preemptions, 0u);
}

TEST_F(EmbeddingTest, LastPoolingReusesACachedPrefixWithTheSameVector) {
  auto s = make({.n_parallel = 1, .n_ctx = 128, .block_size = 4});
  const std::vector<int32_t> input = tokens_of(30, 8);
  const RequestEvent first = collect(s->submit_embeddings({input}, Pooling::Last).handle, 1)[0];
  const RequestEvent again = collect(s->submit_embeddings({input}, Pooling::Last).handle, 1)[0];
  EXPECT_EQ(first.cached_tokens, 0);
  EXPECT_EQ(again.cached_tokens, 29);  // every token but the last: 7 whole blocks and a tail
  EXPECT_EQ(again.embedding, first.embedding);
  EXPECT_EQ(first.embedding, expected(input, Pooling::Last));
  // Mean needs every row: it never starts from the cache.
  const RequestEvent mean = collect(s->submit_embeddings({input}, Pooling::Mean).handle, 1)[0];
  EXPECT_EQ(mean.cached_tokens, 0);
  EXPECT_EQ(mean.embedding, expected(input, Pooling::Mean));
}

TEST_F(EmbeddingTest, RefusesWhatGivesNoEmbedding) {
  auto s = make({.n_parallel = 1, .n_ctx = 32, .max_queue = 0});
  EXPECT_EQ(s->submit_embeddings({tokens_of(4, 1)}, Pooling::None).status, SubmitStatus::Invalid);
  EXPECT_EQ(s->submit_embeddings({tokens_of(4, 1)}, Pooling::Rank).status, SubmitStatus::Invalid);
  EXPECT_EQ(s->submit_embeddings({}, Pooling::Mean).status, SubmitStatus::Invalid);
  const Submission empty = s->submit_embeddings({tokens_of(4, 1), {}}, Pooling::Mean);
  EXPECT_EQ(empty.status, SubmitStatus::Invalid);
  EXPECT_EQ(empty.message, "input 1 has no tokens");
  const Submission too_long = s->submit_embeddings({tokens_of(33, 1)}, Pooling::Mean);
  EXPECT_EQ(too_long.status, SubmitStatus::TooLong);
  EXPECT_EQ(too_long.message, "the input has 33 tokens; the context holds 32");
  // The context may be filled: an embedding generates nothing after it.
  const Submission full = s->submit_embeddings({tokens_of(32, 1)}, Pooling::Last);
  ASSERT_EQ(full.status, SubmitStatus::Accepted);
  const RequestEvent filled = collect(full.handle, 1)[0];  // before expected(): one forward at a time on tiny.cpu
  EXPECT_EQ(filled.embedding, expected(tokens_of(32, 1), Pooling::Last));
}

TEST_F(EmbeddingTest, ABatchTakesOnePlaceInTheQueue) {
  // One running sequence and two queue places: a long batch takes one of them while it
  // drains, so one generation still gets in and the next is refused.
  auto s = make({.n_parallel = 1, .n_ctx = 32, .max_queue = 2});
  const Submission batch =
      s->submit_embeddings(std::vector<std::vector<int32_t>>(200, tokens_of(31, 2)), Pooling::Mean);
  ASSERT_EQ(batch.status, SubmitStatus::Accepted);
  while (s->stats().running == 0) std::this_thread::sleep_for(1ms);  // its first input runs
  RequestOptions one;
  one.max_tokens = 1;
  const Submission chat = s->submit(tokens_of(8, 3), {one});
  EXPECT_EQ(chat.status, SubmitStatus::Accepted) << chat.message;
  const Submission refused = s->submit(tokens_of(8, 4), {one});
  EXPECT_EQ(refused.status, SubmitStatus::QueueFull);
  EXPECT_EQ(collect(batch.handle, 200).size(), 200u);
  const Submission later = s->submit(tokens_of(8, 5), {one});
  EXPECT_EQ(later.status, SubmitStatus::Accepted) << later.message;
  s->shutdown();
}

TEST_F(EmbeddingTest, ShutdownEndsQueuedInputsAsCancelledWithoutAVector) {
  auto s = make({.n_parallel = 1, .n_ctx = 32});
  const Submission batch =
      s->submit_embeddings(std::vector<std::vector<int32_t>>(300, tokens_of(31, 6)), Pooling::Last);
  ASSERT_EQ(batch.status, SubmitStatus::Accepted);
  s->shutdown();
  int cancelled = 0;
  for (std::optional<RequestEvent> e; (e = batch.handle->next(1s));) {
    ASSERT_EQ(e->kind, RequestEvent::Kind::Done);
    if (e->reason == StopReason::Cancelled) {
      ++cancelled;
      EXPECT_TRUE(e->embedding.empty());
    } else {
      EXPECT_EQ(e->embedding.size(), static_cast<size_t>(tiny.model->hparams().n_embd));
    }
  }
  EXPECT_GT(cancelled, 0);
}

// {arch}.pooling_type as llama.cpp writes it (uint32; `gufo quantize --override-kv K=int:N`):
// mean when absent, every defined value read, anything else refused naming the key.
TEST(Pooling, ReadFromTheGgufAsLlamaCppWritesIt) {
  const std::string base = testing::convert_tiny_model("tiny-qwen3", "f32");
  const auto with = [&](const std::string& override_kv) -> Result<model::HParams> {
    const std::string out = testing::process_temp_path("gufo_pooling", ".gguf").string();
    const std::string command = std::string(GUFO_BINARY) + " quantize '" + base + "' '" + out + "' q8_0 --quiet" +
                                (override_kv.empty() ? "" : " --override-kv " + override_kv);
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    auto file = gguf::File::open(out);
    EXPECT_TRUE(file.ok());
    return model::load_hparams(*file);
  };
  EXPECT_EQ(with("")->pooling, Pooling::Mean);
  EXPECT_EQ(with("qwen3.pooling_type=int:0")->pooling, Pooling::None);
  EXPECT_EQ(with("qwen3.pooling_type=int:2")->pooling, Pooling::Cls);
  EXPECT_EQ(with("qwen3.pooling_type=int:3")->pooling, Pooling::Last);
  const auto unknown = with("qwen3.pooling_type=int:5");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("qwen3.pooling_type: 5 is not a pooling type"), std::string::npos)
      << unknown.error().message;
  const auto text = with("qwen3.pooling_type=str:last");
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.error().message.find("qwen3.pooling_type: expected a uint32"), std::string::npos)
      << text.error().message;
}

}  // namespace
}  // namespace gufo::engine
