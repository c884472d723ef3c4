/* A CPU program for the agent's integration tests. It links nothing of
 * tcgd: it finds the C API with dlsym(RTLD_DEFAULT), as a program that runs
 * with and without the agent would. Usage: preload_program MODE [N]. Exit
 * codes below 100 are the mode's own; 100+ mean the check failed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int (*NameFn)(const char*);
typedef int (*MetadataFn)(const char*, const char*);
typedef int (*IntFn)(void);
typedef const char* (*VersionFn)(void);

static NameFn point_fn;

static void* need(const char* name) {
  void* f = dlsym(RTLD_DEFAULT, name);
  if (f == NULL) {
    fprintf(stderr, "preload_program: %s not found (is libtcgd.so preloaded?)\n", name);
    exit(100);
  }
  return f;
}

static void points(const char* prefix, int first, int count) {
  char name[64];
  for (int i = first; i < first + count; ++i) {
    snprintf(name, sizeof(name), "%s-%d", prefix, i);
    int rc = point_fn(name);
    if (rc != 0) {
      fprintf(stderr, "preload_program: tcgd_point(%s) returned %d\n", name, rc);
      exit(101);
    }
  }
}

/* Whether a library whose path contains `what` is mapped in this process. */
static int mapped(const char* what) {
  FILE* maps = fopen("/proc/self/maps", "r");
  char line[1024];
  int found = 0;
  while (maps != NULL && fgets(line, sizeof(line), maps) != NULL)
    if (strstr(line, what) != NULL) found = 1;
  if (maps != NULL) fclose(maps);
  return found;
}

/* Whether a descriptor of this process refers to an agent channel: the
 * agent closes its own once the recorder has one. */
static int hasChannelDescriptor(void) {
  char path[64], target[256];
  for (int fd = 0; fd < 1024; ++fd) {
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, target, sizeof(target) - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    if (strstr(target, "tcgd-channel") != NULL) return 1;
  }
  return 0;
}

/* Whether this process maps an agent channel (memfd "tcgd-channel"). */
static int hasChannel(void) { return mapped("memfd:tcgd-channel"); }

static void* threadPoints(void* arg) {
  points((const char*)arg, 0, 1000);
  return NULL;
}

static void onTerm(int signo) {
  (void)signo;
  static const char msg[] = "job handler ran\n";
  ssize_t ignored = write(1, msg, sizeof(msg) - 1);
  (void)ignored;
  _exit(5);
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  const int n = argc > 2 ? atoi(argv[2]) : 1000;
  setvbuf(stdout, NULL, _IONBF, 0);

  if (strcmp(mode, "noapi") == 0) {
    /* Under LD_PRELOAD but never calling tcgd: no channel may exist. */
    puts("no api");
    return hasChannel() ? 102 : 0;
  }
  if (strcmp(mode, "exit7") == 0) {
    /* Output and exit code must be the same with and without the agent,
     * whatever state it is in. */
    puts("hello from the program");
    NameFn f = (NameFn)dlsym(RTLD_DEFAULT, "tcgd_point");
    if (f != NULL) (void)f("exit7");
    return 7;
  }

  point_fn = (NameFn)need("tcgd_point");
  if (strcmp(mode, "points") == 0) {
    points("point", 0, n);
    if (!hasChannel()) return 103;
    if (hasChannelDescriptor()) return 111;
    if (mapped("libprotobuf") || mapped("libspdlog") || mapped("libfmt")) return 104;
    return 0;
  }
  if (strcmp(mode, "fake-torch") == 0 && argc > 2) {
    /* A job that loads torch (here tests/agent/fake_torch's libc10_cuda.so)
     * but never allocates: a point starts the agent's torch helper, which
     * keeps polling the allocator; the job exits while it does. */
    if (dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL) == NULL) {
      fprintf(stderr, "preload_program: %s\n", dlerror());
      return 103;
    }
    if (point_fn("with-torch") != 0) return 101;
    usleep(50 * 1000);
    puts("done");
    return 0;
  }
  if (strcmp(mode, "points-kill") == 0) {
    points("point", 0, n);
    raise(SIGKILL);
    return 105;
  }
  if (strcmp(mode, "points-term") == 0) {
    points("point", 0, n);
    raise(SIGTERM);
    return 105;
  }
  if (strcmp(mode, "job-term-handler") == 0) {
    /* The job's own handler, installed before the agent starts, must stay. */
    signal(SIGTERM, onTerm);
    points("point", 0, n);
    raise(SIGTERM);
    return 106;
  }
  if (strcmp(mode, "fork") == 0) {
    points("parent", 0, 1);  /* starts the agent before the fork */
    pid_t child = fork();
    if (child < 0) return 107;
    if (child == 0) {
      if (hasChannel()) _exit(108);  /* the parent's channel must be unmapped */
      points("child", 0, n);
      exit(0);
    }
    printf("child %d\n", (int)child);
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 109;
    points("parent", 1, n);
    return 0;
  }
  if (strcmp(mode, "threads") == 0) {
    pthread_t t[4];
    static const char* names[4] = {"t0", "t1", "t2", "t3"};
    for (int i = 0; i < 4; ++i) pthread_create(&t[i], NULL, threadPoints, (void*)names[i]);
    for (int i = 0; i < 4; ++i) pthread_join(t[i], NULL);
    return 0;
  }
  if (strcmp(mode, "api") == 0) {
    /* Return codes of every call, printed for the test to compare. */
    NameFn begin = (NameFn)need("tcgd_phase_begin");
    NameFn end = (NameFn)need("tcgd_phase_end");
    MetadataFn meta = (MetadataFn)need("tcgd_set_metadata");
    IntFn enabled = (IntFn)need("tcgd_enabled");
    VersionFn version = (VersionFn)need("tcgd_version");
    char longname[1100];
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    printf("version %s\n", version());
    printf("enabled %d\n", enabled());
    printf("null %d\n", point_fn(NULL));
    printf("empty %d\n", point_fn(""));
    printf("long %d\n", point_fn(longname));
    longname[1023] = '\0';
    printf("max %d\n", point_fn(longname));
    printf("begin %d\n", begin("step"));
    printf("end %d\n", end("step"));
    printf("meta %d\n", meta("lr", "0.5"));
    printf("meta-null %d\n", meta(NULL, "x"));
    printf("meta-empty-key %d\n", meta("", "x"));
    return 0;
  }
  fprintf(stderr, "preload_program: unknown mode '%s'\n", mode);
  return 110;
}
