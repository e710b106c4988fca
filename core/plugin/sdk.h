// What a plugin author includes. One macro exports the descriptor:
//
//   class XorCodec final : public tessera::Compressor {
//    public:
//     explicit XorCodec(const tessera::OptionValues& options);
//     ...
//   };
//   constexpr tessera::OptionSpec kXorOptions[] = {
//       {"key", tessera::OptionType::kInt, "90", "byte to xor with", 0, 255}};
//   TESSERA_PLUGIN(compressor, "xor", "1.0.0", "xors bytes (a demo)", kXorOptions, XorCodec)
//
// The class's constructor takes the checked options (every declared option is
// present, defaults filled in), and may take the core's services as a second
// argument (core/plugin/services.h): (const OptionValues&, PluginServices&).
// Such a plugin cannot be created without services (a clear error, never a
// null reference). An exception thrown by the constructor becomes a Status;
// it never crosses the library boundary.
#pragma once

#include <cstddef>
#include <exception>
#include <span>
#include <type_traits>
#include <utility>

#include "core/backend/backend.h"
#include "core/cache/cache_store.h"
#include "core/compressor/compressor.h"
#include "core/decode/proposer.h"
#include "core/decode/verifier.h"
#include "core/plugin/abi.h"
#include "core/schedule/scheduler.h"

namespace tessera::sdk {

inline constexpr OptionSpec kNoOptions[1] = {{"", OptionType::kBool, "", ""}};

// Thrown by a plugin's constructor to refuse its configuration with a Status
// of its choice (a missing model is NotFound, a bad option InvalidArgument);
// create() returns that Status unchanged. Any other exception becomes
// Internal.
class Refusal : public std::exception {
 public:
  explicit Refusal(Status status) : status_(std::move(status)) {}
  const char* what() const noexcept override { return status_.message().c_str(); }
  const Status& status() const { return status_; }

 private:
  Status status_;
};

// The value, or a Refusal carrying the error (for constructors).
template <typename T>
T value_or_refuse(Result<T> result) {
  if (!result.ok()) throw Refusal(result.status());
  return std::move(result).value();
}
inline void refuse_unless(const Status& status) {
  if (!status.ok()) throw Refusal(status);
}

template <std::size_t N>
constexpr uint32_t option_count(const OptionSpec (&options)[N]) {
  // Compares addresses (comparing arrays directly is deprecated in C++20).
  return &options[0] == &kNoOptions[0] ? 0 : static_cast<uint32_t>(N);
}

// The interface each kind's class must derive from (checked at compile time
// here, and again by the core on the object create() returns).
using backend_interface = Backend;
using compressor_interface = Compressor;
using cache_interface = CacheStore;
using proposer_interface = Proposer;
using verifier_interface = Verifier;
using scheduler_interface = Scheduler;

template <typename T, typename Interface>
PluginObject* create(const OptionValues* options, PluginServices* services,
                     Status* status) noexcept {
  static_assert(std::is_base_of_v<Interface, T>,
                "TESSERA_PLUGIN: the class does not implement the interface of the declared kind");
  try {
    if constexpr (std::is_constructible_v<T, const OptionValues&, PluginServices&>) {
      if (services == nullptr) {
        *status = failed_precondition(
            "this plugin needs the engine's services (models, backend), and none were given");
        return nullptr;
      }
      return static_cast<Interface*>(new T(*options, *services));
    } else {
      (void)services;
      return static_cast<Interface*>(new T(*options));
    }
  } catch (const Refusal& refusal) {
    *status = refusal.status();
  } catch (const std::exception& e) {
    *status = internal_error(std::string("plugin constructor threw: ") + e.what());
  } catch (...) {
    *status = internal_error("plugin constructor threw a non-standard exception");
  }
  return nullptr;
}

}  // namespace tessera::sdk

#define TESSERA_PLUGIN_DESCRIPTOR_INIT(KIND, NAME, VERSION, DESCRIPTION, OPTIONS, CLASS) \
  {                                                                                      \
    TESSERA_ABI_MAJOR, TESSERA_ABI_MINOR, sizeof(TesseraPluginDescriptor),               \
        TESSERA_BUILD_FINGERPRINT, TESSERA_SDK_HASH, #KIND, NAME, VERSION, DESCRIPTION,  \
        ::tessera::sdk::option_count(OPTIONS) ? OPTIONS : nullptr,                       \
        ::tessera::sdk::option_count(OPTIONS),                                           \
        &::tessera::sdk::create<CLASS, ::tessera::sdk::KIND##_interface>                 \
  }

// A shared plugin exports `tessera_plugin_descriptor`; a plugin linked into the
// binary (embedded build) gets a unique name that the build's generated table
// lists (TESSERA_STATIC_PLUGIN_SYMBOL is set by tessera_add_plugin()).
#ifdef TESSERA_STATIC_PLUGIN_SYMBOL
#define TESSERA_PLUGIN(KIND, NAME, VERSION, DESCRIPTION, OPTIONS, CLASS)  \
  extern "C" const TesseraPluginDescriptor TESSERA_STATIC_PLUGIN_SYMBOL = \
      TESSERA_PLUGIN_DESCRIPTOR_INIT(KIND, NAME, VERSION, DESCRIPTION, OPTIONS, CLASS);
#else
#define TESSERA_PLUGIN(KIND, NAME, VERSION, DESCRIPTION, OPTIONS, CLASS)                           \
  extern "C" __attribute__((section(TESSERA_ABI_SECTION), used))                                   \
  const TesseraAbiStamp tessera_plugin_abi_stamp = {                                               \
      TESSERA_ABI_MAGIC[0], TESSERA_ABI_MAGIC[1], TESSERA_ABI_MAGIC[2],      TESSERA_ABI_MAGIC[3], \
      TESSERA_ABI_MAGIC[4], TESSERA_ABI_MAGIC[5], TESSERA_ABI_MAGIC[6],      TESSERA_ABI_MAGIC[7], \
      TESSERA_ABI_MAJOR,    TESSERA_ABI_MINOR,    TESSERA_BUILD_FINGERPRINT, TESSERA_SDK_HASH};    \
  extern "C" __attribute__((visibility("default")))                                                \
  const TesseraPluginDescriptor TESSERA_PLUGIN_SYMBOL =                                            \
      TESSERA_PLUGIN_DESCRIPTOR_INIT(KIND, NAME, VERSION, DESCRIPTION, OPTIONS, CLASS);
#endif
