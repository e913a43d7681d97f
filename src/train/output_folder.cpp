// output_folder: flock on run.lock, the run's marker, preparing the folder, removing an interrupted
// run's temporaries.
#include "output_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <stdexcept>

#include "linear_ard/io/file_atomic.h"  // defines: file_write_atomic
#include "linear_ard/io/json_file.h"    // defines: json_file_read

namespace linear_ard::train {
namespace {

namespace fs = std::filesystem;

// The pid a lock holder wrote into the lock file ("?" when it has not written it yet).
std::string lock_holder(int fd) {
  char buf[32] = {};
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  std::string pid(buf, n > 0 ? static_cast<size_t>(n) : 0);
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.empty() ? "?" : pid;
}

// The name without a temporary's suffix (.tmp, .tmp.<pid>, .old.<pid>), and whether it had one.
std::pair<std::string, bool> name_base(const std::string& name) {
  static const std::regex temporary(R"((.+)\.(tmp|tmp\.\d+|old\.\d+))");
  std::smatch m;
  if (std::regex_match(name, m, temporary)) return {m[1].str(), true};
  return {name, false};
}

bool name_is_stale(const std::string& name) {
  const auto [base, temporary] = name_base(name);
  return temporary && output_entry_owned(base);
}

// A folder without a marker may still hold the start of one: the lock, a marker half written.
bool entry_marks_an_unmarked_start(const std::string& name) {
  return name == output_lock_name || name_base(name) == std::pair<std::string, bool>{output_marker_name, true};
}

std::string random_id() {
  std::random_device device;
  char id[17];
  std::snprintf(id, sizeof id, "%08x%08x", device(), device());
  return id;
}

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// Empties a marked folder of what a run writes, the marker last (a kill half-way leaves a folder
// still marked, which the next run empties again); returns the entries it kept.
std::vector<std::string> owned_remove(const fs::path& out) {
  std::vector<fs::path> owned;
  std::vector<std::string> kept;
  for (const auto& e : fs::directory_iterator(out)) {
    const std::string name = e.path().filename().string();
    if (name == output_lock_name || name == output_marker_name) continue;
    if (output_entry_owned(name)) owned.push_back(e.path());
    else kept.push_back(name);
  }
  for (const auto& p : owned) fs::remove_all(p);
  fs::remove(out / output_marker_name);
  return kept;
}

}  // namespace

OutputLock::OutputLock(const std::string& folder) : folder_(folder) {
  const fs::path out(folder);
  if (fs::exists(out) && !fs::is_directory(out)) throw std::invalid_argument("output " + folder + " exists and is not a folder");
  created_folder_ = fs::create_directories(out);
  const std::string path = (out / output_lock_name).string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  created_lock_ = fd_ >= 0;
  if (fd_ < 0 && errno == EEXIST) fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error("cannot open lock file " + path + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string holder = lock_holder(fd_);
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      throw std::invalid_argument("output " + folder + " is in use by another run (pid " + holder + ", lock file " + path +
                                  "); wait for it to end or choose another output");
    throw std::runtime_error("cannot lock " + path + ": " + std::strerror(err));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
    throw std::runtime_error("cannot write lock file " + path + ": " + std::strerror(errno));
}

OutputLock::~OutputLock() {
  if (fd_ < 0) return;
  const fs::path out(folder_);
  std::error_code ignored;
  if (!fs::exists(out / output_marker_name, ignored)) {
    // The run never took the folder over (refused): what this lock made goes with it.
    if (created_lock_) fs::remove(out / output_lock_name, ignored);
    if (created_folder_ && fs::is_empty(out, ignored)) fs::remove(out, ignored);
  }
  ::close(fd_);
}

bool output_entry_owned(const std::string& name) {
  static const std::set<std::string> owned{output_marker_name,    output_lock_name,     "resolved_config.yaml",
                                           "metrics.jsonl",       "training_summary.json", "model",
                                           "scaled",              "adapters",           "profile",
                                           "training_curves.png", "training_curves.svg", "tensorboard",
                                           "selection"};
  static const std::regex checkpoint(R"(checkpoint-\d+)");
  const auto [base, temporary] = name_base(name);
  return owned.count(base) > 0 || std::regex_match(base, checkpoint);
}

std::optional<nlohmann::json> output_marker_read(const std::string& folder) {
  const fs::path path = fs::path(folder) / output_marker_name;
  if (!fs::exists(path)) return std::nullopt;
  nlohmann::json marker = io::json_file_read(path.string());
  if (!marker.is_object()) throw std::invalid_argument(path.string() + " is not a JSON object: not a marker a run wrote");
  return marker;
}

void output_marker_write(const std::string& folder, nlohmann::json marker) {
  if (!marker.contains("run")) marker["run"] = random_id();
  if (!marker.contains("created")) marker["created"] = utc_now();
  io::file_write_atomic((fs::path(folder) / output_marker_name).string(), marker.dump(2) + "\n");
}

void output_prepare(const RestoreConfig& c, const nlohmann::json& marker) {
  const fs::path out(c.output);
  std::vector<std::string> entries;
  bool unmarked_start = true;
  for (const auto& e : fs::directory_iterator(out)) {
    const std::string name = e.path().filename().string();
    if (name == output_lock_name) continue;
    entries.push_back(name);
    unmarked_start = unmarked_start && entry_marks_an_unmarked_start(name);
  }
  const bool marked = fs::exists(out / output_marker_name);
  if (!entries.empty() && !marked && !unmarked_start)
    throw std::invalid_argument("output " + c.output + " exists and is not empty, and holds no " + output_marker_name +
                                " marker: it is not a folder a run wrote, so nothing in it is replaced; choose another "
                                "output or empty it");
  if (marked && !c.overwrite && !c.resume)
    throw std::invalid_argument("output " + c.output + " holds a previous run (set overwrite=true to replace it, or "
                                "resume=true to continue it from its last checkpoint)");
  if (marked && !c.overwrite)
    std::fprintf(stderr, "linear-ard: warning: output %s: resume=true found no checkpoint to continue from: the run "
                 "starts afresh, the interrupted attempt's files removed\n", c.output.c_str());
  std::vector<std::string> kept;
  if (marked) kept = owned_remove(out);
  for (const std::string& name : entries)
    if (!marked && entry_marks_an_unmarked_start(name)) fs::remove(out / name);
  if (!kept.empty()) {
    std::string names;
    for (const auto& k : kept) names += (names.empty() ? "" : ", ") + k;
    std::fprintf(stderr, "linear-ard: warning: output %s: kept %zu entries no run wrote: %s\n", c.output.c_str(),
                 kept.size(), names.c_str());
  }
  output_marker_write(c.output, marker);
}

int output_stale_remove(const std::string& folder) {
  int removed = 0;
  std::vector<fs::path> stale;
  for (const auto& e : fs::directory_iterator(folder))
    if (name_is_stale(e.path().filename().string())) stale.push_back(e.path());
  for (const auto& p : stale) removed += fs::remove_all(p) > 0;
  return removed;
}

}  // namespace linear_ard::train
