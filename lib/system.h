/* Internal: the system description variant resolution matches against. */
#ifndef KERNELS_LIB_SYSTEM_H
#define KERNELS_LIB_SYSTEM_H

#include "kernels/system.h"
#include "config.h"

/* Options (cfg->system_override), then KERNELS_* environment, then
 * detection. `*out` owned by the caller (kernels_system_free). */
int kernels__system_detect(const kernels__config *cfg, kernels_system **out);


/* The backend as arch variant names spell it: "cu130", "rocm63", "cpu". */
void kernels__system_backend_str(const kernels_system *s, char *buf, size_t size);


#endif
