# SPDX-License-Identifier: MIT
# scripts/jobs.sh — sourced by compilers.sh and headers.sh: commands run in the background,
# JOBS at a time (default: one per CPU), each with its own log; their exit status is read after
# `wait`, in the order they were started, so a script's report reads as if it ran them one by
# one. A job must not depend on another job still running.
JOBS=${JOBS:-$(nproc)}
job_logs=()  # the log of every job started, in order
job() {  # log command...: runs command in the background, stdout+stderr to log, status to log.rc
  local log=$1; shift
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
  job_logs+=("$log")
  rm -f "$log.rc"
  ( rc=0; "$@" >"$log" 2>&1 || rc=$?; echo "$rc" >"$log.rc" ) &
}
job_status() {  # log: the exit status of its job (after wait); 255 if it left none
  cat "$1.rc" 2>/dev/null || echo 255
}
