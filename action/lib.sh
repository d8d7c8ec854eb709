# action/lib.sh - helpers shared by the scripts of leakgate's GitHub Action
# (action.yml): sourced by install.sh and run.sh, never run by itself.
# shellcheck shell=bash

# A GitHub error annotation and a message on standard error.
lg_error() {
    echo "::error title=leakgate action::$*"
    echo "leakgate action: error: $*" >&2
}

# A GitHub warning annotation.
lg_warning() {
    echo "::warning title=leakgate action::$*"
}

# set_output NAME VALUE: one step output, appended to $GITHUB_OUTPUT (the
# multi-line form when VALUE holds a newline). Without $GITHUB_OUTPUT (a
# local run) the output is printed instead.
set_output() {
    local name=$1 value=$2 delim
    if [[ -z ${GITHUB_OUTPUT:-} ]]; then
        printf 'output %s=%s\n' "$name" "$value"
        return 0
    fi
    if [[ $value == *$'\n'* ]]; then
        delim="leakgate_${RANDOM}${RANDOM}${RANDOM}"
        printf '%s<<%s\n%s\n%s\n' "$name" "$delim" "$value" "$delim" >>"$GITHUB_OUTPUT"
    else
        printf '%s=%s\n' "$name" "$value" >>"$GITHUB_OUTPUT"
    fi
}

# to_bool VALUE: true/false (also yes/no, on/off, 1/0, any case) printed as
# "true" or "false", "" for ""; returns 1 (printing nothing) for anything else.
to_bool() {
    case $(printf '%s' "$1" | tr '[:upper:]' '[:lower:]') in
    '') echo '' ;;
    true | yes | on | 1) echo true ;;
    false | no | off | 0) echo false ;;
    *) return 1 ;;
    esac
}

# split_words MODE STRING: splits STRING into the array WORDS the way a
# shell splits a command line into words (blanks separate, '...' and "..."
# quote, a backslash escapes) but expands nothing. MODE "args": newlines
# separate words too and every other character is literal (lists of paths,
# globs, options). MODE "command": returns 1 when STRING needs a shell to
# mean what it says: an unquoted | & ; < > ( ) $ ` * ? [ ] { } ~ # or
# newline, a $ or ` inside "...", or a leading VAR=value. Returns 2 on an
# unterminated quote.
split_words() {
    local mode=$1 s=$2
    local i=0 n=${#2} c next word='' have=0 q=''
    WORDS=()
    while ((i < n)); do
        c=${s:i:1}
        if [[ $q == "'" ]]; then
            if [[ $c == "'" ]]; then q=''; else word+=$c; fi
        elif [[ $q == '"' ]]; then
            case $c in
            '"') q='' ;;
            "\\")
                next=${s:i+1:1}
                case $next in
                '"' | "\\" | '$' | '`')
                    word+=$next
                    i=$((i + 1))
                    ;;
                $'\n') i=$((i + 1)) ;;
                *) word+=$c ;;
                esac
                ;;
            '$' | '`')
                [[ $mode == command ]] && return 1
                word+=$c
                ;;
            *) word+=$c ;;
            esac
        else
            case $c in
            ' ' | $'\t' | $'\r' | $'\n')
                if [[ $c == $'\n' && $mode == command ]]; then return 1; fi
                if ((have)); then WORDS+=("$word"); fi
                word='' have=0
                ;;
            "'" | '"')
                q=$c
                have=1
                ;;
            "\\")
                i=$((i + 1))
                next=${s:i:1}
                if [[ $next != $'\n' ]]; then
                    word+=$next
                    have=1
                fi
                ;;
            '|' | '&' | ';' | '<' | '>' | '(' | ')' | '$' | '`' | '*' | '?' | '[' | ']' | '{' | '}' | '~' | '#')
                [[ $mode == command ]] && return 1
                word+=$c
                have=1
                ;;
            *)
                word+=$c
                have=1
                ;;
            esac
        fi
        i=$((i + 1))
    done
    [[ -z $q ]] || return 2
    if ((have)); then WORDS+=("$word"); fi
    if [[ $mode == command && ${#WORDS[@]} -gt 0 && ${WORDS[0]} =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; then
        return 1
    fi
    return 0
}
