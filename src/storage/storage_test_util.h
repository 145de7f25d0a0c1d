// Test helpers for storage_test: a temporary directory removed on destruction, and an engine
// opened in it. Test-only; not part of the library.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "storage/kv_engine.h"

namespace hourglass::storage::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hg_storage_XXXXXX").string();
    char* made = mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline EngineOptions DiskOptions(const std::string& dbpath) {
  EngineOptions opts;
  opts.dbpath = dbpath;
  opts.cache_size_mb = 64;
  return opts;
}

inline std::unique_ptr<KvEngine> OpenOrDie(const EngineOptions& opts) {
  auto engine = KvEngine::Open(opts);
  if (!engine.ok()) {
    ADD_FAILURE() << engine.status().ToString();
    return nullptr;
  }
  return std::move(engine).value();
}

}  // namespace hourglass::storage::testing
