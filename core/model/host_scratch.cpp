#include "core/model/host_scratch.h"

#include <string>

namespace tessera {

Result<float*> host_floats(Buffer& buffer, const Backend& backend) {
  if (void* host = buffer.host_data()) return static_cast<float*>(host);
  return unimplemented(
      "backend " + backend.device_info().name +
      " keeps activations in device memory, and the fixed-shape step "
      "(block_diffusion fixed_shape = true) still works on host scratch (docs/backends.md, steps "
      "3 and 4); run it on backend.plugin = \"cpu\"");
}

}  // namespace tessera
