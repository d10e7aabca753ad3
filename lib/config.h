/* Internal: kernels_options merged with the environment into one resolved,
 * owned configuration that every pipeline stage reads (never the
 * environment directly, so a call sees one consistent picture). */
#ifndef KERNELS_LIB_CONFIG_H
#define KERNELS_LIB_CONFIG_H

#include "kernels/options.h"
#include "kernels/signature.h"
#include "clock.h"
#include <stdatomic.h>

#define KERNELS__ENV_VARS 17

/* One endpoint of several tried in turn (get.c): until it answers a first
 * request it has its share of the call's deadline, so a silent mirror
 * leaves time for the endpoints after it. */
typedef struct kernels__endpoint_try {
	long long first_byte_at; /* CLOCK_MONOTONIC ms by which it must have answered */
	long budget_ms;
	size_t after;            /* endpoints after it */
	atomic_int answered;     /* it answered (any HTTP status): the call's deadline governs again;
				  * set by the prefetch threads too */
} kernels__endpoint_try;

/* The failures of endpoints tried in turn, each once, in order. */
typedef struct {
	char text[3600];
	size_t n;
} kernels__endpoint_failures;

/* What made a call offline, for the messages that say how to undo it. */
typedef enum {
	KERNELS__OFFLINE_NONE,
	KERNELS__OFFLINE_HF_HUB_OFFLINE,
	KERNELS__OFFLINE_TRANSFORMERS_OFFLINE,
	KERNELS__OFFLINE_OPTION,      /* kernels_options.offline */
	KERNELS__OFFLINE_LOAD_LOCKED, /* kernels_load_locked reads only the cache */
} kernels__offline_by;

typedef struct {
	char *endpoint;        /* no trailing slash */
	char *cache_dir;       /* hub cache root */
	char *token;           /* NULL when none */
	int offline;           /* 0/1 */
	kernels__offline_by offline_by; /* what set `offline` (KERNELS__OFFLINE_NONE: online) */
	const char *offline_why; /* NULL: offline as the caller asked; else why get.c runs the call offline
				    (the Hub cannot be reached, or is not serving): a cache miss is then
				    offline_code saying so */
	int offline_code;      /* with offline_why: KERNELS_ENETWORK, or KERNELS_EHTTP for a 5xx or 429 */
	int telemetry;         /* 0 when HF_HUB_DISABLE_TELEMETRY is set */
	long timeout_ms;       /* metadata requests: connect/stall ($HF_HUB_ETAG_TIMEOUT) */
	long download_timeout_ms; /* file transfers: connect/stall ($HF_HUB_DOWNLOAD_TIMEOUT) */
	long deadline_ms;      /* the call's budget; <0: none */
	long stall_budget_ms;  /* one file transfer's silence, summed over its retries; <0: none */
	long long deadline_at; /* CLOCK_MONOTONIC ms when the budget runs out; 0: none */
	char **endpoints;      /* the ordered endpoints (endpoint is one of them); NULL-terminated */
	size_t n_endpoints;
	int endpoint_pinned;   /* 1: the caller walks the endpoints; stages ask cfg->endpoint alone */
	kernels__endpoint_try *attempt; /* the first-byte budget of cfg->endpoint; NULL: none */
	int max_retries;
	int max_parallel;
	int trust_remote_code;
	char *trusted_orgs;    /* NULL when none */
	char *local_kernels;   /* $LOCAL_KERNELS or NULL */
	kernels_system system_override; /* zeroed when none */
	char *torch_dir;       /* options.torch_dir, else $KERNELS_TORCH_DIR; NULL when none */
	const char *torch_dir_source; /* "option" or "environment" (static) */
	int find_torch;        /* 0/1: look for the torch of a virtualenv / python3 */
	kernels_log_cb log_cb;
	void *log_payload;
	int log_level;         /* the default sink prints this kernels_log_level and up (3: nothing) */
	struct kernels__log_seen *log_seen; /* the warnings given in this call (shared by shallow copies) */
	kernels_progress_cb progress_cb;
	void *progress_payload;
	struct kernels__sigconf *sig; /* kernels_options.signature* with their environment (below) */
	int skip_arch_check;   /* options.skip_arch_check, else $KERNELS_SKIP_ARCH_CHECK */
	int no_symlinks;       /* $HF_HUB_DISABLE_SYMLINKS: a download puts plain files in snapshots/, as
				  huggingface_hub does (docs/cache-layout.md) */
	int device;            /* options.device, else $KERNELS_DEVICE, as a GPU index; -1: the current device */
	char *user_agent;      /* options.user_agent: the caller's part of the User-Agent; NULL: none */
	char *ua_origin;       /* $HF_HUB_USER_AGENT_ORIGIN: the User-Agent's last part, "origin/<it>"; NULL: none */
	char *ua_system;       /* what this call's system description adds to the User-Agent (get.c writes it,
				  hub.c reads it; KERNELS__UA_SYSTEM_MAX bytes, shared by shallow copies) */
	char *env[KERNELS__ENV_VARS]; /* the variables of kernels__config_env, as the call began; NULL: unset */
	struct kernels__hub_conn *conn; /* the call's connections (hub.h; shared by shallow copies); NULL: each
					   request on a connection of its own */
} kernels__config;

/* What a stage needs of the environment besides the options' variables
 * (system detection's KERNELS_* overrides, where Python keeps torch,
 * CUDA_VISIBLE_DEVICES), as config_load captured it: NULL when unset or
 * empty. Stages read it here, never from the environment. A name not in
 * config.c's list is NULL. */
const char *kernels__config_env(const kernels__config *cfg, const char *name);

/* The signature options with their environment (KERNELS_SIGNATURE,
 * KERNELS_SIGSTORE_TRUSTED_ROOT), resolved with the rest (lib/signature.c
 * reads them). */
struct kernels__sigconf {
	int mode;                       /* KERNELS_SIGNATURE_OFF, _IF_PRESENT or _REQUIRE */
	char *root_path;                /* NULL: the built-in root */
	const char *root_source;        /* "kernels_options.sigstore_trusted_root" or the variable */
	kernels_signature_policy *policies; /* the default first, then the caller's (deep copies) */
	size_t npolicies;
};
/* KERNELS_EINVAL, naming policy `i`, when `p` has no issuer, names no
 * signer, or has NULL where a string belongs. */
int kernels__signature_policy_check(const kernels_signature_policy *p, size_t i);

/* The caller's `count` policies as an array of the current layout (each
 * element read at the stride of its version, then checked): `*out` is
 * malloc'ed (NULL for none). KERNELS_EINVAL names a bad policy. */
int kernels__signature_policies_read(kernels_signature_policy **out, const kernels_signature_policy *policies,
				     size_t count);


#define KERNELS__UA_SYSTEM_MAX 256

/* A device as options.device / $KERNELS_DEVICE give it ("1", "cuda:1"):
 * its index, or -1 with the error set when it is not one. */
int kernels__device_parse(const char *s, const char *what);

/* The caller's options (NULL: the defaults) as a struct of the current
 * layout: each versioned struct read no further than its version reaches
 * (util/layout.h), the fields it lacks at their defaults; a system
 * override is copied into `system` and `full->system` points there.
 * KERNELS_EINVAL for a version this library does not know. */
int kernels__options_full(kernels_options *full, kernels_system *system, const kernels_options *opts);

/* Resolves `opts` (NULL: defaults) plus environment into `cfg`.
 * Free with kernels__config_free. */
int kernels__config_load(kernels__config *cfg, const kernels_options *opts);
void kernels__config_free(kernels__config *cfg);

/* Starts the call's budget again from now (cfg->deadline_ms). Calls over
 * a whole lock file give each kernel its own budget. */
void kernels__config_deadline_restart(kernels__config *cfg);

/* Aims `at` (kernels__config_at_endpoint's) at endpoint `i` of `cfg`'s
 * list for a caller walking them: pinned, and with a first-byte budget
 * in `t` unless it is the last: what is left of the deadline divided by
 * the endpoints left plus one (the last gets two shares: it is the one
 * that must then do the work), at least KERNELS__FIRST_BYTE_MIN_MS; with
 * no deadline, the request timeout. The defaults (10 s, two endpoints):
 * a silent first endpoint hands over after 3.3 s. */
#define KERNELS__FIRST_BYTE_MIN_MS 1000L
void kernels__endpoint_try_begin(const kernels__config *cfg, size_t i, kernels__config *at, kernels__endpoint_try *t);

/* An answer came from cfg->endpoint: its first-byte budget is over. */
void kernels__endpoint_answered(const kernels__config *cfg);

/* The budget that ran out, in words for a message: "the call's deadline
 * of N ms" or "the first-byte budget of N ms of <endpoint> (...)". */
const char *kernels__deadline_what(const kernels__config *cfg, char *buf, size_t n);

/* Records endpoint's failure `msg` (the error now set). */
void kernels__endpoint_failed(kernels__endpoint_failures *f, const char *endpoint, const char *msg);

/* With more than one failure recorded: the error `rc` saying each, in
 * order, in one message; otherwise rc with the message as it is. */
int kernels__endpoint_failures_raise(const kernels__endpoint_failures *f, int rc);

/* Milliseconds left of the call's budget: LONG_MAX without a deadline,
 * 0 once it has run out. */
long kernels__deadline_left_ms(const kernels__config *cfg);

/* `cfg` aimed at endpoint number `i` of cfg->endpoints (a shallow copy:
 * strings stay owned by `cfg`). */
void kernels__config_at_endpoint(const kernels__config *cfg, size_t i, kernels__config *out);

/* 1 when a failure at one endpoint lets the next one of the list try: it
 * could not be reached, failed (KERNELS_EHTTP: 5xx, no refs), or lacks the
 * repo or revision (KERNELS_ENOTFOUND). */
int kernels__endpoint_failover(int rc);

/* For a caller walking the endpoints: endpoint `i` of cfg's list, asked
 * through `at`, ended with `rc`. Records its failure (unless offline:
 * nothing was asked) and returns 1 when the next one should try (said at
 * info level), 0 when the walk is over. */
int kernels__endpoint_next(const kernels__config *cfg, size_t i, const kernels__config *at, int rc,
			   kernels__endpoint_failures *failed);

/* How to go online, for the "what to do" of an offline refusal: undo what
 * made the call offline (cfg->offline_by), or wait for the Hub when it is
 * the Hub that cannot be reached (cfg->offline_why). Static. */
const char *kernels__config_online_hint(const kernels__config *cfg);
/* "offline (HF_HUB_OFFLINE)": the mode, with what set it. Static. */
const char *kernels__config_offline_said(const kernels__config *cfg);

/* Reports a warning/info through the configured callback (stderr default). */
void kernels__log(const kernels__config *cfg, kernels_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A boolean environment variable the way huggingface_hub reads them:
 * 1/ON/YES/TRUE (any case) are true. */
int kernels__env_true(const char *name);

#endif
