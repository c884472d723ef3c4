// Writes the golden version-1 memory bundle that golden_test.cpp reads:
//   tcgd_make_golden tests/proto/golden/v1-memory.tcgd-memory
// Run by hand only, when the golden file is first made. Never regenerate a
// committed golden file with a newer writer: it stands for the bundles of its
// version that are already out there, which every later tcgd must read.
// The content is spelled out twice on purpose, here and in golden_test.cpp.
#include <cstdio>
#include <string>

#include "bundle_writer.h"
#include "channel/record.h"
#include "event_codec.h"

namespace {

using tcgd::channel::Record;
namespace bundle = tcgd::bundle;

constexpr uint64_t kStartUnixNs = 1767225600000000000ull;  // 2026-01-01T00:00:00Z
constexpr uint64_t kStartMonoNs = 1000000000ull;

Record record(uint16_t type, tcgd::channel::RecordClass cls, uint8_t flags, uint32_t tid,
              uint64_t time, uint64_t a0, uint64_t a1, uint64_t a2) {
  Record r{};
  r.type = type;
  r.cls = static_cast<uint8_t>(cls);
  r.flags = flags;
  r.tid = tid;
  r.time_ns = time;
  r.a[0] = a0;
  r.a[1] = a1;
  r.a[2] = a2;
  return r;
}

bundle::Frame headerFrame() {
  bundle::Frame frame;
  bundle::Header* h = frame.mutable_header();
  h->set_run_name("golden");
  h->set_rank(1);
  h->set_world_size(2);
  h->set_local_rank(1);
  h->set_group_id("group-7");
  (*h->mutable_metadata())["experiment"] = "golden";
  (*h->mutable_metadata())["owner"] = "tcgd";
  h->set_host("golden-host");
  h->set_pid(4242);
  h->set_start_time_unix_ns(kStartUnixNs);
  h->set_start_monotonic_ns(kStartMonoNs);
  h->set_tool_version("0.1.0");
  (*h->mutable_config())["TCGD_OUTPUT"] = "/tmp/golden";
  (*h->mutable_config())["TCGD_MEMORY_STACKS"] = "none";
  bundle::RecordTypeSchema* point = h->add_record_types();
  point->set_id(3);
  point->set_name("point");
  point->set_record_class("point");
  for (const char* w : {"name:blob", "origin:u64", "ordinal:u64", "", ""}) point->add_words(w);
  bundle::RecordTypeSchema* alloc = h->add_record_types();
  alloc->set_id(300);
  alloc->set_name("cuMemAlloc_v2");
  alloc->set_record_class("driver_memory");
  for (const char* w : {"dptr:addr", "bytes:u64", "result:i32", "", ""}) alloc->add_words(w);
  alloc->set_flags("ok:bool");
  h->add_command_line("python");
  h->add_command_line("train.py");
  h->mutable_provenance()->set_driver_version("13.0");
  h->mutable_channel()->set_record_capacity(65536);
  h->mutable_channel()->set_payload_slots(16384);
  return frame;
}

bundle::Frame internedFrame() {
  bundle::Frame frame;
  const char* names[] = {"step-1", "step-2"};
  for (uint64_t i = 0; i < 2; ++i) {
    bundle::Blob* blob = frame.mutable_interned()->add_blobs();
    blob->set_id(i + 1);
    blob->set_kind(static_cast<uint32_t>(tcgd::channel::BlobKind::kString));
    blob->set_data(names[i]);
  }
  return frame;
}

bundle::Frame batchFrame(uint64_t first, std::initializer_list<Record> records) {
  tcgd::proto::EventBatchEncoder encoder;
  uint64_t sequence = first;
  for (const Record& r : records)
    if (!encoder.add(sequence++, r)) std::fprintf(stderr, "sequence gap\n");
  bundle::Frame frame;
  encoder.finish(frame.mutable_events());
  return frame;
}

bundle::Frame pointFrame(uint64_t sequence, uint64_t time, const char* name, uint64_t ordinal) {
  bundle::Frame frame;
  bundle::Point* p = frame.mutable_point();
  p->set_sequence(sequence);
  p->set_time_ns(time);
  p->set_name(name);
  p->set_origin("explicit");
  p->set_tid(4242);
  p->set_ordinal(ordinal);
  return frame;
}

bundle::Frame provenanceFrame() {
  bundle::Frame frame;
  bundle::Provenance* p = frame.mutable_provenance();
  p->set_driver_version("13.0");
  p->set_runtime_version("13.0");
  p->set_torch_version("2.9.0");
  bundle::Device* d = p->add_devices();
  d->set_ordinal(0);
  d->set_name("Golden GPU");
  d->set_uuid("GPU-00000000-0000-0000-0000-000000000001");
  d->set_capability_major(9);
  d->set_capability_minor(0);
  d->set_total_memory(80ull << 30);
  d->set_pci_bus_id("0000:01:00.0");
  (*p->mutable_other())["cudnn_version"] = "9.1.0";
  return frame;
}

bundle::Frame modulesFrame() {
  bundle::Frame frame;
  bundle::Module* m = frame.mutable_modules()->add_modules();
  m->set_start(0x400000);
  m->set_end(0x401000);
  m->set_path("/usr/bin/python3");
  m = frame.mutable_modules()->add_modules();
  m->set_start(0x7f1000000000);
  m->set_end(0x7f1000200000);
  m->set_path("/usr/lib/x86_64-linux-gnu/libcuda.so.1");
  return frame;
}

bundle::Frame trailerFrame() {
  bundle::Frame frame;
  bundle::Trailer* t = frame.mutable_trailer();
  t->set_complete(true);
  t->set_end_reason("normal exit");
  t->set_end_time_unix_ns(kStartUnixNs + 5000000000ull);
  bundle::ClassCount* c = t->add_classes();
  c->set_record_class("point");
  c->set_records(2);
  c = t->add_classes();
  c->set_record_class("driver_memory");
  c->set_records(3);
  c->set_dropped(1);
  bundle::TypeCount* ty = t->add_types();
  ty->set_type(3);
  ty->set_records(2);
  ty = t->add_types();
  ty->set_type(300);
  ty->set_records(3);
  t->set_records(5);
  t->set_blobs(2);
  t->set_points(2);
  t->set_frames(8);
  return frame;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT.tcgd-memory\n", argv[0]);
    return 2;
  }
  using tcgd::channel::RecordClass;
  const uint64_t t0 = kStartMonoNs + 1000;
  const uint64_t kNegOne = ~0ull;  // result -1 as a sign-extended i32
  const bundle::Frame frames[] = {
      headerFrame(),
      internedFrame(),
      batchFrame(0, {record(3, RecordClass::kPoint, 0, 4242, t0, 1, 0, 0),
                     record(300, RecordClass::kDriverMemory, 1, 4242, t0 + 250, 0x7f0000000000, 1 << 20, 0),
                     record(300, RecordClass::kDriverMemory, 1, 4243, t0 + 180, 0x7f0000100000, 2 << 20, 0)}),
      pointFrame(0, t0, "step-1", 0),
      provenanceFrame(),
      modulesFrame(),
      batchFrame(3, {record(300, RecordClass::kDriverMemory, 0, 4243, t0 + 900, 0, 1ull << 40, kNegOne),
                     record(3, RecordClass::kPoint, 0, 4242, t0 + 1000, 2, 0, 1)}),
      pointFrame(4, t0 + 1000, "step-2", 1),
      trailerFrame(),
  };
  tcgd::proto::BundleWriter writer;
  tcgd::Status status = writer.open(argv[1], tcgd::proto::BundleKind::kMemory);
  for (const bundle::Frame& frame : frames)
    if (status) status = writer.write(frame);
  if (status) status = writer.close();
  if (!status) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  std::printf("wrote %s: %llu bytes, %llu frames\n", argv[1],
              static_cast<unsigned long long>(writer.bytesWritten()),
              static_cast<unsigned long long>(writer.framesWritten()));
  return 0;
}
