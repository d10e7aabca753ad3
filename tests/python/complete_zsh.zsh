# Prints the matches zsh's completion system offers for a command line:
#   zsh -f complete_zsh.zsh FPATH_DIR "libkernels cache rm --"
# (an interactive zsh in a pseudo-terminal, its TAB bound to complete-word,
# every match it adds also printed; tests/python/test_completions.py).
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PROMPT=''; fpath=(${(q)1} \$fpath); autoload -Uz compinit; compinit -u -D"
# Every match added is also printed (compadd -O only collects).
zpty -w z 'compadd() { if [[ " $* " == *" -"[OAD]" "* ]]; then builtin compadd "$@"; return; fi; local -a m; builtin compadd -O m "$@"; print -rl -- ${^m/#/MATCH:} >/dev/tty; builtin compadd "$@"; }'
zpty -w z 'bindkey "^I" complete-word; print -r -- READY""READY'
local line mark=READYREADY
integer tries
while (( tries++ < 300 )); do
  if ! zpty -r -t z line; then sleep 0.05; continue; fi
  if [[ $line == *$mark* ]]; then
    [[ $mark == DONEDONE ]] && break
    mark=DONEDONE
    zpty -w -n z "$2"$'\t'
    sleep 0.5
    zpty -w -n z $'\C-u'
    zpty -w z 'print -r -- DONE""DONE'
  elif [[ $mark == DONEDONE && $line == *MATCH:* ]]; then
    print -r -- ${${line##*MATCH:}%%$'\r'*}
  fi
done
zpty -d z
