// Splits template source into text and the tokens inside {{ }}, {% %} tags,
// dropping {# #} comments. Whitespace handling is the one chat templates are
// written for (Hugging Face transformers renders with trim_blocks and
// lstrip_blocks on, and @huggingface/jinja emulates the same):
//   - one trailing newline of the source is dropped (keep_trailing_newline off);
//   - lstrip_blocks: spaces and tabs between the start of a line and a {% or {#
//     tag are dropped (not before {{, nor before {%+);
//   - trim_blocks: the newline right after %} or #} is dropped (not after +%});
//   - {{- {%- {#- strip all whitespace before the tag, -}} -%} -#} all after it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/chat/ast.h"
#include "core/status/status.h"

namespace tessera::chat {

struct Token {
  enum class Kind {
    kText,         // text between tags (already whitespace-processed)
    kOutputBegin,  // {{
    kOutputEnd,    // }}
    kBlockBegin,   // {%
    kBlockEnd,     // %}
    kName,
    kString,  // text holds the unescaped value
    kInt,
    kFloat,
    kOperator,  // text holds it: + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } , . : |
    kEnd,
  };
  Kind kind;
  std::string text;
  SourcePos pos;
};

// InvalidArgument "origin:line:column: ..." on an unterminated tag, comment or
// string, or a character that cannot start a token.
Result<std::vector<Token>> tokenize(std::string_view source, const std::string& origin);

// "origin:line:column: " for messages.
std::string where(const std::string& origin, SourcePos pos);

}  // namespace tessera::chat
