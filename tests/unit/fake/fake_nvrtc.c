/* fake_nvrtc.c - a stand-in for the toolkit's libnvrtc.so: the entry points `kt nvrtc` resolves.
 * Its "compile" says in the program's log what a CUDA driver loaded now would be (the process's
 * libcuda.so.1, if any: the stub fake_libcuda.c or another) and what the environment shows it
 * (CUDA_VISIBLE_DEVICES); its "cubin" is that line. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct prog {
	char log[256];
};

int nvrtcVersion(int *major, int *minor)
{
	*major = 13;
	*minor = 0;
	return 0;
}

int nvrtcCreateProgram(void **prog, const char *src, const char *name, int nheaders, const char *const *headers,
		       const char *const *includes)
{
	(void)src, (void)name, (void)nheaders, (void)headers, (void)includes;
	*prog = calloc(1, sizeof(struct prog));
	return *prog ? 0 : 1;
}

int nvrtcCompileProgram(void *prog, int nopts, const char *const *opts)
{
	(void)nopts, (void)opts;
	const char *v = getenv("CUDA_VISIBLE_DEVICES");
	void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	const char *driver = !cuda ? "none" : dlsym(cuda, "kt_fake_stub_driver") ? "the stub" : "another";
	snprintf(((struct prog *)prog)->log, sizeof ((struct prog *)prog)->log,
		 "fake nvrtc: libcuda.so.1 %s, CUDA_VISIBLE_DEVICES%s%s%s\n", driver, v ? "='" : " unset", v ? v : "",
		 v ? "'" : "");
	return 0;
}

int nvrtcGetProgramLogSize(void *prog, size_t *size)
{
	*size = strlen(((struct prog *)prog)->log) + 1;
	return 0;
}

int nvrtcGetProgramLog(void *prog, char *log)
{
	strcpy(log, ((struct prog *)prog)->log);
	return 0;
}

int nvrtcGetCUBINSize(void *prog, size_t *size)
{
	return nvrtcGetProgramLogSize(prog, size);
}

int nvrtcGetCUBIN(void *prog, char *cubin)
{
	return nvrtcGetProgramLog(prog, cubin);
}

int nvrtcDestroyProgram(void **prog)
{
	free(*prog);
	*prog = NULL;
	return 0;
}
