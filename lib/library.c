/* Library-wide facts: its version, the one way to release the strings
 * and arrays the API returns (kernels_free), and the fork() handlers that
 * keep every stage's process-wide locks usable in a child (fork.h).
 * Process-wide initialisation of the dependencies lives with the stage
 * that needs it, behind pthread_once. */
#include "kernels/common.h"
#include "fork.h"

#include <link.h>
#include <pthread.h>
#include <stdlib.h>

const char *kernels_version(void)
{
	return KERNELS_VERSION_STRING;
}

int kernels_version_number(void)
{
	return KERNELS_VERSION_NUMBER;
}

/* Everything the library hands the caller to release (strings, arrays,
 * string arrays packed into one block) is one malloc'ed block. */
void kernels_free(void *ptr)
{
	free(ptr);
}

/* ---- fork() (fork.h) ---------------------------------------------------- */

void kernels__fork_mutex(pthread_mutex_t *m, kernels__fork_phase phase)
{
	if (phase == KERNELS__FORK_PREPARE)
		pthread_mutex_lock(m);
	else
		pthread_mutex_unlock(m);
}

/* glibc's dl_iterate_phdr holds a lock of its own that fork() does not
 * free in the child: a thread of ours inside it at the fork would leave
 * the child's next call (the memo's counters, the torch search) waiting
 * for good. Ours go through here, under a lock taken across fork. */
static pthread_mutex_t phdr_lock = PTHREAD_MUTEX_INITIALIZER;

int kernels__dl_iterate_phdr(int (*cb)(struct dl_phdr_info *info, size_t size, void *data), void *data)
{
	int rc;

	pthread_mutex_lock(&phdr_lock);
	rc = dl_iterate_phdr(cb, data);
	pthread_mutex_unlock(&phdr_lock);
	return rc;
}

static void phdr_fork(kernels__fork_phase phase)
{
	kernels__fork_mutex(&phdr_lock, phase);
}

typedef void (*fork_fn)(kernels__fork_phase phase);

/* Outermost first: taken in this order, released in the reverse. */
static const fork_fn stages[] = {
	kernels__hub_fork_ua,
	kernels__memo_fork,
	kernels__loader_fork,
	kernels__deps_fork,
	kernels__signature_fork,
	kernels__origin_fork,
	kernels__cuda_facts_fork,
	kernels__hub_fork_share,
	phdr_fork,
};

#define NSTAGES (sizeof(stages) / sizeof(stages[0]))

static void fork_prepare(void)
{
	size_t i;

	for (i = 0; i < NSTAGES; i++)
		stages[i](KERNELS__FORK_PREPARE);
}

static void fork_parent(void)
{
	size_t i;

	for (i = NSTAGES; i-- > 0;)
		stages[i](KERNELS__FORK_PARENT);
}

static void fork_child(void)
{
	size_t i;

	for (i = NSTAGES; i-- > 0;)
		stages[i](KERNELS__FORK_CHILD);
}

/* Registered when the library is loaded, before any thread can be inside
 * it; glibc drops the handlers when the library is unloaded (dlclose). */
__attribute__((constructor)) static void fork_handlers_at_load(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}
