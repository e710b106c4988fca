// Reader for llama2.c's tokenizer.bin (see the header for the layout). The
// pieces are copied out, so the mapping is released when reading ends.
#include "core/tokenizer/llama2c_tokenizer_file.h"

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/io/mapped_file.h"

namespace tessera {
namespace {

constexpr std::string_view kSpaceMark = "\xe2\x96\x81";  // U+2581, SentencePiece's space

// True for pieces spelled exactly "<0xHH>" (two upper- or lower-case hex digits).
bool is_byte_piece(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return false;
  auto hex = [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  };
  return hex(piece[3]) && hex(piece[4]);
}

// llama2.c's exporter wrote BOS/EOS as "\n<s>\n" and "\n</s>\n" so that run.c
// could print them; the GGUF form (and SentencePiece) has "<s>" and "</s>".
std::string trim_newlines(std::string_view piece) {
  while (!piece.empty() && (piece.front() == '\n' || piece.front() == '\r')) piece.remove_prefix(1);
  while (!piece.empty() && (piece.back() == '\n' || piece.back() == '\r')) piece.remove_suffix(1);
  return std::string(piece);
}

std::string spaces_to_marks(std::string_view piece) {
  std::string out;
  out.reserve(piece.size());
  for (char c : piece) {
    if (c == ' ')
      out += kSpaceMark;
    else
      out += c;
  }
  return out;
}

template <typename T>
T read_le(const char* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));  // the format is little-endian, as is every host we build for
  return value;
}

}  // namespace

Result<Vocabulary> read_llama2c_tokenizer(const std::string& path) {
  auto file = MappedFile::open(path);
  if (!file.ok()) {
    return file.status().with_context("reading llama2.c tokenizer '" + path +
                                      "' (check the path given with --tokenizer)");
  }
  return parse_llama2c_tokenizer(**file);
}

Result<Vocabulary> parse_llama2c_tokenizer(const MappedFile& file) {
  const std::string where = "reading llama2.c tokenizer '" + file.path() + "'";
  const auto* data = reinterpret_cast<const char*>(file.data());
  const std::size_t size = file.size();
  if (size < 4)
    return data_loss(where + ": the file is " + std::to_string(size) +
                     " bytes, too short for the int32 max_token_length header; is this a "
                     "tokenizer.bin from llama2.c?");
  const int32_t max_token_length = read_le<int32_t>(data);
  if (max_token_length <= 0)
    return data_loss(where + ": max_token_length is " + std::to_string(max_token_length) +
                     ", expected a positive number; is this a tokenizer.bin from llama2.c?");

  Vocabulary vocab;
  std::size_t offset = 4;
  while (offset < size) {
    const auto index = static_cast<int32_t>(vocab.pieces.size());
    const std::string token =
        "token " + std::to_string(index) + " at byte offset " + std::to_string(offset);
    if (size - offset < 8)
      return data_loss(where + ": " + token + " is truncated: " + std::to_string(size - offset) +
                       " bytes left, a record needs at least 8 (float32 score, int32 length); "
                       "the file is cut short or not a llama2.c tokenizer");
    const float score = read_le<float>(data + offset);
    const int32_t length = read_le<int32_t>(data + offset + 4);
    offset += 8;
    if (length < 0 || length > max_token_length)
      return data_loss(where + ": " + token + " has byte length " + std::to_string(length) +
                       ", outside [0, max_token_length = " + std::to_string(max_token_length) +
                       "]; the file is corrupt");
    if (size - offset < static_cast<std::size_t>(length))
      return data_loss(where + ": " + token + " needs " + std::to_string(length) +
                       " bytes but only " + std::to_string(size - offset) +
                       " remain; the file is cut short");
    std::string_view raw(data + offset, static_cast<std::size_t>(length));
    offset += static_cast<std::size_t>(length);

    TokenType type = TokenType::kNormal;
    std::string piece;
    if (index == 0) {
      type = TokenType::kUnknown;
      piece = std::string(raw);
    } else if (index == 1 || index == 2) {
      type = TokenType::kControl;
      piece = trim_newlines(raw);
    } else if (is_byte_piece(raw)) {
      type = TokenType::kByte;
      piece = std::string(raw);
    } else {
      piece = spaces_to_marks(raw);
    }
    vocab.pieces.push_back(std::move(piece));
    vocab.scores.push_back(score);
    vocab.types.push_back(type);
  }

  if (vocab.size() < 3)
    return data_loss(where + ": only " + std::to_string(vocab.size()) +
                     " tokens; a llama2.c vocabulary needs at least <unk>, <s> and </s>");
  vocab.unk_id = 0;
  vocab.bos_id = 1;
  vocab.eos_id = 2;
  vocab.add_space_prefix = true;  // run.c's encoder always adds the dummy prefix
  return vocab;
}

}  // namespace tessera
