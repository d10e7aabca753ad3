/* The strict TOML reader: unit cases, the pyproject.toml collection under
 * tests/data/pyproject/ (valid files parse; invalid ones fail at the
 * line:col listed in invalid/expected.txt), and hostile input.
 *
 * `test_toml --dump FILE` prints the parsed tree as tagged JSON (the
 * toml-test convention) for tests/python/test_lock_format.py, which checks
 * it against Python's tomllib. Exit 2 and the message on stderr when the
 * file is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <cmocka.h>
#include <jansson.h>

#include "kernels.h"
#include "toml.h"
#include "testutil.h"

#define DATA KERNELS_SOURCE_DIR "/tests/data/pyproject"

/* ---- JSON dump ---- */

static json_t *tagged(const char *type, json_t *value)
{
	return json_pack("{s:s, s:o}", "type", type, "value", value);
}

static json_t *to_json(const kernels__toml_value *v)
{
	static const char *dt_names[] = { "datetime", "datetime-local", "date-local", "time-local" };
	json_t *j;
	size_t i;
	char num[64];

	switch (v->type) {
	case KERNELS__TOML_TABLE:
		j = json_object();
		for (i = 0; i < v->u.t.n; i++)
			json_object_setn_new(j, v->u.t.items[i].key, v->u.t.items[i].key_len,
					     to_json(v->u.t.items[i].value));
		return j;
	case KERNELS__TOML_ARRAY:
		j = json_array();
		for (i = 0; i < v->u.a.n; i++)
			json_array_append_new(j, to_json(v->u.a.items[i]));
		return j;
	case KERNELS__TOML_STRING:
		return tagged("string", json_stringn(v->u.s.ptr, v->u.s.len));
	case KERNELS__TOML_INTEGER:
		snprintf(num, sizeof(num), "%lld", v->u.i);
		return tagged("integer", json_string(num));
	case KERNELS__TOML_FLOAT:
		snprintf(num, sizeof(num), "%.17g", v->f);
		return tagged("float", json_string(num));
	case KERNELS__TOML_BOOL:
		return tagged("bool", json_string(v->u.b ? "true" : "false"));
	case KERNELS__TOML_DATETIME:
		return tagged(dt_names[v->datetime_kind], json_stringn(v->u.s.ptr, v->u.s.len));
	}
	return json_null();
}

static int dump(const char *path)
{
	kernels__toml_value *root;
	json_t *j;

	if (kernels__toml_parse_file(path, &root) < 0) {
		fprintf(stderr, "%s\n", kernels_error_last());
		return 2;
	}
	j = to_json(root);
	json_dumpf(j, stdout, JSON_COMPACT | JSON_ENSURE_ASCII);
	putchar('\n');
	json_decref(j);
	kernels__toml_free(root);
	return 0;
}

/* ---- helpers ---- */

static kernels__toml_value *parse_ok(const char *text)
{
	kernels__toml_value *root = NULL;
	int rc = kernels__toml_parse(text, strlen(text), "t.toml", &root);
	if (rc != 0)
		fail_msg("refused valid TOML: %s\n--\n%s", kernels_error_last(), text);
	return root;
}

/* Refused with a message starting "t.toml:LINE:COL:" and containing `what`. */
static void parse_bad(const char *text, size_t len, int line, int col, const char *what)
{
	kernels__toml_value *root = NULL;
	char prefix[64];
	int rc = kernels__toml_parse(text, len, "t.toml", &root);

	if (rc != KERNELS_EPARSE)
		fail_msg("accepted or wrong code %d for invalid TOML:\n%s", rc, text);
	assert_null(root);
	snprintf(prefix, sizeof(prefix), "t.toml:%d:%d: ", line, col);
	if (strncmp(kernels_error_last(), prefix, strlen(prefix)) != 0 || (what && !strstr(kernels_error_last(), what)))
		fail_msg("for:\n%s\nwanted '%s...%s', got: %s", text, prefix, what ? what : "", kernels_error_last());
}
#define BAD(text, line, col, what) parse_bad(text, sizeof(text) - 1, line, col, what)

static const char *str_at(const kernels__toml_value *root, const char *a, const char *b)
{
	const kernels__toml_value *v = kernels__toml_get_path(root, a, b, NULL);
	assert_non_null(v);
	assert_int_equal(v->type, KERNELS__TOML_STRING);
	return v->u.s.ptr;
}

/* ---- unit cases ---- */

static void test_strings(void **state)
{
	kernels__toml_value *r = parse_ok(
		"[s]\n"
		"basic = \"tab\\there \\\"q\\\" \\\\ \\u00e9 \\U0001F600\"\n"
		"literal = 'C:\\path\\no\\escape'\n"
		"multi = \"\"\"\nline1\nline2 \\\n    joined\"\"\"\n"
		"multilit = '''\nraw \\n ''line'' '''\n"
		"quotes = \"\"\"a\"\"\"\"\"\n"
		"empty = \"\"\n"
		"crlf = \"\"\"\r\nx\r\ny\"\"\"\n");
	(void)state;
	assert_string_equal(str_at(r, "s", "basic"), "tab\there \"q\" \\ \xc3\xa9 \xf0\x9f\x98\x80");
	assert_string_equal(str_at(r, "s", "literal"), "C:\\path\\no\\escape");
	assert_string_equal(str_at(r, "s", "multi"), "line1\nline2 joined");
	assert_string_equal(str_at(r, "s", "multilit"), "raw \\n ''line'' ");
	assert_string_equal(str_at(r, "s", "quotes"), "a\"\"");
	assert_string_equal(str_at(r, "s", "empty"), "");
	assert_string_equal(str_at(r, "s", "crlf"), "x\ny");
	kernels__toml_free(r);
}

static void test_numbers_and_more(void **state)
{
	kernels__toml_value *r;
	const kernels__toml_value *v;
	(void)state;
	BAD("b = -0x7f\n", 1, 5, "invalid number");
	r = parse_ok("a = 1_000\nc = 0xDEAD_beef\nd = 0o755\ne = 0b1010\nf = +3.5e-2\ng = -inf\n"
		     "i = 9223372036854775807\nj = -9223372036854775808\nk = true\nl = 1979-05-27T07:32:00Z\n"
		     "m = 1979-05-27\nn = 07:32:00.5\no = 1979-05-27 07:32:00-08:00\np = [1, [2, 'x'], {y = 3},]\n");
	assert_int_equal(kernels__toml_get(r, "a")->u.i, 1000);
	assert_int_equal(kernels__toml_get(r, "c")->u.i, 0xDEADBEEF);
	assert_int_equal(kernels__toml_get(r, "d")->u.i, 0755);
	assert_int_equal(kernels__toml_get(r, "e")->u.i, 10);
	assert_true(kernels__toml_get(r, "f")->f == 3.5e-2);
	assert_true(kernels__toml_get(r, "g")->f < -1e308);
	assert_true(kernels__toml_get(r, "i")->u.i == INT64_MAX);
	assert_true(kernels__toml_get(r, "j")->u.i == INT64_MIN);
	assert_int_equal(kernels__toml_get(r, "k")->u.b, 1);
	v = kernels__toml_get(r, "l");
	assert_int_equal(v->type, KERNELS__TOML_DATETIME);
	assert_int_equal(v->datetime_kind, KERNELS__TOML_OFFSET_DATETIME);
	assert_int_equal(kernels__toml_get(r, "m")->datetime_kind, KERNELS__TOML_LOCAL_DATE);
	assert_int_equal(kernels__toml_get(r, "n")->datetime_kind, KERNELS__TOML_LOCAL_TIME);
	assert_string_equal(kernels__toml_get(r, "o")->u.s.ptr, "1979-05-27 07:32:00-08:00");
	v = kernels__toml_get(r, "p");
	assert_int_equal(v->type, KERNELS__TOML_ARRAY);
	assert_int_equal(v->u.a.n, 3);
	assert_int_equal(v->u.a.items[2]->type, KERNELS__TOML_TABLE);
	assert_int_equal(v->line, 14);
	assert_int_equal(v->col, 5);
	kernels__toml_free(r);
}

static void test_tables(void **state)
{
	kernels__toml_value *r = parse_ok(
		"# top\n"
		"name = \"x\"\n"
		"[tool.kernels.dependencies]\n"
		"\"kernels-community/activation\" = 1\n"
		"[a.\"b.c\".'d']\n"
		"x.y.z = 1\n"
		"x.y.w = 2\n"
		"[[arr]]\n"
		"k = 1\n"
		"[[arr]]\n"
		"k = 2\n"
		"[arr.sub]\n"
		"q = 1\n"
		"[fruit]\napple.color = 'red'\n[fruit.apple.texture]\nsmooth = true\n"
		"[x.y.z]\n[x]\n");
	const kernels__toml_value *v;
	const kernels__toml_entry *e;
	(void)state;
	v = kernels__toml_get_path(r, "tool", "kernels", "dependencies", NULL);
	assert_non_null(v);
	e = kernels__toml_entry_get(v, "kernels-community/activation");
	assert_non_null(e);
	assert_int_equal(e->line, 4);
	assert_int_equal(e->col, 1);
	assert_int_equal(e->value->col, 34);
	assert_int_equal(kernels__toml_get_path(r, "a", "b.c", "d", "x", "y", "w", NULL)->u.i, 2);
	v = kernels__toml_get(r, "arr");
	assert_int_equal(v->u.a.n, 2);
	assert_int_equal(kernels__toml_get_path(v->u.a.items[1], "sub", "q", NULL)->u.i, 1);
	assert_null(kernels__toml_get_path(v->u.a.items[0], "sub", NULL));
	assert_true(kernels__toml_get_path(r, "fruit", "apple", "texture", "smooth", NULL)->u.b);
	assert_null(kernels__toml_get_path(r, "name", "x", NULL));
	assert_null(kernels__toml_get(r, "missing"));
	kernels__toml_free(r);
}

static void test_invalid_inline(void **state)
{
	(void)state;
	BAD("a = 1\na = 2\n", 2, 1, "duplicate key 'a'");
	BAD("[a]\n[a]\n", 2, 2, "defined more than once");
	BAD("[a]\nb.c = 1\n[a.b]\n", 3, 4, "defined more than once");
	BAD("[a.b]\n[a]\nb.c = 1\n", 3, 1, "dotted key");
	BAD("a = {b = 1}\n[a]\n", 2, 2, "inline");
	BAD("a = {b = 1}\na.c = 2\n", 2, 1, "dotted key");
	BAD("a = [1]\n[[a]]\n", 2, 3, "inline");
	BAD("[[a]]\n[a]\n", 2, 2, "array of tables");
	BAD("[a]\n[[a]]\n", 2, 3, "not an array of tables");
	BAD("s = \"bad \\q\"\n", 1, 10, "invalid escape");
	BAD("s = \"\\uD800\"\n", 1, 6, "scalar value");
	BAD("s = \"\\U00110000\"\n", 1, 6, "scalar value");
	BAD("s = \"\\u12\"\n", 1, 6, "hexadecimal digits");
	BAD("s = \"open\n", 1, 5, "unterminated");
	BAD("s = '''open\n", 1, 5, "unterminated");
	BAD("s = \"a\x01b\"\n", 1, 7, "control character");
	BAD("# c\x7f\n", 1, 4, "comment");
	BAD("s = \"\xc3\x28\"\n", 1, 6, "UTF-8");
	BAD("s = \"\xed\xa0\x80\"\n", 1, 6, "UTF-8");
	BAD("s = \"\xc0\xaf\"\n", 1, 6, "UTF-8");
	BAD("\xef\xbb\xbf" "a = 1\n", 1, 1, "expected a key");
	BAD("a = 1 b = 2\n", 1, 7, "end of line");
	BAD("a = \n", 1, 5, "expected a value");
	BAD("a = {b = 1,}\n", 1, 12, "expected a key");
	BAD("a = {b = 1,\nc = 2}\n", 1, 12, "expected a key");
	BAD("a = [1 2]\n", 1, 8, "',' or ']'");
	BAD("a = 012\n", 1, 5, "leading zeros");
	BAD("a = 1__0\n", 1, 5, "invalid number");
	BAD("a = 9223372036854775808\n", 1, 5, "out of range");
	BAD("a = 0x8000000000000000\n", 1, 5, "out of range");
	BAD("a = 1.\n", 1, 5, "digits after");
	BAD("a = 1979-02-29\n", 1, 5, "no such day");
	BAD("a = 24:00:00\n", 1, 5, "invalid time");
	BAD("a = TRUE\n", 1, 5, "expected a value");
	BAD("[a\n", 1, 3, "']'");
	BAD("[[a]\n", 1, 4, "']]'");
	BAD("[]\n", 1, 2, "expected a key");
	BAD("\"\"\"k\"\"\" = 1\n", 1, 1, "multi-line string cannot be a key");
	BAD("a = 1\r\n b = 2\rc = 3\n", 2, 7, "end of line");
	BAD("a.b = 1\na.b.c = 2\n", 2, 3, "dotted key");
	BAD("x = 'a'\n[x.y]\n", 2, 2, "value");
	BAD("[a.b.c]\n[a]\nb.d = 1\n[a.b]\n", 4, 4, "defined more than once");
}

static void test_limits(void **state)
{
	size_t n = 10000, i;
	char *deep = malloc(4 * n + 16), *s;
	kernels__toml_value *r = NULL;
	int rc;
	(void)state;

	/* nested arrays past the depth limit are refused, not a stack overflow */
	s = deep;
	s += sprintf(s, "a = ");
	for (i = 0; i < n; i++)
		*s++ = '[';
	for (i = 0; i < n; i++)
		*s++ = ']';
	*s++ = '\n';
	rc = kernels__toml_parse(deep, (size_t)(s - deep), "t.toml", &r);
	assert_int_equal(rc, KERNELS_EPARSE);
	assert_non_null(strstr(kernels_error_last(), "nesting deeper"));
	/* inline tables and dotted headers too */
	s = deep;
	s += sprintf(s, "a = ");
	for (i = 0; i < n; i++)
		s += sprintf(s, "{a=");
	*s++ = '\n';
	assert_int_equal(kernels__toml_parse(deep, (size_t)(s - deep), "t.toml", &r), KERNELS_EPARSE);
	s = deep;
	*s++ = '[';
	for (i = 0; i < n / 2; i++)
		s += sprintf(s, "a.");
	s += sprintf(s, "a]\n");
	assert_int_equal(kernels__toml_parse(deep, (size_t)(s - deep), "t.toml", &r), KERNELS_EPARSE);
	free(deep);
	/* 127 levels is fine */
	{
		char ok[1024];
		s = ok;
		s += sprintf(s, "a = ");
		for (i = 0; i < 120; i++)
			*s++ = '[';
		for (i = 0; i < 120; i++)
			*s++ = ']';
		*s = '\0';
		r = parse_ok(ok);
		kernels__toml_free(r);
	}
	/* over the size limit */
	rc = kernels__toml_parse("", KERNELS__TOML_MAX_INPUT + 1, "t.toml", &r);
	assert_int_equal(rc, KERNELS_EINVAL);
	/* embedded NUL byte is a control character */
	parse_bad("a = 1\0", 6, 1, 6, "end of line");
	/* many keys: the table index keeps this fast */
	{
		size_t keys = 50000;
		char *big = malloc(keys * 24), *q = big;
		for (i = 0; i < keys; i++)
			q += sprintf(q, "k%zu = %zu\n", i, i);
		assert_int_equal(kernels__toml_parse(big, (size_t)(q - big), "t.toml", &r), 0);
		assert_int_equal(kernels__toml_get(r, "k49999")->u.i, 49999);
		kernels__toml_free(r);
		q += sprintf(q, "k123 = 1\n");
		assert_int_equal(kernels__toml_parse(big, (size_t)(q - big), "t.toml", &r), KERNELS_EPARSE);
		assert_non_null(strstr(kernels_error_last(), ":50001:1: duplicate key 'k123'"));
		free(big);
	}
	/* every truncation of a valid document is either valid or refused cleanly */
	{
		const char *doc = "[a.\"b\"]\nx = \"\"\"m\\\n  l\"\"\"\ny = [1, {z = 'q'}, 1979-05-27T00:00:00Z]\n"
				  "[[c]]\nd = 0x1f # c\n";
		size_t len = strlen(doc);
		for (i = 0; i <= len; i++) {
			char *copy = malloc(i ? i : 1);
			memcpy(copy, doc, i);
			rc = kernels__toml_parse(copy, i, "t.toml", &r);
			assert_true(rc == 0 || rc == KERNELS_EPARSE);
			kernels__toml_free(r);
			free(copy);
		}
	}
}

/* ---- the file collection ---- */

static int has_suffix(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static void test_valid_files(void **state)
{
	DIR *d = opendir(DATA "/valid");
	struct dirent *e;
	int count = 0;
	(void)state;
	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		char path[1024];
		kernels__toml_value *r = NULL;
		if (!has_suffix(e->d_name, ".toml"))
			continue;
		snprintf(path, sizeof(path), DATA "/valid/%s", e->d_name);
		if (kernels__toml_parse_file(path, &r) != 0)
			fail_msg("%s", kernels_error_last());
		kernels__toml_free(r);
		count++;
	}
	closedir(d);
	assert_true(count >= 20);
}

/* One line of invalid/expected.txt: "<file> <line:col> <what the message
 * says>". */
static void check_invalid_file(char *line, void *payload)
{
	char name[256], where[64], path[1024], prefix[1200], *what;
	kernels__toml_value *r = NULL;
	(void)payload;

	if (sscanf(line, "%255s %63s", name, where) != 2)
		fail_msg("bad line in expected.txt: %s", line);
	what = strstr(line, where) + strlen(where);
	while (*what == ' ')
		what++;
	snprintf(path, sizeof(path), DATA "/invalid/%s", name);
	assert_int_equal(kernels__toml_parse_file(path, &r), KERNELS_EPARSE);
	snprintf(prefix, sizeof(prefix), "%s:%s: ", path, where);
	if (strncmp(kernels_error_last(), prefix, strlen(prefix)) != 0 || !strstr(kernels_error_last(), what))
		fail_msg("%s: wanted '%s ... %s', got: %s", name, prefix, what, kernels_error_last());
}

static void test_invalid_files(void **state)
{
	(void)state;
	assert_true(test_each_entry(DATA "/invalid/expected.txt", check_invalid_file, NULL) >= 20);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_numbers_and_more),
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_invalid_inline),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_valid_files),
		cmocka_unit_test(test_invalid_files),
	};
	if (argc == 3 && strcmp(argv[1], "--dump") == 0)
		return dump(argv[2]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
