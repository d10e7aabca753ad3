# bash completion for libkernels, the libkernels command-line tool.
# Installed as share/bash-completion/completions/libkernels; or: source it.
# tests/python/test_completions.py checks it against `libkernels --help`.

_libkernels() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local commands="lock download info versions variants get load verify verify-signature to-wheel bundle cache trust version"
	local global="--endpoint --cache-dir --offline --trust-remote-code --trusted-orgs --require-signature --timeout --retries
		--max-parallel --backend --backend-version --torch --torch-dir --no-find-torch --cxx11-abi --tvm-ffi
		--gpu-archs --device --skip-arch-check --json --quiet -q --verbose -v --bytes --progress --no-progress --help -h"
	# Options whose value is the next word.
	local valued="--endpoint --cache-dir --trusted-orgs --timeout --retries --max-parallel --backend
		--backend-version --torch --torch-dir --cxx11-abi --tvm-ffi --gpu-archs --device --revision --version --out -o
		--python-version --manylinux-version --variant"
	local i v w cmd="" sub="" npos=0 skip

	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		skip=0
		for v in $valued; do
			[[ $w == "$v" ]] && skip=1
		done
		if ((skip)); then
			((i++))
			continue
		fi
		[[ $w == -* ]] && continue
		if [[ -z $cmd ]]; then
			cmd=$w
		elif [[ $cmd == cache && -z $sub ]] || [[ $cmd == bundle && -z $sub && ($w == import || $w == ls) ]]; then
			sub=$w
		else
			((npos++))
		fi
	done

	case $prev in
	--cache-dir | --torch-dir | --out | -o)
		[[ $cmd == bundle ]] && COMPREPLY=($(compgen -f -- "$cur")) || COMPREPLY=($(compgen -d -- "$cur"))
		return
		;;
	--backend)
		COMPREPLY=($(compgen -W "cpu cuda rocm xpu metal npu" -- "$cur"))
		return
		;;
	--cxx11-abi)
		COMPREPLY=($(compgen -W "0 1" -- "$cur"))
		return
		;;
	--torch | --tvm-ffi | --gpu-archs)
		COMPREPLY=($(compgen -W "none" -- "$cur"))
		return
		;;
	--endpoint | --trusted-orgs | --timeout | --retries | --max-parallel | --backend-version | --revision | --device | \
		--python-version | --manylinux-version | --variant)
		return
		;;
	esac

	if [[ $cur == -* ]]; then
		local opts=$global
		case $cmd$sub in
		download) opts+=" --all-variants" ;;
		variants) opts+=" --revision" ;;
		info) opts+=" --revision --version" ;;
		verify-signature) opts+=" --revision --all-variants --filter-unsigned --filter-no-digest" ;;
		load) opts+=" --fetch" ;;
		to-wheel) opts+=" --out -o --python-version --manylinux-version --variant" ;;
		cacherm) opts+=" --revision --dry-run -n" ;;
		bundle) opts+=" --out -o --variant --system" ;;
		"") opts+=" --version -V" ;;
		esac
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
		return
	fi
	case $cmd in
	"") COMPREPLY=($(compgen -W "$commands" -- "$cur")) ;;
	cache) [[ -z $sub ]] && COMPREPLY=($(compgen -W "ls rm" -- "$cur")) ;;
	bundle) # bundle [DIR] -o FILE; bundle import FILE; bundle ls FILE
		if [[ -z $sub ]] && ((npos == 0)); then
			COMPREPLY=($(compgen -W "import ls" -- "$cur") $(compgen -d -- "$cur"))
		elif ((npos == 0)); then
			COMPREPLY=($(compgen -f -- "$cur"))
		fi
		;;
	lock | download | verify) ((npos == 0)) && COMPREPLY=($(compgen -d -- "$cur")) ;;
	load) ((npos == 1)) && COMPREPLY=($(compgen -f -- "$cur")) ;; # DIR or its kernels.lock
	info) ((npos == 0)) && COMPREPLY=($(compgen -d -- "$cur")) ;; # a repo id, or a kernel folder
	esac
}
complete -o filenames -F _libkernels libkernels
