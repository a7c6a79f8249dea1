/* recorded.h - a recorded space: every configuration of a template measured once at one shape
 * on one GPU, saved as a data file, so that search strategies can be run and compared without
 * a GPU (evaluations are answered from the file).
 *
 * The file (written by `kt tune --record FILE`, or synthesised by bench/search_curves --synth):
 *
 *   # kt-recording v1
 *   # template: templates/rmsnorm.cu.tmpl            as kt was given it (relative to the repo root)
 *   # shape: rows=4096,hidden=4096
 *   # types: T=bfloat16                               the type symbols' choices, when there are any
 *   # gpu: name="NVIDIA H200" cc=9.0 sms=132 l2=52428800 smem_optin=232448
 *   config,status,median_us,spread_us
 *   "BLOCK=256,VEC=8",ok,12.3450,0.0400
 *   "BLOCK=1024,VEC=8",over-limits,,
 *
 * Other `#` lines are comments.  status is one of kt_status_names; the times are given for "ok"
 * rows only.  A configuration appears at most once.
 *
 * Ownership: a kt_recorded owns everything it holds; release with kt_recorded_free.
 */
#ifndef KT_RECORDED_H
#define KT_RECORDED_H

#include <stddef.h>
#include <stdint.h>

#include "result.h"
#include "tmpl.h"
#include "util.h"

typedef struct kt_recorded kt_recorded;

/* Reads a recording of template t.  Errors name path:line and what was expected. */
int kt_recorded_load(const char *path, const kt_tmpl *t, kt_recorded **out, kt_err *err);
/* Answers one evaluation: fills status, median_us, spread_us (regs etc. -1, msg NULL; out->cfg is
 * left alone).  0 when cfg is recorded, -1 when it is not. */
int kt_recorded_eval(kt_recorded *r, const uint16_t *cfg, kt_eval *out);
/* Writes a recording of evals[0..n) (each with its cfg) atomically.  gpu may be NULL. */
int kt_recorded_write(const char *path, const kt_tmpl *t, const int64_t *shape, const kt_gpu_id *gpu,
		      const kt_eval *evals, size_t n, kt_err *err);
/* Reads only the `# template:` line of a recording, so a tool can parse the template first. */
int kt_recorded_template_path(const char *path, kt_buf *out, kt_err *err);
/* The value of the header line `# KEY: value` (e.g. "types": "T=bfloat16,U=float") into out:
 * 0 when present, 1 when absent (out empty), -1 on error. */
int kt_recorded_header(const char *path, const char *key, kt_buf *out, kt_err *err);

const int64_t *kt_recorded_shape(const kt_recorded *r); /* t->nshapes values */
const kt_gpu_id *kt_recorded_gpu(const kt_recorded *r); /* zeroed when the file names none */
size_t kt_recorded_count(const kt_recorded *r);         /* configurations recorded */
void kt_recorded_free(kt_recorded *r);

#endif
