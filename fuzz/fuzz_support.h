// What the fuzz targets share: the plugins linked into the fuzz build, and a
// tiny forward pass that runs a model a reader accepted, so the loaders'
// promises (shapes, dtypes, sizes) are checked by using the weights, not only
// by reading them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/io/mapped_file.h"
#include "core/model/model.h"
#include "core/plugin/registry.h"

namespace tessera::fuzz {

// The embedded build's plugins (the fuzz preset links every plugin in).
const PluginRegistry& builtin_registry();

// Runs two tokens through `model` on the cpu backend with a static cache,
// when the model is small enough to do so quickly. Any failure must be a
// Status; a crash or sanitizer report is the finding.
void run_small_forward(const LoadedModel& model);

// The bytes of a file the build knows (a seed model or tokenizer), read once.
std::shared_ptr<const MappedFile> shared_file(const std::string& path);

// A MappedFile that owns a copy of the fuzzer's input.
std::shared_ptr<const MappedFile> input_file(const char* name, const uint8_t* data,
                                             std::size_t size);

}  // namespace tessera::fuzz
