// The plugin ABI: the one symbol each plugin library exports. The core reads
// the stable prefix (abi_major, abi_minor, struct_size, build_fingerprint)
// before it touches anything else in the library; see docs/plugins.md.
//
// Rules (also in docs/plugins.md):
//  - The stable prefix never changes.
//  - New fields are appended; each append bumps TESSERA_ABI_MINOR.
//  - Removing or reordering anything bumps TESSERA_ABI_MAJOR.
//  - The core loads a plugin when the majors are equal and the plugin's minor
//    is at most the core's, and the standard-library part of the fingerprints
//    match (C++ objects cross the boundary).
#pragma once

#include <cstdint>

#include "core/plugin/options.h"
#include "core/plugin/plugin_object.h"
#include "core/status/status.h"

#ifndef TESSERA_ABI_MAJOR
#define TESSERA_ABI_MAJOR 1
#endif
#ifndef TESSERA_ABI_MINOR
#define TESSERA_ABI_MINOR 1
#endif

#define TESSERA_STRINGIFY_INNER(x) #x
#define TESSERA_STRINGIFY(x) TESSERA_STRINGIFY_INNER(x)

#if defined(_GLIBCXX_RELEASE)
#define TESSERA_STDLIB_TAG                                                       \
  "libstdc++" TESSERA_STRINGIFY(_GLIBCXX_RELEASE) "-cxx11abi" TESSERA_STRINGIFY( \
      _GLIBCXX_USE_CXX11_ABI)
#elif defined(_LIBCPP_VERSION)
#define TESSERA_STDLIB_TAG "libc++" TESSERA_STRINGIFY(_LIBCPP_VERSION)
#else
#define TESSERA_STDLIB_TAG "unknown-stdlib"
#endif

#if defined(__clang__)
#define TESSERA_COMPILER_TAG "clang-" TESSERA_STRINGIFY(__clang_major__)
#elif defined(__GNUC__)
#define TESSERA_COMPILER_TAG "gcc-" TESSERA_STRINGIFY(__GNUC__)
#else
#define TESSERA_COMPILER_TAG "unknown-compiler"
#endif

// "<standard library>;<compiler>": the first part must match the core's; the
// second is shown in messages only (objects built by gcc and clang against the
// same libstdc++ interoperate).
#define TESSERA_BUILD_FINGERPRINT TESSERA_STDLIB_TAG ";" TESSERA_COMPILER_TAG

// The exported symbol's name in a shared plugin.
#define TESSERA_PLUGIN_SYMBOL tessera_plugin_descriptor

extern "C" {

struct TesseraPluginDescriptor {
  // Stable prefix (every ABI version).
  uint32_t abi_major;
  uint32_t abi_minor;
  uint32_t struct_size;  // sizeof(TesseraPluginDescriptor) as the plugin saw it
  const char* build_fingerprint;

  // Since 1.0. The manifest.
  const char* kind;  // backend | compressor | cache | proposer | verifier | scheduler
  const char* name;  // the name used in TOML, e.g. "cpu"
  const char* version;
  const char* description;
  const tessera::OptionSpec* options;  // option_count entries, static storage
  uint32_t option_count;
  // Creates the plugin object. Returns nullptr and sets *status on failure.
  // The caller owns the object; it must be destroyed before the library unloads.
  tessera::PluginObject* (*create)(const tessera::OptionValues* options, tessera::Status* status);
};

}  // extern "C"
