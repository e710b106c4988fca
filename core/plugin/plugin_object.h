// Base of every object a plugin creates. The vtable lives in the plugin's
// shared library, so the registry keeps that library loaded until exit.
#pragma once

namespace tessera {

class PluginObject {
 public:
  virtual ~PluginObject() = default;
};

}  // namespace tessera
