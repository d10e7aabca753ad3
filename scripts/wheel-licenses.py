"""Adds to a wheel auditwheel repaired the licence of every library it
vendored, and checks that the wheel's libkernels finds them by its own run
path. Used by scripts/build-wheel.sh.

usage: wheel-licenses.py PLAIN_WHEEL REPAIRED_WHEEL

auditwheel copies each library outside the manylinux policy into
libkernels.libs/ as NAME-HASH.so.N. The plain wheel's libkernels.so.N,
run through ldd on this machine, says which file each came from; dpkg says
which Debian package owns that file, and the package's copyright file is its
licence. They go to the .dist-info's licenses/vendored/, with an index
(vendored/README) of library, package and version. A library whose licence
cannot be found stops the build: a wheel is not shipped without one.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

LIBKERNELS = re.compile(r"^libkernels/lib/libkernels\.so\.\d+$")
HASHED = re.compile(r"^(?P<base>[^.]+)-[0-9a-f]{8}(?P<ext>\..*)$")


def ldd_paths(lib):
    """soname, and the name of the file it links to -> what this machine's loader resolves it to."""
    out = subprocess.run(["ldd", str(lib)], check=True, capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (/\S+)", line)
        if m:
            # auditwheel names a copy after the file the soname links to.
            found[m.group(1)] = found[os.path.basename(os.path.realpath(m.group(2)))] = m.group(2)
    return found


def owner(path):
    """The Debian package that installed `path` (with or without the /usr of a merged /usr)."""
    real = os.path.realpath(path)
    candidates = {path, real}
    for p in list(candidates):
        candidates.add(p[len("/usr"):] if p.startswith("/usr/") else "/usr" + p)
    for p in sorted(candidates):
        r = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout.split(":", 1)[0].strip()
    raise SystemExit(f"wheel-licenses: no Debian package owns {path}; its licence cannot be found")


def version(pkg):
    return subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], check=True, capture_output=True,
                          text=True).stdout


def vendored(names):
    return sorted(n.split("/", 1)[1] for n in names if n.startswith("libkernels.libs/") and not n.endswith("/"))


def main(plain, fixed):
    tmp = Path(tempfile.mkdtemp(prefix="wheel-licenses-"))
    try:
        with zipfile.ZipFile(plain) as z:
            (member,) = [n for n in z.namelist() if LIBKERNELS.match(n)]
            z.extract(member, tmp / "plain")
        sources = ldd_paths(tmp / "plain" / member)
        subprocess.run([sys.executable, "-m", "wheel", "unpack", "-d", str(tmp / "fixed"), str(fixed)], check=True,
                       stdout=subprocess.DEVNULL)
        (tree,) = (tmp / "fixed").iterdir()
        (dist_info,) = tree.glob("*.dist-info")
        dest = dist_info / "licenses" / "vendored"
        dest.mkdir(parents=True)
        index = ["# The libraries this wheel vendors (libkernels.libs/), the Debian 12 package each came from,",
                 "# its version, and its licence: <package>.copyright beside this file.", ""]
        libs = vendored(str(p.relative_to(tree)) for p in tree.rglob("*"))
        if not libs:
            raise SystemExit(f"wheel-licenses: {fixed} vendors no library: was it repaired?")
        for name in libs:
            m = HASHED.match(name)
            soname = m.group("base") + m.group("ext") if m else name
            path = sources.get(soname)
            if not path:
                raise SystemExit(f"wheel-licenses: {name} is in the wheel but {soname} is not among the plain "
                                 f"libkernels.so's dependencies ({', '.join(sorted(sources))})")
            pkg = owner(path)
            copyright_file = Path("/usr/share/doc") / pkg / "copyright"
            if not copyright_file.is_file():
                raise SystemExit(f"wheel-licenses: {pkg} (which owns {path}) has no {copyright_file}")
            shutil.copyfile(copyright_file, dest / f"{pkg}.copyright")
            index.append(f"{name}\t{pkg}\t{version(pkg)}\t{pkg}.copyright")
        (dest / "README").write_text("\n".join(index) + "\n")
        check_runpath(tree)
        os.unlink(fixed)
        subprocess.run([sys.executable, "-m", "wheel", "pack", "-d", str(Path(fixed).parent), str(tree)], check=True,
                       stdout=subprocess.DEVNULL)
        if not Path(fixed).is_file():
            raise SystemExit(f"wheel-licenses: wheel pack did not write {fixed} again")
    finally:
        shutil.rmtree(tmp)


def check_runpath(tree):
    """libkernels.so.N finds what the wheel vendors by its own RUNPATH, relative to itself."""
    (lib,) = (tree / "libkernels" / "lib").glob("libkernels.so.*")
    out = subprocess.run(["readelf", "-d", str(lib)], check=True, capture_output=True, text=True).stdout
    m = re.search(r"\((?:RUNPATH|RPATH)\)\s+Library (?:runpath|rpath): \[([^\]]*)\]", out)
    if not m or not m.group(1).startswith("$ORIGIN"):
        raise SystemExit(f"wheel-licenses: {lib.name} has no $ORIGIN run path ({m.group(1) if m else 'none'})")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
