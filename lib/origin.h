/* Internal: origins, the (scheme, host, port) of a URL, for the Hub client
 * (hub.c) and the transfer engine (hub_fetch.c): the origin itself, the
 * endpoint's test that decides where the token goes, and the process's
 * memory of the origins that did not answer. No request is made here. */
#ifndef KERNELS_LIB_ORIGIN_H
#define KERNELS_LIB_ORIGIN_H

#include <stddef.h>

#include "config.h"

/* The origin of `url`, "scheme://host:port" (host lower-cased, the
 * scheme's port when the URL names none), into `buf` (cut short when it
 * does not fit); 0, or -1 when `url` does not parse. */
int kernels__hub_origin(const char *url, char *buf, size_t n);

/* 1 when `url` has the scheme, host and port of cfg->endpoint. */
int kernels__hub_same_origin(const kernels__config *cfg, const char *url);

/* ---- "did not answer" memory ------------------------------------------------ */

/* An origin (scheme, host, port) where a connection was refused, a DNS
 * lookup failed, nothing answered for a second or more, or a 5xx or 429
 * outlived the retries is remembered
 * process-wide for 30 s (mutex-protected), so the calls that follow fall
 * back to the cache at once instead of waiting for the same silence; the
 * first call after that tries again, and any other answer clears it.
 * kernels__hub_down_check: KERNELS_ENETWORK (KERNELS_EHTTP for a status;
 * with a message saying when and why) while `url`'s origin is
 * remembered, else 0. Every request of
 * the Hub client and the transfer engine checks it first. */
int kernels__hub_down_check(const char *url);
/* Remembers `url`'s origin as not answering (`why`: what happened), or,
 * with a `status` (a 5xx or 429 that outlived the retries), as not
 * serving: kernels__hub_down_check then raises KERNELS_EHTTP, marked with
 * it (kernels__error_mark_unserved), instead of KERNELS_ENETWORK. Of the
 * statuses only an outage's (502, 503, 504) is remembered: a 500 may be
 * one path's fault and a 429 this client's limit, so the next call asks
 * again. */
void kernels__hub_down_mark(const char *url, const char *why, long status);
/* Forgets it: an answer came from there. */
void kernels__hub_down_forget(const char *url);
#ifdef KERNELS_TESTING
/* The test build only: the memory's expiry (ms; 0 turns it off) and forgetting it all. */
void kernels__hub_set_down_ttl_ms(long ms);
void kernels__hub_down_forget_all(void);
/* A fake clock for the memory: every entry `ms` older, as if that much
 * time had passed, so a test sees it expire without sleeping. */
void kernels__hub_down_age_all(long ms);
#endif

#endif
