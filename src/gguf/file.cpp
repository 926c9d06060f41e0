// gguf::File lookups and typed metadata getters (parsing lives in reader.cpp).
// Tested by tests/unit/gguf/reader_test.cpp.
#include "gguf/file.h"

#include "gguf/text.h"

namespace gufo::gguf {

const MetadataEntry* File::find(std::string_view key) const {
  const auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata_[it->second];
}

Result<const Value*> File::get(std::string_view key) const {
  const MetadataEntry* entry = find(key);
  if (entry == nullptr) return Error{name_ + ": key " + quote_name(key) + " not found"};
  return &entry->value;
}

Error File::type_error(std::string_view key, std::string_view expected, const Value& found) const {
  return Error{name_ + ": key " + quote_name(key) + ": expected " + std::string(expected) + ", found " +
               found.type_description()};
}

Result<std::string_view> File::get_string(std::string_view key) const {
  GUFO_ASSIGN_OR_RETURN(const Value* value, get(key));
  if (const std::string* text = value->get_if<std::string>()) return std::string_view(*text);
  return type_error(key, "string", *value);
}

Result<const Array*> File::get_array(std::string_view key) const {
  GUFO_ASSIGN_OR_RETURN(const Value* value, get(key));
  if (const Array* array = value->get_if<Array>()) return array;
  return type_error(key, "array", *value);
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Result<const TensorInfo*> File::get_tensor(std::string_view name) const {
  const TensorInfo* tensor = find_tensor(name);
  if (tensor == nullptr) return Error{name_ + ": tensor " + quote_name(name) + " not found"};
  return tensor;
}

}  // namespace gufo::gguf
