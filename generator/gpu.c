/* gpu.c - what every GPU backend shares: choosing one by name from the executable's table,
 * finding a kernel in a module, and the host-side conversions of element types (half and
 * bfloat16 included). */
#include "gpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kt_gpu_arch(const kt_gpu_id *id, char *out, size_t n)
{
	snprintf(out, n, "%d%d", id->cc_major % 100, id->cc_minor % 10);
}

const kt_gpu_ops *kt_gpu_backend(const char *name)
{
	const kt_gpu_ops *ops;
	for (size_t i = 0; (ops = kt_gpu_backend_at(i)); i++)
		if (!strcmp(ops->name, name ? name : "cuda"))
			return ops;
	return NULL;
}

int kt_gpu_backend_check(const char *name, kt_err *err)
{
	if (kt_gpu_backend(name))
		return 0;
	kt_buf have = {0};
	const kt_gpu_ops *ops;
	for (size_t i = 0; (ops = kt_gpu_backend_at(i)); i++)
		kt_buf_printf(&have, "%s%s", i ? ", " : "", ops->name);
	kt_fail(err, "no GPU backend '%s' (this kt has: %s)", name, kt_buf_str(&have));
	kt_buf_free(&have);
	return -1;
}

/* The last name of a mangled nested name "N<len><name>...E" at p (after "_Z"): its length in
 * *len, or NULL. */
static const char *nested_last(const char *p, long *len)
{
	const char *last = NULL;
	char *end;
	for (p++; *p >= '1' && *p <= '9'; p = end + *len) {
		*len = strtol(p, &end, 10);
		if ((long)strnlen(end, (size_t)*len) < *len)
			return NULL;
		last = end;
	}
	return *p == 'E' ? last : NULL;
}

int kt_gpu_name_matches(const char *sym, const char *name)
{
	if (!strcmp(sym, name))
		return 1;
	if (strncmp(sym, "_Z", 2))
		return 0;
	char *end;
	long len = 0;
	const char *at = sym[2] == 'N' ? nested_last(sym + 2, &len) : NULL; /* in a namespace (packed variants) */
	if (!at) {
		len = strtol(sym + 2, &end, 10);
		at = end != sym + 2 ? end : NULL;
	}
	return at && len == (long)strlen(name) && !strncmp(at, name, (size_t)len);
}

int kt_gpu_function(kt_gpu *g, void *mod, const char *name, void **fn, kt_err *err)
{
	if (g->ops->function(g, mod, name, fn) == 0)
		return 0;
	const char **names = NULL;
	void **fns = NULL;
	size_t n = 0;
	if (g->ops->functions(g, mod, &names, &fns, &n, err))
		return -1;
	int rc = -1;
	for (size_t i = 0; i < n && rc; i++)
		if (kt_gpu_name_matches(names[i], name)) {
			*fn = fns[i];
			rc = 0;
		}
	if (rc) {
		kt_buf have = {0};
		for (size_t i = 0; i < n; i++)
			kt_buf_printf(&have, "%s%s", i ? ", " : "", names[i]);
		kt_fail(err, "no kernel '%s' in the module (it has: %s)", name, n ? kt_buf_str(&have) : "none");
		kt_buf_free(&have);
	}
	free(names);
	free(fns);
	return rc;
}

/* ---- half and bfloat16 ---------------------------------------------------------------- */

static float half_to_float(uint16_t h)
{
	int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
	float v;
	if (exp == 0)
		v = ldexpf((float)man, -24);
	else if (exp == 31)
		v = man ? NAN : INFINITY;
	else
		v = ldexpf((float)(man | 0x400), exp - 25);
	return sign ? -v : v;
}

static uint16_t float_to_half(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
	if (isnan(f))
		return sign | 0x7e00;
	float a = fabsf(f);
	if (a >= 65520.0f) /* rounds to infinity */
		return sign | 0x7c00;
	if (a < ldexpf(1.0f, -14)) { /* subnormal: a multiple of 2^-24, rounded to even */
		float m = nearbyintf(ldexpf(a, 24));
		return sign | (uint16_t)m;
	}
	int e;
	float fr = frexpf(a, &e); /* a = fr * 2^e, fr in [0.5, 1) */
	float m = nearbyintf(ldexpf(fr, 11)); /* 11 significant bits */
	if (m >= 2048.0f) {
		m /= 2;
		e++;
	}
	return sign | (uint16_t)((e + 14) << 10) | (uint16_t)((int)m & 0x3ff);
}

static float bf16_to_float(uint16_t b)
{
	uint32_t x = (uint32_t)b << 16;
	float f;
	memcpy(&f, &x, 4);
	return f;
}

static uint16_t float_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	if (isnan(f))
		return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fff + ((x >> 16) & 1); /* round to nearest even */
	return (uint16_t)(x >> 16);
}

double kt_elem_get(kt_etype t, const void *base, size_t i)
{
	switch (t) {
	case KT_HALF: return half_to_float(((const uint16_t *)base)[i]);
	case KT_BF16: return bf16_to_float(((const uint16_t *)base)[i]);
	case KT_F32: return ((const float *)base)[i];
	case KT_F64: return ((const double *)base)[i];
	case KT_I32: return ((const int32_t *)base)[i];
	case KT_I64: return (double)((const int64_t *)base)[i];
	case KT_U8: return ((const uint8_t *)base)[i];
	case KT_NETYPES: break;
	}
	return NAN;
}

void kt_elem_set(kt_etype t, void *base, size_t i, double v)
{
	switch (t) {
	case KT_HALF: ((uint16_t *)base)[i] = float_to_half((float)v); break;
	case KT_BF16: ((uint16_t *)base)[i] = float_to_bf16((float)v); break;
	case KT_F32: ((float *)base)[i] = (float)v; break;
	case KT_F64: ((double *)base)[i] = v; break;
	case KT_I32: ((int32_t *)base)[i] = (int32_t)llround(v); break;
	case KT_I64: ((int64_t *)base)[i] = (int64_t)llround(v); break;
	case KT_U8: ((uint8_t *)base)[i] = (uint8_t)llround(v); break;
	case KT_NETYPES: break;
	}
}

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double unit_at(uint64_t seed, uint64_t k) { return (double)(mix64(seed ^ (k * 0xd1b54a32d192ed03ULL)) >> 11) * 0x1.0p-53; }

double kt_fill_value(const kt_fill *f, uint64_t seed, uint64_t i, int is_float)
{
	static const double two_pi = 6.283185307179586;
	double u1 = unit_at(seed, 3 * i), u2 = unit_at(seed, 3 * i + 1), v;
	switch (f->kind) {
	case KT_FILL_NORMAL: v = f->a + f->b * sqrt(-2.0 * log(u1 > 1e-300 ? u1 : 1e-300)) * cos(two_pi * u2); break;
	case KT_FILL_INT: v = floor(f->a + u1 * (f->b - f->a + 1)); break;
	case KT_FILL_CONST: v = f->a; break;
	default: v = f->a + (f->b - f->a) * u1; break;
	}
	if (is_float && f->neginf > 0 && unit_at(seed, 3 * i + 2) < f->neginf)
		v = -INFINITY;
	return v;
}

int kt_elem_close(double got, double want, double atol, double rtol)
{
	if (isnan(got) || isnan(want))
		return 0;
	if (isinf(got) || isinf(want))
		return got == want;
	return fabs(got - want) <= atol + rtol * fabs(want);
}
