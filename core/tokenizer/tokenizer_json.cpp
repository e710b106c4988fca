// tokenizer.json -> Vocabulary. Every field is read through checked accessors
// that carry the JSON path, so a wrong type or an unsupported kind is a Status
// naming where it is, never an exception.
#include "core/tokenizer/tokenizer_json.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/io/text_file.h"
#include "core/tokenizer/tokenizer_pipeline.h"

namespace tessera {
namespace {

using Json = nlohmann::json;

constexpr uint64_t kMaxTokenizerJsonBytes = 512ull << 20;
constexpr int kMaxNesting = 16;  // Sequence inside Sequence ...

// End-of-turn tokens of the chat families, in the order they are looked for.
constexpr std::string_view kEndOfTurn[] = {"<|eot_id|>", "<|im_end|>", "<end_of_turn>"};

std::string json_text(const Json& value) {
  return value.dump();
}

struct Reader {
  std::string origin;

  Status wrong(const std::string& path, const std::string& what) const {
    return invalid_argument(origin + ": " + path + " " + what);
  }
  Status unsupported(const std::string& path, const Json& value) const {
    return unimplemented(origin + ": " + path + " = " + json_text(value) + " is not supported");
  }

  Result<std::string> string_at(const Json& object, const std::string& key,
                                const std::string& path) const {
    const auto it = object.find(key);
    if (it == object.end() || !it->is_string()) return wrong(path + "." + key, "must be a string");
    return it->get<std::string>();
  }
  Result<bool> bool_or(const Json& object, const std::string& key, bool fallback,
                       const std::string& path) const {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) return wrong(path + "." + key, "must be true or false");
    return it->get<bool>();
  }
  Result<int> int_or(const Json& object, const std::string& key, int fallback,
                     const std::string& path) const {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return fallback;
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 1 << 20)
      return wrong(path + "." + key, "must be a small non-negative integer");
    return it->get<int>();
  }
  Result<std::string> type_of(const Json& node, const std::string& path) const {
    if (!node.is_object()) return wrong(path, "must be an object");
    return string_at(node, "type", path);
  }
  // A {"String": s} pattern, or Unimplemented for {"Regex": ...} where only
  // strings are supported.
  Result<std::pair<std::string, bool>> pattern(const Json& node, const std::string& path) const {
    const auto it = node.find("pattern");
    if (it == node.end() || !it->is_object()) return wrong(path + ".pattern", "must be an object");
    if (const auto s = it->find("String"); s != it->end() && s->is_string())
      return std::pair{s->get<std::string>(), false};
    if (const auto r = it->find("Regex"); r != it->end() && r->is_string())
      return std::pair{r->get<std::string>(), true};
    return wrong(path + ".pattern", "must be {\"String\": ...} or {\"Regex\": ...}");
  }

  Status normalizer(const Json& node, const std::string& path, int depth,
                    TokenizerPipeline& out) const;
  Status pre_tokenizer(const Json& node, const std::string& path, int depth,
                       TokenizerPipeline& out) const;
  Status decoder(const Json& node, const std::string& path, int depth,
                 TokenizerPipeline& out) const;
  Status model(const Json& node, Vocabulary& vocab) const;
  Status added_tokens(const Json& node, Vocabulary& vocab) const;
  Status post_processor(const Json& node, const std::string& path, int depth,
                        Vocabulary& vocab) const;
};

Status Reader::normalizer(const Json& node, const std::string& path, int depth,
                          TokenizerPipeline& out) const {
  if (node.is_null()) return ok_status();
  if (depth > kMaxNesting) return wrong(path, "nests too deeply");
  ASSIGN_OR_RETURN(const std::string type, type_of(node, path));
  if (type == "Sequence") {
    const auto it = node.find("normalizers");
    if (it == node.end() || !it->is_array()) return wrong(path + ".normalizers", "must be a list");
    for (std::size_t i = 0; i < it->size(); ++i)
      RETURN_IF_ERROR(
          normalizer((*it)[i], path + ".normalizers[" + std::to_string(i) + "]", depth + 1, out));
    return ok_status();
  }
  NormalizerStep step;
  if (type == "NFC") {
    step.kind = NormalizerStep::Kind::kNfc;
  } else if (type == "Replace") {
    step.kind = NormalizerStep::Kind::kReplace;
    ASSIGN_OR_RETURN(const auto p, pattern(node, path));
    if (p.second) return unsupported(path + ".pattern", node["pattern"]);
    step.pattern = p.first;
    ASSIGN_OR_RETURN(step.content, string_at(node, "content", path));
  } else if (type == "Prepend") {
    step.kind = NormalizerStep::Kind::kPrepend;
    ASSIGN_OR_RETURN(step.content, string_at(node, "prepend", path));
  } else {
    return unsupported(path + ".type", type);
  }
  out.normalizers.push_back(std::move(step));
  return ok_status();
}

Result<SplitBehavior> behavior_of(const std::string& name) {
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return invalid_argument("unknown");
}

Status Reader::pre_tokenizer(const Json& node, const std::string& path, int depth,
                             TokenizerPipeline& out) const {
  if (node.is_null()) return ok_status();
  if (depth > kMaxNesting) return wrong(path, "nests too deeply");
  ASSIGN_OR_RETURN(const std::string type, type_of(node, path));
  if (type == "Sequence") {
    const auto it = node.find("pretokenizers");
    if (it == node.end() || !it->is_array())
      return wrong(path + ".pretokenizers", "must be a list");
    for (std::size_t i = 0; i < it->size(); ++i)
      RETURN_IF_ERROR(pre_tokenizer((*it)[i], path + ".pretokenizers[" + std::to_string(i) + "]",
                                    depth + 1, out));
    return ok_status();
  }
  PreTokenizerStep step;
  if (type == "Split") {
    step.kind = PreTokenizerStep::Kind::kSplit;
    ASSIGN_OR_RETURN(const auto p, pattern(node, path));
    std::tie(step.pattern, step.pattern_is_regex) = p;
    ASSIGN_OR_RETURN(const std::string behavior, string_at(node, "behavior", path));
    auto parsed = behavior_of(behavior);
    if (!parsed.ok()) return unsupported(path + ".behavior", behavior);
    step.behavior = parsed.value();
    ASSIGN_OR_RETURN(step.invert, bool_or(node, "invert", false, path));
  } else if (type == "ByteLevel") {
    step.kind = PreTokenizerStep::Kind::kByteLevel;
    ASSIGN_OR_RETURN(step.add_prefix_space, bool_or(node, "add_prefix_space", true, path));
    ASSIGN_OR_RETURN(step.use_regex, bool_or(node, "use_regex", true, path));
  } else if (type == "Metaspace") {
    step.kind = PreTokenizerStep::Kind::kMetaspace;
    ASSIGN_OR_RETURN(step.replacement, string_at(node, "replacement", path));
    if (node.contains("prepend_scheme")) {
      ASSIGN_OR_RETURN(step.prepend_scheme, string_at(node, "prepend_scheme", path));
      if (step.prepend_scheme != "always" && step.prepend_scheme != "first" &&
          step.prepend_scheme != "never")
        return unsupported(path + ".prepend_scheme", step.prepend_scheme);
    } else {
      ASSIGN_OR_RETURN(const bool prefix, bool_or(node, "add_prefix_space", true, path));
      step.prepend_scheme = prefix ? "always" : "never";
    }
    ASSIGN_OR_RETURN(step.split, bool_or(node, "split", true, path));
  } else {
    return unsupported(path + ".type", type);
  }
  out.pre_tokenizers.push_back(std::move(step));
  return ok_status();
}

Status Reader::decoder(const Json& node, const std::string& path, int depth,
                       TokenizerPipeline& out) const {
  if (node.is_null()) return ok_status();
  if (depth > kMaxNesting) return wrong(path, "nests too deeply");
  ASSIGN_OR_RETURN(const std::string type, type_of(node, path));
  if (type == "Sequence") {
    const auto it = node.find("decoders");
    if (it == node.end() || !it->is_array()) return wrong(path + ".decoders", "must be a list");
    for (std::size_t i = 0; i < it->size(); ++i)
      RETURN_IF_ERROR(
          decoder((*it)[i], path + ".decoders[" + std::to_string(i) + "]", depth + 1, out));
    return ok_status();
  }
  DecoderStep step;
  if (type == "ByteLevel") {
    step.kind = DecoderStep::Kind::kByteLevel;
  } else if (type == "Replace") {
    step.kind = DecoderStep::Kind::kReplace;
    ASSIGN_OR_RETURN(const auto p, pattern(node, path));
    if (p.second) return unsupported(path + ".pattern", node["pattern"]);
    step.pattern = p.first;
    ASSIGN_OR_RETURN(step.content, string_at(node, "content", path));
  } else if (type == "ByteFallback") {
    step.kind = DecoderStep::Kind::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = DecoderStep::Kind::kFuse;
  } else if (type == "Strip") {
    step.kind = DecoderStep::Kind::kStrip;
    ASSIGN_OR_RETURN(step.content, string_at(node, "content", path));
    ASSIGN_OR_RETURN(step.start, int_or(node, "start", 0, path));
    ASSIGN_OR_RETURN(step.stop, int_or(node, "stop", 0, path));
  } else if (type == "Metaspace") {
    step.kind = DecoderStep::Kind::kMetaspace;
    ASSIGN_OR_RETURN(step.replacement, string_at(node, "replacement", path));
    std::string scheme = "always";
    if (node.contains("prepend_scheme")) {
      ASSIGN_OR_RETURN(scheme, string_at(node, "prepend_scheme", path));
    } else {
      ASSIGN_OR_RETURN(const bool prefix, bool_or(node, "add_prefix_space", true, path));
      scheme = prefix ? "always" : "never";
    }
    step.prepend = scheme != "never";
  } else {
    return unsupported(path + ".type", type);
  }
  out.decoders.push_back(std::move(step));
  return ok_status();
}

Status Reader::model(const Json& node, Vocabulary& vocab) const {
  ASSIGN_OR_RETURN(const std::string type, type_of(node, "model"));
  if (type != "BPE") return unsupported("model.type", type);
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const auto it = node.find(key);
    if (it != node.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty()))
      return unsupported(std::string("model.") + key, *it);
  }
  if (const auto it = node.find("dropout"); it != node.end() && !it->is_null())
    return unsupported("model.dropout", *it);

  const auto v = node.find("vocab");
  if (v == node.end() || !v->is_object())
    return wrong("model.vocab", "must be an object of piece: id");
  for (auto it = v->begin(); it != v->end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
        it.value().get<int64_t>() >= (1 << 24))
      return wrong("model.vocab[" + json_text(it.key()) + "]", "must be an id from 0 to 2^24");
    const auto id = static_cast<std::size_t>(it.value().get<int64_t>());
    if (id >= vocab.pieces.size()) vocab.pieces.resize(id + 1);
    vocab.pieces[id] = it.key();
  }

  const auto m = node.find("merges");
  if (m == node.end() || !m->is_array()) return wrong("model.merges", "must be a list");
  vocab.merges.reserve(m->size());
  for (std::size_t i = 0; i < m->size(); ++i) {
    const Json& merge = (*m)[i];
    if (merge.is_string()) {
      vocab.merges.push_back(merge.get<std::string>());
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
               merge[1].is_string()) {
      vocab.merges.push_back(merge[0].get<std::string>() + " " + merge[1].get<std::string>());
    } else {
      return wrong("model.merges[" + std::to_string(i) + "]",
                   "must be \"left right\" or [\"left\", \"right\"]");
    }
  }
  ASSIGN_OR_RETURN(vocab.ignore_merges, bool_or(node, "ignore_merges", false, "model"));
  ASSIGN_OR_RETURN(vocab.byte_fallback, bool_or(node, "byte_fallback", false, "model"));
  ASSIGN_OR_RETURN(vocab.fuse_unk, bool_or(node, "fuse_unk", false, "model"));
  vocab.unk_id = -1;
  if (const auto u = node.find("unk_token"); u != node.end() && u->is_string()) {
    const auto found = v->find(u->get<std::string>());
    if (found == v->end()) return wrong("model.unk_token", "names no token of model.vocab");
    vocab.unk_id = found->get<int32_t>();
  }
  return ok_status();
}

Status Reader::added_tokens(const Json& node, Vocabulary& vocab) const {
  if (node.is_null()) return ok_status();
  if (!node.is_array()) return wrong("added_tokens", "must be a list");
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string path = "added_tokens[" + std::to_string(i) + "]";
    const Json& t = node[i];
    if (!t.is_object()) return wrong(path, "must be an object");
    const auto id_it = t.find("id");
    if (id_it == t.end() || !id_it->is_number_integer() || id_it->get<int64_t>() < 0 ||
        id_it->get<int64_t>() >= (1 << 24))
      return wrong(path + ".id", "must be an id from 0 to 2^24");
    AddedToken token;
    token.id = id_it->get<int32_t>();
    ASSIGN_OR_RETURN(const std::string content, string_at(t, "content", path));
    ASSIGN_OR_RETURN(token.special, bool_or(t, "special", false, path));
    ASSIGN_OR_RETURN(token.lstrip, bool_or(t, "lstrip", false, path));
    ASSIGN_OR_RETURN(token.rstrip, bool_or(t, "rstrip", false, path));
    ASSIGN_OR_RETURN(token.single_word, bool_or(t, "single_word", false, path));
    ASSIGN_OR_RETURN(token.normalized, bool_or(t, "normalized", !token.special, path));
    const auto id = static_cast<std::size_t>(token.id);
    if (id >= vocab.pieces.size()) vocab.pieces.resize(id + 1);
    vocab.pieces[id] = content;
    vocab.added_tokens.push_back(token);
  }
  return ok_status();
}

// TemplateProcessing's single sequence: special tokens before $A are BOS,
// after it EOS (only one of each is supported).
Status Reader::post_processor(const Json& node, const std::string& path, int depth,
                              Vocabulary& vocab) const {
  if (node.is_null()) return ok_status();
  if (depth > kMaxNesting) return wrong(path, "nests too deeply");
  ASSIGN_OR_RETURN(const std::string type, type_of(node, path));
  if (type == "ByteLevel") return ok_status();  // offsets only
  if (type == "Sequence") {
    const auto it = node.find("processors");
    if (it == node.end() || !it->is_array()) return wrong(path + ".processors", "must be a list");
    for (std::size_t i = 0; i < it->size(); ++i)
      RETURN_IF_ERROR(post_processor((*it)[i], path + ".processors[" + std::to_string(i) + "]",
                                     depth + 1, vocab));
    return ok_status();
  }
  if (type != "TemplateProcessing") return unsupported(path + ".type", type);
  const auto single = node.find("single");
  const auto specials = node.find("special_tokens");
  if (single == node.end() || !single->is_array() || specials == node.end() ||
      !specials->is_object())
    return wrong(path, "needs 'single' (a list) and 'special_tokens' (an object)");
  bool seen_sequence = false;
  for (std::size_t i = 0; i < single->size(); ++i) {
    const Json& piece = (*single)[i];
    const std::string piece_path = path + ".single[" + std::to_string(i) + "]";
    if (piece.contains("Sequence")) {
      seen_sequence = true;
      continue;
    }
    const auto st = piece.find("SpecialToken");
    if (st == piece.end() || !st->is_object()) return unsupported(piece_path, piece);
    ASSIGN_OR_RETURN(const std::string name, string_at(*st, "id", piece_path + ".SpecialToken"));
    const auto entry = specials->find(name);
    if (entry == specials->end() || !entry->is_object() || !entry->contains("ids") ||
        !(*entry)["ids"].is_array() || (*entry)["ids"].size() != 1 ||
        !(*entry)["ids"][0].is_number_integer())
      return unsupported(path + ".special_tokens[" + json_text(name) + "]",
                         entry == specials->end() ? Json(nullptr) : *entry);
    const int32_t id = (*entry)["ids"][0].get<int32_t>();
    if (seen_sequence) {
      vocab.eos_id = id;
      vocab.add_eos = true;
    } else {
      vocab.bos_id = id;
      vocab.add_bos = true;
    }
  }
  return ok_status();
}

// A tokenizer_config.json token entry: "text" or {"content": "text"}.
std::string config_token(const Json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  return "";
}

int32_t id_of(const Vocabulary& vocab, std::string_view piece) {
  if (piece.empty()) return -1;
  for (const AddedToken& t : vocab.added_tokens)
    if (vocab.pieces[static_cast<std::size_t>(t.id)] == piece) return t.id;
  const auto it = std::find(vocab.pieces.begin(), vocab.pieces.end(), piece);
  return it == vocab.pieces.end() ? -1 : static_cast<int32_t>(it - vocab.pieces.begin());
}

Status read_config(std::string_view config_json, const std::string& origin, Vocabulary& vocab) {
  if (config_json.empty()) return ok_status();
  const Json config = Json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object())
    return invalid_argument(origin + ": tokenizer_config.json is not a JSON object");
  if (const int32_t bos = id_of(vocab, config_token(config, "bos_token")); bos >= 0)
    vocab.bos_id = bos;
  if (const int32_t eos = id_of(vocab, config_token(config, "eos_token")); eos >= 0)
    vocab.eos_id = eos;
  if (const auto it = config.find("chat_template"); it != config.end()) {
    if (it->is_string()) {
      vocab.chat_template = it->get<std::string>();
    } else if (it->is_array()) {  // [{"name": "default", "template": ...}, ...]
      for (const Json& entry : *it)
        if (entry.is_object() && entry.value("name", "") == "default" &&
            entry.contains("template") && entry["template"].is_string())
          vocab.chat_template = entry["template"].get<std::string>();
    }
  }
  return ok_status();
}

// Types from the added tokens (control / user-defined) and byte-fallback
// pieces; ids no entry names become unused placeholders.
Status finish_types(const std::string& origin, Vocabulary& vocab) {
  const std::size_t n = vocab.pieces.size();
  if (n == 0) return invalid_argument(origin + ": the vocabulary is empty");
  vocab.types.assign(n, TokenType::kNormal);
  vocab.scores.assign(n, 0.0f);
  for (std::size_t id = 0; id < n; ++id) {
    const std::string& p = vocab.pieces[id];
    if (p.empty()) {
      vocab.types[id] = TokenType::kUnused;
      vocab.pieces[id] = "[UNUSED_" + std::to_string(id) + "]";
    } else if (vocab.byte_fallback && p.size() == 6 && p.rfind("<0x", 0) == 0 && p[5] == '>') {
      vocab.types[id] = TokenType::kByte;
    }
  }
  for (const AddedToken& t : vocab.added_tokens)
    vocab.types[static_cast<std::size_t>(t.id)] =
        t.special ? TokenType::kControl : TokenType::kUserDefined;
  if (vocab.unk_id >= 0) vocab.types[static_cast<std::size_t>(vocab.unk_id)] = TokenType::kUnknown;
  return ok_status();
}

}  // namespace

bool looks_like_json(std::string_view bytes) {
  for (char c : bytes) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return c == '{';
  }
  return false;
}

Result<Vocabulary> parse_tokenizer_json(std::string_view json, std::string_view config_json,
                                        const std::string& origin) {
  const Json root = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object())
    return invalid_argument(origin +
                            ": not a JSON object (expected a Hugging Face tokenizer.json)");
  const Reader reader{origin};
  Vocabulary vocab;
  vocab.kind = VocabularyKind::kBytePairs;
  vocab.add_space_prefix = false;
  vocab.add_bos = false;
  vocab.bos_id = -1;
  vocab.eos_id = -1;
  const auto field = [&](const char* key) -> const Json& {
    static const Json null_json;
    const auto it = root.find(key);
    return it == root.end() ? null_json : *it;
  };
  if (!root.contains("model"))
    return invalid_argument(origin + ": no 'model' (not a tokenizer.json?)");
  RETURN_IF_ERROR(reader.model(root["model"], vocab));
  RETURN_IF_ERROR(reader.added_tokens(field("added_tokens"), vocab));
  auto pipeline = std::make_shared<TokenizerPipeline>();
  pipeline->whatwg_utf8 = true;
  RETURN_IF_ERROR(reader.normalizer(field("normalizer"), "normalizer", 0, *pipeline));
  RETURN_IF_ERROR(reader.pre_tokenizer(field("pre_tokenizer"), "pre_tokenizer", 0, *pipeline));
  RETURN_IF_ERROR(reader.decoder(field("decoder"), "decoder", 0, *pipeline));
  RETURN_IF_ERROR(reader.post_processor(field("post_processor"), "post_processor", 0, vocab));
  for (const PreTokenizerStep& step : pipeline->pre_tokenizers) {
    if (step.kind == PreTokenizerStep::Kind::kSplit && step.pattern_is_regex && vocab.pre.empty())
      vocab.pre = pre_name_for_split_regex(step.pattern);
  }
  vocab.pipeline = std::move(pipeline);
  RETURN_IF_ERROR(finish_types(origin, vocab));
  RETURN_IF_ERROR(read_config(config_json, origin, vocab));
  for (std::string_view name : kEndOfTurn) {
    const int32_t id = id_of(vocab, name);
    if (id >= 0 && vocab.types[static_cast<std::size_t>(id)] == TokenType::kControl) {
      vocab.eot_id = id;
      break;
    }
  }
  return vocab;
}

Result<Vocabulary> load_tokenizer_json(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string json,
                   read_text_file(path, "tokenizer.json", kMaxTokenizerJsonBytes));
  const std::filesystem::path config_path =
      std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  std::string config;
  std::error_code ec;
  if (std::filesystem::is_regular_file(config_path, ec)) {
    ASSIGN_OR_RETURN(config, read_text_file(config_path.string(), "tokenizer_config.json",
                                            kMaxTokenizerJsonBytes));
  }
  return parse_tokenizer_json(json, config, path);
}

}  // namespace tessera
