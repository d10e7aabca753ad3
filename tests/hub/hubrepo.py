"""Read side of the local Hub: bare git repos, LFS pointers, repo settings.

Everything here reads from disk on every call (except per-commit caches,
which are safe because a commit never changes), so publishing while the
server runs is fine.
"""

import hashlib
import json
import os
import re
import subprocess
import threading
import time

LFS_SPEC = "version https://git-lfs.github.com/spec/v1"
# A pointer file is tiny; anything larger is ordinary content.
LFS_POINTER_MAX = 1024

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
HEX_RE = re.compile(r"^[0-9a-f]{7,40}$")

TYPE_DIRS = {"kernel": "kernels", "model": "models"}


def valid_name(part):
    return bool(NAME_RE.match(part)) and ".." not in part and not part.endswith(".git")


def git(gitdir, *args, data=None, check=True):
    proc = subprocess.run(
        ["git", "--git-dir", gitdir, *args],
        input=data,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        check=False,
    )
    if check and proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {gitdir}: {proc.stderr.decode(errors='replace')}")
    return proc


def parse_lfs_pointer(data):
    """Returns (sha256 hex, size) when `data` is a git-lfs pointer, else None."""
    if len(data) > LFS_POINTER_MAX or not data.startswith(LFS_SPEC.encode()):
        return None
    oid = size = None
    for line in data.decode("utf-8", errors="replace").splitlines():
        key, _, value = line.partition(" ")
        if key == "oid" and value.startswith("sha256:"):
            oid = value[len("sha256:"):]
        elif key == "size" and value.isdigit():
            size = int(value)
    if oid is None or size is None or not re.match(r"^[0-9a-f]{64}$", oid):
        return None
    return oid, size


def lfs_pointer(sha256_hex, size):
    return f"{LFS_SPEC}\noid sha256:{sha256_hex}\nsize {size}\n".encode()


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Repo:
    """One bare repository plus its settings (private tokens, gating)."""

    def __init__(self, root, repo_type, org, name):
        self.root = root
        self.type = repo_type
        self.org = org
        self.name = name
        self.id = f"{org}/{name}"
        self.gitdir = repo_path(root, repo_type, org, name)

    def exists(self):
        return os.path.isfile(os.path.join(self.gitdir, "HEAD"))

    def settings(self):
        try:
            with open(self.gitdir[: -len(".git")] + ".json") as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def refs(self):
        """[(refname, commit)] with annotated tags peeled to their commit."""
        out = git(
            self.gitdir, "for-each-ref", "--format=%(refname)%00%(objectname)%00%(*objectname)", "refs/heads", "refs/tags"
        ).stdout.decode()
        refs = []
        for line in out.splitlines():
            name, obj, peeled = line.split("\0")
            refs.append((name, peeled or obj))
        return refs

    def resolve(self, rev):
        """Full commit id for a branch, tag, or full/short commit id; None if unknown."""
        if not rev:
            return None
        refs = dict(self.refs())
        for prefix in ("refs/heads/", "refs/tags/"):
            if prefix + rev in refs:
                return refs[prefix + rev]
        if rev.startswith("refs/") and rev in refs:
            return refs[rev]
        if HEX_RE.match(rev):
            proc = git(self.gitdir, "rev-parse", "--verify", "--quiet", rev + "^{commit}", check=False)
            if proc.returncode == 0:
                return proc.stdout.decode().strip()
        return None

    def commit_date(self, commit):
        """The Hub's date format: 2024-01-01T00:00:00.000Z."""
        epoch = int(git(self.gitdir, "show", "-s", "--format=%ct", commit).stdout.decode().strip())
        return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(epoch))

    def read_blob(self, oid):
        return git(self.gitdir, "cat-file", "blob", oid).stdout

    def tree(self, commit):
        return _tree_cache.get(self, commit)


def repo_path(root, repo_type, org, name):
    return os.path.join(root, "repos", TYPE_DIRS[repo_type], org, name + ".git")


def org_settings(root, org):
    try:
        with open(os.path.join(root, "orgs", org + ".json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def org_exists(root, org):
    if os.path.exists(os.path.join(root, "orgs", org + ".json")):
        return True
    return any(os.path.isdir(os.path.join(root, "repos", d, org)) for d in TYPE_DIRS.values())


class Entry:
    __slots__ = ("path", "type", "oid", "size", "mode", "lfs")

    def __init__(self, path, type_, oid, size, mode, lfs=None):
        self.path, self.type, self.oid, self.size, self.mode, self.lfs = path, type_, oid, size, mode, lfs

    def api(self):
        """The entry as the Hub's tree endpoint lists it."""
        if self.type == "directory":
            return {"type": "directory", "oid": self.oid, "size": 0, "path": self.path}
        d = {"type": "file", "oid": self.oid, "size": self.size, "path": self.path}
        if self.lfs:
            d["size"] = self.lfs[1]
            d["lfs"] = {"oid": self.lfs[0], "size": self.lfs[1], "pointerSize": self.size}
        return d


class _TreeCache:
    """Full recursive listing per (repo, commit); commits are immutable."""

    def __init__(self):
        self.lock = threading.Lock()
        self.cache = {}

    def get(self, repo, commit):
        key = (repo.gitdir, commit)
        with self.lock:
            if key in self.cache:
                return self.cache[key]
        entries = self._load(repo, commit)
        with self.lock:
            self.cache[key] = entries
        return entries

    @staticmethod
    def _load(repo, commit):
        out = git(repo.gitdir, "ls-tree", "-r", "-t", "-l", "-z", "--full-tree", commit).stdout
        entries = []
        small = []
        for rec in out.split(b"\0"):
            if not rec:
                continue
            meta, _, path = rec.partition(b"\t")
            mode, kind, oid, size = meta.split()
            path = path.decode("utf-8", errors="surrogateescape")
            if kind == b"tree":
                entries.append(Entry(path, "directory", oid.decode(), 0, mode.decode()))
            elif kind == b"blob":
                e = Entry(path, "file", oid.decode(), int(size), mode.decode())
                entries.append(e)
                if e.size <= LFS_POINTER_MAX:
                    small.append(e)
        if small:
            # One cat-file process for all candidate pointers.
            req = b"".join(e.oid.encode() + b"\n" for e in small)
            data = git(repo.gitdir, "cat-file", "--batch", data=req).stdout
            pos = 0
            for e in small:
                header_end = data.index(b"\n", pos)
                _, _, size = data[pos:header_end].split()
                size = int(size)
                content = data[header_end + 1 : header_end + 1 + size]
                pos = header_end + 1 + size + 1
                e.lfs = parse_lfs_pointer(content)
        return entries


_tree_cache = _TreeCache()
