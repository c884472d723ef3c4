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

#include <stdint.h>

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
#define TCGD_NOT_SELECTED 4  /* tcgd_probe: no TCGD_TENSOR rule selects it (or TCGD_TENSOR is unset) */
#define TCGD_UNKNOWN_MEMORY 5 /* tcgd_probe: the bytes are not inside one device allocation tcgd knows */
#define TCGD_NOT_PROBED 6    /* tcgd_probe: selected, but not observed (counted in the bundle: device not
                                ready, another context, a table full) */

/* Element types of tcgd_probe (the .tcgd-tensor bundle's dtype codes).
 * TCGD_DTYPE_BYTES observes the bytes by hash only (no statistics): fp8
 * formats other than the two below, complex, anything else. */
#define TCGD_DTYPE_BYTES 0
#define TCGD_DTYPE_FLOAT32 1
#define TCGD_DTYPE_FLOAT16 2
#define TCGD_DTYPE_BFLOAT16 3
#define TCGD_DTYPE_FLOAT64 4
#define TCGD_DTYPE_INT8 5
#define TCGD_DTYPE_UINT8 6
#define TCGD_DTYPE_INT16 7
#define TCGD_DTYPE_INT32 8
#define TCGD_DTYPE_INT64 9
#define TCGD_DTYPE_BOOL 10
#define TCGD_DTYPE_FLOAT8_E4M3FN 11
#define TCGD_DTYPE_FLOAT8_E5M2 12
#define TCGD_DTYPE_UINT16 13
#define TCGD_DTYPE_UINT32 14
#define TCGD_DTYPE_UINT64 15

#define TCGD_PROBE_MAX_DIMS 16

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

/* Observes a named tensor, like an argument of a kernel launched on
 * `stream` at this point of the program: fingerprinted on the GPU (and
 * recorded, printed or checked as TCGD_TENSOR's rules say) after the work
 * already queued on `stream`, in eager execution and, while `stream`
 * captures, as a node of the graph that every replay runs. Observations are
 * keyed by (name, invocation): the invocation counts this name's probes from
 * 0 in the process. Asynchronous: returns before the GPU ran it; never
 * synchronizes.
 *   name     1..1023 bytes; TCGD_TENSOR's kernel= matches it
 *   ptr      the tensor's first byte (device memory inside one allocation)
 *   bytes    the bytes observed from ptr (> 0); for a strided tensor the
 *            span its elements cover (the caller passes a contiguous one or
 *            a contiguous copy: tcgd.probe does)
 *   dtype    TCGD_DTYPE_*
 *   ndim     0..TCGD_PROBE_MAX_DIMS; shape and strides (in elements) have
 *            ndim entries (NULL when ndim is 0; strides NULL: contiguous)
 *   stream   the CUstream / cudaStream_t (NULL: the legacy default stream)
 * Returns TCGD_OK, TCGD_DISABLED, TCGD_INVALID, TCGD_NOT_SELECTED,
 * TCGD_UNKNOWN_MEMORY or TCGD_NOT_PROBED. Selected only when TCGD_TENSOR
 * selects it (any rule without probes=off whose kernel= accepts the name:
 * TCGD_TENSOR='record:probes=only' records every explicit probe). */
int tcgd_probe(const char* name, const void* ptr, uint64_t bytes, int dtype, int ndim, const int64_t* shape,
               const int64_t* strides, void* stream);

/* 1 when the agent is recording in this process (starting it if needed),
 * 0 otherwise. */
int tcgd_enabled(void);

/* The library version, "MAJOR.MINOR.PATCH". Never NULL. */
const char* tcgd_version(void);

#ifdef __cplusplus
}
#endif

#endif /* TCGD_TCGD_H_ */
