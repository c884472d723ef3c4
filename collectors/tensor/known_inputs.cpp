#include "collectors/tensor/known_inputs.h"

#include <algorithm>
#include <bit>
#include <cstring>
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

// A parameter whose first 8 bytes are a pointer the kernel only reads:
// "float const*", "c10::Half const* const*" (the array of pointers itself),
// "at::cuda::detail::TensorInfo<float const, unsigned int>",
// "at::GenericPackedTensorAccessor<float const, 2ul, at::RestrictPtrTraits, int>".
// ("float* const" never shows: a parameter's own const is not mangled.)
bool readOnlyFirstWord(const Nodes& part) {
  const std::string_view text = partText(part);
  for (std::string_view suffix : {std::string_view(" const*"), std::string_view(" const* __restrict__")})
    if (text.size() > suffix.size() && text.substr(text.size() - suffix.size()) == suffix) return true;
  if (part.empty() || !part.back().group || part.back().open != '<' || part.back().parts.empty()) return false;
  const std::vector<Nodes> scopes = name_parse::splitScopes(part);
  const bool tensor_info = scopes.size() == 4 && name_parse::scopeIdentifier(scopes[0]) == "at" &&
                           name_parse::scopeIdentifier(scopes[1]) == "cuda" &&
                           name_parse::scopeIdentifier(scopes[2]) == "detail" &&
                           name_parse::scopeIdentifier(scopes[3]) == "TensorInfo";
  const bool accessor = scopes.size() == 2 && name_parse::scopeIdentifier(scopes[0]) == "at" &&
                        name_parse::scopeIdentifier(scopes[1]) == "GenericPackedTensorAccessor";
  if (!tensor_info && !accessor) return false;
  const std::string_view element = partText(part.back().parts.front());
  constexpr std::string_view kConst = " const";
  return element.size() > kConst.size() && element.substr(element.size() - kConst.size()) == kConst &&
         element.find('*') == std::string_view::npos;
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

LegacyLambda legacyElementwiseLambda(std::string_view demangled, uint32_t param_count, uint32_t lambda_size) {
  constexpr uint32_t kMaxDims = 25;  // ATen's MAX_DIMS on CUDA
  constexpr uint32_t kMaxFunctorBytes = 64;
  if (param_count != 2) return {};
  const name_parse::ParsedName p = name_parse::parseName(demangled);
  if (!p.ok || !p.has_params || p.params.parts.size() != 2) return {};
  const std::vector<Nodes> scopes = name_parse::splitScopes(p.name);
  if (scopes.size() != 3 || name_parse::scopeIdentifier(scopes[0]) != "at" ||
      name_parse::scopeIdentifier(scopes[1]) != "native" ||
      name_parse::scopeIdentifier(scopes[2]) != "elementwise_kernel")
    return {};
  const std::string_view lambda = partText(p.params.parts[1]);
  // The lambda of gpu_kernel_impl_nocast, or of gpu_kernel_impl when the
  // operands' dtypes need casting (its one lambda on CUDA, which captures
  // the dtypes after the functor: at most 8 more bytes).
  constexpr std::string_view kPrefixes[] = {"at::native::gpu_kernel_impl_nocast<", "at::native::gpu_kernel_impl<"};
  constexpr std::string_view kSuffix = "::{lambda(int)#1}";
  const auto named = [&](std::string_view prefix) {
    return lambda.size() > prefix.size() + kSuffix.size() && lambda.substr(0, prefix.size()) == prefix &&
           lambda.substr(lambda.size() - kSuffix.size()) == kSuffix;
  };
  if (!named(kPrefixes[0]) && !named(kPrefixes[1])) return {};
  LegacyLambda found;
  for (uint32_t tensors = 1; tensors <= 8; ++tensors) {
    const uint32_t calculator = 4 + kMaxDims * 12 + kMaxDims * 4 * tensors;
    const uint32_t data = (calculator + 7) / 8 * 8;
    const uint32_t end = data + 8 * tensors;
    if (end > lambda_size || lambda_size - end > kMaxFunctorBytes) continue;
    if (found.tensors != 0) return {};  // two sizes fit: which is meant is not clear
    found = LegacyLambda{static_cast<uint16_t>(data), static_cast<uint8_t>(tensors)};
  }
  return found;
}

bool legacyDimsValid(const uint8_t* lambda, uint32_t lambda_size) {
  if (lambda == nullptr || lambda_size < 4) return false;
  int32_t dims = 0;
  std::memcpy(&dims, lambda, sizeof dims);
  return dims >= 1 && dims <= 25;
}

uint64_t constPointerParams(std::string_view demangled, uint32_t param_count) {
  const name_parse::ParsedName p = name_parse::parseName(demangled);
  if (!p.ok || !p.has_params || p.params.parts.size() != param_count) return 0;
  uint64_t bits = 0;
  for (size_t i = 0; i < p.params.parts.size() && i < 64; ++i)
    if (readOnlyFirstWord(p.params.parts[i])) bits |= uint64_t{1} << i;
  return bits;
}

namespace {

constexpr uint32_t kForeachListLength[5] = {110, 64, 48, 36, 30};

// "123" as a number; -1 when it is not one.
int64_t integerText(std::string_view text) {
  if (text.empty() || text.size() > 6) return -1;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

}  // namespace

uint32_t foreachListLength(uint32_t depth) { return depth >= 1 && depth <= 5 ? kForeachListLength[depth - 1] : 0; }

uint32_t foreachMetadataBytes(uint32_t depth) {
  // addresses[depth][length], int64_t numel_for_tensor[length], unsigned char
  // block_to_tensor[320], int block_to_chunk[320], int start_tensor_this_launch;
  // aligned to 8.
  const uint32_t length = foreachListLength(depth);
  if (length == 0) return 0;
  const uint32_t bytes = depth * length * 8 + length * 8 + 320 + 320 * 4 + 4;
  return (bytes + 7) / 8 * 8;
}

namespace {

// Parameter 0 of ATen's multi_tensor_apply_kernel: at::native::(anonymous
// namespace)::TensorListMetadata<D>; D, or 0.
int64_t metadataDepth(const name_parse::ParsedName& p) {
  if (!p.ok || !p.has_params || p.params.parts.size() < 2) return 0;
  const std::vector<Nodes> scopes = name_parse::splitScopes(p.name);
  if (scopes.size() != 4 || name_parse::scopeIdentifier(scopes[0]) != "at" ||
      name_parse::scopeIdentifier(scopes[1]) != "native" ||
      name_parse::scopeIdentifier(scopes[3]) != "multi_tensor_apply_kernel")
    return 0;
  const Nodes& meta = p.params.parts[0];
  const std::vector<Nodes> meta_scopes = name_parse::splitScopes(meta);
  if (meta_scopes.size() != 4 || name_parse::scopeIdentifier(meta_scopes[0]) != "at" ||
      name_parse::scopeIdentifier(meta_scopes[1]) != "native" ||
      name_parse::scopeIdentifier(meta_scopes[3]) != "TensorListMetadata" || meta.back().open != '<' ||
      meta.back().parts.size() != 1)
    return 0;
  const int64_t depth = integerText(partText(meta.back().parts[0]));
  return depth >= 1 && depth <= 5 ? depth : 0;
}

}  // namespace

uint32_t foreachMetadataDepth(std::string_view demangled) {
  return static_cast<uint32_t>(metadataDepth(name_parse::parseName(demangled)));
}

uint32_t foreachTensorsUsed(const uint8_t* metadata, uint32_t depth, uint32_t blocks) {
  constexpr uint32_t kMaxBlocks = 320;  // ATen's depth_to_max_blocks
  const uint32_t length = foreachListLength(depth);
  if (metadata == nullptr || length == 0 || blocks == 0 || blocks > kMaxBlocks) return 0;
  const uint8_t* numel = metadata + size_t{depth} * length * 8;
  const uint8_t* block_to_tensor = numel + size_t{length} * 8;
  uint32_t used = 0;
  for (uint32_t b = 0; b < blocks; ++b) used = std::max<uint32_t>(used, block_to_tensor[b] + 1u);
  if (used > length) return 0;
  for (uint32_t t = 0; t < used; ++t) {
    int64_t n = 0;
    std::memcpy(&n, numel + size_t{t} * 8, sizeof n);
    if (n <= 0) return 0;
  }
  return used;
}

ForeachLists foreachLists(std::string_view demangled) {
  const name_parse::ParsedName p = name_parse::parseName(demangled);
  const int64_t depth = metadataDepth(p);
  if (depth == 0) return {};
  // Parameter 1: the functor, its template arguments ending <..., D, R, I>.
  const Nodes& functor = p.params.parts[1];
  const std::vector<Nodes> functor_scopes = name_parse::splitScopes(functor);
  if (functor_scopes.size() < 3 || name_parse::scopeIdentifier(functor_scopes[0]) != "at" ||
      name_parse::scopeIdentifier(functor_scopes[1]) != "native" || functor.empty() || !functor.back().group ||
      functor.back().open != '<')
    return {};
  const auto& args = functor.back().parts;
  if (args.size() < 4) return {};
  const int64_t d = integerText(partText(args[args.size() - 3]));
  const int64_t read = integerText(partText(args[args.size() - 2]));
  const int64_t result = integerText(partText(args[args.size() - 1]));
  if (d != depth || read < 1 || read > depth || result < 0 || result >= depth) return {};
  uint8_t inputs = 0;
  for (int64_t l = 0; l < read; ++l)
    if (l != result) inputs = static_cast<uint8_t>(inputs | 1u << l);
  return ForeachLists{static_cast<uint8_t>(depth), inputs};
}

uint32_t reduceSourceOffset(std::string_view demangled, uint32_t param_count, uint32_t param_size) {
  // src, dst[2], acc_buf, cta_buf, semaphores, base_idx, then the flags'
  // word: src is 8 words before the end; the struct holds at least the ops,
  // ident, ReduceConfig and two OffsetCalculators before it.
  constexpr uint32_t kSourceFromEnd = 64;
  if (param_count != 1 || param_size < 4 * kSourceFromEnd || param_size % 8 != 0) return 0;
  const name_parse::ParsedName p = name_parse::parseName(demangled);
  if (!p.ok || !p.has_params || p.params.parts.size() != 1) return 0;
  const std::vector<Nodes> scopes = name_parse::splitScopes(p.name);
  if (scopes.size() != 3 || name_parse::scopeIdentifier(scopes[0]) != "at" ||
      name_parse::scopeIdentifier(scopes[1]) != "native" ||
      name_parse::scopeIdentifier(scopes[2]) != "reduce_kernel")
    return 0;
  const std::vector<Nodes> op = name_parse::splitScopes(p.params.parts[0]);
  if (op.size() != 3 || name_parse::scopeIdentifier(op[0]) != "at" || name_parse::scopeIdentifier(op[1]) != "native" ||
      name_parse::scopeIdentifier(op[2]) != "ReduceOp")
    return 0;
  return param_size - kSourceFromEnd;
}

bool reduceTailValid(const uint8_t* param, uint32_t param_size) {
  if (param == nullptr || param_size < 64) return false;
  const uint8_t* tail = param + param_size - 8;  // accumulate, final_output, padding, noutputs
  int32_t outputs = 0;
  std::memcpy(&outputs, tail + 4, sizeof outputs);
  if (tail[0] > 1 || tail[1] > 1 || (outputs != 1 && outputs != 2)) return false;
  uint64_t src = 0, dst0 = 0;
  std::memcpy(&src, param + param_size - 64, sizeof src);
  std::memcpy(&dst0, param + param_size - 56, sizeof dst0);
  return src != 0 && src != dst0;
}

AttentionInputs attentionInputs(std::string_view demangled, uint32_t param_count, uint32_t param_size) {
  // The forward's Params holds far more than its first nine words (scale,
  // dimensions, strides); the backward's more than its first eleven.
  constexpr uint32_t kLeastBytes = 128;
  if (param_count != 1 || param_size < kLeastBytes) return {};
  const name_parse::ParsedName p = name_parse::parseName(demangled);
  if (!p.ok || !p.has_params || p.params.parts.size() != 1) return {};
  const std::vector<Nodes> scopes = name_parse::splitScopes(p.name);
  if (scopes.size() != 1 || !name_parse::scopeIdentifier(scopes[0]).starts_with("fmha_cutlass")) return {};
  const std::vector<Nodes> param = name_parse::splitScopes(p.params.parts[0]);
  if (param.size() != 3 || name_parse::scopeIdentifier(param[0]) != "PyTorchMemEffAttention" ||
      name_parse::scopeIdentifier(param[2]) != "Params")
    return {};
  const std::string_view kernel = name_parse::scopeIdentifier(param[1]);
  if (kernel == "AttentionKernel") return AttentionInputs{0x7f, 8};
  if (kernel == "AttentionBackwardKernel") return AttentionInputs{0x37f, 10};
  return {};
}

bool attentionLayoutValid(const uint8_t* param, uint32_t param_size, const AttentionInputs& inputs) {
  if (param == nullptr || inputs.words == 0 || (uint32_t{inputs.first_output} + 1) * 8 > param_size) return false;
  const auto word = [&](uint32_t i) {
    uint64_t w = 0;
    std::memcpy(&w, param + 8 * i, sizeof w);
    return w;
  };
  const uint64_t output = word(inputs.first_output);
  if (output == 0 || word(0) == 0 || word(1) == 0 || word(2) == 0) return false;
  for (uint32_t i = 0; i < 16 && (i + 1) * 8 <= param_size; ++i)
    if ((inputs.words >> i & 1u) != 0 && word(i) == output) return false;
  return true;
}

bool writesThroughParameters(std::string_view demangled) {
  for (std::string_view prefix : {std::string_view("triton_poi_"), std::string_view("triton_red_"),
                                  std::string_view("triton_per_")})
    if (demangled.substr(0, prefix.size()) == prefix) return true;
  const name_parse::ParsedName p = name_parse::parseName(demangled);
  if (!p.ok || !p.has_params) return false;
  const std::vector<Nodes> scopes = name_parse::splitScopes(p.name);
  if (scopes.size() == 1) {
    // ATen's memory-efficient attention: fmha_cutlassF_* and fmha_cutlassB_*
    // take one PyTorchMemEffAttention::Attention[Backward]Kernel<...>::Params
    // that holds every pointer they use (the backward's workspace too).
    const std::string_view name = name_parse::scopeIdentifier(scopes[0]);
    if (!name.starts_with("fmha_cutlass") || p.params.parts.size() != 1) return false;
    const std::vector<Nodes> param = name_parse::splitScopes(p.params.parts[0]);
    return param.size() == 3 && name_parse::scopeIdentifier(param[0]) == "PyTorchMemEffAttention" &&
           name_parse::scopeIdentifier(param[2]) == "Params";
  }
  if (scopes.size() < 2) return false;
  const std::string_view top = name_parse::scopeIdentifier(scopes[0]);
  // pytorch_flash: ATen's flash attention, whose Flash_fwd_params and
  // Flash_bwd_params hold every pointer its kernels use.
  return top == "at" || top == "c10" || top == "pytorch_flash";
}

bool InputWords::holds(uint32_t offset) const {
  if (data_size >= 16 && offset >= data_offset + 8 && offset + 8 <= data_offset + data_size) return true;
  if (lists.inputs != 0 && offset >= lists_offset && (offset - lists_offset) % 8 == 0) {
    const uint32_t word = (offset - lists_offset) / 8;
    const uint32_t length = foreachListLength(lists.depth);
    if (word < lists.depth * length && (lists.inputs >> (word / length) & 1u) != 0) return true;
  }
  if (source_offset != 0 && offset == source_offset) return true;
  if (struct_words != 0 && offset >= struct_offset && (offset - struct_offset) % 8 == 0 &&
      (offset - struct_offset) / 8 < 16 && (struct_words >> ((offset - struct_offset) / 8) & 1u) != 0)
    return true;
  for (uint64_t bits = const_params; bits != 0; bits &= bits - 1) {
    const uint32_t i = static_cast<uint32_t>(std::countr_zero(bits));
    if (i < param_count && offsets[i] == offset) return true;
  }
  return false;
}

void markKnownInputs(const proto::SiteBlobRange* ranges, uint32_t range_count,
                     const proto::SiteBlobPointer* pointers, uint32_t pointer_count,
                     const LibraryOperands* operands, const InputWords& words, bool* known) {
  for (uint32_t i = 0; i < range_count; ++i) known[i] = false;
  if (operands != nullptr && operands->depth != 0) {
    for (uint32_t i = 0; i < range_count; ++i)
      known[i] = contains(operands->inputs, operands->input_count, ranges[i].ptr) &&
                 !contains(operands->outputs, operands->output_count, ranges[i].ptr);
  } else if (words.any()) {
    // Every word naming the range must be an input word (each range was
    // found through a word, so each is named at least once).
    for (uint32_t i = 0; i < range_count; ++i) known[i] = true;
    for (uint32_t w = 0; w < pointer_count; ++w) {
      const uint32_t r = pointers[w].range;
      if (r < range_count && !words.holds(pointers[w].offset)) known[r] = false;
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
