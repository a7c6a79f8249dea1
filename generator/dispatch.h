/* dispatch.h - the generated launcher of one tuned kernel, and its header.
 *
 * kt_NAME(args..., stream) finds which GPU the current device is, once per device (its name,
 * compute capability, SM count and memory bandwidth), and takes a table: that model's, else the
 * table of a listed GPU of the same compute capability nearest in memory bandwidth and SM count,
 * else the generic table (the template defaults, built for every architecture of the build).  In
 * the table it picks a variant for the runtime shape (the exact shape, else the nearest tuned
 * shape whose configuration is feasible, else the table's fallback; where nothing fits, the
 * generic table's) and launches it.  The header also declares kt_NAME_table(device) and
 * kt_NAME_table_for(...), which say which table serves a device or a GPU model.
 */
#ifndef KT_DISPATCH_H
#define KT_DISPATCH_H

#include <stdint.h>

#include "gpu.h"
#include "tmpl.h"
#include "util.h"

/* One row of a table: a tuned shape and the variant chosen for it (for a fallback, shape is
 * unused).  Borrowed. */
typedef struct kt_dispatch_entry {
	const int64_t *shape;
	const uint16_t *cfg;
	const char *symbol;   /* the variant's launcher */
} kt_dispatch_entry;

typedef struct kt_dispatch_table {
	const kt_gpu_id *gpu; /* the GPU model; NULL for the generic table */
	double mem_gbs;       /* its memory bandwidth, GB/s; 0 when unknown */
	const char *arch;     /* its variants' target, "90a"; NULL for the generic table */
	int n;
	const kt_dispatch_entry *entries;
	kt_dispatch_entry fallback;
} kt_dispatch_table;

typedef struct kt_dispatch {
	const kt_tmpl *t;
	const char *name;              /* the launcher is kt_<name> */
	const char *tpath;             /* the template's absolute path, for comments */
	const int *shape_arg;          /* per shape symbol: the scalar argument that passes it */
	int ntables;
	const kt_dispatch_table *tables; /* the GPU tables (may be none) */
	const kt_dispatch_table *generic;
	int nsymbols;
	const char *const *symbols;    /* every variant's launcher, for their declarations */
} kt_dispatch;

/* kt_NAME.cu and kt_NAME.h. */
void kt_dispatch_source(const kt_dispatch *d, kt_buf *out);
void kt_dispatch_header(const kt_dispatch *d, kt_buf *out);

#endif
