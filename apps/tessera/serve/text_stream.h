// Generated tokens as text for a client, as they come: bytes held back while
// a UTF-8 character is incomplete (a token may end inside one), and the text
// cut where a stop string begins, never streaming a prefix of a stop string
// that may still complete.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tokenizer/tokenizer.h"

namespace tessera::serve {

class TextStream {
 public:
  TextStream(const Tokenizer& tokenizer, int32_t previous, std::vector<std::string> stop);

  // Adds a token; returns the text that is now safe to send (possibly "").
  std::string push(int32_t token);
  // The text still held back, at the end of the turn (invalid UTF-8 left
  // as the tokenizer gave it, as llama-server does).
  std::string finish();
  // A stop string appeared: the turn should end; nothing after it is sent.
  bool stopped() const { return stopped_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }

 private:
  // Length of the prefix of held_ that may be sent now.
  std::size_t releasable() const;

  const Tokenizer& tokenizer_;
  int32_t previous_;
  std::vector<std::string> stop_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace tessera::serve
