// Renders decoded records through their schema: one text line or one JSON
// object per record (dump). Blob words become the interned string, addr words
// the basename of the library mapped there, hex words "0x..." in text and
// exact integers in JSON.
#pragma once

#include <string>
#include <string_view>

#include "bundle/bundle.h"
#include "event_codec.h"
#include "report/json_writer.h"

namespace tcgd::analyze {

// A text value as dump writes it: as is, or in double quotes (with \\ and
// \" escaped) when it is empty or holds a space, tab, quote, backslash or
// '=', so a line splits cleanly into key=value pairs.
void appendTextValue(std::string_view text, std::string* out);

class RecordFormatter {
 public:
  explicit RecordFormatter(const Bundle& bundle);

  // One JSON object and a newline (JSON Lines).
  void appendJson(const proto::DecodedRecord& record, std::string* out);
  // One text line and a newline.
  void appendText(const proto::DecodedRecord& record, std::string* out);

  // True for the classes of records that stand for a driver or runtime call;
  // their JSON carries "api", the ELF name of the entry point.
  static bool isApiClass(std::string_view record_class);

 private:
  const RecordType* lookup(uint32_t type);
  // The interned string for a blob id if it is printable text, else empty
  // and false.
  bool blobText(uint64_t id, std::string_view* text) const;
  // The basename of the library holding `address`, or empty.
  std::string_view moduleName(uint64_t address) const;
  void appendJsonField(const FieldSpec& field, uint64_t word, JsonWriter& json);
  void appendTextField(const FieldSpec& field, uint64_t word, std::string* out);

  const Bundle& bundle_;
  uint64_t time_origin_ns_ = 0;
  bool relative_time_ = false;
  // Records come in runs of one type; remembering the last lookup avoids a
  // hash lookup per record.
  uint32_t last_type_id_ = 0;
  const RecordType* last_type_ = nullptr;
  bool have_last_ = false;
};

}  // namespace tcgd::analyze
