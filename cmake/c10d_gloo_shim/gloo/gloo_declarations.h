// Declarations of the four gloo types that torch's ProcessGroupGloo.hpp names, for building against
// a libtorch (PyPI's) that ships c10d's headers but not gloo's. linear-ard only constructs the
// backend (ProcessGroupGloo's constructor, createDefaultDevice: compiled in libtorch_cpu with its own
// gloo) and calls its virtual collectives; no gloo object is created or used in our code, so only
// the names, the abstract rendezvous::Store interface GlooStore's inline code overrides, and the one
// Context member an inline ProcessGroupGloo method names (never called from here) are needed.
// Used only when the real gloo headers are not found (src/train/CMakeLists.txt).
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace gloo {

class Context {
 public:
  void setTimeout(std::chrono::milliseconds timeout);
};

namespace transport {
class Device;
class UnboundBuffer;
}  // namespace transport

namespace rendezvous {
class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const std::vector<char>& data) = 0;
  virtual std::vector<char> get(const std::string& key) = 0;
  virtual void wait(const std::vector<std::string>& keys) = 0;
  virtual void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) = 0;
};
}  // namespace rendezvous

}  // namespace gloo
