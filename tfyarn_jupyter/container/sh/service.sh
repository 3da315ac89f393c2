#!/usr/bin/env bash
# The service script of every task's container (see tfyarn_jupyter/run/skein_app.py).
#
# Inputs, set by the lines skein_app.py puts before this text:
#   TFYARN_BASE_PYTHON  the interpreter the shipped virtual environment runs on
#   TFYARN_PYTHONPATH   ':'-separated entries (relative to the container's folder)
#   TFYARN_TASK_MODULE  the module each task runs (ours, or the user's)
#   TFYARN_OWN_TASK_MODULE  ours (tfyarn_jupyter.container), which reports a killed task's exit
# and, where the user gave a pre_script_hook, a function tfyarn_pre_script_hook.
# and from the container's environment (tfyarn_jupyter/protocol/contract.py):
#   TFYARN_ENV_KEY      the environment's key, when ./env.tar is shipped
#   TFYARN_ENV_CACHE    where a node keeps unpacked environments (default: node_cache.sh's)
#   TFYARN_ENV_KEEP     how many of them a node keeps (default 3)
#
# ./env.tar is unpacked once per node and environment key, and linked as ./env.
# YARN's own unpacking of an archive resource sets the permissions of every file
# one by one, which without Hadoop's native library is a chmod process per file:
# minutes for a TensorFlow venv. Unpacked here, a cold start costs one tar -x and
# a warm one a symlink.

# skein sends a service's stdout and stderr to one <service>.log; stderr goes to
# its own file in the container's log folder so that the panel can tell them apart.
if [ -n "${LOG_DIRS:-}" ]; then exec 2>>"${LOG_DIRS%%,*}/stderr"; fi

if [ ! -x "$TFYARN_BASE_PYTHON" ]; then
  echo "tfyarn: this node ($(hostname)) lacks the interpreter $TFYARN_BASE_PYTHON that the" \
    "shipped virtual environment runs on; install the same Python at the same path on every" \
    "node, or pass pyenv_archive= an environment built for the nodes" >&2
  exit 127
fi

unpack_env() {
  local root
  root="$(tfyarn_node_cache envs)"
  local dest="$root/$TFYARN_ENV_KEY"
  mkdir -p "$root" 2>/dev/null && chmod 700 "$root" 2>/dev/null
  if [ -O "$root" ] && [ ! -f "$dest/.tfyarn-unpacked" ]; then
    (
      flock 9 2>/dev/null
      if [ ! -f "$dest/.tfyarn-unpacked" ]; then
        part="$dest.part.$$"
        rm -rf "$part" && mkdir "$part" && tar -xf ./env.tar -C "$part" \
          && touch "$part/.tfyarn-unpacked" && { [ -e "$dest" ] || mv "$part" "$dest"; }
        rm -rf "$part"
      fi
    ) 9>"$dest.unpack.lock"
  fi
  if [ -O "$root" ] && [ -f "$dest/.tfyarn-unpacked" ]; then
    # A shared lock, held while this container runs, keeps the env from eviction.
    exec 8>"$dest.lock" && flock -s 8 2>/dev/null
    touch "$dest/.tfyarn-used"
    ln -sfn "$dest" ./env
    evict_envs "$root" "$dest"
  else  # no usable cache folder on this node: unpack into the container itself
    mkdir -p ./env && tar -xf ./env.tar -C ./env
  fi
}

# Keep this node's newest few environments; an older one goes once no container
# holds its lock (each env is a TensorFlow venv: gigabytes).
evict_envs() {
  local root="$1" dest="$2" used old
  # shellcheck disable=SC2012  # names are environment keys: hex digits only
  ls -1t "$root"/*/.tfyarn-used 2>/dev/null | tail -n +"$((${TFYARN_ENV_KEEP:-3} + 1))" \
    | while read -r used; do
        old=$(dirname "$used")
        [ "$old" = "$dest" ] && continue
        ( flock -n 7 && rm -rf "$old" "$old.unpack.lock" ) 7>"$old.lock" 2>/dev/null
      done
}

if [ -f ./env.tar ]; then unpack_env; fi

# Temporary files (TensorFlow's autograph modules among them) go in the container's
# folder, which YARN deletes, never in the node's /tmp.
mkdir -p ./tmp && export TMPDIR="$PWD/tmp"

if declare -F tfyarn_pre_script_hook >/dev/null; then
  tfyarn_pre_script_hook || { echo "tfyarn: pre_script_hook failed ($?)" >&2; exit 1; }
fi

export PYTHONPATH="$TFYARN_PYTHONPATH${PYTHONPATH:+:$PYTHONPATH}"
./env/bin/python -u -m "$TFYARN_TASK_MODULE"
rc=$?
# A process killed from outside (kill -9, the OOM killer) reports nothing itself, nor does a
# custom task module: report its exit, which also ends the run (a task that failed by
# itself is not restarted in the application). 143 is YARN stopping the container
# (SIGTERM), which is not the task's failure, and 75 a trainer ending itself to restart
# with its cluster (container/regroup.py's FOLLOW_EXIT).
if [ $rc -ne 0 ] && [ $rc -ne 143 ] && [ $rc -ne 75 ]; then
  ./env/bin/python -m "$TFYARN_OWN_TASK_MODULE" --exited $rc || true
fi
exit $rc
