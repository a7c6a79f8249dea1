/* caller.c - a C program that uses two generated launchers the way a user's C code would:
 * through their headers, with C spellings of the element types.  Without a GPU it checks the
 * part of the dispatch that needs none (a shape that no configuration fits is refused before
 * any CUDA call); with a GPU it runs both kernels and checks the results against the CPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kt_mini.h"
#include "kt_mini_f32.h"

static float rms_ref(const float *x, int n, float eps)
{
	double ss = 0;
	for (int i = 0; i < n; i++)
		ss += (double)x[i] * x[i];
	return (float)(1.0 / sqrt(ss / n + eps));
}

/* Runs kt_mini_f32 at rows x hidden and compares with the CPU; 0 when it agrees. */
static int run_f32(int rows, int hidden)
{
	size_t n = (size_t)rows * hidden;
	float *x = malloc(n * sizeof *x), *w = malloc((size_t)hidden * sizeof *w), *o = malloc(n * sizeof *o);
	float *dx, *dw, *dout;
	for (size_t i = 0; i < n; i++)
		x[i] = (float)((i * 7919) % 17) / 8.0f - 1.0f;
	for (int i = 0; i < hidden; i++)
		w[i] = 0.5f + (float)(i % 5) / 4.0f;
	cudaMalloc((void **)&dx, n * sizeof *x);
	cudaMalloc((void **)&dw, (size_t)hidden * sizeof *w);
	cudaMalloc((void **)&dout, n * sizeof *o);
	cudaMemcpy(dx, x, n * sizeof *x, cudaMemcpyHostToDevice);
	cudaMemcpy(dw, w, (size_t)hidden * sizeof *w, cudaMemcpyHostToDevice);
	cudaError_t e = kt_mini_f32(dout, dx, dw, rows, hidden, 1e-6f, 0);
	if (e == cudaSuccess)
		e = cudaDeviceSynchronize();
	int bad = e != cudaSuccess;
	if (bad)
		fprintf(stderr, "kt_mini_f32 %dx%d: %s\n", rows, hidden, cudaGetErrorString(e));
	cudaMemcpy(o, dout, n * sizeof *o, cudaMemcpyDeviceToHost);
	for (int r = 0; r < rows && !bad; r++) {
		float s = rms_ref(x + (size_t)r * hidden, hidden, 1e-6f);
		for (int i = 0; i < hidden && !bad; i++) {
			float want = x[(size_t)r * hidden + i] * s * w[i];
			if (fabsf(o[(size_t)r * hidden + i] - want) > 1e-4f + 1e-4f * fabsf(want)) {
				fprintf(stderr, "kt_mini_f32 %dx%d: [%d][%d] = %g, want %g\n", rows, hidden, r, i,
					o[(size_t)r * hidden + i], want);
				bad = 1;
			}
		}
	}
	cudaFree(dx);
	cudaFree(dw);
	cudaFree(dout);
	free(x);
	free(w);
	free(o);
	return bad;
}

/* Runs kt_mini (half) on x = w = 1: every output is 1/sqrt(1 + eps), 1.0 in half precision. */
static int run_half(int rows, int hidden)
{
	size_t n = (size_t)rows * hidden;
	unsigned short *h = malloc(n * sizeof *h);
	__half_raw *dx, *dout;
	for (size_t i = 0; i < n; i++)
		h[i] = 0x3c00; /* 1.0 */
	cudaMalloc((void **)&dx, n * 2);
	cudaMalloc((void **)&dout, n * 2);
	cudaMemcpy(dx, h, n * 2, cudaMemcpyHostToDevice);
	cudaMemset(dout, 0, n * 2);
	cudaError_t e = kt_mini(dout, dx, dx, rows, hidden, 1e-6f, 0);
	if (e == cudaSuccess)
		e = cudaDeviceSynchronize();
	int bad = e != cudaSuccess;
	if (bad)
		fprintf(stderr, "kt_mini %dx%d: %s\n", rows, hidden, cudaGetErrorString(e));
	cudaMemcpy(h, dout, n * 2, cudaMemcpyDeviceToHost);
	for (size_t i = 0; i < n && !bad; i++)
		if (h[i] != 0x3c00 && h[i] != 0x3bff) {
			fprintf(stderr, "kt_mini %dx%d: element %zu = 0x%04x, want 1.0 (0x3c00)\n", rows, hidden, i, h[i]);
			bad = 1;
		}
	cudaFree(dx);
	cudaFree(dout);
	free(h);
	return bad;
}

int main(void)
{
	/* hidden = 7: BLOCK * VEC <= 4 * hidden holds for no configuration of either kernel. */
	cudaError_t e = kt_mini(NULL, NULL, NULL, 2, 7, 1e-6f, 0);
	if (e != cudaErrorInvalidValue) {
		fprintf(stderr, "kt_mini at an infeasible shape returned %d, want cudaErrorInvalidValue\n", (int)e);
		return 1;
	}
	printf("infeasible shape refused\n");
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		printf("no GPU: kernels not run\n");
		return 0;
	}
	if ((e = kt_mini_f32(NULL, NULL, NULL, 0, 4096, 1e-6f, 0)) != cudaSuccess) {
		fprintf(stderr, "kt_mini_f32 with no rows returned %s, want success (nothing to do)\n", cudaGetErrorString(e));
		return 1;
	}
	static const int shapes[][2] = {{64, 4096}, {8, 1024}, {40, 2050}, {8, 1025}, {3, 100}, {64, 16384}};
	int bad = 0;
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
		bad |= run_f32(shapes[i][0], shapes[i][1]);
		bad |= run_half(shapes[i][0], shapes[i][1]);
	}
	printf(bad ? "GPU results: FAILED\n" : "GPU results: ok\n");
	return bad;
}
