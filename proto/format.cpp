#include "format.h"

namespace tcgd::proto {

std::string_view bundleKindName(BundleKind kind) {
  switch (kind) {
    case BundleKind::kMemory: return "memory";
    case BundleKind::kTensor: return "tensor";
  }
  // The kind comes from a file, so any other value can reach here.
  return "unknown";
}

std::string_view bundleExtension(BundleKind kind) {
  switch (kind) {
    case BundleKind::kMemory: return ".tcgd-memory";
    case BundleKind::kTensor: return ".tcgd-tensor";
  }
  return "";
}

}  // namespace tcgd::proto
