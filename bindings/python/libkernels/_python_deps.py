"""`python-depends` of a variant's metadata.json, checked with the rules of
Python kernels 0.17.2 (python_deps.py): each name must be one the rules
know, generally or for the backend of this process, and the Python packages
behind it must be importable. The table is 0.17.2's python_depends.json.
"""
import importlib.util

# name -> [(pip package, import name or None)]
_GENERAL = {
    "einops": [("einops", "einops")],
    "helion": [("helion", "helion")],
    "tvm-ffi": [("apache-tvm-ffi", "tvm_ffi")],
}
_BACKENDS = {
    "cpu": {},
    "cuda": {"nvidia-cutlass-dsl": [("nvidia-cutlass-dsl", "cutlass")]},
    "metal": {},
    "neuron": {"nki": [("nki", "nki")]},
    "rocm": {},
    # OneAPI's package installs no Python module: nothing to import.
    "xpu": {"onednn": [("onednn-devel", None)]},
}


def validate(kernel_module_name, dependencies, backend):
    """Raises ValueError for a dependency the rules do not know (for
    `backend`), ImportError naming the pip package for one not installed;
    the messages are 0.17's."""
    backend_deps = _BACKENDS.get(backend, {})
    for dependency in dependencies:
        packages = _GENERAL.get(dependency, backend_deps.get(dependency))
        if packages is None:
            raise ValueError(f"Kernel module `{kernel_module_name}` uses unsupported kernel dependency: {dependency}")
        for pkg, module in packages:
            if module is not None and importlib.util.find_spec(module) is None:
                raise ImportError(
                    f"Kernel module `{kernel_module_name}` requires Python dependency `{pkg}`. "
                    f"Please install with: pip install {pkg}")
