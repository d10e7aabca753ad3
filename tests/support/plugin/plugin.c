/* A host's plugin linked to libkernels (the shared library, public API
 * only): what test_host's unload check dlopens, uses and dlcloses. */
#include <stdint.h>
#include <stdio.h>

#include "kernels.h"

/* Gets acme/plain at v1.0.0 from `endpoint` into `cache` for a CPU system
 * and returns what its kernel_answer says; -1 on failure (on stderr). */
__attribute__((visibility("default"))) int plugin_run(const char *endpoint, const char *cache)
{
	static const kernels_system sys = { .torch_version = 211, .torch_cxx11_abi = 1, .tvm_ffi_version = -1,
					    .backend = "cpu", .cpu = "x86_64", .os = "linux", .no_gpu = 1 };
	kernels_options o;
	kernels_kernel *k = NULL;
	void *sym;
	int answer = -1;

	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.endpoint = endpoint;
	o.cache_dir = cache;
	o.offline = 0;
	o.system = &sys;
	if (kernels_get(&k, "acme/plain", "v1.0.0", &o) < 0) {
		fprintf(stderr, "plugin: %s\n", kernels_error_last());
		return -1;
	}
	if ((sym = kernels_symbol(k, "kernel_answer")))
		answer = ((int (*)(void))(uintptr_t)sym)();
	kernels_kernel_close(k);
	return answer;
}
