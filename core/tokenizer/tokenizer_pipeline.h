// How a byte-pair tokenizer prepares text and reads tokens back, as plain
// data: the Hugging Face tokenizer.json normalizer, pre_tokenizer and decoder
// steps that tessera supports, flattened (a Sequence becomes its steps). The
// GGUF loader builds one from tokenizer.ggml.pre (named regex lists, as
// llama.cpp defines them), the tokenizer.json reader from the file.
#pragma once

#include <string>
#include <vector>

#include "core/status/status.h"

namespace tessera {

struct NormalizerStep {
  enum class Kind { kNfc, kReplace, kPrepend };
  Kind kind = Kind::kNfc;
  std::string pattern;  // kReplace: the literal text replaced
  std::string content;  // kReplace: its replacement; kPrepend: the prefix
};

// What a Split keeps of a match (Hugging Face SplitDelimiterBehavior).
enum class SplitBehavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct PreTokenizerStep {
  enum class Kind { kSplit, kByteLevel, kMetaspace };
  Kind kind = Kind::kSplit;
  // kSplit
  std::string pattern;
  bool pattern_is_regex = true;
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  // kByteLevel
  bool add_prefix_space = false;
  bool use_regex = false;  // split with the GPT-2 regex first
  // kMetaspace
  std::string replacement = "\xe2\x96\x81";
  std::string prepend_scheme = "always";  // always | first | never
  bool split = true;
};

struct DecoderStep {
  enum class Kind { kByteLevel, kReplace, kByteFallback, kFuse, kStrip, kMetaspace };
  Kind kind = Kind::kByteLevel;
  std::string pattern;  // kReplace
  std::string content;  // kReplace: replacement; kStrip: the character stripped
  int start = 0;        // kStrip: characters stripped at the start
  int stop = 0;         // kStrip: at the end
  std::string replacement = "\xe2\x96\x81";  // kMetaspace
  bool prepend = true;                       // kMetaspace: the first token's space was added
};

struct TokenizerPipeline {
  std::vector<NormalizerStep> normalizers;
  std::vector<PreTokenizerStep> pre_tokenizers;
  std::vector<DecoderStep> decoders;
  // How invalid UTF-8 in the text becomes U+FFFD: llama.cpp's way (each bad
  // byte; GGUF vocabularies) or the WHATWG decoder's (tokenizer.json, whose
  // reference implementations tokenize JS or Rust strings).
  bool whatwg_utf8 = false;
  // Whether the pieces are in the GPT-2 byte alphabet (a ByteLevel step).
  bool byte_level() const;
};

// The pre-tokenizer names of GGUF tokenizer.ggml.pre this runtime knows, as
// one comma-separated line for error messages.
std::string supported_pre_tokenizer_names();

// The pipeline llama.cpp uses for a GGUF `pre` name: its regexes as Isolated
// splits, then byte-level encoding; a ByteLevel decoder. Unimplemented for a
// name it does not know (the message lists the known ones).
Result<TokenizerPipeline> pipeline_for_pre(const std::string& pre);

// Whether llama.cpp treats whole-word vocabulary tokens as final for `pre`
// (llama3's ignore_merges).
bool pre_ignores_merges(const std::string& pre);

// The `pre` name whose regexes a tokenizer.json Split pattern matches, for
// writing a GGUF (llama.cpp hashes a test string instead), or "".
std::string pre_name_for_split_regex(const std::string& pattern);

}  // namespace tessera
