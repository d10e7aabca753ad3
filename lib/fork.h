/* fork() and the library's process-wide locks. A thread of the host may
 * fork while others are inside the library; a lock one of them held would
 * stay taken in the child for good. So library.c registers, once, when
 * the library is loaded, handlers that take every such lock before the
 * fork and release them after, in the parent and in the child: the child
 * finds each free and what it guards whole. The stages are called
 * outermost lock first, in the order their locks nest (a stage's lock is
 * never taken while one later in library.c's list is held). */
#ifndef KERNELS_LIB_FORK_H
#define KERNELS_LIB_FORK_H

#include <pthread.h>

typedef enum {
	KERNELS__FORK_PREPARE, /* before fork(): take */
	KERNELS__FORK_PARENT,  /* after, in the parent: release */
	KERNELS__FORK_CHILD    /* after, in the child: release (the only thread there) */
} kernels__fork_phase;

struct dl_phdr_info;

/* dl_iterate_phdr, never running in two threads of ours at once nor while
 * the process forks (library.c says why). */
int kernels__dl_iterate_phdr(int (*cb)(struct dl_phdr_info *info, size_t size, void *data), void *data);

/* Takes `m` before the fork, releases it after. */
void kernels__fork_mutex(pthread_mutex_t *m, kernels__fork_phase phase);

/* Each stage's locks, in library.c's order. */
void kernels__hub_fork_ua(kernels__fork_phase phase);    /* hub.c: the User-Agent's (a copy, no detection) */
void kernels__memo_fork(kernels__fork_phase phase);      /* memo.c: takes the loader's inside */
void kernels__loader_fork(kernels__fork_phase phase);    /* loader.c: loaded kernels, mapped modules */
void kernels__deps_fork(kernels__fork_phase phase);      /* deps.c: kernels loaded by dependency */
void kernels__signature_fork(kernels__fork_phase phase); /* signature.c: trust roots */
void kernels__origin_fork(kernels__fork_phase phase);    /* origin.c: origins that did not answer */
void kernels__cuda_facts_fork(kernels__fork_phase phase); /* cuda_facts.c: the environment first seen */
void kernels__hub_fork_share(kernels__fork_phase phase); /* hub.c: libcurl's shared DNS and TLS sessions */

#endif
