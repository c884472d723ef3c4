// `tcgd-analyze dump BUNDLE [--json] [--frames]`: every record, or every frame.
#include <fmt/format.h>

#include <cstdio>
#include <iterator>

#include "bundle/bundle.h"
#include "commands/commands.h"
#include "report/json_writer.h"
#include "report/record_format.h"

namespace tcgd::analyze {
namespace {

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
    default:
      break;
  }
  out->push_back('\n');
}

int runDump(const ParsedArgs& args, Output& out) {
  const Bundle bundle = Bundle::load(args.positional(0));
  const bool json = args.flag("--json");
  std::vector<std::string> problems;
  if (args.flag("--frames")) {
    bundle.forEachFrame([&](const FrameInfo& info) {
      if (json) {
        appendFrameJson(info, &out.buffer());
      } else {
        appendFrameText(info, &out.buffer());
      }
      out.maybeFlush();
    });
  } else {
    RecordFormatter formatter(bundle);
    problems = bundle.forEachRecordBatch([&](const std::vector<proto::DecodedRecord>& records) {
      std::string& buffer = out.buffer();
      // The branch is outside the loop so each loop body is one straight call.
      if (json) {
        for (const auto& record : records) formatter.appendJson(record, &buffer);
      } else {
        for (const auto& record : records) formatter.appendText(record, &buffer);
      }
      out.maybeFlush();
    });
  }
  out.flush();
  // Warnings go to stderr so stdout stays pure records (JSON Lines for jq).
  for (const auto& problem : problems) {
    std::fprintf(stderr, "%s: warning: %s: %s\n", kProgramName, bundle.path().c_str(), problem.c_str());
  }
  if (const auto& stop = bundle.stop()) {
    std::fprintf(stderr, "%s: warning: %s: reading stopped at byte %llu: %s\n", kProgramName,
                 bundle.path().c_str(), static_cast<unsigned long long>(stop->offset),
                 stop->reason.c_str());
  }
  return kExitOk;
}

}  // namespace

void registerDumpCommand(CommandRegistry& registry) {
  registry.add(CommandSpec{
      .path = {"dump"},
      .summary = "Print every record, as text or JSON Lines",
      .description =
          "Prints every record of the bundle in file order, one per line, decoded through the\n"
          "record-type schemas in the bundle: interned strings are shown as strings, code\n"
          "addresses as the library mapped there, pointers in hex. With --json, one JSON\n"
          "object per line (JSON Lines) with exact 64-bit integers, for scripts and jq.\n"
          "A torn or corrupt file is dumped up to its last whole frame, with a warning on\n"
          "stderr saying where reading stopped.",
      .arguments = {{"BUNDLE", kBundleArgumentHelp}},
      .options = {{"--json", "", "Print JSON Lines, one object per record (keys in docs/cli.md)"},
                  {"--frames", "", "Print one line per frame (offset, size, type) instead of records"}},
      .exit_codes = {},
      .run = runDump,
  });
}

}  // namespace tcgd::analyze
