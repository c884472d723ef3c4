#include "report/frame_format.h"

#include <fmt/format.h>

#include <iterator>
#include <map>

#include "model/kernel_names.h"
#include "model/tensor_frames.h"
#include "report/json_writer.h"
#include "report/record_format.h"

namespace tcgd::analyze {
namespace {

template <typename Values>
std::string joined(const Values& values) {
  std::string text;
  for (const auto& v : values) text += fmt::format("{}{}", text.empty() ? "" : ",", v);
  return text;
}

template <typename Values>
void arrayJson(JsonWriter& json, const char* key, const Values& values) {
  json.key(key).beginArray();
  for (const auto& v : values) json.value(v);
  json.endArray();
}

const char* rangeSourceName(uint32_t source) {
  switch (source) {
    case 1: return "allocator_block";
    case 2: return "driver_allocation";
    case 3: return "copy_destination";
    default: return "unknown";
  }
}

}  // namespace

const char* frameTypeName(const bundle::Frame& frame) {
  switch (frame.body_case()) {
    case bundle::Frame::kHeader: return "header";
    case bundle::Frame::kPoint: return "point";
    case bundle::Frame::kEvents: return "events";
    case bundle::Frame::kInterned: return "interned";
    case bundle::Frame::kProvenance: return "provenance";
    case bundle::Frame::kModules: return "modules";
    case bundle::Frame::kTrailer: return "trailer";
    case bundle::Frame::kTensorKernel: return "tensor_kernel";
    case bundle::Frame::kTensorSites: return "tensor_sites";
    case bundle::Frame::kTensorObservations: return "tensor_observations";
    case bundle::Frame::kTensorCounters: return "tensor_counters";
    case bundle::Frame::kTensorPayloads: return "tensor_payloads";
    case bundle::Frame::kTensorCheck: return "tensor_check";
    case bundle::Frame::BODY_NOT_SET: break;
  }
  return "unknown";
}


void appendFrameJson(const FrameInfo& info, std::string* out) {
  const bundle::Frame& frame = *info.frame;
  JsonWriter json(out);
  json.beginObject();
  json.key("offset").value(info.offset);
  json.key("size").value(info.size);
  json.key("type").value(frameTypeName(frame));
  switch (frame.body_case()) {
    case bundle::Frame::kPoint:
      json.key("name").value(frame.point().name());
      json.key("sequence").value(frame.point().sequence());
      break;
    case bundle::Frame::kEvents:
      json.key("records").value(frame.events().type_size());
      json.key("first_sequence").value(frame.events().first_sequence());
      break;
    case bundle::Frame::kInterned:
      json.key("blobs").value(frame.interned().blobs_size());
      break;
    case bundle::Frame::kModules:
      json.key("modules").value(frame.modules().modules_size());
      break;
    case bundle::Frame::kTrailer:
      json.key("complete").value(frame.trailer().complete());
      break;
    case bundle::Frame::kTensorKernel:
      json.key("function").value(frame.tensor_kernel().function());
      break;
    case bundle::Frame::kTensorSites:
      json.key("sites").value(frame.tensor_sites().sites_size());
      break;
    case bundle::Frame::kTensorObservations:
      json.key("observations").value(frame.tensor_observations().site_size());
      break;
    case bundle::Frame::kTensorCounters:
      json.key("final").value(frame.tensor_counters().final());
      break;
    case bundle::Frame::kTensorPayloads: {
      uint64_t bytes = 0;
      for (const auto& p : frame.tensor_payloads().payloads()) bytes += p.data().size();
      json.key("pieces").value(frame.tensor_payloads().payloads_size());
      json.key("bytes").value(bytes);
      break;
    }
    case bundle::Frame::kTensorCheck:
      json.key("final").value(frame.tensor_check().final());
      json.key("status").value(tensorCheckStatusName(frame.tensor_check().status()));
      json.key("detail").value(frame.tensor_check().detail());
      break;
    default:
      break;
  }
  json.endObject();
  out->push_back('\n');
}

void appendFrameText(const FrameInfo& info, std::string* out) {
  const bundle::Frame& frame = *info.frame;
  auto it = std::back_inserter(*out);
  fmt::format_to(it, "offset={} size={} {}", info.offset, info.size, frameTypeName(frame));
  switch (frame.body_case()) {
    case bundle::Frame::kPoint:
      fmt::format_to(it, " name={} sequence={}", frame.point().name(), frame.point().sequence());
      break;
    case bundle::Frame::kEvents:
      fmt::format_to(it, " records={} first_sequence={}", frame.events().type_size(),
                     frame.events().first_sequence());
      break;
    case bundle::Frame::kInterned:
      fmt::format_to(it, " blobs={}", frame.interned().blobs_size());
      break;
    case bundle::Frame::kModules:
      fmt::format_to(it, " modules={}", frame.modules().modules_size());
      break;
    case bundle::Frame::kTrailer:
      fmt::format_to(it, " complete={}", frame.trailer().complete());
      break;
    case bundle::Frame::kTensorKernel:
      fmt::format_to(it, " function={:#x}", frame.tensor_kernel().function());
      break;
    case bundle::Frame::kTensorSites:
      fmt::format_to(it, " sites={}", frame.tensor_sites().sites_size());
      break;
    case bundle::Frame::kTensorObservations:
      fmt::format_to(it, " observations={}", frame.tensor_observations().site_size());
      break;
    case bundle::Frame::kTensorCounters:
      fmt::format_to(it, " final={}", frame.tensor_counters().final());
      break;
    case bundle::Frame::kTensorPayloads: {
      uint64_t bytes = 0;
      for (const auto& p : frame.tensor_payloads().payloads()) bytes += p.data().size();
      fmt::format_to(it, " pieces={} bytes={}", frame.tensor_payloads().payloads_size(), bytes);
      break;
    }
    case bundle::Frame::kTensorCheck:
      fmt::format_to(it, " final={} status={} detail=", frame.tensor_check().final(),
                     tensorCheckStatusName(frame.tensor_check().status()));
      appendTextValue(frame.tensor_check().detail(), out);
      break;
    default:
      break;
  }
  out->push_back('\n');
}

void appendTensorKernelText(const bundle::TensorKernel& k, std::string* out) {
  const KernelName name = kernelName(k.name());
  auto it = std::back_inserter(*out);
  fmt::format_to(it, "kernel function={:#x} family={} params={} dtype={} rules={:#x} param_status={} name=",
                 k.function(), tensorKernelFamilyName(k.family()), k.param_offsets_size(), k.dtype(), k.rules(),
                 k.param_status());
  appendTextValue(name.short_name, out);
  out->append(" mangled=");
  appendTextValue(name.mangled, out);
  out->push_back('\n');
}

void appendTensorKernelJson(const bundle::TensorKernel& k, std::string* out) {
  const KernelName name = kernelName(k.name());
  JsonWriter json(out);
  json.beginObject();
  json.key("function").value(k.function());
  json.key("name").value(name.mangled);
  json.key("demangled").value(name.demangled);
  json.key("short_name").value(name.short_name);
  json.key("family").value(tensorKernelFamilyName(k.family()));
  arrayJson(json, "param_offsets", k.param_offsets());
  arrayJson(json, "param_sizes", k.param_sizes());
  json.key("dtype").value(k.dtype());
  json.key("rules").value(k.rules());
  json.key("param_status").value(k.param_status());
  json.endObject();
  out->push_back('\n');
}

void appendTensorSiteText(const bundle::TensorSite& s, std::string* out) {
  auto it = std::back_inserter(*out);
  fmt::format_to(it, "site={} seq={} tid={} kind={} function={:#x} invocation={} stream={:#x} device={} capture={}",
                 s.site(), s.sequence(), s.tid(), tensorSiteKindName(s.kind()), s.function(), s.invocation(),
                 s.stream(), s.device(), s.capture());
  if (s.capture() != 0) {
    fmt::format_to(it, " node={} capture_id={} replays={}-{}", s.node(), s.capture_id(), s.replay_first(),
                   s.replay_last());
  }
  if (s.grid_size() != 0) fmt::format_to(it, " grid={} block={} shared_mem={}", joined(s.grid()), joined(s.block()),
                                         s.shared_mem());
  if (s.kind() == 3 || s.kind() == 4) {
    fmt::format_to(it, " copy_bytes={} copy_source={:#x} copy_kind={}", s.copy_bytes(), s.copy_source(),
                   s.copy_kind());
  }
  fmt::format_to(it, " status={} rule={} params_blob={} params_bytes={} ranges={} ranges_dropped={}", s.status(),
                 s.rule(), s.params_blob(), s.params_bytes(), s.ranges_size(), s.ranges_dropped());
  if (s.waits() != 0 || s.waited_site() != 0) fmt::format_to(it, " waits={} waited_site={}", s.waits(), s.waited_site());
  if (s.workspace_words() != 0) fmt::format_to(it, " workspace_words={}", s.workspace_words());
  if (s.pointer_offsets_size() != 0) {
    fmt::format_to(it, " pointer_offsets={} pointer_ranges={}", joined(s.pointer_offsets()),
                   joined(s.pointer_ranges()));
  }
  out->push_back('\n');
  for (const auto& r : s.ranges()) {
    fmt::format_to(it, "  range={} param={} offset={} ptr={:#x} bytes={} extent={} base={:#x} dtype={} source={}",
                   r.index(), r.param(), r.offset(), r.ptr(), r.bytes(), r.extent(), r.base(), r.dtype(),
                   rangeSourceName(r.source()));
    if (r.reuse_site() != 0) fmt::format_to(it, " reuse_site={} reuse_range={}", r.reuse_site(), r.reuse_range());
    out->push_back('\n');
  }
}

void appendTensorSiteJson(const bundle::TensorSite& s, std::string* out) {
  JsonWriter json(out);
  json.beginObject();
  json.key("site").value(s.site());
  json.key("seq").value(s.sequence());
  json.key("time_ns").value(s.time_ns());
  json.key("tid").value(s.tid());
  json.key("kind").value(tensorSiteKindName(s.kind()));
  json.key("function").value(s.function());
  json.key("invocation").value(s.invocation());
  json.key("stream").value(s.stream());
  json.key("device").value(s.device());
  json.key("capture").value(s.capture());
  json.key("node").value(s.node());
  json.key("capture_id").value(s.capture_id());
  arrayJson(json, "grid", s.grid());
  arrayJson(json, "block", s.block());
  json.key("shared_mem").value(s.shared_mem());
  json.key("params_blob").value(s.params_blob());
  json.key("params_bytes").value(s.params_bytes());
  json.key("ranges").beginArray();
  for (const auto& r : s.ranges()) {
    json.beginObject();
    json.key("index").value(r.index());
    json.key("param").value(r.param());
    json.key("offset").value(r.offset());
    json.key("ptr").value(r.ptr());
    json.key("bytes").value(r.bytes());
    json.key("extent").value(r.extent());
    json.key("base").value(r.base());
    json.key("dtype").value(r.dtype());
    json.key("source").value(rangeSourceName(r.source()));
    json.key("reuse_site").value(r.reuse_site());
    json.key("reuse_range").value(r.reuse_range());
    json.endObject();
  }
  json.endArray();
  arrayJson(json, "pointer_offsets", s.pointer_offsets());
  arrayJson(json, "pointer_ranges", s.pointer_ranges());
  json.key("status").value(s.status());
  json.key("rule").value(s.rule());
  json.key("replay_first").value(s.replay_first());
  json.key("replay_last").value(s.replay_last());
  json.key("ranges_dropped").value(s.ranges_dropped());
  json.key("copy_bytes").value(s.copy_bytes());
  json.key("copy_source").value(s.copy_source());
  json.key("copy_kind").value(s.copy_kind());
  json.key("waits").value(s.waits());
  json.key("waited_site").value(s.waited_site());
  json.key("workspace_words").value(s.workspace_words());
  json.endObject();
  out->push_back('\n');
}

void appendObservationText(const bundle::TensorObservationBatch& b, int i, std::string* out) {
  fmt::format_to(std::back_inserter(*out),
                 "site={} exec={} range={} dtype={} flags={} elements={} hash={:#018x} nan={} pos_inf={} "
                 "neg_inf={} zero={} min={} max={} sum={} sum_squares={} first_nonfinite={} gpu_sequence={} "
                 "chunks_missing={}\n",
                 b.site(i), b.exec(i), b.range(i), b.dtype(i), b.flags(i), b.elements(i), b.hash(i), b.nan(i),
                 b.pos_inf(i), b.neg_inf(i), b.zero(i), b.minimum(i), b.maximum(i), b.sum(i), b.sum_squares(i),
                 b.first_nonfinite(i), b.gpu_sequence(i), b.chunks_missing(i));
}

void appendObservationJson(const bundle::TensorObservationBatch& b, int i, std::string* out) {
  JsonWriter json(out);
  json.beginObject();
  json.key("site").value(b.site(i));
  json.key("exec").value(b.exec(i));
  json.key("range").value(b.range(i));
  json.key("dtype").value(b.dtype(i));
  json.key("flags").value(b.flags(i));
  json.key("hash_only").value((b.flags(i) & 1) != 0);
  json.key("incomplete").value((b.flags(i) & 2) != 0);
  json.key("elements").value(b.elements(i));
  json.key("hash").value(b.hash(i));
  json.key("nan").value(b.nan(i));
  json.key("pos_inf").value(b.pos_inf(i));
  json.key("neg_inf").value(b.neg_inf(i));
  json.key("zero").value(b.zero(i));
  // JSON has no infinities: a range without finite elements has null here.
  json.key("minimum").value(b.minimum(i));
  json.key("maximum").value(b.maximum(i));
  json.key("sum").value(b.sum(i));
  json.key("sum_squares").value(b.sum_squares(i));
  json.key("first_nonfinite").value(b.first_nonfinite(i));
  json.key("gpu_sequence").value(b.gpu_sequence(i));
  json.key("chunks_missing").value(b.chunks_missing(i));
  json.endObject();
  out->push_back('\n');
}

void appendTensorCountersText(const bundle::TensorCounters& c, std::string* out) {
  auto it = std::back_inserter(*out);
  fmt::format_to(it, "counters final={} point_ordinal={} sites={} observations={} slots={} slots_dropped={} "
                     "observations_incomplete={}",
                 c.final(), c.point_ordinal(), c.sites(), c.observations(), c.slots(), c.slots_dropped(),
                 c.observations_incomplete());
  if (c.records() != 0 || c.records_dropped() != 0)
    fmt::format_to(it, " records={} record_bytes={} record_cut_budget={} record_cut_run={} "
                       "record_dropped_staging={} records_dropped={} records_torn={}",
                   c.records(), c.record_bytes(), c.record_cut_budget(), c.record_cut_run(),
                   c.record_dropped_staging(), c.records_dropped(), c.records_torn());
  const std::map<std::string, uint64_t> skipped(c.skipped().begin(), c.skipped().end());
  for (const auto& [reason, count] : skipped) {
    out->append(" skipped.");
    appendTextValue(reason, out);
    fmt::format_to(it, "={}", count);
  }
  out->push_back('\n');
}

void writeTensorCountersFields(const bundle::TensorCounters& c, JsonWriter& json) {
  json.key("point_ordinal").value(c.point_ordinal());
  json.key("sites").value(c.sites());
  json.key("observations").value(c.observations());
  json.key("slots").value(c.slots());
  json.key("slots_dropped").value(c.slots_dropped());
  json.key("observations_incomplete").value(c.observations_incomplete());
  json.key("records").value(c.records());
  json.key("record_bytes").value(c.record_bytes());
  json.key("record_cut_budget").value(c.record_cut_budget());
  json.key("record_cut_run").value(c.record_cut_run());
  json.key("record_dropped_staging").value(c.record_dropped_staging());
  json.key("records_dropped").value(c.records_dropped());
  json.key("records_torn").value(c.records_torn());
  json.key("skipped").beginObject();
  const std::map<std::string, uint64_t> skipped(c.skipped().begin(), c.skipped().end());
  for (const auto& [reason, count] : skipped) json.key(reason).value(count);
  json.endObject();
}

void appendTensorCountersJson(const bundle::TensorCounters& c, std::string* out) {
  JsonWriter json(out);
  json.beginObject();
  json.key("final").value(c.final());
  writeTensorCountersFields(c, json);
  json.endObject();
  out->push_back('\n');
}

namespace {
std::string headHex(const std::string& data) {
  std::string hex;
  for (size_t i = 0; i < data.size() && i < 16; ++i)
    hex += fmt::format("{:02x}", static_cast<unsigned>(static_cast<unsigned char>(data[i])));
  return hex;
}
}  // namespace

void appendPayloadText(const bundle::TensorPayload& p, std::string* out) {
  fmt::format_to(std::back_inserter(*out),
                 "payload site={} exec={} range={} offset={} bytes={} wanted={} range_bytes={} limit={} "
                 "flags={} dtype={} gpu_sequence={} head={}\n",
                 p.site(), p.exec(), p.range(), p.offset(), p.data().size(), p.wanted(), p.range_bytes(), p.limit(),
                 p.flags(), p.dtype(), p.gpu_sequence(), headHex(p.data()));
}

void appendPayloadJson(const bundle::TensorPayload& p, std::string* out) {
  JsonWriter json(out);
  json.beginObject();
  json.key("site").value(p.site());
  json.key("exec").value(p.exec());
  json.key("range").value(p.range());
  json.key("offset").value(p.offset());
  json.key("bytes").value(static_cast<uint64_t>(p.data().size()));
  json.key("wanted").value(p.wanted());
  json.key("range_bytes").value(p.range_bytes());
  json.key("limit").value(p.limit());
  json.key("flags").value(p.flags());
  json.key("dtype").value(p.dtype());
  json.key("gpu_sequence").value(p.gpu_sequence());
  json.key("head").value(headHex(p.data()));
  json.endObject();
  out->push_back('\n');
}

}  // namespace tcgd::analyze
