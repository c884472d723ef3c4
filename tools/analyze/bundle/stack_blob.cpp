#include "bundle/stack_blob.h"

#include <charconv>

namespace tcgd::analyze {
namespace {

// Calls visit(line) for every line of `text` (without its newline; a final
// newline makes no empty last line).
template <typename Visit>
void forEachLine(std::string_view text, Visit visit) {
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    visit(text.substr(0, eol));
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
  }
}

StackLine splitLine(std::string_view line) {
  StackLine out;
  const size_t tab = line.find('\t');
  if (tab == std::string_view::npos) {
    out.first = line;
    return out;
  }
  out.first = line.substr(0, tab);
  const std::string_view rest = line.substr(tab + 1);
  const size_t tab2 = rest.find('\t');
  if (tab2 == std::string_view::npos) {
    out.second = rest;
    out.columns = 2;
    return out;
  }
  out.second = rest.substr(0, tab2);
  out.third = rest.substr(tab2 + 1);
  out.columns = 3;
  return out;
}

}  // namespace

StackLines splitStackBlob(std::string_view text) {
  StackLines out;
  bool header = true;
  forEachLine(text, [&](std::string_view line) {
    if (header) {
      out.header = line;
      header = false;
    } else if (line == "truncated") {
      out.truncated = true;
    } else if (!line.empty()) {
      out.frames.push_back(splitLine(line));
    }
  });
  return out;
}

bool parseNativeStack(std::string_view text, std::vector<NativeFrame>* frames, bool* truncated) {
  frames->clear();
  bool header = true, ok = true;
  forEachLine(text, [&](std::string_view line) {
    if (!ok) return;
    if (header) {
      ok = line == kNativeStackHeader;
      header = false;
      return;
    }
    if (line == "truncated") {
      *truncated = true;
      return;
    }
    const size_t tab = line.find('\t');
    if (tab == std::string_view::npos || !line.starts_with("0x") || tab == 2) {
      ok = false;
      return;
    }
    NativeFrame frame;
    const char* end = line.data() + tab;
    const auto [stop, error] = std::from_chars(line.data() + 2, end, frame.offset, 16);
    if (error != std::errc() || stop != end) {
      ok = false;
      return;
    }
    frame.module = std::string(line.substr(tab + 1));
    frames->push_back(std::move(frame));
  });
  return ok && !header;
}

}  // namespace tcgd::analyze
