// output_folder: flock on run.lock, preparing the folder, removing an interrupted run's temporaries.
#include "output_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

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

bool is_stale_name(const std::string& name) {
  const size_t at = name.rfind(".tmp");
  if (at == std::string::npos || at == 0) return false;
  const std::string rest = name.substr(at + 4);
  if (rest.empty()) return true;
  return rest.size() > 1 && rest[0] == '.' && rest.find_first_not_of("0123456789", 1) == std::string::npos;
}

}  // namespace

OutputLock::OutputLock(const std::string& folder) {
  const fs::path out(folder);
  if (fs::exists(out) && !fs::is_directory(out)) throw std::invalid_argument("output " + folder + " exists and is not a folder");
  fs::create_directories(out);
  const std::string path = (out / output_lock_name).string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot open lock file " + path + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string holder = lock_holder(fd_);
    ::close(fd_);
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
  if (fd_ >= 0) ::close(fd_);
}

void output_prepare(const RestoreConfig& c) {
  const fs::path out(c.output);
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(out))
    if (e.path().filename() != output_lock_name) entries.push_back(e.path());
  if (entries.empty()) return;
  if (!c.overwrite)
    throw std::invalid_argument("output " + c.output + " exists and is not empty (set overwrite=true to replace a previous run)");
  if (!fs::exists(out / "resolved_config.yaml"))
    throw std::invalid_argument("output " + c.output + " is not a previous restore run's folder (no resolved_config.yaml); refusing to overwrite it");
  for (const auto& p : entries) fs::remove_all(p);
}

int output_stale_remove(const std::string& folder) {
  int removed = 0;
  std::vector<fs::path> stale;
  for (const auto& e : fs::directory_iterator(folder))
    if (is_stale_name(e.path().filename().string())) stale.push_back(e.path());
  for (const auto& p : stale) removed += fs::remove_all(p) > 0;
  return removed;
}

}  // namespace linear_ard::train
