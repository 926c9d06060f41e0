// synth_model (see synth_model.h): plan the tensors of the config (convert's names and
// order), set convert's metadata plus the synthetic tokenizer, then stream each tensor
// through gguf::Writer, rows generated and encoded on all cores.
// Tested by tests/unit/quantize/synth_test.cpp.
#include "quantize/synth_model.h"

#include <cmath>
#include <memory>
#include <vector>

#include "convert/hf_convert.h"
#include "convert/tensor_transform.h"
#include "core/fnv1a.h"
#include "gguf/writer.h"
#include "quant/quant.h"
#include "quantize/fast_q4_k.h"
#include "quantize/parallel_rows.h"
#include "quantize/synth_shapes.h"
#include "quantize/synth_vocab.h"

namespace gufo::quantize {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

// splitmix64's output function (Steele, Lea, Flood 2014): a bijective 64-bit mix.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t row_key(uint64_t seed, std::string_view name, uint64_t row_idx) {
  return mix64(mix64(seed ^ fnv1a_64(name)) + (row_idx + 1) * kGolden);
}

// NOTE(synth): sqrt(3) turns the sum of four U(0,1) (variance 1/3) into variance 1.
constexpr float kSqrt3 = 1.7320508f;

float unit_value(uint64_t key, uint64_t index) {
  const uint64_t bits = mix64(key + (index + 1) * kGolden);
  const float sum =
      static_cast<float>((bits & 0xFFFF) + ((bits >> 16) & 0xFFFF) + ((bits >> 32) & 0xFFFF) + (bits >> 48)) *
      (1.0f / 65536.0f);
  return (sum - 2.0f) * kSqrt3;
}

// How a tensor's values are drawn.
enum class ValueKind { Weight, Norm, RopeFreqs };

struct SynthTensor {
  std::string name;
  std::vector<uint64_t> ne;  // ne0 first
  ValueKind kind = ValueKind::Weight;
};

// convert's tensor list for a qwen3/qwen3moe/llama config (hf_convert.cpp Planner::plan).
std::vector<SynthTensor> plan_tensors(const convert::HfConfig& c) {
  const uint64_t q_rows = static_cast<uint64_t>(c.n_head) * c.head_dim;
  const uint64_t kv_rows = static_cast<uint64_t>(c.n_head_kv) * c.head_dim;
  std::vector<SynthTensor> tensors;
  tensors.push_back({"token_embd.weight", {c.n_embd, c.n_vocab}, ValueKind::Weight});
  if (c.arch == convert::Arch::Llama && c.rope_scaling.type == "llama3") {
    tensors.push_back({"rope_freqs.weight", {c.head_dim / 2}, ValueKind::RopeFreqs});
  }
  for (uint32_t layer_idx = 0; layer_idx < c.n_layer; ++layer_idx) {
    const std::string blk = "blk." + std::to_string(layer_idx) + ".";
    tensors.push_back({blk + "attn_norm.weight", {c.n_embd}, ValueKind::Norm});
    tensors.push_back({blk + "attn_q.weight", {c.n_embd, q_rows}, ValueKind::Weight});
    tensors.push_back({blk + "attn_k.weight", {c.n_embd, kv_rows}, ValueKind::Weight});
    tensors.push_back({blk + "attn_v.weight", {c.n_embd, kv_rows}, ValueKind::Weight});
    tensors.push_back({blk + "attn_output.weight", {q_rows, c.n_embd}, ValueKind::Weight});
    if (c.arch == convert::Arch::Qwen3 || c.arch == convert::Arch::Qwen3Moe) {
      tensors.push_back({blk + "attn_q_norm.weight", {c.head_dim}, ValueKind::Norm});
      tensors.push_back({blk + "attn_k_norm.weight", {c.head_dim}, ValueKind::Norm});
    }
    tensors.push_back({blk + "ffn_norm.weight", {c.n_embd}, ValueKind::Norm});
    if (c.arch == convert::Arch::Qwen3Moe) {
      // The router, then the experts stacked on the outermost axis (hf_convert.cpp plan_moe).
      tensors.push_back({blk + "ffn_gate_inp.weight", {c.n_embd, c.n_expert}, ValueKind::Weight});
      tensors.push_back({blk + "ffn_gate_exps.weight", {c.n_embd, c.n_ff_exp, c.n_expert}, ValueKind::Weight});
      tensors.push_back({blk + "ffn_up_exps.weight", {c.n_embd, c.n_ff_exp, c.n_expert}, ValueKind::Weight});
      tensors.push_back({blk + "ffn_down_exps.weight", {c.n_ff_exp, c.n_embd, c.n_expert}, ValueKind::Weight});
      continue;
    }
    tensors.push_back({blk + "ffn_gate.weight", {c.n_embd, c.n_ff}, ValueKind::Weight});
    tensors.push_back({blk + "ffn_up.weight", {c.n_embd, c.n_ff}, ValueKind::Weight});
    tensors.push_back({blk + "ffn_down.weight", {c.n_ff, c.n_embd}, ValueKind::Weight});
  }
  tensors.push_back({"output_norm.weight", {c.n_embd}, ValueKind::Norm});
  if (!c.tie_word_embeddings) {
    tensors.push_back({"output.weight", {c.n_embd, c.n_vocab}, ValueKind::Weight});
  }
  return tensors;
}

// NOTE(synth): std 0.02 is the initializer_range of these configs and close to the spread
// of trained projection weights; RMSNorm gains of trained models sit around 1.
constexpr float kWeightStd = 0.02f;
constexpr float kNormStd = 0.02f;

Status fill_tensor(const SynthTensor& tensor, DType type, uint64_t seed, const std::vector<float>& rope_freqs,
                   unsigned n_threads, std::span<std::byte> out) {
  const uint64_t row_elems = tensor.ne[0];
  uint64_t n_rows = 1;
  for (size_t dim = 1; dim < tensor.ne.size(); ++dim) n_rows *= tensor.ne[dim];
  const uint64_t row_bytes = dtype_row_bytes(dtype_info(type), row_elems);
  return for_each_row_chunk(n_rows, n_threads, [&](uint64_t first_row, uint64_t last_row) -> Status {
    std::vector<float> row(row_elems);
    for (uint64_t row_idx = first_row; row_idx < last_row; ++row_idx) {
      const uint64_t key = row_key(seed, tensor.name, row_idx);
      for (uint64_t i = 0; i < row_elems; ++i) {
        switch (tensor.kind) {
          case ValueKind::Weight:
            row[i] = kWeightStd * unit_value(key, i);
            break;
          case ValueKind::Norm:
            row[i] = 1.0f + kNormStd * unit_value(key, i);
            break;
          case ValueKind::RopeFreqs:
            row[i] = rope_freqs[i];
            break;
        }
      }
      std::byte* dst = out.data() + row_idx * row_bytes;
      if (type == DType::Q4_K) {
        encode_q4_k_fast(row.data(), static_cast<int64_t>(row_elems), dst);
        continue;
      }
      GUFO_RETURN_IF_ERROR(quant::quantize_row(type, row.data(), static_cast<int64_t>(row_elems), dst, row_bytes));
    }
    return ok_status();
  });
}

}  // namespace

float synth_unit_value(uint64_t seed, std::string_view name, uint64_t row_idx, uint64_t index) {
  return unit_value(row_key(seed, name, row_idx), index);
}

Status synth_model(const SynthOptions& options, const std::string& out_path) {
  GUFO_ASSIGN_OR_RETURN(convert::HfConfig config, synth_config(options.arch, options.shape));
  if (options.n_layer) {
    if (*options.n_layer == 0 || *options.n_layer > config.n_layer) {
      return Error{"synth: --layers " + std::to_string(*options.n_layer) + ": expected 1.." +
                   std::to_string(config.n_layer) + " for " + options.arch + " " + options.shape};
    }
    config.n_layer = *options.n_layer;
  }
  if (options.n_vocab) {
    if (*options.n_vocab < kMinSynthVocab || *options.n_vocab > config.n_vocab) {
      return Error{"synth: --vocab " + std::to_string(*options.n_vocab) + ": expected " +
                   std::to_string(kMinSynthVocab) + ".." + std::to_string(config.n_vocab) + " for " + options.arch +
                   " " + options.shape};
    }
    config.n_vocab = *options.n_vocab;
  }
  const std::vector<SynthTensor> tensors = plan_tensors(config);
  ModelFacts facts;
  facts.n_layer = config.n_layer;
  facts.n_expert = config.n_expert;
  facts.has_output = !config.tie_word_embeddings;
  facts.is_70b_class = is_70b_class(config.gguf_arch, config.n_layer, config.n_head, config.n_head_kv);

  gguf::Writer writer;
  const std::string model_name = "synth-" + options.arch + "-" + options.shape;
  convert::set_gguf_model_metadata(writer, config, model_name, DType::F32);
  writer.set("general.file_type", gguf::Value::u32(output_file_type(options.type)));
  writer.set("general.description",
             gguf::Value::string("random weights: gufo synth --seed " + std::to_string(options.seed)));
  add_synth_tokenizer(writer, config);

  auto rope_freqs = std::make_shared<std::vector<float>>();
  if (config.arch == convert::Arch::Llama && config.rope_scaling.type == "llama3") {
    *rope_freqs = convert::llama3_rope_factors(config);
  }
  const unsigned n_threads = resolve_thread_count(options.n_threads);
  const size_t n_tensors = tensors.size();
  for (size_t i = 0; i < n_tensors; ++i) {
    gguf::TensorSpec spec;
    spec.name = tensors[i].name;
    spec.type = choose_output_tensor_type(options.type, facts, tensors[i].name, tensors[i].ne);
    spec.shape = tensors[i].ne;
    spec.fill = [tensor = tensors[i], type = spec.type, seed = options.seed, rope_freqs, n_threads,
                 progress = options.progress, i, n_tensors](std::span<std::byte> out) -> Status {
      if (progress != nullptr) {
        std::fprintf(progress, "[%zu/%zu] %s: %s\n", i + 1, n_tensors, tensor.name.c_str(),
                     std::string(dtype_info(type).name).c_str());
      }
      return fill_tensor(tensor, type, seed, *rope_freqs, n_threads, out);
    };
    writer.add_tensor(std::move(spec));
  }
  return writer.write(out_path);
}

}  // namespace gufo::quantize
