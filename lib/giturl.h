/* Internal: metadata.json's upstream and source, git URLs, normalised as
 * Python kernels 0.17.2 (kernels-data's GitUrl over the url crate) returns
 * them, so both clients show and compare the same text. */
#ifndef KERNELS_LIB_GITURL_H
#define KERNELS_LIB_GITURL_H

/* `in` as 0.17.2 normalises it: surrounding blanks and control characters
 * dropped (tabs and newlines inside too), the scheme lower-cased, an
 * SCP-like user@host:path made ssh://user@host/path; for http(s) the host
 * lower-cased and percent-decoded, the default port dropped and an empty
 * path made "/"; "." and ".." path segments resolved; characters a URL
 * cannot hold percent-encoded. *out is malloc'ed. Returns 0; -1 (no error
 * raised) when `in` is no git URL 0.17.2 accepts (*why: a static reason),
 * KERNELS_ENOMEM. */
int kernels__git_url_normalize(const char *in, char **out, const char **why);

#endif
