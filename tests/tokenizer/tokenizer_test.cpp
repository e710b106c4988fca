// Tokenizer on hand-made vocabularies (merge order, ties, byte fallback, the
// decoder's space rule), against a naive reference BPE, and round trips with
// the tok512 vocabulary of stories260K.
#include "core/tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/tokenizer/llama2c_tokenizer_file.h"

namespace tessera {
namespace {

const std::string kModels = std::string(TESSERA_SHARED_DIR) + "/models";
const std::string kData = std::string(TESSERA_SHARED_DIR) + "/data";
#define SP "\xe2\x96\x81"  // U+2581

// ids 0..2: <unk>, <s>, </s>; then the byte tokens when with_bytes; then `pieces`.
Vocabulary make_vocab(const std::vector<std::pair<std::string, float>>& pieces, bool with_bytes,
                      bool add_space_prefix = false) {
  Vocabulary v;
  auto add = [&](std::string piece, float score, TokenType type) {
    v.pieces.push_back(std::move(piece));
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  add("<unk>", 0, TokenType::kUnknown);
  add("<s>", 0, TokenType::kControl);
  add("</s>", 0, TokenType::kControl);
  if (with_bytes) {
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      add(name, 0, TokenType::kByte);
    }
  }
  for (const auto& [piece, score] : pieces) add(piece, score, TokenType::kNormal);
  v.add_space_prefix = add_space_prefix;
  return v;
}

// The pieces of `ids`, for readable failures.
std::vector<std::string> pieces_of(const Tokenizer& t, const std::vector<int32_t>& ids) {
  std::vector<std::string> out;
  for (int32_t id : ids) out.push_back(t.vocabulary().pieces[static_cast<std::size_t>(id)]);
  return out;
}

using Pieces = std::vector<std::string>;

TEST(Tokenizer, MergesHighestScoreFirst) {
  // "ab" and "bc" compete for the 'b' of "abc"; the higher score wins.
  Tokenizer bc_wins(
      make_vocab({{"a", -10}, {"b", -10}, {"c", -10}, {"ab", -2}, {"bc", -1}}, false));
  EXPECT_EQ(pieces_of(bc_wins, bc_wins.encode("abc", false).value()), (Pieces{"a", "bc"}));
  Tokenizer ab_wins(
      make_vocab({{"a", -10}, {"b", -10}, {"c", -10}, {"ab", -1}, {"bc", -2}}, false));
  EXPECT_EQ(pieces_of(ab_wins, ab_wins.encode("abc", false).value()), (Pieces{"ab", "c"}));
}

TEST(Tokenizer, TiesGoToTheLeftmostPair) {
  Tokenizer t(make_vocab({{"a", -10}, {"b", -10}, {"c", -10}, {"ab", -1}, {"bc", -1}}, false));
  EXPECT_EQ(pieces_of(t, t.encode("abc", false).value()), (Pieces{"ab", "c"}));
  Tokenizer aa(make_vocab({{"a", -10}, {"aa", -1}}, false));
  EXPECT_EQ(pieces_of(aa, aa.encode("aaa", false).value()), (Pieces{"aa", "a"}));
  EXPECT_EQ(pieces_of(aa, aa.encode("aaaaa", false).value()), (Pieces{"aa", "aa", "a"}));
}

TEST(Tokenizer, MergesChainThroughNewNeighbours) {
  // "abcd": bc first, then a+bc, then abc+d; "ab" never forms because 'b' is taken.
  Tokenizer t(make_vocab({{"a", -10},
                          {"b", -10},
                          {"c", -10},
                          {"d", -10},
                          {"bc", -1},
                          {"ab", -2},
                          {"abc", -3},
                          {"abcd", -4}},
                         false));
  EXPECT_EQ(pieces_of(t, t.encode("abcd", false).value()), (Pieces{"abcd"}));
  EXPECT_EQ(pieces_of(t, t.encode("abcdab", false).value()), (Pieces{"abcd", "ab"}));
  // A piece that no chain of merges reaches is never produced.
  Tokenizer unreachable(make_vocab({{"a", -10}, {"b", -10}, {"c", -10}, {"abc", -1}}, false));
  EXPECT_EQ(pieces_of(unreachable, unreachable.encode("abc", false).value()),
            (Pieces{"a", "b", "c"}));
}

TEST(Tokenizer, SpacesAndPrefix) {
  Tokenizer with_prefix(
      make_vocab({{SP, -10}, {"a", -10}, {"b", -10}, {SP "a", -1}, {SP SP, -2}}, false, true));
  EXPECT_EQ(pieces_of(with_prefix, with_prefix.encode("a b", false).value()),
            (Pieces{SP "a", SP, "b"}));
  EXPECT_EQ(pieces_of(with_prefix, with_prefix.encode(" a", false).value()), (Pieces{SP, SP "a"}));
  EXPECT_EQ(pieces_of(with_prefix, with_prefix.encode("  ", false).value()), (Pieces{SP SP, SP}));
  EXPECT_TRUE(with_prefix.encode("", false).value().empty());
  EXPECT_EQ(with_prefix.encode("", true).value(), (std::vector<int32_t>{1}));
  EXPECT_EQ(with_prefix.encode("a", true).value().front(), with_prefix.bos());

  Tokenizer no_prefix(
      make_vocab({{SP, -10}, {"a", -10}, {"b", -10}, {SP "a", -1}, {SP SP, -2}}, false, false));
  EXPECT_EQ(pieces_of(no_prefix, no_prefix.encode("a b", false).value()), (Pieces{"a", SP, "b"}));
}

TEST(Tokenizer, ByteFallback) {
  Tokenizer t(make_vocab({{"a", -10}, {"\xc3\xa9", -10}}, true));
  // 'ü' (C3 BC) is not a piece: its two bytes; 'é' is one.
  const auto ids = t.encode("a\xc3\xbc\xc3\xa9", false).value();
  EXPECT_EQ(pieces_of(t, ids), (Pieces{"a", "<0xC3>", "<0xBC>", "\xc3\xa9"}));
  EXPECT_EQ(t.decode(ids), "a\xc3\xbc\xc3\xa9");
  // A 4-byte character.
  EXPECT_EQ(pieces_of(t, t.encode("\xf0\x9f\x98\x81", false).value()),
            (Pieces{"<0xF0>", "<0x9F>", "<0x98>", "<0x81>"}));
}

TEST(Tokenizer, UnknownWithoutByteTokens) {
  Tokenizer t(make_vocab({{"a", -10}}, false));
  // One unk per unknown character, not per byte.
  EXPECT_EQ(t.encode("a\xc3\xbc"
                     "a",
                     false)
                .value(),
            (std::vector<int32_t>{3, 0, 3}));
  EXPECT_EQ(t.decode(std::vector<int32_t>{3, 0, 3}), "a \xe2\x81\x87 a");
}

// GGUF files may declare unknown_token_id = 0xffffffff ("none"). Text with a
// character the vocabulary cannot spell is then an error that names it, never
// the id -1 (which perplexity used to read logits with).
TEST(Tokenizer, UnencodableCharacterWithoutUnkIsAnError) {
  Vocabulary v = make_vocab({{"a", -10}, {SP, -10}}, false);
  v.unk_id = -1;
  Tokenizer t(v);
  EXPECT_EQ(t.encode("a a", false).value(), (std::vector<int32_t>{3, 4, 3}));
  const auto bad = t.encode("a a\xc3\xa9", false);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'\xc3\xa9' (U+00E9) at byte 3"), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("no unknown token"), std::string::npos);
  // A stray byte and a control character are named as such; the offset counts
  // bytes of the text as given (the space prefix does not shift it).
  Vocabulary prefixed = v;
  prefixed.add_space_prefix = true;
  const auto stray = Tokenizer(prefixed).encode("a \xff", false);
  ASSERT_FALSE(stray.ok());
  EXPECT_NE(stray.status().message().find("the byte 0xFF (not valid UTF-8) at byte 2"),
            std::string::npos)
      << stray.status().message();
  const auto control = t.encode("\x01", true);
  ASSERT_FALSE(control.ok());
  EXPECT_NE(control.status().message().find("control character U+0001 at byte 0"),
            std::string::npos)
      << control.status().message();
}

// A vocabulary without BOS (bos_token_id = -1) encodes without one instead of
// putting -1 in front.
TEST(Tokenizer, NoBosTokenMeansNoneIsAdded) {
  Vocabulary v = make_vocab({{"a", -10}}, false);
  v.bos_id = -1;
  Tokenizer t(v);
  EXPECT_EQ(t.encode("a", true).value(), (std::vector<int32_t>{3}));
  EXPECT_TRUE(t.encode("", true).value().empty());
}

TEST(Tokenizer, InvalidUtf8BecomesBytes) {
  Tokenizer t(make_vocab({{"a", -10}, {"\xe2\x82\xac", -10}}, true));
  const std::vector<std::string> inputs = {
      "\xff",  // never valid
      "a\x80"
      "a",         // stray continuation byte
      "\xe2\x82",  // truncated 3-byte sequence at the end
      "\xe2\x82"
      "a",                 // truncated, followed by ASCII
      "\xc0\xaf",          // overlong lead byte
      "\xf5\x80\x80\x80",  // beyond U+10FFFF
      "\xe2\x82\xac\xe2",  // a whole character then a cut one
  };
  for (const auto& input : inputs) {
    const auto ids = t.encode(input, false).value();
    EXPECT_EQ(t.decode(ids), input);
    for (int32_t id : ids) EXPECT_NE(id, 0) << "unk for input of " << input.size() << " bytes";
  }
  EXPECT_EQ(pieces_of(t, t.encode("\xe2\x82\xac\xe2", false).value()),
            (Pieces{"\xe2\x82\xac", "<0xE2>"}));
}

TEST(Tokenizer, ControlAndBytePiecesAreNeverSpelledFromText) {
  Tokenizer t(make_vocab({{"<", -10}, {"s", -10}, {">", -10}, {"<s", -1}}, true));
  // "<s>" is the control token's piece, but text spelling it stays text.
  EXPECT_EQ(pieces_of(t, t.encode("<s>", false).value()), (Pieces{"<s", ">"}));
}

TEST(Tokenizer, DecodeDropsLeadingSpaceAfterBos) {
  Tokenizer t(make_vocab({{SP "hi", -1}, {SP, -2}, {"hi", -3}}, true, true));
  const int32_t hi = t.find_piece(SP "hi");
  const int32_t space = t.find_piece(SP);
  ASSERT_GE(hi, 0);
  EXPECT_EQ(t.decode_token(t.bos(), hi), "hi");
  EXPECT_EQ(t.decode_token(hi, hi), " hi");
  EXPECT_EQ(t.decode_token(t.bos(), space), "");
  EXPECT_EQ(t.decode_token(t.bos(), t.bos()), "");
  EXPECT_EQ(t.decode_token(hi, t.eos()), "");
  // A byte token for ' ' right after BOS is a real space, not the dummy prefix.
  EXPECT_EQ(t.decode_token(t.bos(), 3 + ' '), " ");
  EXPECT_EQ(t.decode(std::vector<int32_t>{1, hi, hi, 2}), "hi hi");
  EXPECT_EQ(t.decode(std::vector<int32_t>{hi, hi}), "hi hi");  // the start counts as after BOS
  // Ids outside the vocabulary print nothing.
  EXPECT_EQ(t.decode_token(hi, -1), "");
  EXPECT_EQ(t.decode_token(hi, t.vocabulary().size()), "");

  // Without the dummy prefix nothing is dropped.
  Tokenizer raw(make_vocab({{SP "hi", -1}}, true, false));
  EXPECT_EQ(raw.decode_token(raw.bos(), raw.find_piece(SP "hi")), " hi");
}

// The definition of SentencePiece BPE, written the slow obvious way: merge the
// best adjacent pair (highest score, then leftmost) until none is a piece.
std::vector<int32_t> reference_encode(const Tokenizer& t, std::string_view text) {
  std::string norm = t.vocabulary().add_space_prefix && !text.empty() ? SP : "";
  for (char c : text) norm += c == ' ' ? std::string(SP) : std::string(1, c);
  std::vector<std::string> symbols;
  for (std::size_t i = 0; i < norm.size();) {
    const auto lead = static_cast<unsigned char>(norm[i]);
    std::size_t n = lead >= 0xF0 && lead <= 0xF4   ? 4
                    : lead >= 0xE0 && lead <= 0xEF ? 3
                    : lead >= 0xC2 && lead <= 0xDF ? 2
                                                   : 1;
    if (i + n > norm.size()) n = 1;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(norm[i + k]) & 0xC0) != 0x80) n = 1;
    symbols.push_back(norm.substr(i, n));
    i += n;
  }
  for (;;) {
    int best = -1;
    float best_score = 0;
    for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
      const int32_t id = t.find_piece(symbols[i] + symbols[i + 1]);
      if (id < 0) continue;
      const float score = t.vocabulary().scores[static_cast<std::size_t>(id)];
      if (best < 0 || score > best_score) {
        best = static_cast<int>(i);
        best_score = score;
      }
    }
    if (best < 0) break;
    symbols[static_cast<std::size_t>(best)] += symbols[static_cast<std::size_t>(best) + 1];
    symbols.erase(symbols.begin() + best + 1);
  }
  std::vector<int32_t> ids;
  for (const auto& s : symbols) {
    const int32_t id = t.find_piece(s);
    if (id >= 0) {
      ids.push_back(id);
    } else {
      for (unsigned char c : s) {
        char name[8];
        std::snprintf(name, sizeof(name), "<0x%02X>", c);
        const auto& pieces = t.vocabulary().pieces;
        ids.push_back(
            static_cast<int32_t>(std::find(pieces.begin(), pieces.end(), name) - pieces.begin()));
      }
    }
  }
  return ids;
}

std::string read_text(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.size() > max_bytes) text.resize(max_bytes);
  return text;
}

Tokenizer tok512() {
  auto vocab = read_llama2c_tokenizer(kModels + "/tok512.bin");
  TESSERA_CHECK(vocab.ok(), vocab.status().to_string());
  return Tokenizer(std::move(vocab).value());
}

TEST(Tokenizer, MatchesReferenceBpeOnRandomText) {
  const Tokenizer t = tok512();
  const std::string story = read_text(kData + "/tinystories_train_head.txt", 200000);
  ASSERT_GT(story.size(), 10000u);
  std::mt19937 rng(12345);
  const std::vector<std::string> extra = {" ",    "  ", "\n", "\xc3\xa9", "\xe2\x82\xac",
                                          "\xff", "zz"};
  for (int round = 0; round < 200; ++round) {
    // A slice of real text with random damage.
    const std::size_t start = rng() % (story.size() - 200);
    std::string text = story.substr(start, rng() % 120);
    for (int k = 0; k < 3; ++k) {
      const std::size_t at = text.empty() ? 0 : rng() % text.size();
      text.insert(at, extra[rng() % extra.size()]);
    }
    EXPECT_EQ(t.encode(text, false).value(), reference_encode(t, text)) << "text: [" << text << "]";
  }
}

TEST(Tokenizer, MatchesReferenceBpeWithManyTies) {
  // Random vocabularies over a 3-letter alphabet with only three distinct
  // scores, so equal-score candidates compete all the time.
  std::mt19937 rng(777);
  for (int round = 0; round < 100; ++round) {
    std::vector<std::pair<std::string, float>> pieces = {{"a", -9}, {"b", -9}, {"c", -9}};
    for (int k = 0; k < 12; ++k) {
      std::string piece;
      const int length = 2 + static_cast<int>(rng() % 3);
      for (int j = 0; j < length; ++j) piece += static_cast<char>('a' + rng() % 3);
      pieces.push_back({piece, -static_cast<float>(rng() % 3)});
    }
    const Tokenizer t(make_vocab(pieces, true));
    for (int s = 0; s < 20; ++s) {
      std::string text;
      const int length = static_cast<int>(rng() % 40);
      for (int j = 0; j < length; ++j) text += static_cast<char>('a' + rng() % 4);  // 'd': bytes
      EXPECT_EQ(t.encode(text, false).value(), reference_encode(t, text))
          << "text: [" << text << "]";
    }
  }
}

TEST(Tokenizer, Tok512RoundTripsStories) {
  const Tokenizer t = tok512();
  const std::string text = read_text(kData + "/tinystories_train_head.txt", 20000);
  ASSERT_EQ(text.size(), 20000u);
  const auto plain = t.encode(text, false).value();
  const auto with_bos = t.encode(text, true).value();
  ASSERT_EQ(with_bos.size(), plain.size() + 1);
  EXPECT_EQ(with_bos.front(), t.bos());
  EXPECT_TRUE(std::equal(plain.begin(), plain.end(), with_bos.begin() + 1));
  EXPECT_LT(plain.size(), text.size() / 2);  // it actually merges
  EXPECT_EQ(t.decode(plain), text);
  EXPECT_EQ(t.decode(with_bos), text);

  // Streaming gives the same text as the whole-sequence decode.
  std::string streamed;
  for (std::size_t i = 1; i < with_bos.size(); ++i)
    streamed += t.decode_token(with_bos[i - 1], with_bos[i]);
  EXPECT_EQ(streamed, text);
}

TEST(Tokenizer, Tok512RoundTripsOddStrings) {
  const Tokenizer t = tok512();
  const std::vector<std::string> texts = {
      "",
      " ",
      "   ",
      "\n",
      "\n\n",
      " leading space",
      "trailing space ",
      "two  spaces   three\ttab",
      "Line one.\nLine two.\n\nNew paragraph.",
      "caf\xc3\xa9 na\xc3\xafve \xe2\x82\xac 5 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80",
      "\xc3\x89t\xc3\xa9",
      "\xff\xfe broken \xe2\x82",
      std::string("nul\0byte", 8),
  };
  for (const auto& text : texts) {
    for (bool bos : {false, true}) {
      const auto ids = t.encode(text, bos).value();
      EXPECT_EQ(t.decode(ids), text) << "[" << text << "] bos=" << bos;
      for (int32_t id : ids) EXPECT_NE(id, 0) << "unk in [" << text << "]";
    }
  }
  EXPECT_TRUE(t.encode("", false).value().empty());
  EXPECT_EQ(t.encode("", true).value(), (std::vector<int32_t>{t.bos()}));
}

TEST(Tokenizer, LongTextWithoutSpacesIsFast) {
  // A quadratic merge loop would take minutes here (200k symbols).
  const Tokenizer t = tok512();
  std::string text;
  while (text.size() < 200000) text += "thelittlegirlwenttotheparkandsawabigdog";
  const auto ids = t.encode(text, false).value();
  EXPECT_EQ(t.decode(ids), text);
  EXPECT_LT(ids.size(), text.size() * 3 / 4);  // tok512 merges mostly after "▁"
}

}  // namespace
}  // namespace tessera
