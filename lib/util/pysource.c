/* Plain values read from Python source text: what an installed package's
 * version.py or __init__.py assigns, read without running Python (see
 * pysource.h). */
#include "pysource.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static int is_ident_start(int c)
{
	return isalpha(c) || c == '_';
}

static int is_ident(int c)
{
	return isalnum(c) || c == '_';
}

static const char *skip_blanks(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* One string literal ('x', "x", r'x', a triple-quoted one on one line)
 * followed only by blanks, a comment or a ';'. Its text, or NULL for
 * anything else (None, an expression, an escape): then the value cannot be
 * known from the text. */
static char *py_string_literal(const char *p)
{
	const char *close, *after;
	char quote[4] = { 0 };
	size_t q;

	if ((*p == 'r' || *p == 'R' || *p == 'u' || *p == 'U') && (p[1] == '\'' || p[1] == '"'))
		p++;
	if (*p != '\'' && *p != '"')
		return NULL;
	q = p[1] == *p && p[2] == *p ? 3 : 1;
	memset(quote, *p, q);
	p += q;
	if (!(close = strstr(p, quote)) || memchr(p, '\n', (size_t)(close - p)) || memchr(p, '\\', (size_t)(close - p)))
		return NULL;
	after = skip_blanks(close + q);
	if (*after && *after != '\n' && *after != '\r' && *after != '#' && *after != ';')
		return NULL;
	return strndup(p, (size_t)(close - p));
}

/* Whether `line` is a top-level assignment to `name`, in the forms Python
 * packages write: `name = '1.0'`, `name: Optional[str] = "1.0"`, chained
 * `__version__ = version = '1.0'` (setuptools-scm, vcs-versioning), with a
 * trailing comment. *value is the string, or NULL when it is not a plain
 * string. Indented lines (inside try:, if:) and bare annotations
 * (`name: str`) do not count. */
static int py_assigns(const char *line, const char *name, char **value)
{
	size_t len = strlen(name);
	const char *p = line;
	int first = 1, hit = 0;

	*value = NULL;
	while (is_ident_start((unsigned char)*p)) {
		const char *id = p, *q;
		while (is_ident((unsigned char)*p))
			p++;
		q = skip_blanks(p);
		if (first && *q == ':')
			/* An annotation: one target, then `=` on the same line. */
			while (*q && *q != '=' && *q != '\n')
				q++;
		if (*q != '=' || q[1] == '=')
			return 0;
		hit |= (size_t)(p - id) == len && !strncmp(id, name, len);
		first = 0;
		p = skip_blanks(q + 1);
		/* Chained: another `target =` follows; else the value. */
		for (q = p; is_ident((unsigned char)*q); q++)
			;
		q = skip_blanks(q);
		if (is_ident_start((unsigned char)*p) && *q == '=' && q[1] != '=')
			continue;
		if (hit)
			*value = py_string_literal(p);
		return hit;
	}
	return 0;
}

/* The string value the top-level assignments of a Python file give `name`
 * (the last one wins, as when the module runs); NULL when absent, None or
 * not a plain string. */
char *kernels__py_string_assignment(const char *text, const char *name)
{
	const char *line = text;
	char *result = NULL, *v;

	for (; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		if (!py_assigns(line, name, &v))
			continue;
		free(result);
		result = v;
	}
	return result;
}
