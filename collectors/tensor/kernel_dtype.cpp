#include "collectors/tensor/kernel_dtype.h"

#include <optional>
#include <string>
#include <vector>

#include "collectors/tensor/kernel_demangle.h"

namespace tcgd::collectors::tensor {
namespace {

using ::tcgd::tensor::Dtype;
using name_parse::Node;
using name_parse::Nodes;

enum class Kind { kNone, kFloat, kInteger, kStop };
struct Found {
  Kind kind = Kind::kNone;
  Dtype dtype = Dtype::kUnknown;
};

struct TypeName {
  std::string_view name;
  Kind kind;
  Dtype dtype;
};

// Last-scope names, as the demangler prints them (c10::Half -> "Half").
constexpr TypeName kTypeNames[] = {
    {"float", Kind::kFloat, Dtype::kFloat32},
    {"double", Kind::kFloat, Dtype::kFloat64},
    {"Half", Kind::kFloat, Dtype::kFloat16},
    {"BFloat16", Kind::kFloat, Dtype::kBFloat16},
    {"Float8_e4m3fn", Kind::kFloat, Dtype::kFloat8E4M3},
    {"Float8_e5m2", Kind::kFloat, Dtype::kFloat8E5M2},
    {"__half", Kind::kFloat, Dtype::kFloat16},
    {"__nv_bfloat16", Kind::kFloat, Dtype::kBFloat16},
    {"__nv_fp8_e4m3", Kind::kFloat, Dtype::kFloat8E4M3},
    {"__nv_fp8_e5m2", Kind::kFloat, Dtype::kFloat8E5M2},
    {"half_t", Kind::kFloat, Dtype::kFloat16},
    {"bfloat16_t", Kind::kFloat, Dtype::kBFloat16},
    {"tfloat32_t", Kind::kFloat, Dtype::kFloat32},
    {"float_e4m3_t", Kind::kFloat, Dtype::kFloat8E4M3},
    {"float_e5m2_t", Kind::kFloat, Dtype::kFloat8E5M2},
    {"signed char", Kind::kInteger, Dtype::kInt8},
    {"char", Kind::kInteger, Dtype::kInt8},
    {"unsigned char", Kind::kInteger, Dtype::kUInt8},
    {"short", Kind::kInteger, Dtype::kInt16},
    {"int", Kind::kInteger, Dtype::kInt32},
    {"long", Kind::kInteger, Dtype::kInt64},
    {"long long", Kind::kInteger, Dtype::kInt64},
    {"bool", Kind::kInteger, Dtype::kBool},
    // ATen dtypes without a tcgd Dtype, and casting loads/stores: a guess
    // would be wrong, so the answer is "unknown".
    {"complex", Kind::kStop, Dtype::kUnknown},
    {"Float8_e4m3fnuz", Kind::kStop, Dtype::kUnknown},
    {"Float8_e5m2fnuz", Kind::kStop, Dtype::kUnknown},
    {"Float8_e8m0fnu", Kind::kStop, Dtype::kUnknown},
    {"Float4_e2m1fn_x2", Kind::kStop, Dtype::kUnknown},
    {"qint8", Kind::kStop, Dtype::kUnknown},
    {"quint8", Kind::kStop, Dtype::kUnknown},
    {"qint32", Kind::kStop, Dtype::kUnknown},
    {"quint4x2", Kind::kStop, Dtype::kUnknown},
    {"quint2x4", Kind::kStop, Dtype::kUnknown},
    {"LoadWithCast", Kind::kStop, Dtype::kUnknown},
    {"StoreWithCast", Kind::kStop, Dtype::kUnknown},
};

Found lookup(std::string_view name) {
  for (const TypeName& t : kTypeNames)
    if (t.name == name) return Found{t.kind, t.dtype};
  return {};
}

bool isPointerOrReference(const Nodes& part) {
  for (const Node& n : part)
    if (!n.group && (n.token == "*" || n.token == "&" || n.token == "&&")) return true;
  return false;
}

// The words of a scope without groups and cv-qualifiers: "signed char".
std::string plainWords(const Nodes& scope) {
  std::string words;
  for (const Node& n : scope) {
    if (n.group) return {};
    if (n.token[0] == ' ' || n.token == "const" || n.token == "volatile") continue;
    if (!words.empty()) words += ' ';
    words += n.token;
  }
  return words;
}

// What a template argument list tells, collected left to right.
struct Evidence {
  bool stop = false;
  std::optional<Dtype> first_float;
  std::optional<Dtype> first_integer;
  std::vector<Dtype> floats;  // every floating type, for CUTLASS names

  void add(Found f) {
    if (f.kind == Kind::kStop) stop = true;
    if (f.kind == Kind::kFloat) {
      if (!first_float) first_float = f.dtype;
      floats.push_back(f.dtype);
    }
    if (f.kind == Kind::kInteger && !first_integer) first_integer = f.dtype;
  }
  std::optional<Dtype> firstFloatingElseInteger() const {
    return first_float ? first_float : first_integer;
  }
};

// One type or one element: one floating type, or one and float (the
// accumulator); several: ambiguous.
std::optional<Dtype> single(const std::vector<Dtype>& types, bool* ambiguous) {
  std::optional<Dtype> other;
  bool any_float32 = false;
  for (Dtype d : types) {
    if (d == Dtype::kFloat32) {
      any_float32 = true;
    } else if (other && *other != d) {
      *ambiguous = true;
      return std::nullopt;
    } else {
      other = d;
    }
  }
  if (other) return other;
  if (any_float32) return Dtype::kFloat32;
  return std::nullopt;
}

// Tier 1: the types among template arguments, never inside parameter
// lists, lambdas or casts.
void templateTypes(const Nodes& part, Evidence* e);

void groupTypes(const Node& g, Evidence* e) {
  for (const Nodes& part : g.parts) templateTypes(part, e);
}

void templateTypes(const Nodes& part, Evidence* e) {
  if (e->stop || isPointerOrReference(part)) return;
  const std::vector<Nodes> scopes = name_parse::splitScopes(part);
  for (const Nodes& scope : scopes) {
    const std::string_view id = name_parse::scopeIdentifier(scope);
    if (!id.empty() && lookup(id).kind == Kind::kStop) {
      e->stop = true;
      return;
    }
    for (const Node& n : scope)
      if (n.group && n.open == '<') groupTypes(n, e);
  }
  e->add(lookup(plainWords(scopes.back())));
}

// Tier 2: the first lambda with usable parameters.
std::optional<Dtype> lambdaParams(const std::vector<Nodes>& scopes) {
  const Node& lambda = scopes.back()[0];
  const Node* params = nullptr;
  for (const Node& n : lambda.parts[0])
    if (n.group && n.open == '(') params = &n;
  if (params == nullptr || params->parts.empty() || params->parts[0].empty()) return std::nullopt;
  Evidence e;
  for (const Nodes& p : params->parts) {
    if (isPointerOrReference(p)) return std::nullopt;
    e.add(lookup(plainWords(name_parse::splitScopes(p).back())));
  }
  if (e.stop) return std::nullopt;
  // A lone int is the loop index unless the lambda sits in another lambda's
  // call operator ({lambda()#1}::operator()() const::{lambda(int)#1}).
  if (params->parts.size() == 1 && plainWords(params->parts[0]) == "int") {
    const size_t n = scopes.size();
    const bool in_dispatch = n >= 3 && name_parse::scopeIdentifier(scopes[n - 2]) == "operator()" &&
                             name_parse::isLambda(scopes[n - 3]);
    if (!in_dispatch) return std::nullopt;
  }
  return e.firstFloatingElseInteger();
}

std::optional<Dtype> lambdaTypes(const Nodes& part);

std::optional<Dtype> lambdaGroupTypes(const Node& g) {
  for (const Nodes& part : g.parts)
    if (const auto d = lambdaTypes(part)) return d;
  return std::nullopt;
}

std::optional<Dtype> lambdaTypes(const Nodes& part) {
  if (isPointerOrReference(part)) return std::nullopt;
  const std::vector<Nodes> scopes = name_parse::splitScopes(part);
  for (const Nodes& scope : scopes)
    for (const Node& n : scope)
      if (n.group && n.open == '<')
        if (const auto d = lambdaGroupTypes(n)) return d;
  if (name_parse::isLambda(scopes.back())) return lambdaParams(scopes);
  return std::nullopt;
}

// ---- tier 3: naming conventions --------------------------------------------

std::vector<std::string> words(std::string_view text) {
  std::vector<std::string> out(1);
  for (char c : text) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (alnum) {
      out.back() += c;
    } else if (!out.back().empty()) {
      out.emplace_back();
    }
  }
  if (out.back().empty()) out.pop_back();
  return out;
}

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

struct Code {
  std::string_view text;
  Dtype dtype;  // kUnknown: a type tcgd does not take (integers, complex)
};
// Longest first, so "bf16" is not read as "b" + "f16".
constexpr Code kCodes[] = {
    {"bf16", Dtype::kBFloat16}, {"tf32", Dtype::kFloat32}, {"fp16", Dtype::kFloat16},
    {"fp32", Dtype::kFloat32},  {"fp64", Dtype::kFloat64}, {"e4m3", Dtype::kFloat8E4M3},
    {"e5m2", Dtype::kFloat8E5M2}, {"f16", Dtype::kFloat16}, {"f32", Dtype::kFloat32},
    {"f64", Dtype::kFloat64},   {"i32", Dtype::kUnknown},  {"i8", Dtype::kUnknown},
    {"s8", Dtype::kUnknown},    {"u8", Dtype::kUnknown},
};

// "bf16bf16" -> {bf16, bf16}; false when the word is not exactly two codes.
bool twoCodes(std::string_view w, Dtype* a, Dtype* b) {
  Dtype got[2];
  for (int i = 0; i < 2; ++i) {
    bool matched = false;
    for (const Code& c : kCodes) {
      if (w.starts_with(c.text)) {
        got[i] = c.dtype;
        w.remove_prefix(c.text.size());
        matched = true;
        break;
      }
    }
    if (!matched) return false;
  }
  *a = got[0];
  *b = got[1];
  return w.empty();
}

std::optional<Dtype> libraryNaming(const std::vector<std::string>& ws) {
  bool library = false;
  for (const std::string& w : ws)
    for (std::string_view mark : {"gemm", "gemv", "xmma", "cutlass", "cublas", "cudnn", "fmha"})
      if (w.find(mark) != std::string::npos) library = true;
  if (!library) return std::nullopt;
  // xmma: ..._gemm_<A><B>_<C><compute>_...
  for (size_t i = 0; i + 2 < ws.size(); ++i) {
    if (!ws[i].ends_with("gemm")) continue;
    Dtype a, b, c, compute;
    if (twoCodes(ws[i + 1], &a, &b) && twoCodes(ws[i + 2], &c, &compute)) {
      if (a == b && b == c && a != Dtype::kUnknown) return a;
      return Dtype::kUnknown;
    }
  }
  std::vector<Dtype> types;
  for (const std::string& w : ws) {
    for (const Code& c : kCodes)
      if (w == c.text) types.push_back(c.dtype);
    if (w == "half") types.push_back(Dtype::kFloat16);
    // Compute letters: sgemm, s1688gemm, h16816gemm, dgemm; c, z: complex.
    const size_t g = w.find("gemm");
    if (g != std::string::npos && g > 0) {
      bool digits = true;
      for (size_t k = 1; k < g; ++k) digits = digits && w[k] >= '0' && w[k] <= '9';
      if (digits) {
        switch (w[0]) {
          case 's': types.push_back(Dtype::kFloat32); break;
          case 'h': types.push_back(Dtype::kFloat16); break;
          case 'd': types.push_back(Dtype::kFloat64); break;
          case 'c': case 'z': case 'i': types.push_back(Dtype::kUnknown); break;
          default: break;
        }
      }
    }
  }
  for (Dtype d : types)
    if (d == Dtype::kUnknown) return Dtype::kUnknown;
  bool ambiguous = false;
  const auto d = single(types, &ambiguous);
  return ambiguous ? std::optional<Dtype>(Dtype::kUnknown) : d;
}

std::optional<Dtype> ncclNaming(std::string_view base, const std::vector<std::string>& ws) {
  if (!base.starts_with("ncclDevKernel_") && !base.starts_with("ncclKernel_")) return std::nullopt;
  constexpr Code kNccl[] = {
      {"f32", Dtype::kFloat32},    {"f16", Dtype::kFloat16},      {"bf16", Dtype::kBFloat16},
      {"f64", Dtype::kFloat64},    {"i8", Dtype::kInt8},          {"u8", Dtype::kUInt8},
      {"i32", Dtype::kInt32},      {"u32", Dtype::kUInt32},       {"i64", Dtype::kInt64},
      {"u64", Dtype::kUInt64},     {"f8e4m3", Dtype::kFloat8E4M3}, {"f8e5m2", Dtype::kFloat8E5M2},
      {"float", Dtype::kFloat32},  {"half", Dtype::kFloat16},     {"bfloat16", Dtype::kBFloat16},
      {"double", Dtype::kFloat64}, {"int8", Dtype::kInt8},        {"uint8", Dtype::kUInt8},
      {"int32", Dtype::kInt32},    {"uint32", Dtype::kUInt32},    {"int64", Dtype::kInt64},
      {"uint64", Dtype::kUInt64},
  };
  for (const std::string& w : ws) {
    // Older NCCL spells the type as a C type ("int8_t"): the word is "int8"
    // once '_' and 't' are split off.
    for (const Code& c : kNccl)
      if (w == c.text) return c.dtype;
  }
  return std::nullopt;
}

// Words of the name (no parameter list), split at every non-alphanumeric
// character and '_'; "int8_t" gives "int8" and "t".
std::vector<std::string> nameWords(std::string_view text) {
  std::vector<std::string> ws = words(text);
  for (std::string& w : ws) w = lower(w);
  return ws;
}

}  // namespace

Dtype inferDtype(std::string_view demangled) {
  try {
    const name_parse::ParsedName p = name_parse::parseName(demangled);
    if (p.ok) {
      const bool cutlass = demangled.find("cutlass::") != std::string_view::npos ||
                           demangled.find("cute::") != std::string_view::npos;
      Evidence e;
      for (const Nodes& scope : name_parse::splitScopes(p.name))
        for (const Node& n : scope)
          if (n.group && n.open == '<') groupTypes(n, &e);
      if (e.stop) return Dtype::kUnknown;
      if (cutlass) {
        bool ambiguous = false;
        const auto d = single(e.floats, &ambiguous);
        if (ambiguous) return Dtype::kUnknown;
        if (d) return *d;
      } else if (const auto d = e.firstFloatingElseInteger()) {
        return *d;
      }
      if (const auto d = lambdaTypes(p.name)) return *d;
    }
    // Tier 3 reads the name without its return type and parameter list
    // (cuBLAS's parameter structs name other types).
    std::string_view text = demangled;
    if (p.ok && !p.name.empty()) {
      const char* begin = p.name.front().text.data();
      const char* end = p.name.back().text.data() + p.name.back().text.size();
      text = std::string_view(begin, static_cast<size_t>(end - begin));
    }
    const std::vector<std::string> ws = nameWords(text);
    if (const auto d = libraryNaming(ws)) return *d;
    if (const auto d = ncclNaming(baseName(demangled), ws)) return *d;
    return Dtype::kUnknown;
  } catch (...) {  // std::bad_alloc: hash only
    return Dtype::kUnknown;
  }
}

}  // namespace tcgd::collectors::tensor
