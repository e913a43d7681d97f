// safetensors_load: parse and validate a .safetensors header, then hand out tensors that alias
// a memory mapping of the file.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "linear_ard/io/safetensors.h"
#include "linear_ard/io/safetensors_dtype.h"
#include "linear_ard/io/utf8.h"

namespace linear_ard::io {

namespace {

using nlohmann::json;

[[noreturn]] void safetensors_load_fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("safetensors file " + path + ": " + what);
}

// Owns the mapping; every tensor's deleter holds a shared_ptr to it.
struct MappedFile {
  uint8_t* data = nullptr;
  size_t size = 0;
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() {
    if (data != nullptr) ::munmap(data, size);
  }
};

std::shared_ptr<MappedFile> file_map(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) safetensors_load_fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    safetensors_load_fail(path, "not a regular file");
  }
  auto mapped = std::make_shared<MappedFile>();
  mapped->size = static_cast<size_t>(st.st_size);
  if (mapped->size > 0) {
    // Private and writable: a caller that modifies a tensor in place gets copy-on-write pages
    // instead of a segfault, and the file on disk never changes.
    void* p = ::mmap(nullptr, mapped->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      safetensors_load_fail(path, std::string("mmap failed: ") + std::strerror(err));
    }
    mapped->data = static_cast<uint8_t*>(p);
  }
  ::close(fd);
  return mapped;
}

// nlohmann keeps only one of two equal keys; safetensors must refuse such a header because two
// readers could disagree on which tensor the name means.
json header_parse(const std::string& path, const char* text, size_t n) {
  std::vector<std::set<std::string>> open_objects;
  json::parser_callback_t on_event = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      open_objects.pop_back();
    } else if (event == json::parse_event_t::key) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second) safetensors_load_fail(path, "duplicate key '" + key + "' in header");
    }
    return true;
  };
  try {
    return json::parse(text, text + n, on_event);
  } catch (const json::parse_error& e) {
    safetensors_load_fail(path, std::string("header is not valid JSON: ") + e.what());
  }
}

struct HeaderEntry {
  std::string name;
  const SafetensorsDtype* dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

std::string offsets_str(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

HeaderEntry entry_parse(const std::string& path, const std::string& name, const json& value) {
  const std::string where = "tensor '" + name + "': ";
  if (!value.is_object()) safetensors_load_fail(path, where + "entry is not a JSON object");
  HeaderEntry e{name, nullptr, {}, 0, 0};

  const auto dtype = value.find("dtype");
  if (dtype == value.end() || !dtype->is_string()) safetensors_load_fail(path, where + "missing string field 'dtype'");
  e.dtype = safetensors_dtype_find(dtype->get<std::string>());
  if (e.dtype == nullptr) safetensors_load_fail(path, where + "unknown dtype '" + dtype->get<std::string>() + "'");

  const auto shape = value.find("shape");
  if (shape == value.end() || !shape->is_array()) safetensors_load_fail(path, where + "missing list field 'shape'");
  for (const auto& dim : *shape) {
    if (dim.is_number_integer() && !dim.is_number_unsigned()) {
      safetensors_load_fail(path, where + "negative dimension " + dim.dump() + " in shape " + shape->dump());
    }
    if (!dim.is_number_unsigned() || dim.get<uint64_t>() > uint64_t(INT64_MAX)) {
      safetensors_load_fail(path, where + "shape " + shape->dump() + " is not a list of non-negative integers");
    }
    e.shape.push_back(dim.get<int64_t>());
  }

  const auto offsets = value.find("data_offsets");
  if (offsets == value.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
      !(*offsets)[1].is_number_unsigned()) {
    safetensors_load_fail(path, where + "'data_offsets' must be two non-negative integers");
  }
  e.begin = (*offsets)[0].get<uint64_t>();
  e.end = (*offsets)[1].get<uint64_t>();
  if (e.begin > e.end) safetensors_load_fail(path, where + "data_offsets " + offsets_str(e.begin, e.end) + " are out of order (begin > end)");

  uint64_t nbytes = c10::elementSize(e.dtype->type);
  for (int64_t dim : e.shape) {
    if (__builtin_mul_overflow(nbytes, uint64_t(dim), &nbytes)) safetensors_load_fail(path, where + "shape " + shape_str(e.shape) + " overflows");
  }
  if (e.end - e.begin != nbytes) {
    safetensors_load_fail(path, where + "size mismatch: data_offsets " + offsets_str(e.begin, e.end) + " hold " +
                               std::to_string(e.end - e.begin) + " bytes but " + e.dtype->name + " " + shape_str(e.shape) +
                               " needs " + std::to_string(nbytes));
  }
  return e;
}

// Sorted by begin, the tensors must tile [0, buffer_bytes) exactly: no gap, no overlap, nothing
// past EOF and no trailing bytes (the reference reader's rules).
void entries_check_tiling(const std::string& path, std::vector<HeaderEntry>& entries, uint64_t buffer_bytes) {
  std::sort(entries.begin(), entries.end(), [](const HeaderEntry& a, const HeaderEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  const HeaderEntry* previous = nullptr;
  for (const auto& e : entries) {
    const std::string where = "tensor '" + e.name + "': data_offsets " + offsets_str(e.begin, e.end);
    if (e.end > buffer_bytes) {
      safetensors_load_fail(path, where + " reach beyond the end of the file (data buffer is " + std::to_string(buffer_bytes) + " bytes)");
    }
    if (e.begin < covered) safetensors_load_fail(path, where + " overlap tensor '" + previous->name + "'");
    if (e.begin > covered) {
      safetensors_load_fail(path, where + " leave a gap of " + std::to_string(e.begin - covered) + " bytes before them");
    }
    covered = e.end;
    previous = &e;
  }
  if (covered != buffer_bytes) {
    safetensors_load_fail(path, std::to_string(buffer_bytes - covered) + " trailing bytes after the last tensor's data");
  }
}

}  // namespace

TensorMap safetensors_load(const std::string& path, std::map<std::string, std::string>* metadata) {
  const std::shared_ptr<MappedFile> file = file_map(path);
  if (file->size < 8) safetensors_load_fail(path, "truncated file: " + std::to_string(file->size) + " bytes, no 8-byte header size");
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | file->data[i];
  if (header_bytes > safetensors_max_header_bytes) {
    safetensors_load_fail(path, "header size " + std::to_string(header_bytes) + " exceeds the limit of " +
                               std::to_string(safetensors_max_header_bytes) + " bytes");
  }
  if (header_bytes > file->size - 8) {
    safetensors_load_fail(path, "truncated header: header size " + std::to_string(header_bytes) + " exceeds the " +
                               std::to_string(file->size - 8) + " bytes after the size field");
  }
  const std::string_view header_text(reinterpret_cast<const char*>(file->data + 8), header_bytes);
  const size_t bad = utf8_first_invalid(header_text);
  if (bad != std::string_view::npos) {
    safetensors_load_fail(path, "header is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  }
  const json header = header_parse(path, header_text.data(), header_bytes);
  if (!header.is_object()) safetensors_load_fail(path, "header is not a JSON object");

  std::vector<HeaderEntry> entries;
  if (metadata != nullptr) metadata->clear();
  for (const auto& [key, value] : header.items()) {
    if (key != "__metadata__") {
      entries.push_back(entry_parse(path, key, value));
      continue;
    }
    if (value.is_null()) continue;
    if (!value.is_object()) safetensors_load_fail(path, "__metadata__ is not a JSON object");
    for (const auto& [mkey, mvalue] : value.items()) {
      if (!mvalue.is_string()) safetensors_load_fail(path, "__metadata__ value of '" + mkey + "' is not a string");
      if (metadata != nullptr) (*metadata)[mkey] = mvalue.get<std::string>();
    }
  }
  const uint64_t data_start = 8 + header_bytes;
  entries_check_tiling(path, entries, file->size - data_start);

  TensorMap tensors;
  for (const auto& e : entries) {
    uint8_t* data = file->data + data_start + e.begin;
    const auto options = torch::TensorOptions().dtype(e.dtype->type).device(torch::kCPU);
    torch::Tensor t = torch::from_blob(data, e.shape, [file](void*) {}, options);
    // A writer that did not sort by dtype size can leave a tensor misaligned; kernels assume
    // natural alignment, so such a tensor gets its own aligned copy.
    if (reinterpret_cast<uintptr_t>(data) % t.element_size() != 0) t = t.clone();
    tensors.emplace(e.name, std::move(t));
  }
  return tensors;
}

}  // namespace linear_ard::io
