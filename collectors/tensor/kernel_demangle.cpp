#include "collectors/tensor/kernel_demangle.h"

#include <cxxabi.h>

#include <climits>
#include <cstdlib>
#include <memory>
#include <span>

namespace tcgd::collectors::tensor {
namespace name_parse {
namespace {

constexpr int kMaxDepth = 64;

bool isIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$';
}
bool isIdentChar(char c) { return isIdentStart(c) || (c >= '0' && c <= '9'); }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isOpen(char c) { return c == '<' || c == '(' || c == '[' || c == '{'; }
bool isClose(char c) { return c == '>' || c == ')' || c == ']' || c == '}'; }
char closerOf(char open) {
  switch (open) {
    case '<': return '>';
    case '(': return ')';
    case '[': return ']';
    default: return '}';
  }
}
bool isSpaceToken(const Node& n) { return !n.group && !n.token.empty() && n.token[0] == ' '; }

void trimSpaces(Nodes* nodes) {
  while (!nodes->empty() && isSpaceToken(nodes->back())) nodes->pop_back();
  size_t first = 0;
  while (first < nodes->size() && isSpaceToken((*nodes)[first])) ++first;
  nodes->erase(nodes->begin(), nodes->begin() + static_cast<std::ptrdiff_t>(first));
}

// A recursive-descent reader of one demangled name. Every failure (a closer
// that does not match, an unclosed bracket, too deep) makes the whole parse
// fail, so callers never act on a half-understood name.
class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  bool parseTop(Nodes* out) {
    while (pos_ < s_.size()) {
      if (isClose(s_[pos_]) || !parseOne(out, 0)) return false;
    }
    return true;
  }

 private:
  bool parseOne(Nodes* out, int depth) {
    const char c = s_[pos_];
    if (isOpen(c)) {
      if (depth >= kMaxDepth) return false;
      Node g;
      g.group = true;
      g.open = c;
      const size_t start = pos_++;
      if (!parseGroup(&g, closerOf(c), depth + 1)) return false;
      g.text = s_.substr(start, pos_ - start);
      out->push_back(std::move(g));
      return true;
    }
    Node t;
    t.token = readToken();
    t.text = t.token;
    out->push_back(std::move(t));
    return true;
  }

  bool parseGroup(Node* g, char close, int depth) {
    Nodes part;
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == close || c == ',') {
        ++pos_;
        trimSpaces(&part);
        g->parts.push_back(std::move(part));
        part.clear();
        if (c == close) return true;
        continue;
      }
      if (isClose(c) || !parseOne(&part, depth)) return false;
    }
    return false;  // unclosed
  }

  std::string_view readToken() {
    const size_t start = pos_;
    const char c = s_[pos_];
    if (c == ' ') {
      while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
    } else if (isIdentStart(c)) {
      while (pos_ < s_.size() && isIdentChar(s_[pos_])) ++pos_;
      if (s_.substr(start, pos_ - start) == "operator") readOperatorSymbol();
    } else if (isDigit(c)) {
      while (pos_ < s_.size() && (isIdentChar(s_[pos_]) || s_[pos_] == '.')) ++pos_;
    } else if (s_.substr(pos_, 2) == "::" || s_.substr(pos_, 2) == "->") {
      pos_ += 2;
    } else {
      ++pos_;
    }
    return s_.substr(start, pos_ - start);
  }

  // "operator()", "operator[]", "operator<", "operator<<=", "operator->":
  // the symbol belongs to the name, it opens or closes nothing.
  void readOperatorSymbol() {
    const std::string_view rest = s_.substr(pos_);
    if (rest.starts_with("()") || rest.starts_with("[]")) {
      pos_ += 2;
      return;
    }
    constexpr std::string_view kSymbols = "+-*/%^&|~!=<>,";
    while (pos_ < s_.size() && kSymbols.find(s_[pos_]) != std::string_view::npos) ++pos_;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

bool isTrailingQualifier(const Node& n) {
  if (n.group) return n.open == '[';  // " [clone .cold]", "[abi:cxx11]"
  return isSpaceToken(n) || n.token == "const" || n.token == "volatile" || n.token == "&" ||
         n.token == "&&" || n.token == "noexcept";
}

}  // namespace

bool isIdentifier(std::string_view token) { return !token.empty() && isIdentStart(token[0]); }

bool isLambda(const Nodes& scope) {
  if (scope.empty() || !scope[0].group || scope[0].open != '{') return false;
  const Node& g = scope[0];
  if (g.parts.empty() || g.parts[0].empty() || g.parts[0][0].group) return false;
  const std::string_view first = g.parts[0][0].token;
  return first == "lambda" || first == "unnamed";
}

std::string_view scopeIdentifier(const Nodes& scope) {
  if (scope.empty() || scope[0].group || !isIdentifier(scope[0].token)) return {};
  return scope[0].token;
}

std::vector<Nodes> splitScopes(const Nodes& nodes) {
  std::vector<Nodes> scopes(1);
  for (const Node& n : nodes) {
    if (!n.group && n.token == "::") {
      trimSpaces(&scopes.back());
      scopes.emplace_back();
    } else {
      scopes.back().push_back(n);
    }
  }
  trimSpaces(&scopes.back());
  return scopes;
}

ParsedName parseName(std::string_view demangled) {
  ParsedName p;
  Nodes top;
  Parser parser(demangled);
  if (!parser.parseTop(&top)) return p;
  p.ok = true;
  // A parameter list is the last top-level '(' group, followed only by
  // qualifiers (" const", " [clone .cold]"), with a name before it.
  size_t end = top.size();
  while (end > 0 && isTrailingQualifier(top[end - 1])) --end;
  if (end > 1 && top[end - 1].group && top[end - 1].open == '(') {
    p.has_params = true;
    p.params = top[end - 1];
    top.resize(end - 1);
    // Only a function with a parameter list has a printed return type; it
    // ends at the last top-level space ("void ", "unsigned int "), but not
    // at the one in "operator< <A>" or "operator new".
    size_t space = top.size();
    for (size_t i = 1; i + 1 < top.size(); ++i) {
      const bool after_operator = !top[i - 1].group && top[i - 1].token.starts_with("operator");
      const bool before_args = top[i + 1].group && top[i + 1].open == '<';
      if (isSpaceToken(top[i]) && !after_operator && !before_args) space = i;
    }
    if (space != top.size() && space > 0) {
      p.result.assign(top.begin(), top.begin() + static_cast<std::ptrdiff_t>(space));
      top.erase(top.begin(), top.begin() + static_cast<std::ptrdiff_t>(space) + 1);
    }
  }
  trimSpaces(&top);
  p.name = std::move(top);
  return p;
}

}  // namespace name_parse

namespace {

using name_parse::Node;
using name_parse::Nodes;

// How hard shortName collapses. When the full form is too long every style
// is tried and the longest text that fits wins (the first of equal ones):
// which collapse loses least depends on the name (a reduction's functor sits
// in a lambda's scope, an elementwise op's functor three levels deep and
// last in its list).
struct Style {
  int max_depth;    // template argument lists nested deeper become "<...>"
  size_t head;      // a longer list shows its first `head` arguments, "...",
  bool tail;        // and its last one when `tail`
  bool scope_args;  // a lambda's scope keeps its template arguments
};
constexpr size_t kAll = SIZE_MAX / 2;
constexpr Style kStyles[] = {
    {INT_MAX, kAll, false, true}, {INT_MAX, 3, false, true}, {INT_MAX, 1, true, true},
    {INT_MAX, kAll, false, false}, {INT_MAX, 3, false, false}, {INT_MAX, 1, true, false},
    {4, 3, false, true}, {3, 3, false, true}, {3, 1, true, true}, {2, 3, false, true},
    {2, 1, true, true}, {4, 3, false, false}, {3, 3, false, false}, {2, 3, false, false},
    {1, 3, false, false}, {0, 3, false, false},
};

// "1ul" -> "1", "4096ul" -> "4096": the suffixes say nothing to a reader.
std::string_view withoutIntegerSuffix(std::string_view t) {
  size_t end = t.size();
  while (end > 0 && (t[end - 1] == 'u' || t[end - 1] == 'l' || t[end - 1] == 'U' ||
                     t[end - 1] == 'L'))
    --end;
  for (size_t i = 0; i < end; ++i)
    if (t[i] < '0' || t[i] > '9') return t;
  return end == 0 ? t : t.substr(0, end);
}

class Renderer {
 public:
  explicit Renderer(const Style& style) : style_(style) {}

  // A type or a name: the last scope, or, for a lambda, the nearest named
  // scope it is in and the lambda ("sum_functor<float>::{lambda(float)#1}").
  void type(const Nodes& nodes, int depth, std::string* out) const {
    const std::vector<Nodes> scopes = name_parse::splitScopes(nodes);
    const Nodes& last = scopes.back();
    if (scopes.size() > 1 && name_parse::isLambda(last)) {
      for (size_t i = scopes.size() - 1; i-- > 0;) {
        const std::string_view id = name_parse::scopeIdentifier(scopes[i]);
        if (id.empty() || id.starts_with("operator")) continue;
        scopeName(scopes[i], depth, out);
        *out += "::";
        break;
      }
    }
    sequence(last, depth, out);
  }

  void sequence(const Nodes& nodes, int depth, std::string* out) const {
    for (const Node& n : nodes) {
      if (!n.group) {
        token(n.token, out);
      } else if (n.open == '<') {
        templateArgs(n, depth + 1, out);
      } else if (n.open == '[') {
        if (!abiTag(n)) list(n, depth, '[', ']', out);
      } else if (n.open == '(') {
        list(n, depth, '(', ')', out);
      } else {
        // {lambda(float)#1}, {unnamed type#1}: the parameter types shortened.
        *out += '{';
        for (const Nodes& part : n.parts) sequence(part, depth, out);
        *out += '}';
      }
    }
  }

 private:
  static bool abiTag(const Node& g) {
    return !g.parts.empty() && !g.parts[0].empty() && !g.parts[0][0].group &&
           (g.parts[0][0].token == "abi" || g.parts[0][0].token == "clone");
  }

  static void token(std::string_view t, std::string* out) {
    if (t[0] == ' ') {
      if (!out->empty() && out->back() != ' ') *out += ' ';
      return;
    }
    *out += withoutIntegerSuffix(t);
  }

  // A lambda's scope: its name and template arguments, no parameter list,
  // no " const".
  void scopeName(const Nodes& scope, int depth, std::string* out) const {
    for (const Node& n : scope) {
      if (!n.group) {
        if (n.token[0] == ' ' || n.token == "const") continue;
        token(n.token, out);
      } else if (n.open == '<') {
        if (style_.scope_args) templateArgs(n, depth + 1, out);
      }
    }
  }

  void list(const Node& g, int depth, char open, char close, std::string* out) const {
    *out += open;
    for (size_t i = 0; i < g.parts.size(); ++i) {
      if (i != 0) *out += ", ";
      type(g.parts[i], depth, out);
    }
    *out += close;
  }

  void templateArgs(const Node& g, int depth, std::string* out) const {
    if (depth > style_.max_depth) {
      *out += "<...>";
      return;
    }
    *out += '<';
    const size_t n = g.parts.size();
    const bool collapse = n > style_.head + (style_.tail ? 1 : 0) + 1;
    for (size_t i = 0; i < n; ++i) {
      const bool shown = !collapse || i < style_.head || (style_.tail && i == n - 1);
      if (!shown && i != style_.head) continue;
      if (i != 0) *out += ", ";
      if (shown) {
        type(g.parts[i], depth, out);
      } else {
        *out += "...";
      }
    }
    *out += '>';
  }

  Style style_;
};

// The end cut, never inside a UTF-8 sequence.
std::string cut(std::string_view text) {
  if (text.size() <= kMaxShortNameLength) return std::string(text);
  size_t keep = kMaxShortNameLength - 3;
  while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xc0) == 0x80) --keep;
  return std::string(text.substr(0, keep)) + "...";
}

}  // namespace

std::string demangle(std::string_view mangled) {
  try {
    std::string text(mangled);
    if (!mangled.starts_with("_Z")) return text;
    int status = 0;
    const std::unique_ptr<char, decltype(&std::free)> out(
        abi::__cxa_demangle(text.c_str(), nullptr, nullptr, &status), &std::free);
    if (status != 0 || out == nullptr) return text;
    return std::string(out.get());
  } catch (...) {  // std::bad_alloc: a name is not worth the job
    return {};
  }
}

std::string shortName(std::string_view demangled) {
  try {
    const name_parse::ParsedName p = name_parse::parseName(demangled);
    if (!p.ok || p.name.empty()) return cut(demangled);
    std::string out;
    Renderer(kStyles[0]).type(p.name, 0, &out);
    if (out.size() <= kMaxShortNameLength) return out;  // the full form fits
    std::string best;
    for (const Style& style : std::span(kStyles).subspan(1)) {
      out.clear();
      Renderer(style).type(p.name, 0, &out);
      if (out.size() <= kMaxShortNameLength && out.size() > best.size()) best = out;
    }
    return best.empty() ? cut(out) : best;
  } catch (...) {
    return {};
  }
}

std::string baseName(std::string_view demangled) {
  try {
    const name_parse::ParsedName p = name_parse::parseName(demangled);
    if (!p.ok || p.name.empty()) return cut(demangled);
    const std::vector<Nodes> scopes = name_parse::splitScopes(p.name);
    std::string out;
    for (const Node& n : scopes.back()) {
      if (n.group) break;
      out += n.token[0] == ' ' ? std::string_view(" ") : n.token;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out.empty() ? shortName(demangled) : out;
  } catch (...) {
    return {};
  }
}

}  // namespace tcgd::collectors::tensor
