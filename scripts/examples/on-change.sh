#!/bin/sh
# React to changes as they happen: keep a store current with `tsync watch`, and for each record
# pulled or deleted, run something. Here: append a line to changes.log and ring the terminal bell
# for a change of the `alerts` table. Run it in a store directory that has pulled its tables once
# with a query id (`tsync pull todo --query-id all`).
#
#   scripts/examples/on-change.sh            # until Ctrl-C
#   TIMEOUT=60 scripts/examples/on-change.sh # for a minute
set -eu
exec tsync watch --json ${TIMEOUT:+--timeout "$TIMEOUT"} --exec '
  while IFS= read -r event; do
    case "$event" in
      *"\"event\":\"pulled\""*|*"\"event\":\"deleted\""*) printf "%s\n" "$event" >> changes.log ;;
    esac
    case "$event" in
      *"\"table\":\"alerts\""*) printf "\a" >&2 ;;
    esac
  done'
