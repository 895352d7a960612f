#!/bin/sh
# Runs one example of docs/LOOPS.md: it must exit 0 within 20 s, and say
# that the connection was freed and the cross-thread timer fired.
out=$(timeout 20 "$1") || { echo "$1 failed: $?"; echo "$out"; exit 1; }
echo "$out"
case "$out" in
*"io_uring unavailable"*) exit 0 ;;
esac
echo "$out" | grep -q "^hello: armed from another thread" || exit 1
echo "$out" | grep -q "^conn freed after" || exit 1
