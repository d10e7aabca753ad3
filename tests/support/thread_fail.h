/* Helper threads refused, for tests of the work a helper would do done in
 * line. A test program that includes this header is linked with
 * pthread_create wrapped (ld --wrap, tests/CMakeLists.txt): while refusal
 * is on, every call from the program and the library's static build fails
 * with EAGAIN, as under a process or cgroup pids limit, and is counted.
 * Threads that shared libraries start (libcurl's resolver) are not
 * touched. */
#ifndef KERNELS_THREAD_FAIL_H
#define KERNELS_THREAD_FAIL_H

/* Refuses every thread from now on (1), or none (0), and zeroes the count. */
void thread_fail_refuse(int on);

/* The threads refused since the last thread_fail_refuse. */
int thread_fail_refused(void);

#endif
