/* fake_libcuda.c - a stand-in for the toolkit's stub driver (stubs/libcuda.so, soname
 * libcuda.so.1): fake_nvrtc.c finds it by this symbol when it is the libcuda.so.1 loaded. */
int kt_fake_stub_driver = 1;
