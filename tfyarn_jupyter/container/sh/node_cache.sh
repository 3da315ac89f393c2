# shellcheck shell=bash
# Where a node keeps what outlives one container (unpacked environments, layers):
# beside YARN's own cache of the user's files, <local-dir>/usercache/<user>/tfyarn-*,
# on the disks the NodeManager was given and cleared with them; the node's /tmp
# only for a container that YARN did not start (no LOCAL_DIRS).
# TFYARN_ENV_CACHE, where set, names the folder itself.
tfyarn_node_cache() {
  local first="${LOCAL_DIRS%%,*}"
  if [ -n "${TFYARN_ENV_CACHE:-}" ]; then
    printf '%s' "$TFYARN_ENV_CACHE"
  else
    case "$first" in
      */usercache/*/appcache/*) printf '%s/tfyarn-%s' "${first%/appcache/*}" "$1" ;;
      *) printf '%s/tfyarn-%s-%s' "${TMPDIR:-/tmp}" "$1" "$(id -u)" ;;
    esac
  fi
}
