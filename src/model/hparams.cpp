// Hyper-parameters from GGUF metadata (see hparams.h).
#include "model/hparams.h"

#include <cmath>
#include <string>

namespace gufo::model {

Result<Arch> arch_from_name(std::string_view name) {
  if (name == "qwen3") return Arch::Qwen3;
  if (name == "llama") return Arch::Llama;
  if (name == "qwen2") return Arch::Qwen2;
  if (name == "qwen3moe") return Arch::Qwen3Moe;
  return Error{"unsupported architecture '" + std::string(name) + "' (supported: qwen3, llama, qwen2, qwen3moe)"};
}

std::string_view arch_name(Arch arch) {
  switch (arch) {
    case Arch::Qwen3:
      return "qwen3";
    case Arch::Llama:
      return "llama";
    case Arch::Qwen2:
      return "qwen2";
    case Arch::Qwen3Moe:
      return "qwen3moe";
  }
  return "?";
}

namespace {

// Counts are stored as u32 by the ecosystem's writers, sometimes as other integer types.
Result<int64_t> get_count(const gguf::File& file, const std::string& key) {
  GUFO_ASSIGN_OR_RETURN(const gguf::Value* value, file.get(key));
  if (auto v = file.get_u32(key); v.ok()) return static_cast<int64_t>(*v);
  if (auto v = file.get_i32(key); v.ok()) return static_cast<int64_t>(*v);
  if (auto v = file.get_u64(key); v.ok() && *v <= (uint64_t{1} << 40)) return static_cast<int64_t>(*v);
  if (auto v = file.get_i64(key); v.ok()) return *v;
  (void)value;
  return Error{file.name() + ": " + key + ": expected an integer"};
}

Result<float> get_float(const gguf::File& file, const std::string& key, float fallback) {
  if (!file.has(key)) return fallback;
  if (auto v = file.get_f32(key); v.ok()) return *v;
  if (auto v = file.get_f64(key); v.ok()) return static_cast<float>(*v);
  return Error{file.name() + ": " + key + ": expected a float"};
}

Status check_range(const gguf::File& file, const std::string& key, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi) {
    return Error{file.name() + ": " + key + " is " + std::to_string(value) + ", expected " + std::to_string(lo) + ".." +
                 std::to_string(hi)};
  }
  return {};
}

// The expert counts of a mixture-of-experts architecture; all required, as in llama.cpp.
Status load_moe(const gguf::File& file, const std::string& p, HParams& hp) {
  GUFO_ASSIGN_OR_RETURN(hp.n_expert, get_count(file, p + "expert_count"));
  GUFO_ASSIGN_OR_RETURN(hp.n_expert_used, get_count(file, p + "expert_used_count"));
  GUFO_ASSIGN_OR_RETURN(hp.n_ff_exp, get_count(file, p + "expert_feed_forward_length"));
  GUFO_RETURN_IF_ERROR(check_range(file, p + "expert_count", hp.n_expert, 1, 4096));
  GUFO_RETURN_IF_ERROR(check_range(file, p + "expert_used_count", hp.n_expert_used, 1, hp.n_expert));
  GUFO_RETURN_IF_ERROR(check_range(file, p + "expert_feed_forward_length", hp.n_ff_exp, 1, 1 << 22));
  // NOTE(moe): written by gufo convert only; llama.cpp's qwen3moe always renormalizes.
  if (file.has(p + "expert_weights_norm")) {
    auto norm = file.get_bool(p + "expert_weights_norm");
    if (!norm.ok()) return Error{file.name() + ": " + p + "expert_weights_norm: expected a bool"};
    hp.expert_weights_norm = *norm;
  }
  return {};
}

// llama.cpp writes {arch}.pooling_type as uint32 (convert_hf_to_gguf, and llama-quantize's
// --override-kv KEY=int:N). NOTE(pooling): another type or an unknown value is a malformed
// file, refused at load like any other bad key (naming it), even for generation, which does
// not pool; `gufo quantize --override-kv` mends it.
Status load_pooling(const gguf::File& file, const std::string& key, HParams& hp) {
  if (!file.has(key)) return {};
  auto value = file.get_u32(key);
  if (!value.ok()) return Error{file.name() + ": " + key + ": expected a uint32"};
  if (*value > static_cast<uint32_t>(Pooling::Rank)) {
    return Error{file.name() + ": " + key + ": " + std::to_string(*value) +
                 " is not a pooling type (0 none, 1 mean, 2 cls, 3 last, 4 rank)"};
  }
  hp.pooling = static_cast<Pooling>(*value);
  return {};
}

}  // namespace

Result<HParams> load_hparams(const gguf::File& file) {
  HParams hp;
  GUFO_ASSIGN_OR_RETURN(std::string_view arch, file.get_string("general.architecture"));
  hp.arch_name = std::string(arch);
  auto parsed = arch_from_name(arch);
  if (!parsed.ok()) return Error{file.name() + ": general.architecture: " + parsed.error().message};
  hp.arch = *parsed;
  const std::string p = hp.arch_name + ".";

  GUFO_ASSIGN_OR_RETURN(hp.n_ctx_train, get_count(file, p + "context_length"));
  GUFO_ASSIGN_OR_RETURN(hp.n_embd, get_count(file, p + "embedding_length"));
  GUFO_ASSIGN_OR_RETURN(hp.n_layer, get_count(file, p + "block_count"));
  if (hp.arch == Arch::Qwen3Moe) GUFO_RETURN_IF_ERROR(load_moe(file, p, hp));
  // A MoE model has no dense FFN, so its feed_forward_length is informative only.
  if (hp.is_moe() && !file.has(p + "feed_forward_length")) {
    hp.n_ff = hp.n_ff_exp;
  } else {
    GUFO_ASSIGN_OR_RETURN(hp.n_ff, get_count(file, p + "feed_forward_length"));
  }
  GUFO_ASSIGN_OR_RETURN(hp.n_head, get_count(file, p + "attention.head_count"));
  hp.n_head_kv = hp.n_head;
  if (file.has(p + "attention.head_count_kv")) {
    GUFO_ASSIGN_OR_RETURN(hp.n_head_kv, get_count(file, p + "attention.head_count_kv"));
  }
  GUFO_RETURN_IF_ERROR(check_range(file, p + "context_length", hp.n_ctx_train, 1, 1 << 24));
  GUFO_RETURN_IF_ERROR(check_range(file, p + "embedding_length", hp.n_embd, 1, 1 << 20));
  GUFO_RETURN_IF_ERROR(check_range(file, p + "block_count", hp.n_layer, 1, 4096));
  GUFO_RETURN_IF_ERROR(check_range(file, p + "feed_forward_length", hp.n_ff, 1, 1 << 22));
  GUFO_RETURN_IF_ERROR(check_range(file, p + "attention.head_count", hp.n_head, 1, 4096));
  GUFO_RETURN_IF_ERROR(check_range(file, p + "attention.head_count_kv", hp.n_head_kv, 1, hp.n_head));
  if (hp.n_head % hp.n_head_kv != 0) {
    return Error{file.name() + ": attention.head_count " + std::to_string(hp.n_head) +
                 " is not a multiple of attention.head_count_kv " + std::to_string(hp.n_head_kv)};
  }
  if (file.has(p + "attention.key_length")) {
    GUFO_ASSIGN_OR_RETURN(hp.head_dim, get_count(file, p + "attention.key_length"));
    if (file.has(p + "attention.value_length")) {
      GUFO_ASSIGN_OR_RETURN(int64_t value_length, get_count(file, p + "attention.value_length"));
      if (value_length != hp.head_dim) {
        return Error{file.name() + ": attention.value_length " + std::to_string(value_length) +
                     " differs from attention.key_length " + std::to_string(hp.head_dim)};
      }
    }
  } else {
    if (hp.n_embd % hp.n_head != 0) {
      return Error{file.name() + ": embedding_length is not a multiple of attention.head_count"};
    }
    hp.head_dim = hp.n_embd / hp.n_head;
  }
  GUFO_RETURN_IF_ERROR(check_range(file, p + "attention.key_length", hp.head_dim, 2, 1024));
  if (hp.head_dim % 2 != 0) return Error{file.name() + ": head dimension must be even for RoPE"};

  GUFO_ASSIGN_OR_RETURN(hp.rms_eps, get_float(file, p + "attention.layer_norm_rms_epsilon", 1e-6f));
  GUFO_ASSIGN_OR_RETURN(hp.rope_theta, get_float(file, p + "rope.freq_base", 10000.0f));
  if (!(hp.rms_eps > 0.0f) || !(hp.rope_theta > 0.0f) || !std::isfinite(hp.rope_theta)) {
    return Error{file.name() + ": layer_norm_rms_epsilon and rope.freq_base must be positive"};
  }

  GUFO_ASSIGN_OR_RETURN(const gguf::TensorInfo* embd, file.get_tensor("token_embd.weight"));
  if (embd->n_dims != 2 || static_cast<int64_t>(embd->ne[0]) != hp.n_embd) {
    return Error{file.name() + ": token_embd.weight must be [" + std::to_string(hp.n_embd) + ", n_vocab]"};
  }
  hp.n_vocab = static_cast<int64_t>(embd->ne[1]);
  hp.tied_output = file.find_tensor("output.weight") == nullptr;
  GUFO_RETURN_IF_ERROR(load_pooling(file, p + "pooling_type", hp));
  return hp;
}

std::string_view pooling_name(Pooling pooling) {
  switch (pooling) {
    case Pooling::None:
      return "none";
    case Pooling::Mean:
      return "mean";
    case Pooling::Cls:
      return "cls";
    case Pooling::Last:
      return "last";
    case Pooling::Rank:
      return "rank";
  }
  return "unknown";
}

}  // namespace gufo::model
