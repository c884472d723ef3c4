#include "report/json_writer.h"

#include <cassert>
#include <charconv>
#include <cmath>

namespace tcgd::analyze {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is not
// one (overlong forms, surrogates and code points above U+10FFFF included).
size_t utf8SequenceLength(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  size_t length = 0;
  uint32_t code = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    code = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    code = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    code = lead & 0x07;
  } else {
    return 0;
  }
  if (i + length > s.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  if (length == 3 && (code < 0x800 || (code >= 0xD800 && code <= 0xDFFF))) return 0;
  if (length == 4 && (code < 0x10000 || code > 0x10FFFF)) return 0;
  return length;
}

}  // namespace

void JsonWriter::appendQuoted(std::string_view text, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t plain_start = 0;
  const auto flushPlain = [&](size_t end) {
    out->append(text.data() + plain_start, end - plain_start);
  };
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      const size_t length = utf8SequenceLength(text, i);
      if (length != 0) {
        i += length;
        continue;
      }
      flushPlain(i);
      out->append("\xEF\xBF\xBD");  // U+FFFD REPLACEMENT CHARACTER
      plain_start = ++i;
      continue;
    }
    flushPlain(i);
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      default: {
        const char escape[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
        out->append(escape, sizeof(escape));
      }
    }
    plain_start = ++i;
  }
  flushPlain(text.size());
  out->push_back('"');
}

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_[depth_]) out_->push_back(',');
  first_[depth_] = false;
}

void JsonWriter::open(char bracket) {
  separate();
  assert(depth_ < kMaxDepth);
  out_->push_back(bracket);
  ++depth_;
  first_[depth_] = true;
}

void JsonWriter::close(char bracket) {
  assert(depth_ > 0 && !after_key_);
  --depth_;
  out_->push_back(bracket);
}

JsonWriter& JsonWriter::beginObject() { open('{'); return *this; }
JsonWriter& JsonWriter::endObject() { close('}'); return *this; }
JsonWriter& JsonWriter::beginArray() { open('['); return *this; }
JsonWriter& JsonWriter::endArray() { close(']'); return *this; }

JsonWriter& JsonWriter::key(std::string_view name) {
  separate();
  appendQuoted(name, out_);
  out_->push_back(':');
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view text) {
  separate();
  appendQuoted(text, out_);
  return *this;
}

JsonWriter& JsonWriter::value(bool flag) {
  separate();
  out_->append(flag ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::writeSigned(int64_t number) {
  separate();
  char buffer[24];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), number);
  out_->append(buffer, result.ptr);
  return *this;
}

JsonWriter& JsonWriter::writeUnsigned(uint64_t number) {
  separate();
  char buffer[24];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), number);
  out_->append(buffer, result.ptr);
  return *this;
}

JsonWriter& JsonWriter::value(double number) {
  if (!std::isfinite(number)) return null();
  separate();
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), number);
  out_->append(buffer, result.ptr);
  return *this;
}

JsonWriter& JsonWriter::null() {
  separate();
  out_->append("null");
  return *this;
}

}  // namespace tcgd::analyze
