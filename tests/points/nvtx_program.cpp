// A program that makes NVTX ranges through the NVTX v3 headers (as
// torch.cuda.nvtx and the frameworks do), for the nvtx=PATTERN tests. Its
// ranges come before any CUDA call: NVTX alone must start the agent. It prints
// NVTX_INJECTION64_PATH as it saw it, then "failures N", and exits with 3.
// argv[1]: 'a' (the agent attached: check NVTX's return values) and/or 'p'
// (after the ranges, cuInit on the fake driver, which starts the agent and
// its point rules when NVTX did not, then an explicit point "done" through
// tcgd_point, found with dlsym).
#include <cuda.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

extern "C" int nvtxLibraryPush(const char* message);  // nvtx_library.cpp
extern "C" int nvtxLibraryPop();

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "nvtx_program: %s\n", what);
    ++failures;
  }
}

nvtxEventAttributes_t attributes() {
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  return a;
}

void ranges(bool attached) {
  // Push/pop, nested, with a non-matching range in between.
  const int level = nvtxRangePushA("fwd");
  nvtxRangePushA("inner");
  nvtxRangePushA("fwd.layer1");
  nvtxRangePop();
  nvtxRangePop();
  const int popped = nvtxRangePop();
  if (attached) expect(level == 0 && popped == 0, "push/pop levels");
  // Start/end, with a non-matching one and a repeated end.
  const nvtxRangeId_t id = nvtxRangeStartA("optAstep");
  const nvtxRangeId_t other = nvtxRangeStartA("other");
  nvtxRangeEnd(other);
  nvtxRangeEnd(id);
  nvtxRangeEnd(id);
  // Unicode (wchar_t, UTF-32) becomes UTF-8.
  nvtxRangePushW(L"wide-\u00e9");
  nvtxRangePop();
  // A domain with a registered string; its stack is its own, so popping it
  // ends its range, not the default domain's.
  nvtxDomainHandle_t domain = nvtxDomainCreateA("my.domain");
  nvtxEventAttributes_t a = attributes();
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = nvtxDomainRegisterStringA(domain, "reg:load");
  nvtxDomainRangePushEx(domain, &a);
  nvtxRangePushA("fwd2");
  nvtxDomainRangePop(domain);
  nvtxRangePop();
  nvtxEventAttributes_t b = attributes();
  b.messageType = NVTX_MESSAGE_TYPE_ASCII;
  b.message.ascii = "dom-range";
  const nvtxRangeId_t dom_id = nvtxDomainRangeStartEx(domain, &b);
  nvtxDomainRangeEnd(domain, dom_id);
  // Ex in the default domain, ended on another thread.
  nvtxEventAttributes_t c = attributes();
  c.messageType = NVTX_MESSAGE_TYPE_ASCII;
  c.message.ascii = "fwd-thread";
  const nvtxRangeId_t thread_id = nvtxRangeStartEx(&c);
  std::thread([thread_id] { nvtxRangeEnd(thread_id); }).join();
  // The library's own NVTX copy: pushed there, popped here, and the reverse.
  nvtxLibraryPush("fwd-lib");
  nvtxRangePop();
  nvtxRangePushA("fwd-main");
  nvtxLibraryPop();
  // A pop with nothing open.
  const int unbalanced = nvtxRangePop();
  if (attached) expect(unbalanced < 0, "an unbalanced pop returns a negative level");
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  const bool attached = std::strchr(mode, 'a') != nullptr;
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  std::printf("NVTX_INJECTION64_PATH=%s\n", path != nullptr ? path : "(unset)");
  ranges(attached);
  if (std::strchr(mode, 'p') != nullptr) {
    expect(cuInit(0) == CUDA_SUCCESS, "cuInit");
    using PointFn = int (*)(const char*);
    auto point = reinterpret_cast<PointFn>(dlsym(RTLD_DEFAULT, "tcgd_point"));
    expect(point != nullptr && point("done") == 0, "tcgd_point(\"done\")");
  }
  std::printf("failures %d\n", failures);
  return 3;
}
