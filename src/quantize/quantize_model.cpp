// quantize_model (see quantize_model.h): plan every tensor's type first, so bad input fails
// before any byte is written; then let gguf::Writer pull one tensor at a time, each
// re-encoded row-parallel. Tested by tests/unit/quantize/quantize_model_test.cpp.
#include "quantize/quantize_model.h"

#include <cstring>
#include <filesystem>
#include <vector>

#include "quant/quant.h"
#include "quantize/parallel_rows.h"

namespace gufo::quantize {
namespace {

std::string quote(std::string_view text) { return "'" + std::string(text) + "'"; }

// Re-encodes `tensor` (rows of ne0 elements) as `new_type` into `out`.
Status reencode_tensor(const gguf::TensorInfo& tensor, DType new_type, unsigned n_threads, std::span<std::byte> out) {
  if (tensor.type == new_type) {
    std::memcpy(out.data(), tensor.data, tensor.n_bytes);
    return ok_status();
  }
  const uint64_t row_elems = tensor.ne[0];
  const uint64_t n_rows = tensor.n_elements / row_elems;
  const uint64_t src_row_bytes = dtype_row_bytes(dtype_info(tensor.type), row_elems);
  const uint64_t dst_row_bytes = dtype_row_bytes(dtype_info(new_type), row_elems);
  return for_each_row_chunk(n_rows, n_threads, [&](uint64_t first_row, uint64_t last_row) -> Status {
    std::vector<float> row(row_elems);
    for (uint64_t row_idx = first_row; row_idx < last_row; ++row_idx) {
      GUFO_RETURN_IF_ERROR(quant::dequantize_row(tensor.type, tensor.data + row_idx * src_row_bytes, src_row_bytes,
                                                 row.data(), static_cast<int64_t>(row_elems)));
      GUFO_RETURN_IF_ERROR(quant::quantize_row(new_type, row.data(), static_cast<int64_t>(row_elems),
                                               out.data() + row_idx * dst_row_bytes, dst_row_bytes));
    }
    return ok_status();
  });
}

}  // namespace

Result<ModelFacts> model_facts_of(const gguf::File& file) {
  GUFO_ASSIGN_OR_RETURN(std::string_view arch_view, file.get_string("general.architecture"));
  const std::string arch(arch_view);
  ModelFacts facts;
  GUFO_ASSIGN_OR_RETURN(facts.n_layer, file.get_u32(arch + ".block_count"));
  if (file.has(arch + ".expert_count")) {
    GUFO_ASSIGN_OR_RETURN(facts.n_expert, file.get_u32(arch + ".expert_count"));
  }
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;
  if (file.has(arch + ".attention.head_count")) {
    GUFO_ASSIGN_OR_RETURN(n_head, file.get_u32(arch + ".attention.head_count"));
    n_head_kv = n_head;
  }
  if (file.has(arch + ".attention.head_count_kv")) {
    GUFO_ASSIGN_OR_RETURN(n_head_kv, file.get_u32(arch + ".attention.head_count_kv"));
  }
  facts.has_output = file.find_tensor("output.weight") != nullptr;
  facts.is_70b_class = is_70b_class(arch, facts.n_layer, n_head, n_head_kv);
  return facts;
}

Status quantize_model(const std::string& in_path, const std::string& out_path, QuantMix mix,
                      const QuantizeOptions& options) {
  std::error_code ec;
  if (in_path == out_path || std::filesystem::equivalent(in_path, out_path, ec)) {
    return Error{out_path + ": refusing to overwrite the input file " + in_path};
  }
  GUFO_ASSIGN_OR_RETURN(gguf::File file, gguf::File::open(in_path));
  GUFO_ASSIGN_OR_RETURN(ModelFacts facts, model_facts_of(file));

  std::vector<DType> new_types;
  new_types.reserve(file.tensors().size());
  for (const gguf::TensorInfo& tensor : file.tensors()) {
    const DType new_type = choose_tensor_type(mix, facts, tensor.name, tensor.shape(), tensor.type);
    if (new_type != tensor.type && !quant::can_dequantize(tensor.type)) {
      return Error{in_path + ": tensor " + quote(tensor.name) + ": cannot re-encode " +
                   std::string(dtype_info(tensor.type).name) +
                   " (inputs Gufo can read: F32, F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K)"};
    }
    new_types.push_back(new_type);
  }

  gguf::Writer writer;
  for (const gguf::MetadataEntry& entry : file.metadata()) writer.set(entry.key, entry.value);
  writer.set("general.file_type", gguf::Value::u32(quant_mix_file_type(mix)));
  writer.set("general.quantization_version", gguf::Value::u32(2));  // GGML_QUANT_VERSION
  for (const KvOverride& o : options.overrides) writer.set(o.key, o.value);

  const size_t n_tensors = file.tensors().size();
  const unsigned n_threads = resolve_thread_count(options.n_threads);
  for (size_t i = 0; i < n_tensors; ++i) {
    const gguf::TensorInfo& tensor = file.tensors()[i];
    gguf::TensorSpec spec;
    spec.name = tensor.name;
    spec.type = new_types[i];
    spec.shape.assign(tensor.shape().begin(), tensor.shape().end());
    spec.fill = [&tensor, &options, i, n_tensors, n_threads,
                 new_type = new_types[i]](std::span<std::byte> out) -> Status {
      if (options.progress != nullptr) {
        std::fprintf(options.progress, "[%zu/%zu] %s: %s -> %s\n", i + 1, n_tensors, tensor.name.c_str(),
                     std::string(dtype_info(tensor.type).name).c_str(), std::string(dtype_info(new_type).name).c_str());
      }
      return reencode_tensor(tensor, new_type, n_threads, out);
    };
    writer.add_tensor(std::move(spec));
  }
  gguf::WriteOptions write_options;
  write_options.input_paths = {in_path};
  return writer.write(out_path, write_options);
}

}  // namespace gufo::quantize
