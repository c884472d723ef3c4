// `tcgd-analyze memory timeline BUNDLE [--json] [--from POINT] [--to POINT]
// [--pool P] [--device D] [--limit N]`: every memory event between points, in
// order, with its pool and how the pool is known (model/memory_history.h),
// under a header per interval saying whether its history is complete, and per
// interval the bytes allocated and freed per pool (memory/timeline.h).
#include <fmt/format.h>

#include <charconv>
#include <string_view>

#include "bundle/bundle.h"
#include "commands/commands.h"
#include "memory/timeline.h"
#include "model/memory_history.h"
#include "report/memory/timeline_report.h"

namespace tcgd::analyze {
namespace {

bool parseNumber(std::string_view text, uint64_t* out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return !text.empty() && ec == std::errc{} && ptr == end;
}

int runMemoryTimeline(const ParsedArgs& args, Output& out) {
  // Options are checked before the bundle is read.
  TimelineRequest o;
  if (auto text = args.value("--pool")) o.pool = parsePoolFilter(*text);
  if (auto text = args.value("--device")) {
    uint64_t number = 0;
    if (!parseNumber(*text, &number) || number > INT16_MAX)
      throw AnalyzeError(fmt::format("bad --device '{}': expected a device number as in 0", *text));
    o.device = static_cast<int16_t>(number);
  }
  if (auto text = args.value("--limit")) {
    if (!parseNumber(*text, &o.limit))
      throw AnalyzeError(fmt::format("bad --limit '{}': expected a number of events", *text));
  }
  o.from = args.value("--from");
  o.to = args.value("--to");
  LoadOptions options;
  options.keep_bulk_blobs = true;  // the snapshots' segments
  const Bundle bundle = Bundle::load(args.positional(0), options);
  bundle.requireKind(proto::BundleKind::kMemory);
  const MemoryHistory history = buildMemoryHistory(bundle);
  const Timeline timeline = selectTimeline(bundle, history, std::move(o));
  const auto flush = [&out] { out.maybeFlush(); };
  if (args.flag("--json")) {
    appendTimelineJson(timeline, history, &out.buffer(), flush);
  } else {
    appendTimelineText(timeline, history, &out.buffer(), flush);
  }
  out.flush();
  printWarnings(history.warnings(), bundle.path());
  return kExitOk;
}

}  // namespace

void registerTimelineCommand(CommandRegistry& registry) {
  registry.add(CommandSpec{
      .path = {"memory", "timeline"},
      .summary = "Every memory event between points, in order, with its pool",
      .description =
          "The allocator's trace events (alloc, free requested, free completed, segment\n"
          "alloc/free/map/unmap, snapshot, OOM) and the driver's memory calls (cuMemAlloc*,\n"
          "cuMemFree*, cuMemCreate/Release/Map/Unmap, async allocs and frees, address\n"
          "reservations, pinned host memory), interval by interval: each interval's header says\n"
          "whether its history is complete. Each event has its pool and how it is known:\n"
          "'trace' (the allocator's trace entry says it: exact), 'segment at \"P\" "
          "(before|after)'\n"
          "(a driver call of the allocator whose address lies in a segment of the snapshot of\n"
          "point P, the nearest snapshot before or after the event), 'trace_event' (the\n"
          "allocator's segment or OOM trace event beside the call), 'outside' (another\n"
          "library's memory, named) or 'unknown'. Each interval ends with the bytes allocated and\n"
          "freed per pool and level (blocks, segments, driver, host). See docs/memory-history.md.",
      .arguments = {{"BUNDLE", "a memory bundle (.tcgd-memory)"}},
      .options = {{"--json", "",
                   "Print one JSON object (schema tcgd.memory.timeline, exact bytes)"},
                  {"--from", "POINT", "Only events after the point named POINT"},
                  {"--to", "POINT", "Only events before the point named POINT"},
                  {"--pool", "P",
                   "Only events of pool P: A,B (as 1,0), default, outside or unknown"},
                  {"--device", "D", "Only events on device D"},
                  {"--limit", "N", "Print at most N events (totals still count all)"}},
      .exit_codes =
          "  0   printed\n"
          "  2   not a memory bundle, unknown point, bad --pool/--device/--limit, unreadable\n"
          "      file, or bad usage\n",
      .run = runMemoryTimeline,
  });
}

}  // namespace tcgd::analyze
