// `gufo inspect FILE.gguf [--json]`: a GGUF file's header, metadata and tensor table, as text
// or as one JSON document. Long arrays and strings are abbreviated (their full length kept).
// Tested by tests/unit/gguf/inspect_cli_test.cpp, which runs the real binary.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "cli/command.h"
#include "gguf/file.h"
#include "gguf/text.h"
#include "gguf/value_text.h"

namespace gufo::cli {
namespace {

using nlohmann::json;

struct InspectOptions {
  std::string path;
  bool json = false;
};

// NOTE(inspect): JSON abbreviates like the text, a little more generously (a program may
// want the first tokens of a vocabulary), and always states the full length.
constexpr size_t kJsonArrayItems = 16;
constexpr size_t kJsonTotalItems = 64;
constexpr size_t kJsonStringBytes = 1024;
// NOTE(inspect): key and tensor-name columns stop growing at 40 characters; longer names
// push their row's other columns right instead of widening every row.
constexpr size_t kMaxColumn = 40;

struct Totals {
  uint64_t parameters = 0;
  uint64_t bytes = 0;
  std::map<std::string, uint64_t> by_type;  // sorted by type name, for stable output
};

Totals totals_of(const gguf::File& file) {
  Totals totals;
  for (const gguf::TensorInfo& tensor : file.tensors()) {
    totals.parameters += tensor.n_elements;
    totals.bytes += tensor.n_bytes;
    ++totals.by_type[std::string(dtype_name(tensor.type))];
  }
  return totals;
}

std::string shape_text(const gguf::TensorInfo& tensor) {
  std::string text = "[";
  for (size_t dim = 0; dim < tensor.shape().size(); ++dim) {
    if (dim != 0) text += ", ";
    text += std::to_string(tensor.shape()[dim]);
  }
  return text + "]";
}

// `text` escaped (names come from the file) and padded to `width` characters.
std::string column(std::string_view text, size_t width) {
  std::string out = gguf::escape_name(text, /*max_bytes=*/256);
  size_t characters = 0;
  for (char c : out) characters += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  if (characters < width) out.append(width - characters, ' ');
  return out;
}

size_t column_width(size_t longest, size_t header) { return std::min(std::max(longest, header), kMaxColumn); }

// ---- text ----

std::string render_text(const gguf::File& file) {
  std::string out;
  out += "file:      " + file.name() + "\n";
  out += "format:    GGUF v" + std::to_string(file.version()) + ", " + std::to_string(file.file_size_bytes()) +
         " bytes, alignment " + std::to_string(file.alignment()) + ", data section at offset " +
         std::to_string(file.data_offset()) + "\n";
  out += "contents:  " + std::to_string(file.metadata().size()) + " metadata keys, " +
         std::to_string(file.tensors().size()) + " tensors\n";

  out += "\nmetadata (" + std::to_string(file.metadata().size()) + "):\n";
  size_t key_width = 0;
  for (const gguf::MetadataEntry& entry : file.metadata()) key_width = std::max(key_width, entry.key.size());
  key_width = column_width(key_width, 3);
  for (const gguf::MetadataEntry& entry : file.metadata()) {
    const std::string type(gguf::value_type_name(entry.value.type()));
    out +=
        "  " + column(entry.key, key_width) + "  " + column(type, 7) + "  " + gguf::value_to_text(entry.value) + "\n";
  }

  out += "\ntensors (" + std::to_string(file.tensors().size()) + "):\n";
  size_t name_width = 0;
  size_t shape_width = 0;
  for (const gguf::TensorInfo& tensor : file.tensors()) {
    name_width = std::max(name_width, tensor.name.size());
    shape_width = std::max(shape_width, shape_text(tensor).size());
  }
  name_width = column_width(name_width, 4);
  shape_width = column_width(shape_width, 5);
  char row[128];
  std::snprintf(row, sizeof(row), "  %s  %-7s  %s  %14s  %14s\n", column("name", name_width).c_str(), "type",
                column("shape", shape_width).c_str(), "bytes", "offset");
  out += row;
  for (const gguf::TensorInfo& tensor : file.tensors()) {
    out += "  " + column(tensor.name, name_width) + "  " + column(dtype_name(tensor.type), 7) + "  " +
           column(shape_text(tensor), shape_width);
    std::snprintf(row, sizeof(row), "  %14llu  %14llu\n", static_cast<unsigned long long>(tensor.n_bytes),
                  static_cast<unsigned long long>(tensor.offset));
    out += row;
  }

  const Totals totals = totals_of(file);
  out += "\ntotals:    " + std::to_string(file.tensors().size()) + " tensors, " + std::to_string(totals.parameters) +
         " parameters, " + std::to_string(totals.bytes) + " bytes of tensor data\n";
  out += "by type:  ";
  if (totals.by_type.empty()) out += " (none)";
  for (const auto& [type, count] : totals.by_type) out += " " + type + " " + std::to_string(count);
  out += "\n";
  return out;
}

// ---- JSON ----

struct JsonBudget {
  size_t items_left = kJsonTotalItems;
};

json float_json(double value, bool single_precision) {
  // NOTE(inspect): JSON has no NaN or infinity; those become the strings "nan", "inf", "-inf".
  if (std::isfinite(value)) return value;
  return gguf::float_to_text(value, single_precision);
}

json string_json(const std::string& text, json& holder) {
  const size_t keep = gguf::utf8_prefix_bytes(text, kJsonStringBytes);
  if (keep < text.size()) {
    holder["truncated"] = true;
    holder["length"] = text.size();
  }
  return text.substr(0, keep);
}

json array_json(const gguf::Array& array, JsonBudget& budget);

template <class T>
json element_json(const T& item, JsonBudget& budget) {
  if constexpr (std::is_same_v<T, std::string>) {
    json ignored;
    return string_json(item, ignored);  // elements: cut silently, the array says "truncated"
  } else if constexpr (std::is_same_v<T, gguf::Array>) {
    return array_json(item, budget);
  } else if constexpr (std::is_floating_point_v<T>) {
    return float_json(item, std::is_same_v<T, float>);
  } else {
    return item;
  }
}

// {"element_type": ..., "length": N, "value": [first elements], "truncated": bool}
json array_json(const gguf::Array& array, JsonBudget& budget) {
  json out = json::object();
  out["element_type"] = gguf::value_type_name(array.element_type());
  out["length"] = array.size();
  json values = json::array();
  std::visit(
      [&](const auto& elements) {
        using T = typename std::decay_t<decltype(elements)>::value_type;
        for (const auto& item : elements) {
          if (values.size() == kJsonArrayItems || budget.items_left == 0) break;
          --budget.items_left;
          values.push_back(element_json<T>(static_cast<const T&>(item), budget));
        }
      },
      array.elements());
  out["truncated"] = values.size() < array.size();
  out["value"] = std::move(values);
  return out;
}

json entry_json(const gguf::MetadataEntry& entry) {
  json out = json::object();
  out["key"] = entry.key;
  out["type"] = gguf::value_type_name(entry.value.type());
  JsonBudget budget;
  std::visit(
      [&](const auto& typed) {
        using T = std::decay_t<decltype(typed)>;
        if constexpr (std::is_same_v<T, gguf::Array>) {
          json array = array_json(typed, budget);
          out["element_type"] = array["element_type"];
          out["length"] = array["length"];
          out["truncated"] = array["truncated"];
          out["value"] = std::move(array["value"]);
        } else if constexpr (std::is_same_v<T, std::string>) {
          out["value"] = string_json(typed, out);
        } else {
          out["value"] = element_json<T>(typed, budget);
        }
      },
      entry.value.data());
  return out;
}

std::string render_json(const gguf::File& file) {
  json doc = json::object();
  doc["file"] = file.name();
  doc["file_size_bytes"] = file.file_size_bytes();
  doc["version"] = file.version();
  doc["alignment"] = file.alignment();
  doc["data_offset"] = file.data_offset();
  doc["metadata_count"] = file.metadata().size();
  doc["tensor_count"] = file.tensors().size();
  json metadata = json::array();
  for (const gguf::MetadataEntry& entry : file.metadata()) metadata.push_back(entry_json(entry));
  doc["metadata"] = std::move(metadata);
  json tensors = json::array();
  for (const gguf::TensorInfo& tensor : file.tensors()) {
    json item = json::object();
    item["name"] = tensor.name;
    item["type"] = dtype_name(tensor.type);
    item["shape"] = std::vector<uint64_t>(tensor.shape().begin(), tensor.shape().end());
    item["n_elements"] = tensor.n_elements;
    item["n_bytes"] = tensor.n_bytes;
    item["offset"] = tensor.offset;
    item["file_offset"] = tensor.file_offset;
    tensors.push_back(std::move(item));
  }
  doc["tensors"] = std::move(tensors);
  const Totals totals = totals_of(file);
  doc["totals"] = {{"tensors", file.tensors().size()},
                   {"parameters", totals.parameters},
                   {"bytes", totals.bytes},
                   {"by_type", totals.by_type}};
  // NOTE(inspect): strings from the file need not be UTF-8; `replace` writes U+FFFD for bad
  // bytes instead of throwing, so the document is always valid JSON.
  return doc.dump(2, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace) + "\n";
}

int run_inspect(const InspectOptions& options) {
  auto file = gguf::File::open(options.path);
  if (!file.ok()) return report_error(file.error());
  const std::string out = options.json ? render_json(*file) : render_text(*file);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

Command register_inspect(CLI::App& root) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* app = root.add_subcommand("inspect", "Show a GGUF file's header, metadata and tensors");
  app->add_option("FILE", options->path, "the GGUF file")->required();
  app->add_flag("--json", options->json, "print one JSON document instead of text");
  return Command{app, [options] { return run_inspect(*options); }};
}

}  // namespace gufo::cli
