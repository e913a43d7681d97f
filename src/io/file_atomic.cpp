// file_atomic: temporary file + fsync + rename, so a crash never leaves a half-written file.
#include "linear_ard/io/file_atomic.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace linear_ard::io {

namespace {

[[noreturn]] void file_fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what + " (" + std::strerror(errno) + ")");
}

}  // namespace

std::string file_tmp_name(const std::string& path) {
  return path + ".tmp." + std::to_string(::getpid());
}

void file_write_atomic(const std::string& path, const std::function<void(std::FILE*)>& write) {
  const std::string tmp = file_tmp_name(path);
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) file_fail(tmp, "cannot create file");
  try {
    write(f);
    if (std::fflush(f) != 0) file_fail(tmp, "write failed");
    // Without fsync a crash after rename can leave the new name pointing at empty blocks.
    if (::fsync(::fileno(f)) != 0) file_fail(tmp, "fsync failed");
    const int rc = std::fclose(f);
    f = nullptr;
    if (rc != 0) file_fail(tmp, "close failed");
    if (std::rename(tmp.c_str(), path.c_str()) != 0) file_fail(path, "cannot rename " + tmp + " onto it");
  } catch (...) {
    if (f != nullptr) std::fclose(f);
    std::remove(tmp.c_str());
    throw;
  }
}

void file_write_atomic(const std::string& path, const std::string& contents) {
  file_write_atomic(path, [&](std::FILE* f) {
    if (std::fwrite(contents.data(), 1, contents.size(), f) != contents.size()) {
      file_fail(file_tmp_name(path), "write failed");
    }
  });
}

}  // namespace linear_ard::io
