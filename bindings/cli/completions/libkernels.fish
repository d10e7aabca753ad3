# fish completion for libkernels, the libkernels command-line tool.
# Installed as share/fish/vendor_completions.d/libkernels.fish.
# tests/python/test_completions.py checks it against `libkernels --help`.

set -l commands lock download info versions variants get load verify verify-signature to-wheel bundle cache trust version
complete -c libkernels -f

# Commands.
complete -c libkernels -n "not __fish_seen_subcommand_from $commands" -a lock -d "Resolve DIR/pyproject.toml into DIR/kernels.lock"
complete -c libkernels -n "not __fish_seen_subcommand_from $commands" -a download -d "Download the kernels DIR/kernels.lock pins"
complete -c libkernels -n "not __fish_seen_subcommand_from $commands" -a info -d "Describe a kernel: metadata and backends"
complete -c libkernels -n "not __fish_seen_subcommand_from $commands" -a versions -d "List the versions of a kernel repo"
complete -c libkernels -n "not __fish_seen_subcommand_from $commands" -a variants -d "How REPO's variants resolve on this system"
complete -c libkernels -n "not __fish_seen_subcommand_from $commands" -a get -d "Fetch and load a kernel"
complete -c libkernels -n "not __fish_seen_subcommand_from $commands" -a load -d "Load REPO at the commit kernels.lock pins"
complete -c libkernels -n "not __fish_seen_subcommand_from $commands" -a verify -d "Check the cached kernels kernels.lock pins"
complete -c libkernels -n "not __fish_seen_subcommand_from $commands" -a verify-signature -d "Verify the sigstore signature of a kernel"
complete -c libkernels -n "not __fish_seen_subcommand_from $commands" -a to-wheel -d "One Python wheel per build variant"
complete -c libkernels -n "not __fish_seen_subcommand_from $commands" -a bundle -d "Locked kernels in one verified file: write, import, ls"
complete -c libkernels -n "__fish_seen_subcommand_from bundle; and not __fish_seen_subcommand_from import ls" -a import -d "Import a bundle into the cache"
complete -c libkernels -n "__fish_seen_subcommand_from bundle; and not __fish_seen_subcommand_from import ls" -a ls -d "List what a bundle holds"
complete -c libkernels -n "__fish_seen_subcommand_from bundle; and not __fish_seen_subcommand_from import ls" -s o -l out -r -d "The bundle to write"
complete -c libkernels -n "__fish_seen_subcommand_from bundle; and not __fish_seen_subcommand_from import ls" -l variant -x -d "Only this variant (repeatable)"
complete -c libkernels -n "__fish_seen_subcommand_from bundle; and not __fish_seen_subcommand_from import ls" -l system -d "Only the variant each kernel resolves to on the described system"
complete -c libkernels -n "not __fish_seen_subcommand_from $commands" -a cache -d "List (ls) or remove (rm) cached kernels"
complete -c libkernels -n "not __fish_seen_subcommand_from $commands" -a trust -d "Record the Hub's verdict on cached kernels' publishers"
complete -c libkernels -n "not __fish_seen_subcommand_from $commands" -a version -d "Print the version"
complete -c libkernels -n "__fish_seen_subcommand_from cache; and not __fish_seen_subcommand_from ls rm" -a ls -d "List the kernels in the cache"
complete -c libkernels -n "__fish_seen_subcommand_from cache; and not __fish_seen_subcommand_from ls rm" -a rm -d "Remove a kernel from the cache"

# Folders and files as arguments.
complete -c libkernels -n "__fish_seen_subcommand_from lock download verify" -a "(__fish_complete_directories)"
complete -c libkernels -n "__fish_seen_subcommand_from load" -F

# Global options.
complete -c libkernels -l endpoint -x -d "Hub URL"
complete -c libkernels -l cache-dir -x -a "(__fish_complete_directories)" -d "Cache folder"
complete -c libkernels -l offline -d "Make no network call: use only the cache"
complete -c libkernels -l trust-remote-code -d "Load kernels from publishers the Hub does not trust"
complete -c libkernels -l trusted-orgs -x -d "Organisations or repo ids to trust"
complete -c libkernels -l require-signature -d "Refuse variants without a valid sigstore signature"
complete -c libkernels -l timeout -x -d "Per-request timeout in milliseconds"
complete -c libkernels -l retries -x -d "Retries on connection errors, 5xx and 429"
complete -c libkernels -l max-parallel -x -d "Concurrent transfers"
complete -c libkernels -l backend -x -a "cpu cuda rocm xpu metal npu" -d "Resolve variants for this backend"
complete -c libkernels -l backend-version -x -d "The backend's version"
complete -c libkernels -l torch -x -a none -d "Resolve for this torch version"
complete -c libkernels -l torch-dir -x -a "(__fish_complete_directories)" -d "The installed torch to resolve for"
complete -c libkernels -l no-find-torch -d "Do not look for python3's torch"
complete -c libkernels -l cxx11-abi -x -a "0 1" -d "The torch C++ ABI"
complete -c libkernels -l tvm-ffi -x -a none -d "Resolve for this tvm-ffi version"
complete -c libkernels -l gpu-archs -x -a none -d "GPU archs (compute capabilities, gfx names)"
complete -c libkernels -l device -x -d "The GPU the kernel will run on"
complete -c libkernels -l skip-arch-check -d "Do not compare a build's archs with the device"
complete -c libkernels -l json -d "Print the result as JSON"
complete -c libkernels -s q -l quiet -d "Errors only on stderr"
complete -c libkernels -s v -l verbose -d "Info messages; twice: debug too"
complete -c libkernels -l bytes -d "Sizes as byte counts"
complete -c libkernels -l progress -d "Draw a progress bar even without a terminal"
complete -c libkernels -l no-progress -d "Never draw a progress bar"
complete -c libkernels -s h -l help -d "Show the help"
complete -c libkernels -n "not __fish_seen_subcommand_from $commands" -s V -l version -d "Print the version"

# Command options.
complete -c libkernels -n "__fish_seen_subcommand_from download" -l all-variants -d "Every build variant"
complete -c libkernels -n "__fish_seen_subcommand_from info" -l revision -x -d "Branch, tag or commit"
complete -c libkernels -n "__fish_seen_subcommand_from info" -l version -x -d "The kernel version N"
complete -c libkernels -n "__fish_seen_subcommand_from variants; or __fish_seen_subcommand_from rm" -l revision -x -d "Branch, tag, commit, major version or spec"
complete -c libkernels -n "__fish_seen_subcommand_from load" -l fetch -d "Download the locked variant when not cached"
complete -c libkernels -n "__fish_seen_subcommand_from to-wheel" -s o -l out -x -a "(__fish_complete_directories)" -d "Folder for the wheels"
complete -c libkernels -n "__fish_seen_subcommand_from to-wheel" -l python-version -x -d "Minimum Python"
complete -c libkernels -n "__fish_seen_subcommand_from to-wheel" -l manylinux-version -x -d "manylinux (glibc) version"
complete -c libkernels -n "__fish_seen_subcommand_from to-wheel" -l variant -x -d "Only these variants (comma-separated)"
complete -c libkernels -n "__fish_seen_subcommand_from rm" -s n -l dry-run -d "Only list what would be removed"
complete -c libkernels -n "__fish_seen_subcommand_from verify-signature" -l revision -x -d "Branch, tag, commit, major version or spec"
complete -c libkernels -n "__fish_seen_subcommand_from verify-signature" -l all-variants -d "Every build variant"
complete -c libkernels -n "__fish_seen_subcommand_from verify-signature" -l filter-unsigned -d "Skip variants that have no signature"
complete -c libkernels -n "__fish_seen_subcommand_from verify-signature" -l filter-no-digest -d "Skip variants whose metadata has no digest"
