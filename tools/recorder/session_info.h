// What the session-start and provenance blobs say, turned into bundle
// header fields, and where the bundle goes.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bundle_writer.h"
#include "channel/channel.h"
#include "channel/status.h"
#include "schema_table.h"
#include "tcgd/bundle.pb.h"

namespace tcgd::recorder {

// "key=value" lines, in order; the first '=' splits, lines without one are
// skipped.
std::vector<std::pair<std::string, std::string>> parseKeyValueLines(std::string_view text);

// The identity blob of kRecordSessionStart (agent/channel/record.h).
struct SessionIdentity {
  std::string run;
  int rank = -1;
  int world_size = 0;
  int local_rank = -1;
  std::string group_id;
  std::string host;
  std::string tool_version;
  std::string output_dir;
  std::vector<std::string> argv;              // argv.N, in N order
  std::map<std::string, std::string> metadata;  // meta.KEY
  std::map<std::string, std::string> other;     // keys this recorder does not know
};
SessionIdentity parseIdentity(std::string_view text);

// Fills the Header frame: identity, config lines, schema, the job's pid and
// start clocks from the channel header.
void fillHeader(const SessionIdentity& identity, std::string_view config_text,
                const SchemaTable& schema, const channel::ChannelHeader& channel,
                bundle::Header* header);

// Merges "key=value" provenance lines (kRecordProvenance) into *provenance:
// driver_version, runtime_version, torch_version, nccl_version,
// device.N.{name,uuid,capability,total_memory,pci_bus_id}; other keys go to
// provenance.other.
void applyProvenanceLines(std::string_view text, bundle::Provenance* provenance);

// "<run>[-r<rank>]-p<pid>": the rank part only for rank >= 0. Characters
// that cannot be in a file name ('/', NUL) and a leading '.' become '_';
// an empty run is "tcgd".
std::string bundleBaseName(const std::string& run, int rank, pid_t pid);

// Creates DIR/BASE.tcgd-memory (or .tcgd-tensor for `kind`), or BASE-2,
// BASE-3, ... when taken (a pid reused within one output directory, a rerun
// with the same name). On failure the Status says why the directory cannot
// take bundles.
Status openBundle(const std::string& dir, const std::string& base, proto::BundleWriter* writer,
                  proto::BundleKind kind = proto::BundleKind::kMemory);

}  // namespace tcgd::recorder
