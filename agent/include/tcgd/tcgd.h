/* tcgd: the explicit C API of libtcgd.so.
 *
 * Every call works in any process, with or without CUDA, and never changes
 * what the program computes. Under LD_PRELOAD=libtcgd.so (or when linked
 * against it) the first call starts recording lazily. When the agent is
 * disabled (TCGD_ENABLE=0, a configuration error, an internal failure) the
 * calls return TCGD_DISABLED and do nothing else.
 *
 * Programs that want to run with and without tcgd can look the functions up
 * with dlsym(RTLD_DEFAULT, "tcgd_point") instead of linking.
 */
#ifndef TCGD_TCGD_H_
#define TCGD_TCGD_H_

#ifdef __cplusplus
extern "C" {
#endif

#define TCGD_VERSION_MAJOR 0
#define TCGD_VERSION_MINOR 1
#define TCGD_VERSION_PATCH 0

/* Return codes. */
#define TCGD_OK 0
#define TCGD_DISABLED 1      /* the agent is off; nothing was recorded */
#define TCGD_DROPPED 2       /* the channel was full; counted as a drop */
#define TCGD_INVALID 3       /* a NULL or over-long argument */

/* Records a named point: the moment and, with the memory collectors, the
 * state of every device's memory. name: 1..1023 bytes. */
int tcgd_point(const char* name);

/* Marks the beginning and end of a named phase (two points, named
 * "<name>/begin" and "<name>/end", whose origins say phase begin/end). */
int tcgd_phase_begin(const char* name);
int tcgd_phase_end(const char* name);

/* Adds key=value to the run's metadata (the bundle header's metadata map).
 * key: 1..255 bytes, value: 0..4095 bytes. A later value for the same key
 * wins. */
int tcgd_set_metadata(const char* key, const char* value);

/* 1 when the agent is recording in this process (starting it if needed),
 * 0 otherwise. */
int tcgd_enabled(void);

/* The library version, "MAJOR.MINOR.PATCH". Never NULL. */
const char* tcgd_version(void);

#ifdef __cplusplus
}
#endif

#endif /* TCGD_TCGD_H_ */
