// HF folder -> GGUF (see hf_convert.h). Names, metadata keys and per-tensor types follow
// ggml-org/llama.cpp: convert_hf_to_gguf.py (TextModel.set_gguf_parameters,
// ModelBase.prepare_tensors; LlamaModel and Qwen2/Qwen3/Qwen3Moe classes, now in
// conversion/llama.py and conversion/qwen.py) and gguf-py/gguf/{constants,tensor_mapping}.py.
// Tested by tests/unit/convert/hf_convert_test.cpp.
#include "convert/hf_convert.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "convert/hf_config.h"
#include "convert/tensor_transform.h"
#include "quant/half.h"
#include "quant/quant.h"
#include "tokenizer/hf_import.h"

namespace gufo::convert {
namespace {

using nlohmann::json;
using safetensors::TensorView;

std::string quote(const std::string& text) { return "'" + text + "'"; }

std::string shape_text(const std::vector<uint64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// Where one unit (a run of `unit_elems` contiguous elements) of an output tensor comes from.
struct UnitSource {
  const TensorView* view;
  uint64_t unit;  // index of the unit within `view`, in units of unit_elems
};

struct PlannedTensor {
  std::string name;
  std::vector<uint64_t> ne;  // GGUF order: ne[0] is the contiguous (last PyTorch) dimension
  DType type = DType::F32;
  uint64_t unit_elems = 0;                     // divides ne[0]
  std::function<UnitSource(uint64_t)> source;  // output unit -> source
  std::vector<float> values;                   // or: computed F32 values (rope_freqs)
};

// llama.cpp's LlamaFileType numbers for general.file_type (gguf-py constants.py).
uint32_t file_type_of(DType outtype) {
  switch (outtype) {
    case DType::F32:
      return 0;  // ALL_F32
    case DType::F16:
      return 1;  // MOSTLY_F16
    case DType::Q8_0:
      return 7;  // MOSTLY_Q8_0
    case DType::BF16:
      return 32;  // MOSTLY_BF16
    default:
      GUFO_CHECK(false && "outtype is checked by parse_outtype");
  }
  return 0;
}

// Elements first..first+count of a source tensor as fp32. memcpy per element: safetensors
// data may sit at any address (the header length is arbitrary).
void decode_run(DType type, const std::byte* data, uint64_t first, uint64_t count, float* out) {
  if (type == DType::F32) {
    std::memcpy(out, data + first * sizeof(float), count * sizeof(float));
    return;
  }
  const std::byte* src = data + first * sizeof(uint16_t);
  for (uint64_t i = 0; i < count; ++i) {
    uint16_t bits;
    std::memcpy(&bits, src + i * sizeof bits, sizeof bits);
    out[i] = type == DType::F16 ? quant::fp16_to_fp32(bits) : quant::bf16_to_fp32(bits);
  }
}

// Produces a planned tensor's bytes, one output row at a time: gather the row's units as
// fp32, then encode the row (quant::quantize_row: F32 copy, F16/BF16 round-to-nearest-even
// as ggml/numpy, Q8_0 as ggml's quantize_row_q8_0_ref).
Status fill_tensor(const PlannedTensor& tensor, std::span<std::byte> out) {
  const uint64_t row_elems = tensor.ne[0];
  uint64_t n_elements = 1;
  for (uint64_t extent : tensor.ne) n_elements *= extent;
  const uint64_t n_rows = n_elements / row_elems;
  const uint64_t row_bytes = dtype_row_bytes(dtype_info(tensor.type), row_elems);
  std::vector<float> row(row_elems);
  const uint64_t units_per_row = row_elems / tensor.unit_elems;
  for (uint64_t row_idx = 0; row_idx < n_rows; ++row_idx) {
    if (!tensor.values.empty()) {
      std::copy_n(tensor.values.begin() + static_cast<std::ptrdiff_t>(row_idx * row_elems), row_elems, row.begin());
    } else {
      for (uint64_t unit_idx = 0; unit_idx < units_per_row; ++unit_idx) {
        const UnitSource src = tensor.source(row_idx * units_per_row + unit_idx);
        decode_run(src.view->dtype, src.view->data.data(), src.unit * tensor.unit_elems, tensor.unit_elems,
                   row.data() + unit_idx * tensor.unit_elems);
      }
    }
    GUFO_RETURN_IF_ERROR(quant::quantize_row(tensor.type, row.data(), static_cast<int64_t>(row_elems),
                                             out.data() + row_idx * row_bytes, row_bytes));
  }
  return ok_status();
}

class Planner {
 public:
  Planner(const safetensors::Checkpoint& checkpoint, const HfConfig& config, DType outtype, std::string prefix)
      : checkpoint_(checkpoint), config_(config), outtype_(outtype), prefix_(std::move(prefix)) {}

  Result<std::vector<PlannedTensor>> plan() {
    const HfConfig& c = config_;
    const uint64_t q_rows = static_cast<uint64_t>(c.n_head) * c.head_dim;
    const uint64_t kv_rows = static_cast<uint64_t>(c.n_head_kv) * c.head_dim;
    const bool is_llama = c.arch == Arch::Llama;
    const bool has_qk_norm = c.arch == Arch::Qwen3 || c.arch == Arch::Qwen3Moe;

    GUFO_ASSIGN_OR_RETURN(const TensorView* embd, take("model.embed_tokens.weight", {c.n_vocab, c.n_embd}));
    add_plain("token_embd.weight", embd);

    // llama3 rope scaling is baked into a tensor, as LlamaModel.generate_extra_tensors does
    // (only the llama class has that hook; the base class ignores rope_type llama3).
    if (is_llama && c.rope_scaling.type == "llama3") {
      PlannedTensor freqs;
      freqs.name = "rope_freqs.weight";
      freqs.values = llama3_rope_factors(c);
      freqs.ne = {freqs.values.size()};
      freqs.type = DType::F32;
      freqs.unit_elems = 1;
      planned_.push_back(std::move(freqs));
    }

    for (uint32_t layer = 0; layer < c.n_layer; ++layer) {
      const std::string hf = "model.layers." + std::to_string(layer) + ".";
      const std::string blk = "blk." + std::to_string(layer) + ".";
      GUFO_ASSIGN_OR_RETURN(const TensorView* attn_norm, take(hf + "input_layernorm.weight", {c.n_embd}));
      add_plain(blk + "attn_norm.weight", attn_norm);

      GUFO_ASSIGN_OR_RETURN(const TensorView* q, take(hf + "self_attn.q_proj.weight", {q_rows, c.n_embd}));
      GUFO_ASSIGN_OR_RETURN(const TensorView* k, take(hf + "self_attn.k_proj.weight", {kv_rows, c.n_embd}));
      GUFO_ASSIGN_OR_RETURN(const TensorView* v, take(hf + "self_attn.v_proj.weight", {kv_rows, c.n_embd}));
      // LlamaModel.modify_tensors: permute(q, n_head, n_head), permute(k, n_head, n_head_kv)
      // (which uses n_head_kv); biases the same way. See llama_permuted_source_row.
      if (is_llama) {
        add_permuted(blk + "attn_q.weight", q, c.n_head);
        add_permuted(blk + "attn_k.weight", k, c.n_head_kv);
      } else {
        add_plain(blk + "attn_q.weight", q);
        add_plain(blk + "attn_k.weight", k);
      }
      add_plain(blk + "attn_v.weight", v);
      if (c.attention_bias) {
        GUFO_ASSIGN_OR_RETURN(const TensorView* q_bias, take(hf + "self_attn.q_proj.bias", {q_rows}));
        GUFO_ASSIGN_OR_RETURN(const TensorView* k_bias, take(hf + "self_attn.k_proj.bias", {kv_rows}));
        GUFO_ASSIGN_OR_RETURN(const TensorView* v_bias, take(hf + "self_attn.v_proj.bias", {kv_rows}));
        if (is_llama) {
          add_permuted(blk + "attn_q.bias", q_bias, c.n_head);
          add_permuted(blk + "attn_k.bias", k_bias, c.n_head_kv);
        } else {
          add_plain(blk + "attn_q.bias", q_bias);
          add_plain(blk + "attn_k.bias", k_bias);
        }
        add_plain(blk + "attn_v.bias", v_bias);
      }
      GUFO_ASSIGN_OR_RETURN(const TensorView* o, take(hf + "self_attn.o_proj.weight", {c.n_embd, q_rows}));
      add_plain(blk + "attn_output.weight", o);
      if (c.attention_bias && checkpoint_.find(hf + "self_attn.o_proj.bias") != nullptr) {
        // Llama's attention_bias also adds an o_proj bias (modeling_llama.py).
        GUFO_ASSIGN_OR_RETURN(const TensorView* o_bias, take(hf + "self_attn.o_proj.bias", {c.n_embd}));
        add_plain(blk + "attn_output.bias", o_bias);
      }
      if (has_qk_norm) {
        GUFO_ASSIGN_OR_RETURN(const TensorView* q_norm, take(hf + "self_attn.q_norm.weight", {c.head_dim}));
        GUFO_ASSIGN_OR_RETURN(const TensorView* k_norm, take(hf + "self_attn.k_norm.weight", {c.head_dim}));
        add_plain(blk + "attn_q_norm.weight", q_norm);
        add_plain(blk + "attn_k_norm.weight", k_norm);
      }

      GUFO_ASSIGN_OR_RETURN(const TensorView* ffn_norm, take(hf + "post_attention_layernorm.weight", {c.n_embd}));
      add_plain(blk + "ffn_norm.weight", ffn_norm);
      if (c.arch == Arch::Qwen3Moe) {
        GUFO_RETURN_IF_ERROR(plan_moe(hf, blk));
      } else {
        GUFO_ASSIGN_OR_RETURN(const TensorView* gate, take(hf + "mlp.gate_proj.weight", {c.n_ff, c.n_embd}));
        GUFO_ASSIGN_OR_RETURN(const TensorView* up, take(hf + "mlp.up_proj.weight", {c.n_ff, c.n_embd}));
        GUFO_ASSIGN_OR_RETURN(const TensorView* down, take(hf + "mlp.down_proj.weight", {c.n_embd, c.n_ff}));
        add_plain(blk + "ffn_gate.weight", gate);
        add_plain(blk + "ffn_up.weight", up);
        add_plain(blk + "ffn_down.weight", down);
      }
    }

    GUFO_ASSIGN_OR_RETURN(const TensorView* norm, take("model.norm.weight", {c.n_embd}));
    add_plain("output_norm.weight", norm);
    GUFO_RETURN_IF_ERROR(plan_output(embd));
    GUFO_RETURN_IF_ERROR(check_all_used());
    return std::move(planned_);
  }

 private:
  // The tensor `hf_name` with PyTorch shape `expected`, marked as used.
  Result<const TensorView*> take(const std::string& hf_name, const std::vector<uint64_t>& expected) {
    const TensorView* view = checkpoint_.find(hf_name);
    if (view == nullptr) {
      return Error{prefix_ + "tensor " + quote(hf_name) + " is missing (a " + config_.hf_arch +
                   " with this config.json needs it)"};
    }
    if (view->shape != expected) {
      return Error{prefix_ + "tensor " + quote(hf_name) + ": shape " + shape_text(view->shape) + ", expected " +
                   shape_text(expected) + " from config.json"};
    }
    used_.insert(hf_name);
    return view;
  }

  // llama.cpp's choice of type (ModelBase.prepare_tensors): 1-D tensors, *_norm.weight,
  // ffn_gate_inp (the MoE router) and anything not named *.weight (biases) stay F32; the
  // rest get the outtype. NOTE(convert): in q8_0 mode a tensor whose rows are not a whole
  // number of 32-element blocks falls back to F16, as gguf-py's quantize raising QuantError
  // makes llama.cpp do ("falling back to F16").
  DType choose_type(const std::string& name, const std::vector<uint64_t>& ne) const {
    const auto ends_with = [&](std::string_view suffix) {
      return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (ne.size() <= 1 || ends_with("_norm.weight") || ends_with("ffn_gate_inp.weight") || !ends_with(".weight")) {
      return DType::F32;
    }
    if (outtype_ == DType::Q8_0 && ne[0] % dtype_info(DType::Q8_0).block_elems != 0) return DType::F16;
    return outtype_;
  }

  // GGUF shape: PyTorch's reversed (ne0 = the contiguous last dimension); same bytes.
  static std::vector<uint64_t> ggml_shape(const std::vector<uint64_t>& torch_shape) {
    std::vector<uint64_t> ne(torch_shape.rbegin(), torch_shape.rend());
    if (ne.empty()) ne.push_back(1);
    return ne;
  }

  void add(std::string name, std::vector<uint64_t> ne, uint64_t unit_elems,
           std::function<UnitSource(uint64_t)> source) {
    PlannedTensor tensor;
    tensor.type = choose_type(name, ne);
    tensor.name = std::move(name);
    tensor.ne = std::move(ne);
    tensor.unit_elems = unit_elems;
    tensor.source = std::move(source);
    planned_.push_back(std::move(tensor));
  }

  void add_plain(const std::string& name, const TensorView* view) {
    std::vector<uint64_t> ne = ggml_shape(view->shape);
    const uint64_t row = ne[0];
    add(name, std::move(ne), row, [view](uint64_t unit) { return UnitSource{view, unit}; });
  }

  // Rows (dim 0) reordered by llama_permuted_source_row; a 1-D bias permutes its elements.
  void add_permuted(const std::string& name, const TensorView* view, uint32_t n_head) {
    std::vector<uint64_t> ne = ggml_shape(view->shape);
    const uint64_t n_rows = view->shape[0];
    const uint64_t unit = view->shape.size() == 1 ? 1 : ne[0];
    add(name, std::move(ne), unit, [view, n_rows, n_head](uint64_t out_row) {
      return UnitSource{view, llama_permuted_source_row(out_row, n_rows, n_head)};
    });
  }

  // Per-expert matrices stacked on a new outermost axis: PyTorch [n_expert, rows, cols],
  // GGUF ne = [cols, rows, n_expert] (Qwen2MoeModel.modify_tensors: torch.stack(dim=0)).
  // `parts[e]` gives expert e's matrix as (view, first row within it).
  void add_stacked(const std::string& name, std::vector<std::pair<const TensorView*, uint64_t>> parts, uint64_t rows,
                   uint64_t cols) {
    const uint64_t n_expert = parts.size();
    add(name, {cols, rows, n_expert}, cols, [parts = std::move(parts), rows](uint64_t out_row) {
      const auto& [view, first_row] = parts[out_row / rows];
      return UnitSource{view, first_row + out_row % rows};
    });
  }

  Status plan_moe(const std::string& hf, const std::string& blk) {
    const HfConfig& c = config_;
    GUFO_ASSIGN_OR_RETURN(const TensorView* router, take(hf + "mlp.gate.weight", {c.n_expert, c.n_embd}));
    add_plain(blk + "ffn_gate_inp.weight", router);
    std::vector<std::pair<const TensorView*, uint64_t>> gate;
    std::vector<std::pair<const TensorView*, uint64_t>> up;
    std::vector<std::pair<const TensorView*, uint64_t>> down;
    if (checkpoint_.find(hf + "mlp.experts.gate_up_proj") != nullptr) {
      // transformers 5 fuses the experts: gate_up_proj [n_expert, 2*n_ff_exp, n_embd] (gate
      // rows first, then up, split as Qwen2MoeModel does) and down_proj [n_expert, n_embd,
      // n_ff_exp].
      GUFO_ASSIGN_OR_RETURN(const TensorView* gate_up,
                            take(hf + "mlp.experts.gate_up_proj", {c.n_expert, 2ull * c.n_ff_exp, c.n_embd}));
      GUFO_ASSIGN_OR_RETURN(const TensorView* down_all,
                            take(hf + "mlp.experts.down_proj", {c.n_expert, c.n_embd, c.n_ff_exp}));
      for (uint64_t e = 0; e < c.n_expert; ++e) {
        gate.emplace_back(gate_up, e * 2 * c.n_ff_exp);
        up.emplace_back(gate_up, e * 2 * c.n_ff_exp + c.n_ff_exp);
        down.emplace_back(down_all, e * c.n_embd);
      }
    } else {
      for (uint32_t e = 0; e < c.n_expert; ++e) {
        const std::string ex = hf + "mlp.experts." + std::to_string(e) + ".";
        GUFO_ASSIGN_OR_RETURN(const TensorView* g, take(ex + "gate_proj.weight", {c.n_ff_exp, c.n_embd}));
        GUFO_ASSIGN_OR_RETURN(const TensorView* u, take(ex + "up_proj.weight", {c.n_ff_exp, c.n_embd}));
        GUFO_ASSIGN_OR_RETURN(const TensorView* d, take(ex + "down_proj.weight", {c.n_embd, c.n_ff_exp}));
        gate.emplace_back(g, 0);
        up.emplace_back(u, 0);
        down.emplace_back(d, 0);
      }
    }
    add_stacked(blk + "ffn_gate_exps.weight", std::move(gate), c.n_ff_exp, c.n_embd);
    add_stacked(blk + "ffn_up_exps.weight", std::move(up), c.n_ff_exp, c.n_embd);
    add_stacked(blk + "ffn_down_exps.weight", std::move(down), c.n_embd, c.n_ff_exp);
    return ok_status();
  }

  // output.weight is lm_head.weight, absent when the embeddings are tied (llama.cpp then
  // reuses token_embd). A tied config with a distinct lm_head, or an untied one without an
  // lm_head, is inconsistent: transformers would ignore or randomly initialise the head.
  Status plan_output(const TensorView* embd) {
    const HfConfig& c = config_;
    const TensorView* head = checkpoint_.find("lm_head.weight");
    if (!c.tie_word_embeddings) {
      if (head == nullptr) {
        return Error{prefix_ +
                     "tensor 'lm_head.weight' is missing, and config.json says "
                     "tie_word_embeddings is false"};
      }
      GUFO_ASSIGN_OR_RETURN(const TensorView* output, take("lm_head.weight", {c.n_vocab, c.n_embd}));
      add_plain("output.weight", output);
      return ok_status();
    }
    if (head != nullptr) {
      const bool same = head->dtype == embd->dtype && head->shape == embd->shape &&
                        std::equal(head->data.begin(), head->data.end(), embd->data.begin(), embd->data.end());
      if (!same) {
        return Error{prefix_ +
                     "tensor 'lm_head.weight' differs from 'model.embed_tokens.weight', "
                     "but config.json says tie_word_embeddings is true"};
      }
      used_.insert("lm_head.weight");  // a saved copy of the tied weight: nothing to write
    }
    return ok_status();
  }

  Status check_all_used() const {
    for (const auto& [name, view] : checkpoint_.tensors()) {
      if (used_.count(name) != 0) continue;
      // NOTE(convert): old Llama checkpoints store the RoPE inverse frequencies as a buffer;
      // llama.cpp skips them too (they are recomputed from rope_theta).
      if (name.ends_with(".rotary_emb.inv_freq")) continue;
      return Error{prefix_ + "tensor " + quote(name) + " is not part of a " + config_.hf_arch +
                   " as config.json describes it"};
    }
    return ok_status();
  }

  const safetensors::Checkpoint& checkpoint_;
  const HfConfig& config_;
  DType outtype_;
  std::string prefix_;
  std::set<std::string> used_;
  std::vector<PlannedTensor> planned_;
};

Result<json> read_config(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path.string() + ": cannot open"};
  std::stringstream buffer;
  buffer << in.rdbuf();
  json parsed = json::parse(buffer.str(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return Error{path.string() + ": not valid JSON"};
  return parsed;
}

// Metadata keys, as TextModel.set_gguf_parameters and the model classes write them
// (key spellings from gguf-py constants.py Keys.LLM / Keys.Attention / Keys.Rope).
void set_model_metadata(gguf::Writer& writer, const HfConfig& c, const std::string& model_name, DType outtype) {
  const std::string& a = c.gguf_arch;
  writer.set("general.architecture", gguf::Value::string(a));
  writer.set("general.type", gguf::Value::string("model"));
  writer.set("general.name", gguf::Value::string(model_name));
  writer.set("general.alignment", gguf::Value::u32(32));
  writer.set(a + ".block_count", gguf::Value::u32(c.n_layer));
  if (c.n_ctx_train) writer.set(a + ".context_length", gguf::Value::u32(static_cast<uint32_t>(*c.n_ctx_train)));
  writer.set(a + ".embedding_length", gguf::Value::u32(c.n_embd));
  writer.set(a + ".feed_forward_length", gguf::Value::u32(c.n_ff));
  writer.set(a + ".attention.head_count", gguf::Value::u32(c.n_head));
  writer.set(a + ".attention.head_count_kv", gguf::Value::u32(c.n_head_kv));
  const RopeScaling& rope = c.rope_scaling;
  if (rope.type == "linear") {
    writer.set(a + ".rope.scaling.type", gguf::Value::string("linear"));
    writer.set(a + ".rope.scaling.factor", gguf::Value::f32(static_cast<float>(rope.factor)));
  } else if (rope.type == "yarn") {
    writer.set(a + ".rope.scaling.type", gguf::Value::string("yarn"));
    writer.set(a + ".rope.scaling.factor", gguf::Value::f32(static_cast<float>(rope.factor)));
    writer.set(a + ".rope.scaling.original_context_length",
               gguf::Value::u32(static_cast<uint32_t>(*rope.original_max_position_embeddings)));
    const auto set_opt = [&](const char* key, const std::optional<double>& value) {
      if (value) writer.set(a + ".rope.scaling." + key, gguf::Value::f32(static_cast<float>(*value)));
    };
    set_opt("yarn_ext_factor", rope.extrapolation_factor);
    set_opt("yarn_attn_factor", rope.attention_factor);
    set_opt("yarn_beta_fast", rope.beta_fast);
    set_opt("yarn_beta_slow", rope.beta_slow);
  }
  // (llama3 scaling is the rope_freqs.weight tensor, not keys.)
  if (c.rope_theta) writer.set(a + ".rope.freq_base", gguf::Value::f32(static_cast<float>(*c.rope_theta)));
  if (c.rms_norm_eps) {
    writer.set(a + ".attention.layer_norm_rms_epsilon", gguf::Value::f32(static_cast<float>(*c.rms_norm_eps)));
  }
  if (c.arch == Arch::Qwen3Moe) {
    writer.set(a + ".expert_count", gguf::Value::u32(c.n_expert));
    writer.set(a + ".expert_used_count", gguf::Value::u32(c.n_expert_used));
  }
  if (c.head_dim_in_config) {
    writer.set(a + ".attention.key_length", gguf::Value::u32(c.head_dim));
    writer.set(a + ".attention.value_length", gguf::Value::u32(c.head_dim));
  }
  writer.set("general.file_type", gguf::Value::u32(file_type_of(outtype)));
  writer.set("general.quantization_version", gguf::Value::u32(2));  // GGML_QUANT_VERSION
  if (c.arch == Arch::Llama) {                                      // LlamaModel.set_gguf_parameters adds these two
    writer.set(a + ".vocab_size", gguf::Value::u32(c.n_vocab));
    writer.set(a + ".rope.dimension_count", gguf::Value::u32(c.head_dim));
  }
  if (c.arch == Arch::Qwen3Moe) {
    writer.set(a + ".expert_feed_forward_length", gguf::Value::u32(c.n_ff_exp));
    // NOTE(convert): not written by llama.cpp (its qwen3moe graph always renormalises the
    // top-k weights); recorded so a forward pass can honour norm_topk_prob=false models.
    writer.set(a + ".expert_weights_norm", gguf::Value::boolean(c.norm_topk_prob));
  }
}

// Copies the tokenizer.* keys of the vocab-only import, padding the token list to the
// embedding rows with unused "[PAD<id>]" tokens (llama.cpp's get_vocab_base does the same
// for ids the tokenizer does not define, up to config vocab_size).
Status add_tokenizer(gguf::Writer& writer, const std::string& hf_dir, const HfConfig& c) {
  GUFO_ASSIGN_OR_RETURN(gguf::Writer vocab, tokenizer::import_hf_tokenizer(hf_dir));
  const std::string tok_name = (std::filesystem::path(hf_dir) / "tokenizer.json").string();
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (const auto& [key, value] : vocab.metadata()) {
    const gguf::Array* array = value.get_if<gguf::Array>();
    if (key == "tokenizer.ggml.tokens" && array != nullptr && array->get_if<std::string>()) {
      tokens = *array->get_if<std::string>();
    }
    if (key == "tokenizer.ggml.token_type" && array != nullptr && array->get_if<int32_t>()) {
      types = *array->get_if<int32_t>();
    }
  }
  if (tokens.empty() || tokens.size() != types.size()) {
    return Error{tok_name + ": no tokens (or a token_type list of another length)"};
  }
  if (tokens.size() > c.n_vocab) {
    return Error{tok_name + ": " + std::to_string(tokens.size()) + " tokens, but the model has only " +
                 std::to_string(c.n_vocab) + " embedding rows (config.json vocab_size)"};
  }
  for (size_t id = tokens.size(); id < c.n_vocab; ++id) {
    tokens.push_back("[PAD" + std::to_string(id) + "]");
    types.push_back(5);  // TokenType::Unused, as llama.cpp marks them
  }
  // general.* keys of the import describe a vocab-only file; the model's are set already.
  for (const auto& [key, value] : vocab.metadata()) {
    if (!key.starts_with("tokenizer.")) continue;
    // Each key comes once in the metadata, so each list is moved at most once.
    if (key == "tokenizer.ggml.tokens") {
      writer.set(key, gguf::Value::array(gguf::Array(std::move(tokens))));  // NOLINT(bugprone-use-after-move)
    } else if (key == "tokenizer.ggml.token_type") {
      writer.set(key, gguf::Value::array(gguf::Array(std::move(types))));  // NOLINT(bugprone-use-after-move)
    } else {
      writer.set(key, value);
    }
  }
  return ok_status();
}

}  // namespace

std::optional<DType> parse_outtype(std::string_view text) {
  std::string lower(text);
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (lower == "f32") return DType::F32;
  if (lower == "f16") return DType::F16;
  if (lower == "bf16") return DType::BF16;
  if (lower == "q8_0") return DType::Q8_0;
  return std::nullopt;
}

Result<HfConversion> prepare_hf_conversion(const std::string& hf_dir, DType outtype, std::FILE* progress) {
  GUFO_CHECK(outtype == DType::F32 || outtype == DType::F16 || outtype == DType::BF16 || outtype == DType::Q8_0);
  const std::filesystem::path dir(hf_dir);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return Error{hf_dir + ": not a folder"};
  const std::string config_name = (dir / "config.json").string();
  GUFO_ASSIGN_OR_RETURN(json config_json, read_config(dir / "config.json"));
  GUFO_ASSIGN_OR_RETURN(HfConfig config, parse_hf_config(config_json, config_name));

  HfConversion conversion;
  GUFO_ASSIGN_OR_RETURN(safetensors::Checkpoint checkpoint, safetensors::Checkpoint::open(hf_dir));
  conversion.checkpoint = std::make_unique<safetensors::Checkpoint>(std::move(checkpoint));

  Planner planner(*conversion.checkpoint, config, outtype, hf_dir + ": ");
  GUFO_ASSIGN_OR_RETURN(std::vector<PlannedTensor> planned, planner.plan());

  std::string model_name = std::filesystem::absolute(dir, ec).lexically_normal().filename().string();
  if (model_name.empty())
    model_name = std::filesystem::absolute(dir, ec).lexically_normal().parent_path().filename().string();
  set_model_metadata(conversion.writer, config, model_name, outtype);
  GUFO_RETURN_IF_ERROR(add_tokenizer(conversion.writer, hf_dir, config));

  const size_t n_tensors = planned.size();
  for (size_t i = 0; i < n_tensors; ++i) {
    PlannedTensor& tensor = planned[i];
    gguf::TensorSpec spec;
    spec.name = tensor.name;
    spec.type = tensor.type;
    spec.shape = tensor.ne;
    spec.fill = [tensor = std::move(tensor), progress, i, n_tensors](std::span<std::byte> out) {
      if (progress != nullptr) {
        std::fprintf(progress, "[%zu/%zu] %s: %s\n", i + 1, n_tensors, tensor.name.c_str(),
                     std::string(dtype_info(tensor.type).name).c_str());
      }
      return fill_tensor(tensor, out);
    };
    conversion.writer.add_tensor(std::move(spec));
  }
  return conversion;
}

Status convert_hf_model(const std::string& hf_dir, const std::string& out_path, DType outtype, std::FILE* progress) {
  GUFO_ASSIGN_OR_RETURN(HfConversion conversion, prepare_hf_conversion(hf_dir, outtype, progress));
  gguf::WriteOptions options;
  options.input_paths = conversion.checkpoint->paths();
  return conversion.writer.write(out_path, options);
}

void set_gguf_model_metadata(gguf::Writer& writer, const HfConfig& config, const std::string& model_name,
                             DType outtype) {
  set_model_metadata(writer, config, model_name, outtype);
}

}  // namespace gufo::convert
