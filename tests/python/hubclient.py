"""Python handle on the local Hub fixture (tests/hub/server.py).

    from hubclient import Hub
    hub = Hub.start()
    hub.publish("org/k", files={"README.md": b"hi"}, tags=["v1.0.0"], branches=["main", "v1"])
    hub.fault(path="/resolve/", mode="503", count=2)
    hub.count("GET", "/resolve/")
    hub.stop()

In pytest, use the `hub` fixture from conftest.py instead (it stops the hub).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

SOURCE_DIR = os.environ.get("KERNELS_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
)
HUB_DIR = os.path.join(SOURCE_DIR, "tests", "hub")
if HUB_DIR not in sys.path:
    sys.path.insert(0, HUB_DIR)

import publish as _publish  # noqa: E402  (tests/hub/publish.py)

random_bytes = _publish.random_bytes
PublishError = _publish.PublishError

# The fixture is always local: never go through a proxy.
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Hub:
    def __init__(self, root, proc, endpoint, cdn, owns_root):
        self.root = root
        self.proc = proc
        self.endpoint = endpoint
        self.cdn = cdn
        self._owns_root = owns_root

    @classmethod
    def start(cls, root=None, page_size=None, timeout=60.0):  # a hang guard; it starts in ~1 s
        owns_root = root is None
        root = root or tempfile.mkdtemp(prefix="kernels-test-hub-")
        port_file = os.path.join(root, "server.json")
        cmd = [
            sys.executable,
            os.path.join(HUB_DIR, "server.py"),
            "--root",
            root,
            "--port-file",
            port_file,
            "--parent-pid",
            str(os.getpid()),
        ]
        if page_size:
            cmd += ["--page-size", str(page_size)]
        if owns_root:
            cmd.append("--remove-root")
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.path.exists(port_file):
                with open(port_file) as f:
                    info = json.load(f)
                return cls(root, proc, info["endpoint"], info["cdn"], owns_root)
            if proc.poll() is not None:
                break
            time.sleep(0.02)
        proc.kill()
        proc.wait()
        if owns_root:
            shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"local Hub did not start (exit status {proc.returncode})")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._owns_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    # -- content ----------------------------------------------------------------

    def publish(self, repo=None, **kwargs):
        """tests/hub/publish.py's publish(root, repo, **kwargs); returns the commit id."""
        return _publish.publish(self.root, repo, **kwargs)

    def publish_spec(self, steps):
        """publish.py's run_spec: a list of step dicts; returns their commit ids."""
        return _publish.run_spec(self.root, steps)

    def publish_cli(self, *args):
        """Runs publish.py with these arguments; returns its stdout (the commit id)."""
        out = subprocess.run(
            [sys.executable, os.path.join(HUB_DIR, "publish.py"), "--root", self.root, *args],
            check=True,
            stdout=subprocess.PIPE,
        )
        return out.stdout.decode().strip()

    def url(self, path):
        return self.endpoint + path

    # -- control endpoint ---------------------------------------------------------

    def _control(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.endpoint + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        with _opener.open(req, timeout=30) as resp:
            return json.loads(resp.read() or b"null")

    def fault(self, spec=None, **kwargs):
        """Adds a fault: fault(path="/resolve/", mode="503", count=2) or fault({...})."""
        return self._control("POST", "/_fixture/faults", spec if spec is not None else kwargs)

    def faults(self):
        return self._control("GET", "/_fixture/faults")

    def faults_clear(self):
        self._control("DELETE", "/_fixture/faults")

    def log(self):
        return self._control("GET", "/_fixture/log")

    def log_clear(self):
        self._control("DELETE", "/_fixture/log")

    def requests(self, method=None, path=None, listener=None, status=None):
        """Log entries filtered by method, path substring, listener and status."""
        return [
            e
            for e in self.log()
            if (method is None or e["method"] == method)
            and (path is None or path in e["path"])
            and (listener is None or e["listener"] == listener)
            and (status is None or e["status"] == status)
        ]

    def count(self, method=None, path=None, listener=None, status=None):
        return len(self.requests(method, path, listener, status))

    def config(self, **kwargs):
        """config(page_size=N): tree entries per page."""
        return self._control("POST", "/_fixture/config", kwargs)

    def hf_env(self, cache_dir, **extra):
        """Environment for a subprocess using huggingface_hub against this hub."""
        env = dict(os.environ)
        env.update(
            {
                "HF_ENDPOINT": self.endpoint,
                "HF_HUB_CACHE": str(cache_dir),
                "HF_HUB_OFFLINE": "0",
                "HF_HUB_DISABLE_TELEMETRY": "1",
                "HF_HUB_DISABLE_PROGRESS_BARS": "1",
                "HF_TOKEN": "",
                "NO_PROXY": "127.0.0.1,localhost",
            }
        )
        env.update({k: str(v) for k, v in extra.items()})
        return env


def http(method, url, headers=None, data=None, timeout=30):
    """A plain request that does not follow redirects: (status, headers, body)."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirect)
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with opener.open(req, timeout=timeout) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()
