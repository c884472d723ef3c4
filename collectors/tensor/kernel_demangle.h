// Kernel names as people read them: the driver hands out mangled names
// (`_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEE...`),
// nsys and the profiler show them demangled, and tables need a short form.
//
//   demangle   the full demangled name, or the input unchanged when it is not
//              a mangled C++ name (Triton's "triton_poi_fused_add_0", cuBLAS's
//              extern "C" "sm90_xmma_gemm_...", "memcpy HtoD")
//   shortName  a readable form for tables: no return type, no parameter
//              list, no namespaces (of the function or of its template
//              arguments), integer suffixes dropped, lambdas named by the
//              function they are in, long argument lists collapsed:
//
//     void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>,
//         std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)
//     -> vectorized_elementwise_kernel<4, FillFunctor<float>, array<char*, 1>>
//
//   baseName   the short form without template arguments
//              ("vectorized_elementwise_kernel"); what kernel=NAME also matches
//
// All three are deterministic, never throw (out of memory gives ""), and run
// off the hot path (once per kernel handle). shortName's output is at most
// kMaxShortNameLength bytes. When the full short form is longer, it is
// collapsed, and the longest collapse that fits wins: long argument lists
// keep their first three arguments, or their first and last ("BinaryFunctor<
// BFloat16, ..., MulFunctor<float>>"), lambda scopes lose their template
// arguments, lists nested deeper than 4, 3, 2, 1 or 0 levels become "<...>".
// Only a name that fits none of them (a long extern "C" name) is cut at the
// end with "...".
//
// The parser below is shared with kernel_dtype.cpp (the dtype is read from
// the same template arguments). It understands what abi::__cxa_demangle
// prints: brackets <>, (), [], {} nest; "operator()", "operator<" and "->"
// are not brackets; a name it cannot balance is reported as not parsed and
// the callers fall back to the text as it is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tcgd::collectors::tensor {

inline constexpr size_t kMaxShortNameLength = 120;

std::string demangle(std::string_view mangled);
std::string shortName(std::string_view demangled);
std::string baseName(std::string_view demangled);

namespace name_parse {

// One token (identifier, number, "::", a run of spaces, "->", one other
// character, or "operator" with its symbol) or one bracket group.
struct Node {
  bool group = false;
  char open = 0;            // group: '<', '(', '[' or '{'
  std::string_view token;   // token: a view into the parsed text
  std::string_view text;    // the whole node's text (a group's with its brackets)
  // group: its comma-separated parts, each without leading or trailing
  // spaces ("{lambda(float)#1}" is one part: lambda, a '(' group, #, 1).
  std::vector<std::vector<Node>> parts;
};
using Nodes = std::vector<Node>;

struct ParsedName {
  bool ok = false;          // false: unbalanced, or nested deeper than 64
  Nodes result;             // the return type; empty when none is printed
  Nodes name;               // the qualified name with its template arguments
  bool has_params = false;  // a parameter list followed the name
  Node params;              // that '(' group
};

// The views in the result point into `demangled`: keep it alive.
ParsedName parseName(std::string_view demangled);

// `nodes` cut at its top-level "::" tokens (each part without surrounding
// spaces): "at", "native", "(anonymous namespace)", "foo<float>".
std::vector<Nodes> splitScopes(const Nodes& nodes);

bool isIdentifier(std::string_view token);
// A '{' group that names a lambda or an unnamed type: {lambda(float)#1}.
bool isLambda(const Nodes& scope);
// The scope's first token when it is an identifier (also "operator()"), or "".
std::string_view scopeIdentifier(const Nodes& scope);

}  // namespace name_parse
}  // namespace tcgd::collectors::tensor
