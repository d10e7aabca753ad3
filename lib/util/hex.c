#include "hex.h"

#include <ctype.h>
#include <string.h>

int kernels__is_hex(const char *s, size_t n, kernels__hex_case c)
{
	size_t i;

	if (!s || (n ? strlen(s) != n : !(n = strlen(s))))
		return 0;
	for (i = 0; i < n; i++) {
		int lower = (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f');
		if (!lower && (c == KERNELS__HEX_LOWER || !(s[i] >= 'A' && s[i] <= 'F')))
			return 0;
	}
	return 1;
}

int kernels__is_commit(const char *s, kernels__hex_case c)
{
	return kernels__is_hex(s, 40, c);
}

void kernels__hex_lower(const char *s, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = (char)tolower((unsigned char)s[i]);
	out[n] = '\0';
}

void kernels__hex(const unsigned char *bytes, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = digits[bytes[i] >> 4];
		out[2 * i + 1] = digits[bytes[i] & 15];
	}
	out[2 * len] = '\0';
}
