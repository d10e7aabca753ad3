/* Internal: the CUDA facts of the process (driver and runtime versions,
 * GPUs), detected once, never creating a CUDA context or initialising the
 * driver for a host that did not (cuda_facts.c says how). */
#ifndef KERNELS_LIB_CUDA_FACTS_H
#define KERNELS_LIB_CUDA_FACTS_H

#include "config.h"
#include "kernels/system.h"

typedef struct {
	int runtime_version; /* major*100+minor; 0: none found */
	int driver_version;  /* the CUDA version the driver supports; 0: no driver */
	int gpu_count;       /* as CUDA numbers them (CUDA_VISIBLE_DEVICES applied) */
	int gpu_archs[KERNELS_MAX_GPUS]; /* compute capability major*10+minor */
} kernels__cuda_facts;

/* Captures CUDA_VISIBLE_DEVICES and LD_LIBRARY_PATH from the first
 * configuration that calls (both are fixed for the process). Thread-safe. */
void kernels__cuda_env_from(const kernels__config *cfg);

/* The facts, detected on the first call (pthread_once); read-only after. */
const kernels__cuda_facts *kernels__cuda_facts_get(void);

/* CUDA's current device of a runtime the host loaded; else 0. */
int kernels__cuda_current_device(void);

#endif
