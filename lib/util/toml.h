/* Internal: a strict TOML 1.0 reader for pyproject.toml and
 * kernel-status.toml. Parses a whole document into a small tree (tables,
 * arrays, scalars) that keeps each value's line and column, so callers can
 * say where a wrong value is. Anything that is not valid TOML is refused
 * with "name:line:col: what is wrong; what was expected".
 *
 * Limits (hostile input): KERNELS__TOML_MAX_INPUT bytes, nesting of tables,
 * arrays and inline tables at most KERNELS__TOML_MAX_DEPTH deep; recursion
 * in the parser, the tree and its release is bounded by that depth. */
#ifndef KERNELS_LIB_TOML_H
#define KERNELS_LIB_TOML_H

#include <stddef.h>
#include <stdint.h>

#define KERNELS__TOML_MAX_INPUT (8u * 1024u * 1024u)
#define KERNELS__TOML_MAX_DEPTH 128

typedef enum {
	KERNELS__TOML_TABLE = 0,
	KERNELS__TOML_ARRAY,
	KERNELS__TOML_STRING,
	KERNELS__TOML_INTEGER,
	KERNELS__TOML_FLOAT,
	KERNELS__TOML_BOOL,
	KERNELS__TOML_DATETIME      /* kept as its source text, see datetime_kind */
} kernels__toml_type;

typedef enum {
	KERNELS__TOML_OFFSET_DATETIME = 0,  /* 1979-05-27T07:32:00Z */
	KERNELS__TOML_LOCAL_DATETIME,       /* 1979-05-27T07:32:00 */
	KERNELS__TOML_LOCAL_DATE,           /* 1979-05-27 */
	KERNELS__TOML_LOCAL_TIME            /* 07:32:00 */
} kernels__toml_datetime_kind;

typedef struct kernels__toml_value kernels__toml_value;

#define KERNELS__TOML_FROZEN 4u

/* One key of a table, in document order. */
typedef struct {
	char *key;            /* NUL-terminated; may also contain NUL (\u0000), see key_len */
	size_t key_len;
	int line, col;        /* where the key was written (1-based; col counts characters) */
	kernels__toml_value *value;
} kernels__toml_entry;

/* A node of the tree. Read the public fields; use the accessors below for
 * the rest. Everything belongs to the document root. */
struct kernels__toml_value {
	kernels__toml_type type;
	int line, col;        /* where the value (or the table's header) starts */
	/* parser bookkeeping; KERNELS__TOML_FROZEN is set on values written
	 * inline (inline tables, arrays and everything inside them) */
	unsigned flags;
	int section;
	int depth;
	kernels__toml_datetime_kind datetime_kind;
	union {
		struct {
			char *ptr;    /* NUL-terminated; STRING may contain NUL, see len */
			size_t len;
		} s;              /* STRING, DATETIME (source text), FLOAT (source text) */
		long long i;      /* INTEGER */
		int b;            /* BOOL */
		struct {
			kernels__toml_entry *items;
			size_t n, cap;
			uint32_t *index;     /* open addressing, entry index + 1 */
			size_t index_cap;
		} t;              /* TABLE */
		struct {
			kernels__toml_value **items;
			size_t n, cap;
		} a;              /* ARRAY */
	} u;
	double f;             /* FLOAT value (u.s keeps its text) */
};

/* Parses `len` bytes of `data` (need not be NUL-terminated). `name` names
 * the input in messages (a path, "kernel-status.toml"). On success *out is
 * the root table, owned by the caller: free with kernels__toml_free.
 * Errors: KERNELS_EPARSE (invalid or unsupported TOML; message has
 * name:line:col), KERNELS_EINVAL (input over the size limit), KERNELS_ENOMEM. */
int kernels__toml_parse(const char *data, size_t len, const char *name, kernels__toml_value **out);

/* Reads and parses the file at `path` (messages name the path). Also
 * KERNELS_ENOTFOUND when it does not exist, KERNELS_EIO when unreadable. */
int kernels__toml_parse_file(const char *path, kernels__toml_value **out);

/* Frees a root returned by the parse functions (NULL is fine). */
void kernels__toml_free(kernels__toml_value *root);

/* The entry `key` of a table, NULL when absent or `table` is not a table. */
const kernels__toml_entry *kernels__toml_entry_get(const kernels__toml_value *table, const char *key);
/* Its value, or NULL. */
const kernels__toml_value *kernels__toml_get(const kernels__toml_value *table, const char *key);

#ifdef KERNELS_TESTING
/* The test build only (the tests and fuzzers walk documents with these). */
/* Follows a NULL-terminated list of keys through nested tables:
 * kernels__toml_get_path(root, "tool", "kernels", "dependencies", NULL).
 * NULL when a key is missing or an intermediate value is not a table. */
const kernels__toml_value *kernels__toml_get_path(const kernels__toml_value *root, ...)
	__attribute__((sentinel));

/* "table", "array", "string", "integer", "float", "boolean", "datetime". */
const char *kernels__toml_type_name(kernels__toml_type type);
#endif

#endif
