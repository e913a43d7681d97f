// file_atomic: write a file so that readers see either the old file or the whole new one.
#pragma once

#include <cstdio>
#include <functional>
#include <string>

namespace linear_ard::io {

// Calls `write` on `<path>.tmp.<pid>`, flushes and fsyncs it, then renames it onto `path`.
// If `write` throws or any step fails, the temporary file is removed and `path` is untouched;
// errors are std::runtime_error naming the file.
void file_write_atomic(const std::string& path, const std::function<void(std::FILE*)>& write);

// file_write_atomic for a whole in-memory string (JSON files).
void file_write_atomic(const std::string& path, const std::string& contents);

// The temporary name used next to `path` by this process: `<path>.tmp.<pid>`.
std::string file_tmp_name(const std::string& path);

}  // namespace linear_ard::io
