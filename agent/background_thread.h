// Threads the agent starts inside the job (the torch bridge's loader, the
// points watcher): detached, named, and with every signal blocked, so the
// job's handlers never run on a thread the job does not know and a
// process-directed signal (SIGUSR2 included) goes to the job's own threads.
#pragma once

#include <pthread.h>
#include <signal.h>

namespace tcgd::agent {

// Starts `fn(nullptr)` on a new detached thread named `name` (at most 15
// characters). False when the thread could not be created.
inline bool startBackgroundThread(void* (*fn)(void*), const char* name) {
  sigset_t all, old;
  sigfillset(&all);
  // The new thread inherits the mask in force at pthread_create.
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  const int rc = pthread_create(&thread, &attr, fn, nullptr);
  if (rc == 0 && name != nullptr) pthread_setname_np(thread, name);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return rc == 0;
}

}  // namespace tcgd::agent
