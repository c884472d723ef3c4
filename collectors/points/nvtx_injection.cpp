// NVTX's injection interface (NVTX v3, nvtx3/nvToolsExt.h, the ABI of
// nvtxDetail/nvtxTypes.h and nvtxImpl.h): each copy of the NVTX headers in
// the process (one per library that includes them, e.g. libtorch_python)
// reads NVTX_INJECTION64_PATH at its first NVTX call, dlopens that library
// and calls its InitializeInjectionNvtx2 with a getter for its export
// tables. The injection writes its handlers into the function-pointer slots
// of the CORE and CORE2 callback modules; slots left alone become no-ops.
//
// libtcgd.so is that library: its constructor points NVTX_INJECTION64_PATH
// at itself when TCGD_POINTS asks for nvtx rules and the job has not set the
// variable, so torch.cuda.nvtx and framework ranges reach the handlers here
// without any change to the job.
#define NVTX_NO_IMPL  // types and declarations only: this is a tool
#include <nvtx3/nvToolsExt.h>

#include <dlfcn.h>
#include <errno.h>  // program_invocation_name
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include <cstring>
#include <cwchar>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "collectors/points/nvtx_points.h"
#include "collectors/points/point_rules.h"
#include "collectors/points/points.h"
#include "config.h"
#include "emit.h"

extern char** environ;

namespace tcgd::collectors::points::nvtx {
namespace {

constexpr const char* kInjectionVariable = "NVTX_INJECTION64_PATH";

// ---- registered strings and domains -----------------------------------------

// nvtxDomainRegisterString returns our own handle: a pointer to one of
// these, never freed (registration is rare; a handle stays valid for the
// process). The hot path reads it without a lock.
struct RegisteredString {
  uint32_t magic;
  uint32_t length;
  char text[kMaxMessage + 1];
};
constexpr uint32_t kStringMagic = 0x74636764;  // "tcgd"

std::mutex& registryMutex() {
  static auto* m = new std::mutex;  // never destroyed: NVTX calls can come at exit
  return *m;
}

// Domain handles are small tagged integers, never dereferenced: slot 1..15
// (0 is the default domain, a null handle). The same name gets the same
// handle, as NVTX requires.
constexpr uintptr_t kDomainTag = 0x7c6d0000;

uint32_t domainSlot(nvtxDomainHandle_t domain) {
  const auto v = reinterpret_cast<uintptr_t>(domain);
  return v > kDomainTag && v < kDomainTag + kDomainSlots ? static_cast<uint32_t>(v - kDomainTag)
                                                         : 0;
}

// ---- messages ----------------------------------------------------------------

// A range's message as bytes: ASCII and registered messages are viewed in
// place (no copy on the hot path); Unicode ones are converted into `buffer`.
struct Message {
  const char* data = "";
  size_t length = 0;
  char buffer[kMaxMessage + 1];
  std::string_view view() const { return std::string_view(data, length); }
};

void fromAscii(const char* s, Message* m) {
  if (s == nullptr) return;
  m->data = s;
  m->length = strnlen(s, kMaxMessage);
}

// wchar_t is UTF-32 on Linux: encoded as UTF-8 (invalid code points as '?').
void fromUnicode(const wchar_t* s, Message* m) {
  if (s == nullptr) return;
  size_t n = 0;
  for (; *s != 0; ++s) {
    auto c = static_cast<uint32_t>(*s);
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = '?';
    char bytes[4];
    size_t k = 0;
    if (c < 0x80) {
      bytes[k++] = static_cast<char>(c);
    } else if (c < 0x800) {
      bytes[k++] = static_cast<char>(0xC0 | (c >> 6));
      bytes[k++] = static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      bytes[k++] = static_cast<char>(0xE0 | (c >> 12));
      bytes[k++] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      bytes[k++] = static_cast<char>(0x80 | (c & 0x3F));
    } else {
      bytes[k++] = static_cast<char>(0xF0 | (c >> 18));
      bytes[k++] = static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      bytes[k++] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      bytes[k++] = static_cast<char>(0x80 | (c & 0x3F));
    }
    if (n + k > kMaxMessage) break;  // cut on a character boundary
    std::memcpy(m->buffer + n, bytes, k);
    n += k;
  }
  m->data = m->buffer;
  m->length = n;
}

void fromAttributes(const nvtxEventAttributes_t* a, Message* m) {
  // A structure too small to hold the message field has none.
  if (a == nullptr ||
      a->size < offsetof(nvtxEventAttributes_t, message) + sizeof(nvtxMessageValue_t))
    return;
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      fromAscii(a->message.ascii, m);
      break;
    case NVTX_MESSAGE_TYPE_UNICODE:
      fromUnicode(a->message.unicode, m);
      break;
    case NVTX_MESSAGE_TYPE_REGISTERED: {
      const auto* r = reinterpret_cast<const RegisteredString*>(a->message.registered);
      if (r != nullptr && r->magic == kStringMagic) {
        m->data = r->text;
        m->length = r->length;
      }
      break;
    }
    default:
      break;  // no message: matches only a pattern that matches ""
  }
}

// ---- the handlers ------------------------------------------------------------

int NVTX_API pushA(const char* s) {
  Message m;
  fromAscii(s, &m);
  return rangePush(0, m.view());
}
int NVTX_API pushW(const wchar_t* s) {
  Message m;
  fromUnicode(s, &m);
  return rangePush(0, m.view());
}
int NVTX_API pushEx(const nvtxEventAttributes_t* a) {
  Message m;
  fromAttributes(a, &m);
  return rangePush(0, m.view());
}
int NVTX_API pop() { return rangePop(0); }

nvtxRangeId_t NVTX_API startA(const char* s) {
  Message m;
  fromAscii(s, &m);
  return rangeStart(m.view());
}
nvtxRangeId_t NVTX_API startW(const wchar_t* s) {
  Message m;
  fromUnicode(s, &m);
  return rangeStart(m.view());
}
nvtxRangeId_t NVTX_API startEx(const nvtxEventAttributes_t* a) {
  Message m;
  fromAttributes(a, &m);
  return rangeStart(m.view());
}
void NVTX_API end(nvtxRangeId_t id) { rangeEnd(id); }

int NVTX_API domainPushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  Message m;
  fromAttributes(a, &m);
  return rangePush(domainSlot(d), m.view());
}
int NVTX_API domainPop(nvtxDomainHandle_t d) { return rangePop(domainSlot(d)); }
nvtxRangeId_t NVTX_API domainStartEx(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) {
  Message m;
  fromAttributes(a, &m);
  return rangeStart(m.view());
}
void NVTX_API domainEnd(nvtxDomainHandle_t, nvtxRangeId_t id) { rangeEnd(id); }

// Off the hot path (registration): a lock and allocation are fine here.
nvtxStringHandle_t registerString(std::string_view text) {
  text = text.substr(0, kMaxMessage);
  std::lock_guard<std::mutex> lock(registryMutex());
  static auto* strings = new std::unordered_map<std::string, RegisteredString*>;
  auto& slot = (*strings)[std::string(text)];
  if (slot == nullptr) {
    slot = new RegisteredString{kStringMagic, static_cast<uint32_t>(text.size()), {}};
    std::memcpy(slot->text, text.data(), text.size());
  }
  return reinterpret_cast<nvtxStringHandle_t>(slot);
}
nvtxStringHandle_t NVTX_API registerStringA(nvtxDomainHandle_t, const char* s) {
  Message m;
  fromAscii(s, &m);
  return registerString(m.view());
}
nvtxStringHandle_t NVTX_API registerStringW(nvtxDomainHandle_t, const wchar_t* s) {
  Message m;
  fromUnicode(s, &m);
  return registerString(m.view());
}

nvtxDomainHandle_t createDomain(std::string_view name) {
  std::lock_guard<std::mutex> lock(registryMutex());
  static auto* domains = new std::unordered_map<std::string, uint32_t>;
  auto [it, added] = domains->emplace(std::string(name), 0);
  if (added) {
    const auto count = static_cast<uint32_t>(domains->size());
    it->second = count < kDomainSlots ? count : kDomainSlots - 1;  // later ones share
  }
  return reinterpret_cast<nvtxDomainHandle_t>(kDomainTag + it->second);
}
nvtxDomainHandle_t NVTX_API createDomainA(const char* s) {
  Message m;
  fromAscii(s, &m);
  return createDomain(m.view());
}
nvtxDomainHandle_t NVTX_API createDomainW(const wchar_t* s) {
  Message m;
  fromUnicode(s, &m);
  return createDomain(m.view());
}

template <typename Fn>
void install(NvtxFunctionTable table, unsigned int size, unsigned int id, Fn fn) {
  if (id < size && table[id] != nullptr) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

bool installHandlers(NvtxGetExportTableFunc_t get_table) {
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
      callbacks->GetModuleFunctionTable == nullptr)
    return false;
  NvtxFunctionTable core = nullptr;
  unsigned int core_size = 0;
  NvtxFunctionTable core2 = nullptr;
  unsigned int core2_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) == 0 ||
      callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size) == 0 ||
      core == nullptr || core2 == nullptr)
    return false;
  install(core, core_size, NVTX_CBID_CORE_RangePushA, pushA);
  install(core, core_size, NVTX_CBID_CORE_RangePushW, pushW);
  install(core, core_size, NVTX_CBID_CORE_RangePushEx, pushEx);
  install(core, core_size, NVTX_CBID_CORE_RangePop, pop);
  install(core, core_size, NVTX_CBID_CORE_RangeStartA, startA);
  install(core, core_size, NVTX_CBID_CORE_RangeStartW, startW);
  install(core, core_size, NVTX_CBID_CORE_RangeStartEx, startEx);
  install(core, core_size, NVTX_CBID_CORE_RangeEnd, end);
  install(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, domainPushEx);
  install(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, domainPop);
  install(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, domainStartEx);
  install(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, domainEnd);
  install(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, registerStringA);
  install(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, registerStringW);
  install(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, createDomainA);
  install(core2, core2_size, NVTX_CBID_CORE2_DomainCreateW, createDomainW);
  // "Must be set by tools when attaching" (nvtxTypes.h); ignored by NVTX today.
  const auto* version =
      static_cast<const NvtxExportTableVersionInfo*>(get_table(NVTX_ETID_VERSIONINFO));
  if (version != nullptr && version->struct_size >= sizeof(NvtxExportTableVersionInfo) &&
      version->SetInjectionNvtxVersion != nullptr)
    version->SetInjectionNvtxVersion(NVTX_VERSION);
  return true;
}

// Whether the configuration asks for NVTX points, read without starting the
// agent (environment and TCGD_CONFIG file), so that a job whose config file
// has no nvtx rule is not started by its first NVTX call.
bool configuredForNvtx() {
  if (const PointRules* rules = points::rulesInForce()) return rules->nvtx();
  agent::Config config;
  std::vector<std::string> warnings;
  if (!agent::loadConfig(agent::captureEnvironment(environ), program_invocation_name, &config,
                         &warnings) ||
      !config.enable)
    return false;
  for (const auto& [key, value] : config.in_force) {
    PointRules rules;
    if (key == "TCGD_POINTS") return parsePointRules(value, &rules) && rules.nvtx();
  }
  return false;
}

// ---- the constructor ---------------------------------------------------------

// The absolute path of this library: NVTX dlopens the variable's value,
// possibly after the job changed its working directory.
std::string selfPath() {
  Dl_info info;
  if (dladdr(reinterpret_cast<const void*>(&selfPath), &info) == 0 || info.dli_fname == nullptr)
    return "";
  char resolved[PATH_MAX];
  if (realpath(info.dli_fname, resolved) == nullptr) return "";
  return resolved;
}

bool sameFile(const char* a, const std::string& b) {
  char resolved[PATH_MAX];
  return realpath(a, resolved) != nullptr && b == resolved;
}

// Only the environment, as agent.cpp's constructor: this runs in every
// process that inherits LD_PRELOAD and says nothing. The variable is set
// when TCGD_POINTS in the environment has an nvtx rule, or when TCGD_POINTS
// is not in the environment but a TCGD_CONFIG file may give it (the rules,
// read at the first NVTX call, then decide whether the handlers attach).
__attribute__((constructor)) void onLoad() {
  const agent::Environment env = agent::captureEnvironment(environ);
  if (agent::disabledByEnvironment(env)) return;
  const std::string* text = env.find("TCGD_POINTS");
  PointRules rules;
  const bool wanted = text != nullptr
                          ? parsePointRules(*text, &rules) && rules.nvtx()
                          : env.find("TCGD_CONFIG") != nullptr;
  if (!wanted) return;
  const std::string self = selfPath();
  const char* current = getenv(kInjectionVariable);
  if (current != nullptr && current[0] != '\0') {
    setInjectionSetup(!self.empty() && sameFile(current, self) ? InjectionSetup::kOurs
                                                                : InjectionSetup::kOtherTool);
    return;
  }
  if (self.empty() || setenv(kInjectionVariable, self.c_str(), 1) != 0) return;
  setInjectionSetup(InjectionSetup::kSetByAgent);
}

}  // namespace
}  // namespace tcgd::collectors::points::nvtx

// Called by each NVTX instance at its first NVTX call, under its init
// spin-lock (other threads calling NVTX wait). Nonzero: attached; zero:
// NVTX unloads nothing of ours (the library stays preloaded) and turns its
// calls into no-ops.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_table) {
  namespace points = tcgd::collectors::points;
  if (get_table == nullptr || !points::nvtx::injectionWanted() ||
      !points::nvtx::configuredForNvtx())
    return 0;
  // The first NVTX call starts recording, like a first CUDA call.
  if (!tcgd::agent::start()) return 0;
  // A hook on another thread may be reading the rules right now: wait for it
  // (at most about 1 s).
  bool started = points::ensureStarted();
  for (int i = 0; !started && i < 1000 && tcgd::agent::activeChannel() != nullptr; ++i) {
    timespec ms{0, 1000 * 1000};
    nanosleep(&ms, nullptr);
    started = points::ensureStarted();
  }
  const points::PointRules* rules = points::rulesInForce();
  if (!started || rules == nullptr || !rules->nvtx()) return 0;
  return points::nvtx::installHandlers(get_table) ? 1 : 0;
}
