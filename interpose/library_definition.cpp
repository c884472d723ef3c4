#include "interpose/library_definition.h"

#include <dlfcn.h>
#include <link.h>

#include <cstddef>
#include <cstring>

#include "interpose/real_functions.h"

namespace tcgd::interpose {
namespace {

struct Search {
  DlsymFn dl;
  const char* prefix;
  size_t prefix_length;
  const char* name;
  const void* ours;  // our wrapper: never the answer
  void* found;
};

int searchObject(dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<Search*>(data);
  const char* path = info->dlpi_name;
  const char* slash = path != nullptr ? std::strrchr(path, '/') : nullptr;
  const char* file = slash != nullptr ? slash + 1 : path;
  if (file == nullptr || std::strncmp(file, s->prefix, s->prefix_length) != 0) return 0;
  void* handle = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return 0;
  void* fn = s->dl(handle, s->name);
  dlclose(handle);  // the object stays: it was loaded before, and NOLOAD took one more reference
  if (fn == nullptr || fn == s->ours) return 0;
  s->found = fn;
  return 1;
}

}  // namespace

void* findLibraryDefinition(const char* prefix, const char* name, const void* ours) {
  const DlsymFn dl = realDlsym();
  if (dl == nullptr) return nullptr;
  void* fn = dl(RTLD_NEXT, name);
  if (fn != nullptr && fn != ours) return fn;
  Search search{dl, prefix, std::strlen(prefix), name, ours, nullptr};
  dl_iterate_phdr(&searchObject, &search);
  return search.found;
}

}  // namespace tcgd::interpose
