/* The C side of the local Hub fixture: spawns tests/hub/server.py and talks
 * to its control endpoint with libcurl. */
#include "test_hub.h"
#include "testutil.h"
#include "clock.h"

#include <curl/curl.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

struct test_hub {
	pid_t pid;
	char *root;
	char *endpoint;
	char *cdn;
	char commit[41];
};

static const char *source_dir(void)
{
	const char *env = getenv("KERNELS_SOURCE_DIR");

	return env && *env ? env : KERNELS_SOURCE_DIR;
}

/* Reads the port file once it exists; 1 when endpoint and cdn were set. */
static int read_port_file(test_hub *hub, const char *path)
{
	json_t *root = json_load_file(path, 0, NULL);
	const char *ep, *cdn;
	int ok = 0;

	if (!root)
		return 0;
	ep = json_string_value(json_object_get(root, "endpoint"));
	cdn = json_string_value(json_object_get(root, "cdn"));
	if (ep && cdn) {
		hub->endpoint = strdup(ep);
		hub->cdn = strdup(cdn);
		ok = 1;
	}
	json_decref(root);
	return ok;
}

static void hub_free(test_hub *hub)
{
	if (!hub)
		return;
	if (hub->root)
		test_rmtree(hub->root);
	free(hub->root);
	free(hub->endpoint);
	free(hub->cdn);
	free(hub);
}

test_hub *test_hub_start(void)
{
	test_hub *hub = calloc(1, sizeof(*hub));
	char *script = NULL, *port_file = NULL, ppid[32];
	int waited_ms, status;

	if (!hub || !(hub->root = test_mkdtemp("hub"))) {
		fprintf(stderr, "test_hub_start: cannot create a temp folder: %s\n", strerror(errno));
		goto fail;
	}
	if (asprintf(&script, "%s/tests/hub/server.py", source_dir()) < 0 ||
	    asprintf(&port_file, "%s/server.json", hub->root) < 0)
		goto fail;
	snprintf(ppid, sizeof(ppid), "%ld", (long)getpid());

	hub->pid = fork();
	if (hub->pid < 0) {
		fprintf(stderr, "test_hub_start: fork failed: %s\n", strerror(errno));
		goto fail;
	}
	if (hub->pid == 0) {
		execl(KERNELS_PYTHON, KERNELS_PYTHON, script, "--root", hub->root, "--port-file", port_file,
		      "--parent-pid", ppid, "--remove-root", (char *)NULL);
		fprintf(stderr, "test_hub_start: cannot run %s: %s\n", KERNELS_PYTHON, strerror(errno));
		_exit(127);
	}

	/* A hang guard, not a figure: the server is up in about a second. */
	for (waited_ms = 0; waited_ms < 60000; waited_ms += 20) {
		if (access(port_file, R_OK) == 0 && read_port_file(hub, port_file))
			break;
		if (waitpid(hub->pid, &status, WNOHANG) == hub->pid) {
			fprintf(stderr, "test_hub_start: %s exited (status %d) before it was ready\n", script, status);
			hub->pid = 0;
			goto fail;
		}
		kernels__sleep_ms(20);
	}
	if (!hub->endpoint) {
		fprintf(stderr, "test_hub_start: %s not ready after 60 s\n", script);
		goto fail;
	}
	free(script);
	free(port_file);
	return hub;

fail:
	if (hub && hub->pid > 0) {
		kill(hub->pid, SIGKILL);
		waitpid(hub->pid, NULL, 0);
	}
	free(script);
	free(port_file);
	hub_free(hub);
	return NULL;
}

const char *test_hub_endpoint(const test_hub *hub)
{
	return hub->endpoint;
}

const char *test_hub_cdn(const test_hub *hub)
{
	return hub->cdn;
}

const char *test_hub_root(const test_hub *hub)
{
	return hub->root;
}

const char *test_hub_last_commit(const test_hub *hub)
{
	return hub->commit;
}

/* Runs publish.py with `args` (shell words); remembers the last commit id it printed. */
static int run_publish(test_hub *hub, const char *args)
{
	char *cmd = NULL, line[256] = "";
	FILE *p;
	int rc;

	if (asprintf(&cmd, "'%s' '%s/tests/hub/publish.py' --root '%s' %s", KERNELS_PYTHON, source_dir(), hub->root,
		     args) < 0)
		return -1;
	if (!(p = popen(cmd, "r"))) {
		free(cmd);
		return -1;
	}
	while (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (strlen(line) == 40)
			memcpy(hub->commit, line, 41);
	}
	rc = pclose(p);
	if (rc != 0)
		fprintf(stderr, "test_hub_publish: failed (status %d): %s\n", rc, cmd);
	free(cmd);
	return rc == 0 ? 0 : -1;
}

int test_hub_publish(test_hub *hub, const char *fmt, ...)
{
	char *args = NULL;
	va_list ap;
	int rc, n;

	va_start(ap, fmt);
	n = vasprintf(&args, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	rc = run_publish(hub, args);
	free(args);
	return rc;
}

int test_hub_publish_json(test_hub *hub, const char *json)
{
	static unsigned serial;
	char *path = NULL, *args = NULL;
	int rc = -1;
	/* The hub's root is private to it, so a file there cannot clash. */
	unsigned n = __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED);

	if (asprintf(&path, "%s/spec-%ld-%u.json", hub->root, (long)getpid(), n) < 0)
		return -1;
	if (test_write_file(path, json, strlen(json)) == 0 && asprintf(&args, "--spec '%s'", path) >= 0)
		rc = run_publish(hub, args);
	unlink(path);
	free(args);
	free(path);
	return rc;
}

struct body {
	char *data;
	size_t len;
};

static size_t collect(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct body *b = userdata;
	size_t n = size * nmemb;
	char *grown = realloc(b->data, b->len + n + 1);

	if (!grown)
		return 0;
	b->data = grown;
	memcpy(b->data + b->len, ptr, n);
	b->len += n;
	b->data[b->len] = '\0';
	return n;
}

/* One request to the control endpoint; returns the HTTP status (or -1) and
 * the body in *out when out is not NULL. */
static long control(test_hub *hub, const char *method, const char *path, const char *json, char **out)
{
	CURL *curl = curl_easy_init();
	struct curl_slist *headers = NULL;
	struct body b = { NULL, 0 };
	char *url = NULL;
	long status = -1;

	if (out)
		*out = NULL;
	if (!curl || asprintf(&url, "%s%s", hub->endpoint, path) < 0)
		goto done;
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(curl, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &b);
	if (json) {
		headers = curl_slist_append(headers, "Content-Type: application/json");
		curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, json);
	}
	if (curl_easy_perform(curl) == CURLE_OK)
		curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	else
		fprintf(stderr, "test_hub: %s %s failed\n", method, url);
done:
	if (out && status == 200)
		*out = b.data ? b.data : strdup("");
	else
		free(b.data);
	curl_slist_free_all(headers);
	curl_easy_cleanup(curl);
	free(url);
	return status;
}

int test_hub_fault(test_hub *hub, const char *json)
{
	char *body = NULL;
	long status = control(hub, "POST", "/_fixture/faults", json, &body);

	if (status != 200)
		fprintf(stderr, "test_hub_fault: rejected (HTTP %ld): %s\n", status, json);
	free(body);
	return status == 200 ? 0 : -1;
}

void test_hub_faults_clear(test_hub *hub)
{
	control(hub, "DELETE", "/_fixture/faults", NULL, NULL);
}

int test_hub_config(test_hub *hub, const char *json)
{
	return control(hub, "POST", "/_fixture/config", json, NULL) == 200 ? 0 : -1;
}

char *test_hub_log(test_hub *hub)
{
	char *body = NULL;

	control(hub, "GET", "/_fixture/log", NULL, &body);
	return body;
}

int test_hub_log_count(test_hub *hub, const char *method, const char *path_substring)
{
	return test_hub_log_count_ex(hub, method, path_substring, NULL, 0, -1);
}

int test_hub_log_count_ex(test_hub *hub, const char *method, const char *path_substring, const char *listener,
			  int status, int authorization)
{
	char *text = test_hub_log(hub);
	json_t *log, *entry;
	size_t i;
	int count = 0;

	if (!text)
		return -1;
	log = json_loads(text, 0, NULL);
	free(text);
	if (!json_is_array(log)) {
		json_decref(log);
		return -1;
	}
	json_array_foreach(log, i, entry) {
		const char *m = json_string_value(json_object_get(entry, "method"));
		const char *p = json_string_value(json_object_get(entry, "path"));
		const char *l = json_string_value(json_object_get(entry, "listener"));
		json_t *auth = json_object_get(entry, "authorization");

		if (method && (!m || strcmp(m, method)))
			continue;
		if (path_substring && (!p || !strstr(p, path_substring)))
			continue;
		if (listener && (!l || strcmp(l, listener)))
			continue;
		if (status && json_integer_value(json_object_get(entry, "status")) != status)
			continue;
		if (authorization >= 0 && json_is_true(auth) != (authorization > 0))
			continue;
		count++;
	}
	json_decref(log);
	return count;
}

int test_hub_log_connections(test_hub *hub, const char *listener)
{
	char *text = test_hub_log(hub);
	json_t *log, *entry, *seen = json_object();
	size_t i;
	int count = -1;

	log = text ? json_loads(text, 0, NULL) : NULL;
	free(text);
	if (json_is_array(log) && seen) {
		json_array_foreach(log, i, entry) {
			const char *l = json_string_value(json_object_get(entry, "listener"));
			const char *c = json_string_value(json_object_get(entry, "conn"));
			if (c && (!listener || (l && !strcmp(l, listener))))
				json_object_set_new(seen, c, json_true());
		}
		count = (int)json_object_size(seen);
	}
	json_decref(seen);
	json_decref(log);
	return count;
}

void test_hub_log_clear(test_hub *hub)
{
	control(hub, "DELETE", "/_fixture/log", NULL, NULL);
}

void test_hub_stop(test_hub *hub)
{
	int i;

	if (!hub)
		return;
	if (hub->pid > 0) {
		kill(hub->pid, SIGTERM);
		for (i = 0; i < 250 && waitpid(hub->pid, NULL, WNOHANG) == 0; i++)
			kernels__sleep_ms(20);
		if (i == 250) {
			kill(hub->pid, SIGKILL);
			waitpid(hub->pid, NULL, 0);
		}
	}
	hub_free(hub);
}

void test_hub_options(kernels_options *o, const test_hub *hub, const char *cache, const kernels_system *sys)
{
	kernels_options_init(o, KERNELS_OPTIONS_VERSION);
	o->endpoint = test_hub_endpoint(hub);
	o->cache_dir = cache;
	o->offline = 0;
	o->system = sys;
}

char *test_dead_endpoint(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), ok;
	char *url = NULL;

	if (fd < 0)
		return NULL;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && getsockname(fd, (struct sockaddr *)&a, &len) == 0;
	close(fd); /* nothing listens there now */
	if (ok && asprintf(&url, "http://127.0.0.1:%d", ntohs(a.sin_port)) < 0)
		url = NULL;
	return url;
}
