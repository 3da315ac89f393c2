#!/usr/bin/env bash
# Assembling a layered environment in a container (see tfyarn_jupyter/ship/layered_launch.py).
# Put by run/skein_app.py before service.sh's text, so that service.sh finds ./env and the
# interpreter it runs on.
#
# Inputs:
#   ./L-<key>.tar       the environment's layers (one per distribution, one base)
#   ./I-<key>.tar       the shipped interpreter's prefix, when there is one
#                       (either may be .tar.zst: compressed, layer_codec="zstd")
#   ./tfyarn-zstd       the client's zstd, with compressed layers
#   TFYARN_ENV_KEY      the environment's key (the digest of its layers' keys)
#   TFYARN_CLIENT_BASE  the client's base prefix, which bin/python links to
#   TFYARN_ENV_CACHE    where a node keeps layers and environments (default: node_cache.sh's)
#   TFYARN_ENV_KEEP     how many environments a node keeps (default 3)
#   TFYARN_UNPACK_JOBS  how many layers a node unpacks at once (default: its cores, at most 4)
# Output: ./env (a link to the assembled environment); TFYARN_BASE_PYTHON and
# LD_LIBRARY_PATH set to the shipped interpreter when there is one, and a warning on
# stderr naming the libraries that interpreter loads and this node lacks.
#
# Each layer is unpacked once per node into layers/<name>, several at once (the biggest
# distributions come as parts, ship/layers.py, so that a node's cores share them); an environment is
# assembled once per node into envs/<key> as hard links to its layers' files
# (0.9 s for the 1.6 GB TensorFlow venv, no extra disk), so a new environment that
# differs by one package unpacks that package only.

if [ -n "${LOG_DIRS:-}" ]; then exec 2>>"${LOG_DIRS%%,*}/stderr"; fi

# The zstd that decompresses layers here: the client's (shipped with them), else the node's.
tfyarn_zstd() {
  if [ -x ./tfyarn-zstd ] && ./tfyarn-zstd -V >/dev/null 2>&1; then
    printf '%s' "$PWD/tfyarn-zstd"
  elif command -v zstd >/dev/null 2>&1; then
    command -v zstd
  else
    echo "tfyarn: $(hostname) cannot run the zstd shipped with the layers and has none of" \
      "its own: install zstd on the nodes, or launch without layer_codec='zstd'" >&2
    return 1
  fi
}

tfyarn_layer_name() {  # archive file: the layer's folder name (L-<key>), whatever its codec
  local f="${1#./}"
  printf '%s' "${f%.tar*}"
}

tfyarn_unpack_layer() {  # archive file, folder: unpack once, whoever comes first
  local tarfile="$1" dest="$2" part zstd
  [ -f "$dest/.tfyarn-unpacked" ] && return 0
  (
    flock 9 2>/dev/null
    if [ ! -f "$dest/.tfyarn-unpacked" ]; then
      part="$dest.part.$$"
      rm -rf "$part" "$dest" && mkdir -p "$part" || exit 1
      case "$tarfile" in
        *.tar.zst) zstd=$(tfyarn_zstd) \
          && tar --use-compress-program="$zstd" -xf "$tarfile" -C "$part" ;;
        *) tar -xf "$tarfile" -C "$part" ;;
      esac && touch "$part/.tfyarn-unpacked" && mv "$part" "$dest"
      rm -rf "$part"
    fi
  ) 9>"$dest.lock"
  [ -f "$dest/.tfyarn-unpacked" ]
}

tfyarn_unpack_jobs() {  # how many layers to unpack at once
  local n="${TFYARN_UNPACK_JOBS:-}"
  if [ -z "$n" ]; then
    n=$(nproc 2>/dev/null || echo 1)
    [ "$n" -le 4 ] 2>/dev/null || n=4
  fi
  [ "$n" -ge 1 ] 2>/dev/null || n=1
  printf '%s' "$n"
}

tfyarn_point_at_interpreter() {  # env folder, interpreter folder
  local env="$1" interp="$2" link target
  for link in "$env"/bin/*; do
    [ -L "$link" ] || continue
    target=$(readlink "$link")
    case "$target" in
      "$TFYARN_CLIENT_BASE"/*) ln -sfn "$interp/${target#"$TFYARN_CLIENT_BASE"/}" "$link" ;;
    esac
  done
  sed "s|^home = .*|home = $interp/bin|" "$env/pyvenv.cfg" >"$env/pyvenv.cfg.new" \
    && mv "$env/pyvenv.cfg.new" "$env/pyvenv.cfg"
}

# The shared libraries the shipped interpreter and its standard extension modules load
# that this node lacks ("libssl.so.3 (_ssl)" lines), found once per node and interpreter
# with ldd. A module that needs a missing library fails to import; the rest runs, so
# this warns rather than fails. tkinter is not shipped: _tkinter is not looked at.
tfyarn_missing_libraries() {  # interpreter folder
  local interp="$1" found="$1/.tfyarn-missing-libraries"
  if [ ! -f "$found" ] && command -v ldd >/dev/null 2>&1; then
    LD_LIBRARY_PATH="$interp/lib" ldd "$interp"/bin/python3* \
      "$interp"/lib/python3*/lib-dynload/*.so 2>/dev/null \
      | awk '/^[^ \t].*:$/ { m = $0; sub(/:$/, "", m); sub(/.*\//, "", m)
                             sub(/\.(cpython|abi3|so).*/, "", m); next }
             / => not found/ && m != "_tkinter" { print $1 " (" m ")" }' \
      | sort -u >"$found.$$" && mv "$found.$$" "$found"
  fi
  cat "$found" 2>/dev/null
}

tfyarn_build_env() {  # root, env folder, interpreter folder or ""
  local root="$1" env="$2" interp="$3" part f name
  part="$env.part.$$"
  rm -rf "$part" "$env" && mkdir -p "$part" || return 1
  for f in ./L-*.tar ./L-*.tar.zst; do
    [ -e "$f" ] || continue
    name=$(tfyarn_layer_name "$f")
    cp -al --remove-destination "$root/layers/$name/." "$part/" || { rm -rf "$part"; return 1; }
    printf '%s\n' "$name" >>"$part/.tfyarn-layers"
  done
  rm -f "$part/.tfyarn-unpacked"
  if [ -n "$interp" ]; then
    tfyarn_point_at_interpreter "$part" "$interp"
    printf '%s\n' "$(basename "$interp")" >>"$part/.tfyarn-layers"
  fi
  touch "$part/.tfyarn-assembled" && mv "$part" "$env"
}

# Keep the newest few environments and the layers they use; what goes must be unused
# (no container holds its lock) and, for a layer, untouched for ten minutes (a
# container may be assembling a new environment from it).
tfyarn_evict() {
  local root="$1" keep="$2" used old layer
  # shellcheck disable=SC2012  # names are keys: hex digits only
  ls -1t "$root"/envs/*/.tfyarn-used 2>/dev/null | tail -n +"$((${TFYARN_ENV_KEEP:-3} + 1))" \
    | while read -r used; do
        old=$(dirname "$used")
        [ "$old" = "$keep" ] && continue
        ( flock -n 7 && rm -rf "$old" "$old.build" ) 7>"$old.lock" 2>/dev/null
      done
  cat "$root"/envs/*/.tfyarn-layers 2>/dev/null | sort -u >"$root/.in-use.$$"
  for layer in "$root"/layers/*/; do
    layer=${layer%/}
    grep -qxF "$(basename "$layer")" "$root/.in-use.$$" && continue
    find "$layer/.tfyarn-unpacked" -mmin -10 2>/dev/null | grep -q . && continue
    rm -rf "$layer" "$layer.lock"
  done
  rm -f "$root/.in-use.$$"
}

tfyarn_assemble() {
  local root env f name missing at_once interp="" names=()
  root="$(tfyarn_node_cache layers)"
  env="$root/envs/$TFYARN_ENV_KEY"
  mkdir -p "$root/layers" "$root/envs" && chmod 700 "$root" || return 1
  # Each unpack in the background, at most $at_once at once; what failed shows as a layer
  # without its marker once all are done (an unpack writes its message to stderr).
  at_once=$(tfyarn_unpack_jobs)
  for f in ./I-*.tar ./I-*.tar.zst ./L-*.tar ./L-*.tar.zst; do
    [ -e "$f" ] || continue
    name=$(tfyarn_layer_name "$f")
    names+=("$name")
    case "$name" in I-*) interp="$root/layers/$name" ;; esac
    while [ "$(jobs -rp | wc -l)" -ge "$at_once" ]; do wait -n 2>/dev/null || true; done
    tfyarn_unpack_layer "$f" "$root/layers/$name" &
  done
  wait
  for name in "${names[@]}"; do
    [ -f "$root/layers/$name/.tfyarn-unpacked" ] || return 1
    touch "$root/layers/$name/.tfyarn-unpacked"
  done
  if [ ! -f "$env/.tfyarn-assembled" ]; then
    ( flock 9 2>/dev/null
      [ -f "$env/.tfyarn-assembled" ] || tfyarn_build_env "$root" "$env" "$interp"
    ) 9>"$env.build"
  fi
  [ -f "$env/.tfyarn-assembled" ] || return 1
  # A shared lock, held while this container runs, keeps the env from eviction.
  exec 8>"$env.lock" && flock -s 8 2>/dev/null
  touch "$env/.tfyarn-used"
  ln -sfn "$env" ./env
  if [ -n "$interp" ]; then
    # shellcheck disable=SC2034  # read by service.sh, which follows this text
    TFYARN_BASE_PYTHON="$interp/bin/$(basename "$(readlink "$env/bin/python")")"
    export LD_LIBRARY_PATH="$interp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    missing=$(tfyarn_missing_libraries "$interp" | paste -sd, - | sed 's/,/, /g')
    if [ -n "$missing" ]; then
      echo "tfyarn: warning: $(hostname) lacks shared libraries the shipped interpreter" \
        "loads: $missing. The modules named fail to import on this node: install the" \
        "libraries on the nodes, or make the venv from a Python that bundles them" \
        "(python-build-standalone)" >&2
    fi
  fi
  tfyarn_evict "$root" "$env"
}

if ! tfyarn_assemble; then
  echo "tfyarn: assembling the environment's layers on $(hostname) failed" >&2
  exit 1
fi
