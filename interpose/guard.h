// The per-thread reentrancy guard of the hooks.
//
// A wrapper that finds the guard taken forwards the call and records
// nothing. That covers three cases: a hooked entry point that calls another
// (the runtime's cudaGraphLaunch calls the driver's cuGraphLaunch through
// our wrapper), the agent's own driver calls made while a hook runs (device
// lookup, kernel names, capture status), and code run by the agent outside
// any hook that must not be recorded (ScopedNoRecord).
#pragma once

namespace tcgd::interpose {

// initial-exec: one TLS load off the thread pointer, no __tls_get_addr call
// on the hot path. libtcgd.so is loaded at start-up (LD_PRELOAD or a
// link-time dependency), so its few bytes fit the static TLS block.
// constinit: no dynamic initialization, so no TLS wrapper call either.
extern constinit thread_local bool t_in_hook __attribute__((tls_model("initial-exec")));

class HookGuard {
 public:
  // True while this thread is inside a hook (or a ScopedNoRecord).
  static bool active() { return t_in_hook; }

  // Takes the guard; only constructed when active() was false.
  HookGuard() { t_in_hook = true; }
  ~HookGuard() { t_in_hook = false; }
  HookGuard(const HookGuard&) = delete;
  HookGuard& operator=(const HookGuard&) = delete;
};

// Suppresses recording on this thread for a scope, restoring the previous
// state (nests). For agent code that calls public CUDA entry points.
class ScopedNoRecord {
 public:
  ScopedNoRecord() : previous_(t_in_hook) { t_in_hook = true; }
  ~ScopedNoRecord() { t_in_hook = previous_; }
  ScopedNoRecord(const ScopedNoRecord&) = delete;
  ScopedNoRecord& operator=(const ScopedNoRecord&) = delete;

 private:
  bool previous_;
};

}  // namespace tcgd::interpose
