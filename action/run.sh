#!/usr/bin/env bash
# action/run.sh - the "Run leakgate" step of leakgate's GitHub Action
# (action.yml; docs/github-action.md).
#
# Reads the action's inputs from INPUT_* variables (the step sets them; a
# hyphen in an input's name is an underscore here: working-directory is
# INPUT_WORKING_DIRECTORY), builds the `leakgate run` command line (or,
# with the merge input, `leakgate merge` of shards' JSON reports) (an
# option only for an input that is not empty, so that what the project's
# leakgate.toml or [tool.leakgate] sets still counts), runs it, prints the
# text report, and writes the step outputs ($GITHUB_OUTPUT) and, when
# leakgate could not, a short job summary ($GITHUB_STEP_SUMMARY). Exits with
# leakgate's exit code after all that, or 0 with fail-job: false. An input
# that makes no sense is exit 2, with the outputs written too.
#
# Other variables: LEAKGATE (the executable; default `leakgate` on PATH),
# GITHUB_WORKSPACE (where a relative working-directory starts; default the
# current directory), RUNNER_TEMP (scratch files; default a new temporary
# directory).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=action/lib.sh
. "$here/lib.sh"

leakgate=${LEAKGATE:-leakgate}
tmp=${RUNNER_TEMP:-}
if [[ -z $tmp ]]; then
    tmp=$(mktemp -d)
fi

code=''
outputs_written=0

# The step outputs, once (also on an input error).
write_outputs() {
    local verdict=$1 findings=$2 files=$3
    ((outputs_written)) && return 0
    outputs_written=1
    set_output exit-code "$code"
    set_output verdict "$verdict"
    set_output user-findings "$findings"
    set_output sarif "$sarif_out"
    set_output html "$html_out"
    set_output junit "$junit_out"
    set_output json "$json_out"
    set_output files "$files"
}

sarif_out='' html_out='' junit_out='' json_out=''
summary=true

# An input error: outputs (exit code 2), a summary line, exit 2.
input_error() {
    lg_error "$*"
    code=2
    sarif_out='' html_out='' junit_out='' json_out=''
    write_outputs error '' ''
    summary_note "$*"
    exit 2
}

# Appends a short note to the job summary (when leakgate wrote none).
summary_note() {
    if [[ $summary == true && -n ${GITHUB_STEP_SUMMARY:-} ]]; then
        {
            printf '## leakgate: exit %s (%s)\n\n' "$code" "$(describe_code "$code")"
            local fence='```'
            printf '%s\n%s\n%s\n' "$fence" "$1" "$fence"
        } >>"$GITHUB_STEP_SUMMARY" || true
    fi
}

# The verdict for an exit code when there is no JSON report to read it from
# (docs/exit-codes.md).
describe_code() {
    case $1 in
    0) echo pass ;;
    1) echo fail ;;
    2) echo error ;;
    3) echo incomplete ;;
    4) echo target_failed ;;
    5) echo internal_error ;;
    *) echo unknown ;;
    esac
}

# An absolute path for a path relative to the current directory.
absolute() {
    case $1 in
    /*) printf '%s\n' "$1" ;;
    *) printf '%s\n' "$PWD/$1" ;;
    esac
}

# --- inputs ------------------------------------------------------------------

command_line=${INPUT_COMMAND:-}
# Without the blanks and newlines around it (a YAML block scalar ends in one).
command_line=${command_line#"${command_line%%[![:space:]]*}"}
command_line=${command_line%"${command_line##*[![:space:]]}"}
merge=${INPUT_MERGE:-}
merge=${merge//[[:space:]]/ }
merge=${merge#"${merge%%[! ]*}"}
if [[ -n $merge && -n ${command_line//[[:space:]]/} ]]; then
    input_error "input merge: give either command (a run) or merge (shards' JSON reports to merge), not both"
fi
if [[ -z $merge && -z ${command_line//[[:space:]]/} ]]; then
    input_error "input command: give the command that runs your tests, e.g. 'python -m pytest tests/'"
fi

cd "${GITHUB_WORKSPACE:-$PWD}"
if [[ -n ${INPUT_WORKING_DIRECTORY:-} ]]; then
    cd "$INPUT_WORKING_DIRECTORY" 2>/dev/null ||
        input_error "input working-directory: no such directory: $INPUT_WORKING_DIRECTORY"
fi

# bool VAR NAME VALUE DEFAULT: VAR=true/false/"" from a true/false input
# (DEFAULT when it is empty).
bool() {
    local b
    b=$(to_bool "${3:-$4}") || input_error "input $2: expected true or false, not '$3'"
    printf -v "$1" '%s' "$b"
}
fail_job=true per_test='' track_fds=''
bool summary summary "${INPUT_SUMMARY:-}" true
bool fail_job fail-job "${INPUT_FAIL_JOB:-}" true
bool per_test per-test "${INPUT_PER_TEST:-}" ''
bool track_fds track-fds "${INPUT_TRACK_FDS:-}" ''

if [[ -n $merge ]]; then
    args=(merge)
    # What only a run does: the shard jobs set it.
    for input in per-test repeat origins track-fds timeout valgrind-args src-roots user-objects suppressions shard shard-durations; do
        var=INPUT_${input^^}
        var=${var//-/_}
        if [[ -n ${!var:-} ]]; then
            input_error "input $input: a merge runs nothing (set it on the jobs that run the shards)"
        fi
    done
else
    args=(run)
fi

case ${INPUT_CONFIG:-} in
'') ;;
none) args+=(--no-config) ;;
*) args+=("--config=$INPUT_CONFIG") ;;
esac

# --opt=VALUE for each input that is set.
opt() {
    if [[ -n $2 ]]; then args+=("$1=$2"); fi
}
opt --fail-on "${INPUT_FAIL_ON:-}"
opt --max-leaked-bytes "${INPUT_MAX_LEAKED_BYTES:-}"
opt --baseline "${INPUT_BASELINE:-}"
opt --repeat "${INPUT_REPEAT:-}"
opt --timeout "${INPUT_TIMEOUT:-}"
opt --origins "${INPUT_ORIGINS:-}"
opt --shard "${INPUT_SHARD:-}"
opt --shard-durations "${INPUT_SHARD_DURATIONS:-}"

case $per_test in
true) args+=(--per-test) ;;
false) args+=(--no-per-test) ;;
esac
if [[ $track_fds == true ]]; then args+=(--track-fds); fi

# --opt=ITEM for each item of a list input (blank- or newline-separated;
# quote an item with blanks in it).
list_opt() {
    local option=$1 input=$2 value=$3 rc=0
    split_words args "$value" || rc=$?
    if ((rc != 0)); then
        input_error "input $input: unterminated quote in: $value"
    fi
    local w
    for w in "${WORDS[@]}"; do args+=("$option=$w"); done
}
list_opt --src-root src-roots "${INPUT_SRC_ROOTS:-}"
list_opt --user-object user-objects "${INPUT_USER_OBJECTS:-}"
list_opt --suppressions suppressions "${INPUT_SUPPRESSIONS:-}"
list_opt --valgrind-arg valgrind-args "${INPUT_VALGRIND_ARGS:-}"

case $(printf '%s' "${INPUT_ANNOTATIONS:-auto}" | tr '[:upper:]' '[:lower:]') in
'' | auto) ;;
true | yes | on | 1 | always) args+=(--annotations=always) ;;
false | no | off | 0 | never) args+=(--annotations=never) ;;
*) input_error "input annotations: expected auto, true or false, not '$INPUT_ANNOTATIONS'" ;;
esac

if [[ -n ${INPUT_SARIF:-} ]]; then
    sarif_out=$(absolute "$INPUT_SARIF")
    args+=("--sarif=$sarif_out")
fi
if [[ -n ${INPUT_HTML:-} ]]; then
    html_out=$(absolute "$INPUT_HTML")
    args+=("--html=$html_out")
fi
if [[ -n ${INPUT_JUNIT:-} ]]; then
    junit_out=$(absolute "$INPUT_JUNIT")
    args+=("--junit=$junit_out")
fi
# The JSON report is always written (the outputs are read from it); the
# text report is rendered from it for the log.
if [[ -n ${INPUT_JSON:-} ]]; then
    json_out=$(absolute "$INPUT_JSON")
else
    json_out=$tmp/leakgate-report.json
fi
args+=(--format=json "--output=$json_out")

rc=0
split_words args "${INPUT_EXTRA_ARGS:-}" || rc=$?
if ((rc != 0)); then
    input_error "input extra-args: unterminated quote in: $INPUT_EXTRA_ARGS"
fi
args+=("${WORDS[@]}")

if [[ -n $merge ]]; then
    # The reports: each word a file or a glob (shard-*.json), in order.
    rc=0
    split_words merge "$merge" || rc=$?
    if ((rc != 0)); then
        input_error "input merge: unterminated quote in: $merge"
    fi
    for w in "${WORDS[@]}"; do
        mapfile -t matched < <(compgen -G "$w" | LC_ALL=C sort || true)
        if ((${#matched[@]} == 0)); then
            input_error "input merge: no file matches $w (in $PWD)"
        fi
        args+=("${matched[@]}")
    done
else
    # The command: its words when it is a plain command line (so that leakgate
    # sees pytest or python as its target), else bash -c.
    rc=0
    split_words command "$command_line" || rc=$?
    case $rc in
    0) args+=(-- "${WORDS[@]}") ;;
    1) args+=(-- bash --noprofile --norc -eo pipefail -c "$command_line") ;;
    *) input_error "input command: unterminated quote in: $command_line" ;;
    esac
fi

# --- run ---------------------------------------------------------------------

# Stale reports of an earlier run must not pass for this run's.
for f in "$json_out" "$sarif_out" "$html_out" "$junit_out"; do
    if [[ -n $f ]]; then rm -f -- "$f"; fi
done
stderr_log=$tmp/leakgate-stderr.log
printf 'leakgate action: running in %s:' "$PWD"
printf ' %q' "$leakgate" "${args[@]}"
printf '\n'

env_cmd=(env)
if [[ $summary == false ]]; then env_cmd+=(-u GITHUB_STEP_SUMMARY); fi

# Standard error goes to the log and to a file (for the summary of a run
# that ends before leakgate writes its report).
set +e
{ "${env_cmd[@]}" "$leakgate" "${args[@]}" 2>&1 1>&3 3>&- | tee "$stderr_log" >&2 3>&-; } 3>&1
code=${PIPESTATUS[0]}
set -e

verdict='' findings=''
if [[ -s $json_out ]]; then
    # The report for the log.
    "$leakgate" report "$json_out" || lg_warning "leakgate report could not render $json_out"
    if command -v jq >/dev/null 2>&1; then
        verdict=$(jq -r '.verdict.status // empty' "$json_out" 2>/dev/null || true)
        findings=$(jq -r '.summary.user.findings // empty' "$json_out" 2>/dev/null || true)
    else
        py=$(command -v python3 || command -v python || true)
        if [[ -n $py ]]; then
            read -r verdict findings < <("$py" -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(r.get("verdict", {}).get("status", ""), r.get("summary", {}).get("user", {}).get("findings", ""))
' "$json_out" 2>/dev/null || true) || true
        fi
    fi
else
    json_out=''
    # leakgate wrote no report (a usage error, say): its last words are the
    # summary, and the annotation.
    last=$(grep -v '^[[:space:]]*$' "$stderr_log" 2>/dev/null | tail -n 1 || true)
    lg_error "leakgate exited $code without a report: ${last:-see the log}"
    summary_note "$(tail -n 5 "$stderr_log" 2>/dev/null || true)"
fi
if [[ -z $verdict ]]; then verdict=$(describe_code "$code"); fi

# Only the files that exist are outputs; "files" (for the artifact) has the
# JSON report only when the json input asked for it.
files=''
for v in sarif_out html_out junit_out json_out; do
    if [[ -n ${!v} && -f ${!v} ]]; then
        if [[ $v != json_out || -n ${INPUT_JSON:-} ]]; then
            files+=${files:+$'\n'}${!v}
        fi
    else
        printf -v "$v" '%s' ''
    fi
done
write_outputs "$verdict" "$findings" "$files"

if [[ $code != 0 ]]; then
    if [[ $fail_job == false ]]; then
        lg_warning "leakgate exited $code ($verdict); the job goes on (fail-job: false)"
        exit 0
    fi
    echo "leakgate action: leakgate exited $code ($verdict)" >&2
fi
exit "$code"
