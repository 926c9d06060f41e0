// Zero-copy weight views over a GGUF file (see weights.h).
#include "model/weights.h"

namespace gufo::model {

Result<WeightTable> WeightTable::from_gguf(const gguf::File& file) {
  WeightTable table;
  table.source_ = file.name();
  for (const gguf::TensorInfo& info : file.tensors()) {
    if (info.n_dims > 3) continue;  // no architecture reads 4-D tensors
    const DTypeInfo type = dtype_info(info.type);
    Weight weight;
    weight.name = info.name;
    weight.type = info.type;
    weight.cols = static_cast<int64_t>(info.ne[0]);
    weight.rows = static_cast<int64_t>(info.ne[1]);
    weight.row_bytes = static_cast<size_t>(info.ne[0] / type.block_elems * type.block_bytes);
    weight.data = info.data;
    weight.n_expert = info.n_dims == 3 ? static_cast<int64_t>(info.ne[2]) : 1;
    table.index_.emplace(weight.name, table.weights_.size());
    table.weights_.push_back(std::move(weight));
  }
  return table;
}

Weight expert(const Weight& stack, int64_t e) {
  Weight one = stack;
  one.name = stack.name + "[" + std::to_string(e) + "]";
  one.n_expert = 1;
  one.data = stack.data + static_cast<size_t>(e) * stack.expert_bytes();
  return one;
}

const Weight* WeightTable::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &weights_[it->second];
}

}  // namespace gufo::model
