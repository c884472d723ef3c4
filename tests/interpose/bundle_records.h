// Test support: the records of a bundle with their schema, so a test can
// ask "records of type cuMemAlloc_v2 whose part ptr is X". Read with the
// format library (BundleReader, decodeEventBatch), not with the analyzer,
// so these tests check the bundle itself.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bundle_reader.h"
#include "event_codec.h"

namespace tcgd::testing {

struct WordPart {
  std::string name;
  unsigned shift = 0;
  unsigned width = 64;
};

struct RecordType {
  std::string name;
  std::string record_class;
  std::vector<WordPart> parts[channel::kRecordWords];
};

struct BundleRecords {
  std::string error;  // empty when the bundle was read to a trailer
  std::map<uint32_t, RecordType> types;
  std::vector<proto::DecodedRecord> records;
  std::map<uint64_t, std::string> strings;  // interned blobs by id
  struct Module {
    uint64_t start, end;
    std::string path;
  };
  std::vector<Module> modules;  // from ModuleMap frames
  bundle::Provenance provenance;  // header's, merged with later frames (later wins)
  bool complete = false;
  std::string end_reason;
  uint64_t dropped = 0;

  // The value of part `name` of `record`, or nothing when its type has no
  // such part. "@flags" is the record's flags byte.
  std::optional<uint64_t> part(const proto::DecodedRecord& record, const std::string& name) const {
    if (name == "@flags") return record.flags;
    auto type = types.find(record.type);
    if (type == types.end()) return std::nullopt;
    for (int w = 0; w < channel::kRecordWords; ++w) {
      for (const WordPart& p : type->second.parts[w]) {
        if (p.name != name) continue;
        const uint64_t word = record.words[w] >> p.shift;
        return p.width == 64 ? word : word & ((uint64_t{1} << p.width) - 1);
      }
    }
    return std::nullopt;
  }

  std::string typeName(const proto::DecodedRecord& record) const {
    auto type = types.find(record.type);
    return type == types.end() ? std::string() : type->second.name;
  }

  // The file of the module holding `address`, or "" when none does.
  std::string modulePath(uint64_t address) const {
    for (const auto& m : modules)
      if (address >= m.start && address < m.end) return m.path;
    return std::string();
  }
};

inline unsigned kindWidth(const std::string& kind) {
  if (kind == "u32" || kind == "i32") return 32;
  if (kind == "u16" || kind == "i16") return 16;
  if (kind == "u8") return 8;
  if (kind == "bool") return 1;
  return 64;  // u64 i64 hex addr blob
}

inline std::vector<WordPart> parseWord(const std::string& descriptor) {
  std::vector<WordPart> parts;
  unsigned shift = 0;
  std::istringstream in(descriptor);
  for (std::string item; std::getline(in, item, ',');) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos) continue;
    WordPart part{item.substr(0, colon), shift, kindWidth(item.substr(colon + 1))};
    shift += part.width;
    parts.push_back(part);
  }
  return parts;
}

// Reads `path`, retrying until the recorder has written the trailer or
// `timeout` passes.
inline BundleRecords readBundleRecords(const std::string& path,
                                       std::chrono::seconds timeout = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    BundleRecords out;
    proto::BundleReader reader;
    Status st = reader.open(path);
    bool trailer = false;
    if (st) {
      bundle::Frame frame;
      std::vector<proto::DecodedRecord> batch;
      while (reader.next(&frame) == proto::BundleReader::Next::kFrame) {
        if (frame.has_provenance() || frame.has_header()) {
          // Later non-empty values win: enough for the tests' purposes.
          out.provenance.MergeFrom(frame.has_header() ? frame.header().provenance()
                                                      : frame.provenance());
        }
        if (frame.has_header()) {
          for (const auto& t : frame.header().record_types()) {
            RecordType& type = out.types[t.id()];
            type.name = t.name();
            type.record_class = t.record_class();
            for (int w = 0; w < t.words_size() && w < channel::kRecordWords; ++w) {
              type.parts[w] = parseWord(t.words(w));
            }
          }
        } else if (frame.has_events()) {
          Status decoded = proto::decodeEventBatch(frame.events(), &batch);
          if (!decoded) out.error = decoded.message();
          out.records.insert(out.records.end(), batch.begin(), batch.end());
        } else if (frame.has_interned()) {
          for (const auto& blob : frame.interned().blobs()) out.strings[blob.id()] = blob.data();
        } else if (frame.has_modules()) {
          for (const auto& m : frame.modules().modules())
            out.modules.push_back({m.start(), m.end(), m.path()});
        } else if (frame.has_trailer()) {
          trailer = true;
          out.complete = frame.trailer().complete();
          out.end_reason = frame.trailer().end_reason();
          for (const auto& c : frame.trailer().classes()) out.dropped += c.dropped();
        }
      }
    } else {
      out.error = st.message();
    }
    if (trailer || std::chrono::steady_clock::now() > deadline) {
      if (!trailer && out.error.empty()) out.error = "no trailer in " + path;
      return out;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace tcgd::testing
