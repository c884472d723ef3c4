// The text of stack blobs (BlobKind::kStack), read in one place. Two formats
// (docs/memory-stacks.md), innermost frame first:
//   "native-stack v1", then "0xOFFSET<TAB>module" per frame (OFFSET in the
//       module's file; "0xADDRESS<TAB>?" where no module holds it), and
//       "truncated" when deeper frames were cut (collectors/memory/
//       native_stacks.cpp writes it);
//   "torch-stack v1", then "function<TAB>file<TAB>line" per frame
//       (collectors/torch/snapshot_taker.cpp writes it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tcgd::analyze {

inline constexpr std::string_view kNativeStackHeader = "native-stack v1";
inline constexpr std::string_view kTorchStackHeader = "torch-stack v1";

// One frame line cut at its first two tabs; the views point into the blob.
struct StackLine {
  std::string_view first;   // native: "0x1234"; torch: the function
  std::string_view second;  // native: the module path or "?"; torch: the file
  std::string_view third;   // torch: the line number
  int columns = 1;          // 1: no tab (the whole line is `first`)
};

struct StackLines {
  std::string_view header;  // the first line
  std::vector<StackLine> frames;
  bool truncated = false;
};

// Splits any stack blob into its header and frame lines, leniently: empty
// lines are skipped and nothing is refused (for showing stacks).
StackLines splitStackBlob(std::string_view text);

struct NativeFrame {
  uint64_t offset = 0;  // in the module's file; the address when module is "?"
  std::string module;
};

// A native-stack v1 blob, strictly. False (and `frames` unspecified) when
// the text is not one: another header, or a frame line that is not
// "0x<hex digits><TAB>module".
bool parseNativeStack(std::string_view text, std::vector<NativeFrame>* frames, bool* truncated);

}  // namespace tcgd::analyze
