/* Internal to the TOML reader (toml.c and toml_scan.c), never included
 * elsewhere: the parser's state, the tree's nodes and the tokens of the
 * language (whitespace, comments, strings, keys, numbers, dates). toml.c
 * builds documents from these; this half knows nothing of tables given by
 * headers or of key/value lines. */
#ifndef KERNELS_LIB_TOML_SCAN_H
#define KERNELS_LIB_TOML_SCAN_H

#include "toml.h"
#include "util.h"

/* Table flags. A table may be given by a [header] once; a table made by
 * dotted keys belongs to the section that made it and is closed for dotted
 * keys and headers after it; inline tables and arrays written as values are
 * closed for good. */
#define T_EXPLICIT 1u   /* defined by [header] or as a [[array]] element */
#define T_DOTTED 2u     /* created by a dotted key in `section` */
#define T_FROZEN KERNELS__TOML_FROZEN /* inline table or static array (and all below) */
#define T_AOT 8u        /* array created by [[header]] */

typedef struct {
	const char *src;
	size_t len, pos;
	const char *name;
	/* line/column cache: positions are asked for in increasing order, so
	 * advancing from the last answer keeps this linear overall */
	size_t cpos;
	int cline, ccol;
	int section;
	kernels__toml_value *root, *cur;
} parser;

/* A dotted key; each part keeps where it was written. Heap-allocated so
 * that nesting inline tables does not pile large frames on the stack. */
typedef struct {
	kernels__buf buf;
	size_t pos;
	int line, col;
} keypart;

typedef struct {
	keypart *part;
	size_t n, cap;
} keypath;

/* Positions and messages: line and column of `pos` (1-based; columns
 * count characters), and "name:line:col: what" set as the error. */
void kernels__toml_locate(parser *p, size_t pos, int *line, int *col);
int kernels__toml_fail_at(parser *p, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int kernels__toml_fail_expected(parser *p, const char *what);

/* The tree's nodes: a new value (NULL past KERNELS__TOML_MAX_DEPTH or out
 * of memory, error set), a table's keys (hash-indexed), an array's items;
 * freeze marks a value and all below it as written inline. */
kernels__toml_value *kernels__toml_value_new(parser *p, kernels__toml_type type, size_t pos, int depth);
kernels__toml_value *kernels__toml_value_new_lc(parser *p, kernels__toml_type type, size_t pos, int line, int col,
						int depth);
void kernels__toml_value_free(kernels__toml_value *v);
long kernels__toml_table_find(const kernels__toml_value *t, const char *key, size_t len);
int kernels__toml_table_add(kernels__toml_value *t, const char *key, size_t len, int line, int col,
			    kernels__toml_value *v);
int kernels__toml_array_add(kernels__toml_value *a, kernels__toml_value *v);
void kernels__toml_freeze(kernels__toml_value *v);

/* Tokens: the byte `ahead` of the position (-1 at the end), blanks,
 * comments and line ends, the end of a statement, UTF-8. */
int kernels__toml_at_end(parser *p);
int kernels__toml_peek(parser *p, size_t ahead);
void kernels__toml_skip_ws(parser *p);
int kernels__toml_skip_newline(parser *p);
int kernels__toml_skip_ws_comments_newlines(parser *p);
int kernels__toml_end_of_statement(parser *p);
int kernels__toml_check_utf8(parser *p);
int kernels__toml_is_bare(int c);
int kernels__toml_is_digit(int c);

/* Strings (one-line or, when allow_multi, multi-line; into `b`), dotted
 * keys (free with keypath_free; keypath_str spells the first `upto`
 * parts), numbers and dates (a new value in *out). */
int kernels__toml_parse_string(parser *p, kernels__buf *b, int allow_multi);
int kernels__toml_parse_key(parser *p, keypath *k);
void kernels__toml_keypath_free(keypath *k);
const char *kernels__toml_keypath_str(const keypath *k, size_t upto, char *out, size_t size);
int kernels__toml_parse_number(parser *p, kernels__toml_value **out, int depth);
int kernels__toml_parse_datetime(parser *p, kernels__toml_value **out, int depth);

#endif
