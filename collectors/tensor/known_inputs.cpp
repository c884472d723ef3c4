#include "collectors/tensor/known_inputs.h"

#include <vector>

#include "collectors/tensor/kernel_demangle.h"

namespace tcgd::collectors::tensor {
namespace {

using name_parse::Nodes;

// The text of one comma-separated part of a bracket group.
std::string_view partText(const Nodes& part) {
  if (part.empty()) return {};
  const char* begin = part.front().text.data();
  const char* end = part.back().text.data() + part.back().text.size();
  return {begin, static_cast<size_t>(end - begin)};
}

// "std::array<char*, 3ul>" or "at::detail::Array<char*, 3>": N, else 0.
uint64_t pointerArrayLength(std::string_view text) {
  for (std::string_view prefix : {std::string_view("std::array<char*, "), std::string_view("at::detail::Array<char*, ")}) {
    if (text.substr(0, prefix.size()) != prefix || text.back() != '>') continue;
    std::string_view n = text.substr(prefix.size(), text.size() - prefix.size() - 1);
    while (!n.empty() && (n.back() == 'u' || n.back() == 'l')) n.remove_suffix(1);
    if (n.empty() || n.size() > 4) return 0;
    uint64_t value = 0;
    for (char c : n) {
      if (c < '0' || c > '9') return 0;
      value = value * 10 + static_cast<uint64_t>(c - '0');
    }
    return value;
  }
  return 0;
}

bool contains(const uint64_t* values, uint32_t count, uint64_t v) {
  for (uint32_t i = 0; i < count; ++i)
    if (values[i] == v) return true;
  return false;
}

bool overlaps(const proto::SiteBlobRange& a, const proto::SiteBlobRange& b) {
  return a.ptr < b.ptr + b.bytes && b.ptr < a.ptr + a.bytes;
}

}  // namespace

int16_t atenDataParam(std::string_view demangled) {
  const name_parse::ParsedName p = name_parse::parseName(demangled);
  if (!p.ok || !p.has_params) return -1;
  const std::vector<Nodes> scopes = name_parse::splitScopes(p.name);
  if (scopes.size() != 3 || name_parse::scopeIdentifier(scopes[0]) != "at" ||
      name_parse::scopeIdentifier(scopes[1]) != "native")
    return -1;
  const std::string_view name = name_parse::scopeIdentifier(scopes[2]);
  if (name != "vectorized_elementwise_kernel" && name != "unrolled_elementwise_kernel") return -1;
  int16_t found = -1;
  for (size_t i = 0; i < p.params.parts.size(); ++i) {
    if (pointerArrayLength(partText(p.params.parts[i])) < 2) continue;
    if (found >= 0 || i > 32) return -1;  // two arrays: which is the data is not clear
    found = static_cast<int16_t>(i);
  }
  return found;
}

void markKnownInputs(const proto::SiteBlobRange* ranges, uint32_t range_count,
                     const proto::SiteBlobPointer* pointers, uint32_t pointer_count,
                     const LibraryOperands* operands, uint32_t data_offset, uint32_t data_size, bool* known) {
  for (uint32_t i = 0; i < range_count; ++i) known[i] = false;
  if (operands != nullptr && operands->depth != 0) {
    for (uint32_t i = 0; i < range_count; ++i)
      known[i] = contains(operands->inputs, operands->input_count, ranges[i].ptr) &&
                 !contains(operands->outputs, operands->output_count, ranges[i].ptr);
  } else if (data_size >= 16) {
    // Every word naming the range must be an input word of the data array
    // (each range was found through a word, so each is named at least once).
    for (uint32_t i = 0; i < range_count; ++i) known[i] = true;
    for (uint32_t w = 0; w < pointer_count; ++w) {
      const uint32_t r = pointers[w].range;
      const uint32_t off = pointers[w].offset;
      if (r < range_count && !(off >= data_offset + 8 && off + 8 <= data_offset + data_size)) known[r] = false;
    }
  }
  // A known input overlapping any range that is not one may be written.
  for (uint32_t i = 0; i < range_count; ++i) {
    if (!known[i]) continue;
    for (uint32_t j = 0; j < range_count; ++j) {
      if (j == i || known[j]) continue;
      if (overlaps(ranges[i], ranges[j])) {
        known[i] = false;
        break;
      }
    }
  }
}

void ReuseTable::begin(uint64_t id, bool other_thread_since) {
  if (capture_id != id || other_thread_since) clear();
  capture_id = id;
}

const ReuseEntry* ReuseTable::find(const proto::SiteBlobRange& range, uint32_t rule) const {
  for (uint32_t i = 0; i < count; ++i) {
    const ReuseEntry& e = entries[i];
    if (e.ptr == range.ptr && e.bytes == range.bytes && e.rule == rule &&
        (e.dtype == range.dtype || range.dtype == 0))
      return &e;
  }
  return nullptr;
}

void ReuseTable::forget(uint64_t begin, uint64_t end) {
  for (uint32_t i = 0; i < count;) {
    const ReuseEntry& e = entries[i];
    if (e.ptr < end && begin < e.ptr + e.bytes) {
      entries[i] = entries[--count];
      if (next > count) next = 0;
    } else {
      ++i;
    }
  }
}

void ReuseTable::remember(const proto::SiteBlobRange& range, uint64_t site, uint16_t index, uint32_t rule) {
  ReuseEntry* slot = nullptr;
  for (uint32_t i = 0; i < count && slot == nullptr; ++i)
    if (entries[i].ptr == range.ptr && entries[i].bytes == range.bytes) slot = &entries[i];
  if (slot == nullptr) {
    if (count < kEntries) {
      slot = &entries[count++];
    } else {
      slot = &entries[next];
      next = (next + 1) % kEntries;
    }
  }
  *slot = ReuseEntry{range.ptr, range.bytes, site, rule, index, range.dtype};
}

}  // namespace tcgd::collectors::tensor
