// What one render may spend, shared by the renderer and every builtin that
// walks, copies or prints a value. A step is one statement, expression or loop
// iteration, and also one item copied, compared or printed and 256 bytes of
// string built: work that is linear in a value's size pays by that size, so a
// shared sub-value (sixty levels of [x, x]) or a long list copied in a loop
// cannot make a few steps cost millions.
#pragma once

#include <cstdint>
#include <string>

#include "core/status/status.h"

namespace tessera::chat {

struct RenderLimits {
  std::size_t max_output_bytes = 8u << 20;  // also the largest string a template may build
  std::size_t max_items = 1u << 20;         // the longest list a template may build
  uint64_t max_steps = 4'000'000;           // see Budget
};

class Budget {
 public:
  // Building a string costs a step per this many bytes (copying them is far
  // cheaper than an expression), which also bounds what strings copied into
  // lists can hold in memory: max_steps * 256 bytes, 1 GiB by default.
  static constexpr std::size_t kBytesPerStep = 256;

  explicit Budget(const RenderLimits& limits) : limits_(limits) {}

  const RenderLimits& limits() const { return limits_; }
  std::size_t max_bytes() const { return limits_.max_output_bytes; }
  std::size_t max_items() const { return limits_.max_items; }

  // ResourceExhausted once more than max_steps have been spent; it stays
  // spent, so every later charge fails too.
  Status charge(uint64_t steps = 1) {
    steps_ = steps > limits_.max_steps ? limits_.max_steps + 1 : steps_ + steps;
    if (steps_ > limits_.max_steps)
      return resource_exhausted("template ran past " + std::to_string(limits_.max_steps) +
                                " steps of work; is it looping without end?");
    return ok_status();
  }
  // A string of `bytes` was built: within the size limit, and paid for.
  Status charge_string(std::size_t bytes) {
    RETURN_IF_ERROR(check_bytes(bytes));
    return charge(bytes / kBytesPerStep);
  }
  Status check_bytes(std::size_t bytes) const {
    if (bytes > limits_.max_output_bytes)
      return resource_exhausted("template output or a string it built passed " +
                                std::to_string(limits_.max_output_bytes) + " bytes");
    return ok_status();
  }
  // A list of `items` is about to be built or copied.
  Status charge_items(std::size_t items) {
    if (items > limits_.max_items)
      return resource_exhausted("list of " + std::to_string(items) + " items, past " +
                                std::to_string(limits_.max_items));
    return charge(items);
  }
  // One more item for a list of `size` items.
  Status charge_push(std::size_t size) {
    if (size >= limits_.max_items)
      return resource_exhausted("list grew past " + std::to_string(limits_.max_items) + " items");
    return charge(1);
  }

 private:
  RenderLimits limits_;
  uint64_t steps_ = 0;
};

}  // namespace tessera::chat
