// The llama2.c side of load_model / load_vocabulary: the legacy (v0) export,
// a header of 7 little-endian int32 and fp32 weights. Internal to core/model.
#pragma once

#include <memory>
#include <string>

#include "core/io/mapped_file.h"
#include "core/model/model.h"
#include "core/status/status.h"

namespace tessera {

struct Llama2cHeader {
  int32_t dim = 0;
  int32_t hidden_dim = 0;
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t vocab_size = 0;  // |vocab_size| tokens
  int32_t seq_len = 0;
  bool shared_classifier = true;  // the file stored vocab_size >= 0

  // Bytes the whole file must have, header included.
  uint64_t expected_file_bytes() const;
};

// Reads and sanity-checks the header (positive sizes, heads divide dim,
// kv heads divide heads, nothing absurd). DataLoss otherwise; Unimplemented
// for the newer llama2.c exports (magic "ak42").
Result<Llama2cHeader> parse_llama2c_header(const MappedFile& file);
// DataLoss unless the file has exactly the bytes the header implies.
Status check_llama2c_size(const MappedFile& file, const Llama2cHeader& header);

// Checks that the file size is exactly what the header implies, maps the
// weights and reads the vocabulary from `tokenizer_path`.
Result<LoadedModel> load_llama2c_model(std::shared_ptr<const MappedFile> file,
                                       const std::string& tokenizer_path);
// The same with the tokenizer file already open (or in memory).
Result<LoadedModel> load_llama2c_model(std::shared_ptr<const MappedFile> file,
                                       std::shared_ptr<const MappedFile> tokenizer);

// llama2.c tokenizer files carry no token types or special ids: bos 1, eos 2,
// unk 0, a space prefix; when `vocab` has no types yet: id 0 unknown, 1 and 2
// control, 3..258 byte, the rest normal.
void apply_llama2c_vocabulary_conventions(Vocabulary& vocab);

}  // namespace tessera
