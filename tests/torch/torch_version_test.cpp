// The loader's version rules (collectors/torch/torch_version.h): reading
// torch's version files, reading a bridge file's built-for marker, the
// major.minor.patch matching rule, and the line the user sees on refusal.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "collectors/torch/torch_version.h"

namespace tcgd::torchbridge {
namespace {

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/tcgd-torch-version-XXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }
  void write(const std::string& name, const std::string& text) const {
    const std::string full = path_ + "/" + name;
    const size_t slash = full.rfind('/');
    std::filesystem::create_directories(full.substr(0, slash));
    std::ofstream(full, std::ios::binary) << text;
  }

 private:
  std::string path_;
};

TEST(TorchVersion, ParsesReleasesAndSuffixes) {
  TorchVersion v;
  ASSERT_TRUE(parseTorchVersion("2.11.0+cu130", &v));
  EXPECT_EQ(v.major, 2);
  EXPECT_EQ(v.minor, 11);
  EXPECT_EQ(v.patch, 0);
  EXPECT_EQ(v.rest, "+cu130");
  EXPECT_EQ(releaseString(v), "2.11.0");

  ASSERT_TRUE(parseTorchVersion("2.11.0", &v));
  EXPECT_EQ(v.rest, "");
  ASSERT_TRUE(parseTorchVersion("2.11.0a0+git70d99e9", &v));
  EXPECT_EQ(v.patch, 0);
  EXPECT_EQ(v.rest, "a0+git70d99e9");
  ASSERT_TRUE(parseTorchVersion("2.12.0.dev20260301+cu130", &v));
  EXPECT_EQ(v.minor, 12);
  EXPECT_EQ(v.rest, ".dev20260301+cu130");
  ASSERT_TRUE(parseTorchVersion("10.0.15", &v));
  EXPECT_EQ(v.major, 10);
  EXPECT_EQ(v.patch, 15);
}

TEST(TorchVersion, RejectsWhatIsNotAVersion) {
  TorchVersion v;
  EXPECT_FALSE(parseTorchVersion("", &v));
  EXPECT_FALSE(parseTorchVersion("2.11", &v));
  EXPECT_FALSE(parseTorchVersion("2.11.", &v));
  EXPECT_FALSE(parseTorchVersion("v2.11.0", &v));
  EXPECT_FALSE(parseTorchVersion("2..0", &v));
  EXPECT_FALSE(parseTorchVersion("2.11.0000000001", &v));  // absurdly long number
}

TEST(TorchVersion, MatchesOnMajorMinorPatchOnly) {
  std::string message;
  EXPECT_TRUE(checkTorchVersions("2.11.0+cu130", "2.11.0", &message));
  EXPECT_TRUE(checkTorchVersions("2.11.0+cpu", "2.11.0", &message));
  EXPECT_TRUE(checkTorchVersions("2.11.0a0+git70d99e9", "2.11.0", &message));
  EXPECT_TRUE(checkTorchVersions("2.11.0", "2.11.0+cu128", &message));
  EXPECT_FALSE(checkTorchVersions("2.11.1+cu130", "2.11.0", &message));
  EXPECT_FALSE(checkTorchVersions("2.10.0+cu130", "2.11.0", &message));
  EXPECT_FALSE(checkTorchVersions("3.11.0", "2.11.0", &message));
}

TEST(TorchVersion, MismatchSaysBothVersionsAndWhatHappensNext) {
  std::string message;
  ASSERT_FALSE(checkTorchVersions("2.10.1", "2.11.0", &message));
  EXPECT_EQ(message,
            "torch 2.10.1 is loaded but the torch bridge was built for 2.11.0; recording "
            "driver-level data only");
  EXPECT_EQ(versionMismatchMessage("2.10.1", "2.11.0"), message);
}

TEST(TorchVersion, UnreadableVersionsAreRefusedSayingWhich) {
  std::string message;
  EXPECT_FALSE(checkTorchVersions("garbage", "2.11.0", &message));
  EXPECT_NE(message.find("\"garbage\""), std::string::npos) << message;
  EXPECT_NE(message.find("driver-level data only"), std::string::npos) << message;
  EXPECT_FALSE(checkTorchVersions("2.11.0", "", &message));
  EXPECT_NE(message.find("bridge"), std::string::npos) << message;
}

TEST(VersionFiles, ReadsTorchsVersionPy) {
  // The shape of torch 2.11's torch/version.py.
  const std::string text =
      "from typing import Optional\n\n"
      "__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']\n"
      "__version__ = '2.11.0+cu130'\n"
      "debug = False\n"
      "cuda: Optional[str] = '13.0'\n";
  std::string v;
  ASSERT_TRUE(versionFromFileText(text, /*version_py=*/true, &v));
  EXPECT_EQ(v, "2.11.0+cu130");
  ASSERT_TRUE(versionFromFileText("__version__=\"2.9.1\"\n", true, &v));
  EXPECT_EQ(v, "2.9.1");
  ASSERT_TRUE(versionFromFileText("__version__: str = '2.12.0'", true, &v));
  EXPECT_EQ(v, "2.12.0");
  EXPECT_FALSE(versionFromFileText("__all__ = ['__version__']\n", true, &v));
  EXPECT_FALSE(versionFromFileText("__version__ = ''\n", true, &v));
  EXPECT_FALSE(versionFromFileText("", true, &v));
}

TEST(VersionFiles, ReadsLibtorchsBuildVersion) {
  std::string v;
  ASSERT_TRUE(versionFromFileText("2.11.0+cu130 \n", /*version_py=*/false, &v));
  EXPECT_EQ(v, "2.11.0+cu130");
  EXPECT_FALSE(versionFromFileText("\n", false, &v));
}

TEST(VersionFiles, FindsTheVersionNextToLibc10Cuda) {
  TempDir wheel;  // <site-packages>/torch/{lib/libc10_cuda.so, version.py}
  wheel.write("torch/lib/libc10_cuda.so", "");
  wheel.write("torch/version.py", "__version__ = '2.11.0+cu130'\n");
  std::string version, source;
  ASSERT_TRUE(readRunningTorchVersion(wheel.path() + "/torch/lib", &version, &source));
  EXPECT_EQ(version, "2.11.0+cu130");
  EXPECT_EQ(source, wheel.path() + "/torch/lib/../version.py");

  TempDir libtorch;  // the libtorch archive: libtorch/{lib, build-version}
  libtorch.write("libtorch/lib/libc10_cuda.so", "");
  libtorch.write("libtorch/build-version", "2.10.1+cu128\n");
  ASSERT_TRUE(readRunningTorchVersion(libtorch.path() + "/libtorch/lib", &version, &source));
  EXPECT_EQ(version, "2.10.1+cu128");
  EXPECT_EQ(source, libtorch.path() + "/libtorch/lib/../build-version");

  TempDir none;
  none.write("lib/libc10_cuda.so", "");
  EXPECT_FALSE(readRunningTorchVersion(none.path() + "/lib", &version, &source));
  EXPECT_EQ(source, none.path() + "/lib/../version.py");  // named in the message
}

TEST(BridgeMarker, ReadsTheBuiltForVersionWithoutLoading) {
  TempDir dir;
  std::string image(5000, '\x7f');
  const std::string marker = std::string(TCGD_TORCH_BRIDGE_MARKER) + "2.11.0";
  image.replace(3000, marker.size(), marker);
  image[3000 + marker.size()] = '\0';
  dir.write("libtcgd_torch.so", image);
  std::string version;
  ASSERT_TRUE(readBridgeBuiltFor(dir.path() + "/libtcgd_torch.so", &version));
  EXPECT_EQ(version, "2.11.0");

  dir.write("no_marker.so", std::string(100, 'x'));
  EXPECT_FALSE(readBridgeBuiltFor(dir.path() + "/no_marker.so", &version));
  // A marker cut off by the end of the file is not a version.
  dir.write("cut.so", std::string(TCGD_TORCH_BRIDGE_MARKER) + "2.11");
  EXPECT_FALSE(readBridgeBuiltFor(dir.path() + "/cut.so", &version));
  EXPECT_FALSE(readBridgeBuiltFor(dir.path() + "/absent.so", &version));
}

}  // namespace
}  // namespace tcgd::torchbridge
