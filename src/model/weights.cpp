// Zero-copy weight views over a GGUF file (see weights.h).
#include "model/weights.h"

namespace gufo::model {

Result<WeightTable> WeightTable::from_gguf(const gguf::File& file) {
  WeightTable table;
  table.source_ = file.name();
  for (const gguf::TensorInfo& info : file.tensors()) {
    if (info.n_dims > 2) continue;  // 3-D expert stacks belong to MoE models (not yet run)
    const DTypeInfo type = dtype_info(info.type);
    Weight weight;
    weight.name = info.name;
    weight.type = info.type;
    weight.cols = static_cast<int64_t>(info.ne[0]);
    weight.rows = static_cast<int64_t>(info.ne[1]);
    weight.row_bytes = static_cast<size_t>(info.ne[0] / type.block_elems * type.block_bytes);
    weight.data = info.data;
    table.index_.emplace(weight.name, table.weights_.size());
    table.weights_.push_back(std::move(weight));
  }
  return table;
}

const Weight* WeightTable::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &weights_[it->second];
}

}  // namespace gufo::model
