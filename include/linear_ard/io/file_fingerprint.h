// file_fingerprint: what a file was when a run started (size, modification time, CRC-32 of its
// bytes), so that a resumed run can tell the teacher, the tokenizer or the data it trained on from
// files replaced since: equal size and mtime are taken as unchanged; otherwise the contents decide
// (a copy with a new mtime is the same file, a replaced one of equal size is not).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace linear_ard::io {

struct FileFingerprint {
  std::string path;
  int64_t size = 0;
  int64_t mtime_ns = 0;
  uint32_t crc32 = 0;  // CRC-32 (zlib's polynomial) of the whole file
};

// Reads `path` through once (4 MiB blocks). Throws std::runtime_error naming the file.
FileFingerprint file_fingerprint(const std::string& path);

// {"path", "size", "mtime_ns", "crc32"} and back (throws std::invalid_argument on a bad entry).
nlohmann::json file_fingerprint_json(const FileFingerprint& f);
FileFingerprint file_fingerprint_from_json(const nlohmann::json& j);

// What changed in the file `recorded` names since it was recorded, or nullopt when nothing did:
// "is gone", "has 1234 bytes, was 1300", "has other contents (CRC-32 0x1a2b3c4d, was 0x...)".
// Reads the file only when its size is the same and its mtime is not.
std::optional<std::string> file_fingerprint_changed(const FileFingerprint& recorded);

}  // namespace linear_ard::io
