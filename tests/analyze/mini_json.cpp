#include "mini_json.h"

#include <cctype>
#include <charconv>

namespace tcgd::analyze::testing {
namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  JsonValue parseDocument() {
    JsonValue value = parseValue(0);
    skipSpace();
    if (pos_ != text_.size()) fail("trailing bytes");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("bad JSON at byte " + std::to_string(pos_) + ": " + what);
  }
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\r' || text_[pos_] == '\t')) {
      ++pos_;
    }
  }
  char peek() {
    skipSpace();
    if (pos_ >= text_.size()) fail("unexpected end");
    return text_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  bool literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  JsonValue parseValue(int depth) {
    if (depth > 64) fail("too deep");
    JsonValue value;
    const char c = peek();
    if (c == '{') {
      value.type = JsonValue::Type::kObject;
      ++pos_;
      if (peek() == '}') {
        ++pos_;
        return value;
      }
      while (true) {
        if (peek() != '"') fail("expected a key");
        std::string key = parseString();
        expect(':');
        value.members.emplace_back(std::move(key), parseValue(depth + 1));
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect('}');
        return value;
      }
    }
    if (c == '[') {
      value.type = JsonValue::Type::kArray;
      ++pos_;
      if (peek() == ']') {
        ++pos_;
        return value;
      }
      while (true) {
        value.items.push_back(parseValue(depth + 1));
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect(']');
        return value;
      }
    }
    if (c == '"') {
      value.type = JsonValue::Type::kString;
      value.text = parseString();
      return value;
    }
    if (literal("true") || literal("false")) {
      value.type = JsonValue::Type::kBool;
      value.boolean = text_[pos_ - 1] == 'e' && text_[pos_ - 2] == 'u';
      return value;
    }
    if (literal("null")) return value;
    return parseNumber();
  }

  JsonValue parseNumber() {
    const size_t start = pos_;
    if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
    const size_t digits = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    if (pos_ == digits) fail("not a value");
    if (text_[digits] == '0' && pos_ - digits > 1) fail("leading zero");
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }
    JsonValue value;
    value.type = JsonValue::Type::kNumber;
    value.text = std::string(text_.substr(start, pos_ - start));
    return value;
  }

  static void appendUtf8(uint32_t code, std::string* out) {
    if (code < 0x80) {
      out->push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (code >> 6)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else if (code < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (code >> 12)));
      out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (code >> 18)));
      out->push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    }
  }

  uint32_t parseHex4() {
    if (pos_ + 4 > text_.size()) fail("short \\u escape");
    uint32_t code = 0;
    const auto result = std::from_chars(text_.data() + pos_, text_.data() + pos_ + 4, code, 16);
    if (result.ptr != text_.data() + pos_ + 4) fail("bad \\u escape");
    pos_ += 4;
    return code;
  }

  std::string parseString() {
    expect('"');
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) fail("unterminated escape");
      const char escape = text_[pos_++];
      switch (escape) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          uint32_t code = parseHex4();
          if (code >= 0xD800 && code <= 0xDBFF) {
            if (!literal("\\u")) fail("lone high surrogate");
            const uint32_t low = parseHex4();
            if (low < 0xDC00 || low > 0xDFFF) fail("bad low surrogate");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          }
          appendUtf8(code, &out);
          break;
        }
        default: fail("unknown escape");
      }
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

bool JsonValue::has(std::string_view key) const {
  for (const auto& member : members) {
    if (member.first == key) return true;
  }
  return false;
}

const JsonValue& JsonValue::operator[](std::string_view key) const {
  if (type != Type::kObject) throw std::runtime_error("not an object, looking for " + std::string(key));
  for (const auto& member : members) {
    if (member.first == key) return member.second;
  }
  throw std::runtime_error("no key '" + std::string(key) + "'");
}

uint64_t JsonValue::asU64() const {
  uint64_t value = 0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  if (type != Type::kNumber || result.ec != std::errc() || result.ptr != text.data() + text.size()) {
    throw std::runtime_error("not an unsigned integer: " + text);
  }
  return value;
}

int64_t JsonValue::asI64() const {
  int64_t value = 0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  if (type != Type::kNumber || result.ec != std::errc() || result.ptr != text.data() + text.size()) {
    throw std::runtime_error("not an integer: " + text);
  }
  return value;
}

const std::string& JsonValue::asString() const {
  if (type != Type::kString) throw std::runtime_error("not a string");
  return text;
}

bool JsonValue::asBool() const {
  if (type != Type::kBool) throw std::runtime_error("not a bool");
  return boolean;
}

JsonValue parseJson(std::string_view text) { return Parser(text).parseDocument(); }

}  // namespace tcgd::analyze::testing
