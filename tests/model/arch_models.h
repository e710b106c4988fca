// The small synthetic models of each architecture (`tessera make-model
// --shape tiny --arch ARCH`'s code path), written into the build tree for the
// model tests, and copies of them with one thing changed for the bad-input ones.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"
#include "core/gguf/synthetic_model.h"
#include "tests/model/quantized_models.h"

namespace tessera::testing {

// Every architecture make-model writes ("llama3" is a llama with rope_freqs).
inline const std::vector<std::string> kArchitectures = {"llama", "llama3", "qwen2", "qwen3",
                                                        "gemma3"};

// test-models/tiny-<arch>-<dtype>.gguf: the "tiny" shape with the 512-token
// stories260K vocabulary.
inline std::string arch_model(const std::string& arch, DType dtype = DType::kF32) {
  const std::string out =
      test_model_dir() + "/tiny-" + arch + "-" + std::string(dtype_name(dtype)) + ".gguf";
  auto spec = synthetic_shape("tiny", arch);
  EXPECT_TRUE(spec.ok()) << spec.status().to_string();
  if (!spec.ok()) return out;
  spec->dtype = dtype;
  spec->vocab_from = kSharedModels + "stories260K.gguf";
  const Status status = make_synthetic_model(*spec, out);
  EXPECT_TRUE(status.ok()) << status.to_string();
  return out;
}

// `source` rewritten to `out` without the tensors `drop` names and with the
// keys `edit` may change (it sees each key and value; false drops the key).
inline Status rewrite_gguf(const std::string& source, const std::string& out,
                           const std::function<bool(const std::string&)>& drop,
                           const std::function<bool(GgufWriter&, const GgufKeyValue&)>& edit) {
  ASSIGN_OR_RETURN(GgufFile file, GgufFile::open(source));
  GgufWriter writer;
  for (const GgufKeyValue& kv : file.metadata()) {
    if (kv.key == "general.alignment") continue;
    if (edit && !edit(writer, kv)) continue;
    RETURN_IF_ERROR(writer.set_value(kv.key, kv.value));
  }
  for (const GgufTensorInfo& t : file.tensors()) {
    if (drop && drop(t.name)) continue;
    const uint8_t* data = file.file()->data() + t.file_offset;
    RETURN_IF_ERROR(writer.add_tensor_raw(t.name, t.type, t.shape(),
                                          std::vector<uint8_t>(data, data + t.bytes)));
  }
  return writer.write_file(out);
}

}  // namespace tessera::testing
