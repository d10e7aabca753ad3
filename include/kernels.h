/*
 * libkernels: fetch compute kernels from the Hugging Face Kernel Hub and
 * load them into this process.
 *
 * One header per concept lives under kernels/; this one includes them all.
 * Conventions: functions return 0 or a negative KERNELS_E* code and leave a
 * thread-local message in kernels_error_last(); every pointer's owner is
 * documented where it is returned; all functions are thread-safe.
 *
 * libcurl: libkernels calls curl_global_init(CURL_GLOBAL_DEFAULT) once per
 * process and never curl_global_cleanup, so a host may use libcurl too.
 * With libcurl 7.84 or later built thread-safe (CURL_VERSION_THREADSAFE in
 * curl_version_info()->features) that call is made on the first request and
 * nothing more is asked of the host. With an older libcurl, whose global
 * init must not run while another thread uses libcurl, libkernels makes it
 * when the library is loaded: a host linked to libkernels is then safe; a
 * host that loads libkernels with dlopen() while other threads use libcurl
 * must call curl_global_init() itself before starting them (libkernels' call
 * then only counts one more user). A host must not call curl_global_cleanup()
 * while libkernels may still make requests.
 *
 * Descriptors: everything libkernels opens (connections, cache locks,
 * blobs, folders) is close-on-exec from the moment it exists, so a worker
 * the host fork+execs, even while a call runs in another thread, inherits
 * none of it (a child holding a lock file would keep the cache locked).
 * The exception is libcurl's own: before 8.8 it opens each multi handle's
 * wake-up socket pair without the flag; libkernels holds one or two such
 * pairs for the length of a call that goes online. Between calls
 * libkernels holds one descriptor per native module it has mapped, for
 * the life of the process: the module was mapped through it (the verified
 * file, by its /proc/self/fd name), and a number given back and reused
 * would make the dynamic loader hand out that module for another. A
 * server that loads hundreds of distinct builds over its life needs as
 * many descriptors under its RLIMIT_NOFILE.
 *
 * fork() without exec (a preloading server's workers, Python's fork start
 * method): the child may call libkernels; what the parent loaded stays
 * loaded and is found again. libkernels takes its process-wide locks
 * across fork() (pthread_atfork handlers, registered when it is loaded), so
 * a child forked while other threads are inside libkernels finds them
 * free; none is held while a kernel's constructors run, so a fork waits at
 * most for a few instructions of another thread. A call another thread had
 * under way does not go on in the child. A callback libkernels calls (log,
 * progress) must not fork() without exec. glibc and libcurl are not
 * fork-safe themselves: a child forked while another thread was inside
 * either may not go online; exec a fresh worker where that matters.
 *
 * Unloading: the shared library is never unloaded once loaded (linked with
 * -z nodelete), as the kernels it maps are never unmapped. A host's
 * dlclose() of a plugin linked to it leaves it, the kernels it loaded and
 * its process-wide state in place, and the next load of the plugin finds
 * them again instead of mapping and holding every kernel anew.
 */
#ifndef KERNELS_H
#define KERNELS_H

#include "kernels/common.h"
#include "kernels/system.h"
#include "kernels/options.h"
#include "kernels/revision.h"
#include "kernels/variant.h"
#include "kernels/metadata.h"
#include "kernels/kernel.h"
#include "kernels/download.h"
#include "kernels/cache.h"
#include "kernels/manifest.h"
#include "kernels/lock.h"
#include "kernels/get.h"
#include "kernels/info.h"
#include "kernels/project.h"
#include "kernels/wheel.h"
#include "kernels/tvm_ffi.h"
#include "kernels/signature.h"
#include "kernels/bundle.h"

#endif
