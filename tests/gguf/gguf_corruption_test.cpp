// Corrupted GGUF files, table-driven: each case patches the bytes of a valid
// file (a tiny one from GgufWriter, and the real stories260K.gguf) and must
// get a clean Status with the expected code and a message naming the file.
// The bytes live on the heap (MappedFile::from_bytes) so that, under
// AddressSanitizer, any read past the end is caught.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "core/gguf/gguf_file.h"
#include "core/model/gguf_model.h"
#include "core/model/model.h"
#include "tests/gguf/gguf_test_util.h"

namespace tessera {
namespace {

using testing::put;

// Where the fields of a valid file are, from parsing it once.
struct Layout {
  std::vector<GgufKeyValue> kvs;
  std::vector<GgufTensorInfo> tensors;
  uint64_t size = 0;

  const GgufKeyValue* kv(std::string_view key) const {
    for (const GgufKeyValue& k : kvs)
      if (k.key == key) return &k;
    return nullptr;
  }
  static uint64_t type_at(const GgufKeyValue& k) { return k.offset + 8 + k.key.size(); }
  static uint64_t value_at(const GgufKeyValue& k) { return type_at(k) + 4; }

  const GgufTensorInfo* tensor(std::string_view name) const {
    for (const GgufTensorInfo& t : tensors)
      if (t.name == name) return &t;
    return nullptr;
  }
  static uint64_t n_dims_at(const GgufTensorInfo& t) { return t.info_offset + 8 + t.name.size(); }
  static uint64_t ne_at(const GgufTensorInfo& t, int d) {
    return n_dims_at(t) + 4 + 8 * static_cast<uint64_t>(d);
  }
  static uint64_t ggml_type_at(const GgufTensorInfo& t) { return ne_at(t, int(t.n_dims)); }
  static uint64_t offset_at(const GgufTensorInfo& t) { return ggml_type_at(t) + 4; }
};

Layout layout_of(const std::vector<uint8_t>& bytes) {
  auto g = GgufFile::parse(MappedFile::from_bytes("valid.gguf", bytes));
  TESSERA_CHECK(g.ok(), g.status().to_string());
  return Layout{g->metadata(), g->tensors(), bytes.size()};
}

// A mutation returns false when it does not apply to this file.
using Mutation = std::function<bool(std::vector<uint8_t>&, const Layout&)>;

struct Case {
  std::string name;
  Mutation mutate;
  StatusCode code;
  std::string message_part;  // must appear in the message ("" = anything)
};

// Patches field `T` of key `key` at `value_at + delta`.
template <typename T>
Mutation at_key(std::string key, uint64_t delta, T value, bool type_field = false) {
  return [=](std::vector<uint8_t>& b, const Layout& l) {
    const GgufKeyValue* k = l.kv(key);
    if (k == nullptr) return false;
    put<T>(b, (type_field ? Layout::type_at(*k) : Layout::value_at(*k)) + delta, value);
    return true;
  };
}

const char* kSomeTensor = "blk.0.attn_k.weight";  // 2-D in both files

std::vector<Case> cases() {
  const uint64_t huge = 1ull << 40;
  std::vector<Case> c;
  c.push_back({"bad magic",
               [](auto& b, auto&) {
                 b[0] = 'X';
                 return true;
               },
               StatusCode::kDataLoss, "magic"});
  c.push_back({"version 1",
               [](auto& b, auto&) {
                 put<uint32_t>(b, 4, 1);
                 return true;
               },
               StatusCode::kUnimplemented, "version 1"});
  c.push_back({"version 99",
               [](auto& b, auto&) {
                 put<uint32_t>(b, 4, 99);
                 return true;
               },
               StatusCode::kDataLoss, "version 99"});
  c.push_back({"version 0",
               [](auto& b, auto&) {
                 put<uint32_t>(b, 4, 0);
                 return true;
               },
               StatusCode::kDataLoss, "version 0"});
  c.push_back({"big-endian",
               [](auto& b, auto&) {
                 put<uint32_t>(b, 4, 0x03000000);
                 return true;
               },
               StatusCode::kUnimplemented, "big-endian"});
  c.push_back({"n_tensors 2^40",
               [=](auto& b, auto&) {
                 put<uint64_t>(b, 8, huge);
                 return true;
               },
               StatusCode::kDataLoss, "tensor count 1099511627776"});
  c.push_back({"n_kv 2^40",
               [=](auto& b, auto&) {
                 put<uint64_t>(b, 16, huge);
                 return true;
               },
               StatusCode::kDataLoss, "key/value count 1099511627776"});
  c.push_back({"n_kv all ones",
               [](auto& b, auto&) {
                 put<uint64_t>(b, 16, ~0ull);
                 return true;
               },
               StatusCode::kDataLoss, "key/value count"});
  c.push_back({"n_kv one too many",
               [](auto& b, auto& l) {
                 put<uint64_t>(b, 16, l.kvs.size() + 1);
                 return true;
               },
               StatusCode::kDataLoss, ""});
  c.push_back({"n_tensors one too many",
               [](auto& b, auto& l) {
                 put<uint64_t>(b, 8, l.tensors.size() + 1);
                 return true;
               },
               StatusCode::kDataLoss, ""});
  c.push_back({"empty key",
               [](auto& b, auto& l) {
                 put<uint64_t>(b, l.kvs[0].offset, 0);
                 return true;
               },
               StatusCode::kDataLoss, "empty"});
  c.push_back({"key length past the end",
               [](auto& b, auto& l) {
                 put<uint64_t>(b, l.kvs[0].offset, l.size);
                 return true;
               },
               StatusCode::kDataLoss, "past the end"});
  c.push_back({"key length 2^63",
               [](auto& b, auto& l) {
                 put<uint64_t>(b, l.kvs[0].offset, 1ull << 63);
                 return true;
               },
               StatusCode::kDataLoss, "past the end"});
  c.push_back({"string value length past the end",
               at_key<uint64_t>("general.architecture", 0, huge), StatusCode::kDataLoss,
               "past the end"});
  c.push_back({"unknown value type 13", at_key<uint32_t>("general.architecture", 0, 13, true),
               StatusCode::kDataLoss, "unknown value type 13"});
  c.push_back({"unknown value type 2^32-1",
               at_key<uint32_t>("llama.block_count", 0, 0xffffffffu, true), StatusCode::kDataLoss,
               "unknown value type 4294967295"});
  c.push_back({"array of an unknown type", at_key<uint32_t>("tokenizer.ggml.tokens", 0, 99),
               StatusCode::kDataLoss, "unknown value type 99"});
  c.push_back({"array of arrays", at_key<uint32_t>("tokenizer.ggml.tokens", 0, 9),
               StatusCode::kUnimplemented, "array of arrays"});
  c.push_back({"string array count past the end",
               at_key<uint64_t>("tokenizer.ggml.tokens", 4, huge), StatusCode::kDataLoss,
               "strings"});
  c.push_back({"numeric array count past the end",
               at_key<uint64_t>("tokenizer.ggml.scores", 4, 1ull << 62), StatusCode::kDataLoss,
               "past the end"});
  c.push_back({"string in an array past the end",
               at_key<uint64_t>("tokenizer.ggml.tokens", 12, huge), StatusCode::kDataLoss,
               "string #0"});
  c.push_back({"bool stored as 2", at_key<uint8_t>("tokenizer.ggml.add_space_prefix", 0, 2),
               StatusCode::kDataLoss, "must be 0 or 1"});
  c.push_back({"duplicate key",
               [](auto& b, auto& l) {
                 const GgufKeyValue* k = l.kv("tokenizer.ggml.bos_token_id");
                 if (k == nullptr || l.kv("tokenizer.ggml.eos_token_id") == nullptr) return false;
                 b[k->offset + 8 + 15] = 'e';  // "tokenizer.ggml.[b]os..." -> eos
                 return true;
               },
               StatusCode::kDataLoss, "duplicate key 'tokenizer.ggml.eos_token_id'"});
  c.push_back({"alignment 3", at_key<uint32_t>("general.alignment", 0, 3), StatusCode::kDataLoss,
               "not a power of two"});
  c.push_back({"alignment 0", at_key<uint32_t>("general.alignment", 0, 0), StatusCode::kDataLoss,
               "not a power of two"});
  c.push_back({"alignment of type i32",
               at_key<uint32_t>("general.alignment", 0, uint32_t(GgufType::kInt32), true),
               StatusCode::kDataLoss, "must be a u32"});

  auto at_tensor = [](std::function<void(std::vector<uint8_t>&, const GgufTensorInfo&)> f) {
    return [f](std::vector<uint8_t>& b, const Layout& l) {
      f(b, *l.tensor(kSomeTensor));
      return true;
    };
  };
  c.push_back({"n_dims 7",
               at_tensor([](auto& b, auto& t) { put<uint32_t>(b, Layout::n_dims_at(t), 7); }),
               StatusCode::kDataLoss, "n_dims = 7"});
  c.push_back({"n_dims 0",
               at_tensor([](auto& b, auto& t) { put<uint32_t>(b, Layout::n_dims_at(t), 0); }),
               StatusCode::kDataLoss, "n_dims = 0"});
  c.push_back({"zero dimension",
               at_tensor([](auto& b, auto& t) { put<uint64_t>(b, Layout::ne_at(t, 1), 0); }),
               StatusCode::kDataLoss, "ne[1] = 0"});
  c.push_back({"negative dimension",
               at_tensor([](auto& b, auto& t) { put<int64_t>(b, Layout::ne_at(t, 0), -5); }),
               StatusCode::kDataLoss, "ne[0] = -5"});
  c.push_back({"element count overflow", at_tensor([](auto& b, auto& t) {
                 put<uint64_t>(b, Layout::ne_at(t, 0), 1ull << 32);
                 put<uint64_t>(b, Layout::ne_at(t, 1), 1ull << 32);
               }),
               StatusCode::kDataLoss, "overflows"});
  c.push_back({"tensor bigger than the file", at_tensor([](auto& b, auto& t) {
                 put<uint64_t>(b, Layout::ne_at(t, 1), 1ull << 30);
               }),
               StatusCode::kDataLoss, "outside the file"});
  c.push_back({"unknown ggml type 77",
               at_tensor([](auto& b, auto& t) { put<uint32_t>(b, Layout::ggml_type_at(t), 77); }),
               StatusCode::kDataLoss, "unknown ggml type 77"});
  c.push_back({"removed ggml type 4",
               at_tensor([](auto& b, auto& t) { put<uint32_t>(b, Layout::ggml_type_at(t), 4); }),
               StatusCode::kDataLoss, "unknown ggml type 4"});
  c.push_back({"ne[0] not a multiple of the block", at_tensor([](auto& b, auto& t) {
                 put<uint32_t>(b, Layout::ggml_type_at(t), uint32_t(GgmlType::kQ4_0));
                 put<uint64_t>(b, Layout::ne_at(t, 0), 33);
               }),
               StatusCode::kDataLoss, "block size 32"});
  c.push_back({"misaligned tensor offset", at_tensor([](auto& b, auto& t) {
                 put<uint64_t>(b, Layout::offset_at(t), t.offset + 4);
               }),
               StatusCode::kDataLoss, "not a multiple of the alignment"});
  c.push_back({"tensor offset past the end",
               [](auto& b, auto& l) {
                 const GgufTensorInfo& t = l.tensors.back();
                 put<uint64_t>(b, Layout::offset_at(t), (l.size + 31) / 32 * 32);
                 return true;
               },
               StatusCode::kDataLoss, "outside the file"});
  c.push_back({"tensor offset wraps around", at_tensor([](auto& b, auto& t) {
                 put<uint64_t>(b, Layout::offset_at(t), ~0ull << 5);
               }),
               StatusCode::kDataLoss, "outside the file"});
  c.push_back({"duplicate tensor name",
               [](auto& b, auto& l) {
                 const GgufTensorInfo& t = *l.tensor("blk.0.attn_k.weight");
                 b[t.info_offset + 8 + 11] = 'q';  // "blk.0.attn_[k]..." -> attn_q
                 return true;
               },
               StatusCode::kDataLoss, "duplicate tensor name 'blk.0.attn_q.weight'"});
  return c;
}

void expect_clean_error(const Status& st, const std::string& file) {
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(file), std::string::npos) << st.to_string();
}

void run_cases(const std::vector<uint8_t>& valid, const std::string& name) {
  const Layout layout = layout_of(valid);
  int applied = 0;
  for (const Case& c : cases()) {
    SCOPED_TRACE(name + ": " + c.name);
    std::vector<uint8_t> bytes = valid;
    if (!c.mutate(bytes, layout)) continue;
    ++applied;
    auto g = GgufFile::parse(MappedFile::from_bytes(name, bytes));
    ASSERT_FALSE(g.ok()) << "corruption not detected";
    EXPECT_EQ(g.status().code(), c.code) << g.status().to_string();
    expect_clean_error(g.status(), name);
    if (c.code == StatusCode::kDataLoss) {
      EXPECT_NE(g.status().message().find(": at byte "), std::string::npos);
    }
    if (!c.message_part.empty()) {
      EXPECT_NE(g.status().message().find(c.message_part), std::string::npos)
          << g.status().to_string();
    }
  }
  EXPECT_GE(applied, 30);
}

std::vector<uint8_t> tiny_bytes() {
  GgufWriter w = testing::tiny_llama_writer();
  TESSERA_CHECK(w.set_alignment(32).ok(), "alignment");
  return w.serialize();
}

TEST(GgufCorruption, TinyFileCases) {
  run_cases(tiny_bytes(), "tiny.gguf");
}

TEST(GgufCorruption, Stories260KCases) {
  const std::string path = testing::model_path("stories260K.gguf");
  run_cases(testing::read_bytes(path), path);
}

// Every cut inside the header, metadata and tensor infos of the tiny file,
// and a spread of cuts through the data, fails cleanly.
TEST(GgufCorruption, TruncatedAnywhere) {
  const std::vector<uint8_t> valid = tiny_bytes();
  auto whole = GgufFile::parse(MappedFile::from_bytes("tiny.gguf", valid));
  ASSERT_TRUE(whole.ok());
  const uint64_t data_offset = whole->data_offset();
  std::vector<uint64_t> cuts;
  for (uint64_t n = 0; n <= data_offset; ++n) cuts.push_back(n);
  for (uint64_t n = data_offset; n < valid.size(); n += 37) cuts.push_back(n);
  cuts.push_back(valid.size() - 1);
  for (uint64_t n : cuts) {
    SCOPED_TRACE("cut at " + std::to_string(n));
    std::vector<uint8_t> bytes(valid.begin(), valid.begin() + static_cast<std::ptrdiff_t>(n));
    auto g = GgufFile::parse(MappedFile::from_bytes("cut.gguf", bytes));
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().code(), StatusCode::kDataLoss) << g.status().to_string();
    expect_clean_error(g.status(), "cut.gguf");
  }
}

TEST(GgufCorruption, Stories260KTruncated) {
  const std::string path = testing::model_path("stories260K.gguf");
  const std::vector<uint8_t> valid = testing::read_bytes(path);
  std::vector<uint64_t> cuts = {0, 1, 3, 4, 7, 8, 23, 24, 25, 100};
  for (uint64_t n = 101; n < 14200; n += 211) cuts.push_back(n);
  for (uint64_t n = 14200; n < valid.size(); n += 99991) cuts.push_back(n);
  cuts.push_back(valid.size() - 1);
  for (uint64_t n : cuts) {
    SCOPED_TRACE("cut at " + std::to_string(n));
    std::vector<uint8_t> bytes(valid.begin(), valid.begin() + static_cast<std::ptrdiff_t>(n));
    auto g = GgufFile::parse(MappedFile::from_bytes(path, std::move(bytes)));
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().code(), StatusCode::kDataLoss);
    expect_clean_error(g.status(), path);
  }
}

// Random structural damage with a fixed seed: a length, count or type field
// gets random high bits, which can never be valid.
TEST(GgufCorruption, RandomStructuralFlips) {
  const std::vector<uint8_t> valid = tiny_bytes();
  const Layout l = layout_of(valid);
  std::vector<uint64_t> u64_fields = {8, 16};  // n_tensors, n_kv
  std::vector<uint64_t> u32_fields;            // value types, n_dims, ggml types
  for (const GgufKeyValue& k : l.kvs) {
    u64_fields.push_back(k.offset);
    u32_fields.push_back(Layout::type_at(k));
  }
  for (const GgufTensorInfo& t : l.tensors) {
    u64_fields.push_back(t.info_offset);
    u32_fields.push_back(Layout::n_dims_at(t));
    u32_fields.push_back(Layout::ggml_type_at(t));
  }
  std::mt19937_64 rng(20240611);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<uint8_t> bytes = valid;
    uint64_t at = 0;
    if (trial % 2 == 0) {
      at = u64_fields[rng() % u64_fields.size()];
      put<uint64_t>(bytes, at, (rng() | (1ull << 45)) & ~0ull);
    } else {
      at = u32_fields[rng() % u32_fields.size()];
      put<uint32_t>(bytes, at, static_cast<uint32_t>(rng()) | 0x100u);
    }
    SCOPED_TRACE("trial " + std::to_string(trial) + " field at " + std::to_string(at));
    auto g = GgufFile::parse(MappedFile::from_bytes("flip.gguf", bytes));
    ASSERT_FALSE(g.ok());
    EXPECT_TRUE(g.status().code() == StatusCode::kDataLoss ||
                g.status().code() == StatusCode::kUnimplemented)
        << g.status().to_string();
    expect_clean_error(g.status(), "flip.gguf");
  }
}

// Arbitrary byte flips anywhere (which may leave the file valid, e.g. inside
// weights) through the reader and the model loader: never a crash, and any
// error is a well-formed Status naming the file.
TEST(GgufCorruption, RandomByteFlipsNeverCrash) {
  const std::vector<uint8_t> valid = tiny_bytes();
  std::mt19937 rng(7);
  int rejected = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    std::vector<uint8_t> bytes = valid;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      // Mostly in the structured front part, where flips matter.
      const std::size_t limit =
          trial % 4 == 0 ? bytes.size() : std::min<std::size_t>(bytes.size(), 1200);
      bytes[rng() % limit] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    auto g = GgufFile::parse(MappedFile::from_bytes("fuzz.gguf", bytes));
    Status st = g.status();
    if (g.ok()) st = load_gguf_model(*g).status();
    if (!st.ok()) {
      ++rejected;
      EXPECT_NE(st.message().find("fuzz.gguf"), std::string::npos) << st.to_string();
      EXPECT_NE(st.code(), StatusCode::kInternal) << st.to_string();
    }
  }
  EXPECT_GT(rejected, 500);
}

// Through the public entry point: the message carries the full path.
TEST(GgufCorruption, LoadModelNamesThePath) {
  testing::TempDir dir;
  std::vector<uint8_t> bytes = tiny_bytes();
  put<uint64_t>(bytes, 8, 1ull << 40);
  const std::string path = dir.write("broken.gguf", bytes);
  auto m = load_model(path);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(m.status().message().find(path), std::string::npos);
  auto v = load_vocabulary(path);
  EXPECT_EQ(v.status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace tessera
