// A fixture for tests of the memory history and what is built on it: writes
// a MemoryBundleBuilder's bundle to a scratch file, loads it (with its bulk
// blobs: snapshots, stacks) and builds its history. Header-only: it needs
// the analyzer library, which tcgd_analyze_test_support does not link.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "bundle/bundle.h"
#include "memory_bundle_builder.h"
#include "model/memory_history.h"
#include "synthetic_bundle.h"

namespace tcgd::analyze::testing {

class HistoryFixture : public ::testing::Test {
 protected:
  // The history of `builder`'s bundle, with a trailer counting `dropped`
  // driver_memory records; path_ and bundle_ are that bundle's.
  const MemoryHistory& build(const MemoryBundleBuilder& builder, uint64_t dropped = 0) {
    path_ = dir_.file("b" + std::to_string(++count_) + ".tcgd-memory");
    builder.write(path_, true, dropped);
    LoadOptions options;
    options.keep_bulk_blobs = true;
    bundle_ = std::make_unique<Bundle>(Bundle::load(path_, options));
    history_ = std::make_unique<MemoryHistory>(buildMemoryHistory(*bundle_));
    return *history_;
  }

  ScratchDir dir_;
  int count_ = 0;
  std::string path_;
  std::unique_ptr<Bundle> bundle_;
  std::unique_ptr<MemoryHistory> history_;
};

}  // namespace tcgd::analyze::testing
