/* The Hub client's file-transfer engine: the files of a tree listing, from
 * the Hub (and the CDN it redirects to) into the cache, verified. It lives
 * beside hub.c because it is HTTP: no stage outside the Hub client builds
 * a curl handle or follows a redirect.
 *
 * One job per distinct blob (identical files, such as the {name}/__init__.py
 * compatibility copy, share one). A job is driven through
 *   WAIT_LOCK -> READY -> ACTIVE -> (READY again on retry/redirect) -> DONE
 * by a single curl multi loop: locks are only ever tried without blocking, so
 * a process never sleeps on one blob while holding another, and many
 * processes fetching the same kernel cannot deadlock. Links into the snapshot
 * are made once every blob of the call is in place. Until a file's first
 * byte the call's deadline bounds its transfer; after it, the stall timeout
 * (HF_HUB_DOWNLOAD_TIMEOUT). */
#include "hub.h"
#include "cache.h"
#include "receipt.h"
#include "error.h"
#include "hash.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define LOCK_POLL_MS 50
#define ERRBODY_MAX 4096
#define PROGRESS_STEP (256 << 10)
#define STALL_CHECK_MS 100
#define DEADLINE_GRACE_MS 1000  /* a transfer started after the deadline still gets this long for a first byte */
#define FETCH_FILES_MAX 100000   /* files of one call: a variant may have no more (lib/verify.c) */
#define BLOBS_READDIR_MIN 64     /* from this many blobs on, blobs/ is read once instead of stat'ed per blob */

/* J_PUBLISH: every byte is in; its hash waits until the loop has started
 * what the other transfers need (a redirect's next hop). J_SYNC: hashed and
 * right, waiting for its fsync, which the small blobs of a call take
 * together (flush_synced) once no transfer is left to overlap, instead of
 * one journal commit after another, each holding up the loop; a large
 * one's has begun on a thread meanwhile (begin_flush). */
enum { J_WAIT_LOCK, J_READY, J_ACTIVE, J_PUBLISH, J_SYNC, J_DONE, J_FAILED };

#define SYNC_BATCH_MAX 64  /* blobs held open for one flush: descriptors are finite */
#define WRITEBACK_STEP (1 << 20) /* a large file's bytes start for the disk every this many */
#define EARLY_FLUSH_MIN WRITEBACK_STEP /* a blob this large is flushed as soon as it is right (begin_flush) */
#define EARLY_FLUSH_MAX 4              /* early flushes underway at once: a thread each */

struct fetch;

typedef struct {
	struct fetch *f;
	const kernels__tree_entry *entry;  /* the first file using this blob */
	const char *etag;                  /* expected: LFS sha256, else the git blob sha1 */
	int lfs;
	long long size;
	char *blob, *incomplete, *lock_path; /* made when the job first tries its lock */

	int state;
	kernels__cache_lock lock;
	int fd;
	EVP_MD_CTX *md;
	long long have;                    /* bytes in .incomplete, all hashed */
	long long kicked;                  /* bytes whose write-back was started (start_writeback) */
	kernels__fsync_pending *flushing;  /* its flush, begun early (begin_flush); collected by flush_synced */
	int restarted;                     /* already started over after a bad hash */
	int got_bytes;                     /* a byte of the file arrived: the stall timeout governs it now */
	int fresh;                         /* an attempt broke: its later hops open new connections (the
					      call's connection it used may be what broke: a frozen HTTP/2 one
					      would take every stream sent on it) */
	long long started;                 /* when its current request went out */
	long long last_byte;               /* when its current request last got a byte (or went out) */
	long long stalled_ms;              /* silence before its failed attempts, summed: the stall budget */
	int attempts;
	long long not_before, next_lock_try;

	char *url;                         /* current hop; NULL: the Hub's resolve URL */
	int redirects;
	long long cdn_wait;                /* until when its next hop waits for the call's warm-up there to end */
	CURL *h;
	struct curl_slist *hdrs;
	kernels__hub_headers hd;
	int body_seen, discard, abort_code;
	long long reported;
	kernels__buf errbody;
	char curl_err[CURL_ERROR_SIZE];
} job;

typedef struct fetch {
	const kernels__config *cfg;
	kernels__repo_type type;
	const char *repo_id, *commit;
	char *repo_dir;
	int blobs_fd;                      /* blobs/, walked from the cache root: every write there is relative to it */
	char *cache_name;                  /* {kernels|models}--{org}--{name}, for lock paths */
	job *jobs;
	size_t n_jobs;
	size_t settled;                    /* jobs DONE or FAILED */
	size_t first_open;                 /* no job before this one is still open */
	size_t publish;                    /* jobs in J_PUBLISH */
	size_t syncing;                    /* jobs in J_SYNC */
	unsigned int flushing;             /* of them, those whose flush is underway (begin_flush) */
	int published;                     /* a blob was renamed into blobs/: sync the folder once */
	CURLM *multi;                      /* the call's (borrowed: kernels__hub_conn_hold), else our own */
	char *cdn_url;                     /* the first redirect off the Hub, recorded after the transfers */
	int borrowed;
	unsigned int active, holding;
	unsigned long long all_done, all_total;
	int cancelled;
	int fail_code;
	long fail_unserved;                /* kernels__error_unserved() of the failure */
	char fail_msg[4096];
	long long next_stall_check;        /* the stall budget is looked at every STALL_CHECK_MS */
	kernels_download_stats *stats;
	/* Download receipts, flushed and renamed beside the rest of the
	 * publishing (blobs/'s flush, the links); joined before the call
	 * returns, so the load that reads them finds them. */
	kernels__write_later *receipts;
	/* Per tree entry (`entries` the tree's), MARK_* flags. */
	const kernels__tree_entry *entries;
	unsigned char *mark;
} fetch;

/* PLAIN: its snapshot path is already a regular file holding the listed
 * bytes (huggingface_hub without symlinks): neither fetched nor linked
 * over. SHARED: the first file of a blob other files have too. FRESH: the
 * file whose blob this call downloaded. */
enum { MARK_PLAIN = 1, MARK_SHARED = 2, MARK_FRESH = 4 };

static void settle(fetch *f, job *j, int state)
{
	if (j->state != J_DONE && j->state != J_FAILED)
		f->settled++;
	j->state = state;
}

/* The first failure wins: its message is what the caller sees. */
static void fail_job(fetch *f, job *j, int code)
{
	settle(f, j, J_FAILED);
	if (!f->fail_code) {
		f->fail_code = code;
		f->fail_unserved = kernels__error_unserved();
		snprintf(f->fail_msg, sizeof(f->fail_msg), "%s", kernels_error_last());
	}
}

/* A write into the cache for `j` failed (its lock, its .incomplete, its
 * bytes, flush or rename): the message starts with the file and commit
 * that needed it, so a full or read-only cache says what it lacks. */
static void name_the_file(const fetch *f, const job *j)
{
	kernels__error_prefix("fetching %s of %s at %.12s", j->entry->path, f->repo_id, f->commit);
}

static void cache_failed(fetch *f, job *j, int code)
{
	name_the_file(f, j);
	fail_job(f, j, code);
}

/* ---- hashing ------------------------------------------------------------------ */

static int md_start(job *j)
{
	if (!j->md && !(j->md = EVP_MD_CTX_new()))
		return kernels__error_oom();
	if (!kernels__blob_digest_begin(j->md, j->lfs ? KERNELS__BLOB_SHA256 : KERNELS__BLOB_GIT_SHA1, j->size))
		return kernels__error(KERNELS_ERROR, "cannot initialise %s; check the OpenSSL installation",
				      j->lfs ? "sha256" : "sha1");
	return 0;
}

static void md_hex(job *j, char *out)
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	EVP_DigestFinal_ex(j->md, d, &n);
	kernels__hex(d, n, out);
}

/* ---- progress -------------------------------------------------------------------- */

static void report_progress(fetch *f, job *j, int force)
{
	const kernels__config *cfg = f->cfg;

	if (!cfg->progress_cb || f->cancelled)
		return;
	if (!force && j->have - j->reported < PROGRESS_STEP)
		return;
	j->reported = j->have;
	if (cfg->progress_cb(j->entry->path, (size_t)j->have, (size_t)j->size, (size_t)f->all_done,
			     (size_t)f->all_total, cfg->progress_payload))
		f->cancelled = 1;
}

static void account(fetch *f, long long delta)
{
	f->all_done = (unsigned long long)((long long)f->all_done + delta);
}

/* ---- the .incomplete file --------------------------------------------------------- */

/* The name of a blob's file (blob or .incomplete) in blobs/. */
static const char *in_blobs(const char *path)
{
	return strrchr(path, '/') + 1;
}

/* blobs/ opened once from the cache root without following links (made
 * where missing): the .incomplete files are created, removed and renamed
 * relative to it, so a blobs/ swapped for a link after the walk is not
 * followed. */
static int blobs_open(fetch *f)
{
	if (f->blobs_fd < 0 && (f->blobs_fd = kernels__cache_repo_dir_open(f->repo_dir, "blobs", 1)) < 0) {
		int rc = f->blobs_fd;
		f->blobs_fd = -1;
		return rc;
	}
	return 0;
}

static int truncate_incomplete(fetch *f, job *j)
{
	if (ftruncate(j->fd, 0) < 0 || lseek(j->fd, 0, SEEK_SET) < 0)
		return kernels__error(KERNELS_EIO, "cannot truncate %s: %s", j->incomplete, strerror(errno));
	account(f, -j->have);
	j->have = 0;
	j->reported = 0;
	return md_start(j);
}

/* Opens .incomplete (ours now: we hold the lock) and hashes what an earlier
 * attempt left there, so the download resumes after it. */
static int open_incomplete(fetch *f, job *j)
{
	char buf[1 << 16];
	struct stat st;
	ssize_t n;
	int rc;

	/* A link planted at the .incomplete name is not followed either. */
	if ((rc = blobs_open(f)) < 0)
		return rc;
	j->fd = openat(f->blobs_fd, in_blobs(j->incomplete), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (j->fd < 0)
		return kernels__error(KERNELS_EIO, "cannot create %s: %s; %s", j->incomplete, strerror(errno),
				      kernels__write_advice(errno, 1, "check that the cache folder is writable (shared "
							    "caches: group-writable) or set KERNELS_CACHE"));
	if ((rc = md_start(j)) < 0)
		return rc;
	if (fstat(j->fd, &st) < 0)
		return kernels__error(KERNELS_EIO, "cannot stat %s: %s", j->incomplete, strerror(errno));
	if (st.st_size > j->size)
		return truncate_incomplete(f, j);
	while ((n = read(j->fd, buf, sizeof(buf))) > 0) {
		EVP_DigestUpdate(j->md, buf, (size_t)n);
		j->have += n;
	}
	if (n < 0)
		return kernels__error(KERNELS_EIO, "cannot read %s: %s", j->incomplete, strerror(errno));
	account(f, j->have);
	return 0;
}

/* Waits for the flush begin_flush began: 0, or the errno fsync met. */
static int collect_flush(fetch *f, job *j)
{
	int err = kernels__fsync_wait(j->flushing);

	j->flushing = NULL;
	f->flushing--;
	return err;
}

static void close_job(fetch *f, job *j)
{
	if (j->flushing)
		collect_flush(f, j); /* not closed under its flush; the outcome no longer matters */
	if (j->h) {
		curl_multi_remove_handle(f->multi, j->h);
		curl_easy_cleanup(j->h);
		j->h = NULL;
		f->active--;
	}
	curl_slist_free_all(j->hdrs);
	j->hdrs = NULL;
	/* Bytes are kept for the next try to resume; an .incomplete that
	 * got none (the request failed, or was never answered) is removed,
	 * under the lock still: it would only be left in the cache. */
	if (j->fd >= 0 && j->have == 0)
		unlinkat(f->blobs_fd, in_blobs(j->incomplete), 0);
	if (j->fd >= 0)
		close(j->fd);
	j->fd = -1;
	if (j->lock.fd >= 0) {
		kernels__cache_unlock(&j->lock);
		f->holding--;
	}
}

/* ---- transfers ------------------------------------------------------------------- */

static size_t on_data(char *data, size_t size, size_t nitems, void *userdata);

static char *resolve_url(fetch *f, job *j)
{
	char *rev = kernels__url_escape(f->commit, 0), *path = kernels__url_escape(j->entry->path, 1), *url = NULL;

	if (rev && path)
		url = kernels__sprintf("%s/%s%s/resolve/%s/%s", f->cfg->endpoint, kernels__repo_url_prefix(f->type),
				       f->repo_id, rev, path);
	free(rev);
	free(path);
	return url;
}

/* An attempt stalls out after HF_HUB_DOWNLOAD_TIMEOUT, or what is left
 * of the stall budget when that is less (whole seconds, at least one:
 * libcurl's unit). */
static long stall_time_s(const fetch *f, const job *j)
{
	long long ms = f->cfg->download_timeout_ms;

	if (f->cfg->stall_budget_ms >= 0 && f->cfg->stall_budget_ms - j->stalled_ms < ms)
		ms = f->cfg->stall_budget_ms - j->stalled_ms;
	return ms >= 2000 ? (long)(ms / 1000) : 1L;
}

static int start(fetch *f, job *j)
{
	char range[64], *url = j->url;
	long left = kernels__deadline_left_ms(f->cfg), connect = f->cfg->download_timeout_ms;
	int rc;

	if (!url && !(url = j->url = resolve_url(f, j)))
		return KERNELS_ENOMEM;
	if ((rc = kernels__hub_down_check(url)) < 0)
		return kernels__error_prefix("downloading %s", j->entry->path);
	snprintf(range, sizeof(range), "Range: bytes=%lld-", j->have);
	if (!(j->h = kernels__hub_easy(f->cfg, url, j->have > 0 ? range : NULL, &j->hdrs)))
		return kernels_error_last_code() ? kernels_error_last_code() : KERNELS_ENOMEM;
	/* File transfers stall out after HF_HUB_DOWNLOAD_TIMEOUT, as
	 * huggingface_hub's do; until the first byte, the deadline bounds them
	 * (one that starts after it, behind others, gets the grace). */
	if (!j->got_bytes && left < connect)
		connect = left > DEADLINE_GRACE_MS ? left : DEADLINE_GRACE_MS;
	j->started = j->last_byte = kernels__now_ms();
	curl_easy_setopt(j->h, CURLOPT_CONNECTTIMEOUT_MS, connect);
	curl_easy_setopt(j->h, CURLOPT_LOW_SPEED_TIME, stall_time_s(f, j));
	kernels__hub_headers_clear(&j->hd);
	kernels__buf_free(&j->errbody);
	j->body_seen = j->discard = j->abort_code = 0;
	j->curl_err[0] = '\0';
	curl_easy_setopt(j->h, CURLOPT_HEADERFUNCTION, kernels__hub_header_cb);
	curl_easy_setopt(j->h, CURLOPT_HEADERDATA, &j->hd);
	curl_easy_setopt(j->h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(j->h, CURLOPT_WRITEDATA, j);
	curl_easy_setopt(j->h, CURLOPT_PRIVATE, j);
	curl_easy_setopt(j->h, CURLOPT_ERRORBUFFER, j->curl_err);
	if (j->fresh)
		curl_easy_setopt(j->h, CURLOPT_FRESH_CONNECT, 1L);
	if (curl_multi_add_handle(f->multi, j->h) != CURLM_OK) {
		curl_easy_cleanup(j->h);
		j->h = NULL;
		return kernels__error(KERNELS_ERROR, "cannot start the transfer of %s", j->entry->path);
	}
	f->active++;
	if (f->stats && f->active > f->stats->max_parallel)
		f->stats->max_parallel = f->active;
	j->state = J_ACTIVE;
	return 0;
}

/* The ETag the Hub gives for the file must be the hash the listing gave. */
static int check_etag(job *j, const char *etag)
{
	if (etag && *etag && strcmp(etag, j->etag))
		return kernels__error(KERNELS_EINTEGRITY,
				      "%s: the Hub's ETag is %s but its tree listing says %s; the repo may be changing "
				      "under this commit, or a proxy altered the answer; try again later",
				      j->entry->path, etag, j->etag);
	return 0;
}

/* The Hub's answer for the file must give the hash and the size its tree
 * listing gave: a redirect its X-Linked-Size, the file itself its length
 * (no encoding is asked for). A listing it contradicts is not kept
 * (download.c), so the message tells to try again. */
static int check_answer(job *j)
{
	const kernels__hub_headers *h = &j->hd;
	long long size = h->linked_size >= 0 ? h->linked_size : h->status == 200 ? h->content_length : -1;

	if (check_etag(j, h->linked_etag ? h->linked_etag : h->etag) < 0)
		return KERNELS_EINTEGRITY;
	if (size >= 0 && size != j->size)
		return kernels__error(KERNELS_EINTEGRITY,
				      "%s: the Hub gives it as %lld bytes but its tree listing says %lld bytes; the "
				      "listing is not kept; try again, and report the repo if it persists",
				      j->entry->path, size, j->size);
	return 0;
}

/* Only the Hub's own answers carry the file's identity; a CDN's ETag may be anything. */
static int on_hub(fetch *f, job *j)
{
	return !j->url || kernels__hub_same_origin(f->cfg, j->url);
}

/* The first body byte of an answer: decide what the bytes are. */
static int first_bytes(fetch *f, job *j)
{
	long status = j->hd.status;
	long long s = -1, e = -1, t = -1;

	if (status < 200 || status >= 300) {
		j->discard = 1;
		return 0;
	}
	if (on_hub(f, j) && check_answer(j) < 0)
		return KERNELS_EINTEGRITY;
	if (status == 200 && j->have > 0)
		return truncate_incomplete(f, j);   /* the server ignored the Range: start over */
	if (status == 206) {
		if (!j->hd.content_range || sscanf(j->hd.content_range, "bytes %lld-%lld/%lld", &s, &e, &t) < 2 ||
		    s != j->have || (t >= 0 && t != j->size))
			return kernels__error(KERNELS_EHTTP,
					      "%s: the server answered the range request from byte %lld with '%s'; "
					      "restarting the file", j->entry->path, j->have,
					      j->hd.content_range ? j->hd.content_range : "no Content-Range");
	}
	return 0;
}

/* The disk starts on a large file's bytes while the rest arrive, so the
 * flush that publishes it (flush_synced) waits for the tail, not the whole
 * file. Asks nothing of the disk that the flush would not; its failure is
 * the flush's to report. */
static void start_writeback(job *j)
{
	if (j->kicked > j->have)
		j->kicked = 0; /* started over */
	if (j->have - j->kicked < WRITEBACK_STEP)
		return;
	sync_file_range(j->fd, j->kicked, j->have - j->kicked, SYNC_FILE_RANGE_WRITE);
	j->kicked = j->have;
}

static size_t on_data(char *data, size_t size, size_t nitems, void *userdata)
{
	job *j = userdata;
	fetch *f = j->f;
	size_t n = size * nitems, off = 0;
	int rc;

	if (!j->body_seen) {
		j->body_seen = 1;
		if ((rc = first_bytes(f, j)) < 0) {
			j->abort_code = rc;
			return 0;
		}
	}
	if (j->discard) {
		if (j->errbody.len < ERRBODY_MAX)
			kernels__buf_put(&j->errbody, data, n < ERRBODY_MAX ? n : ERRBODY_MAX);
		return n;
	}
	if (j->have + (long long)n > j->size) {
		j->abort_code = kernels__error(KERNELS_EINTEGRITY,
					       "%s: the server sent more than the %lld bytes the tree listing "
					       "declares; the damaged download was deleted; try again", j->entry->path,
					       j->size);
		return 0;
	}
	while (off < n) {
		ssize_t w = write(j->fd, data + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			j->abort_code = kernels__error(KERNELS_EIO, "cannot write %s: %s; %s", j->incomplete,
						       strerror(errno),
						       kernels__write_advice(errno, 1, "check free space in the cache"));
			name_the_file(f, j);
			return 0;
		}
		off += (size_t)w;
	}
	EVP_DigestUpdate(j->md, data, n);
	j->got_bytes = 1;
	j->last_byte = kernels__now_ms();
	kernels__endpoint_answered(f->cfg);
	j->have += (long long)n;
	start_writeback(j);
	account(f, (long long)n);
	if (f->stats)
		f->stats->bytes_downloaded += n;
	report_progress(f, j, 0);
	return f->cancelled ? 0 : n;
}

/* ---- finishing a transfer --------------------------------------------------------- */

/* Returns the wait before the next try, in ms, for the log. */
static long retry_later(fetch *f, job *j, long retry_after_s)
{
	long wait = kernels__hub_backoff_ms(j->attempts - 1, retry_after_s);

	j->not_before = kernels__now_ms() + wait;
	/* Back to the Hub: a CDN link may be signed and short-lived. */
	free(j->url);
	j->url = NULL;
	j->redirects = 0;
	j->state = J_READY;
	if (f->stats)
		f->stats->retries++;
	return wait;
}

static int hub_error(fetch *f, job *j)
{
	kernels__hub_response r;
	char what[600];

	memset(&r, 0, sizeof(r));
	r.status = j->hd.status;
	r.error_code = j->hd.error_code;
	r.error_message = j->hd.error_message;
	r.body = j->errbody.ptr;
	r.body_len = j->errbody.len;
	snprintf(what, sizeof(what), "downloading %.300s from %s at %.12s", j->entry->path, f->repo_id, f->commit);
	return kernels__hub_status_error(&r, what);
}

static void link_blob_done(fetch *f, job *j)
{
	close_job(f, j);
	settle(f, j, J_DONE);
	report_progress(f, j, 1);
}

/* A large blob's flush begins as soon as it is right, on a thread, beside
 * the transfers still running: its bytes are most of what the batch's
 * flush (flush_synced, once the last transfer is over) would otherwise
 * wait for. Small ones stay in the batch, one journal commit for all. */
static void begin_flush(fetch *f, job *j)
{
	if (j->size >= EARLY_FLUSH_MIN && f->flushing < EARLY_FLUSH_MAX && (j->flushing = kernels__fsync_begin(j->fd)))
		f->flushing++;
}

/* Every byte arrived: the hash decides whether the blob may be published. */
static void verify_and_publish(fetch *f, job *j)
{
	char got[EVP_MAX_MD_SIZE * 2 + 1];
	int rc;

	md_hex(j, got);
	if (strcmp(got, j->etag)) {
		unlinkat(f->blobs_fd, in_blobs(j->incomplete), 0);
		if (!j->restarted) {
			/* Bytes damaged in transit (or a stale .incomplete): once more from scratch. */
			kernels__log(f->cfg, KERNELS_LOG_WARNING, "%s: downloaded bytes hash to %s, expected %s; "
				     "downloading it again", j->entry->path, got, j->etag);
			j->restarted = 1;
			j->attempts++;
			close(j->fd);
			j->fd = -1;
			account(f, -j->have);
			j->have = 0;
			if ((rc = open_incomplete(f, j)) < 0) {
				cache_failed(f, j, rc);
				return;
			}
			retry_later(f, j, -1);
			return;
		}
		rc = kernels__error(KERNELS_EINTEGRITY,
				    "%s (%s at %.12s): the downloaded bytes hash to %s (%s) but the Hub lists %s; "
				    "the damaged download was deleted and nothing was cached; try again, and report "
				    "the repo if it persists", j->entry->path, f->repo_id, f->commit, got,
				    j->lfs ? "sha256" : "git blob sha1", j->etag);
		fail_job(f, j, rc);
		return;
	}
	j->state = J_SYNC;
	f->syncing++;
	begin_flush(f, j);
}

/* A blob its flush reached (err: what fsync said): renamed into blobs/, or
 * failed with the flush's error. */
static void publish_synced(fetch *f, job *j, int err)
{
	struct stat st;
	int rc;

	if (err) {
		/* A write that failed at its flush may not be on the disk, whatever
		 * reading it back shows for now: resuming from those bytes would be
		 * a guess, so they go, and the next call downloads the file anew. */
		unlinkat(f->blobs_fd, in_blobs(j->incomplete), 0);
		rc = kernels__error(KERNELS_EIO, "cannot flush %s (%s) to disk: %s; its download was deleted and "
				    "nothing of it cached; %s, then try again", j->blob, in_blobs(j->incomplete),
				    strerror(err), kernels__write_advice(err, 1, "check free space"));
		cache_failed(f, j, rc);
		return;
	}
	rc = kernels__cache_publish_at(j->fd, f->blobs_fd, in_blobs(j->incomplete), in_blobs(j->blob), j->blob, &st,
				       KERNELS__PUBLISH_SYNCED);
	f->published |= rc == 0;
	if (rc == 0)
		f->mark[j->entry - f->entries] |= MARK_FRESH;
	j->fd = -1;
	if (rc < 0) {
		cache_failed(f, j, rc);
		return;
	}
	/* The first load takes this hash for metadata.json's sha256 of the file. */
	if (j->lfs && j->size >= KERNELS__BLOB_RECEIPT_MIN && st.st_ino)
		kernels__receipt_blob_write(f->cfg, f->repo_dir, j->etag, &st, &f->receipts);
	if (f->stats)
		f->stats->blobs_downloaded++;
	link_blob_done(f, j);
}

/* The blobs waiting in J_SYNC, flushed side by side (those whose flush
 * began early, collected), then published. */
static void flush_synced(fetch *f)
{
	int fds[SYNC_BATCH_MAX] = { 0 }, errs[SYNC_BATCH_MAX], err;
	job *jobs[SYNC_BATCH_MAX];
	size_t i, n = 0, k = 0;

	for (i = f->first_open; i < f->n_jobs && n < SYNC_BATCH_MAX; i++)
		if (f->jobs[i].state == J_SYNC) {
			jobs[n++] = &f->jobs[i];
			if (!f->jobs[i].flushing)
				fds[k++] = f->jobs[i].fd;
		}
	kernels__fsync_many(fds, k, errs);
	for (i = 0, k = 0; i < n; i++) {
		err = jobs[i]->flushing ? collect_flush(f, jobs[i]) : errs[k++];
		f->syncing--;
		publish_synced(f, jobs[i], err);
	}
}

/* A transient failure: tried again after the backoff (or the server's
 * Retry-After), or the job fails once its retries are spent. */
/* The stall budget is spent: the bytes stay for the next call, unpublished. */
static int stalled_out(fetch *f, const job *j)
{
	char host[700];

	if (kernels__hub_origin(j->url ? j->url : f->cfg->endpoint, host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "the server");
	return kernels__error(KERNELS_ENETWORK,
			      "downloading %s of %s: %s stopped sending it (%lld ms without a byte over %d "
			      "attempt%s, the stall budget of %ld ms: "
			      "kernels_options.stall_budget_ms or KERNELS_STALL_BUDGET_MS; raise it for a slow link); %lld of %lld bytes are kept in %s "
			      "and the next try resumes there", j->entry->path, f->repo_id, host, j->stalled_ms,
			      j->attempts + 1, j->attempts ? "s" : "", f->cfg->stall_budget_ms, j->have, j->size,
			      j->incomplete);
}

/* A 5xx or 429 that outlived the retries: the origin is remembered as not
 * serving (hub.c's hop_with_retries does the same for the API), and the
 * answer is the error. */
static int unserved(fetch *f, job *j)
{
	char why[96];

	snprintf(why, sizeof(why), "HTTP %ld, %d attempts", j->hd.status, j->attempts);
	kernels__hub_down_mark(j->url ? j->url : f->cfg->endpoint, why, j->hd.status);
	return hub_error(f, j);
}

static void retry_or_fail(fetch *f, job *j, CURLcode res, long status)
{
	char why[128];
	long wait;

	if (++j->attempts > f->cfg->max_retries) {
		if (res != CURLE_OK || status < 300)
			fail_job(f, j, kernels__error(KERNELS_ENETWORK,
						      "downloading %s from %s failed after %d attempts (%s); "
						      "%lld of %lld bytes are kept in %s and the next try "
						      "resumes there; check the network and try again",
						      j->entry->path, f->repo_id, j->attempts,
						      res != CURLE_OK ? (*j->curl_err ? j->curl_err :
									 curl_easy_strerror(res))
								      : "the body ended early",
						      j->have, j->size, j->incomplete));
		else
			fail_job(f, j, unserved(f, j));
		return;
	}
	if (res == CURLE_OK && status < 300)
		snprintf(why, sizeof(why), "the body ended early");
	else if (res == CURLE_OK)
		snprintf(why, sizeof(why), "answered %ld", status);
	else
		snprintf(why, sizeof(why), "%s", curl_easy_strerror(res));
	wait = retry_later(f, j, status == 429 || status == 503 ? j->hd.retry_after : -1);
	kernels__log(f->cfg, KERNELS_LOG_INFO, "%s: %s; retrying in %ld ms (attempt %d of %d), resuming at "
		     "byte %lld", j->entry->path, why, wait, j->attempts + 1, f->cfg->max_retries + 1, j->have);
}

/* A redirect off the Hub: the endpoint's CDN, kept for the next cold get's
 * warm-up (hub_warm.c) and recorded once the transfers are over, not here
 * between the redirect and the hop it leads to. When this call's warm-up there is still
 * on its way, the hop waits for it over plain HTTP, for a while (over
 * HTTPS libcurl's PIPEWAIT does: HTTP/2 takes both on one connection):
 * HTTP/1.1 sends one request at a time on a connection, so a hop sent
 * now would open another. The while is as long as the redirect took, one
 * round trip: the warm-up, sent two or more round trips earlier, has its
 * connection by then and needs about one for its answer; a CDN that
 * holds it longer gets the hop on a connection of its own, as without it. */
static void to_cdn(fetch *f, job *j)
{
	long long now = kernels__now_ms();

	if (!f->cdn_url)
		f->cdn_url = kernels__strdup(j->url); /* out of memory: only the hint is lost */
	if (f->borrowed && !j->fresh && strncasecmp(j->url, "https://", 8) && kernels__hub_conn_warming(f->cfg->conn, j->url))
		j->cdn_wait = now + (now - j->started > 1 ? now - j->started : 1);
}

/* Until when `j` holds back its hop for the warm-up (to_cdn); 0: not. */
static long long cdn_wait(fetch *f, job *j, long long now)
{
	if (j->cdn_wait && (now >= j->cdn_wait || !kernels__hub_conn_warming(f->cfg->conn, j->url)))
		j->cdn_wait = 0;
	return j->cdn_wait;
}

/* The transfer's handle given back; the job may go again unless told
 * otherwise. */
static void release_transfer(fetch *f, job *j, CURLcode res)
{
	curl_multi_remove_handle(f->multi, j->h);
	kernels__hub_conn_done(f->cfg->conn, j->h);
	curl_easy_cleanup(j->h);
	j->h = NULL;
	curl_slist_free_all(j->hdrs);
	j->hdrs = NULL;
	f->active--;
	j->state = J_READY;
	j->fresh |= res != CURLE_OK;
	if (j->hd.status > 0)
		kernels__endpoint_answered(f->cfg);
}

/* The transfer's own callbacks stopped it (abort_code). */
static void aborted(fetch *f, job *j)
{
	if (j->abort_code == KERNELS_EHTTP) {
		/* A Range answer we cannot append: start the file over. */
		if (truncate_incomplete(f, j) < 0 || ++j->attempts > f->cfg->max_retries)
			fail_job(f, j, KERNELS_EHTTP);
		else
			retry_later(f, j, -1);
		return;
	}
	if (j->abort_code == KERNELS_EINTEGRITY)
		unlinkat(f->blobs_fd, in_blobs(j->incomplete), 0);
	fail_job(f, j, j->abort_code);
}

/* A redirect, followed once the Hub's etag for the file is as listed. */
static void redirected(fetch *f, job *j)
{
	char *next;
	int from_hub = on_hub(f, j);

	if (from_hub && check_answer(j) < 0) {
		fail_job(f, j, KERNELS_EINTEGRITY);
		return;
	}
	if (++j->redirects > KERNELS__MAX_REDIRECTS || !(next = kernels__url_resolve(j->url, j->hd.location))) {
		fail_job(f, j, kernels__error(KERNELS_EHTTP, "%s: too many or invalid redirects (last: %.200s)",
					      j->entry->path, j->hd.location));
		return;
	}
	free(j->url);
	j->url = next;
	j->not_before = 0;
	if (from_hub && !on_hub(f, j))
		to_cdn(f, j);
}

/* A failure worth another try, or one that spent the stall budget: 1 if
 * it was one (the job is retried or failed), 0 if not. */
static int retried(fetch *f, job *j, CURLcode res, long status)
{
	if (res == CURLE_COULDNT_CONNECT || res == CURLE_COULDNT_RESOLVE_HOST || res == CURLE_COULDNT_RESOLVE_PROXY)
		kernels__hub_down_mark(j->url ? j->url : f->cfg->endpoint,
				       *j->curl_err ? j->curl_err : curl_easy_strerror(res), 0);
	if (!(res != CURLE_OK && kernels__hub_transient_curl(res)) &&
	    !(res == CURLE_OK && kernels__hub_transient_status(status)) &&
	    !(res == CURLE_OK && status >= 200 && status < 300 && j->have < j->size))
		return 0;
	if (res != CURLE_OK)
		j->stalled_ms += kernels__now_ms() - j->last_byte;
	if (res != CURLE_OK && f->cfg->stall_budget_ms >= 0 && j->stalled_ms >= f->cfg->stall_budget_ms)
		fail_job(f, j, stalled_out(f, j));
	else
		retry_or_fail(f, j, res, status);
	return 1;
}

static void finished(fetch *f, job *j, CURLcode res)
{
	long status = j->hd.status;

	release_transfer(f, j, res);
	if (f->cancelled)
		return;
	if (j->abort_code) {
		aborted(f, j);
		return;
	}
	if (res == CURLE_OK && status >= 300 && status < 400 && j->hd.location) {
		redirected(f, j);
		return;
	}
	if (res == CURLE_OK && status == 416 && j->have > 0) {
		/* Our partial file is not a prefix the server knows: start over. */
		if (truncate_incomplete(f, j) < 0) {
			fail_job(f, j, KERNELS_EIO);
			return;
		}
		res = CURLE_PARTIAL_FILE;
	}
	if (retried(f, j, res, status))
		return;
	if (res != CURLE_OK) {
		fail_job(f, j, kernels__error(KERNELS_ENETWORK, "downloading %s from %s failed: %s; check the network, "
					      "HF_ENDPOINT and proxy settings", j->entry->path, f->repo_id,
					      *j->curl_err ? j->curl_err : curl_easy_strerror(res)));
		return;
	}
	if (status < 200 || status >= 300) {
		fail_job(f, j, hub_error(f, j));
		return;
	}
	if (!j->body_seen && on_hub(f, j) && check_answer(j) < 0) {
		fail_job(f, j, KERNELS_EINTEGRITY);
		return;
	}
	j->state = J_PUBLISH;
	f->publish++;
}

/* ---- locks ------------------------------------------------------------------------ */

static void try_lock(fetch *f, job *j, long long now)
{
	int rc;

	if (now < j->next_lock_try)
		return;
	if (!j->lock_path &&
	    (!(j->blob = kernels__sprintf("%s/blobs/%s", f->repo_dir, j->etag)) ||
	     !(j->incomplete = kernels__sprintf("%s/blobs/%s.incomplete", f->repo_dir, j->etag)) ||
	     !(j->lock_path = kernels__sprintf("%s/.locks/%s/%s.lock", f->cfg->cache_dir, f->cache_name, j->etag)))) {
		fail_job(f, j, KERNELS_ENOMEM);
		return;
	}
	rc = kernels__cache_lock_try(j->lock_path, &j->lock);
	if (rc == 1) {
		if (!j->next_lock_try)
			kernels__log(f->cfg, KERNELS_LOG_DEBUG, "%s: another process is downloading it; waiting",
				     j->entry->path);
		j->next_lock_try = now + LOCK_POLL_MS;
		return;
	}
	if (rc < 0) {
		cache_failed(f, j, rc);
		return;
	}
	f->holding++;
	if (kernels__cache_blob_ok(f->repo_dir, j->etag, j->size)) {
		/* Someone else finished it while we waited. */
		if (f->stats)
			f->stats->blobs_waited++;
		account(f, j->size);
		link_blob_done(f, j);
		return;
	}
	if ((rc = open_incomplete(f, j)) < 0) {
		cache_failed(f, j, rc);
		return;
	}
	if (j->have == j->size) {
		/* A complete .incomplete left by a crash just before the rename. */
		verify_and_publish(f, j);
		return;
	}
	j->state = J_READY;
	j->not_before = 0;
}

/* ---- the loop ---------------------------------------------------------------------- */

static int all_settled(const fetch *f)
{
	return f->settled == f->n_jobs;
}

/* Past the call's deadline: a transfer that has had no byte of its file
 * for the grace period (asked, or waiting to retry) is what the call
 * waits on; one whose bytes flow is bounded by the stall timeout instead,
 * so a large kernel on a slow link still arrives. */
static job *waiting_past_deadline(fetch *f, long long now)
{
	size_t i;

	for (i = f->first_open; i < f->n_jobs; i++) {
		job *j = &f->jobs[i];
		if (j->got_bytes || !j->started)
			continue;
		if ((j->state == J_ACTIVE && now - j->started >= DEADLINE_GRACE_MS) ||
		    (j->state == J_READY && j->not_before > now))
			return j;
	}
	return NULL;
}

static void deadline_passed(fetch *f, const job *w)
{
	char budget[256];

	f->fail_code = kernels__error(KERNELS_ENETWORK, "no byte of %.300s (%s) arrived within %s (from %.300s, %d "
				      "attempt%s)", w->entry->path, f->repo_id,
				      kernels__deadline_what(f->cfg, budget, sizeof(budget)),
				      w->url ? w->url : f->cfg->endpoint, w->attempts + 1, w->attempts ? "s" : "");
	snprintf(f->fail_msg, sizeof(f->fail_msg), "%s", kernels_error_last());
}

/* Stalls, measured here and not by libcurl's low-speed limit alone: that
 * one averages over seconds, so a transfer that sent a burst and froze
 * would run on for several seconds more than it is given. An attempt
 * silent for HF_HUB_DOWNLOAD_TIMEOUT is cut and retried (finished() as a
 * timeout); the job whose silence, with that of its earlier attempts, has
 * reached the stall budget is returned. */
static job *stalled_past_budget(fetch *f, long long now)
{
	size_t i;

	if (now < f->next_stall_check)
		return NULL;
	f->next_stall_check = now + STALL_CHECK_MS;
	for (i = f->first_open; i < f->n_jobs && !f->fail_code; i++) {
		job *j = &f->jobs[i];
		long long silent = now - j->last_byte;
		if (j->state != J_ACTIVE)
			continue;
		if (f->cfg->stall_budget_ms >= 0 && j->stalled_ms + silent >= f->cfg->stall_budget_ms)
			return j;
		if (silent >= f->cfg->download_timeout_ms) {
			snprintf(j->curl_err, sizeof(j->curl_err), "no byte for %lld ms", silent);
			finished(f, j, CURLE_OPERATION_TIMEDOUT);
		}
	}
	return NULL;
}

/* A job waiting past the call's deadline, or one silent past the stall
 * budget, ends the call: 1 if so. */
static int out_of_time(fetch *f, long long now)
{
	job *late;

	if (kernels__deadline_left_ms(f->cfg) <= 0 && (late = waiting_past_deadline(f, now))) {
		deadline_passed(f, late);
		return 1;
	}
	if ((late = stalled_past_budget(f, now))) {
		late->stalled_ms += now - late->last_byte;
		f->fail_code = stalled_out(f, late);
		snprintf(f->fail_msg, sizeof(f->fail_msg), "%s", kernels_error_last());
		return 1;
	}
	return 0;
}

/* A ready job's transfer started if it is due (and its CDN connection is
 * not still opening); else the earlier of `wake` and when it is due. */
static long long start_when_due(fetch *f, job *j, long long now, long long wake)
{
	int running, rc;

	if (cdn_wait(f, j, now))
		return j->cdn_wait < wake ? j->cdn_wait : wake;
	if (j->not_before > now)
		return j->not_before < wake ? j->not_before : wake;
	/* Sent before the next job's lock and .incomplete are made: the first of
	 * them (the LFS files, whose answer leads to the CDN) is on its way
	 * meanwhile. */
	if ((rc = start(f, j)) < 0)
		fail_job(f, j, rc);
	else
		curl_multi_perform(f->multi, &running);
	return wake;
}

/* Locks taken and transfers started as far as `limit` allows; the time
 * worth waking up at, from `wake`. Jobs settle roughly in order: the round
 * starts after those that have, and stops once no lock can be taken and
 * every job holding one was seen (only those can start a transfer), so it
 * costs the jobs in flight, not all of them. */
static long long start_what_can(fetch *f, unsigned int limit, long long now, long long wake)
{
	unsigned int held = 0;
	size_t i;

	while (f->first_open < f->n_jobs &&
	       (f->jobs[f->first_open].state == J_DONE || f->jobs[f->first_open].state == J_FAILED))
		f->first_open++;
	for (i = f->first_open; i < f->n_jobs && !f->fail_code; i++) {
		job *j = &f->jobs[i];
		if (f->holding >= limit && held >= f->holding)
			break;
		if (j->state == J_WAIT_LOCK && f->holding < limit)
			try_lock(f, j, now);
		/* Only a lock we could take now is worth waking up for; the rest
		 * wait for a transfer to end, which wakes the poll anyway. */
		if (j->state == J_WAIT_LOCK && f->holding < limit && j->next_lock_try > now &&
		    j->next_lock_try < wake)
			wake = j->next_lock_try;
		if (j->state == J_READY && f->active < limit)
			wake = start_when_due(f, j, now, wake);
		held += j->lock.fd >= 0;
	}
	return wake;
}

/* What arrived whole is hashed and published, the requests just started
 * being on their way. */
static void publish_whole(fetch *f)
{
	size_t i;
	int running;

	for (i = f->first_open; f->publish && i < f->n_jobs && !f->fail_code; i++) {
		if (f->jobs[i].state != J_PUBLISH)
			continue;
		f->publish--;
		verify_and_publish(f, &f->jobs[i]);
		curl_multi_perform(f->multi, &running);
	}
}

/* The transfers that ended, seen to: 1 if any did (a slot is free, or a
 * hop waiting for a warm-up goes now). */
static int take_finished(fetch *f)
{
	CURLMsg *m;
	int left, progressed = 0;

	while ((m = curl_multi_info_read(f->multi, &left))) {
		job *j = NULL;
		if (m->msg != CURLMSG_DONE)
			continue;
		progressed = 1;
		if (f->borrowed && kernels__hub_conn_warm_done(f->cfg->conn, m))
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&j);
		finished(f, j, m->data.result);
	}
	return progressed;
}

/* After the loop: the blobs already verified are kept (a failure may have
 * ended it), and a cancellation gets its message. */
static int wind_down(fetch *f)
{
	while (f->syncing) {
		size_t before = f->syncing;
		flush_synced(f);
		/* A pass without progress cannot happen today: a J_SYNC job leaves
		 * that state only through flush_synced, so first_open (which skips
		 * DONE and FAILED jobs only) never passes one, and each pass flushes
		 * some. The check stays so that a later slip in `syncing` ends the
		 * call instead of spinning; an assert would vanish under NDEBUG. */
		if (f->syncing == before)
			break;
	}
	if (f->cancelled && !f->fail_code) {
		f->fail_code = kernels__error(KERNELS_ERROR, "download of %s cancelled by the progress callback; "
					      "what arrived is kept and the next download resumes it", f->repo_id);
		snprintf(f->fail_msg, sizeof(f->fail_msg), "%s", kernels_error_last());
	}
	return f->fail_code;
}

/* Every job driven to its end, or to the call's failure: one loop on a
 * multi that nothing else drives meanwhile. */
static int run(fetch *f)
{
	unsigned int limit = f->cfg->max_parallel > 0 ? (unsigned int)f->cfg->max_parallel : 1;
	int running;

	while (!f->fail_code && !f->cancelled && !all_settled(f)) {
		long long now = kernels__now_ms(), wake;

		if (out_of_time(f, now))
			break;
		wake = start_what_can(f, limit, now, now + 100);
		if (f->fail_code)
			break;
		curl_multi_perform(f->multi, &running);
		publish_whole(f);
		/* The flush waits for the last transfer, unless the blobs waiting
		 * for it hold every lock a transfer could start with. */
		if (f->syncing && (!f->active || f->holding >= limit || f->syncing >= SYNC_BATCH_MAX))
			flush_synced(f);
		if (f->fail_code || f->cancelled || all_settled(f))
			break;
		if (take_finished(f) || f->publish)
			continue; /* a slot freed up or a file is whole: see to it before waiting */
		now = kernels__now_ms();
		curl_multi_poll(f->multi, NULL, 0, wake <= now ? 0 : (int)(wake - now > 100 ? 100 : wake - now), NULL);
	}
	return wind_down(f);
}

/* ---- planning ---------------------------------------------------------------------- */

static int disk_check(fetch *f, unsigned long long need)
{
	char *blobs = kernels__sprintf("%s/blobs", f->repo_dir);
	struct statvfs vs;
	int rc = 0;

	if (!blobs)
		return KERNELS_ENOMEM;
	if ((rc = blobs_open(f)) == 0 && statvfs(blobs, &vs) == 0) {
		unsigned long long avail = (unsigned long long)vs.f_bavail * vs.f_frsize;
		if (need > avail)
			rc = kernels__error(KERNELS_EIO,
					    "%s needs %llu more bytes in %s but only %llu are free; free some space "
					    "there, or point HF_HUB_CACHE (KERNELS_CACHE) at a larger disk", f->repo_id,
					    need, blobs, avail);
	}
	free(blobs);
	return rc;
}

static int etag_order(const void *a, const void *b)
{
	const kernels__tree_entry *x = *(const kernels__tree_entry *const *)a;
	const kernels__tree_entry *y = *(const kernels__tree_entry *const *)b;
	int c = strcmp(kernels__tree_entry_blob(x), kernels__tree_entry_blob(y));

	return c ? c : (x < y ? -1 : x > y); /* ties in listing order: a blob's first file leads */
}

static int name_order(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in blobs/, sorted: for many blobs, one read of the folder
 * replaces a stat per blob (most are absent in a first fetch). */
static int blob_names(const char *repo_dir, char ***out, size_t *count)
{
	char *path = kernels__sprintf("%s/blobs", repo_dir), **v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *d = NULL;
	DIR *dir;

	*out = NULL;
	*count = 0;
	if (!path)
		return KERNELS_ENOMEM;
	dir = opendir(path);
	free(path);
	while (dir && (d = readdir(dir))) {
		if (!kernels__is_etag(d->d_name))
			continue;
		if (KERNELS__ARRAY_GROW(v, cap, n) < 0)
			break;
		if (!(v[n] = kernels__strdup(d->d_name)))
			break;
		n++;
	}
	if (dir)
		closedir(dir);
	if (d) { /* stopped early: out of memory */
		while (n)
			free(v[--n]);
		free(v);
		return kernels__error_oom();
	}
	if (n)
		qsort(v, n, sizeof(*v), name_order);
	*out = v;
	*count = n;
	return 0;
}

/* The listing's files, sorted by the blob they need: *out (the caller
 * frees the array, not the entries), *count of them. */
static int files_by_blob(fetch *f, const kernels__tree *tree, const kernels__tree_entry ***out, size_t *count)
{
	const kernels__tree_entry **by = NULL;
	size_t i, n = 0;

	for (i = 0; i < tree->n; i++)
		n += !tree->entries[i].is_dir;
	if (n > FETCH_FILES_MAX)
		return kernels__error(KERNELS_EINVAL,
				      "%s at %.12s: %zu files asked for in one call, more than the %d a "
				      "variant may have; refusing before fetching anything", f->repo_id, f->commit, n,
				      FETCH_FILES_MAX);
	if (n && !(by = malloc(n * sizeof(*by))))
		return kernels__error_oom();
	for (i = 0, n = 0; i < tree->n; i++) {
		const kernels__tree_entry *e = &tree->entries[i];
		if (e->is_dir)
			continue;
		if (!kernels__is_etag(kernels__tree_entry_blob(e))) {
			free(by);
			return kernels__error(KERNELS_EPARSE, "%s: the hash '%s' cannot name a blob", e->path,
					      kernels__tree_entry_blob(e));
		}
		if (f->stats) {
			f->stats->files++;
			f->stats->bytes_total += (unsigned long long)e->size;
		}
		by[n++] = e;
	}
	if (n)
		qsort(by, n, sizeof(*by), etag_order);
	*out = by;
	*count = n;
	return 0;
}

/* huggingface_hub without symlinks (HF_HUB_DISABLE_SYMLINKS, or a
 * filesystem that has none) leaves each file as a regular file in the
 * snapshot, its blob moved there: one that hashes to its listed name is
 * in the cache as it is. Marked and dropped from `by`; only a regular
 * file is hashed, so a cache of links pays one lstat per file. */
static int drop_plain_files(fetch *f, const kernels__tree *tree, const kernels__tree_entry **by, size_t *n)
{
	size_t i, kept = 0;
	struct stat st;
	char *snap;

	f->entries = tree->entries;
	if (!(f->mark = calloc(tree->n + 1, 1)))
		return kernels__error_oom();
	for (i = 0; i < *n; i++) {
		const kernels__tree_entry *e = by[i];
		if (!(snap = kernels__sprintf("%s/snapshots/%s/%s", f->repo_dir, f->commit, e->path)))
			return KERNELS_ENOMEM;
		if (lstat(snap, &st) == 0 && S_ISREG(st.st_mode) &&
		    kernels__cache_file_ok(f->repo_dir, f->commit, e->path, kernels__tree_entry_blob(e), e->size))
			f->mark[e - tree->entries] |= MARK_PLAIN;
		else
			by[kept++] = e;
		free(snap);
	}
	*n = kept;
	return 0;
}

/* In `by` (sorted by blob), each file after the first of its blob set to
 * NULL: it shares that one's blob (of one size: kernels__tree_check). */
static size_t one_per_blob(fetch *f, const kernels__tree_entry **by, size_t n)
{
	const kernels__tree_entry *lead = NULL;
	size_t i, unique = 0;

	for (i = 0; i < n; i++) {
		if (lead && !strcmp(kernels__tree_entry_blob(by[i]), kernels__tree_entry_blob(lead))) {
			f->mark[lead - f->entries] |= MARK_SHARED;
			by[i] = NULL;
			continue;
		}
		lead = by[i];
		unique++;
	}
	return unique;
}

static void add_job(fetch *f, const kernels__tree_entry *e, const char *etag)
{
	job *j = &f->jobs[f->n_jobs++];

	j->f = f;
	j->entry = e;
	j->etag = etag;
	j->lfs = e->lfs_sha256 != NULL;
	j->size = e->size;
	j->fd = -1;
	j->lock.fd = -1;
	kernels__hub_headers_clear(&j->hd);
	j->state = J_WAIT_LOCK;
}

/* The bytes of blob `etag` an earlier try left in its .incomplete, which
 * this one resumes after: they take no more room. A file longer than the
 * blob is started over (open_incomplete), so it counts for nothing. */
static long long resumable(const fetch *f, const char *etag, long long size)
{
	char *inc = kernels__sprintf("%s/blobs/%s.incomplete", f->repo_dir, etag);
	struct stat st;
	long long have = inc && lstat(inc, &st) == 0 && S_ISREG(st.st_mode) ? (long long)st.st_size : 0;

	if (!inc)
		kernels_error_clear(); /* out of memory: counted whole, which fails nothing */
	free(inc);
	return have <= size ? have : 0;
}

/* One job per distinct blob the cache lacks, in O(n log n): the files are
 * sorted by hash, so files sharing a blob sit together. */
static int plan(fetch *f, const kernels__tree *tree)
{
	const kernels__tree_entry **by = NULL;
	unsigned long long need = 0, room = 0; /* the blobs' bytes; those not on disk yet */
	char **present = NULL;
	size_t i, n = 0, unique = 0, n_present = 0;
	int rc, readdir_mode;

	if (!(f->cache_name = kernels__repo_cache_name(f->type, f->repo_id)))
		return KERNELS_ENOMEM;
	if ((rc = files_by_blob(f, tree, &by, &n)) < 0 || (rc = drop_plain_files(f, tree, by, &n)) < 0)
		goto out;
	unique = one_per_blob(f, by, n);
	readdir_mode = unique >= BLOBS_READDIR_MIN;
	if (readdir_mode && (rc = blob_names(f->repo_dir, &present, &n_present)) < 0)
		goto out;
	if (!(f->jobs = calloc(unique ? unique : 1, sizeof(*f->jobs)))) {
		rc = kernels__error_oom();
		goto out;
	}
	/* LFS files first: each needs a second hop (the Hub's redirect, then
	 * the CDN), so its request goes out before the others' and takes a
	 * connection the call has open (over HTTP/1.1 the others may wait for
	 * new ones, which they can afford: their answer is one hop). */
	for (i = 0; i < 2 * n; i++) {
		const kernels__tree_entry *e = by[i % n];
		const char *etag;
		if (!e || (e->lfs_sha256 != NULL) != (i < n))
			continue;
		etag = kernels__tree_entry_blob(e);
		if ((!readdir_mode || (n_present && bsearch(&etag, present, n_present, sizeof(*present),
							    name_order))) &&
		    kernels__cache_blob_ok(f->repo_dir, etag, e->size))
			continue; /* in the cache already: only its links are made */
		add_job(f, e, etag);
		need += (unsigned long long)e->size;
		room += (unsigned long long)(e->size - resumable(f, etag, e->size));
	}
	f->all_total = need;
	if (room)
		rc = disk_check(f, room);
out:
	while (n_present)
		free(present[--n_present]);
	free(present);
	free(by);
	return rc;
}

/* A blob this call fetched for several files was copied to each of them:
 * removed once they all hold it, leaving blobs/ as huggingface_hub's move
 * leaves it. */
static void drop_copied_blobs(fetch *f, const kernels__tree *tree)
{
	size_t i;

	for (i = 0; f->blobs_fd >= 0 && i < tree->n; i++)
		if ((f->mark[i] & (MARK_FRESH | MARK_SHARED)) == (MARK_FRESH | MARK_SHARED))
			unlinkat(f->blobs_fd, kernels__tree_entry_blob(&tree->entries[i]), 0);
}

/* HF_HUB_DISABLE_SYMLINKS: plain files, as huggingface_hub puts them: a
 * blob this call fetched for this file alone moved there. Processes filling
 * one cache this way at once (the ranks of one job) race for blobs/: the
 * first to finish moves, or once copied removes, a blob the others saw
 * there a moment before. Its move is one rename, so a blob gone from under
 * this call has reached this very file unless another commit's snapshot
 * took it: then the error stands. */
static int place_plain(fetch *f, size_t i)
{
	const kernels__tree_entry *e = &f->entries[i];
	const char *blob = kernels__tree_entry_blob(e);
	char msg[1024];
	int rc = kernels__cache_place(f->repo_dir, f->commit, e->path, blob,
				      (f->mark[i] & (MARK_FRESH | MARK_SHARED)) == MARK_FRESH);

	if (rc >= 0)
		return rc;
	snprintf(msg, sizeof(msg), "%s", kernels_error_last());
	if (kernels__cache_file_ok(f->repo_dir, f->commit, e->path, blob, e->size))
		return 0;
	return kernels__error(rc, "%s", msg);
}

/* Links every file once all blobs are in place; counts what was cached. */
static int link_all(fetch *f, const kernels__tree *tree)
{
	size_t i;
	int rc;

	for (i = 0; i < tree->n; i++) {
		const kernels__tree_entry *e = &tree->entries[i];
		if (e->is_dir)
			continue;
		if ((f->mark[i] & MARK_PLAIN) ||
		    kernels__cache_link_ok(f->repo_dir, f->commit, e->path, kernels__tree_entry_blob(e), e->size)) {
			if (f->stats)
				f->stats->files_cached++;
			continue;
		}
		if (f->cfg->no_symlinks)
			rc = place_plain(f, i);
		else
			rc = kernels__cache_link(f->repo_dir, f->commit, e->path, kernels__tree_entry_blob(e));
		if (rc < 0)
			return rc;
	}
	if (f->cfg->no_symlinks)
		drop_copied_blobs(f, tree);
	return 0;
}

static void fetch_free(fetch *f)
{
	size_t i;

	for (i = 0; i < f->n_jobs; i++) {
		job *j = &f->jobs[i];
		close_job(f, j);
		EVP_MD_CTX_free(j->md);
		free(j->blob);
		free(j->incomplete);
		free(j->lock_path);
		free(j->url);
		kernels__hub_headers_clear(&j->hd);
		kernels__buf_free(&j->errbody);
	}
	free(f->jobs);
	free(f->mark);
	free(f->cdn_url);
	if (f->borrowed)
		kernels__hub_conn_release(f->cfg->conn);
	else if (f->multi)
		curl_multi_cleanup(f->multi);
	if (f->blobs_fd >= 0)
		close(f->blobs_fd);
	free(f->repo_dir);
	free(f->cache_name);
}

int kernels__hub_fetch_tree(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			    const char *commit, const kernels__tree *tree, kernels_download_stats *stats)
{
	kernels__cache_lock repo_lock;
	fetch f;
	int rc, any = 0;

	memset(&f, 0, sizeof(f));
	f.blobs_fd = -1;
	f.cfg = cfg;
	f.type = type;
	f.repo_id = repo_id;
	f.commit = commit;
	f.stats = stats;
	if (!(f.repo_dir = kernels__cache_repo_dir(cfg, type, repo_id)))
		return KERNELS_ENOMEM;
	/* Shared with other transfers, exclusive of a removal (kernels/cache.h),
	 * from judging what is cached to the last link. A cache we may not write
	 * gets no lock: this call writes nothing there either (plan finds it all
	 * or fails on the first write), and no removal can run through it. */
	if ((rc = kernels__cache_repo_lock(cfg, type, repo_id, LOCK_SH, &repo_lock)) < 0)
		goto out;
	if ((rc = plan(&f, tree)) < 0)
		goto out;
	any = f.n_jobs > 0;
	if (any) {
		if (cfg->offline) {
			rc = kernels__error(KERNELS_EOFFLINE,
					    "offline: files of %s at %s are not in the cache; download "
					    "them while online (%s)", repo_id, commit, kernels__config_online_hint(cfg));
			goto out;
		}
		if ((rc = kernels__hub_global_init()) < 0)
			goto out;
		kernels__cache_tag(cfg);
		/* The call's connections: the Hub's is open already (the listings
		 * came over it), and the CDN's stays for the call's next fetch. */
		if (cfg->conn && (f.multi = kernels__hub_conn_hold(cfg->conn)))
			f.borrowed = 1;
		else if (!(f.multi = curl_multi_init())) {
			rc = kernels__error_oom();
			goto out;
		}
		rc = run(&f);
		if (f.cdn_url)
			kernels__hub_cdn_seen(f.cfg, f.cdn_url); /* sets no error: fail_msg keeps run()'s */
		if (rc < 0) {
			kernels__error(rc, "%s", f.fail_msg);
			kernels__error_mark_unserved(f.fail_unserved);
			goto out;
		}
	}
	/* The renames into blobs/ survive a crash before any link points at them. */
	if (f.published)
		kernels__cache_sync_folder(f.repo_dir, "blobs");
	rc = link_all(&f, tree);
out:
	kernels__cache_settle(cfg, &f.receipts);
	kernels__cache_unlock(&repo_lock);
	fetch_free(&f);
	return rc;
}
