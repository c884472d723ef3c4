#include "report/record_format.h"

#include <fmt/format.h>

#include <iterator>

#include "channel/record.h"

namespace tcgd::analyze {
namespace {

// Printable: no control bytes. Bytes that are not valid UTF-8 are still
// shown (JSON output replaces them), so a Latin-1 path stays readable.
bool isPrintable(std::string_view text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && byte != '\t') || byte == 0x7F) return false;
  }
  return true;
}

std::string_view basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

void appendHex(uint64_t value, std::string* out) {
  fmt::format_to(std::back_inserter(*out), "0x{:x}", value);
}

const char* className(uint8_t cls) { return channel::recordClassName(cls); }

}  // namespace

void appendTextValue(std::string_view text, std::string* out) {
  const bool plain = !text.empty() && text.find_first_of(" \t\"\\=") == std::string_view::npos;
  if (plain) {
    out->append(text);
    return;
  }
  out->push_back('"');
  for (const char c : text) {
    if (c == '"' || c == '\\') out->push_back('\\');
    out->push_back(c);
  }
  out->push_back('"');
}

bool RecordFormatter::isApiClass(std::string_view record_class) {
  return record_class == "driver_memory" || record_class == "host_memory" ||
         record_class == "driver_graph" || record_class == "kernel_launch" ||
         record_class == "driver_other";
}

RecordFormatter::RecordFormatter(const Bundle& bundle) : bundle_(bundle) {
  if (bundle.hasHeader()) {
    time_origin_ns_ = bundle.header().start_monotonic_ns();
    relative_time_ = true;
  }
}

const RecordType* RecordFormatter::lookup(uint32_t type) {
  if (!have_last_ || type != last_type_id_) {
    last_type_id_ = type;
    last_type_ = bundle_.schemas().find(type);
    have_last_ = true;
  }
  return last_type_;
}

bool RecordFormatter::blobText(uint64_t id, std::string_view* text) const {
  const BlobInfo* blob = bundle_.blob(id);
  if (blob == nullptr || blob->data.size() != blob->size || !isPrintable(blob->data)) return false;
  *text = blob->data;
  return true;
}

std::string_view RecordFormatter::moduleName(uint64_t address) const {
  const std::string* path = bundle_.modules().find(address);
  return path == nullptr ? std::string_view() : basename(*path);
}

void RecordFormatter::appendJsonField(const FieldSpec& field, uint64_t word, JsonWriter& json) {
  json.key(field.name);
  const uint64_t bits = fieldBits(field, word);
  switch (field.kind) {
    case FieldKind::kI64:
    case FieldKind::kI32:
    case FieldKind::kI16:
      json.value(fieldSigned(field, word));
      return;
    case FieldKind::kBool:
      json.value(bits != 0);
      return;
    case FieldKind::kBlob: {
      std::string_view text;
      if (blobText(bits, &text)) {
        json.value(text);
      } else {
        json.value(bits);  // not interned here, or not text: the id
      }
      return;
    }
    case FieldKind::kAddr: {
      const std::string_view name = moduleName(bits);
      if (!name.empty()) {
        json.value(name);
      } else {
        char hex[24];
        const auto end = fmt::format_to_n(hex, sizeof(hex), "0x{:x}", bits);
        json.value(std::string_view(hex, end.size));
      }
      return;
    }
    default:  // u*, hex: exact integers
      json.value(bits);
      return;
  }
}

void RecordFormatter::appendTextField(const FieldSpec& field, uint64_t word, std::string* out) {
  out->push_back(' ');
  out->append(field.name);
  out->push_back('=');
  const uint64_t bits = fieldBits(field, word);
  switch (field.kind) {
    case FieldKind::kI64:
    case FieldKind::kI32:
    case FieldKind::kI16:
      fmt::format_to(std::back_inserter(*out), "{}", fieldSigned(field, word));
      return;
    case FieldKind::kBool:
      out->append(bits != 0 ? "true" : "false");
      return;
    case FieldKind::kHex:
      appendHex(bits, out);
      return;
    case FieldKind::kBlob: {
      std::string_view text;
      if (blobText(bits, &text)) {
        appendTextValue(text, out);
      } else {
        fmt::format_to(std::back_inserter(*out), "blob#{}", bits);
      }
      return;
    }
    case FieldKind::kAddr: {
      const std::string_view name = moduleName(bits);
      if (!name.empty()) {
        appendTextValue(name, out);
      } else {
        appendHex(bits, out);
      }
      return;
    }
    default:
      fmt::format_to(std::back_inserter(*out), "{}", bits);
      return;
  }
}

void RecordFormatter::appendJson(const proto::DecodedRecord& record, std::string* out) {
  const RecordType* type = lookup(record.type);
  const char* cls = className(record.cls);
  JsonWriter json(out);
  json.beginObject();
  json.key("seq").value(record.sequence);
  json.key("type");
  if (type != nullptr) {
    json.value(type->name);
  } else {
    char name[16];
    const auto end = fmt::format_to_n(name, sizeof(name), "type_{}", record.type);
    json.value(std::string_view(name, end.size));
  }
  json.key("class").value(cls);
  json.key("tid").value(record.tid);
  json.key("time_ns").value(record.time_ns);
  json.key("flags").value(record.flags);
  if (type != nullptr && isApiClass(cls)) json.key("api").value(type->name);
  if (type != nullptr) {
    for (const FieldSpec& field : type->fields) appendJsonField(field, record.words[field.word], json);
    for (const FieldSpec& field : type->flag_fields) appendJsonField(field, record.flags, json);
  } else {
    // No schema: the raw words, so nothing is hidden.
    static constexpr const char* kRaw[] = {"w0", "w1", "w2", "w3", "w4"};
    for (int k = 0; k < 5; ++k) json.key(kRaw[k]).value(record.words[k]);
  }
  json.endObject();
  out->push_back('\n');
}

void RecordFormatter::appendText(const proto::DecodedRecord& record, std::string* out) {
  const RecordType* type = lookup(record.type);
  auto it = std::back_inserter(*out);
  if (relative_time_) {
    const int64_t delta = static_cast<int64_t>(record.time_ns - time_origin_ns_);
    const uint64_t magnitude = delta < 0 ? 0 - static_cast<uint64_t>(delta) : static_cast<uint64_t>(delta);
    fmt::format_to(it, "{} {}{}.{:09} tid={} {} ", record.sequence, delta < 0 ? '-' : '+',
                   magnitude / 1000000000, magnitude % 1000000000, record.tid,
                   className(record.cls));
  } else {
    fmt::format_to(it, "{} @{} tid={} {} ", record.sequence, record.time_ns, record.tid,
                   className(record.cls));
  }
  if (type != nullptr) {
    out->append(type->name);
    for (const FieldSpec& field : type->fields) appendTextField(field, record.words[field.word], out);
    if (!type->flag_fields.empty()) {
      for (const FieldSpec& field : type->flag_fields) appendTextField(field, record.flags, out);
    } else if (record.flags != 0) {
      fmt::format_to(std::back_inserter(*out), " flags=0x{:x}", record.flags);
    }
  } else {
    fmt::format_to(it, "type_{}", record.type);
    for (int k = 0; k < 5; ++k) fmt::format_to(std::back_inserter(*out), " w{}=0x{:x}", k, record.words[k]);
    if (record.flags != 0) fmt::format_to(std::back_inserter(*out), " flags=0x{:x}", record.flags);
  }
  out->push_back('\n');
}

}  // namespace tcgd::analyze
