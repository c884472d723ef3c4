#include "synthetic_bundle.h"

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

namespace tcgd::analyze::testing {
namespace {

channel::Record makeRecord(uint16_t type, channel::RecordClass cls, uint64_t time_ns,
                           std::initializer_list<uint64_t> words) {
  channel::Record record{};
  record.type = type;
  record.cls = static_cast<uint8_t>(cls);
  record.tid = kTid;
  record.time_ns = time_ns;
  int k = 0;
  for (const uint64_t word : words) record.a[k++] = word;
  return record;
}

uint64_t packResultDevice(int32_t result, int32_t device) {
  return static_cast<uint32_t>(result) | (uint64_t{static_cast<uint32_t>(device)} << 32);
}

void addSchema(bundle::Header* header, uint32_t id, const char* name, const char* cls,
               std::initializer_list<const char*> words) {
  bundle::RecordTypeSchema* schema = header->add_record_types();
  schema->set_id(id);
  schema->set_name(name);
  schema->set_record_class(cls);
  for (const char* word : words) schema->add_words(word);
}

}  // namespace

WrittenBundle writeBundle(const std::string& path, const BundleSpec& spec) {
  WrittenBundle written;
  written.path = path;
  proto::BundleWriter writer;
  const Status opened = writer.open(path, spec.kind);
  EXPECT_TRUE(opened.isOk()) << opened.message();
  const auto write = [&](const bundle::Frame& frame) {
    written.frame_offsets.push_back(writer.bytesWritten());
    const Status status = writer.write(frame);
    EXPECT_TRUE(status.isOk()) << status.message();
  };

  bundle::Frame frame;
  bundle::Header* header = frame.mutable_header();
  header->set_run_name("synthetic");
  header->set_rank(1);
  header->set_world_size(2);
  header->set_local_rank(1);
  header->set_group_id("group-7");
  (*header->mutable_metadata())["experiment"] = "a \"quoted\" value";
  header->set_host("testhost");
  header->set_pid(31337);
  header->set_start_time_unix_ns(1'700'000'000'000'000'000ull);
  header->set_start_monotonic_ns(kStartMonotonic);
  header->set_tool_version("0.1.0");
  (*header->mutable_config())["TCGD_OUTPUT"] = "/tmp/out";
  header->add_command_line("python");
  header->add_command_line("train.py");
  header->mutable_provenance()->set_torch_version("2.5.0");
  addSchema(header, channel::kRecordPoint, "point", "point", {"name:blob", "origin:u64", "ordinal:u64"});
  addSchema(header, kTypeAlloc, "cuMemAlloc_v2", "driver_memory",
            {"ptr:hex", "size:u64", "result:i32,device:i32", "stream:hex", "caller:addr"});
  write(frame);

  frame.Clear();
  for (const auto& [id, text] : {std::pair<uint64_t, const char*>{1, "step-1"}, {2, "step-2"}}) {
    bundle::Blob* blob = frame.mutable_interned()->add_blobs();
    blob->set_id(id);
    blob->set_kind(static_cast<uint32_t>(channel::BlobKind::kString));
    blob->set_data(text);
  }
  write(frame);

  frame.Clear();
  bundle::Module* module = frame.mutable_modules()->add_modules();
  module->set_start(kModuleStart);
  module->set_end(kModuleEnd);
  module->set_path("/usr/lib/x86_64-linux-gnu/libnccl.so.2");
  write(frame);

  proto::EventBatchEncoder encoder;
  const uint64_t t0 = kStartMonotonic + 1000;
  std::vector<channel::Record> records = {
      makeRecord(channel::kRecordPoint, channel::RecordClass::kPoint, t0, {1, 0, 0}),
      makeRecord(kTypeAlloc, channel::RecordClass::kDriverMemory, t0 + 10,
                 {kPtr, kSize, packResultDevice(2, 1), kStream, kCallerInside}),
      makeRecord(channel::kRecordPoint, channel::RecordClass::kPoint, t0 + 20, {2, 0, 1}),
      makeRecord(kTypeAlloc, channel::RecordClass::kDriverMemory, t0 + 30,
                 {0x1000, 4096, packResultDevice(-1, 0), 0, kCallerOutside}),
  };
  if (spec.unknown_type_record) {
    records.push_back(makeRecord(kTypeUnknown, channel::RecordClass::kDriverOther, t0 + 40,
                                 {7, 8, 9, 10, ~uint64_t{0}}));
  }
  for (size_t i = 0; i < records.size(); ++i) EXPECT_TRUE(encoder.add(i, records[i]));
  frame.Clear();
  encoder.finish(frame.mutable_events());
  write(frame);

  for (const auto& [sequence, name, ordinal] :
       {std::tuple<uint64_t, const char*, uint64_t>{0, "step-1", 0}, {2, "step-2", 1}}) {
    frame.Clear();
    bundle::Point* point = frame.mutable_point();
    point->set_sequence(sequence);
    point->set_time_ns(records[sequence].time_ns);
    point->set_name(name);
    point->set_origin("explicit");
    point->set_tid(kTid);
    point->set_ordinal(ordinal);
    write(frame);
  }

  if (spec.provenance_frame) {
    frame.Clear();
    frame.mutable_provenance()->set_driver_version("13.0");
    bundle::Device* device = frame.mutable_provenance()->add_devices();
    device->set_ordinal(0);
    device->set_name("Fake GPU");
    device->set_total_memory(uint64_t{80} << 30);
    write(frame);
  }

  if (spec.trailer) {
    frame.Clear();
    bundle::Trailer* trailer = frame.mutable_trailer();
    trailer->set_complete(spec.complete);
    trailer->set_end_reason(spec.end_reason);
    trailer->set_records(records.size());
    trailer->set_points(2);
    const auto addClass = [&](const char* name, uint64_t count, uint64_t dropped) {
      bundle::ClassCount* entry = trailer->add_classes();
      entry->set_record_class(name);
      entry->set_records(count);
      entry->set_dropped(dropped);
    };
    addClass("point", 2, 0);
    addClass("driver_memory", 2, spec.dropped_driver_memory);
    if (spec.unknown_type_record) addClass("driver_other", 1, 0);
    const auto addType = [&](uint32_t type, uint64_t count) {
      bundle::TypeCount* entry = trailer->add_types();
      entry->set_type(type);
      entry->set_records(count);
    };
    addType(channel::kRecordPoint, 2);
    addType(kTypeAlloc, 2);
    if (spec.unknown_type_record) addType(kTypeUnknown, 1);
    written.trailer_offset = writer.bytesWritten();
    write(frame);
  }
  written.size = writer.bytesWritten();
  const Status closed = writer.close();
  EXPECT_TRUE(closed.isOk()) << closed.message();
  return written;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

ScratchDir::ScratchDir() {
  std::string pattern = ::testing::TempDir() + "tcgd-analyze-XXXXXX";
  if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  EXPECT_FALSE(path_.empty()) << "mkdtemp failed";
}

ScratchDir::~ScratchDir() {
  // Flat: the tests create files only.
  if (DIR* dir = ::opendir(path_.c_str())) {
    while (dirent* entry = ::readdir(dir)) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") ::unlink((path_ + "/" + name).c_str());
    }
    ::closedir(dir);
  }
  ::rmdir(path_.c_str());
}

}  // namespace tcgd::analyze::testing
