// tokenizer.json + tokenizer_config.json -> tokenizer.ggml.* metadata. See hf_import.h.
// Tested by tests/unit/tokenizer/hf_import_test.cpp and tests/js/tokenizer_parity.test.mjs.
#include "tokenizer/hf_import.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tokenizer/pretokenize.h"
#include "tokenizer/vocab.h"

namespace gufo::tokenizer {

namespace {

using nlohmann::json;

// NOTE(hf): the Split regexes of the supported models' tokenizer.json, and llama.cpp's
// tokenizer.ggml.pre name for each (convert_hf_to_gguf.py tells them apart by hashing
// encodings; comparing the regex is enough for these two).
constexpr std::string_view kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// NOTE(hf): a cap on ids read from JSON, matching vocab.cpp's cap on vocab size.
constexpr int64_t kMaxTokenId = 4'000'000;

Result<json> read_json(const std::filesystem::path& path, bool required) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!required) return json();
    return Error{path.string() + ": cannot open"};
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  json parsed = json::parse(buffer.str(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return Error{path.string() + ": not valid JSON"};
  if (!parsed.is_object()) return Error{path.string() + ": expected a JSON object at the top"};
  return parsed;
}

// obj[key], or a null that lives forever (a reference into `obj`, never a copy).
const json& field(const json& obj, const char* key) {
  static const json null_json;
  if (!obj.is_object()) return null_json;
  const auto it = obj.find(key);
  return it != obj.end() ? *it : null_json;
}

// obj[key] when it is a string, else "" (nlohmann's value() throws on a null or other type).
std::string string_field(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

// Finds the Split pre-tokenizer's regex, directly or inside a Sequence.
const json* find_split_regex(const json& pre) {
  if (!pre.is_object()) return nullptr;
  if (string_field(pre, "type") == "Split" && pre.contains("pattern") && pre["pattern"].is_object()) {
    const auto it = pre["pattern"].find("Regex");
    return it != pre["pattern"].end() && it->is_string() ? &*it : nullptr;
  }
  if (string_field(pre, "type") == "Sequence" && pre.contains("pretokenizers") && pre["pretokenizers"].is_array()) {
    for (const json& child : pre["pretokenizers"]) {
      if (const json* found = find_split_regex(child)) return found;
    }
  }
  return nullptr;
}

// A special token in tokenizer_config.json: a string, or an object with "content".
std::string token_content(const json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  return "";
}

// Whether tokenizer.json's post-processor puts `bos` before a single sequence.
bool post_processor_adds(const json& post, const std::string& bos) {
  if (!post.is_object() || bos.empty()) return false;
  if (string_field(post, "type") == "Sequence" && post.contains("processors") && post["processors"].is_array()) {
    for (const json& child : post["processors"]) {
      if (post_processor_adds(child, bos)) return true;
    }
    return false;
  }
  if (string_field(post, "type") != "TemplateProcessing" || !post.contains("single") || !post["single"].is_array() ||
      post["single"].empty()) {
    return false;
  }
  const json& first = post["single"][0];
  return first.is_object() && first.contains("SpecialToken") && first["SpecialToken"].is_object() &&
         string_field(first["SpecialToken"], "id") == bos;
}

}  // namespace

Result<gguf::Writer> import_hf_tokenizer(const std::string& hf_dir) {
  const std::filesystem::path dir(hf_dir);
  const std::string tok_name = (dir / "tokenizer.json").string();
  GUFO_ASSIGN_OR_RETURN(json tok, read_json(dir / "tokenizer.json", true));
  GUFO_ASSIGN_OR_RETURN(json config, read_json(dir / "tokenizer_config.json", false));
  GUFO_ASSIGN_OR_RETURN(json model_config, read_json(dir / "config.json", false));

  const json& model = field(tok, "model");
  if (!model.is_object() || string_field(model, "type") != "BPE") {
    return Error{tok_name + ": model.type: expected \"BPE\""};
  }
  if (!model.contains("vocab") || !model["vocab"].is_object()) {
    return Error{tok_name + ": model.vocab: expected an object of token -> id"};
  }

  VocabSpec spec;
  std::vector<bool> filled;
  const auto place = [&](const std::string& text, const json& id_json, int32_t type,
                         const std::string& where) -> Status {
    if (!id_json.is_number_integer() || id_json.get<int64_t>() < 0 || id_json.get<int64_t>() >= kMaxTokenId) {
      return Error{tok_name + ": " + where + ": id must be an integer in 0.." + std::to_string(kMaxTokenId - 1) +
                   ", found " + id_json.dump()};
    }
    const auto id = static_cast<size_t>(id_json.get<int64_t>());
    if (id >= spec.tokens.size()) {
      spec.tokens.resize(id + 1);
      spec.types.resize(id + 1, static_cast<int32_t>(TokenType::Unused));
      filled.resize(id + 1, false);
    }
    spec.tokens[id] = text;
    spec.types[id] = type;
    filled[id] = true;
    return ok_status();
  };
  for (const auto& [text, id] : model["vocab"].items()) {
    GUFO_RETURN_IF_ERROR(place(text, id, static_cast<int32_t>(TokenType::Normal), "model.vocab['" + text + "']"));
  }
  if (tok.contains("added_tokens")) {
    if (!tok["added_tokens"].is_array()) return Error{tok_name + ": added_tokens: expected an array"};
    for (size_t i = 0; i < tok["added_tokens"].size(); ++i) {
      const json& added = tok["added_tokens"][i];
      const std::string where = "added_tokens[" + std::to_string(i) + "]";
      if (!added.is_object() || !added.contains("content") || !added["content"].is_string() || !added.contains("id")) {
        return Error{tok_name + ": " + where + ": expected an object with content and id"};
      }
      const bool special = added.contains("special") && added["special"].is_boolean() && added["special"].get<bool>();
      GUFO_RETURN_IF_ERROR(place(added["content"].get<std::string>(), added["id"],
                                 static_cast<int32_t>(special ? TokenType::Control : TokenType::UserDefined), where));
    }
  }
  // Ids nobody uses get a placeholder, as convert_hf_to_gguf.py writes ("[PAD<id>]").
  for (size_t id = 0; id < spec.tokens.size(); ++id) {
    if (!filled[id]) spec.tokens[id] = "[PAD" + std::to_string(id) + "]";
  }

  if (model.contains("merges")) {
    if (!model["merges"].is_array()) return Error{tok_name + ": model.merges: expected an array"};
    spec.merges.reserve(model["merges"].size());
    for (size_t i = 0; i < model["merges"].size(); ++i) {
      const json& merge = model["merges"][i];
      if (merge.is_string()) {
        spec.merges.push_back(merge.get<std::string>());
      } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
        spec.merges.push_back(merge[0].get<std::string>() + " " + merge[1].get<std::string>());
      } else {
        return Error{tok_name + ": model.merges[" + std::to_string(i) + "]: expected \"a b\" or [\"a\", \"b\"]"};
      }
    }
  }

  const json* regex = find_split_regex(field(tok, "pre_tokenizer"));
  if (regex == nullptr) {
    return Error{tok_name + ": pre_tokenizer: no Split regex found (supported: qwen2, llama-bpe)"};
  }
  const std::string pattern = regex->get<std::string>();
  if (pattern == kQwen2Regex) {
    spec.pre = "qwen2";
  } else if (pattern == kLlama3Regex) {
    spec.pre = "llama-bpe";
  } else {
    return Error{tok_name + ": pre_tokenizer: unsupported Split regex '" + pattern +
                 "' (supported: the qwen2 and llama-bpe patterns)"};
  }

  // The normalizer must be the one the pre-tokenizer name implies (see tokenizer.cpp).
  const json& normalizer = field(tok, "normalizer");
  const bool nfc = normalizer.is_object() && string_field(normalizer, "type") == "NFC";
  if (!normalizer.is_null() && !nfc) {
    return Error{tok_name + ": normalizer: unsupported " + normalizer.dump().substr(0, 200) +
                 " (supported: none, or NFC with the qwen2 pre-tokenizer)"};
  }
  if (nfc != (spec.pre == "qwen2")) {
    return Error{tok_name + ": normalizer: the " + spec.pre + " pre-tokenizer " + (nfc ? "does not take" : "needs") +
                 " an NFC normalizer"};
  }

  const auto find_id = [&](const std::string& text) -> int64_t {
    for (size_t id = 0; id < spec.tokens.size(); ++id) {
      if (filled[id] && spec.tokens[id] == text) return static_cast<int64_t>(id);
    }
    return -1;
  };
  const std::string config_name = (dir / "tokenizer_config.json").string();
  const auto resolve = [&](const char* key, int64_t& out) -> Status {
    const std::string text = token_content(config, key);
    if (text.empty()) return ok_status();
    out = find_id(text);
    if (out < 0) return Error{config_name + ": " + key + ": '" + text + "' is not a token"};
    return ok_status();
  };
  GUFO_RETURN_IF_ERROR(resolve("bos_token", spec.bos_id));
  GUFO_RETURN_IF_ERROR(resolve("eos_token", spec.eos_id));
  GUFO_RETURN_IF_ERROR(resolve("pad_token", spec.pad_id));
  // add_bos_token: the config says so, or else the post-processor adds BOS (Llama 3).
  if (config.contains("add_bos_token") && config["add_bos_token"].is_boolean()) {
    spec.add_bos = config["add_bos_token"].get<bool>();
  } else {
    spec.add_bos = post_processor_adds(field(tok, "post_processor"), token_content(config, "bos_token"));
  }

  // Validate before writing, so a bad import fails here and not when the GGUF is loaded.
  GUFO_RETURN_IF_ERROR(build_vocab(spec, tok_name));

  gguf::Writer writer;
  // NOTE(hf): general.architecture comes from config.json's model_type; a folder without
  // config.json gets no architecture key (the file is a tokenizer, not a model).
  if (model_config.is_object() && model_config.contains("model_type") && model_config["model_type"].is_string()) {
    writer.set("general.architecture", gguf::Value::string(model_config["model_type"].get<std::string>()));
  }
  writer.set("general.type", gguf::Value::string("vocab"));
  writer.set("tokenizer.ggml.model", gguf::Value::string(spec.model));
  writer.set("tokenizer.ggml.pre", gguf::Value::string(spec.pre));
  writer.set("tokenizer.ggml.tokens", gguf::Value::array(gguf::Array(spec.tokens)));
  writer.set("tokenizer.ggml.token_type", gguf::Value::array(gguf::Array(spec.types)));
  writer.set("tokenizer.ggml.merges", gguf::Value::array(gguf::Array(spec.merges)));
  if (spec.bos_id >= 0) writer.set("tokenizer.ggml.bos_token_id", gguf::Value::u32(static_cast<uint32_t>(spec.bos_id)));
  if (spec.eos_id >= 0) writer.set("tokenizer.ggml.eos_token_id", gguf::Value::u32(static_cast<uint32_t>(spec.eos_id)));
  if (spec.pad_id >= 0)
    writer.set("tokenizer.ggml.padding_token_id", gguf::Value::u32(static_cast<uint32_t>(spec.pad_id)));
  writer.set("tokenizer.ggml.add_bos_token", gguf::Value::boolean(spec.add_bos));
  if (config.contains("chat_template") && config["chat_template"].is_string()) {
    writer.set("tokenizer.chat_template", gguf::Value::string(config["chat_template"].get<std::string>()));
  }
  return writer;
}

}  // namespace gufo::tokenizer
