/* Allocation-failure injection for the C tests. A test program that
 * includes this header is linked with the library's allocator calls
 * (malloc, calloc, realloc, strdup, strndup, vasprintf) wrapped
 * (ld --wrap, tests/CMakeLists.txt), so it can make any one of them fail
 * and check that the failure is reported, never silently dropped. Only the
 * calling thread's allocations are counted and failed. */
#ifndef KERNELS_ALLOC_FAIL_H
#define KERNELS_ALLOC_FAIL_H

/* From now on, the calling thread's allocation number `n` (1: the next
 * one) fails as out of memory; those before and after succeed. 0: none
 * fails. Also restarts the count. */
void alloc_fail_nth(long n);

/* The calling thread's allocations since the last alloc_fail_nth. */
long alloc_fail_count(void);

/* 1 when the allocation asked for by alloc_fail_nth was reached and failed. */
int alloc_fail_fired(void);

#endif
