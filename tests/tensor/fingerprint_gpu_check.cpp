// fingerprint_gpu_check: the embedded fingerprint kernel on a real GPU,
// every slot it writes compared with the CPU reference (tests/tensor/
// fingerprint_reference.h), then what it costs against the device's copy
// bandwidth, measured in the same run.
//
// The ring is set up exactly as the agent does it (tests/tensor/
// fingerprint_gpu_device.h); this program plays the recorder. Every figure of
// a slot must equal the reference's bit for bit, the sums included (the
// reference follows the contract's order of additions; two NaN sums count as
// equal).
//
//   fingerprint_gpu_check [--log FILE] [--verbose] [--no-measure] [--big-mib N]
//
// stdout is short enough for a narrow window: the device, the failures, a
// table of the groups, the measures, and the RESULT line. --log FILE lists
// every case (and all of stdout); --verbose lists them on stdout too;
// --no-measure runs the correctness cases only; --big-mib sets the large
// range of the measures (1024 MiB). On a driver that cannot time kernels
// (the fake one of tests/fake_cuda) the measures are host time, checked but
// meaningless. Exit 0 all passed, 1 a failure, 77 skipped (no driver, no
// GPU, or a build without nvcc).
#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "collectors/tensor/fingerprint_image.h"
#include "tests/tensor/fingerprint_gpu_cases.h"
#include "tests/tensor/fingerprint_reference.h"
#include "tests/tensor/fingerprint_slot_compare.h"

namespace tcgd::tensor::gpu_check {
namespace {

// ---- results ------------------------------------------------------------------

FILE* log_file = nullptr;
bool verbose = false;

// To stdout and the log.
void say(const char* format, ...) {
  char text[2048];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  std::fputs(text, stdout);
  if (log_file != nullptr) std::fputs(text, log_file);
}

struct Group {
  int cases = 0;
  int failed = 0;
};
std::map<std::string, Group> groups;
std::vector<std::string> group_order;

struct Figure {
  std::string what;
  double value;
  std::string unit;
  std::string note;
};
std::vector<Figure> figures;

// ---- timing -------------------------------------------------------------------------

double medianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

CUdeviceptr blocker_src = 0, blocker_dst = 0;
constexpr size_t kBlockerBytes = size_t{1} << 30;
constexpr int kBlockerCopies = 8;
double blocker_ms = 0;     // the GPU time of the copies queued ahead of a timed body
double slowest_enqueue = 0;  // the largest host time of a timed body, over blocker_ms

// GPU milliseconds of what `body` enqueues, median of `runs`. The work is
// queued behind copies that keep the GPU busy (about 4 ms) while the CPU
// enqueues it, so that many small launches are timed back to back on the
// GPU, not at the CPU's launch rate (slowest_enqueue > 1 says that failed).
// `after` runs after each (a drain).
double timeMs(int runs, const std::function<void()>& body, const std::function<void()>& after = {}) {
  if (!cu.canTime()) {  // host time, for a run on the fake driver
    std::vector<double> ms;
    for (int i = 0; i < runs; ++i) {
      const auto start = std::chrono::steady_clock::now();
      body();
      CK(cu.cuStreamSynchronize(stream));
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      if (after) after();
    }
    return medianOf(ms);
  }
  CUevent a, b;
  CK(cu.cuEventCreate(&a, CU_EVENT_DEFAULT));
  CK(cu.cuEventCreate(&b, CU_EVENT_DEFAULT));
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    for (int k = 0; k < kBlockerCopies; ++k) {
      CK(cu.cuMemcpyDtoDAsync(blocker_dst, blocker_src, kBlockerBytes, stream));
    }
    CK(cu.cuEventRecord(a, stream));
    const auto host_start = std::chrono::steady_clock::now();
    body();
    const double host_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - host_start).count();
    CK(cu.cuEventRecord(b, stream));
    CK(cu.cuEventSynchronize(b));
    float t = 0;
    CK(cu.cuEventElapsedTime(&t, a, b));
    ms.push_back(t);
    if (blocker_ms > 0) slowest_enqueue = std::max(slowest_enqueue, host_ms / blocker_ms);
    if (after) after();
  }
  CK(cu.cuEventDestroy(a));
  CK(cu.cuEventDestroy(b));
  return medianOf(ms);
}

std::string ratio(double value, double of, const char* what) {
  char t[96];
  std::snprintf(t, sizeof t, "%.2f of %s", value / of, what);
  return t;
}

// ---- large ranges ---------------------------------------------------------------------

uint64_t big_bytes = uint64_t{1} << 30;

// Pairs of bfloat16 values near N(0, 1): the same bytes are clean float32
// (high halves) and clean bfloat16.
void fillBig(Buffer& big) {
  uint64_t x = 0x9e3779b97f4a7c15ull;
  auto* words = reinterpret_cast<uint32_t*>(big.host.data());
  const uint64_t bytes = big.host.size();
  auto bf = [](uint32_t r) {
    float f = (static_cast<float>(r & 0xffff) / 32768.0f - 1.0f) * 2.0f;
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b >> 16;
  };
  for (uint64_t i = 0; i < bytes / 4; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    words[i] = bf(static_cast<uint32_t>(x)) << 16 | bf(static_cast<uint32_t>(x >> 32));
  }
  big.upload();
}

// Times a launch `runs` times, checking every run's slots against `want`.
double timedLaunch(Ring& ring, const Launch& l, uint32_t grid, int runs, const std::vector<ObservationSlot>& want,
                   const std::string& name) {
  bool ok = true;
  std::string error;
  const double ms = timeMs(runs, [&] { enqueue(l, grid); }, [&] {
    std::vector<ObservationSlot> got;
    if (ok && !(ring.drain(&got, &error) && compareSlots(got, want, true, &error))) ok = false;
  });
  report("throughput", name, ok, ok ? std::to_string(want.size()) + " slots every run" : error);
  return ms;
}

void largeRanges(Ring& ring, Buffer& big, double copy) {
  const uint64_t size = big.host.size();
  const uint32_t chunks = chunkCountFor(size, chunkShiftFor(size));
  const std::string mib = std::to_string(size >> 20) + " MiB";
  double f32_agent_ms = 0;
  for (Dtype d : {Dtype::kFloat32, Dtype::kBFloat16}) {
    const Launch l = makeLaunch(ring, {Range{&big, 0, size, d}});
    const auto want = reference::launchSlots(l.host, 0);
    for (uint32_t grid : {agentGrid(chunks), chunks}) {
      const std::string what = std::string(dtypeName(d)) + " " + mib + ", grid " + std::to_string(grid);
      const double ms = timedLaunch(ring, l, grid, 5, want, what + " (5 runs, each checked)");
      if (d == Dtype::kFloat32 && grid == agentGrid(chunks)) f32_agent_ms = ms;
      figures.push_back({"fingerprint " + what, size / (ms * 1e6), "GB/s",
                         ratio(size / (ms * 1e6), copy, "the copy's read+write") +
                             (grid == agentGrid(chunks) ? " (the agent's grid)" : "")});
    }
  }
  // A 256 KiB range at the agent's grid, one smallest chunk on one block,
  // and what each further chunk of a long range adds.
  const Launch one = makeLaunch(ring, {Range{&big, 0, 256u << 10, Dtype::kFloat32}});
  const uint32_t one_chunks = one.host.ranges[0].chunks;
  const double one_ms = timedLaunch(ring, one, agentGrid(one_chunks), 21, reference::launchSlots(one.host, 0),
                                    "float32 256 KiB range, the agent's grid (21 runs)");
  figures.push_back({"a 256 KiB float32 range (" + std::to_string(one_chunks) + " chunk(s), the agent's grid)",
                     one_ms * 1e3, "us", "GPU time of the launch"});
  const std::string small_kib = std::to_string(kMinChunkBytes >> 10) + " KiB";
  const Launch small = makeLaunch(ring, {Range{&big, 0, kMinChunkBytes, Dtype::kFloat32}});
  const double small_ms = timedLaunch(ring, small, 1, 21, reference::launchSlots(small.host, 0),
                                      "float32 " + small_kib + ", one chunk (21 runs)");
  figures.push_back({"one chunk (float32 " + small_kib + ", 1 block)", small_ms * 1e3, "us", "GPU time of the launch"});
  const double per_chunk = (f32_agent_ms - small_ms) * 1e3 / (chunks - 1);
  char note[160];
  std::snprintf(note, sizeof note, "(T(%u chunks) - T(one smallest chunk)) / %u; a %llu KiB chunk at the copy's rate: %.2f us",
                chunks, chunks - 1, static_cast<unsigned long long>((size / chunks) >> 10),
                static_cast<double>(size / chunks) / (copy * 1e3));
  figures.push_back({"per chunk, " + mib + " float32 range", per_chunk, "us", note});
}

// ---- small launches -------------------------------------------------------------------

// `count` back-to-back eager launches of `l`; each must write `want`.
double eagerPerLaunch(Ring& ring, const Launch& l, int count, const std::vector<ObservationSlot>& want,
                      const std::string& name) {
  const double ms = timeMs(1, [&] { for (int i = 0; i < count; ++i) enqueue(l, agentGrid(l.device.total_chunks)); });
  std::vector<ObservationSlot> got;
  std::string error;
  bool ok = ring.drain(&got, &error) && got.size() == want.size() * count;
  for (size_t i = 0; ok && i < got.size(); ++i) ok = compareSlots({got[i]}, want, false, &error);
  if (!ok && error.empty()) error = std::to_string(got.size()) + " slots, want " + std::to_string(want.size() * count);
  report("launch", name, ok, ok ? std::to_string(got.size()) + " slots" : error);
  return ms * 1e3 / count;
}

// A graph of `nodes` launches of `ranges` (a SiteState each), replayed; each
// replay must write every node's slots with the replay's execution index.
double graphPerNode(Ring& ring, const std::vector<Range>& ranges, int nodes, bool outside, const std::string& name) {
  CUdeviceptr states;
  CK(cu.cuMemAlloc(&states, nodes * sizeof(SiteState)));
  zero(states, nodes * sizeof(SiteState));
  std::vector<Launch> launches;
  for (int i = 0; i < nodes; ++i) {
    launches.push_back(makeLaunch(ring, ranges, states + i * sizeof(SiteState), outside ? ~0u : 0, ~0u));
  }
  CUgraph g;
  CUgraphExec exec;
  CK(cu.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  for (const Launch& l : launches) enqueue(l, agentGrid(l.device.total_chunks));
  CK(cu.cuStreamEndCapture(stream, &g));
  CK(cu.cuGraphInstantiate(&exec, g, 0));
  CK(cu.cuGraphLaunch(exec, stream));  // warm-up, execution 0
  CK(cu.cuStreamSynchronize(stream));
  bool ok = true;
  std::string error;
  uint32_t replay = 0;
  auto drain = [&] {
    std::vector<ObservationSlot> got;
    const auto want = outside ? std::vector<ObservationSlot>{} : reference::launchSlots(launches[0].host, replay);
    ++replay;
    if (!ok) return;
    ok = ring.drain(&got, &error) && got.size() == want.size() * nodes;
    for (size_t i = 0; ok && i < got.size(); ++i) ok = compareSlots({got[i]}, want, false, &error);
    if (!ok && error.empty()) error = std::to_string(got.size()) + " slots in replay " + std::to_string(replay - 1);
  };
  drain();
  const double ms = timeMs(5, [&] { CK(cu.cuGraphLaunch(exec, stream)); }, drain);
  CK(cu.cuGraphExecDestroy(exec));
  CK(cu.cuGraphDestroy(g));
  cu.cuMemFree(states);
  report("launch", name, ok, ok ? "6 replays, every slot checked" : error);
  return ms * 1e3 / nodes;
}

void smallLaunches(Ring& ring) {
  Pack pack(std::vector<Pack::Spec>(kMaxRangesPerLaunch, Pack::Spec{4096, Dtype::kFloat32, 0}), 0, 2);
  const std::vector<Range> one(pack.ranges.begin(), pack.ranges.begin() + 1);
  const std::vector<Range> three(pack.ranges.begin(), pack.ranges.begin() + 3);
  const Launch floor = makeLaunch(ring, one, 0, 1, 0);  // execution 0 is outside [1, 0]: nothing to do
  const Launch l1 = makeLaunch(ring, one), l3 = makeLaunch(ring, three), l96 = makeLaunch(ring, pack.ranges);
  const double e0 = eagerPerLaunch(ring, floor, 1000, {}, "1000 eager launches, nothing to do");
  const double e1 = eagerPerLaunch(ring, l1, 1000, reference::launchSlots(l1.host, 0), "1000 eager launches of 1 x 4 KiB");
  const double e3 = eagerPerLaunch(ring, l3, 1000, reference::launchSlots(l3.host, 0), "1000 eager launches of 3 x 4 KiB");
  const double e96 = eagerPerLaunch(ring, l96, 50, reference::launchSlots(l96.host, 0), "50 eager launches of 96 x 4 KiB");
  const double g0 = graphPerNode(ring, one, 100, true, "graph of 100 launches outside their window");
  const double g1 = graphPerNode(ring, one, 100, false, "graph of 100 launches of 1 x 4 KiB");
  const double g3 = graphPerNode(ring, three, 100, false, "graph of 100 launches of 3 x 4 KiB");
  auto above = [](double v, double floor_us) {
    char t[64];
    std::snprintf(t, sizeof t, "%.1f us above the floor", v - floor_us);
    return std::string(t);
  };
  figures.push_back({"eager launch floor (nothing to do)", e0, "us", "GPU time per launch, back to back"});
  figures.push_back({"eager launch, 1 range of 4 KiB", e1, "us", above(e1, e0)});
  figures.push_back({"eager launch, 3 ranges of 4 KiB", e3, "us", above(e3, e0)});
  figures.push_back({"eager launch, 96 ranges of 4 KiB", e96, "us", above(e96, e0)});
  figures.push_back({"graph node floor (outside its window)", g0, "us", "GPU time per node, 100-node graph"});
  figures.push_back({"graph node, 1 range of 4 KiB", g1, "us", above(g1, g0) + "; x530 per step: " +
                                                                   std::to_string(static_cast<int>(g1 * 530)) + " us"});
  figures.push_back({"graph node, 3 ranges of 4 KiB", g3, "us", above(g3, g0) + "; x530 per step: " +
                                                                    std::to_string(static_cast<int>(g3 * 530)) + " us"});
}

void runMeasures() {
  if (cu.canTime()) {
    CK(cu.cuMemAlloc(&blocker_src, kBlockerBytes));
    CK(cu.cuMemAlloc(&blocker_dst, kBlockerBytes));
  }
  Buffer big(big_bytes);
  fillBig(big);
  double copy = 0;
  {
    CUdeviceptr dst;
    CK(cu.cuMemAlloc(&dst, big_bytes));
    const double ms = timeMs(5, [&] { CK(cu.cuMemcpyDtoDAsync(dst, big.dev, big_bytes, stream)); });
    cu.cuMemFree(dst);
    copy = 2 * big_bytes / (ms * 1e6);
    if (cu.canTime()) blocker_ms = kBlockerCopies * 2 * kBlockerBytes / (copy * 1e6);
  }
  Ring ring(1u << 13, /*scratch=*/true);
  largeRanges(ring, big, copy);
  figures.push_back({"cuMemcpyDtoD " + std::to_string(big_bytes >> 20) + " MiB (read + write)", copy, "GB/s",
                     cu.canTime() ? "" : "host time: this driver cannot time kernels"});
  smallLaunches(ring);
  if (slowest_enqueue > 1) {
    char note[96];
    std::snprintf(note, sizeof note, "enqueueing took %.1fx the copies queued ahead: CPU-bound figures", slowest_enqueue);
    figures.push_back({"timing", slowest_enqueue, "x", note});
  }
  if (cu.canTime()) {
    cu.cuMemFree(blocker_src);
    cu.cuMemFree(blocker_dst);
  }
}

}  // namespace

std::string group_suffix;

void report(const std::string& plain_group, const std::string& name, bool ok, const std::string& detail) {
  const std::string group = plain_group + group_suffix;
  if (!groups.count(group)) group_order.push_back(group);
  Group& g = groups[group];
  ++g.cases;
  if (!ok) ++g.failed;
  char line[1024];
  std::snprintf(line, sizeof line, "%s  %-12s %-46s %s\n", ok ? "PASS" : "FAIL", group.c_str(), name.c_str(),
                detail.c_str());
  if (log_file != nullptr) {
    std::fputs(line, log_file);
    std::fflush(log_file);
  }
  if (!ok || verbose) {
    std::fputs(line, stdout);
    std::fflush(stdout);
  }
}

}  // namespace tcgd::tensor::gpu_check

int main(int argc, char** argv) {
  using namespace tcgd::tensor;
  using namespace tcgd::tensor::gpu_check;
  setvbuf(stdout, nullptr, _IOLBF, 0);
  bool measure = true;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--log") == 0 && i + 1 < argc) {
      log_file = std::fopen(argv[++i], "w");
      if (log_file == nullptr) {
        std::printf("FAIL: cannot write %s\n", argv[i]);
        return 1;
      }
    } else if (std::strcmp(argv[i], "--verbose") == 0) {
      verbose = true;
    } else if (std::strcmp(argv[i], "--no-measure") == 0) {
      measure = false;
    } else if (std::strcmp(argv[i], "--big-mib") == 0 && i + 1 < argc && std::atoi(argv[i + 1]) >= 1) {
      big_bytes = uint64_t(std::atoi(argv[++i])) << 20;
    } else {
      std::printf("usage: %s [--log FILE] [--verbose] [--no-measure] [--big-mib N]\n", argv[0]);
      return 2;
    }
  }
  openDriver();
  if (tcgd::collectors::tensor::fingerprintImageBytes() == 0) {
    skip("this build has no fingerprint image (nvcc was not found when it was configured)");
  }
  CUdevice dev;
  CK(cu.cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CK(cu.cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cu.cuCtxPushCurrent(ctx));
  char name[256] = {};
  CK(cu.cuDeviceGetName(name, sizeof name, dev));
  int major = 0, minor = 0, sms = 0, version = 0;
  CK(cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CK(cu.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  CK(cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  CK(cu.cuDriverGetVersion(&version));
  agent_max_grid = static_cast<uint32_t>(std::max(4, sms * 4));
  CUmodule module;
  CK(cu.cuModuleLoadData(&module, tcgd::collectors::tensor::fingerprintImage()));
  CK(cu.cuModuleGetFunction(&kernel, module, kFingerprintKernelName));
  CK(cu.cuModuleGetFunction(&publish_kernel, module, kPublishKernelName));
  int regs = -1, local = -1, blocks_per_sm = -1;
  if (cu.cuFuncGetAttribute != nullptr) {
    CK(cu.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, kernel));
    CK(cu.cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, kernel));
  }
  if (cu.cuOccupancyMaxActiveBlocksPerMultiprocessor != nullptr) {
    CK(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kFingerprintBlockThreads, 0));
  }
  CK(cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  say("fingerprint_gpu_check: %s (sm_%d%d, %d SMs), driver %d, image %zu bytes, kernel %d registers, %d bytes "
      "local, %d blocks/SM, agent grid <= %u\n",
      name, major, minor, sms, version, tcgd::collectors::tensor::fingerprintImageBytes(), regs, local,
      blocks_per_sm, agent_max_grid);
  const auto start = std::chrono::steady_clock::now();
  // The agent's way first (a scratch region: ranges combined on the
  // device), then a slot per chunk (what a launch without one writes).
  {
    Ring ring(1u << 13, /*scratch=*/true);
    runCorrectness(ring);
  }
  {
    Ring ring(1u << 13, /*scratch=*/false);
    group_suffix = "/chunks";
    runCorrectness(ring);
    group_suffix.clear();
  }
  {
    // Captured launches published per replay: partials, then the publish
    // kernel combines and writes them.
    Ring ring(1u << 13, /*scratch=*/false, /*publish=*/true);
    group_suffix = "/publish";
    runCorrectness(ring);
    group_suffix.clear();
  }
  if (measure) runMeasures();

  int cases = 0, failed = 0;
  say("\n%-14s %6s %6s %6s\n", "group", "cases", "pass", "fail");
  for (const std::string& g : group_order) {
    const Group& r = groups[g];
    say("%-14s %6d %6d %6d\n", g.c_str(), r.cases, r.cases - r.failed, r.failed);
    cases += r.cases;
    failed += r.failed;
  }
  if (!figures.empty()) {
    say("\n%-40s %10s\n", "measure", "value");
    for (const Figure& f : figures) {
      say("%-40s %10.2f %-5s %s\n", f.what.c_str(), f.value, f.unit.c_str(), f.note.c_str());
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  say("\nRESULT: %s: %d of %d cases passed (hash, counts, min, max, first_nonfinite and the sums bit-exact), "
      "%.0f s\n",
      failed == 0 ? "PASS" : "FAIL", cases - failed, cases, seconds);
  if (log_file != nullptr) std::fclose(log_file);
  return failed == 0 ? 0 : 1;
}
