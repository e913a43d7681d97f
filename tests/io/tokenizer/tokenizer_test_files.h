// Test helpers: a scratch folder for tokenizer files, and where the real LLaMA tokenizers are.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace linear_ard::io {

// A fresh folder under the system temp dir, removed with the object.
class ScratchFolder {
 public:
  ScratchFolder() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("linear_ard_tokenizer_" + std::string(info->test_suite_name()) + "_" + info->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchFolder() { std::filesystem::remove_all(path_); }
  std::string write(const std::string& name, const std::string& content) const {
    std::ofstream(path_ / name, std::ios::binary) << content;
    return (path_ / name).string();
  }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// ../shared/fixtures/tokenizers/<name> from the repository root (LINEAR_ARD_TOKENIZER_FIXTURES
// overrides the root), or "" when it is absent.
inline std::string tokenizer_fixture(const std::string& name) {
  const char* env = std::getenv("LINEAR_ARD_TOKENIZER_FIXTURES");
  const std::filesystem::path folder = std::filesystem::path(env ? env : LINEAR_ARD_TOKENIZER_FIXTURES) / name;
  return std::filesystem::exists(folder / "tokenizer.json") ? folder.string() : "";
}

}  // namespace linear_ard::io
