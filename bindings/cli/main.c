/* kernels: the command-line tool. A binding of the public API only. */
#include <stdio.h>
#include <string.h>
#include <kernels.h>

static int usage(FILE *out)
{
	fprintf(out, "usage: kernels <command> [options]\n\n"
		     "commands:\n"
		     "  version    print the library version\n");
	return out == stdout ? 0 : 2;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage(stderr);
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))
		return usage(stdout);
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
		printf("kernels %s\n", kernels_version());
		return 0;
	}
	fprintf(stderr, "kernels: unknown command '%s'; run 'kernels --help'\n", argv[1]);
	return 2;
}
