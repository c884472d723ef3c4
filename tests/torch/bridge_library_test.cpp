// The built libtcgd_torch.so, as the agent will find it: only its two entry
// points exported, DT_NEEDED entries for torch's libraries (so that the
// dynamic linker binds it to the ones the job loaded), bound at load time,
// and the built-for marker readable without loading it. Built in CI against
// the wheel's headers, this is where a torch API break shows before the GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "collectors/torch/torch_version.h"

namespace tcgd::torchbridge {
namespace {

const std::string kBridge = TCGD_TORCH_BRIDGE_PATH;

std::vector<std::string> commandLines(const std::string& command) {
  std::vector<std::string> lines;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return lines;
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), pipe) != nullptr) {
    std::string line = buf;
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    lines.push_back(line);
  }
  pclose(pipe);
  return lines;
}

TEST(BridgeLibrary, ExportsOnlyItsEntryPoints) {
  std::set<std::string> exported;
  for (const std::string& line : commandLines("nm -D --defined-only '" + kBridge + "'")) {
    const size_t space = line.rfind(' ');
    if (space != std::string::npos) exported.insert(line.substr(space + 1));
  }
  EXPECT_EQ(exported, (std::set<std::string>{"tcgd_torch_bridge_init",
                                             "tcgd_torch_bridge_torch_version"}));
}

TEST(BridgeLibrary, NeedsTorchsLibrariesBySonameAndBindsNow) {
  std::set<std::string> needed;
  bool bind_now = false;
  bool has_runpath = false;
  for (const std::string& line : commandLines("readelf -d '" + kBridge + "'")) {
    const size_t open = line.find("[");
    if (line.find("(NEEDED)") != std::string::npos && open != std::string::npos)
      needed.insert(line.substr(open + 1, line.find(']') - open - 1));
    if (line.find("BIND_NOW") != std::string::npos || line.find(" NOW") != std::string::npos)
      bind_now = true;
    if (line.find("(RUNPATH)") != std::string::npos || line.find("(RPATH)") != std::string::npos)
      has_runpath = true;
  }
  for (const char* lib : {"libc10.so", "libc10_cuda.so", "libtorch_cpu.so"})
    EXPECT_EQ(needed.count(lib), 1u) << lib;
  EXPECT_TRUE(bind_now);
  EXPECT_FALSE(has_runpath);
  for (const std::string& n : needed) EXPECT_EQ(n.find("libtcgd"), std::string::npos) << n;
}

TEST(BridgeLibrary, DeclaresTheTorchReleaseItWasBuiltFor) {
  std::string version;
  ASSERT_TRUE(readBridgeBuiltFor(kBridge, &version));
  EXPECT_EQ(version, TCGD_TORCH_EXPECTED_RELEASE);
  std::string message;
  EXPECT_TRUE(checkTorchVersions(std::string(TCGD_TORCH_EXPECTED_RELEASE) + "+cu130", version,
                                 &message))
      << message;
}

// The torch entry points the bridge is written around must be imported (and
// resolve, at run time, in the libraries it names); no CUDA runtime or
// driver call may be: the bridge has no DT_NEEDED for them, and CUDA calls
// are the interposition layer's business. (Unoptimized builds import more
// inline helpers of c10 and torch, all from the same libraries.)
TEST(BridgeLibrary, ImportsTheTorchEntryPointsAndNoCudaCall) {
  std::set<std::string> imports;
  for (const std::string& line : commandLines("nm -DC --undefined-only '" + kBridge + "'")) {
    const size_t u = line.find("U ");
    if (u != std::string::npos) imports.insert(line.substr(u + 2));
  }
  for (const char* symbol : {
           "c10::cuda::CUDACachingAllocator::allocator",
           "torch::CapturedTraceback::gather(bool, bool, bool)",
           "torch::unwind::unwind()",
           "torch::symbolize(std::vector<torch::CapturedTraceback*, "
           "std::allocator<torch::CapturedTraceback*> > const&)",
           "typeinfo for torch::CapturedTraceback",
       })
    EXPECT_EQ(imports.count(symbol), 1u) << symbol;
  for (const std::string& s : imports) {
    const bool cuda_call = s.rfind("cuda", 0) == 0 ||
                           (s.size() > 2 && s[0] == 'c' && s[1] == 'u' && s[2] >= 'A' && s[2] <= 'Z');
    EXPECT_FALSE(cuda_call) << s;
  }
}

}  // namespace
}  // namespace tcgd::torchbridge
