// file_fingerprint: size, mtime and CRC-32 of a file, recorded and compared.
#include "linear_ard/io/file_fingerprint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

// Stephan Brumme's slicing-by-16 CRC-32 as libtorch ships it for its zip archives (defined in the
// header: this is the one file that includes it).
#include <caffe2/serialize/crc_alt.h>

namespace linear_ard::io {
namespace {

[[noreturn]] void fingerprint_fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("cannot read " + path + " to record it: " + what);
}

// stat(2) of `path`: whether it exists, its size and mtime in nanoseconds.
bool file_stat(const std::string& path, int64_t& size, int64_t& mtime_ns) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return false;
  size = static_cast<int64_t>(st.st_size);
  mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  return true;
}

uint32_t file_crc32(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fingerprint_fail(path, std::strerror(errno));
  std::vector<unsigned char> block(4 << 20);
  uint32_t crc = 0;
  for (;;) {
    const ssize_t n = ::read(fd, block.data(), block.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      fingerprint_fail(path, std::strerror(err));
    }
    if (n == 0) break;
    crc = crc32_fast(block.data(), static_cast<size_t>(n), crc);
  }
  ::close(fd);
  return crc;
}

std::string crc_text(uint32_t crc) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", crc);
  return text;
}

}  // namespace

FileFingerprint file_fingerprint(const std::string& path) {
  FileFingerprint f;
  f.path = path;
  if (!file_stat(path, f.size, f.mtime_ns)) fingerprint_fail(path, std::strerror(errno));
  f.crc32 = file_crc32(path);
  return f;
}

nlohmann::json file_fingerprint_json(const FileFingerprint& f) {
  return {{"path", f.path}, {"size", f.size}, {"mtime_ns", f.mtime_ns}, {"crc32", crc_text(f.crc32)}};
}

FileFingerprint file_fingerprint_from_json(const nlohmann::json& j) {
  try {
    FileFingerprint f;
    f.path = j.at("path").get<std::string>();
    f.size = j.at("size").get<int64_t>();
    f.mtime_ns = j.at("mtime_ns").get<int64_t>();
    f.crc32 = static_cast<uint32_t>(std::stoul(j.at("crc32").get<std::string>(), nullptr, 16));
    return f;
  } catch (const std::exception& e) {
    throw std::invalid_argument("a file record " + j.dump() + " is malformed: " + e.what());
  }
}

std::optional<std::string> file_fingerprint_changed(const FileFingerprint& recorded) {
  int64_t size = 0, mtime_ns = 0;
  if (!file_stat(recorded.path, size, mtime_ns)) return std::string("is gone");
  if (size != recorded.size)
    return "has " + std::to_string(size) + " bytes, was " + std::to_string(recorded.size);
  if (mtime_ns == recorded.mtime_ns) return std::nullopt;
  const uint32_t crc = file_crc32(recorded.path);
  if (crc == recorded.crc32) return std::nullopt;
  return "has other contents (CRC-32 " + crc_text(crc) + ", was " + crc_text(recorded.crc32) + ")";
}

}  // namespace linear_ard::io
