// llama.cpp's tokenizer test vectors: NAME.gguf.inp holds the texts, each
// followed by "\n__ggml_vocab_test__\n" (that newline is not part of the
// text); NAME.gguf.out one line of ids per text.
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/status/status.h"

namespace tessera::testing {

struct VocabCase {
  std::string text;
  std::vector<int32_t> ids;
};

inline std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The cases of `stem` (the path without .inp/.out).
inline std::vector<VocabCase> read_vocab_cases(const std::string& stem) {
  const std::string inp = read_all(stem + ".inp");
  const std::string out = read_all(stem + ".out");
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<VocabCase> cases;
  for (std::size_t pos = 0; pos < inp.size();) {
    const std::size_t end = inp.find(separator, pos);
    TESSERA_CHECK(end != std::string::npos, "test input does not end with a separator");
    cases.push_back({inp.substr(pos, end - pos), {}});
    pos = end + separator.size();
  }
  std::istringstream lines(out);
  std::string line;
  std::size_t i = 0;
  while (std::getline(lines, line)) {
    TESSERA_CHECK(i < cases.size(), "more output lines than cases");
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) cases[i].ids.push_back(id);
    ++i;
  }
  TESSERA_CHECK(i == cases.size(), "fewer output lines than cases");
  return cases;
}

}  // namespace tessera::testing
