/*
 * libkernels: common definitions shared by every topic header.
 *
 * Error model: every function that can fail returns an int, 0 on success or
 * a negative KERNELS_E* code. The thread-local message behind the failure
 * (what failed and what to do about it) is read with kernels_error_last()
 * (docs/errors.md). Memory: what the library returns the caller releases
 * with kernels_free() (strings, arrays) or the object's typed _free.
 *
 * Every function of this header and of every header under kernels/ is part
 * of libkernels since 1.0 and may be called from any thread unless its
 * comment says otherwise (docs/threading.md); their errors are per thread.
 */
#ifndef KERNELS_COMMON_H
#define KERNELS_COMMON_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KERNELS_VERSION_MAJOR 1
#define KERNELS_VERSION_MINOR 0
#define KERNELS_VERSION_PATCH 0
#define KERNELS_VERSION_STRING "1.0.0"
/** Encoded as MAJOR * 10000 + MINOR * 100 + PATCH, for compile-time checks. */
#define KERNELS_VERSION_NUMBER \
	(KERNELS_VERSION_MAJOR * 10000 + KERNELS_VERSION_MINOR * 100 + KERNELS_VERSION_PATCH)

#if defined(__GNUC__)
#define KERNELS_EXTERN(type) __attribute__((visibility("default"))) type
#else
#define KERNELS_EXTERN(type) type
#endif

/** Marks a function that is to go in the next major version; compilers warn
 *  where it is used (docs/api-stability.md, "Deprecation"). */
#if defined(__GNUC__)
#define KERNELS_DEPRECATED(why) __attribute__((deprecated(why)))
#else
#define KERNELS_DEPRECATED(why)
#endif

/** Error codes. 0 is success; every error is negative. */
typedef enum {
	KERNELS_OK = 0,
	KERNELS_ERROR = -1,        /**< unexpected failure; see the message */
	KERNELS_EINVAL = -2,       /**< a malformed argument (repo id, revision, path) */
	KERNELS_ENOTFOUND = -3,    /**< repo, revision, file or variant does not exist */
	KERNELS_EAMBIGUOUS = -4,   /**< a short commit id matches several commits */
	KERNELS_ENOMATCH = -5,     /**< no version satisfies a spec / no variant fits */
	KERNELS_EAUTH = -6,        /**< private or gated repo: token missing or refused */
	KERNELS_ENETWORK = -7,     /**< the Hub could not be reached */
	KERNELS_EHTTP = -8,        /**< the Hub answered with an unexpected status */
	KERNELS_EOFFLINE = -9,     /**< offline, and what is needed is not cached */
	KERNELS_EINTEGRITY = -10,  /**< a hash or digest does not match */
	KERNELS_EIO = -11,         /**< a file system operation failed */
	KERNELS_ENOMEM = -12,      /**< out of memory */
	KERNELS_ELOAD = -13,       /**< dlopen or symbol lookup failed */
	KERNELS_EUNTRUSTED = -14,  /**< publisher not trusted and not opted in */
	KERNELS_EPARSE = -15,      /**< malformed JSON, TOML, lock file or version spec */
	KERNELS_EUNSAFE = -16,     /**< a path or link escapes its folder */
	KERNELS_ESIGNATURE = -17,  /**< a sigstore signature is missing where required, or present and invalid */
	KERNELS_EBUSY = -18        /**< the cache folder is in use: a download is writing it */
} kernels_error_code;

/**
 * The message of the last error raised on the calling thread: what failed
 * and what to do. Never NULL ("no error" when there is none). The string is
 * owned by the library and valid until the next libkernels call on this
 * thread that fails or clears the error.
 */
KERNELS_EXTERN(const char *) kernels_error_last(void);

/** The code of the last error on the calling thread, or KERNELS_OK. */
KERNELS_EXTERN(int) kernels_error_last_code(void);

/** Forgets the calling thread's last error. */
KERNELS_EXTERN(void) kernels_error_clear(void);

/**
 * A short static description of an error code ("no matching version").
 * Never NULL; unknown codes give "unknown error".
 */
KERNELS_EXTERN(const char *) kernels_strerror(int code);

/** The library's version at run time, e.g. "1.0.0". Static string. */
KERNELS_EXTERN(const char *) kernels_version(void);

/** The library's version at run time as KERNELS_VERSION_NUMBER encodes it. */
KERNELS_EXTERN(int) kernels_version_number(void);

/**
 * Releases a string or an array that libkernels returned to the caller:
 * kernels_cache_path(), kernels_lock_to_string(), kernels_wheel_filename(),
 * kernels_wheel_write(), kernels_versions_list(), kernels_variants_list(),
 * the array of kernels_kernel_list(). An array of strings is one
 * allocation: this one call releases the array and its strings. Objects
 * have their own typed _free (kernels_lock_free, ...); loaded kernels
 * kernels_kernel_close(). Never pass memory the library did not return.
 *
 * @param ptr  what the library returned; NULL is fine.
 */
KERNELS_EXTERN(void) kernels_free(void *ptr);

/** Severity of a message passed to a kernels_log_cb. */
typedef enum {
	KERNELS_LOG_DEBUG = 0,
	KERNELS_LOG_INFO = 1,
	KERNELS_LOG_WARNING = 2
} kernels_log_level;

/**
 * Receives warnings ("a newer major version v2 exists") and, when asked,
 * debug messages. `message` is only valid during the call.
 */
typedef void (*kernels_log_cb)(kernels_log_level level, const char *message, void *payload);

#ifdef __cplusplus
}
#endif

#endif
