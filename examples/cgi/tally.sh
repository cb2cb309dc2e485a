#!/bin/sh
# A CGI program for ews (RFC 3875) in POSIX sh, driving a line-protocol device on a serial port:
# a tally counter that answers "INC" with "OK" and "N?" with "OK n=<count>".
# Name the port in the config, and the board lends it to the program while it runs (its own
# polling of that port waits; no byte of the two interleaves):
#   "cgi": { "programs": { "tally.sh": { "port": "/dev/ttyUSB1" } } }
# GET answers the count; POST adds one first. Both answer JSON:
#   curl -X POST -H "authorization: Bearer $T" http://127.0.0.1:8081/cgi-bin/tally.sh
# A device that never answers leaves `read` waiting: the program's timeoutMs (default 10 s)
# ends it, and the client gets 504 CGI_TIMEOUT.
set -u
fail() {
  printf 'Status: 502 Bad Gateway\nContent-Type: application/json\n\n{"error":"%s"}\n' "$1"
  exit 0
}
port=${EWS_DEVICE_PORT:-}
[ -n "$port" ] || fail 'no port: set cgi.programs.tally.sh.port'
exec 3<>"$port" || fail "cannot open $port"
stty raw -echo <&3 2>/dev/null || true
# One exchange: a command line out, one answer line back (CR dropped).
ask() {
  printf '%s\n' "$1" >&3
  IFS= read -r line <&3 || fail "no answer to $1"
  line=$(printf '%s' "$line" | tr -d '\r')
}
if [ "${REQUEST_METHOD:-GET}" = POST ]; then
  ask INC
  [ "$line" = OK ] || fail "INC answered: $line"
fi
ask 'N?'
case $line in
  "OK n="*) n=${line#OK n=} ;;
  *) fail "N? answered: $line" ;;
esac
printf 'Content-Type: application/json\n\n{"count":%s,"board":"%s"}\n' "$n" "${EWS_BOARD:-}"
