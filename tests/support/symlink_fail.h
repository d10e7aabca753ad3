/* Links refused, as on a filesystem that has none (exFAT, some network and
 * FUSE mounts). A test program that includes this header is linked with
 * symlinkat wrapped (ld --wrap, tests/CMakeLists.txt): while refusal is
 * on, every call from the program and the library's static build fails
 * with EPERM, as Linux answers there, and is counted; or with another
 * errno, as a full or failing disk answers anywhere. */
#ifndef KERNELS_SYMLINK_FAIL_H
#define KERNELS_SYMLINK_FAIL_H

/* Refuses every link from now on (1), or none (0), and zeroes the count. */
void symlink_fail_refuse(int on);

/* Refuses every link from now on with `err` (0: none), and zeroes the count. */
void symlink_fail_with(int err);

/* The links refused since the last symlink_fail_refuse. */
int symlink_fail_refused(void);

#endif
