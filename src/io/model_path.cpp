// Resolving model arguments: local folders first, then the Hugging Face cache's snapshots layout.
#include "linear_ard/io/model_path.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <stdexcept>

namespace linear_ard::io {

namespace {

namespace fs = std::filesystem;

std::string env_of(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// huggingface_hub expands a leading ~ in its cache variables.
std::string home_expanded(const std::string& path) {
  if (path.empty() || path[0] != '~') return path;
  return env_of("HOME") + path.substr(1);
}

struct HubName {
  std::string repo_id, revision;  // revision empty: main
};

// huggingface_hub's validate_repo_id rules, plus an optional @revision.
bool hub_name_parse(const std::string& arg, HubName& out) {
  static const std::regex part("[A-Za-z0-9_]([A-Za-z0-9_.\\-]{0,94}[A-Za-z0-9_])?");
  const size_t at = arg.find('@');
  out.repo_id = arg.substr(0, at);
  out.revision = at == std::string::npos ? "" : arg.substr(at + 1);
  if (at != std::string::npos && out.revision.empty()) return false;
  const size_t slash = out.repo_id.find('/');
  const std::string org = slash == std::string::npos ? "" : out.repo_id.substr(0, slash);
  const std::string name = slash == std::string::npos ? out.repo_id : out.repo_id.substr(slash + 1);
  if (slash != std::string::npos && !std::regex_match(org, part)) return false;
  if (!std::regex_match(name, part)) return false;
  return out.repo_id.find("--") == std::string::npos && out.repo_id.find("..") == std::string::npos;
}

bool is_commit_hash(const std::string& s) { return std::regex_match(s, std::regex("[0-9a-f]{40}")); }

std::string first_line_of(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

[[noreturn]] void not_cached(const std::string& arg, const HubName& hub, const std::string& what) {
  std::string command = "hf download " + hub.repo_id;
  if (!hub.revision.empty()) command += " --revision " + hub.revision;
  throw std::invalid_argument("model '" + arg + "' is not a local folder and " + what +
                              " (offline: nothing is downloaded); download it with: " + command);
}

}  // namespace

std::string hf_hub_cache_dir() {
  for (const char* name : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"})
    if (!env_of(name).empty()) return home_expanded(env_of(name));
  if (!env_of("HF_HOME").empty()) return (fs::path(home_expanded(env_of("HF_HOME"))) / "hub").string();
  const std::string xdg = env_of("XDG_CACHE_HOME");
  const fs::path cache = xdg.empty() ? fs::path(env_of("HOME")) / ".cache" : fs::path(home_expanded(xdg));
  return (cache / "huggingface" / "hub").string();
}

std::string model_path_resolve(const std::string& arg) {
  std::error_code ec;
  if (fs::exists(arg, ec)) return arg;
  HubName hub;
  if (!hub_name_parse(arg, hub)) throw std::invalid_argument("folder " + arg + " does not exist");
  std::string repo_dir_name = "models--" + hub.repo_id;
  for (size_t p; (p = repo_dir_name.find('/')) != std::string::npos;) repo_dir_name.replace(p, 1, "--");
  const fs::path repo = fs::path(hf_hub_cache_dir()) / repo_dir_name;
  const std::string revision = hub.revision.empty() ? "main" : hub.revision;
  std::string commit = revision;
  if (!is_commit_hash(revision)) {
    const fs::path ref = repo / "refs" / revision;
    if (!fs::is_regular_file(ref, ec)) not_cached(arg, hub, "the Hugging Face cache has no " + ref.string());
    commit = first_line_of(ref);
  }
  const fs::path snapshot = repo / "snapshots" / commit;
  if (!fs::is_directory(snapshot, ec))
    not_cached(arg, hub, "the Hugging Face cache has no snapshot " + snapshot.string() + " (revision " + revision + ")");
  return snapshot.string();
}

}  // namespace linear_ard::io
