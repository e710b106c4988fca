// The named pre-tokenizers of GGUF tokenizer.ggml.pre. Each is the list of
// regexes the model's original tokenizer splits with, applied in turn (every
// regex splits the pieces the previous one left), as llama.cpp's
// llm_tokenizer_bpe defines them. Case-insensitive groups "(?i:'s|...)" are
// spelled out as character classes, which is what they match.
#include "core/tokenizer/tokenizer_pipeline.h"

#include <algorithm>
#include <span>

namespace tessera {
namespace {

// GPT-2's own pattern (also ByteLevel use_regex).
constexpr const char* kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";

constexpr const char* kContractions = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";

// Llama 3: words with one leading non-letter, numbers in runs of up to three.
const std::string kLlama3 =
    std::string(kContractions) +
    "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// Qwen 2: as Llama 3, with every digit alone.
const std::string kQwen2 = std::string(kContractions) +
                           "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                           "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

struct NamedPre {
  std::vector<std::string> names;
  std::vector<std::string> regexes;
  bool ignore_merges = false;
};

const std::vector<NamedPre>& named_pre_tokenizers() {
  static const std::vector<NamedPre> table = {
      {{"llama-bpe", "llama3", "llama-v3", "dbrx", "smaug-bpe"}, {kLlama3}, true},
      {{"qwen2", "deepseek-r1-qwen", "stablelm2"}, {kQwen2}, false},
      {{"gpt-2", "mpt", "olmo", "phi-2", "jais"}, {kGpt2}, false},
      {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva"},
       {"\\p{N}", kGpt2},
       false},
      {{"falcon"}, {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2, "[0-9][0-9][0-9]"}, false},
      {{"deepseek-coder"},
       {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[一-龥ࠀ-一가-퟿]+", "\\p{N}"},
       false},
      {{"deepseek-llm"},
       {"[\r\n]",
        // Letters of the scripts DeepSeek's tokenizer lists, with one leading space.
        "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ"
        "-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷ"
        "ᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼ"
        "ιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ"
        "-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ"
        "-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-"
        "Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃"
        "]+",
        "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$", "[一-龥ࠀ-一가-퟿]+", "\\p{N}+"},
       false},
  };
  return table;
}

const NamedPre* find_named_pre(const std::string& pre) {
  for (const NamedPre& entry : named_pre_tokenizers()) {
    if (std::find(entry.names.begin(), entry.names.end(), pre) != entry.names.end()) return &entry;
  }
  return nullptr;
}

}  // namespace

bool TokenizerPipeline::byte_level() const {
  return std::any_of(pre_tokenizers.begin(), pre_tokenizers.end(), [](const PreTokenizerStep& s) {
    return s.kind == PreTokenizerStep::Kind::kByteLevel;
  });
}

std::string supported_pre_tokenizer_names() {
  std::string out;
  for (const NamedPre& entry : named_pre_tokenizers()) {
    for (const std::string& name : entry.names) out += (out.empty() ? "" : ", ") + name;
  }
  return out;
}

Result<TokenizerPipeline> pipeline_for_pre(const std::string& pre) {
  const NamedPre* entry = find_named_pre(pre);
  if (entry == nullptr)
    return unimplemented(
        "the pre-tokenizer '" + pre +
        "' (tokenizer.ggml.pre) is not supported; supported: " + supported_pre_tokenizer_names());
  TokenizerPipeline pipeline;
  for (const std::string& regex : entry->regexes) {
    PreTokenizerStep split;
    split.kind = PreTokenizerStep::Kind::kSplit;
    split.pattern = regex;
    pipeline.pre_tokenizers.push_back(split);
  }
  PreTokenizerStep bytes;
  bytes.kind = PreTokenizerStep::Kind::kByteLevel;
  pipeline.pre_tokenizers.push_back(bytes);
  pipeline.decoders.push_back(DecoderStep{});  // ByteLevel
  return pipeline;
}

bool pre_ignores_merges(const std::string& pre) {
  const NamedPre* entry = find_named_pre(pre);
  return entry != nullptr && entry->ignore_merges;
}

std::string pre_name_for_split_regex(const std::string& pattern) {
  // tokenizer.json spells the contractions case-insensitively.
  std::string spelled = pattern;
  const std::string insensitive = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
  if (spelled.rfind(insensitive, 0) == 0)
    spelled = std::string(kContractions) + spelled.substr(insensitive.size());
  if (spelled == kLlama3) return "llama-bpe";
  if (spelled == kQwen2) return "qwen2";
  if (spelled == kGpt2) return "gpt-2";
  return "";
}

}  // namespace tessera
