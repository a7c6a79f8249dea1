/* t4.h - Kernel Tuner's T4 results format: kt's tuning results out to it, and a T4 file in again
 * as the evaluations of a recorded space (recorded.h), so that a space measured by Kernel Tuner
 * (or by kt) can be replayed by the search without a GPU.
 *
 * T4 is the "Open Autotuning Results Schema" (results-schema.json, schema_version 1.0.0, as
 * Kernel Tuner ships it in kernel_tuner/schema/T4/1.0.0/; the autotuning methodology's
 * schemas/T4.json adds the optional "metadata" object).  What kt writes:
 *
 *   schema_version  "1.0.0"
 *   metadata        compute_api "CUDA", device, autotuner "kt", autotuner_version, timestamp (when
 *                   tuning began), timeunit "milliseconds", and "kt": kernel, shape, types, arch,
 *                   the GPU's identity, the cache key, the chosen configuration, the search
 *   results         one per evaluated configuration, in evaluation order: configuration, times
 *                   ({}: kt keeps no per-configuration times), invalidity, correctness,
 *                   measurements (time, time_spread in ms; registers, smem_static, local_bytes),
 *                   objectives ["time"], and "kt": {status, message}
 *
 * How kt's statuses map to invalidity and correctness is in docs/cache.md ("Export and import").
 * Writing never fails (a record or a result is turned into text); reading checks everything.
 */
#ifndef KT_T4_H
#define KT_T4_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"
#include "result.h"
#include "tmpl.h"
#include "util.h"

#define KT_T4_SCHEMA_VERSION "1.0.0"

/* A cache record's evaluations as a T4 document (a new string).  Needs no template: records
 * keep each configuration as parameter name -> value. */
char *kt_t4_from_record(const kt_record *r);

/* One tuning run of t at shape on gpu (kt tune) as a T4 document (a new string). */
char *kt_t4_from_result(const kt_tmpl *t, const int64_t *shape, const kt_gpu_id *gpu, const kt_tune_result *r);
/* kt_t4_from_result written to path atomically. */
int kt_t4_write_result(const char *path, const kt_tmpl *t, const int64_t *shape, const kt_gpu_id *gpu,
		       const kt_tune_result *r, kt_err *err);

/* A T4 file read as evaluations of a template at a shape.  Owns everything; kt_t4_space_free. */
typedef struct kt_t4_space {
	kt_tune_result result; /* one evaluation per result kept, in the file's order; best: the fastest ok */
	kt_gpu_id gpu;         /* the device the file names (all of kt's identity when kt wrote it); else zeroed */
	size_t skipped;        /* results marked "constraints" whose configuration t's constraints exclude */
} kt_t4_space;

/* Reads the T4 document text (path names it in messages) as evaluations of t at shape.  Checks
 * the fields and types that T4 requires of every result, each configuration against t's declared
 * values and its constraints at shape, that no configuration repeats, and the kernel, shape,
 * types and arch that kt's metadata names (when the file has it) against t.  0 on success; -1 with err
 * naming path, the entry ("results[3]") and what is wrong; out is then empty. */
int kt_t4_read(const char *path, const char *text, size_t len, const kt_tmpl *t, const int64_t *shape,
	       kt_t4_space *out, kt_err *err);
void kt_t4_space_free(kt_t4_space *s);

/* The string metadata.kt.NAME of a T4 document that kt wrote ("arch": "90", "types":
 * "T=half"), so a command can parse the template as it was tuned before reading the results:
 * 0 with out set when present, 1 when absent (or the text is no such document). */
int kt_t4_kt_field(const char *text, size_t len, const char *name, kt_buf *out);

#endif
