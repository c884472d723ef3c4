// The hook table as data: names, ids, kinds, the schema descriptors of every
// record word, and the export allow-list that tests/agent checks.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "interpose/cublas_hooks.h"
#include "interpose/cudnn_hooks.h"
#include "interpose/hook_table.h"

namespace tcgd::interpose {
namespace {

struct Descriptors {
  const char* name;
  const char* words[channel::kRecordWords];
};

// hooks.def read here only for its descriptor strings (the library keeps
// them in the agent's schema registry, which needs the whole agent).
#define TCGD_WORD_DESC_(descriptor, expression) descriptor
#define TCGD_WORD_DESC(word) TCGD_WORD_DESC_ word
constexpr Descriptors kDescriptors[] = {
#define TCGD_HOOK(name, type, cls, lib, kind, ret, params, args, post, w0, w1, w2, w3, w4) \
  {#name, {TCGD_WORD_DESC(w0), TCGD_WORD_DESC(w1), TCGD_WORD_DESC(w2), TCGD_WORD_DESC(w3),  \
           TCGD_WORD_DESC(w4)}},
#include "interpose/hooks.def"
#undef TCGD_HOOK
};

unsigned widthOf(const std::string& kind) {
  if (kind == "u64" || kind == "i64" || kind == "hex" || kind == "addr" || kind == "blob") return 64;
  if (kind == "u32" || kind == "i32") return 32;
  if (kind == "u16" || kind == "i16") return 16;
  if (kind == "u8") return 8;
  if (kind == "bool") return 1;
  return 0;
}

TEST(HookTable, NamesAreUniqueAndFindable) {
  std::set<std::string> names;
  for (size_t i = 0; i < kHookCount; ++i) {
    EXPECT_TRUE(names.insert(kHooks[i].name).second) << kHooks[i].name;
    EXPECT_EQ(findHook(kHooks[i].name), static_cast<int>(i));
  }
  EXPECT_EQ(findHook("cuMemAlloc"), -1);  // the 2.0 ABI is not hooked
  EXPECT_EQ(findHook("cuMemAlloc_v2_"), -1);
  EXPECT_EQ(findHook(""), -1);
  EXPECT_EQ(hookInfo(HookId::cuGraphLaunch_ptsz).name, std::string("cuGraphLaunch_ptsz"));
}

TEST(HookTable, RecordTypesAreStableUniqueAndInTheInterposeRange) {
  std::set<uint16_t> ids;
  for (size_t i = 0; i < kHookCount; ++i) {
    const HookInfo& h = kHooks[i];
    if (h.kind == HookKind::kResolver) {
      EXPECT_EQ(h.record_type, 0) << h.name;
      continue;
    }
    EXPECT_GE(h.record_type, 256) << h.name;
    EXPECT_LE(h.record_type, 1023) << h.name;
    EXPECT_TRUE(ids.insert(h.record_type).second) << h.name;
  }
  // Ids are stored in bundles: these must never change.
  EXPECT_EQ(hookInfo(HookId::cuMemAlloc_v2).record_type, 270);
  EXPECT_EQ(hookInfo(HookId::cuMemFree_v2).record_type, 273);
  EXPECT_EQ(hookInfo(HookId::cuGraphLaunch).record_type, 340);
  EXPECT_EQ(hookInfo(HookId::cuLaunchKernel).record_type, 360);
  EXPECT_EQ(hookInfo(HookId::cudaGraphLaunch).record_type, 512);
}

TEST(HookTable, ReleasesAreTheFreesUnmapsAndDestroys) {
  std::set<std::string> releases;
  for (const HookInfo& h : kHooks) {
    if (h.kind == HookKind::kRelease) releases.insert(h.name);
  }
  EXPECT_EQ(releases, (std::set<std::string>{"cuMemFree_v2", "cuMemFreeAsync", "cuMemFreeAsync_ptsz",
                                             "cuMemRelease", "cuMemUnmap", "cuMemAddressFree",
                                             "cuMemFreeHost", "cuGraphExecDestroy",
                                             "cuGraphDestroy"}));
}

TEST(HookTable, EveryWordDescriptorIsWellFormed) {
  ASSERT_EQ(std::size(kDescriptors) + 2, kHookCount);  // + the two resolvers
  for (const Descriptors& d : kDescriptors) {
    std::set<std::string> part_names;
    bool has_result = false;
    for (const char* word : d.words) {
      unsigned bits = 0;
      std::istringstream in(word);
      for (std::string part; std::getline(in, part, ',');) {
        const size_t colon = part.find(':');
        ASSERT_NE(colon, std::string::npos) << d.name << ": " << word;
        const unsigned width = widthOf(part.substr(colon + 1));
        EXPECT_NE(width, 0u) << d.name << ": unknown kind in " << word;
        bits += width;
        const std::string name = part.substr(0, colon);
        EXPECT_TRUE(part_names.insert(name).second) << d.name << ": " << name << " twice";
        has_result = has_result || name == "result";
      }
      EXPECT_LE(bits, 64u) << d.name << ": " << word;
    }
    EXPECT_TRUE(has_result) << d.name << " records no result";
  }
}

TEST(HookTable, AllocationsRecordPointerSizeAndCaller) {
  for (const Descriptors& d : kDescriptors) {
    const std::string name = d.name;
    // cuMemRetainAllocationHandle takes a reference, not memory.
    const bool allocation = (name.find("Alloc") != std::string::npos &&
                             name != "cuMemRetainAllocationHandle") ||
                            name == "cuMemCreate";
    if (!allocation) continue;
    std::string all;
    for (const char* word : d.words) all += std::string(word) + ",";
    EXPECT_NE(all.find("size:"), std::string::npos) << name;
    EXPECT_NE(all.find("caller:addr"), std::string::npos) << name;
    EXPECT_TRUE(all.find("ptr:hex") != std::string::npos ||
                all.find("handle:hex") != std::string::npos)
        << name;
  }
}

TEST(HookTable, BaseNamesStripVersionAndStreamSuffixes) {
  EXPECT_EQ(baseName("cuStreamBeginCapture_v2_ptsz"), "cuStreamBeginCapture");
  EXPECT_EQ(baseName("cuMemAlloc_v2"), "cuMemAlloc");
  EXPECT_EQ(baseName("cuMemcpyHtoD_v2_ptds"), "cuMemcpyHtoD");
  EXPECT_EQ(baseName("cuGraphLaunch"), "cuGraphLaunch");
  EXPECT_EQ(baseName("cuGraphInstantiateWithParams_ptsz"), "cuGraphInstantiateWithParams");
  EXPECT_EQ(baseName("cuCtxCreate_v4"), "cuCtxCreate");
  EXPECT_EQ(baseName("cuMem_v"), "cuMem_v");  // no digits: not a version
  EXPECT_TRUE(isHookedBase("cuMemAlloc"));
  EXPECT_TRUE(isHookedBase("cuStreamBeginCapture"));
  EXPECT_FALSE(isHookedBase("cuMemcpyHtoD"));
  EXPECT_FALSE(isHookedBase("cuGetProcAddress"));  // resolvers are not hooks
  EXPECT_TRUE(isPerThreadVariant("cuLaunchKernel_ptsz"));
  EXPECT_FALSE(isPerThreadVariant("cuLaunchKernel"));
}

TEST(HookTable, VariantVersionsOrderVariantsOfOneBase) {
  EXPECT_EQ(variantVersion("cuMemAlloc"), 1);
  EXPECT_EQ(variantVersion("cuMemAlloc_v2"), 2);
  EXPECT_EQ(variantVersion("cuStreamBeginCapture_v2_ptsz"), 2);
  EXPECT_EQ(variantVersion("cuLaunchKernel_ptsz"), 1);
  EXPECT_EQ(newestHookedVariant("cuMemAlloc"), 2);
  EXPECT_EQ(newestHookedVariant("cuLaunchKernel"), 1);
  EXPECT_EQ(newestHookedVariant("cuMemcpy"), 0);
}

TEST(HookTable, ExportAllowListIsTheTablePlusDlsymAndLibraryEntryPoints) {
  std::ifstream in(TCGD_SOURCE_DIR "/tests/interpose/exports_hooks.allow");
  ASSERT_TRUE(in) << "tests/interpose/exports_hooks.allow is missing";
  std::set<std::string> listed;
  for (std::string line; std::getline(in, line);) {
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    if (std::string name; words >> name) listed.insert(name);
  }
  // dlsym, and cuBLAS's and cuDNN's entry points (interpose/cublas_hooks.h,
  // interpose/cudnn_hooks.h).
  std::set<std::string> expected{"dlsym"};
  for (const char* name : kCublasEntryPoints) expected.insert(name);
  for (const char* name : kCudnnEntryPoints) expected.insert(name);
  for (const HookInfo& h : kHooks) expected.insert(h.name);
  EXPECT_EQ(listed, expected);
}

TEST(HookTable, TheDocumentationListsEveryHookWithItsId) {
  std::ifstream in(TCGD_SOURCE_DIR "/docs/interposition.md");
  ASSERT_TRUE(in) << "docs/interposition.md is missing";
  std::stringstream text;
  text << in.rdbuf();
  for (const HookInfo& h : kHooks) {
    if (h.kind == HookKind::kResolver) continue;
    const std::string row = "| " + std::to_string(h.record_type) + " | `" + h.name + "` |";
    EXPECT_NE(text.str().find(row), std::string::npos) << "no row " << row;
  }
}

}  // namespace
}  // namespace tcgd::interpose
