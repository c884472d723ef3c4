// Finding and starting tcgd-recorder for this job.
//
// The recorder is a separate program so that protobuf, file I/O and
// compression never load into the job, and so that the bundle survives the
// job's death. The agent spawns it with posix_spawn (safe in a multithreaded
// process, no fork handlers run), hands it the channel's memfd as descriptor
// 3 and waits for the spawned process to exit: the recorder daemonizes
// itself and its first process exits 0 once the daemon has attached to the
// channel, or non-zero after printing its own message.
#pragma once

#include <string>

#include "channel/channel.h"
#include "channel/status.h"

namespace tcgd::agent {

// The recorder to run: `override_path` when set (TCGD_RECORDER), otherwise
// <directory of libtcgd.so>/../bin/tcgd-recorder, which holds in the build
// tree and in the install tree alike. Fails with a message naming the path
// when it is not an executable file.
Status findRecorder(const std::string& override_path, std::string* path);

// Runs `path --channel-fd 3` with the channel on descriptor 3, stdin and
// stdout on /dev/null (the job's pipes are not held open by the daemon),
// stderr shared with the job (the recorder's messages), no other descriptors,
// default signal dispositions and mask, and the job's environment minus
// LD_PRELOAD. Waits at most `timeout_ms` for the spawned process to exit.
// OK means the recorder is attached.
Status spawnRecorder(const std::string& path, const channel::Channel& channel, int timeout_ms);

}  // namespace tcgd::agent
