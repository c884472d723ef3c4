// The records that open and close a session in the channel.
//
// Session start (agent/channel/record.h, kRecordSessionStart): three blobs,
// then the record naming them:
//   schema    serializeSchema() lines (agent/schema.h)
//   config    "TCGD_KEY=value" lines, every key with the value in force
//   identity  "key=value" lines: run, rank, world_size, local_rank, group_id,
//             host, tool_version, output_dir (absolute), argv.N, meta.KEY
// Values never contain a newline: one in an argument or a value is written
// as a space.
#pragma once

#include <cstdint>
#include <string>

#include "channel/channel.h"
#include "channel/record.h"
#include "channel/status.h"
#include "config.h"

namespace tcgd::agent {

// The identity blob's text for `config`, with `output_dir` already absolute.
std::string identityText(const Config& config, const std::string& output_dir);

// The config blob's text.
std::string configText(const Config& config);

// Pushes the session start. Retries a full payload ring for up to
// `timeout_ms` (the recorder drains meanwhile); fails when a blob cannot fit.
Status pushSessionStart(channel::Channel& channel, const Config& config,
                        const std::string& output_dir, uint32_t tid, int timeout_ms);

// Pushes the session-end record and marks the producer closed. Retries a
// full ring up to `retries` times, sleeping 1 ms between tries. Only
// async-signal-safe calls: the fatal-signal handler uses it.
bool pushSessionEnd(channel::Channel& channel, channel::EndReason reason, uint64_t detail,
                    uint32_t tid, int retries);

}  // namespace tcgd::agent
