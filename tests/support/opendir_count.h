/* How often the process listed one folder, for tests of work done once. A
 * test program that includes this header is linked with opendir wrapped
 * (ld --wrap, tests/CMakeLists.txt): every call, the library's included,
 * is counted when its path ends with the suffix watched. */
#ifndef KERNELS_OPENDIR_COUNT_H
#define KERNELS_OPENDIR_COUNT_H

/* Counts, from now on, the opendir calls on a path that ends with
 * `suffix` (borrowed until the next call; NULL stops counting). */
void opendir_count(const char *suffix);

/* The calls counted since the last opendir_count. */
int opendir_counted(void);

#endif
