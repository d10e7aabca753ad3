#!/usr/bin/env python3
"""Publish content to the local Hub: one commit per call, plus refs and settings.

Examples:
  publish.py --root R --repo org/k --dir ./tree --tag v1.0.0 --branch main --branch v1
  publish.py --root R --repo org/k --text README.md=hello --random w.bin=3000000:7 --tag v1.1.0
  publish.py --root R --repo org/m --type model --dir ./tree --private-token hf_secret
  publish.py --root R --org org --trusted
  publish.py --root R --spec steps.json      (a JSON list of steps, see run_spec)

A commit is made when any content option is given (--dir, --file, --text,
--random, --empty).  Its parent is --parent, else the tip of the first
--branch (default main) when that exists.  Without --overlay the commit's
tree is exactly the given content; with --overlay it starts from the
parent's tree.  Files above --lfs-threshold bytes, or matching a
`filter=lfs` rule of the content's root .gitattributes, are stored as git-lfs
pointers with their bytes in ROOT/lfs/<sha256>.  Branches and tags are
(re)pointed at the new commit, or at --target REV when no content is given.
Prints the commit id.  Author, committer and dates are fixed, so the same
inputs give the same commit ids.
"""

import argparse
import base64
import fnmatch
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hubrepo  # noqa: E402

DEFAULT_LFS_THRESHOLD = 1 << 20
BASE_EPOCH = 1704067200  # 2024-01-01T00:00:00Z


class PublishError(Exception):
    pass


def _git(gitdir, *args, data=None, env=None):
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run(
        ["git", "--git-dir", gitdir, *args],
        input=data,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=full_env,
        check=False,
    )
    if proc.returncode != 0:
        raise PublishError(f"git {' '.join(args)}: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode().strip()


def random_bytes(size, seed=0):
    """Deterministic pseudo-random content (incompressible, so sizes are real)."""
    return random.Random(seed).randbytes(size)


def _collect_dir(path):
    files = {}
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for fn in sorted(filenames):
            full = os.path.join(dirpath, fn)
            rel = os.path.relpath(full, path).replace(os.sep, "/")
            with open(full, "rb") as f:
                files[rel] = (f.read(), os.access(full, os.X_OK))
    return files


def _lfs_patterns(gitattributes):
    pats = []
    for line in gitattributes.decode(errors="replace").splitlines():
        parts = line.split()
        if len(parts) >= 2 and not parts[0].startswith("#") and "filter=lfs" in parts[1:]:
            pats.append(parts[0])
    return pats


def _is_lfs(path, pats):
    for p in pats:
        if "/" in p.strip("/"):
            if fnmatch.fnmatchcase(path, p.lstrip("/")):
                return True
        elif fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], p.strip("/")) or fnmatch.fnmatchcase(path, p.strip("/")):
            return True
    return False


def _init_repo(gitdir):
    if not os.path.isfile(os.path.join(gitdir, "HEAD")):
        os.makedirs(gitdir, exist_ok=True)
        subprocess.run(["git", "init", "-q", "--bare", gitdir], check=True)
        _git(gitdir, "symbolic-ref", "HEAD", "refs/heads/main")
        _git(gitdir, "config", "http.uploadpack", "true")


def _write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


def set_org(root, org, trusted):
    path = os.path.join(root, "orgs", org + ".json")
    s = hubrepo.org_settings(root, org)
    s["trustedKernelPublisher"] = bool(trusted)
    _write_json(path, s)


def publish(
    root,
    repo=None,
    *,
    repo_type="kernel",
    dir=None,
    files=None,
    empty=False,
    message="publish",
    branches=None,
    tags=(),
    target=None,
    parent=None,
    orphan=False,
    overlay=False,
    annotated=False,
    lfs_threshold=DEFAULT_LFS_THRESHOLD,
    private_tokens=None,
    public=False,
    gated=None,
    granted_tokens=None,
    trusted=None,
    delete_branches=(),
    delete_tags=(),
    org=None,
):
    """Publishes one commit (when content is given) and updates refs/settings.

    files: {path: bytes or (bytes, executable)}.  Returns the commit id that
    the refs were pointed at (None when only settings changed).
    """
    root = os.path.abspath(root)
    if repo is None:
        if trusted is not None and org:
            set_org(root, org, trusted)
            return None
        raise PublishError("give a repo (org/name), or --org with --trusted/--untrusted")
    if repo_type not in ("kernel", "model"):
        raise PublishError(f"repo type must be kernel or model, not {repo_type!r}")
    org_name, _, name = repo.partition("/")
    if not (hubrepo.valid_name(org_name) and hubrepo.valid_name(name)):
        raise PublishError(f"invalid repo id {repo!r} (want org/name)")
    gitdir = hubrepo.repo_path(root, repo_type, org_name, name)
    _init_repo(gitdir)
    os.makedirs(os.path.join(root, "lfs"), exist_ok=True)

    content = {}
    if dir is not None:
        content.update(_collect_dir(dir))
    for path, data in (files or {}).items():
        content[path.strip("/")] = data if isinstance(data, tuple) else (data, False)
    has_content = bool(content) or empty or dir is not None

    if branches is None:
        branches = ["main"] if has_content else []
    branches, tags = list(branches), list(tags)

    existing = dict(hubrepo.Repo(root, repo_type, org_name, name).refs())
    commit = None
    if has_content:
        parent_commit = None
        if parent:
            parent_commit = _git(gitdir, "rev-parse", "--verify", parent + "^{commit}")
        elif not orphan and branches and "refs/heads/" + branches[0] in existing:
            parent_commit = existing["refs/heads/" + branches[0]]
        commit = _commit(root, gitdir, content, parent_commit, overlay, message, lfs_threshold)
    elif target:
        commit = _git(gitdir, "rev-parse", "--verify", target + "^{commit}")
    elif branches or tags:
        raise PublishError("refs need a commit: give content or --target")

    for b in branches:
        _git(gitdir, "update-ref", "refs/heads/" + b, commit)
    for t in tags:
        if annotated:
            _git(gitdir, "tag", "-f", "-a", "-m", t, t, commit, env=_ident(0))
        else:
            _git(gitdir, "update-ref", "refs/tags/" + t, commit)
    for b in delete_branches:
        _git(gitdir, "update-ref", "-d", "refs/heads/" + b)
    for t in delete_tags:
        _git(gitdir, "update-ref", "-d", "refs/tags/" + t)

    settings_path = gitdir[: -len(".git")] + ".json"
    s = hubrepo.Repo(root, repo_type, org_name, name).settings()
    if private_tokens:
        s["private"] = True
        s["private_tokens"] = sorted(set(s.get("private_tokens", [])) | set(private_tokens))
    if public:
        s["private"] = False
        s["private_tokens"] = []
    if gated is not None:
        s["gated"] = gated if gated in ("auto", "manual") else False
    if granted_tokens:
        s["granted_tokens"] = sorted(set(s.get("granted_tokens", [])) | set(granted_tokens))
    _write_json(settings_path, s)
    if trusted is not None:
        set_org(root, org_name, trusted)
    return commit


def _ident(n):
    date = f"{BASE_EPOCH + 3600 * n} +0000"
    return {
        "GIT_AUTHOR_NAME": "Local Hub",
        "GIT_AUTHOR_EMAIL": "hub@localhost",
        "GIT_COMMITTER_NAME": "Local Hub",
        "GIT_COMMITTER_EMAIL": "hub@localhost",
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
    }


def _commit(root, gitdir, content, parent, overlay, message, lfs_threshold):
    pats = _lfs_patterns(content[".gitattributes"][0]) if ".gitattributes" in content else []
    depth = int(_git(gitdir, "rev-list", "--count", parent)) if parent else 0
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        if overlay and parent:
            _git(gitdir, "read-tree", parent, env=env)
        else:
            _git(gitdir, "read-tree", "--empty", env=env)
        items = sorted(content.items())
        blob_files = []
        for i, (path, (data, executable)) in enumerate(items):
            if path != ".gitattributes" and (len(data) > lfs_threshold or _is_lfs(path, pats)):
                sha256 = hashlib.sha256(data).hexdigest()
                dest = os.path.join(root, "lfs", sha256)
                if not os.path.exists(dest):
                    with open(dest + ".tmp", "wb") as f:
                        f.write(data)
                    os.replace(dest + ".tmp", dest)
                data = hubrepo.lfs_pointer(sha256, len(data))
            blob = os.path.join(tmp, f"blob{i}")
            with open(blob, "wb") as f:
                f.write(data)
            blob_files.append(blob)
        # One git process hashes every blob.
        oids = _git(gitdir, "hash-object", "-w", "--no-filters", "--stdin-paths", data="\n".join(blob_files).encode())
        oids = oids.split() if blob_files else []
        lines = [
            f"{'100755' if executable else '100644'} {oid}\t{path}\n" for (path, (_, executable)), oid in zip(items, oids)
        ]
        _git(gitdir, "update-index", "--add", "--index-info", data="".join(lines).encode(), env=env)
        tree = _git(gitdir, "write-tree", env=env)
    args = ["commit-tree", tree, "-m", message]
    if parent:
        args += ["-p", parent]
    return _git(gitdir, *args, env=_ident(depth))


_SPEC_KEYS = {
    "repo", "type", "dir", "files", "empty", "message", "branches", "tags", "target", "parent", "orphan",
    "overlay", "annotated", "lfs_threshold", "private_tokens", "public", "gated", "granted_tokens", "trusted",
    "delete_branches", "delete_tags", "org",
}


def _spec_file(value):
    """A file in a spec: "text", {"text"}, {"base64"}, {"random": size, "seed"}, {"file": src}; "exec": true."""
    if isinstance(value, str):
        return value.encode(), False
    if not isinstance(value, dict):
        raise PublishError(f"a file in a spec must be a string or an object, not {value!r}")
    if "text" in value:
        data = value["text"].encode()
    elif "base64" in value:
        data = base64.b64decode(value["base64"])
    elif "random" in value:
        data = random_bytes(int(value["random"]), int(value.get("seed", 0)))
    elif "file" in value:
        with open(value["file"], "rb") as f:
            data = f.read()
    else:
        raise PublishError(f"a file in a spec needs text, base64, random or file: {value!r}")
    return data, bool(value.get("exec"))


def run_spec(root, steps):
    """Publishes a JSON list of steps in order; returns the commit id of each.

    A step is an object whose keys are publish()'s keyword arguments, with
    "type" for repo_type and "files" mapping paths to _spec_file values, e.g.
      [{"repo": "org/k", "files": {"a.py": "x = 1", "w.bin": {"random": 2000000, "seed": 1}},
        "tags": ["v1.0.0"], "branches": ["main", "v1"]},
       {"repo": "org/k", "files": {"a.py": "x = 2"}, "tags": ["v1.1.0"], "branches": ["main", "v1"]}]
    """
    if isinstance(steps, dict):
        steps = [steps]
    commits = []
    for step in steps:
        unknown = set(step) - _SPEC_KEYS
        if unknown:
            raise PublishError(f"unknown key(s) in a publish step: {', '.join(sorted(unknown))}")
        kwargs = dict(step)
        repo = kwargs.pop("repo", None)
        if "type" in kwargs:
            kwargs["repo_type"] = kwargs.pop("type")
        if "files" in kwargs:
            kwargs["files"] = {p: _spec_file(v) for p, v in kwargs["files"].items()}
        commits.append(publish(root, repo, **kwargs))
    return commits


def _kv(arg, what):
    key, sep, value = arg.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{what} wants PATH=VALUE, got {arg!r}")
    return key, value


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True, help="the server's --root")
    ap.add_argument("--repo", help="org/name")
    ap.add_argument("--type", default="kernel", choices=["kernel", "model"], help="repo type (default kernel)")
    ap.add_argument("--dir", help="directory whose files become the commit")
    ap.add_argument("--file", action="append", default=[], metavar="PATH=SRC", help="add file SRC as PATH")
    ap.add_argument("--text", action="append", default=[], metavar="PATH=TEXT", help="add PATH with content TEXT")
    ap.add_argument(
        "--random", action="append", default=[], metavar="PATH=SIZE[:SEED]", help="add PATH with SIZE pseudo-random bytes"
    )
    ap.add_argument("--exec", action="append", default=[], metavar="PATH", help="mark PATH executable")
    ap.add_argument("--empty", action="store_true", help="commit even with no files")
    ap.add_argument("--message", "-m", default="publish")
    ap.add_argument("--branch", action="append", help="point branch at the commit (default: main)")
    ap.add_argument("--no-branch", action="store_true", help="move no branch (e.g. a tag-only commit)")
    ap.add_argument("--tag", action="append", default=[], help="point tag at the commit")
    ap.add_argument("--annotated", action="store_true", help="make the tags annotated tag objects")
    ap.add_argument("--target", help="without content: the revision the refs point at")
    ap.add_argument("--parent", help="parent revision (default: tip of the first branch)")
    ap.add_argument("--orphan", action="store_true", help="commit without a parent")
    ap.add_argument("--overlay", action="store_true", help="start from the parent's tree")
    ap.add_argument("--lfs-threshold", type=int, default=DEFAULT_LFS_THRESHOLD, help="bytes; larger files go to LFS")
    ap.add_argument("--private-token", action="append", help="make the repo private; this token may read it")
    ap.add_argument("--public", action="store_true", help="make the repo public again")
    ap.add_argument("--gated", choices=["auto", "manual", "no"], help="gate file downloads")
    ap.add_argument("--grant", action="append", help="token with access to the gated repo")
    ap.add_argument("--trusted", dest="trusted", action="store_true", default=None, help="org is a trusted publisher")
    ap.add_argument("--untrusted", dest="trusted", action="store_false", help="org is not a trusted publisher")
    ap.add_argument("--org", help="with --trusted/--untrusted and no --repo: set only the org")
    ap.add_argument("--delete-branch", action="append", default=[])
    ap.add_argument("--delete-tag", action="append", default=[])
    ap.add_argument("--spec", metavar="FILE", help="JSON steps to publish in order ('-': stdin); see run_spec")
    args = ap.parse_args(argv)

    if args.spec:
        try:
            if args.spec == "-":
                steps = json.load(sys.stdin)
            else:
                with open(args.spec) as f:
                    steps = json.load(f)
            for commit in run_spec(args.root, steps):
                print(commit or "")
        except (PublishError, OSError, ValueError, TypeError, KeyError) as exc:
            print(f"publish.py: {exc}", file=sys.stderr)
            return 1
        return 0

    try:
        files = {}
        for a in args.file:
            path, src = _kv(a, "--file")
            with open(src, "rb") as f:
                files[path] = f.read()
        for a in args.text:
            path, text = _kv(a, "--text")
            files[path] = text.encode()
        for a in args.random:
            path, spec = _kv(a, "--random")
            size, _, seed = spec.partition(":")
            files[path] = random_bytes(int(size), int(seed or 0))
        files = {p: (d, p in args.exec) for p, d in files.items()}
        branches = [] if args.no_branch else args.branch
        commit = publish(
            args.root,
            args.repo,
            repo_type=args.type,
            dir=args.dir,
            files=files,
            empty=args.empty,
            message=args.message,
            branches=branches,
            tags=args.tag,
            target=args.target,
            parent=args.parent,
            orphan=args.orphan,
            overlay=args.overlay,
            annotated=args.annotated,
            lfs_threshold=args.lfs_threshold,
            private_tokens=args.private_token,
            public=args.public,
            gated=args.gated,
            granted_tokens=args.grant,
            trusted=args.trusted,
            delete_branches=args.delete_branch,
            delete_tags=args.delete_tag,
            org=args.org,
        )
    except (PublishError, OSError, ValueError, argparse.ArgumentTypeError) as exc:
        print(f"publish.py: {exc}", file=sys.stderr)
        return 1
    if commit:
        print(commit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
