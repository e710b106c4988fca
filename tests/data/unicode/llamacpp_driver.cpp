// Runs llama.cpp's own UTF-8 decoder and pre-tokenizer splitter (src/unicode.cpp, compiled
// from a llama.cpp checkout by make_llamacpp_reference.sh, not part of tessera) over the
// corpus of unicode_reference.json and the bad byte sequences there, and prints JSON.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "unicode.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: llamacpp_driver unicode_reference.json llamacpp_patterns.json\n";
    return 2;
  }
  std::ifstream reference_file(argv[1]), patterns_file(argv[2]);
  const auto reference = nlohmann::json::parse(reference_file);
  const auto patterns = nlohmann::json::parse(patterns_file);
  nlohmann::json out;
  for (const auto& entry : reference["utf8"]) {
    const std::string hex = entry["bytes"];
    std::string bytes;
    for (size_t i = 0; i < hex.size(); i += 3)
      bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    out["utf8"].push_back({{"bytes", hex}, {"llamacpp", unicode_cpts_from_utf8(bytes)}});
  }
  for (const auto& [name, exprs] : patterns["patterns"].items()) {
    nlohmann::json pieces_per_text = nlohmann::json::array();
    for (const auto& text : reference["corpus"]) {
      try {
        const auto words = unicode_regex_split(text.get<std::string>(),
                                               exprs.get<std::vector<std::string>>(), false);
        pieces_per_text.push_back(words);
      } catch (const std::exception& e) {
        pieces_per_text.push_back({{"error", e.what()}});
      }
    }
    out["presets"][name] = pieces_per_text;
  }
  std::cout << out.dump(1) << "\n";
  return 0;
}
