#!/usr/bin/env python3
"""A local stand-in for the Hugging Face Hub, for tests.

    server.py --root DIR --port-file FILE [--parent-pid PID] [--page-size N]

Listens on 127.0.0.1 on two free ports: the Hub itself and a "CDN" that
serves LFS content (the Hub answers LFS files with a 302 to it).  When both
are ready it writes {"endpoint", "cdn", "pid"} to FILE (atomically).  With
--parent-pid it exits by itself once that process is gone.

Repos are bare git repos under DIR/repos/{kernels,models}/{org}/{name}.git,
LFS content under DIR/lfs/{sha256}; publish.py writes both.  See README.md
for the endpoints, the fault injection and the request log.
"""

import argparse
import base64
import json
import os
import re
import select
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hubrepo  # noqa: E402

GIT_BACKEND = None
for _cand in ("/usr/lib/git-core/git-http-backend", "/usr/libexec/git-core/git-http-backend"):
    if os.path.exists(_cand):
        GIT_BACKEND = _cand
if GIT_BACKEND is None:
    _exec = subprocess.run(["git", "--exec-path"], stdout=subprocess.PIPE, check=False).stdout.decode().strip()
    GIT_BACKEND = os.path.join(_exec, "git-http-backend")


class Response:
    def __init__(self, status, body=b"", headers=None, content_type=None):
        self.status = status
        self.body = body
        self.headers = list(headers or [])
        if content_type:
            self.headers.append(("Content-Type", content_type))


def json_response(status, obj, headers=None):
    return Response(status, json.dumps(obj).encode(), headers, "application/json; charset=utf-8")


def hub_error(status, code, message, extra_headers=None):
    headers = [("X-Error-Message", message)]
    if code:
        headers.append(("X-Error-Code", code))
    headers += extra_headers or []
    return json_response(status, {"error": message}, headers)


class State:
    """Faults, request log and settings shared by both listeners."""

    def __init__(self, root, page_size, smart_http=True):
        self.root = root
        self.page_size = page_size
        # Switches that make the fixture behave like a mirror (olah, ...):
        # no git smart HTTP, no REST refs listing, no org overview route.
        self.smart_http = smart_http
        self.refs_api = True
        self.org_overview = True
        # A synthetic, hostile tree listing (see huge_tree_page); None: off.
        self.huge_tree = None
        self.lock = threading.Lock()
        self.faults = []
        self.log = []
        self.endpoint = None
        self.cdn = None

    def take_fault(self, method, path, query, listener):
        with self.lock:
            for f in self.faults:
                if f.get("method") and f["method"].upper() != method:
                    continue
                if f.get("query") and f["query"] not in query:
                    continue
                if f.get("listener") and f["listener"] != listener:
                    continue
                if "regex" in f:
                    if not re.search(f["regex"], path):
                        continue
                elif f.get("path", "") not in path:
                    continue
                if f["count"] > 0:
                    f["count"] -= 1
                    if f["count"] == 0:
                        self.faults.remove(f)
                return dict(f)
        return None

    def add_fault(self, spec):
        if not isinstance(spec, dict) or "mode" not in spec:
            raise ValueError("a fault needs at least a mode")
        mode = str(spec["mode"])
        if mode not in ("reset", "truncate", "wrong_bytes", "slow", "hang") and not mode.isdigit():
            raise ValueError(f"unknown fault mode {mode!r}")
        if "regex" in spec:
            re.compile(spec["regex"])
        f = dict(spec)
        f["mode"] = mode
        f["count"] = int(spec.get("count", 1))
        with self.lock:
            self.faults.append(f)
        return f


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "LocalHub/1.0"
    # Headers and body go out in separate writes: with Nagle's algorithm on,
    # the body of every answer but a connection's first waits for the
    # client's delayed ACK (40 ms), which a client reusing connections pays.
    disable_nagle_algorithm = True
    listener = "hub"

    def log_message(self, fmt, *args):  # quiet; the request log is the record
        pass

    # -- plumbing -------------------------------------------------------------

    def do_GET(self):
        self.dispatch("GET")

    def do_HEAD(self):
        self.dispatch("HEAD")

    def do_POST(self):
        self.dispatch("POST")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def do_PUT(self):
        self.dispatch("PUT")

    @property
    def state(self):
        return self.server.state

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                line = self.rfile.readline()
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def dispatch(self, method):
        started = time.time()
        url = urlsplit(self.path)
        path, query = url.path, url.query
        body = self.read_body()
        if self.listener == "hub" and path.startswith("/_fixture/"):
            self.send(self.control(method, path, body), method)
            return
        fault = self.state.take_fault(method, unquote(path), unquote(query), self.listener)
        if fault and fault["mode"] == "slow" and "after_bytes" not in fault:
            time.sleep(float(fault.get("delay", 5)))
        if fault and fault["mode"] == "hang" and "after_bytes" not in fault:
            # Accepts and says nothing, until the client gives up.
            self.record(method, path, query, 0, fault, started)
            self.hang(float(fault.get("delay", 600)))
            return
        if fault and fault["mode"].isdigit():
            code = int(fault["mode"])
            headers = []
            if code == 429 or "retry_after" in fault:
                wait = int(fault.get("retry_after", 1))
                headers.append(("Retry-After", str(wait)))
                if code == 429:  # what the Hub sends along (IETF RateLimit draft)
                    headers.append(("RateLimit", f'"api";r=0;t={wait}'))
                    headers.append(("RateLimit-Policy", '"fixed window";"api";q=500;w=300'))
            # "body": any JSON to answer instead (e.g. a hostile tree listing with mode "200").
            resp = json_response(code, fault.get("body", {"error": f"injected fault {code}"}), headers)
        else:
            try:
                resp = self.route(method, path, query, body)
            except Exception as exc:  # a bug here must show, not hang the client
                traceback.print_exc()
                resp = json_response(500, {"error": f"fixture error: {exc!r}"})
        # Logged before the reply goes out, so a client that got its answer
        # always finds the request in the log.
        self.record(method, path, query, resp.status, fault, started)
        self.send(resp, method, fault)

    def record(self, method, path, query, status, fault, started):
        entry = {
            "method": method,
            "path": unquote(path),
            "query": query,
            "status": status,
            "range": self.headers.get("Range"),
            "authorization": self.headers.get("Authorization") is not None,
            "accept_encoding": self.headers.get("Accept-Encoding"),
            "user_agent": self.headers.get("User-Agent"),
            "listener": self.listener,
            "fault": fault["mode"] if fault else None,
            "time": started,
            "conn": "%s:%s" % self.client_address[:2],
        }
        with self.state.lock:
            self.state.log.append(entry)

    def send(self, resp, method, fault=None):
        body = resp.body
        mode = fault["mode"] if fault else None
        if mode == "wrong_bytes" and body:
            body = corrupt(body, int(fault.get("after_bytes", 0)))
        if mode == "reset" and int(fault.get("after_bytes", 0)) <= 0:
            self.send_reset_now()
            return
        self.send_response(resp.status)
        for k, v in resp.headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        if mode in ("reset", "truncate"):
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if method == "HEAD":
            body = b""
        if mode == "reset":
            n = int(fault.get("after_bytes", 0))
            if n > 0:
                self.wfile.write(body[:n])
                self.wfile.flush()
                time.sleep(0.05)
            self.send_reset_now()
            return
        if mode == "hang":
            n = int(fault["after_bytes"])
            self.wfile.write(body[:n])
            self.wfile.flush()
            self.hang(float(fault.get("delay", 600)))
            return
        if mode == "slow" and "after_bytes" in fault:
            n = int(fault["after_bytes"])
            self.wfile.write(body[:n])
            self.wfile.flush()
            time.sleep(float(fault.get("delay", 5)))
            body = body[n:]
        if mode == "truncate":
            n = int(fault.get("after_bytes", len(body) // 2))
            body = body[: min(n, max(len(body) - 1, 0))]
        if body:
            self.wfile.write(body)
        self.wfile.flush()

    def hang(self, limit):
        """Keeps the connection open and silent until the client closes it
        (or `limit` seconds pass), then closes it without an answer."""
        self.close_connection = True
        conn = self.connection
        end = time.time() + limit
        while time.time() < end:
            ready, _, _ = select.select([conn], [], [], 0.2)
            if ready:
                try:
                    if not conn.recv(1, socket.MSG_PEEK):
                        break
                except OSError:
                    break
                time.sleep(0.05)  # the client sent more (a pipelined request): keep ignoring it
        try:
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def send_reset_now(self):
        # SO_LINGER 0: close() sends RST instead of FIN.
        self.close_connection = True
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()

    # -- control endpoint -----------------------------------------------------

    def control(self, method, path, body):
        st = self.state
        try:
            data = json.loads(body) if body else None
        except ValueError:
            return json_response(400, {"error": "body is not JSON"})
        if path == "/_fixture/faults":
            if method == "POST":
                try:
                    specs = data if isinstance(data, list) else [data]
                    return json_response(200, [st.add_fault(s) for s in specs])
                except (ValueError, TypeError, re.error) as exc:
                    return json_response(400, {"error": str(exc)})
            if method == "DELETE":
                with st.lock:
                    st.faults.clear()
                return json_response(200, [])
            with st.lock:
                return json_response(200, list(st.faults))
        if path == "/_fixture/log":
            with st.lock:
                if method == "DELETE":
                    st.log.clear()
                return json_response(200, list(st.log))
        if path == "/_fixture/config":
            if method == "POST" and isinstance(data, dict):
                if "page_size" in data:
                    st.page_size = max(1, int(data["page_size"]))
                for key in ("smart_http", "refs_api", "org_overview"):
                    if key in data:
                        setattr(st, key, bool(data[key]))
                if "huge_tree" in data:
                    st.huge_tree = dict(data["huge_tree"]) if data["huge_tree"] else None
                # The URLs the fixture hands out (Link pages, CDN redirects), for a proxy in front.
                for key in ("endpoint", "cdn"):
                    if data.get(key):
                        setattr(st, key, str(data[key]).rstrip("/"))
            return json_response(
                200,
                {
                    "page_size": st.page_size,
                    "endpoint": st.endpoint,
                    "cdn": st.cdn,
                    "smart_http": st.smart_http,
                    "refs_api": st.refs_api,
                    "org_overview": st.org_overview,
                    "huge_tree": st.huge_tree,
                },
            )
        if path == "/_fixture/health":
            return json_response(200, {"ok": True})
        return json_response(404, {"error": "unknown control path"})

    # -- routing ----------------------------------------------------------------

    def token(self):
        auth = self.headers.get("Authorization") or ""
        scheme, _, value = auth.partition(" ")
        if scheme.lower() == "bearer":
            return value.strip()
        if scheme.lower() == "basic":
            try:
                return base64.b64decode(value.strip()).decode().partition(":")[2]
            except (ValueError, UnicodeDecodeError):
                return None
        return None

    def route(self, method, path, query, body):
        if self.listener == "cdn":
            return self.cdn_route(method, path)
        segs = [unquote(s) for s in path.split("/")[1:]]
        if segs and segs[-1] == "" and len(segs) > 1:
            segs = segs[:-1]
        if segs[:1] == ["api"]:
            return self.api_route(method, segs[1:], parse_qs(query))
        repo_type = "model"
        if segs[:1] == ["kernels"]:
            repo_type, segs = "kernel", segs[1:]
        elif segs[:1] in (["datasets"], ["spaces"]):
            return hub_error(404, "RepoNotFound", "Repository not found")
        if len(segs) < 3:
            return hub_error(404, None, "Not found")
        org, name, rest = segs[0], segs[1], segs[2:]
        if name.endswith(".git"):
            name = name[:-4]
        if not (hubrepo.valid_name(org) and hubrepo.valid_name(name)):
            return hub_error(404, "RepoNotFound", "Repository not found")
        repo = hubrepo.Repo(self.state.root, repo_type, org, name)
        if rest[0] == "resolve" and len(rest) >= 3 and method in ("GET", "HEAD"):
            return self.resolve(repo, rest[1], "/".join(rest[2:]))
        if rest[0] in ("info", "git-upload-pack", "git-receive-pack", "HEAD", "objects"):
            if not self.state.smart_http:
                return route_missing()
            return self.git_backend(method, repo, rest, query, body)
        return hub_error(404, None, "Not found")

    def access(self, repo, files):
        """None when allowed, else the error the Hub answers."""
        if not repo.exists():
            return hub_error(404, "RepoNotFound", "Repository not found")
        s = repo.settings()
        token = self.token()
        private_tokens = s.get("private_tokens") or []
        if s.get("private") and token not in private_tokens:
            return hub_error(404, "RepoNotFound", "Repository not found")
        if files and s.get("gated") and token not in private_tokens and token not in (s.get("granted_tokens") or []):
            status = 401 if token is None else 403
            return hub_error(status, "GatedRepo", f"Access to model {repo.id} is restricted. You must have access to it.")
        return None

    def api_route(self, method, segs, qs):
        if method not in ("GET", "HEAD"):
            return hub_error(405, None, "method not allowed")
        if len(segs) == 3 and segs[0] == "organizations" and segs[2] == "overview":
            if not self.state.org_overview:
                return route_missing()
            return self.org_overview(segs[1])
        if segs == ["agent-harnesses"]:
            # huggingface_hub 2.x asks (at most daily) for the AI agent harness registry
            return json_response(200, {"standardEnvVars": ["AI_AGENT", "AGENT"], "harnesses": {}})
        if len(segs) < 3 or segs[0] not in ("kernels", "models", "datasets", "spaces"):
            return hub_error(404, None, "Not found")
        if segs[0] in ("datasets", "spaces"):
            return hub_error(404, "RepoNotFound", "Repository not found")
        repo_type = "kernel" if segs[0] == "kernels" else "model"
        org, name, rest = segs[1], segs[2], segs[3:]
        if not (hubrepo.valid_name(org) and hubrepo.valid_name(name)):
            return hub_error(404, "RepoNotFound", "Repository not found")
        repo = hubrepo.Repo(self.state.root, repo_type, org, name)
        denied = self.access(repo, files=False)
        if denied:
            return denied
        if not rest:
            return self.repo_info(repo, "main", qs)
        if rest == ["refs"]:
            if not self.state.refs_api:
                return route_missing()
            return self.refs(repo, qs)
        if rest[0] == "revision" and len(rest) >= 2:
            return self.repo_info(repo, "/".join(rest[1:]), qs)
        if rest[0] == "tree" and len(rest) >= 2:
            return self.tree(repo, rest[1], "/".join(rest[2:]), qs)
        return hub_error(404, None, "Not found")

    # -- API ------------------------------------------------------------------

    def org_overview(self, org):
        if not hubrepo.valid_name(org) or not hubrepo.org_exists(self.state.root, org):
            return hub_error(404, None, "Organization not found")
        s = hubrepo.org_settings(self.state.root, org)
        return json_response(
            200,
            {
                "_id": "org-" + org,
                "name": org,
                "fullname": s.get("fullname", org),
                "avatarUrl": "",
                "type": "org",
                "isVerified": False,
                "isFollowing": False,
                "numUsers": 1,
                "numModels": 0,
                "numSpaces": 0,
                "numDatasets": 0,
                "numFollowers": 0,
                "numPapers": 0,
                "trustedKernelPublisher": bool(s.get("trustedKernelPublisher", False)),
            },
        )

    def refs(self, repo, qs):
        branches, tags = [], []
        for ref, commit in repo.refs():
            if ref.startswith("refs/heads/"):
                branches.append({"name": ref[len("refs/heads/"):], "ref": ref, "targetCommit": commit})
            elif ref.startswith("refs/tags/"):
                tags.append({"name": ref[len("refs/tags/"):], "ref": ref, "targetCommit": commit})
        out = {"branches": branches, "converts": [], "tags": tags}
        if qs.get("include_prs"):
            out["pullRequests"] = []
        return json_response(200, out)

    def repo_info(self, repo, rev, qs):
        commit = repo.resolve(rev)
        if commit is None:
            return hub_error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        s = repo.settings()
        date = repo.commit_date(commit)
        info = {
            "_id": "repo-" + repo.id,
            "id": repo.id,
            "modelId": repo.id,
            "author": repo.org,
            "sha": commit,
            "lastModified": date,
            "createdAt": date,
            "private": bool(s.get("private")),
            "gated": s.get("gated") or False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
        }
        # The Hub lists siblings for models only; huggingface_hub relies on
        # kernels having none (it then pages through the tree instead).
        if repo.type == "model":
            blobs = qs.get("blobs", ["false"])[0].lower() in ("1", "true")
            siblings = []
            for e in repo.tree(commit):
                if e.type != "file":
                    continue
                sib = {"rfilename": e.path}
                if blobs:
                    sib["blobId"] = e.oid
                    sib["size"] = e.lfs[1] if e.lfs else e.size
                    if e.lfs:
                        sib["lfs"] = {"sha256": e.lfs[0], "size": e.lfs[1], "pointerSize": e.size}
                siblings.append(sib)
            info["siblings"] = siblings
            info["library_name"] = None
        return json_response(200, info)

    def tree(self, repo, rev, path, qs):
        commit = repo.resolve(rev)
        if commit is None:
            return hub_error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        path = path.strip("/")
        recursive = qs.get("recursive", ["false"])[0].lower() in ("1", "true")
        huge = self.state.huge_tree
        if huge and huge.get("repo") == repo.id and recursive and path in ("build", "build/" + huge["variant"]):
            return self.huge_tree_page(repo, rev, path, qs, huge)
        entries = repo.tree(commit)
        if path:
            match = [e for e in entries if e.path == path]
            if not match or match[0].type != "directory":
                return hub_error(404, "EntryNotFound", f"{path} does not exist on \"{rev}\"")
            prefix = path + "/"
            entries = [e for e in entries if e.path.startswith(prefix)]
            depth_base = path.count("/") + 1
        else:
            depth_base = 0
        if not recursive:
            entries = [e for e in entries if e.path.count("/") == depth_base]
        # Directories before files at each level, like the Hub.
        listing = [e.api() for e in entries]
        start = 0
        cursor = qs.get("cursor", [None])[0]
        if cursor:
            try:
                start = int(base64.urlsafe_b64decode(cursor.encode()).decode())
            except (ValueError, UnicodeDecodeError):
                return hub_error(400, None, "invalid cursor")
        size = self.state.page_size
        limit = qs.get("limit", [None])[0]
        if limit and limit.isdigit():
            size = max(1, int(limit))
        page = listing[start : start + size]
        headers = []
        if start + size < len(listing):
            params = {k: v[0] for k, v in qs.items() if k != "cursor"}
            params["cursor"] = base64.urlsafe_b64encode(str(start + size).encode()).decode()
            base = f"{self.state.endpoint}/api/{hubrepo.TYPE_DIRS[repo.type]}/{repo.id}/tree/{quote(rev, safe='')}"
            if path:
                base += "/" + quote(path)
            headers.append(("Link", f'<{base}?{urlencode(params)}>; rel="next"'))
        return json_response(200, page, headers)

    def huge_tree_page(self, repo, rev, path, qs, huge):
        """A hostile listing of build/{variant}: `entries` distinct files
        (distinct blobs; LFS with "lfs": true), `page_size` a page (default
        10000), made from one template per page size so that a million
        entries cost the fixture next to nothing."""
        total, size = int(huge["entries"]), int(huge.get("page_size", 10000))
        cursor = qs.get("cursor", [None])[0]
        start = int(base64.urlsafe_b64decode(cursor.encode()).decode()) if cursor else 0
        key = (huge["variant"], size, bool(huge.get("lfs")))
        cache = getattr(self.state, "huge_tree_templates", None)
        if cache is None or cache[0] != key:
            items = []
            for i in range(size):
                e = {"type": "file", "oid": "%06d%034x" % (999999, i), "size": 1,
                     "path": "build/%s/p999999/f%05d.bin" % (huge["variant"], i)}
                if huge.get("lfs"):
                    e["lfs"] = {"oid": "%06d%058x" % (999999, i), "size": 1, "pointerSize": 128}
                items.append(e)
            cache = self.state.huge_tree_templates = (key, json.dumps(items).encode())
        n = min(size, total - start)
        body = cache[1].replace(b"999999", b"%06d" % (start // size))
        if n < size:  # the last page: cut the template after n entries
            items = json.loads(body)[:n]
            body = json.dumps(items).encode()
        headers = [("Content-Type", "application/json")]
        if start + size < total:
            params = {k: v[0] for k, v in qs.items() if k != "cursor"}
            params["cursor"] = base64.urlsafe_b64encode(str(start + size).encode()).decode()
            base = f"{self.state.endpoint}/api/{hubrepo.TYPE_DIRS[repo.type]}/{repo.id}/tree/{quote(rev, safe='')}/{quote(path)}"
            headers.append(("Link", f'<{base}?{urlencode(params)}>; rel="next"'))
        return Response(200, body, headers)

    # -- files ----------------------------------------------------------------

    def resolve(self, repo, rev, path):
        denied = self.access(repo, files=True)
        if denied:
            return denied
        commit = repo.resolve(rev)
        if commit is None:
            return hub_error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        entry = next((e for e in repo.tree(commit) if e.path == path and e.type == "file"), None)
        if entry is None:
            return hub_error(404, "EntryNotFound", f"{path} does not exist on \"{rev}\"", [("X-Repo-Commit", commit)])
        common = [("X-Repo-Commit", commit), ("Accept-Ranges", "bytes")]
        if entry.lfs:
            sha256, size = entry.lfs
            location = f"{self.state.cdn}/lfs/{sha256}?{urlencode({'filename': path.rsplit('/', 1)[-1]})}"
            return Response(
                302,
                b"",
                common
                + [
                    ("Location", location),
                    ("ETag", f'"{sha256}"'),
                    ("X-Linked-Etag", f'"{sha256}"'),
                    ("X-Linked-Size", str(size)),
                ],
            )
        data = repo.read_blob(entry.oid)
        return ranged(self.headers.get("Range"), data, common + [("ETag", f'"{entry.oid}"')])

    def cdn_route(self, method, path):
        m = re.match(r"^/lfs/([0-9a-f]{64})$", path)
        if method not in ("GET", "HEAD") or not m:
            return Response(404, b"not found", content_type="text/plain")
        try:
            f = open(os.path.join(self.state.root, "lfs", m.group(1)), "rb")
        except OSError:
            return Response(404, b"no such object", content_type="text/plain")
        with f:
            # Read only the requested range: LFS objects may be large.
            return ranged(self.headers.get("Range"), f, [("ETag", f'"{m.group(1)}"'), ("Accept-Ranges", "bytes")])

    # -- git smart HTTP -------------------------------------------------------

    def git_backend(self, method, repo, rest, query, body):
        if rest[0] == "git-receive-pack" or "service=git-receive-pack" in query:
            return hub_error(403, None, "pushing is not supported by the local Hub")
        denied = self.access(repo, files=True)
        if denied:
            if repo.exists():  # private or gated: ask git/libgit2 for credentials
                denied.headers.append(("WWW-Authenticate", 'Basic realm="Authentication required"'))
                denied.status = 401
            return denied
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": os.path.join(self.state.root, "repos"),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": "/" + os.path.relpath(repo.gitdir, os.path.join(self.state.root, "repos")) + "/" + "/".join(rest),
            "REQUEST_METHOD": method,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": self.client_address[0],
            "REMOTE_USER": "",
        }
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        proc = subprocess.run([GIT_BACKEND], input=body, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out = proc.stdout
        sep = out.find(b"\r\n\r\n")
        seplen = 4
        if sep < 0:
            sep, seplen = out.find(b"\n\n"), 2
        if sep < 0:
            return Response(500, proc.stderr, content_type="text/plain")
        status, headers = 200, []
        for line in out[:sep].decode("latin-1").splitlines():
            k, _, v = line.partition(":")
            if k.lower() == "status":
                status = int(v.strip().split()[0])
            elif k.lower() != "content-length":
                headers.append((k, v.strip()))
        return Response(status, out[sep + seplen :], headers)


class CdnHandler(Handler):
    listener = "cdn"
    server_version = "LocalCDN/1.0"


def route_missing():
    """What a web framework answers for a route it does not have (FastAPI's
    404): no X-Error-Code, unlike the Hub's own errors."""
    return json_response(404, {"detail": "Not Found"})


def corrupt(body, offset):
    """Same length, different bytes: flip a run of bytes from `offset`."""
    body = bytearray(body)
    start = min(max(offset, 0), len(body) - 1)
    for i in range(start, min(len(body), start + 64)):
        body[i] ^= 0xFF
    return bytes(body)


def ranged(range_header, data, headers):
    """200 with the whole body, or 206/416 for a single bytes range.

    `data` is bytes or a seekable binary file."""
    if isinstance(data, (bytes, bytearray)):
        total = len(data)

        def read(start, length):
            return bytes(data[start : start + length])

    else:
        total = os.fstat(data.fileno()).st_size

        def read(start, length):
            data.seek(start)
            return data.read(length)

    headers = list(headers)
    m = re.match(r"^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$", range_header or "")
    if not m or (m.group(1) == "" and m.group(2) == ""):
        return Response(200, read(0, total), headers, "application/octet-stream")
    if m.group(1) == "":
        start, end = max(total - int(m.group(2)), 0), total - 1
    else:
        start = int(m.group(1))
        end = min(int(m.group(2)), total - 1) if m.group(2) else total - 1
    if start >= total or start > end:
        return Response(416, b"", headers + [("Content-Range", f"bytes */{total}")], "text/plain")
    headers.append(("Content-Range", f"bytes {start}-{end}/{total}"))
    return Response(206, read(start, end + 1 - start), headers, "application/octet-stream")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False
    request_queue_size = 64

    def handle_error(self, request, client_address):
        # Clients hanging up (timeouts, resets, libgit2 closing) are normal.
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError, OSError)):
            return
        super().handle_error(request, client_address)


def parent_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--parent-pid", type=int)
    ap.add_argument("--page-size", type=int, default=50, help="tree entries per page (default 50)")
    ap.add_argument("--remove-root", action="store_true", help="delete --root when the parent dies")
    ap.add_argument("--no-smart-http", action="store_true", help="serve no git smart HTTP, as a REST-only mirror")
    args = ap.parse_args()

    root = os.path.abspath(args.root)
    os.makedirs(os.path.join(root, "repos"), exist_ok=True)
    os.makedirs(os.path.join(root, "lfs"), exist_ok=True)
    state = State(root, args.page_size, smart_http=not args.no_smart_http)
    hub = Server(("127.0.0.1", 0), Handler)
    cdn = Server(("127.0.0.1", 0), CdnHandler)
    hub.state = cdn.state = state
    state.endpoint = f"http://127.0.0.1:{hub.server_address[1]}"
    state.cdn = f"http://127.0.0.1:{cdn.server_address[1]}"
    for srv in (hub, cdn):
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()

    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"endpoint": state.endpoint, "cdn": state.cdn, "pid": os.getpid()}, f)
    os.replace(tmp, args.port_file)

    while True:
        time.sleep(0.3)
        if args.parent_pid and not parent_alive(args.parent_pid):
            if args.remove_root:
                shutil.rmtree(root, ignore_errors=True)
            os._exit(0)


if __name__ == "__main__":
    main()
